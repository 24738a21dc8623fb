"""``sitemap-crawler crawl URL``: crawl a site and publish its sitemaps; with ``--redis``
or ``--processes`` this process coordinates a distributed crawl. The summary goes to
stderr, as a cron mail or a journal shows it. No Scrapy command here on purpose:
``scrapy crawl site -a url=...`` stays Scrapy's own.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.commands import distributed
from crawler.commands.options import (
    EXIT_CRAWL_FAILED,
    EXIT_NOTIFY_FAILED,
    EXIT_OK,
    REPEATABLE,
    CrawlFailure,
    UsageError,
    add_site_options,
    adder,
    check_writable,
    checked_settings,
    given_settings,
    make_directories,
    positive_float,
    positive_int,
    positive_int_or_auto,
    project_settings,
    regex,
    resolve_start,
    run_command,
    site_settings,
)
from crawler.commands.process import run_spider
from crawler.core.defaults import setting_default
from crawler.core.outcome import RunOutcome
from crawler.core.paths import JOB, LEDGER, LEDGER_RUNNING, CrawlPaths, PathError
from crawler.core.urls import normalize_url
from crawler.publish.report import format_summary
from crawler.sitemaps.limits import MAX_BYTES_PER_FILE, MAX_URLS_PER_FILE

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


def duration(text: str) -> float:
    """``90s``, ``30m``, ``2h``, ``1h30m`` or plain seconds -> seconds (more than 0)."""
    parts = _DURATION.fullmatch(text.strip().lower())
    if not text.strip() or parts is None:
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r} (90s, 30m, 2h, 1h30m, or seconds)"
        )
    seconds = sum(
        float(value) * unit
        for value, unit in zip(parts.groups(), (86400, 3600, 60, 1), strict=True)
        if value
    )
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be longer than 0: {text!r}")
    return seconds


_DURATION = re.compile(
    r"(?:(\d+(?:\.\d+)?)d)?\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*"
    r"(?:(\d+(?:\.\d+)?)s?)?"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    # Each option's help, the options below in --help's order.
    text = {
        "--urls": "crawl the URLs of FILE too: one a line, # comments, /path for a path of "
        "the site; a URL of another site is recorded off-host, a line that is no URL "
        "is an error",
        "--seed-sitemaps": "crawl the URLs of the site's own sitemaps too (robots.txt Sitemap: "
        "lines, /sitemap.xml, /sitemap_index.xml, ...): orphan pages no link reaches get listed",
        "--sitemap": "crawl the URLs of this sitemap (or index) of the site too (repeatable)",
        "--max-time": "stop discovering after DURATION (90s, 30m, 2h), let the requests in flight "
        "finish and publish what was judged (the usual refusals apply); the URLs left "
        "unfetched are cap-reached (CLOSESPIDER_TIMEOUT)",
        "--out": "directory the sitemap set is published to (default: %(default)s)",
        "--state": "directory for the crawl's ledger and state (default: beside "
        "--out, as OUT.sitemap-state; never inside --out)",
        "--max-urls-per-file": f"rotate sitemap files at N URLs, at most {MAX_URLS_PER_FILE} "
        "(default: %(default)s)",
        "--max-bytes-per-file": "rotate sitemap files at N bytes uncompressed, at most "
        f"{MAX_BYTES_PER_FILE} (50 MiB; default: %(default)s)",
        "--no-gzip": "write plain .xml/.txt files instead of gzipped ones",
        "--format": "sitemap file format (default: %(default)s; the index is XML)",
        "--no-hreflang": "write no hreflang alternates (xhtml:link); by default every listed "
        "page's alternates are written, those that hold up as Google reads them",
        "--alternate-host": "write the hreflang alternates on HOST as the pages declare them (a "
        "same-host crawl cannot verify them; repeatable)",
        "--images": "write each listed page's images (image:image): img, srcset, picture, lazy-"
        "loading attributes, og:image; none fetched",
        "--image-host": "write the images on HOST too, such as a CDN (repeatable; other hosts' "
        "are left out)",
        "--videos": "write each listed page's videos (video:video) from schema.org VideoObject, "
        "og:video and <video poster>",
        "--news-publication": "write a news sitemap of the articles published within 48 hours, "
        "for the publication NAME (news:news)",
        "--render": "never: read raw HTML only; auto: render a page whose raw HTML looks "
        "like an application shell (few links to the site and an empty mount element or a "
        "<noscript> asking for JavaScript) or whose URL matches --render-include; always: "
        "render every HTML page that is not noindex in its raw HTML (default: "
        f"{setting_default('SITEMAP_RENDER')})",
        "--render-include": "with --render auto, always render pages whose URL matches "
        "(repeatable; re.search on the normalised URL)",
        "--browser": "the Chromium binary to render with (default: the first on PATH of "
        "chromium-headless-shell, chromium, chromium-browser)",
        "--render-concurrency": "render at most N pages at once, or auto: two per core the "
        "crawl may use, at most --concurrency and 8 (default "
        f"{setting_default('SITEMAP_RENDER_CONCURRENCY')})",
        "--no-feed": "publish no changes.atom (the delta feed of the URLs that changed lately)",
        "--feed-days": "the feed holds the changes of the last N days (default "
        f"{setting_default('SITEMAP_FEED_DAYS')})",
        "--feed-max": "the feed holds at most N entries, newest first (default "
        f"{setting_default('SITEMAP_FEED_MAX')})",
        "--section": "pages whose address matches REGEX go to section NAME, with files of their "
        "own (repeatable; the first match wins; NAME: a-z, 0-9, -)",
        "--changefreq": "<changefreq> VALUE for pages whose address matches REGEX (repeatable; the "
        "first match wins), or auto: from each page's change history",
        "--priority": "<priority> VALUE (0.0 to 1.0) for pages whose address matches REGEX "
        "(repeatable; the first match wins)",
        "--indexnow-key": "after a publish, submit the URLs added, changed and removed since the "
        "last published run to IndexNow with KEY (its key file must be served)",
        "--indexnow-key-location": "where the key file is served (default: <site root>/KEY.txt)",
        "--indexnow-endpoint": "the IndexNow endpoint (default: the shared "
        f"{setting_default('SITEMAP_INDEXNOW_ENDPOINT')})",
        "--indexnow-all": "on a first run, submit every listed URL (a first run submits nothing)",
        "--force": "publish even when the run looks broken (more than "
        f"{setting_default('SITEMAP_MAX_ERROR_RATE'):.0%}% of pages failed, or more than "
        f"{setting_default('SITEMAP_MAX_DROP'):.0%}% of the previously published URLs would "
        "disappear), and publish what an interrupted run found (it cannot be resumed then)",
        "--full": "verify every known URL tonight, whatever the revisit schedule says "
        "(a nightly run otherwise fetches the URLs due and those a change signal names)",
        "--revisit-min": "the shortest interval between two verifications of a URL, in days "
        f"(default {setting_default('SITEMAP_REVISIT_MIN'):g})",
        "--revisit-max": "the longest interval between two verifications of a URL, in days: "
        "every URL is verified at least this often (default "
        f"{setting_default('SITEMAP_REVISIT_MAX'):g})",
        "--resume": "continue the run that was interrupted (Ctrl-C, SIGTERM) on this state "
        "directory, instead of starting over",
        "--redis": "distribute the crawl: its queue and seen-set live in the Redis database at "
        "URL (redis://host:6379/0) and 'sitemap-crawler worker --redis URL' processes "
        "join it; this one keeps the ledger and publishes (not with --resume)",
        "--no-fetch": "with --redis or --processes: this process only coordinates (drains the "
        "workers' reports into the ledger and publishes), fetching nothing itself",
        "--processes": "crawl with N fetching processes on this machine, this one included unless "
        "--no-fetch ('auto': one per core; default: 1, this one); without --redis, through "
        "a private Redis server on a Unix socket in the state directory (a redis-server "
        "on PATH, or the processes extra's)",
    }
    add = adder(text)

    n = {"type": positive_int, "metavar": "N"}

    add_site_options(p, several=True)
    seeds = p.add_argument_group(
        "seeds beyond links",
        "more places the crawl starts from; every seed is judged like a link (scope, "
        "robots.txt, status, noindex, canonical) and listed only when it holds up",
    )
    add(seeds, "--urls", metavar="FILE")
    add(seeds, "--seed-sitemaps", action="store_true")
    add(seeds, "--sitemap", metavar="URL", **REPEATABLE)
    add(p, "--max-time", type=duration, metavar="DURATION")
    add(p, "--out", default=setting_default("SITEMAP_OUT_DIR"), metavar="DIR")
    add(p, "--state", metavar="DIR")
    add(p, "--max-urls-per-file", default=setting_default("SITEMAP_MAX_URLS_PER_FILE"), **n)
    add(p, "--max-bytes-per-file", default=setting_default("SITEMAP_MAX_BYTES_PER_FILE"), **n)
    add(p, "--no-gzip", action="store_true")
    add(p, "--format", choices=("xml", "txt"), default=setting_default("SITEMAP_FORMAT"))
    rich = p.add_argument_group(
        "rich sitemaps",
        "what each listed page declares, written into its entry (hreflang on by default)",
    )
    add(rich, "--no-hreflang", action="store_true")
    add(rich, "--alternate-host", metavar="HOST", **REPEATABLE)
    add(rich, "--images", action="store_true")
    add(rich, "--image-host", metavar="HOST", **REPEATABLE)
    add(rich, "--videos", action="store_true")
    add(rich, "--news-publication", metavar="NAME")
    render = p.add_argument_group(
        "JavaScript-built pages",
        "render pages in a headless Chromium (the render extra and the system's chromium; "
        "docs/rendering.md)",
    )
    add(render, "--render", choices=("never", "auto", "always"))
    add(render, "--render-include", type=regex, metavar="REGEX", **REPEATABLE)
    add(render, "--browser", metavar="PATH")
    add(render, "--render-concurrency", type=positive_int_or_auto, metavar="N")
    around = p.add_argument_group(
        "around the sitemap",
        "a delta feed of changes, sections, changefreq and priority by rule, IndexNow",
    )
    add(around, "--no-feed", action="store_true")
    add(around, "--feed-days", **n)
    add(around, "--feed-max", **n)
    add(around, "--section", metavar="NAME=REGEX", **REPEATABLE)
    add(around, "--changefreq", metavar="REGEX=VALUE|auto", **REPEATABLE)
    add(around, "--priority", metavar="REGEX=VALUE", **REPEATABLE)
    add(around, "--indexnow-key", metavar="KEY")
    add(around, "--indexnow-key-location", metavar="URL")
    add(around, "--indexnow-endpoint", metavar="URL")
    add(around, "--indexnow-all", action="store_true")
    add(p, "--force", action="store_true")
    nightly = p.add_argument_group(
        "nightly runs", "the revisit schedule: what a run verifies (docs/nightly.md)"
    )
    add(nightly, "--full", action="store_true")
    add(nightly, "--revisit-min", type=positive_float, metavar="DAYS")
    add(nightly, "--revisit-max", type=positive_float, metavar="DAYS")
    add(p, "--resume", action="store_true")
    add(p, "--redis", metavar="URL")
    add(p, "--no-fetch", action="store_true")
    add(p, "--processes", type=processes_count, metavar="N|auto")


def processes_count(text: str) -> int:
    """``--processes``: a positive number, or ``auto`` for the machine's cores."""
    if text != "auto":
        return positive_int(text)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def distributed_here(args: argparse.Namespace) -> bool:
    """The crawl goes through Redis: ``--redis``, or more than this process fetching."""
    return bool(args.redis) or (args.processes or 1) > 1 or bool(args.no_fetch and args.processes)


