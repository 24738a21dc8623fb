"""The ``sitemap-crawler`` command line.

``sitemap-crawler crawl URL --out DIR`` runs the ``site`` spider with the options
mapped onto Scrapy settings (``-s NAME=VALUE`` sets any other), prints a summary and
exits with a status a scheduler can act on. ``sitemap-crawler audit URL`` crawls
the site without publishing, then runs the ``audit`` spider over its existing
sitemaps and prints (and with ``--report`` writes) the comparison. With ``--redis
URL`` the crawl is distributed (:mod:`crawler.distributed`): its queue and seen-set
live in Redis and ``sitemap-crawler worker --redis URL`` processes, on any machine,
join it; this process alone decides, keeps the ledger and publishes. Bad input gives
one line on stderr and a non-zero exit, never a traceback.

Exit status:
  0  published (crawl); report done and bars passed (audit)
  2  usage error (bad option, bad URL, bad config file, unusable directory)
  3  crawl failure: start URL or robots.txt unreachable, nothing listed, or another
     run holds the state directory; nothing was published. With --redis: Redis
     unreachable, or another crawl running on that Redis database. worker: no crawl
     to join, Redis unreachable, or the coordinator gone
  4  refused to publish: too many errors, or the new set would drop too many of the
     previously published URLs (--force overrides); the previous set is kept
  5  audit: --fail-under or --fail-on broke
  6  the sitemap set could not be written; the previous set is untouched
  130 interrupted (Ctrl-C, SIGTERM); nothing was published (--resume continues)

``worker`` exits 0 when the crawl it joined is over (whoever ended it), 2 on a usage
error (a malformed Redis URL), 3 as above, 130 when interrupted (what it held goes
back to the queue).
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import os
import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crawler import __version__
from crawler.audit import CLASSES, FAILABLE, FLAGS
from crawler.limits import MAX_BYTES_PER_FILE, MAX_URLS_PER_FILE
from crawler.middlewares.robots import product_token
from crawler.paths import JOB, LEDGER, LOCK, CrawlPaths, PathError
from crawler.publicurl import BaseUrlError, PublicUrls
from crawler.report import format_summary
from crawler.urls import host_port, normalize_url

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CRAWL_FAILED = 3
EXIT_REFUSED = 4
EXIT_AUDIT_FAILED = 5
EXIT_OUTPUT = 6
EXIT_INTERRUPTED = 130

_OUTCOME_EXIT = {
    "published": EXIT_OK,
    "crawled": EXIT_OK,
    "refused": EXIT_REFUSED,
    "failed": EXIT_CRAWL_FAILED,
    "output-error": EXIT_OUTPUT,
    "interrupted": EXIT_INTERRUPTED,
}


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


def _whole(text: str, minimum: int) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(
            f"must be at least 1: {text!r}" if minimum else f"must not be negative: {text!r}"
        )
    return value


def _positive_int(text: str) -> int:
    return _whole(text, 1)


def _non_negative_int(text: str) -> int:
    return _whole(text, 0)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600 seconds: {text!r}")
    return value


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"invalid regular expression {text!r}: {e}") from None
    return text


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, not a usage block
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _add_site_options(p: argparse.ArgumentParser) -> None:
    """Options of every command that crawls: scope, politeness, logging, settings."""
    p.add_argument(
        "url", nargs="?", help="start URL, e.g. https://www.example.com/ (or in --config)"
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML file holding any of these options (names as here, without the "
        'dashes or with _ for -, e.g. url = "https://...", max-pages = 1000, '
        'include = ["..."], [settings] NAME = value); the command line wins',
    )
    p.add_argument(
        "--base-url",
        metavar="URL",
        help="public address of the crawled site: every published <loc> is "
        "rewritten from the start URL's directory to this prefix",
    )
    p.add_argument(
        "--max-pages",
        type=_non_negative_int,
        metavar="N",
        help="fetch at most N pages (0: no limit; default 500000)",
    )
    p.add_argument(
        "--max-depth",
        type=_non_negative_int,
        metavar="N",
        help="follow links at most N levels from the start URL (0: no limit; default 50)",
    )
    p.add_argument(
        "--concurrency",
        type=_positive_int,
        metavar="N",
        help="concurrent requests (default 8 per host, 16 in all)",
    )
    p.add_argument(
        "--delay",
        type=_seconds,
        metavar="S",
        help="minimum delay between requests in seconds (default 0, with "
        "AutoThrottle adapting to the server; robots.txt Crawl-delay wins "
        "when larger)",
    )
    p.add_argument(
        "--user-agent",
        metavar="UA",
        help="User-Agent header; its product token (before '/') is matched "
        "against robots.txt groups",
    )
    p.add_argument(
        "--include",
        action="append",
        type=_regex,
        default=[],
        metavar="REGEX",
        help="crawl only URLs matching REGEX (repeatable; any one matches)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        type=_regex,
        default=[],
        metavar="REGEX",
        help="do not crawl URLs matching REGEX (repeatable)",
    )
    _add_log_and_settings(
        p,
        "Scrapy's log on stderr (default: %(default)s, i.e. only this command's summary, "
        "progress and a one-line error; every decision is in the ledger either way)",
        "set any Scrapy or SITEMAP_* setting (repeatable)",
    )


def _add_log_and_settings(p: argparse.ArgumentParser, log_help: str, set_help: str) -> None:
    p.add_argument(
        "--log-level",
        default="CRITICAL",
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        help=log_help,
    )
    p.add_argument(
        "-s",
        "--set",
        dest="settings",
        action="append",
        type=_setting,
        default=[],
        metavar="NAME=VALUE",
        help=set_help,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sitemap-crawler",
        description="Crawl a website politely and publish correct, rotated, gzipped "
        "XML sitemaps plus a sitemap index; audit the sitemaps a site already has.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    crawl = sub.add_parser(
        "crawl",
        help="crawl a site and publish its sitemaps",
        description="Crawl URL's host (same host and port; robots.txt obeyed) and publish "
        "the indexable pages as sitemap files plus sitemap_index.xml in --out.",
        epilog="Exit status: 0 published; 2 usage error; 3 crawl failed (start URL or "
        "robots.txt unreachable, nothing listed, state directory in use; with --redis: "
        "Redis unreachable, or another crawl on that database); 4 refused to "
        "publish (too many errors, or too many previously published URLs gone; --force); "
        "6 output could not be written; 130 interrupted (--resume continues). Nothing is "
        "published unless the crawl finished. A summary goes to stderr and report.json "
        "to the state directory.",
    )
    _add_site_options(crawl)
    crawl.add_argument(
        "--out",
        default="public",
        metavar="DIR",
        help="directory the sitemap set is published to (default: %(default)s)",
    )
    crawl.add_argument(
        "--state",
        metavar="DIR",
        help="directory for the crawl's ledger and state (default: beside "
        "--out, as OUT.sitemap-state; never inside --out)",
    )
    crawl.add_argument(
        "--max-urls-per-file",
        type=_positive_int,
        metavar="N",
        default=MAX_URLS_PER_FILE,
        help="rotate sitemap files at N URLs (default and maximum %(default)s)",
    )
    crawl.add_argument(
        "--max-bytes-per-file",
        type=_positive_int,
        metavar="N",
        default=MAX_BYTES_PER_FILE,
        help="rotate sitemap files at N bytes uncompressed (default and "
        "maximum %(default)s, 50 MiB)",
    )
    crawl.add_argument(
        "--no-gzip", action="store_true", help="write plain .xml/.txt files instead of gzipped ones"
    )
    crawl.add_argument(
        "--format",
        choices=("xml", "txt"),
        default="xml",
        help="sitemap file format (default: %(default)s; the index is XML)",
    )
    crawl.add_argument(
        "--force",
        action="store_true",
        help="publish even when the run looks broken (more than 10%% of pages failed, "
        "or more than 20%% of the previously published URLs would disappear), and "
        "publish what an interrupted run found (it cannot be resumed then)",
    )
    crawl.add_argument(
        "--resume",
        action="store_true",
        help="continue the run that was interrupted (Ctrl-C, SIGTERM) on this state "
        "directory, instead of starting over",
    )
    crawl.add_argument(
        "--redis",
        metavar="URL",
        help="distribute the crawl: its queue and seen-set live in the Redis database at "
        "URL (redis://host:6379/0) and 'sitemap-crawler worker --redis URL' processes "
        "join it; this one decides, keeps the ledger and publishes (not with --resume)",
    )

    worker = sub.add_parser(
        "worker",
        help="join a distributed crawl (crawl --redis) and fetch pages for it",
        description="Join the crawl running on the Redis database at --redis (started by "
        "'sitemap-crawler crawl URL --redis URL'): take pages from its queue, fetch and "
        "judge them, and report what they hold to the coordinator, until the crawl ends. "
        "The start URL and the crawl's options come from Redis.",
        epilog="Exit status: 0 the crawl is over; 2 usage error (malformed Redis URL); 3 no "
        "crawl to join, Redis unreachable, or the coordinator gone; 130 interrupted (what "
        "this worker held goes back to the queue).",
    )
    worker.add_argument(
        "--redis",
        required=True,
        metavar="URL",
        help="the crawl's Redis database, as given to crawl --redis",
    )
    worker.add_argument(
        "--concurrency",
        type=_positive_int,
        metavar="N",
        help="concurrent requests of this worker (default: the crawl's)",
    )
    _add_log_and_settings(
        worker,
        "Scrapy's log on stderr (default: %(default)s)",
        "set any Scrapy or SITEMAP_* setting for this worker (repeatable)",
    )

    audit = sub.add_parser(
        "audit",
        help="compare a site's existing sitemaps with what a crawl finds",
        description="Find URL's existing sitemaps (robots.txt Sitemap: lines, the usual "
        "places, --sitemap), crawl the site (or read an earlier crawl with --state), and "
        "report every listed URL's class, the indexable pages the sitemaps miss, and "
        "protocol problems.",
        epilog="Exit status: 0 audit done (and the bars passed); 2 usage error; 3 the crawl "
        "failed (start URL or robots.txt unreachable); 5 --fail-under or --fail-on broke; "
        "130 interrupted. Classes: "
        + ", ".join(CLASSES)
        + "; flags: "
        + ", ".join(FLAGS)
        + ", dead-orphan; and protocol (any protocol problem).",
    )
    _add_site_options(audit)
    parser.commands = {"crawl": crawl, "audit": audit}  # type: ignore[attr-defined]
    audit.add_argument(
        "--sitemap",
        action="append",
        default=[],
        metavar="URL|FILE",
        help="a sitemap to read besides the discovered ones (repeatable; a local file works)",
    )
    audit.add_argument(
        "--state",
        metavar="DIR",
        help="use the ledger of an earlier crawl in DIR instead of crawling now",
    )
    audit.add_argument(
        "--report",
        metavar="DIR",
        help="write audit.json and one CSV per class to DIR",
    )
    audit.add_argument(
        "--fail-under",
        type=_percent,
        metavar="PCT",
        help="exit 5 when coverage is under PCT percent",
    )
    audit.add_argument(
        "--fail-on",
        type=_classes,
        default=[],
        metavar="CLASS,...",
        help="exit 5 when any of these classes or flags has a URL",
    )
    return parser


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100: {text!r}")
    return value


def _classes(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAILABLE]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown class {', '.join(map(repr, unknown)) or repr(text)}; "
            f"one of: {', '.join(sorted(FAILABLE))}"
        )
    return names


def site_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Check the options every crawling command shares; map them onto settings."""
    if not args.url:
        raise UsageError("a start URL is required (as an argument or url = ... in --config)")
    start = normalize_url(args.url)
    if start is None or host_port(start) is None:
        raise UsageError(f"not an http(s) URL: {args.url!r}")
    try:
        PublicUrls.create(start, args.base_url)
    except BaseUrlError as e:
        raise UsageError(str(e)) from None
    settings: dict[str, Any] = {
        "SITEMAP_BASE_URL": args.base_url,
        "SITEMAP_INCLUDE": args.include,
        "SITEMAP_EXCLUDE": args.exclude,
        "LOG_LEVEL": args.log_level,
    }
    if args.max_pages is not None:
        settings["SITEMAP_MAX_PAGES"] = args.max_pages
    if args.max_depth is not None:
        settings["SITEMAP_MAX_DEPTH"] = args.max_depth
    if args.concurrency is not None:
        settings["CONCURRENT_REQUESTS"] = args.concurrency
        settings["CONCURRENT_REQUESTS_PER_DOMAIN"] = args.concurrency
    if args.delay is not None:
        settings["DOWNLOAD_DELAY"] = args.delay
    if args.user_agent:
        settings["USER_AGENT"] = args.user_agent
        settings["ROBOTSTXT_USER_AGENT"] = product_token(args.user_agent)
    return settings


def settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Check the ``crawl`` arguments and map them onto settings; raise UsageError."""
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
        _check_writable(directory)
    job = paths.state / JOB
    if args.redis and args.resume:
        raise UsageError("--resume cannot continue a distributed crawl (--redis)")
    if args.resume and not (job.is_dir() and paths.running_ledger.is_file()):
        raise UsageError(f"nothing to resume in {paths.state}: no interrupted run")
    settings.update(
        {
            "SITEMAP_OUT_DIR": str(paths.out),
            "SITEMAP_STATE_DIR": str(paths.state),
            "SITEMAP_MAX_URLS_PER_FILE": args.max_urls_per_file,
            "SITEMAP_MAX_BYTES_PER_FILE": args.max_bytes_per_file,
            "SITEMAP_GZIP": not args.no_gzip,
            "SITEMAP_FORMAT": args.format,
            "SITEMAP_FORCE": args.force,
            "SITEMAP_RESUME": args.resume,
            # Scrapy's resumable crawl state: one per run, kept only when interrupted.
            "JOBDIR": str(job),
        }
    )
    settings.update(dict(args.settings))
    return settings


def _check_writable(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".sitemap-probe-"):
            pass
    except OSError as e:
        raise UsageError(f"cannot write to {directory}: {e.strerror or e}") from None


def load_config(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Fill *args* from the TOML file of ``--config``; the command line wins."""
    path = Path(args.config)
    try:
        with path.open("rb") as f:
            config = tomllib.load(f)
    except OSError as e:
        raise UsageError(f"cannot read --config {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"--config {path} is not valid TOML: {e}") from None
    actions = {a.dest: a for a in parser._actions if a.dest not in ("help", "config")}
    for name, value in config.items():
        dest = name.replace("-", "_")
        action = actions.get(dest)
        if action is None:
            raise UsageError(f"--config {path}: unknown option {name!r}")
        try:
            converted = _config_value(action, value)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
            raise UsageError(f"--config {path}: {name}: {e}") from None
        current = getattr(args, dest)
        if isinstance(action, argparse._AppendAction):
            setattr(args, dest, [*converted, *current])  # the command line's come last
        elif current == parser.get_default(dest):
            setattr(args, dest, converted)


def _config_value(action: argparse.Action, value: Any) -> Any:
    if action.dest == "settings":
        if not isinstance(value, dict):
            raise TypeError("expected a table: [settings] NAME = value")
        return list(value.items())
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        return [action.type(str(v)) if action.type else v for v in items]
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise TypeError("expected true or false")
        return value
    if action.type is not None:
        value = action.type(str(value))
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"{value!r} is not one of {', '.join(map(str, action.choices))}")
    return value


