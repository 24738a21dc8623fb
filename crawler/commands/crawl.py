"""``sitemap-crawler crawl URL``: crawl a site and publish its sitemaps; with ``--redis``
or ``--processes`` this process coordinates a distributed crawl. The summary goes to
stderr, as a cron mail or a journal shows it. No Scrapy command here on purpose:
``scrapy crawl site -a url=...`` stays Scrapy's own.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.commands import distributed
from crawler.commands.declarations import CRAWL as OPTIONS
from crawler.commands.options import (
    EXIT_CRAWL_FAILED,
    EXIT_NOTIFY_FAILED,
    EXIT_OK,
    CrawlFailure,
    UsageError,
    check_writable,
    checked_settings,
    make_directories,
    project_settings,
    resolve_start,
    run_command,
    site_settings,
)
from crawler.commands.process import run_spider
from crawler.core.outcome import RunOutcome
from crawler.core.paths import JOB, LEDGER, LEDGER_RUNNING, CrawlPaths, PathError
from crawler.core.urls import normalize_url
from crawler.publish.report import format_summary

if TYPE_CHECKING:
    from scrapy.settings import Settings


NAME = "crawl"
HELP = "crawl a site and publish its sitemaps"
DESCRIPTION = (
    "Crawl URL's host (same host and port; robots.txt obeyed) and publish the indexable "
    "pages as sitemap files plus sitemap_index.xml in --out."
)
EPILOG = (
    "Exit status: 0 published; 2 usage error; 3 crawl failed (start URL or robots.txt "
    "unreachable, nothing listed, state directory in use; with --redis: Redis unreachable, "
    "or another crawl on that database; with --processes: no redis-server to start); 4 "
    "refused to publish (too many errors, or too many previously published URLs gone; "
    "--force); 6 output could not be written; 7 "
    "published, but the IndexNow notification failed (--indexnow-key); 130 "
    "interrupted (--resume continues). Nothing is published unless the crawl finished. A "
    "summary goes to stderr and report.json to the state directory."
)


def distributed_here(args: argparse.Namespace) -> bool:
    """The crawl goes through Redis: ``--redis``, or more than this process fetching."""
    return bool(args.redis) or (args.processes or 1) > 1 or bool(args.no_fetch and args.processes)


def crawl_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Check the ``crawl`` arguments and map them onto settings (no directory made);
    raise UsageError."""
    settings = site_settings(args, OPTIONS)
    try:
        paths = CrawlPaths.create(args.out, args.state)
    except PathError as e:
        raise UsageError(str(e)) from None
    for directory in (paths.out, paths.state):
        check_writable(directory)
    job = paths.state / JOB
    if distributed_here(args) and args.resume:
        raise UsageError("--resume cannot continue a distributed crawl (--redis, --processes)")
    if args.no_fetch and not (args.redis or args.processes):
        raise UsageError("--no-fetch needs --redis URL or --processes N (someone must fetch)")
    if args.urls is not None:
        from crawler.crawl.seeds import SeedError, read_url_file

        try:
            # Checked here (one line, exit status 2), read again by the frontier.
            read_url_file(args.urls, normalize_url(args.url) or args.url)
        except SeedError as e:
            raise UsageError(str(e)) from None
    if args.resume and not (job.is_dir() and paths.running_ledger.is_file()):
        raise UsageError(f"nothing to resume in {paths.state}: no interrupted run")
    settings.update(
        {
            "SITEMAP_OUT_DIR": str(paths.out),
            "SITEMAP_STATE_DIR": str(paths.state),
            # Scrapy's resumable crawl state: one per run, kept only when interrupted.
            "JOBDIR": str(job),
            **dict(args.settings),
        }
    )
    _check_render(checked_settings(settings, typed=dict(args.settings)))
    return settings


def _check_render(settings: Settings) -> None:
    """A browser named that is not there, or ``always`` without what rendering needs:
    one line saying what to install (``auto`` reads raw HTML instead, and says so)."""
    from crawler.fetch.rendering import find_browser, unavailable

    named = settings.get("SITEMAP_RENDER_BROWSER")
    if named and find_browser(settings) is None:
        raise UsageError(f"--browser {named}: not an executable file")
    if settings.get("SITEMAP_RENDER") == "always" and (problem := unavailable(settings)):
        raise UsageError(f"--render always: {problem}")


def _started_at(state: Path) -> str | None:
    """The start URL the interrupted run in *state* crawled (its running ledger's)."""
    from crawler.ledger.ledger import LedgerError, LedgerReader

    try:
        with LedgerReader.open(state / LEDGER_RUNNING) as running:
            start = running.get_meta("start_url")
    except LedgerError:
        return None
    return start if isinstance(start, str) else None


def _moved(state: Path, start: str) -> str | None:
    """Why this run may not go on with *state*: its last run crawled another origin
    than *start*'s (the site moved, docs/nightly.md), or None."""
    from crawler.core.urls import origin_of
    from crawler.ledger.previous import PreviousRun

    previous = PreviousRun.find(state / LEDGER)
    if previous is None:
        return None
    with previous:
        before = previous.get_meta("start_url")
    if not before or origin_of(before) == origin_of(start):
        return None
    return (
        f"the site moved: the last run crawled {before}, the start URL now leads to {start}; "
        "crawl it into a new --out and --state (or --force to go on in this one)"
    )