#: Options without a default of their own that set a setting when given (those with one
#: are OPTION_DEFAULTS, mapped by site_settings).
_OTHER_SETTINGS = {
    "--browser": "SITEMAP_RENDER_BROWSER",
    "--indexnow-key": "SITEMAP_INDEXNOW_KEY",
    "--indexnow-key-location": "SITEMAP_INDEXNOW_KEY_LOCATION",
    # Scrapy's own budget; the publisher publishes what such a run judged.
    "--max-time": "CLOSESPIDER_TIMEOUT",
    "--revisit-min": "SITEMAP_REVISIT_MIN",
    "--revisit-max": "SITEMAP_REVISIT_MAX",
}


def crawl_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Check the ``crawl`` arguments and map them onto settings (no directory made);
    raise UsageError."""
    settings = site_settings(args)
    try:
        paths = CrawlPaths.create(args.out, args.state)
    except PathError as e:
        raise UsageError(str(e)) from None
    if args.max_urls_per_file > MAX_URLS_PER_FILE:
        raise UsageError(f"--max-urls-per-file cannot exceed the protocol's {MAX_URLS_PER_FILE}")
    if args.max_bytes_per_file > MAX_BYTES_PER_FILE:
        raise UsageError(
            f"--max-bytes-per-file cannot exceed the protocol's {MAX_BYTES_PER_FILE} bytes"
        )
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
        settings["SITEMAP_URL_FILE"] = str(Path(args.urls).absolute())
    if args.resume and not (job.is_dir() and paths.running_ledger.is_file()):
        raise UsageError(f"nothing to resume in {paths.state}: no interrupted run")
    settings.update(
        {
            "SITEMAP_OUT_DIR": str(paths.out),
            "SITEMAP_STATE_DIR": str(paths.state),
            "SITEMAP_GZIP": not args.no_gzip,
            "SITEMAP_FORCE": args.force,
            "SITEMAP_REVISIT_FULL": args.full,
            "SITEMAP_RESUME": args.resume,
            "SITEMAP_HREFLANG": not args.no_hreflang,
            "SITEMAP_ALTERNATE_HOSTS": [h.lower() for h in args.alternate_host],
            "SITEMAP_IMAGES": args.images,
            "SITEMAP_IMAGE_HOSTS": [h.lower() for h in args.image_host],
            "SITEMAP_VIDEOS": args.videos,
            "SITEMAP_NEWS_PUBLICATION": args.news_publication,
            "SITEMAP_FEED": not args.no_feed,
            "SITEMAP_SECTIONS": args.section,
            "SITEMAP_CHANGEFREQ_RULES": args.changefreq,
            "SITEMAP_PRIORITY_RULES": args.priority,
            "SITEMAP_INDEXNOW_ALL": args.indexnow_all,
            "SITEMAP_SEED_SITEMAPS": args.seed_sitemaps,
            "SITEMAP_SEED_SITEMAP_URLS": args.sitemap,
            # Scrapy's resumable crawl state: one per run, kept only when interrupted.
            "JOBDIR": str(job),
        }
    )
    settings.update(given_settings(args, _OTHER_SETTINGS))
    if args.render_include:
        settings["SITEMAP_RENDER_INCLUDE"] = args.render_include
    settings.update(dict(args.settings))
    _check_render(checked_settings(settings))
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
        running = LedgerReader.open(state / LEDGER_RUNNING)
    except LedgerError:
        return None
    try:
        start = running.get_meta("start_url")
    finally:
        running.close()
    return start if isinstance(start, str) else None


def _moved(state: Path, start: str) -> str | None:
    """Why this run may not go on with *state*: its last run crawled another origin
    than *start*'s (the site moved, docs/nightly.md), or None."""
    from crawler.core.urls import origin_of
    from crawler.ledger.previous import PreviousRun

    previous = PreviousRun.find(state / LEDGER)
    if previous is None:
        return None
    try:
        before = previous.get_meta("start_url")
    finally:
        previous.close()
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
    failure = None
    if code != EXIT_OK:
        failure = run.message if run is not None else "the crawl failed"
    elif run is not None:
        from crawler.commands.notify import notify

        notified = notify(project_settings(overrides), run)
        if notified is not None:
            stats["sitemap/indexnow"] = notified.message
            if not notified.ok:
                code, failure = EXIT_NOTIFY_FAILED, notified.message
    return CrawlOutcome(code, stats, failure, run, notes)


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``sitemap-crawler crawl``: run, print the summary, return the exit status."""
    return run_command(
        parser, args, execute, _show, interrupted="interrupted; nothing was published"
    )


def _show(outcome: CrawlOutcome) -> None:
    """The summary goes to stderr with the errors, as a cron mail or a journal shows it."""
    for note in outcome.notes:
        print(note, file=sys.stderr)
    if outcome.stats:
        print(format_summary(outcome.stats), file=sys.stderr)
        if (line := distributed.summary_line(outcome.stats)) is not None:
            print(line, file=sys.stderr)