def _busy(state: Path) -> str | None:
    """Who holds the state directory's lock, if anyone (see crawler.extensions.statelock)."""
    path = state / LOCK
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        return f"another run (pid {holder}) is using the state directory {state}"
    finally:
        os.close(fd)  # also releases the lock if we got it
    return None


def run_crawl(
    url: str, overrides: dict[str, Any], spider: str | None = None
) -> tuple[int, dict[str, Any]]:
    """Run the spider (the site spider, or the class named *spider*) in this process;
    return the exit status and the stats."""
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import default_settings
    from scrapy.utils.misc import load_object

    from crawler.analysis import fork_workers, processes_from
    from crawler.spiders.site import SiteSpider

    job = Path(overrides["JOBDIR"]) if overrides.get("JOBDIR") else None
    if job is not None and not overrides.get("SITEMAP_RESUME"):
        # A new night starts clean, even after an interrupted run.
        shutil.rmtree(job, ignore_errors=True)
    settings = _settings(overrides)
    if settings.get("TWISTED_REACTOR") == default_settings.TWISTED_REACTOR:
        # Before the reactor, the ledger and any thread: the page-parsing workers
        # are forked from a process that is still only its imports (up in
        # milliseconds, not the seconds a spawned worker takes to import Scrapy).
        fork_workers(processes_from(settings))
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(load_object(spider) if spider else SiteSpider)
    process.crawl(crawler, url=url)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    outcome = stats.get("sitemap/outcome")
    if stats.get("sitemap/locked"):
        return EXIT_CRAWL_FAILED, {**stats, "sitemap/message": stats.get("sitemap/fatal")}
    if job is not None and outcome != "interrupted":
        shutil.rmtree(job, ignore_errors=True)
    if outcome is None:
        # The spider never got as far as the publisher (bad settings, say).
        return EXIT_CRAWL_FAILED, stats
    return _OUTCOME_EXIT.get(outcome, EXIT_CRAWL_FAILED), stats


