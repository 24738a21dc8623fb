"""The WordPress REST API as a change signal of nightly runs (docs/nightly.md#change-signals).

A post modified after the lastmod the previous run gave its page, or a post or page
tonight's lists no longer have, is verified tonight. The times compared are the site's
own, never this machine's clock; a list that cannot be read is no signal.

Stats: ``sitemap/signals/api_requests``, ``sitemap/signals/api_failed``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from scrapy import Request

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

#: The lists read (WordPress's public post types of pages), items a request (the
#: API's maximum), and the most requests a list may cost a night.
KINDS = ("posts", "pages")
PER_PAGE = 100
MAX_PAGES = 1000


@dataclass
class RestSignals:
    """Reads the API at *root* (see the module docstring). *signal*: a URL and its
    modification time; *recheck*: a URL to verify tonight; *before*: the links the
    previous night's lists had (None: unknown, so nothing is found gone); *keep*:
    where tonight's links go for the next night."""

    root: str
    _: KW_ONLY
    signal: Callable[..., Iterable[Any]]
    recheck: Callable[[str], Iterable[Any]]
    before: list[str] | None
    keep: Callable[[list[str]], None]
    callback: Callable[..., Any]
    errback: Callable[..., Any]
    stats: StatsCollector
    links: set[str] = field(default_factory=set)
    _open: set[str] = field(default_factory=lambda: set(KINDS))
    _failed: bool = False

    def first_requests(self) -> Iterator[Request]:
        for kind in KINDS:
            yield self._request(kind, 1)

    def _request(self, kind: str, page: int) -> Request:
        query = urlencode({"per_page": PER_PAGE, "page": page, "_fields": "link,modified_gmt"})
        url = f"{self.root.rstrip('/')}/wp/v2/{kind}?{query}"
        self.stats.inc_value("sitemap/signals/api_requests")
        # Fetched by this process (sitemap_local): it holds the lists read so far.
        meta = {
            "sitemap_api": (kind, page),
            "sitemap_local": True,
            "handle_httpstatus_all": True,
            "dont_redirect": True,
        }
        return Request(url, callback=self.callback, errback=self.errback, meta=meta)

    def read(self, response: Response) -> Iterator[Any]:
        """One page of a list: its items' signals, then the next page or the end."""
        kind, page = response.meta["sitemap_api"]
        try:
            items = json.loads(response.body) if response.status == 200 else None
        except ValueError:
            items = None
        if not isinstance(items, list):
            yield from self._fail(f"{response.url}: HTTP {response.status}, no list")
            return
        for item in items:
            if not isinstance(item, dict) or not isinstance(link := item.get("link"), str):
                continue
            self.links.add(link)
            if isinstance(modified := item.get("modified_gmt"), str):
                yield from self.signal(link, lastmod=modified + "Z", found_by="api")
        pages = (response.headers.get(b"X-WP-TotalPages") or b"").strip()
        if items and pages.isdigit() and page < min(int(pages), MAX_PAGES):
            yield self._request(kind, page + 1)
            return
        yield from self._done(kind)

    def failed(self, failure: Failure) -> Iterator[Any]:
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy
        yield from self._fail(f"{request.url}: {failure.getErrorMessage()}"[:300])

    def _fail(self, why: str) -> Iterator[Any]:
        self.stats.inc_value("sitemap/signals/api_failed")
        if not self._failed:
            self._failed = True
            logger.info("the site's REST API is not read as a change signal: %s", why)
        return iter(())

    def _done(self, kind: str) -> Iterator[Any]:
        self._open.discard(kind)
        if self._open or self._failed:
            return
        self.keep(sorted(self.links))
        for url in sorted(set(self.before or ()) - self.links):
            yield from self.recheck(url)
