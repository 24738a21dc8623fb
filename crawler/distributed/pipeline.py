"""Report pipeline: send each page's report to the coordinator through Redis.

Each :class:`crawler.core.items.PageRecords` becomes a
:class:`crawler.distributed.messages.PageReport`, pushed in the Lua script that ends
the request's claim and claims the URLs the page led to (docs/distributed.md,
"Nothing is lost"). On the coordinator the report stays in memory and an empty marker
takes its place in the list, which still orders every report. Other items pass through.

Stats: ``sitemap/distributed/reported``, ``sitemap/distributed/pages`` (reports of
fetched pages sent), ``sitemap/distributed/dropped_reports`` (a report for a claim the
coordinator had already taken back).
"""

from __future__ import annotations

import logging
import pickle
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from crawler.core.items import PageRecords
from crawler.core.logonce import LogOnce
from crawler.crawl.spider import BEGIN
from crawler.distributed.sharing import RedisSharing, Settled

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class ReportPipeline:
    def __init__(self, crawler: Crawler, sharing: RedisSharing) -> None:
        self.crawler = crawler
        self.sharing = sharing
        self._warn_lost = LogOnce(logger)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        sharing = crawler.get_extension(RedisSharing)
        if sharing is None:
            raise NotConfigured("not a distributed crawl (SITEMAP_REDIS_URL is not set)")
        return cls(crawler, sharing)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageRecords) or isinstance(item, Settled):
            return item
        sharing, redis = self.sharing, self.sharing.redis
        report = sharing.report_of(item)
        if sharing.coordinator:
            # The coordinator's own pages: the report stays in memory and an empty
            # marker keeps its place in the list (no pickling, no payload through Redis).
            sharing.own_reports.append(report)
            payload = b""
        else:
            payload = pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)
        found = [c.args() for c in report.candidates]
        sent = redis.report(report.claim, payload, found)
        if item.meta.get(BEGIN):
            sharing.started = True
        stats = self.crawler.stats
        assert stats is not None
        if sent == 1:
            stats.inc_value("sitemap/distributed/reported")
            if report.fetched:
                # The one count of pages: what this process says it fetched is what
                # the coordinator counts for it (reports of fetched pages it received).
                stats.inc_value("sitemap/distributed/pages")
        elif sent == 0:
            stats.inc_value("sitemap/distributed/dropped_reports")
            self._warn_lost(
                "this process was taken for lost (no heartbeat for %s s): its requests "
                "were queued again and its reports for them are dropped",
                redis.timeout,
            )
        # Written by the coordinator when it comes back from Redis, settled: the
        # other pipelines let a report pass.
        return report