def audit_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Check the ``audit`` arguments; raise UsageError."""
    settings = site_settings(args)
    if args.state:
        ledger = Path(args.state) / LEDGER
        if not ledger.is_file():
            raise UsageError(f"no finished crawl in {args.state}: {ledger} is missing")
    for item in args.sitemap:
        if "://" not in item and not Path(item).is_file():
            raise UsageError(f"--sitemap {item!r} is neither a URL nor a readable file")
    if args.report:
        _check_writable(Path(args.report))
    settings.update(dict(args.settings))
    return settings


def run_audit(args: argparse.Namespace, overrides: dict[str, Any]) -> int:
    """Crawl (unless --state), read the sitemaps, report; return the exit status."""
    from scrapy.crawler import Crawler, CrawlerProcess

    from crawler.audit import build_report, failures, write_report
    from crawler.audit import format_summary as audit_summary
    from crawler.spiders.audit import AuditSpider
    from crawler.spiders.site import SiteSpider

    work = Path(tempfile.mkdtemp(prefix="sitemap-audit-"))
    try:
        ledger = Path(args.state) / LEDGER if args.state else work / "crawl" / LEDGER
        common = {**overrides, "SITEMAP_OUT_DIR": str(work / "out")}
        process = CrawlerProcess(_settings(common))
        auditor = Crawler(
            AuditSpider,
            _settings(
                {
                    **common,
                    "SITEMAP_STATE_DIR": str(work / "audit"),
                    "SITEMAP_AUDIT_LEDGER": str(ledger),
                    "SITEMAP_AUDIT_STORE": str(work / "audit.sqlite"),
                    "SITEMAP_AUDIT_SITEMAPS": [
                        str(Path(x).resolve()) if "://" not in x else x for x in args.sitemap
                    ],
                }
            ),
            # The first crawler of the process installs the reactor.
            init_reactor=bool(args.state),
        )
        crawl_stats: dict[str, Any] = {}
        if args.state:
            process.crawl(auditor, url=args.url)
        else:
            crawler = Crawler(
                SiteSpider,
                _settings(
                    {**common, "SITEMAP_STATE_DIR": str(work / "crawl"), "SITEMAP_PUBLISH": False}
                ),
                init_reactor=True,
            )

            def then_audit(_: Any) -> Any:
                crawl_stats.update(crawler.stats.get_stats() if crawler.stats else {})
                if crawl_stats.get("sitemap/outcome") == "crawled":
                    return process.crawl(auditor, url=args.url)
                return None

            process.crawl(crawler, url=args.url).addCallback(then_audit)
        process.start()
        if crawl_stats and crawl_stats.get("sitemap/outcome") != "crawled":
            outcome = crawl_stats.get("sitemap/outcome", "failed")
            print(
                f"sitemap-crawler: the crawl failed: {crawl_stats.get('sitemap/message', outcome)}",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED if outcome == "interrupted" else EXIT_CRAWL_FAILED
        stats = auditor.stats.get_stats() if auditor.stats else {}
        if stats.get("finish_reason") in ("shutdown", "cancelled"):
            print("sitemap-crawler: interrupted; no report", file=sys.stderr)
            return EXIT_INTERRUPTED
        if stats.get("sitemap/fatal"):
            print(f"sitemap-crawler: {stats['sitemap/fatal']}", file=sys.stderr)
            return EXIT_CRAWL_FAILED
        report = build_report(args.url, ledger, work / "audit.sqlite")
        # The report files first: a reader that stops reading stdout loses nothing.
        summary = audit_summary(report)
        if args.report:
            written = write_report(report, Path(args.report))
            summary += f"\nreport: {written[0]} and {len(written) - 1} CSV files"
        broken = failures(report, args.fail_under, args.fail_on)
        _print(summary)
        if broken:
            print(f"sitemap-crawler: audit failed: {'; '.join(broken)}", file=sys.stderr)
            return EXIT_AUDIT_FAILED
        return EXIT_OK
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _print(text: str) -> None:
    """Print to stdout; a closed pipe (``| head``) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python would complain again at exit when flushing stdout.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _settings(overrides: dict[str, Any]) -> Any:
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("settings", priority="project")
    settings.setdict(overrides, priority="cmdline")
    return settings


