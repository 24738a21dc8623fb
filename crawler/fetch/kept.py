"""The requests of pages the revisit schedule does not verify tonight: answered here,
without going over the wire (crawler.ledger.schedule; docs/nightly.md).

The frontier marks such a request (meta ``sitemap_kept``) where it is made, in any
process of the crawl; this downloader middleware, after robots.txt (a URL it now
disallows is decided as such, kept or not), answers it with an empty 304 for the
judge to replay the previous run's record. The throttle never sees it: no delay, no
slot taken.

Stats: ``sitemap/schedule/kept_responses`` (not pages fetched).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.http import Response

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector


class KeptPagesMiddleware:
    """Answers the requests of pages kept from the previous run (see the module docstring)."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        return cls(crawler.stats)

    def process_request(self, request: Request) -> Response | None:
        if not request.meta.get("sitemap_kept"):
            return None
        self.stats.inc_value("sitemap/schedule/kept_responses")
        return Response(request.url, status=304, request=request, flags=["kept"])
