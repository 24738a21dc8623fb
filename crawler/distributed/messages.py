"""What a process that fetched a page tells the coordinator about it.

One :class:`PageReport` per fetched (or failed) request, pickled onto the crawl's
report list in Redis by :class:`crawler.distributed.pipeline.ReportPipeline`. Its
``events`` are what the site spider's callback produced, in order, except that
nothing is decided that needs the crawl-wide state the coordinator alone holds:

* :class:`crawler.items.UrlRecord` and :class:`crawler.items.Alias`: the page's own
  decision (and aliases), recorded as they are;
* :class:`Found`: a URL the page led to (a link, a redirect, canonical or refresh
  target), with the arguments of :meth:`crawler.frontier.Frontier.discover`, which
  the coordinator calls with them;
* :class:`Replay`: a 304, which the coordinator replays from the previous run's
  ledger (:meth:`crawler.judge.PageJudge.replay`).

The coordinator's reports on its own pages never leave its memory; they hold its
frontier's records and requests directly.

Pickled, as scrapy-redis pickles the requests in its queue: the Redis server must be
trusted by every process (see docs/distributed.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from crawler.items import UrlRecord


class Found(NamedTuple):
    raw: str
    depth: int
    referrer: str | None
    hops: int
    encoding: str
    normal: str | None
    found_by: str = "link"  # crawler.items.FOUND_*


class Replay(NamedTuple):
    record: UrlRecord
    etag: str | None


@dataclass(slots=True)
class PageReport:
    """What became of one request. ``claim`` ends its stay in flight; ``fetched``
    says a response reached the spider (not an error); ``process`` sent it."""

    process: str
    claim: str | None
    fetched: bool
    events: list[Any] = field(default_factory=list)
