"""Publisher extension: close the books of a run and publish its sitemap set.

Scrapy's feed exports write items as they come; a sitemap set must be sorted,
deduplicated and rotated, and published atomically only when the whole crawl
succeeded. So this extension runs on ``spider_closed`` (after the item pipelines):
it closes the books of the running ledger (:func:`crawler.core.decisions.close_books`),
decides whether to publish, streams the listed pages from the ledger in order into
:class:`crawler.publish.writer.SitemapSetWriter` (:class:`SitemapOutput`), and writes the
run report (``report.json`` in the state directory, :func:`crawler.publish.report.write_json`).

When it publishes and when it refuses (a run stopped by its time budget, a
:attr:`RunState.fatal <crawler.ledger.runstate.RunState.fatal>`): docs/nightly.md, "Safe
publishing", and docs/crawling.md, "A time budget". A run that does not publish leaves
the previous set untouched, and the run state files the ledger (:meth:`RunState.end
<crawler.ledger.runstate.RunState.end>`), so the next run starts from the last good
state. Its settings and ``sitemap/*`` stats are listed in docs/reference.md.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals

from crawler.core.decisions import (
    CALENDAR,
    LEARNED,
    LISTED,
    QUEUED,
    UNFETCHED,
    UNFETCHED_TIME,
    close_books,
)
from crawler.core.lastmod import lastmod_datetime, w3c_datetime
from crawler.core.outcome import GOOD, INTERRUPTED, Outcome, Published, RunOutcome
from crawler.core.paths import REPORT, REPORT_HTML, RUNS
from crawler.core.urls import url_key
from crawler.crawl.calendars import date_of
from crawler.crawl.params import settler
from crawler.ledger.runstate import RunState
from crawler.page.analysis import Rich
from crawler.publish.changes import feed_entries, feed_updated
from crawler.publish.childfile import same_bytes
from crawler.publish.feed import FEED_NAME, discard, publish_feed, render_feed, write_feed
from crawler.publish.htmlpage import write_html
from crawler.publish.report import DEFAULT_SECTION, PREFIX, format_summary, run_model, write_json
from crawler.publish.reporthistory import RUNS_KEPT, append_history
from crawler.publish.richentries import news_entries, settle
from crawler.publish.runhtml import render_run
from crawler.publish.writer import WrittenFile, publish_sitemaps
from crawler.sitemaps.entry import ChangeFreq, SitemapEntry
from crawler.sitemaps.entryrows import NEWS_SECTION

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from crawler.ledger.ledger import Ledger

logger = logging.getLogger(__name__)

#: Close reasons of a crawl stopped by a budget (Scrapy's CloseSpider extension)
#: that publishes what it judged, in words for the summary. Only time: the other
#: CLOSESPIDER_* closes stay a crawl that did not finish (--max-pages is the page
#: budget that publishes, with its URLs left cap-reached as it goes).
BUDGETS = {"closespider_timeout": "the time budget (--max-time) ran out"}
# Rules that give entries a section, changefreq or priority of their own.
_PER_ROW = ("SITEMAP_SECTIONS", "SITEMAP_CHANGEFREQ_RULES", "SITEMAP_PRIORITY_RULES")


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
            per_row=any(map(settings.getlist, _PER_ROW)),
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


@dataclass(frozen=True, slots=True)
class RichRules:
    """What rich entries the set gets (docs/rich.md): *read*: whether pages were read
    for any (hreflang, images or videos); *alternate_hosts*; *news_publication*
    (None: no news sitemap) and the news window's reference time *news_time* (None:
    when the run started)."""

    read: bool
    alternate_hosts: frozenset[str]
    news_publication: str | None
    news_time: datetime | None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RichRules:
        when = settings.get("SITEMAP_NEWS_TIME")
        return cls(
            read=bool(Rich.from_settings(settings)),
            alternate_hosts=frozenset(
                h.lower() for h in settings.getlist("SITEMAP_ALTERNATE_HOSTS")
            ),
            news_publication=settings.get("SITEMAP_NEWS_PUBLICATION") or None,
            news_time=lastmod_datetime(w3c_datetime(str(when)) or "") if when else None,
        )


@dataclass(frozen=True, slots=True)
class FeedRules:
    """The delta feed (crawler.publish.changes): on or off, its window in days, its most entries."""

    enabled: bool
    days: int
    most: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FeedRules:
        return cls(
            settings.getbool("SITEMAP_FEED"),
            settings.getint("SITEMAP_FEED_DAYS"),
            settings.getint("SITEMAP_FEED_MAX"),
        )


@dataclass(eq=False)
class SitemapPublisher:
    """Publishes the run of *state* (see the module docstring). *publish*: write the
    set (off: crawl only); *force*: publish a run that looks broken, or what an
    interrupted one found; *resumable*: an interrupted run can be continued (it has a
    ``JOBDIR``)."""

    state: RunState
    stats: StatsCollector
    output: SitemapOutput
    rich: RichRules
    feed: FeedRules
    publish: bool
    force: bool
    dedupe_content: bool
    max_variants: int
    max_drop: float
    max_error_rate: float
    resumable: bool
    report_html: bool
    report_urls: int
    # The extensions the rich entries use (settled when the books are closed).
    extensions: frozenset[str] = frozenset()
    # What the checks before publishing found (_refusal), for the report's "why".
    checked: str = ""
    # Where the set went, once published (for the run's outcome).
    published: Published | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        assert crawler.stats is not None
        ext = cls(
            state=RunState.of(crawler),
            stats=crawler.stats,
            output=SitemapOutput.from_settings(s),
            rich=RichRules.from_settings(s),
            feed=FeedRules.from_settings(s),
            publish=s.getbool("SITEMAP_PUBLISH"),
            force=s.getbool("SITEMAP_FORCE"),
            dedupe_content=s.getbool("SITEMAP_DEDUPE_CONTENT"),
            max_variants=s.getint("SITEMAP_MAX_VARIANTS_PER_PATH"),
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
            if not resumable:
                if state.unfetched is not None:
                    # The run failed before it could fetch them: say why, not a cap.
                    ledger.redecide_queued(*state.unfetched)
                unfetched = UNFETCHED_TIME if reason == "closespider_timeout" else UNFETCHED
                if reason in BUDGETS and state.previous is not None and state.policy is not None:
                    # Known pages the budget left unverified keep their record, still
                    # due: carried to the next night (crawler.ledger.schedule).
                    carried = ledger.carry_queued(state.previous.path)
                    stats.set_value("sitemap/schedule/carried", carried)
                left = close_books(
                    ledger,
                    dedupe_content=self.dedupe_content,
                    unfetched=unfetched,
                    variants=settler(self.max_variants),
                )
                # For the summary (shown when sitemaps brought seeds; 0 otherwise).
                stats.set_value("sitemap/seeds/listed_unlinked", ledger.listed_unlinked())
                if reason in BUDGETS:
                    stats.set_value("sitemap/budget", BUDGETS[reason])
                    stats.set_value("sitemap/budget/unfetched", left)
                self._settle_rich(ledger)
            self._count_decisions(ledger)
            self._count_schedule(ledger)
            outcome, message = self._publish(ledger, reason)
            if resumable:
                message += "; run again with --resume to continue"
            stats.set_value("sitemap/outcome", outcome)
            stats.set_value("sitemap/message", message)
            ledger.set_meta("outcome", {"outcome": outcome, "message": message, "reason": reason})
            ledger.commit()
            report, html = self._write_report(ledger, outcome, message)
            state.outcome = RunOutcome(
                outcome,
                message,
                self.published if outcome == "published" else None,
                report,
                html,
            )
        finally:
            state.end(good=outcome in GOOD, resumable=resumable)
        log = logger.info if outcome in GOOD else logger.error
        log("Sitemap %s: %s\n%s", outcome, message, format_summary(stats.get_stats()))

    def _count_schedule(self, ledger: Ledger) -> None:
        """The revisit schedule's figures, from the books (a URL recorded twice, kept
        then verified after all, counts once): URLs verified tonight, found changed,
        and kept from the previous run."""
        policy, previous = self.state.policy, self.state.previous
        if policy is None:
            return
        verified, kept, changed = ledger.schedule_counts(
            policy.now, previous.path if previous is not None else None
        )
        self.stats.set_value("sitemap/schedule/verified", verified)
        self.stats.set_value("sitemap/schedule/kept", kept)
        self.stats.set_value("sitemap/schedule/changed", changed)

    def _count_decisions(self, ledger: Ledger) -> None:
        """The decision stats, from the ledger's books (the pipeline counted records
        as they came; the books know which decision each URL ended with)."""
        decided = ledger.counts()
        counts = {f"{PREFIX}{k}": v for k, v in decided.items() if k != QUEUED}
        others = {k: v for k, v in self.stats.get_stats().items() if not k.startswith(PREFIX)}
        self.stats.set_stats({**others, **counts})
        # What the crawl learned (docs/crawling.md#traps-learned), for the summary and report.json.
        for decision in LEARNED:
            if decided.get(decision):
                self.stats.set_value(f"sitemap/excluded/{decision}", decided[decision])
        if learned := ledger.learned_params():
            self.stats.set_value("sitemap/learned/parameters", learned)
        rows = ledger.rows(decision=CALENDAR)
        templates = {dated.template for row in rows if (dated := date_of(row["url"])) is not None}
        if templates:
            self.stats.set_value("sitemap/learned/calendars", len(templates))

    def _publish(self, ledger: Ledger, reason: str) -> tuple[Outcome, str]:
        state = self.state
        assert state.paths is not None
        if state.fatal:
            return "failed", state.fatal
        finished = reason == "finished" or reason in BUDGETS
        if not finished and not (self.force and reason in INTERRUPTED):
            kind: Outcome = "interrupted" if reason in INTERRUPTED else "failed"
            return kind, f"the crawl did not finish ({reason}); nothing was published"
        if ledger.counts().get(LISTED, 0) == 0:
            return "failed", "nothing listed" + _start_note(ledger, state.start_url)
        if not self.force and (refusal := self._refusal(ledger)):
            return "refused", refusal + "; the previous set is kept (--force publishes anyway)"
        if not self.publish:
            return "crawled", "the crawl finished; publishing is off (SITEMAP_PUBLISH)"
        public = state.public
        news: list[SitemapEntry] = []
        if self.rich.news_publication:
            now = self.rich.news_time or state.started
            news, unwritten = news_entries(ledger, self.rich.news_publication, now)
            self.stats.set_value("sitemap/rich/news", len(news))
            for loc, problem in unwritten:
                logger.warning("%s: %s", loc, problem)
        feed = state.paths.out / FEED_NAME
        temp = self._write_feed(ledger, feed) if self.feed.enabled else None
        try:
            index, files = self.output.write(
                ledger, state.paths.out, public.public_prefix, self.extensions, news
            )
        except (OSError, ValueError) as e:
            if temp is not None:
                discard(temp)
            return "output-error", f"could not publish to {state.paths.out}: {e}"
        # Right after the index: the feed describes the set now in place.
        if temp is not None:
            if same_bytes(temp, feed):
                discard(temp)  # left untouched, as an unchanged sitemap file is
            else:
                publish_feed(temp, feed)
            self.stats.set_value("sitemap/feed_url", public.sitemap_loc(FEED_NAME))
        else:
            feed.unlink(missing_ok=True)  # ours, from a run with the feed on
        self.stats.set_value("sitemap/first_run", state.previous is None)
        unchanged = sum(f.unchanged for f in files)
        self.stats.set_value("sitemap/files_written", len(files) - unchanged)
        self.stats.set_value("sitemap/files_unchanged", unchanged)
        names = [f.name for f in files]
        before = state.previous.get_meta("published") if state.previous is not None else None
        # When this very set was first published: an unchanged night keeps the date.
        since = state.started.isoformat()
        same_set = (
            unchanged == len(files)
            and isinstance(before, dict)
            and [f.get("name") for f in before.get("files", [])] == names
            and before.get("index") == str(index)
        )
        if same_set:
            assert state.previous is not None and isinstance(before, dict)
            since = before.get("since") or state.previous.get_meta("run_started") or since
        self.stats.set_value("sitemap/published_since", since)
        self.stats.set_value("sitemap/set_unchanged", same_set)
        self.stats.set_value("sitemap/urls_written", sum(f.urls for f in files))
        sections = Counter({DEFAULT_SECTION: 0})
        for written in files:
            if written.section != NEWS_SECTION:
                sections[written.section or DEFAULT_SECTION] += written.urls
        if len(sections) > 1:  # only when there are sections; the default counts the rest
            for name, urls in sections.items():
                self.stats.set_value(f"sitemap/section/{name}", urls)
        self.published = Published(
            index, public.sitemap_loc(index.name), first_run=state.previous is None
        )
        self.stats.set_value("sitemap/index_path", str(index))
        self.stats.set_value("sitemap/index_url", self.published.index_url)
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
        return "published", f"{checks}; {done}"

    def _write_feed(self, ledger: Ledger, feed: Path) -> Path:
        """changes.atom under a temporary name (crawler.publish.changes, crawler.publish.feed)."""
        public = self.state.public
        entries = feed_entries(ledger, self.state.started, self.feed.days, self.feed.most)
        data = render_feed(
            entries,
            feed_id=public.sitemap_loc(FEED_NAME),
            title=f"Changes to {public.public_prefix}",
            self_url=public.sitemap_loc(FEED_NAME),
            site_url=public.public_prefix,
            empty_updated=feed_updated(ledger, entries),
        )
        self.stats.set_value("sitemap/feed_entries", len(entries))
        feed.parent.mkdir(parents=True, exist_ok=True)
        return write_feed(feed, data)

    def _settle_rich(self, ledger: Ledger) -> None:
        """The rich entries' extensions and problems (crawler.publish.richentries)."""
        if not self.rich.read:
            return
        counts = settle(ledger, self.state.public, self.rich.alternate_hosts)
        self.extensions = counts.extensions
        for name in ("alternates", "images", "videos", "problems"):
            self.stats.set_value(f"sitemap/rich/{name}", getattr(counts, name))

    def _refusal(self, ledger: Ledger) -> str | None:
        """Why this run's set must not replace the published one (docs/nightly.md, "Safe
        publishing"); when it
        may, ``checked`` says what was checked, for the report's "why"."""
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

    def _write_report(self, ledger: Ledger, outcome: str, message: str) -> tuple[Path, Path | None]:
        """report.json, the runs kept in runs.json, and report.html: one model
        (crawler.publish.report.RunModel), so the page's figures are the JSON's. Returns
        the paths of report.json and report.html (None: off)."""
        state = self.state
        assert state.paths is not None
        path = state.paths.state / REPORT
        previous = state.previous.path if state.previous else None
        model = run_model(self.stats.get_stats(), ledger, previous, outcome, message)
        model.fields["history"] = append_history(
            state.paths.state / RUNS, model.history_entry(), RUNS_KEPT
        )
        counts = write_json(path, model)
        self.stats.set_value("sitemap/report_path", str(path))
        for name, count in counts.items():
            self.stats.set_value(f"sitemap/{name}", count)
        if self.report_html:
            page = render_run(model, ledger, self.report_urls)
            html = write_html(path.with_name(REPORT_HTML), page)
            self.stats.set_value("sitemap/report_html_path", str(html))
            return path, html
        return path, None


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
