"""``sitemap-crawler audit URL`` (or ``scrapy audit``): compare a site's existing sitemaps
with a crawl that publishes nothing (or an earlier crawl's ledger, ``--state``); print
the report and, with ``--report DIR``, write it (:mod:`crawler.audit.report`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.audit.classes import CLASSES, FLAGS
from crawler.commands.declarations import AUDIT as OPTIONS
from crawler.commands.options import (
    EXIT_AUDIT_FAILED,
    EXIT_CRAWL_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    UsageError,
    check_writable,
    checked_settings,
    make_directories,
    print_stdout,
    project_settings,
    resolve_start,
    run_command,
    scrapy_command,
    site_settings,
)
from crawler.commands.process import closed_reasons
from crawler.core.outcome import INTERRUPTED, RunOutcome
from crawler.core.paths import AUDIT_HISTORY, LEDGER

if TYPE_CHECKING:
    from scrapy.settings import Settings

    from crawler.audit.report import AuditReport


NAME = "audit"
HELP = "compare a site's existing sitemaps with what a crawl finds"
DESCRIPTION = (
    "Find URL's existing sitemaps (robots.txt Sitemap: lines, the usual places, "
    "--sitemap), crawl the site (or read an earlier crawl with --state), and report every "
    "listed URL's class, the indexable pages the sitemaps miss, and protocol problems."
)
EPILOG = (
    "Exit status: 0 audit done (and the bars passed); 2 usage error; 3 the crawl failed "
    "(start URL or robots.txt unreachable); 5 --fail-under or --fail-on broke; 130 "
    f"interrupted. Classes: {', '.join(CLASSES)}; flags: {', '.join(FLAGS)}; and protocol "
    "(any protocol problem)."
)


def audit_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Check the ``audit`` arguments and map them onto settings; raise UsageError."""
    settings = site_settings(args, OPTIONS)
    if args.state and not (ledger := Path(args.state) / LEDGER).is_file():
        raise UsageError(f"no finished crawl in {args.state}: {ledger} is missing")
    for item in args.sitemap:
        if "://" not in item and not Path(item).is_file():
            raise UsageError(f"--sitemap {item!r} is neither a URL nor a readable file")
    if args.report:
        check_writable(Path(args.report))
    settings.update(dict(args.settings))
    checked_settings(settings, typed=dict(args.settings))
    if args.report:
        make_directories(Path(args.report))
    return settings


@dataclass
class AuditOutcome:
    """How an audit ended (``report``: None when there is none)."""

    code: int
    report: AuditReport | None = None
    written: list[Path] = field(default_factory=list)
    summary: str = ""
    error: str | None = None


def execute(args: argparse.Namespace, base: Settings | None = None) -> AuditOutcome:
    """Crawl (unless ``--state``), read the sitemaps, build and write the report."""
    from scrapy.crawler import Crawler, CrawlerProcess

    from crawler.audit.report import build_report, write_report
    from crawler.audit.spider import AuditSpider
    from crawler.audit.summary import failures
    from crawler.audit.summary import format_summary as audit_summary
    from crawler.crawl.spider import SiteSpider
    from crawler.ledger.runstate import RunState

    overrides = audit_settings(args)
    moved = None
    if not args.state:  # an earlier crawl's ledger has its origin already
        moved = resolve_start(args, overrides).line()
        overrides = audit_settings(args)  # again, on the final origin
    work = Path(tempfile.mkdtemp(prefix="sitemap-audit-"))
    try:
        ledger = Path(args.state) / LEDGER if args.state else work / "crawl" / LEDGER
        common = {**overrides, "SITEMAP_OUT_DIR": str(work / "out")}
        process = CrawlerProcess(project_settings(common, base))
        audit = {
            **common,
            # The audit publishes nothing and keeps no run state of its own.
            "SITEMAP_OUT_DIR": None,
            "SITEMAP_AUDIT_LEDGER": str(ledger),
            "SITEMAP_AUDIT_STORE": str(work / "audit.sqlite"),
            "SITEMAP_AUDIT_SITEMAPS": [
                str(Path(x).resolve()) if "://" not in x else x for x in args.sitemap
            ],
        }
        # The first crawler of the process installs the reactor.
        auditor = Crawler(AuditSpider, project_settings(audit, base), init_reactor=bool(args.state))
        crawled: list[RunOutcome | None] = []
        if args.state:
            process.crawl(auditor, url=args.url)
        else:
            site = {**common, "SITEMAP_STATE_DIR": str(work / "crawl"), "SITEMAP_PUBLISH": False}
            crawler = Crawler(SiteSpider, project_settings(site, base), init_reactor=True)

            def then_audit(_: Any) -> Any:
                state = RunState.existing(crawler)
                crawled.append(state.outcome if state is not None else None)
                if crawled[0] is not None and crawled[0].outcome == "crawled":
                    return process.crawl(auditor, url=args.url)
                return None

            process.crawl(crawler, url=args.url).addCallback(then_audit)
        closed = closed_reasons(auditor)
        process.start()
        if crawled and (crawl := crawled[0] or RunOutcome("failed", "failed")).outcome != "crawled":
            code = EXIT_INTERRUPTED if crawl.outcome == "interrupted" else EXIT_CRAWL_FAILED
            return AuditOutcome(code, error=f"the crawl failed: {crawl.message}")
        if closed and closed[0] in INTERRUPTED:
            return AuditOutcome(EXIT_INTERRUPTED, error="interrupted; no report")
        state = RunState.existing(auditor)
        if state is not None and state.fatal:
            return AuditOutcome(EXIT_CRAWL_FAILED, error=state.fatal)
        report = build_report(args.url, ledger, work / "audit.sqlite")
        # The report files first: a reader that stops reading stdout loses nothing.
        summary = audit_summary(report)
        if moved:
            summary = f"{moved}\n{summary}"
        written: list[Path] = []
        if args.report:
            report.history = keep_history(report, Path(args.state or args.report))
            html = process.settings.getbool("SITEMAP_REPORT_HTML")
            cap = process.settings.getint("SITEMAP_REPORT_HTML_URLS")
            written = write_report(report, Path(args.report), html, cap)
            csvs = len(written) - (2 if html else 1)
            summary += f"\nreport: {written[0]} and {csvs} CSV files"
            if html:
                summary += f"\nhtml report: {written[1]}"
        if broken := failures(report, args.fail_under, args.fail_on):
            why = f"audit failed: {'; '.join(broken)}"
            return AuditOutcome(EXIT_AUDIT_FAILED, report, written, summary, why)
        return AuditOutcome(EXIT_OK, report, written, summary)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def keep_history(report: AuditReport, directory: Path) -> list[dict[str, Any]]:
    """Add this audit to ``audit-history.json`` in *directory*; the site's audits."""
    from crawler.publish.reporthistory import AUDITS_KEPT, append_history

    path, entry = directory / AUDIT_HISTORY, report.history_entry()
    return append_history(path, entry, AUDITS_KEPT, group="site", key="generated")


def run(
    parser: argparse.ArgumentParser, args: argparse.Namespace, base: Settings | None = None
) -> int:
    """``sitemap-crawler audit``: run, print the summary, return the exit status."""
    return run_command(
        parser, args, lambda a: execute(a, base), _show, interrupted="interrupted; no report"
    )


def _show(outcome: AuditOutcome) -> None:
    if outcome.summary:
        print_stdout(outcome.summary)


Command = scrapy_command(sys.modules[__name__])
