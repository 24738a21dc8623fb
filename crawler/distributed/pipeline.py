"""Report pipeline: send each page's report to the coordinator through Redis.

The distributed site spider's callbacks yield one
:class:`crawler.distributed.messages.PageReport` per request instead of deciding
about what they found. This pipeline pickles it onto the crawl's report list and
ends the request's claim in the same Lua script, which also claims and queues the URLs
the page led to (its candidates), so a process killed at any moment has either
reported a page with all it found or still holds it (and the coordinator queues it
again).
On the coordinator the report stays in memory and an empty marker takes its place
in the list, so that the list still orders every report and the end of the crawl
is still read from Redis alone. Every other item passes through untouched.

Settings: ``SITEMAP_REDIS_URL`` (off without it).
Stats: ``sitemap/distributed/reported``, ``sitemap/distributed/pages`` (reports of
fetched pages sent), ``sitemap/distributed/dropped_reports``
(a report for a claim the coordinator had already taken back).
"""

from __future__ import annotations

import logging
import pickle
from typing import TYPE_CHECKING, Any, cast

from scrapy.exceptions import NotConfigured

from crawler.distributed.messages import PageReport

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from crawler.distributed.spider import DistributedSiteSpider

logger = logging.getLogger(__name__)


class ReportPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._warned = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.get("SITEMAP_REDIS_URL"):
            raise NotConfigured("SITEMAP_REDIS_URL is not set")
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageReport):
            return item
        # Only the distributed site spider yields page reports.
        spider = cast("DistributedSiteSpider", self.crawler.spider)
        redis = spider.redis
        if spider.coordinator:
            # The coordinator's own pages: the report stays in memory and an empty
            # marker keeps its place in the list (no pickling, no payload through Redis).
            spider.own_reports.append(item)
            payload = b""
        else:
            payload = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        found = [c.args() for c in item.candidates]
        sent = redis.report(item.claim, payload, found, spider.limits)
        stats = self.crawler.stats
        assert stats is not None
        if sent == 1:
            stats.inc_value("sitemap/distributed/reported")
            if item.fetched:
                # The one count of pages: what this process says it fetched is what
                # the coordinator counts for it (reports of fetched pages it received).
                stats.inc_value("sitemap/distributed/pages")
        elif sent == 0:
            stats.inc_value("sitemap/distributed/dropped_reports")
            if not self._warned:
                self._warned = True
                logger.warning(
                    "this process was taken for lost (no heartbeat for %s s): its requests "
                    "were queued again and its reports for them are dropped (logged once)",
                    redis.timeout,
                )
        return item
