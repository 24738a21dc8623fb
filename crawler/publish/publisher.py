"""Publisher extension: close the books of a run and publish its sitemap set.

Why on ``spider_closed`` (after the item pipelines) and not through Scrapy's feed exports:
those write items as they come, and a sitemap set must be sorted, deduplicated and rotated,
and published atomically only when the whole crawl succeeded. In order: the books are
closed (:class:`crawler.publish.books.BookKeeper`), the run is judged, the listed pages are
streamed from the ledger into :class:`crawler.publish.writer.SitemapSetWriter`, and the
reports are written from the run's :class:`crawler.core.summary.RunSummary`, which the
command reads. When it refuses and what a refused run leaves: docs/nightly.md, "Safe
publishing", and docs/crawling.md, "A time budget". Its settings, and the ``sitemap/*``
stats it sets for Scrapy's users (nothing reads them back): docs/reference.md.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals

from crawler.core.lastmod import lastmod_datetime, w3c_datetime
from crawler.core.outcome import GOOD, INTERRUPTED, Outcome, RunOutcome
from crawler.core.paths import REPORT, REPORT_HTML, RUNS
from crawler.core.summary import Books, CrawlFigures, RunSummary, SetFigures
from crawler.core.urls import url_key
from crawler.ledger.runstate import RunState
from crawler.page.analysis import Rich
from crawler.publish.books import BUDGETS, BookKeeper
from crawler.publish.changes import feed_entries
from crawler.publish.feed import FEED_NAME, publish_feed, render_feed, write_feed
from crawler.publish.htmlpage import write_html
from crawler.publish.report import DEFAULT_SECTION, format_summary, run_model, write_json
from crawler.publish.reporthistory import RUNS_KEPT, append_history
from crawler.publish.richentries import news_entries
from crawler.publish.runhtml import render_run
from crawler.publish.writer import WrittenFile, publish_sitemaps
from crawler.sitemaps.entry import ChangeFreq, SitemapEntry
from crawler.sitemaps.entryrows import NEWS_SECTION
from pipelines.rules import row_rules

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from crawler.ledger.ledger import Ledger

logger = logging.getLogger(__name__)

#: The stats the pipeline counts decisions in as they come; the closed books' replace them.
DECISION = "sitemap/decision/"


@dataclass(frozen=True, slots=True)
class SitemapOutput:
    """How the sitemap set is written: the file format, gzip, the rotation caps, and
    the ``changefreq`` and ``priority`` every entry gets (None: omitted)."""

    fmt: str
    gzip: bool
    max_urls: int
    max_bytes: int
    changefreq: ChangeFreq | None
    priority: Decimal | None
    per_row: bool = False  # rules give entries a section, changefreq or priority

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SitemapOutput:
        changefreq = settings.get("SITEMAP_CHANGEFREQ")
        priority = settings.get("SITEMAP_PRIORITY")
        return cls(
            fmt=settings["SITEMAP_FORMAT"],
            gzip=settings.getbool("SITEMAP_GZIP"),
            max_urls=settings.getint("SITEMAP_MAX_URLS_PER_FILE"),
            max_bytes=settings.getint("SITEMAP_MAX_BYTES_PER_FILE"),
            changefreq=ChangeFreq(changefreq) if changefreq else None,
            priority=Decimal(str(priority)) if priority not in (None, "") else None,
            per_row=any(row_rules(settings)),
        )

    def write(
        self,
        ledger: Ledger,
        out: Path,
        index_base_url: str,
        extensions: frozenset[str] = frozenset(),
        news: list[SitemapEntry] | None = None,
    ) -> tuple[Path, list[WrittenFile]]:
        """Stream the ledger's listed pages into a new sitemap set in *out* and publish
        it (bench/write.py times this step on its own)."""
        return publish_sitemaps(
            out,
            ledger.listed_entries(self.changefreq, self.priority, self.per_row),
            news=news or (),
            index_base_url=index_base_url,
            fmt=self.fmt,
            gzip=self.gzip,
            max_urls=self.max_urls,
            max_bytes=self.max_bytes,
            extensions=extensions,
        )


@dataclass(eq=False)
class SitemapPublisher:
    """Publishes the run of *state* (see the module docstring). *news_publication*:
    the news sitemap's (None: none, docs/rich.md) and *news_time* the news window's
    reference time (None: when the run started); *feed*: the delta feed, and
    *feed_days* and *feed_most* its window and most entries (crawler.publish.changes);
    *publish*: write the set (off: crawl only); *force*: publish a run that looks
    broken, or what an interrupted one found; *resumable*: an interrupted run can be
    continued (it has a ``JOBDIR``)."""

    state: RunState
    stats: StatsCollector
    books: BookKeeper
    output: SitemapOutput
    news_publication: str | None
    news_time: datetime | None
    feed: bool
    feed_days: int
    feed_most: int
    publish: bool
    force: bool
    max_drop: float
    max_error_rate: float
    resumable: bool
    report_html: bool
    report_urls: int
    # What the checks before publishing found (_refusal), for the report's "why".
    checked: str = ""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        assert crawler.stats is not None
        when = s.get("SITEMAP_NEWS_TIME")
        ext = cls(
            state=RunState.of(crawler),
            stats=crawler.stats,
            books=BookKeeper(
                dedupe_content=s.getbool("SITEMAP_DEDUPE_CONTENT"),
                max_variants=s.getint("SITEMAP_MAX_VARIANTS_PER_PATH"),
                alternate_hosts=(
                    frozenset(h.lower() for h in s.getlist("SITEMAP_ALTERNATE_HOSTS"))
                    if Rich.from_settings(s)
                    else None
                ),
            ),
            output=SitemapOutput.from_settings(s),
            news_publication=s.get("SITEMAP_NEWS_PUBLICATION") or None,
            news_time=lastmod_datetime(w3c_datetime(str(when)) or "") if when else None,
            feed=s.getbool("SITEMAP_FEED"),
            feed_days=s.getint("SITEMAP_FEED_DAYS"),
            feed_most=s.getint("SITEMAP_FEED_MAX"),
            publish=s.getbool("SITEMAP_PUBLISH"),
            force=s.getbool("SITEMAP_FORCE"),
            max_drop=s.getfloat("SITEMAP_MAX_DROP"),
            max_error_rate=s.getfloat("SITEMAP_MAX_ERROR_RATE"),
            resumable=bool(s.get("JOBDIR")),
            report_html=s.getbool("SITEMAP_REPORT_HTML"),
            report_urls=s.getint("SITEMAP_REPORT_HTML_URLS"),
        )
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_closed(self, reason: str) -> None:
        state, stats = self.state, self.stats
        if state.locked_out:
            # Another run owns the state directory: touch nothing, say why.
            assert state.fatal is not None  # set when it was locked out
            state.outcome = RunOutcome("failed", state.fatal)
            stats.set_value("sitemap/outcome", "failed")
            stats.set_value("sitemap/message", state.fatal)
            return
        ledger = state.ledger
        if ledger is None or state.paths is None:
            return  # a process that keeps no books
        # An interrupted run with a JOBDIR keeps its ledger as it is, to be resumed,
        # unless --force asked to publish what it found.
        resumable = reason in INTERRUPTED and self.resumable and not self.force
        outcome: Outcome = "interrupted"
        try:
            books = self.books.close(state, reason, final=not resumable)
            outcome, message, figures = self._publish(ledger, books, reason)
            if resumable:
                message += "; run again with --resume to continue"
            ledger.set_meta("outcome", {"outcome": outcome, "message": message, "reason": reason})
            ledger.commit()
            crawl = CrawlFigures.from_stats(stats.get_stats())
            first = state.previous is None
            summary = RunSummary(outcome, message, first, books, crawl, figures, state.full_night)
            summary = self._write_report(ledger, summary)
            # The stats say what the summary says; the pipeline's own decision counts go.
            kept = {k: v for k, v in stats.get_stats().items() if not k.startswith(DECISION)}
            stats.set_stats({**kept, **summary.stats()})
            state.outcome = RunOutcome(outcome, message, summary)
        finally:
            state.end(good=outcome in GOOD, resumable=resumable)
        log = logger.info if outcome in GOOD else logger.error
        log("Sitemap %s: %s\n%s", outcome, message, format_summary(summary))

    def _publish(
        self, ledger: Ledger, books: Books, reason: str
    ) -> tuple[Outcome, str, SetFigures | None]:
        state = self.state
        if state.fatal:
            return "failed", state.fatal, None
        finished = reason == "finished" or reason in BUDGETS
        if not finished and not (self.force and reason in INTERRUPTED):
            kind: Outcome = "interrupted" if reason in INTERRUPTED else "failed"
            return kind, f"the crawl did not finish ({reason}); nothing was published", None
        if books.listed == 0:
            return "failed", "nothing listed" + _start_note(ledger, state.start_url), None
        if not self.force and (refusal := self._refusal(ledger)):
            why = refusal + "; the previous set is kept (--force publishes anyway)"
            return "refused", why, None
        if not self.publish:
            return "crawled", "the crawl finished; publishing is off (SITEMAP_PUBLISH)", None
        return self._write_set(ledger, books, reason)

    def _write_set(
        self, ledger: Ledger, books: Books, reason: str
    ) -> tuple[Outcome, str, SetFigures | None]:
        state = self.state
        assert state.paths is not None
        public = state.public
        news: list[SitemapEntry] = []
        if self.news_publication:
            now = self.news_time or state.started
            news, unwritten = news_entries(ledger, self.news_publication, now)
            for loc, problem in unwritten:
                logger.warning("%s: %s", loc, problem)
        feed = state.paths.out / FEED_NAME
        temp = self._write_feed(ledger, feed) if self.feed else None
        extensions = books.rich.extensions if books.rich is not None else frozenset()
        try:
            index, files = self.output.write(
                ledger, state.paths.out, public.public_prefix, extensions, news
            )
        except (OSError, ValueError) as e:
            if temp is not None:
                temp.unlink(missing_ok=True)
            return "output-error", f"could not publish to {state.paths.out}: {e}", None
        # Right after the index: the feed describes the set now in place.
        if temp is not None:
            publish_feed(temp, feed)
        else:
            feed.unlink(missing_ok=True)  # ours, from a run with the feed on
        unchanged = sum(f.unchanged for f in files)
        before = state.previous.get_meta("published") if state.previous is not None else None
        # When this very set was first published: an unchanged night keeps the date.
        since = state.started.isoformat()
        same_set = (
            unchanged == len(files)
            and isinstance(before, dict)
            and [f.get("name") for f in before.get("files", [])] == [f.name for f in files]
            and before.get("index") == str(index)
        )
        if same_set:
            assert state.previous is not None and isinstance(before, dict)
            since = before.get("since") or state.previous.get_meta("run_started") or since
        sections = Counter({DEFAULT_SECTION: 0})
        for written in files:
            if written.section != NEWS_SECTION:
                sections[written.section or DEFAULT_SECTION] += written.urls
        figures = SetFigures(
            files_written=len(files) - unchanged,
            files_unchanged=unchanged,
            urls_written=sum(f.urls for f in files),
            index_path=index,
            index_url=public.sitemap_loc(index.name),
            published_since=since,
            set_unchanged=same_set,
            feed_url=public.sitemap_loc(FEED_NAME) if temp is not None else None,
            # Only when there are sections; the default counts the rest.
            sections=dict(sorted(sections.items())) if len(sections) > 1 else {},
            news=len(news),
        )
        # Which file holds which page, for `explain` (docs/explain.md): the files in the
        # order written, each section's in address order, so that a page's rank in
        # its section finds its file without reading any.
        ledger.set_meta(
            "published",
            {
                "index": str(index),
                "index_url": public.sitemap_loc(index.name),
                "since": since,
                "files": [{"name": f.name, "section": f.section, "urls": f.urls} for f in files],
            },
        )
        done = _published_note(len(files), unchanged, same_set)
        if reason in BUDGETS:
            done += f" ({BUDGETS[reason]}: what was judged is published)"
        checks = (
            "published with --force: the checks were not made"
            if self.force
            else f"the crawl finished and looks sound: {self.checked}"
        )
        return "published", f"{checks}; {done}", figures

    def _write_feed(self, ledger: Ledger, feed: Path) -> Path:
        """changes.atom under a temporary name (crawler.publish.changes, crawler.publish.feed)."""
        public = self.state.public
        entries = feed_entries(ledger, self.state.started, self.feed_days, self.feed_most)
        data = render_feed(
            entries,
            feed_id=public.sitemap_loc(FEED_NAME),
            title=f"Changes to {public.public_prefix}",
            self_url=public.sitemap_loc(FEED_NAME),
            site_url=public.public_prefix,
            # Of a feed without entries: the site's latest change, so that an unchanged
            # site republishes the same bytes.
            empty_updated=ledger.latest_change() or "1970-01-01T00:00:00+00:00",
        )
        self.stats.set_value("sitemap/feed_entries", len(entries))
        feed.parent.mkdir(parents=True, exist_ok=True)
        return write_feed(feed, data)

    def _refusal(self, ledger: Ledger) -> str | None:
        """Why this run's set must not replace the published one (docs/nightly.md, "Safe
        publishing"); when it may, ``checked`` says what was checked, for the report's "why"."""
        policy = self.state.policy
        fetched, failed = ledger.error_counts(policy.now if policy is not None else 0.0)
        if fetched and failed / fetched > self.max_error_rate:
            return (
                f"{failed} of {fetched} fetched pages failed ({failed / fetched:.0%}, over "
                f"{self.max_error_rate:.0%}): the site looks partly down"
            )
        checked = (
            f"{failed} of {fetched} fetched pages failed (at most {self.max_error_rate:.0%} may)"
        )
        previous = self.state.previous
        if previous is not None:
            before = previous.listed_count()
            removed = ledger.count_removed(previous.path)
            if before and removed / before > self.max_drop:
                return (
                    f"the new set drops {removed} of the {before} URLs published last time "
                    f"({removed / before:.0%}, over {self.max_drop:.0%})"
                )
            checked += (
                f", {removed} of the {before} URLs published last time are gone (at most "
                f"{self.max_drop:.0%} may)"
            )
        self.checked = checked
        return None

    def _write_report(self, ledger: Ledger, summary: RunSummary) -> RunSummary:
        """report.json, the runs kept in runs.json, and report.html: one model
        (crawler.publish.report.RunModel), so the page's figures are the JSON's. Returns
        *summary* with the reports' paths and their lists' lengths."""
        state = self.state
        assert state.paths is not None
        path = state.paths.state / REPORT
        previous = state.previous.path if state.previous else None
        model = run_model(summary, ledger, previous)
        model.fields["history"] = append_history(
            state.paths.state / RUNS, model.history_entry(), RUNS_KEPT
        )
        lengths = write_json(path, model)
        html = None
        if self.report_html:
            page = render_run(model, ledger, self.report_urls)
            html = write_html(path.with_name(REPORT_HTML), page)
        return replace(summary, lengths=lengths, report_path=path, report_html_path=html)


def _published_note(files: int, unchanged: int, same_set: bool) -> str:
    """What the publish did to the files, for the message: "2 files written"."""
    plural = "file" if files == 1 else "files"
    if same_set:
        return f"the set is unchanged since the last run: {files} {plural} left untouched"
    if unchanged:
        return f"{files - unchanged} of {files} {plural} written ({unchanged} unchanged)"
    return f"{files} {plural} written"


def _start_note(ledger: Ledger, start: str) -> str:
    for row in ledger.rows(key=url_key(start)):
        reason = f", {row['reason']}" if row["reason"] else ""
        return f" (start URL {start}: {row['decision']}{reason})"
    return ""