class CrawlFailure(Exception):
    """The crawl cannot start (Redis unreachable, busy): one line, exit status 3."""


def _redis_module() -> Any:
    try:
        import crawler.distributed.crawl as redis_crawl
    except ImportError as e:
        raise UsageError(
            f"--redis needs scrapy-redis ({e}): pip install 'sitemap-crawler[redis]'"
        ) from None
    return redis_crawl


def _connect(url: str) -> Any:
    redis_crawl = _redis_module()
    try:
        return redis_crawl.connect(url, socket_connect_timeout=10)
    except redis_crawl.BadRedisUrl as e:
        raise UsageError(str(e)) from None
    except redis_crawl.DistributedError as e:
        raise CrawlFailure(str(e)) from None


def begin_distributed(args: argparse.Namespace, overrides: dict[str, Any]) -> tuple[Any, Any]:
    """Register a distributed crawl in Redis; return its handle and the settings of
    this process, the coordinator."""
    import json

    from crawler.distributed import coordinator_settings, shared_settings

    redis_crawl = _redis_module()
    server = _connect(args.redis)
    project = _settings(overrides)
    shared = shared_settings(overrides)
    try:
        json.dumps(shared)
    except TypeError as e:
        raise UsageError(f"a setting cannot be sent to the workers: {e}") from None
    try:
        crawl = redis_crawl.RedisCrawl.begin(
            server,
            args.redis,
            args.url,
            shared,
            project.getfloat("SITEMAP_REDIS_WORKER_TIMEOUT"),
        )
    except redis_crawl.DistributedError as e:
        raise CrawlFailure(str(e)) from None
    return crawl, coordinator_settings(overrides, args.redis, crawl.id, project)