@dataclass
class CrawlOutcome:
    """How a crawl ended (``run``: the publisher's outcome; None if it never got there)."""

    code: int
    stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    run: RunOutcome | None = None
    #: Where the crawl went and how (the start URL's redirects, TLS unverified).
    notes: list[str] = field(default_factory=list)
    #: What IndexNow was told (None: nothing).
    notified: str | None = None

    def summary(self) -> str | None:
        """The summary the command prints (None: the run kept no books)."""
        if self.run is None or self.run.summary is None:
            return None
        return "\n".join(filter(None, [format_summary(self.run.summary), self.notified]))


def execute(args: argparse.Namespace) -> CrawlOutcome:
    """Run the crawl *args* ask for; print nothing. An ``--out`` directory this run
    made and left empty (nothing was published) is removed."""
    out = Path(args.out).absolute()
    made = not out.exists()
    try:
        return _execute(args)
    finally:
        if made:
            with contextlib.suppress(OSError):  # not empty: something was published
                out.rmdir()


def _execute(args: argparse.Namespace) -> CrawlOutcome:
    from crawler.ledger.runstate import holder

    overrides = crawl_settings(args)
    notes = []
    if args.resume and (started := _started_at(Path(overrides["SITEMAP_STATE_DIR"]))):
        # The interrupted run's origin, as it found it: not asked again.
        args.url = [started, *overrides.get("SITEMAP_START_URLS", [])]
    elif line := resolve_start(args, overrides).line():
        notes.append(line)
    overrides = crawl_settings(args)  # again, on the final origin
    make_directories(Path(overrides["SITEMAP_OUT_DIR"]), Path(overrides["SITEMAP_STATE_DIR"]))
    if not args.force and (moved := _moved(Path(overrides["SITEMAP_STATE_DIR"]), args.url)):
        return CrawlOutcome(EXIT_CRAWL_FAILED, error=f"{moved}; this run did nothing", notes=notes)
    if busy := holder(Path(overrides["SITEMAP_STATE_DIR"])):
        return CrawlOutcome(EXIT_CRAWL_FAILED, error=f"{busy}; this run did nothing", notes=notes)
    redis_crawl = private = None
    redis_url = args.redis
    workers: list[subprocess.Popen[bytes]] = []
    try:
        if distributed_here(args) and not redis_url:
            private, redis_url = distributed.private_server(
                Path(overrides["SITEMAP_STATE_DIR"]), overrides.get("SITEMAP_REDIS_SERVER")
            )
        if redis_url:
            if args.processes:  # they share this machine's cores (the workers take it too)
                overrides["SITEMAP_REDIS_PROCESSES_HERE"] = args.processes
            redis_crawl, overrides = distributed.begin(redis_url, args.url, overrides)
            if args.no_fetch:
                # This process's own (not sent to the workers): it parses no page.
                overrides["SITEMAP_REDIS_NO_FETCH"] = True
                overrides["SITEMAP_PARSE_PROCESSES"] = 0
            # N processes fetch: this one and N - 1 workers, or N workers if it does not
            # (none without --processes: the workers are started elsewhere).
            count = (args.processes or 0) if args.no_fetch else (args.processes or 1) - 1
            workers = distributed.start_workers(redis_url, count, args.log_level)
            # (Not sent to the workers: begin() has shared the settings already.)
            overrides["SITEMAP_REDIS_LOCAL_WORKERS"] = [worker.pid for worker in workers]
        spider_run = run_spider(args.url, overrides)
    except CrawlFailure as e:
        return CrawlOutcome(EXIT_CRAWL_FAILED, error=f"{e}; this run did nothing", notes=notes)
    finally:
        if redis_crawl is not None:
            # Normally done already by the scheduler; not when Scrapy never got going.
            redis_crawl.finish("failed")
        distributed.stop_workers(workers)
        if private is not None:
            private.stop()
    code, stats, run = spider_run.code, spider_run.stats, spider_run.outcome
    failure = told = None
    if code != EXIT_OK:
        failure = run.message if run is not None else "the crawl failed"
    elif run is not None:
        from crawler.commands.notify import notify

        if (notified := notify(project_settings(overrides), run)) is not None:
            told = notified.message
            if not notified.ok:
                code, failure = EXIT_NOTIFY_FAILED, notified.message
    return CrawlOutcome(code, stats, failure, run, notes, told)


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``sitemap-crawler crawl``: run, print the summary, return the exit status."""
    return run_command(
        parser, args, execute, _show, interrupted="interrupted; nothing was published"
    )


def _show(outcome: CrawlOutcome) -> None:
    """The summary goes to stderr with the errors, as a cron mail or a journal shows it."""
    lines = [*outcome.notes, outcome.summary(), distributed.summary_line(outcome.stats)]
    for line in filter(None, lines):
        print(line, file=sys.stderr)
