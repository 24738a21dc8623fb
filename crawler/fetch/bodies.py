"""Stop downloading a body the crawl will not read.

The page judge reads only HTML and the types ``SITEMAP_LISTED_TYPES`` lists
(docs/crawling.md), but Scrapy downloads every body in full first. Scrapy's
``headers_received`` signal comes before the body; this extension stops the download
there (``StopDownload(fail=False)``: the response reaches the judge with its status and
headers and an empty body). Requests that are not the crawl's pages, and a response
with no ``Content-Type`` (which the judge may read as HTML), are left alone.

Only a body of at least :data:`MIN_STOPPED` bytes (or of unknown length) is stopped: a
small one has usually arrived with the headers, and stopping it then closes a
connection Twisted's pool has handed to the next request, which is sent again: the
site would see it twice.

Settings: ``SITEMAP_LISTED_TYPES``.
Stats: ``sitemap/bodies_skipped``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import StopDownload
from twisted.web.iweb import UNKNOWN_LENGTH

from crawler.page.analysis import HTML_TYPES

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http.headers import Headers
    from scrapy.statscollectors import StatsCollector


#: Bodies shorter than this are downloaded even when unread (see the module docstring).
MIN_STOPPED = 256 * 1024


class UnreadBodies:
    """Stops the download of a page whose type is neither HTML nor in *listed_types*."""

    def __init__(self, listed_types: list[str], stats: StatsCollector) -> None:
        self.read = HTML_TYPES | {t.lower() for t in listed_types}
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        ext = cls(crawler.settings.getlist("SITEMAP_LISTED_TYPES"), crawler.stats)
        crawler.signals.connect(ext.headers_received, signal=signals.headers_received)
        return ext

    def headers_received(self, headers: Headers, body_length: Any, request: Request) -> None:
        if "sitemap_url" not in request.meta:
            return
        value = headers.get(b"Content-Type")
        if value is None:
            return
        media_type = value.decode("latin-1").split(";")[0].strip().lower()
        if media_type and media_type not in self.read:
            if body_length != UNKNOWN_LENGTH and 0 <= body_length < MIN_STOPPED:
                return
            self.stats.inc_value("sitemap/bodies_skipped")
            raise StopDownload(fail=False)
