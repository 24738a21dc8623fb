"""Publisher extension: write and publish the sitemap set when the crawl is over.

Scrapy's feed exports write items as they come; a sitemap set must be sorted,
deduplicated and rotated, and published atomically only when the whole crawl
succeeded. So this extension runs on ``spider_closed`` (after the item pipelines
have closed the ledger): it streams the listed pages from the ledger, in order and
without holding them in memory, into :class:`crawler.writer.SitemapSetWriter`.

It publishes nothing, and leaves the previous set untouched, when the crawl did not
finish normally (interrupted, robots.txt or start URL unreachable: ``sitemap/fatal``)
or listed nothing. The run's ledger becomes ``ledger.sqlite`` (plus a JSON Lines
copy) when published, ``ledger.failed.sqlite`` otherwise.

Settings: ``SITEMAP_PUBLISH`` (off: crawl and keep the ledger only), ``SITEMAP_FORMAT``, ``SITEMAP_GZIP``, ``SITEMAP_MAX_URLS_PER_FILE``,
``SITEMAP_MAX_BYTES_PER_FILE``, ``SITEMAP_CHANGEFREQ``, ``SITEMAP_PRIORITY``,
``SITEMAP_BASE_URL``, ``SITEMAP_OUT_DIR``, ``SITEMAP_STATE_DIR``.
Stats: ``sitemap/outcome`` (``published``, ``crawled``, ``interrupted``, ``failed``,
``output-error``), ``sitemap/message``, ``sitemap/files_written``,
``sitemap/urls_written``, ``sitemap/index_path``, ``sitemap/index_url``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from scrapy import signals

from crawler.entry import ChangeFreq, SitemapEntry
from crawler.items import LISTED
from crawler.ledger import Ledger
from crawler.paths import LEDGER_FAILED, LEDGER_JSONL, CrawlPaths
from crawler.publicurl import PublicUrls
from crawler.report import format_summary
from crawler.urls import url_key
from crawler.writer import publish_sitemaps

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Outcomes of a crawl that did its job.
GOOD = frozenset({"published", "crawled"})


class SitemapPublisher:
    def __init__(self, crawler: Crawler, paths: CrawlPaths) -> None:
        self.crawler = crawler
        self.paths = paths
        s = crawler.settings
        self.fmt = s.get("SITEMAP_FORMAT", "xml")
        self.gzip = s.getbool("SITEMAP_GZIP", True)
        self.publish = s.getbool("SITEMAP_PUBLISH", True)
        self.max_urls = s.getint("SITEMAP_MAX_URLS_PER_FILE")
        self.max_bytes = s.getint("SITEMAP_MAX_BYTES_PER_FILE")
        changefreq = s.get("SITEMAP_CHANGEFREQ")
        priority = s.get("SITEMAP_PRIORITY")
        self.changefreq = ChangeFreq(changefreq) if changefreq else None
        self.priority = Decimal(str(priority)) if priority not in (None, "") else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        ext = cls(crawler, CrawlPaths.from_settings(crawler.settings))
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_closed(self, spider: Spider, reason: str) -> None:
        running = self.paths.running_ledger
        if not running.exists():
            return
        stats = self.crawler.stats
        assert stats is not None
        ledger = Ledger(running)
        try:
            outcome, message = self._publish(ledger, spider, reason)
            stats.set_value("sitemap/outcome", outcome)
            stats.set_value("sitemap/message", message)
            ledger.set_meta("outcome", {"outcome": outcome, "message": message, "reason": reason})
            if outcome in GOOD:
                ledger.export_jsonl(self.paths.state / LEDGER_JSONL)
        finally:
            ledger.close()
        final = self.paths.ledger if outcome in GOOD else self.paths.state / LEDGER_FAILED
        running.replace(final)
        log = logger.info if outcome in GOOD else logger.error
        log("Sitemap %s: %s\n%s", outcome, message, format_summary(stats.get_stats()))

    def _publish(self, ledger: Ledger, spider: Spider, reason: str) -> tuple[str, str]:
        stats = self.crawler.stats
        assert stats is not None
        fatal = stats.get_value("sitemap/fatal")
        if fatal:
            return "failed", fatal
        if reason != "finished":
            kind = "interrupted" if reason in {"shutdown", "cancelled"} else "failed"
            return kind, f"the crawl did not finish ({reason}); nothing was published"
        if ledger.counts().get(LISTED, 0) == 0:
            return "failed", "nothing listed" + _start_note(ledger, spider)
        if not self.publish:
            return "crawled", "the crawl finished; publishing is off (SITEMAP_PUBLISH)"
        public = PublicUrls.from_settings(spider.start_url, self.crawler.settings)  # type: ignore[attr-defined]
        try:
            index, files = publish_sitemaps(
                self.paths.out,
                self._entries(ledger),
                index_base_url=public.public_prefix,
                fmt=self.fmt,
                gzip=self.gzip,
                max_urls=self.max_urls,
                max_bytes=self.max_bytes,
            )
        except (OSError, ValueError) as e:
            return "output-error", f"could not publish to {self.paths.out}: {e}"
        stats.set_value("sitemap/files_written", len(files))
        stats.set_value("sitemap/urls_written", sum(f.urls for f in files))
        stats.set_value("sitemap/index_path", str(index))
        stats.set_value("sitemap/index_url", public.sitemap_loc(index.name))
        return "published", f"{len(files)} files and {index}"

    def _entries(self, ledger: Ledger) -> Iterator[SitemapEntry]:
        for entry in ledger.listed_entries():
            if self.changefreq or self.priority is not None:
                entry = replace(entry, changefreq=self.changefreq, priority=self.priority)
            yield entry


def _start_note(ledger: Ledger, spider: Any) -> str:
    start = getattr(spider, "start_url", None)
    if not start:
        return ""
    for row in ledger.rows(key=url_key(start)):
        reason = f", {row['reason']}" if row["reason"] else ""
        return f" (start URL {start}: {row['decision']}{reason})"
    return ""
