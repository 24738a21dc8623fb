"""Publisher extension: close the books of a run and publish its sitemap set.

Scrapy's feed exports write items as they come; a sitemap set must be sorted,
deduplicated and rotated, and published atomically only when the whole crawl
succeeded. So this extension runs on ``spider_closed`` (after the item pipelines):
it finishes the ledger (unfetched URLs, duplicates, chains), decides whether to
publish, streams the listed pages from the ledger in order into
:class:`crawler.writer.SitemapSetWriter`, and writes the run report
(``report.json`` in the state directory, :func:`crawler.report.write_report`).

It publishes nothing, and leaves the previous set untouched, when the crawl did not
finish normally (interrupted; robots.txt or start URL unreachable:
``sitemap/fatal``), listed nothing, or looks broken (issue #4): more than
``SITEMAP_MAX_ERROR_RATE`` of the fetched pages failed, or the new set drops more
than ``SITEMAP_MAX_DROP`` of the URLs the previous run published (``SITEMAP_FORCE``
overrides both). The run's ledger becomes ``ledger.sqlite`` (plus a JSON Lines copy)
when the run did its job and ``ledger.failed.sqlite`` otherwise, so the next run
still starts from the last good state; an interrupted run with a ``JOBDIR`` keeps
``ledger.running.sqlite`` for ``--resume``.

Settings: ``SITEMAP_PUBLISH`` (off: crawl and keep the ledger only),
``SITEMAP_FORCE``, ``SITEMAP_MAX_DROP``, ``SITEMAP_MAX_ERROR_RATE``,
``SITEMAP_INCREMENTAL``, ``SITEMAP_DEDUPE_CONTENT``, ``SITEMAP_FORMAT``,
``SITEMAP_GZIP``, ``SITEMAP_MAX_URLS_PER_FILE``, ``SITEMAP_MAX_BYTES_PER_FILE``,
``SITEMAP_CHANGEFREQ``, ``SITEMAP_PRIORITY``, ``SITEMAP_BASE_URL``,
``SITEMAP_OUT_DIR``, ``SITEMAP_STATE_DIR``, ``JOBDIR``.
Stats: ``sitemap/outcome`` (``published``, ``crawled``, ``refused``, ``interrupted``,
``failed``, ``output-error``), ``sitemap/message``, ``sitemap/files_written``,
``sitemap/urls_written``, ``sitemap/index_path``, ``sitemap/index_url``,
``sitemap/report_path``, ``sitemap/added``, ``sitemap/removed``,
``sitemap/lastmod_changes``.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals

from crawler.entry import ChangeFreq, EntryRows
from crawler.items import LISTED
from crawler.ledger import Ledger
from crawler.paths import LEDGER_FAILED, LEDGER_JSONL, REPORT, CrawlPaths
from crawler.previous import PreviousRun
from crawler.publicurl import PublicUrls
from crawler.report import format_summary, write_report
from crawler.urls import url_key
from crawler.writer import WrittenFile, publish_sitemaps

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Outcomes of a crawl that did its job.
GOOD = frozenset({"published", "crawled"})
#: Close reasons of a crawl stopped by Ctrl-C or SIGTERM.
INTERRUPTED = frozenset({"shutdown", "cancelled"})


class SitemapPublisher:
    def __init__(self, crawler: Crawler, paths: CrawlPaths) -> None:
        self.crawler = crawler
        self.paths = paths
        s = crawler.settings
        self.fmt = s.get("SITEMAP_FORMAT", "xml")
        self.gzip = s.getbool("SITEMAP_GZIP", True)
        self.publish = s.getbool("SITEMAP_PUBLISH", True)
        self.force = s.getbool("SITEMAP_FORCE", False)
        self.incremental = s.getbool("SITEMAP_INCREMENTAL", True)
        self.dedupe_content = s.getbool("SITEMAP_DEDUPE_CONTENT", True)
        self.max_drop = s.getfloat("SITEMAP_MAX_DROP", 0.2)
        self.max_error_rate = s.getfloat("SITEMAP_MAX_ERROR_RATE", 0.1)
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
        stats = self.crawler.stats
        assert stats is not None
        if stats.get_value("sitemap/locked"):
            return  # another run owns the state directory: touch nothing
        running = self.paths.running_ledger
        if not running.exists():
            return
        # An interrupted run with a JOBDIR keeps its ledger as it is, to be resumed,
        # unless --force asked to publish what it found.
        resumable = (
            reason in INTERRUPTED and bool(self.crawler.settings.get("JOBDIR")) and not self.force
        )
        ledger = Ledger(running)
        previous = PreviousRun.open(self.paths.ledger) if self.incremental else None
        try:
            if not resumable:
                for decision, count in ledger.finish(
                    "not fetched: the crawl stopped first", self.dedupe_content
                ).items():
                    stats.inc_value(f"sitemap/decision/{decision}", count)
            outcome, message = self._publish(ledger, previous, spider, reason)
            if resumable:
                message += "; run again with --resume to continue"
            stats.set_value("sitemap/outcome", outcome)
            stats.set_value("sitemap/message", message)
            ledger.set_meta("outcome", {"outcome": outcome, "message": message, "reason": reason})
            ledger.commit()
            self._write_report(ledger, previous, outcome, message)
            if outcome in GOOD:
                ledger.export_jsonl(self.paths.state / LEDGER_JSONL)
        finally:
            ledger.close()
            if previous is not None:
                previous.close()
        if not resumable:
            final = self.paths.ledger if outcome in GOOD else self.paths.state / LEDGER_FAILED
            running.replace(final)
        log = logger.info if outcome in GOOD else logger.error
        log("Sitemap %s: %s\n%s", outcome, message, format_summary(stats.get_stats()))

    def _publish(
        self, ledger: Ledger, previous: PreviousRun | None, spider: Spider, reason: str
    ) -> tuple[str, str]:
        stats = self.crawler.stats
        assert stats is not None
        fatal = stats.get_value("sitemap/fatal")
        if fatal:
            return "failed", fatal
        if reason != "finished" and not (self.force and reason in INTERRUPTED):
            kind = "interrupted" if reason in INTERRUPTED else "failed"
            return kind, f"the crawl did not finish ({reason}); nothing was published"
        if ledger.counts().get(LISTED, 0) == 0:
            return "failed", "nothing listed" + _start_note(ledger, spider)
        if not self.force and (refusal := self._refusal(ledger, previous)):
            return "refused", refusal + "; the previous set is kept (--force publishes anyway)"
        if not self.publish:
            return "crawled", "the crawl finished; publishing is off (SITEMAP_PUBLISH)"
        public = PublicUrls.from_settings(spider.start_url, self.crawler.settings)  # type: ignore[attr-defined]
        try:
            index, files = self.write_sitemaps(ledger, public.public_prefix)
        except (OSError, ValueError) as e:
            return "output-error", f"could not publish to {self.paths.out}: {e}"
        stats.set_value("sitemap/files_written", len(files))
        stats.set_value("sitemap/urls_written", sum(f.urls for f in files))
        stats.set_value("sitemap/index_path", str(index))
        stats.set_value("sitemap/index_url", public.sitemap_loc(index.name))
        return "published", f"{len(files)} files and {index}"

    def _refusal(self, ledger: Ledger, previous: PreviousRun | None) -> str | None:
        """Why this run's set must not replace the published one (issue #4)."""
        fetched, failed = ledger.error_counts()
        if fetched and failed / fetched > self.max_error_rate:
            return (
                f"{failed} of {fetched} fetched pages failed ({failed / fetched:.0%}, over "
                f"{self.max_error_rate:.0%}): the site looks partly down"
            )
        if previous is not None:
            before = previous.listed_count()
            removed = ledger.count_removed(previous.path)
            if before and removed / before > self.max_drop:
                return (
                    f"the new set drops {removed} of the {before} URLs published last time "
                    f"({removed / before:.0%}, over {self.max_drop:.0%})"
                )
        return None

    def _write_report(
        self, ledger: Ledger, previous: PreviousRun | None, outcome: str, message: str
    ) -> None:
        stats = self.crawler.stats
        assert stats is not None
        path = self.paths.state / REPORT
        counts = write_report(
            path, stats.get_stats(), ledger, previous.path if previous else None, outcome, message
        )
        stats.set_value("sitemap/report_path", str(path))
        for name, count in counts.items():
            stats.set_value(f"sitemap/{name}", count)

    def write_sitemaps(self, ledger: Ledger, index_base_url: str) -> tuple[Path, list[WrittenFile]]:
        """Stream the ledger's listed pages into a new sitemap set in ``SITEMAP_OUT_DIR``
        and publish it (bench/write.py times this step on its own)."""
        return publish_sitemaps(
            self.paths.out,
            self._entries(ledger),
            index_base_url=index_base_url,
            fmt=self.fmt,
            gzip=self.gzip,
            max_urls=self.max_urls,
            max_bytes=self.max_bytes,
        )

    def _entries(self, ledger: Ledger) -> EntryRows:
        return ledger.listed_entries(self.changefreq, self.priority)


def _start_note(ledger: Ledger, spider: Any) -> str:
    start = getattr(spider, "start_url", None)
    if not start:
        return ""
    for row in ledger.rows(key=url_key(start)):
        reason = f", {row['reason']}" if row["reason"] else ""
        return f" (start URL {start}: {row['decision']}{reason})"
    return ""