def run_worker(args: argparse.Namespace) -> int:
    """Join the crawl on ``--redis`` and work for it until it ends."""
    from crawler.distributed import SPIDER, worker_settings

    try:
        server = _connect(args.redis)
        redis_crawl = _redis_module()
        try:
            crawl_id, config = redis_crawl.RedisCrawl.join(server, args.redis)
        except redis_crawl.DistributedError as e:
            raise CrawlFailure(str(e)) from None
    except UsageError as e:
        print(f"sitemap-crawler: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except CrawlFailure as e:
        print(f"sitemap-crawler: {e}", file=sys.stderr)
        return EXIT_CRAWL_FAILED
    local: dict[str, Any] = {"LOG_LEVEL": args.log_level}
    if args.concurrency is not None:
        local["CONCURRENT_REQUESTS_PER_DOMAIN"] = args.concurrency
    local.update(dict(args.settings))
    start_url = config["start_url"]
    try:
        settings = worker_settings(
            config, args.redis, crawl_id, local, _settings({**config["settings"], **local})
        )
        _, stats = run_crawl(start_url, settings, spider=SPIDER)
    except KeyboardInterrupt:
        print("sitemap-crawler: worker interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # a bad -s value, say: one line, not a traceback
        logging.getLogger(__name__).debug("worker failed", exc_info=True)
        print(f"sitemap-crawler: error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_USAGE
    fetched = stats.get("sitemap/distributed/reported", 0)
    where = f"crawl {crawl_id} of {start_url}"
    if stats.get("finish_reason") in ("shutdown", "cancelled"):
        print(
            f"sitemap-crawler: worker interrupted after {fetched} pages of {where}; what it "
            "held went back to the queue",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if stats.get("sitemap/fatal"):
        print(f"sitemap-crawler: {stats['sitemap/fatal']} ({where})", file=sys.stderr)
        return EXIT_CRAWL_FAILED
    end = stats.get("sitemap/distributed/end") or "over"
    print(
        f"sitemap-crawler: worker done: {fetched} pages for {where}; the crawl ended ({end})",
        file=sys.stderr,
    )
    return EXIT_OK


def _distributed_summary(stats: dict[str, Any]) -> str | None:
    if not stats.get("sitemap/distributed/workers") and not stats.get("sitemap/distributed/lost"):
        return None
    line = (
        f"workers: {stats.get('sitemap/distributed/workers', 0)}, which fetched "
        f"{stats.get('sitemap/distributed/pages_from_workers', 0)} of the pages"
    )
    if stats.get("sitemap/distributed/lost"):
        line += (
            f"; {stats['sitemap/distributed/lost']} lost, "
            f"{stats.get('sitemap/distributed/requeued', 0)} of their requests queued again"
        )
    return line


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "worker":
        return run_worker(args)
    if args.command not in ("crawl", "audit"):
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.config:
            load_config(parser.commands[args.command], args)  # type: ignore[attr-defined]
        overrides = settings_from_args(args) if args.command == "crawl" else audit_settings(args)
    except UsageError as e:
        print(f"sitemap-crawler: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "crawl" and (busy := _busy(Path(overrides["SITEMAP_STATE_DIR"]))):
        print(f"sitemap-crawler: {busy}; this run did nothing", file=sys.stderr)
        return EXIT_CRAWL_FAILED
    crawl = spider = None
    if args.command == "crawl" and args.redis:
        spider = "crawler.distributed.spider.DistributedSiteSpider"
        try:
            crawl, overrides = begin_distributed(args, overrides)
        except UsageError as e:
            print(f"sitemap-crawler: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        except CrawlFailure as e:
            print(f"sitemap-crawler: {e}; this run did nothing", file=sys.stderr)
            return EXIT_CRAWL_FAILED
    try:
        if args.command == "audit":
            return run_audit(args, overrides)
        code, stats = run_crawl(args.url, overrides, spider=spider)
    except KeyboardInterrupt:
        print("sitemap-crawler: interrupted; nothing was published", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # a bad -s value, say: one line, not a traceback
        logging.getLogger(__name__).debug("crawl failed", exc_info=True)
        print(f"sitemap-crawler: error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        if crawl is not None:
            # Normally done already by the scheduler; not when Scrapy never got going.
            crawl.finish("failed")
    # The summary goes to stderr with the errors, as a cron mail or a journal shows it.
    print(format_summary(stats), file=sys.stderr)
    if (line := _distributed_summary(stats)) is not None:
        print(line, file=sys.stderr)
    if code != EXIT_OK:
        print(
            f"sitemap-crawler: {stats.get('sitemap/message', 'the crawl failed')}", file=sys.stderr
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
