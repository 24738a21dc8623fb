"""Ledger pipeline: record every decision in the crawl's SQLite ledger.

The ledger is keyed by the dedup key, so a page reached under two forms is recorded
once and the second form kept as an alias; the first final decision about a URL
wins. Each run writes ``ledger.running.sqlite`` in the state directory (continued,
not restarted, by ``--resume``); the publisher closes the books and renames it once
the run is over (:mod:`crawler.extensions.publish`). First-seen times carry over
from the previous run's ledger. ``Sitemap:`` lines of robots.txt (Scrapy's
``robots_parsed`` signal) are kept in the ledger's ``meta`` table.

Settings: ``SITEMAP_OUT_DIR``, ``SITEMAP_STATE_DIR``, ``SITEMAP_INCREMENTAL``,
``SITEMAP_RESUME``, ``JOBDIR``.
Stats: ``sitemap/decision/<decision>`` for every final decision,
``sitemap/duplicates``, ``sitemap/aliases``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from scrapy import signals

from crawler.items import QUEUED, Alias, UrlRecord
from crawler.ledger import Ledger
from crawler.paths import CrawlPaths
from crawler.previous import PreviousRun
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector


class LedgerPipeline(RecordPipeline):
    def __init__(self, paths: CrawlPaths, stats: StatsCollector) -> None:
        self.paths = paths
        self.stats = stats
        self.ledger: Ledger | None = None
        self.previous: PreviousRun | None = None
        self.run_started = time.time()
        self.robots_sitemaps: list[str] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        pipeline = cls(CrawlPaths.from_settings(crawler.settings), crawler.stats)
        pipeline.crawler = crawler
        crawler.signals.connect(pipeline.robots_parsed, signal=signals.robots_parsed)
        return pipeline

    def open_spider(self) -> None:
        if self.stats.get_value("sitemap/locked"):
            return  # another run owns the state directory
        settings = self.crawler.settings
        self.run_started = time.time()
        self.previous = (
            PreviousRun.open(self.paths.ledger)
            if settings.getbool("SITEMAP_INCREMENTAL", True)
            else None
        )
        path = self.paths.running_ledger
        path.parent.mkdir(parents=True, exist_ok=True)
        resuming = settings.getbool("SITEMAP_RESUME") and settings.get("JOBDIR") and path.exists()
        if not resuming:
            for stale in (
                path,
                path.with_name(path.name + "-wal"),
                path.with_name(path.name + "-shm"),
            ):
                stale.unlink(missing_ok=True)
        self.ledger = Ledger(path)
        spider = self.crawler.spider
        self.ledger.set_meta("start_url", getattr(spider, "start_url", None))
        self.ledger.set_meta("settings_base_url", self.crawler.settings.get("SITEMAP_BASE_URL"))

    def robots_parsed(self, robotparser: Any, request: Any) -> None:
        sitemaps = getattr(getattr(robotparser, "rp", None), "sitemaps", None)
        if sitemaps and self.ledger is not None:
            self.robots_sitemaps.extend(s for s in sitemaps if s not in self.robots_sitemaps)
            self.ledger.set_meta("robots_sitemaps", self.robots_sitemaps)

    def _process(self, item: Any) -> Any:
        if isinstance(item, Alias) and self.ledger is not None:
            assert item.key is not None
            self.ledger.add_alias(item.alias, item.key)
            self.stats.inc_value("sitemap/aliases")
            return item
        if not isinstance(item, UrlRecord):
            return item
        assert self.ledger is not None
        prev = self.previous.get(item.key) if self.previous and item.key else None
        item.first_seen = prev["first_seen"] if prev and prev["first_seen"] else self.run_started
        if self.ledger.record(item):
            if item.decision != QUEUED:
                self.stats.inc_value(f"sitemap/decision/{item.decision}")
                if item.overrides_cap:
                    self.stats.inc_value("sitemap/decision/cap-reached", -1)
        elif item.decision != QUEUED:
            self.stats.inc_value("sitemap/duplicates")
        return item

    def close_spider(self) -> None:
        # The books are closed by the publisher, which knows how the run ended.
        if self.ledger is not None:
            self.ledger.close()
            self.ledger = None
        if self.previous is not None:
            self.previous.close()
            self.previous = None
