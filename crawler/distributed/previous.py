"""The previous run, for every process of a distributed crawl (docs/distributed.md,
"The previous run reaches every process").

The coordinator puts what conditional requests and 304 replays need into a Redis hash
when the crawl starts (:func:`records`), the parameters learned under :data:`LEARNED`;
:class:`RedisPrevious` reads one record at a time, as
:class:`crawler.ledger.previous.PreviousRun` does from the file.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crawler.distributed.crawl import RedisCrawl
    from crawler.ledger.previous import PreviousRun


#: The hash fields of the previous run's learned parameters (path -> names) and of the
#: links the site's REST API listed (crawler.crawl.restapi).
LEARNED = "learned-params"
API_LINKS = "api-links"
#: Set when tonight keeps the pages that are not due (no full night): the processes
#: then read the site's change signals too.
SCHEDULED = "scheduled-night"


def _pack(value: Any) -> bytes:
    return zlib.compress(json.dumps(value, separators=(",", ":")).encode())


def records(previous: PreviousRun, full: bool) -> Iterator[tuple[str, bytes]]:
    """The previous run's conditional and scheduled records, for the crawl's hash
    (*full*: tonight verifies every URL, so none is kept)."""
    learned = previous.learned_params()
    if learned:
        yield LEARNED, _pack(learned)
    if (links := previous.api_links()) is not None:
        yield API_LINKS, _pack(links)
    if not full:
        yield SCHEDULED, _pack(True)
    for row in previous.conditional_rows():
        if full:
            row["due_at"] = None  # a full night: no process keeps a page unverified
        yield row["key"], _pack(row)


class RedisPrevious:
    """The previous run as the processes of a distributed crawl see it: ``get`` as
    :meth:`crawler.ledger.previous.PreviousRun.get`, for the URLs that can be asked
    conditionally (the only ones the frontier and a 304 ask about)."""

    def __init__(self, crawl: RedisCrawl) -> None:
        self.crawl = crawl
        self._active: bool | None = None

    def get(self, key: str) -> dict[str, Any] | None:
        if self._active is None:
            # Asked first when a page was fetched: the coordinator loaded the hash
            # before it queued the start URL. An empty hash (no previous run) is no
            # key at all: then no round trip is ever made again.
            self._active = self.crawl.has_previous()
        return self._unpack(key) if self._active else None

    def learned_params(self) -> dict[str, list[str]]:
        """What the previous run learned about query parameters (crawler.crawl.params), as
        :meth:`crawler.ledger.previous.PreviousRun.learned_params`."""
        return self._unpack(LEARNED) or {}

    def scheduled(self) -> bool:
        """Whether tonight keeps the pages that are not due (the coordinator says)."""
        return bool(self._unpack(SCHEDULED))

    def api_links(self) -> list[str] | None:
        """The links the site's REST API listed on the previous night, as
        :meth:`crawler.ledger.previous.PreviousRun.api_links`."""
        links = self._unpack(API_LINKS)
        return [str(link) for link in links] if isinstance(links, list) else None

    def _unpack(self, key: str) -> Any:
        raw = self.crawl.previous_row(key)
        return None if raw is None else json.loads(zlib.decompress(raw))
