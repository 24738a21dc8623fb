"""Lastmod pipeline: the ``<lastmod>`` of a listed page, from evidence only.

From the final response's ``Last-Modified`` header (all three HTTP date formats),
converted to a W3C datetime in UTC and clamped to the ``Date`` header when later;
when the header is missing or malformed, from the page's own metadata
(``article:modified_time``, ``og:updated_time``, JSON-LD ``dateModified``) unless
``SITEMAP_LASTMOD_FROM_PAGE`` is off; otherwise none. Never "now": a search engine
ignores a lastmod that is not accurate (issue #2, "lastmod").

Settings: ``SITEMAP_LASTMOD_FROM_PAGE``.
Stats: ``sitemap/lastmod/header``, ``sitemap/lastmod/page``, ``sitemap/lastmod/none``,
``sitemap/lastmod/malformed``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from crawler.items import LISTED, UrlRecord
from crawler.lastmod import http_date_to_w3c, lastmod_datetime

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector


class LastmodPipeline:
    def __init__(self, stats: StatsCollector, from_page: bool = True) -> None:
        self.stats = stats
        self.from_page = from_page

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        return cls(crawler.stats, crawler.settings.getbool("SITEMAP_LASTMOD_FROM_PAGE", True))

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, UrlRecord) or item.decision != LISTED:
            return item
        item.lastmod = self._from_header(item)
        if item.lastmod is not None:
            self.stats.inc_value("sitemap/lastmod/header")
        elif self.from_page and item.page_lastmod:
            item.lastmod = item.page_lastmod
            self.stats.inc_value("sitemap/lastmod/page")
        else:
            self.stats.inc_value("sitemap/lastmod/none")
        return item

    def _from_header(self, item: UrlRecord) -> str | None:
        if not item.last_modified:
            return None
        lastmod = http_date_to_w3c(item.last_modified, item.date)
        if lastmod is None:
            self.stats.inc_value("sitemap/lastmod/malformed")
            item.warnings.append(f"ignored malformed Last-Modified {item.last_modified[:100]!r}")
        elif lastmod_datetime(lastmod) > datetime.now(UTC):
            # Clamping to Date needs a Date header; without one a future date is wrong.
            self.stats.inc_value("sitemap/lastmod/malformed")
            item.warnings.append(f"ignored Last-Modified in the future {item.last_modified!r}")
            lastmod = None
        return lastmod
