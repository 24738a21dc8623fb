"""What every command shares: exit statuses, one-line errors, the options of the
commands that crawl and their one mapping onto settings, the TOML ``--config`` file and
the Python API's keyword arguments (through the same argparse actions as the command
line, which wins), and how a command runs. Over 500 lines as one module on purpose: that
one mapping, for the command line, ``--config`` and the API alike, one import away.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import logging
import os
import re
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

from crawler.commands.settingrules import LOG_LEVELS, SettingError, check_settings
from crawler.core.agent import is_product_token, product_token
from crawler.core.defaults import setting_default
from crawler.core.publicurl import BaseUrlError, PublicUrls
from crawler.core.urls import bare_host, host_port, normalize_url, not_a_start_url, site_of
from crawler.crawl.calendars import parse_window
from crawler.fetch.access import parse_auth, parse_cookie, parse_header
from crawler.fetch.tls import check_ca_file

if TYPE_CHECKING:
    from scrapy.commands import ScrapyCommand
    from scrapy.settings import Settings

    from crawler.fetch.origin import Origin

T = TypeVar("T")

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CRAWL_FAILED = 3
EXIT_REFUSED = 4
EXIT_AUDIT_FAILED = 5
EXIT_OUTPUT = 6
EXIT_NOTIFY_FAILED = 7
EXIT_INTERRUPTED = 130

#: How the publisher's outcome of a crawl (``sitemap/outcome``) maps to an exit status.
OUTCOME_EXIT = {
    "published": EXIT_OK,
    "crawled": EXIT_OK,
    "refused": EXIT_REFUSED,
    "failed": EXIT_CRAWL_FAILED,
    "output-error": EXIT_OUTPUT,
    "interrupted": EXIT_INTERRUPTED,
}

PROG = "sitemap-crawler"


#: The options whose default is a setting's, which they set when given: their help and
#: docs/reference.md give that setting's value (tests/test_docs.py changes each one).
OPTION_DEFAULTS = {
    "--max-pages": "SITEMAP_MAX_PAGES",
    "--max-depth": "SITEMAP_MAX_DEPTH",
    "--max-variants-per-path": "SITEMAP_MAX_VARIANTS_PER_PATH",
    "--calendar-window": "SITEMAP_CALENDAR_WINDOW",
    "--concurrency": "CONCURRENT_REQUESTS_PER_DOMAIN",
    "--delay": "DOWNLOAD_DELAY",
    "--out": "SITEMAP_OUT_DIR",
    "--max-urls-per-file": "SITEMAP_MAX_URLS_PER_FILE",
    "--max-bytes-per-file": "SITEMAP_MAX_BYTES_PER_FILE",
    "--format": "SITEMAP_FORMAT",
    "--render": "SITEMAP_RENDER",
    "--render-concurrency": "SITEMAP_RENDER_CONCURRENCY",
    "--feed-days": "SITEMAP_FEED_DAYS",
    "--feed-max": "SITEMAP_FEED_MAX",
    "--indexnow-endpoint": "SITEMAP_INDEXNOW_ENDPOINT",
}


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


class CrawlFailure(Exception):
    """The crawl cannot start (Redis unreachable, busy): one line, exit status 3."""


# -- values ---------------------------------------------------------------------------


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


positive_int = partial(_whole, minimum=1)
non_negative_int = partial(_whole, minimum=0)


def positive_float(text: str) -> float:
    """A number above 0 (a number of days, say)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0: {text!r}")
    return value


def positive_int_or_auto(text: str) -> int | str:
    """A whole number of at least 1, or ``auto``."""
    return "auto" if text == "auto" else _whole(text, 1)


def _between(what: str, high: int, unit: str = "", strip: str = "") -> Callable[[str], float]:
    """An argparse type: a number from 0 to *high* (*what*, in the errors)."""

    def check(text: str) -> float:
        try:
            value = float(text.rstrip(strip))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from None
        if not 0 <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between 0 and {high}{unit}: {text!r}")
        return value

    return check


seconds = _between("number of seconds", 3600, " seconds")
percent = _between("percentage", 100, strip="%")


def regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"invalid regular expression {text!r}: {e}") from None
    return text


def setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


def robots_token(text: str) -> str:
    if not is_product_token(text):
        raise argparse.ArgumentTypeError(
            f"not a product token (letters, digits, '_' and '-'): {text!r}"
        )
    return text


def _parsed(parse: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type: the text itself, once *parse* accepts it. Its ValueError is
    the message, which names no value: it may be a secret (argparse names the option)."""

    def check(text: str) -> str:
        try:
            parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text

    return check


window = _parsed(parse_window)
header_option = _parsed(parse_header)
cookie_option = _parsed(parse_cookie)
auth_option = _parsed(parse_auth)


#: The environment variable that holds --auth's USER:PASSWORD.
AUTH_ENV = "SITEMAP_AUTH"


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (exit status 2), not a usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


# -- the options of every command that crawls -----------------------------------------


def adder(helps: Mapping[str, str]) -> Callable[..., None]:
    """``add(group, flag, **kw)``: ``group.add_argument`` with *flag*'s help in *helps*."""

    def add(group: argparse._ActionsContainer, flag: str, **kw: Any) -> None:
        group.add_argument(flag, help=helps[flag], **kw)

    return add


#: The keyword arguments of a repeatable option (argparse copies the list it appends to).
REPEATABLE: dict[str, Any] = {"action": "append", "default": []}


def add_site_options(
    p: argparse.ArgumentParser, *, scrapy: bool = False, several: bool = False
) -> None:
    """Options of every command that crawls (*several*: one or more start URLs of one
    site); ``--log-level`` and ``-s`` unless *scrapy* (Scrapy's own are there)."""
    # Each option's help, the options below in --help's order.
    text = {
        "--config": "a TOML file holding any of these options (names as here, without the "
        'dashes or with _ for -, e.g. url = "https://...", max-pages = 1000, '
        'include = ["..."], [settings] NAME = value); the command line wins',
        "--base-url": "public address of the crawled site: every published <loc> is "
        "rewritten from the start URL's directory to this prefix",
        "--calendar-window": "follow a calendar's or date archive's prev/next links only within "
        f"this window of today, each way (default {setting_default('SITEMAP_CALENDAR_WINDOW')}; "
        "also 52w, 12m, 1y; 0 turns it off)",
        "--concurrency": "concurrent requests (default "
        f"{setting_default('CONCURRENT_REQUESTS_PER_DOMAIN')} per host, "
        f"{setting_default('CONCURRENT_REQUESTS')} in all)",
        "--delay": "minimum delay between requests in seconds (default "
        f"{setting_default('DOWNLOAD_DELAY')}, with AutoThrottle adapting to the server; "
        "robots.txt Crawl-delay wins when larger)",
        "--user-agent": "User-Agent header; its product token (AcmeBot in 'AcmeBot/1.0 (...)' or "
        "in 'Mozilla/5.0 (compatible; AcmeBot/1.0)') is matched against robots.txt groups",
        "--robots-agent": "the product token matched against robots.txt groups, instead of the "
        "User-Agent's",
        "--include": "crawl only URLs matching REGEX (repeatable; any one matches)",
        "--exclude": "do not crawl URLs matching REGEX (repeatable)",
        "--header": "send this header with every request to the site (repeatable)",
        "--auth": "HTTP basic auth for the site; better from the SITEMAP_AUTH environment "
        "variable or auth = ... in --config, out of the shell's history",
        "--cookie": "send this cookie to the site (repeatable; with the site's own cookies)",
        "--insecure": "do not verify TLS certificates (a self-signed staging host, say); the "
        "summary and the report say so, and --auth, --cookie and --header are not sent",
        "--insecure-credentials": "with --insecure, send --auth, --cookie and --header all the "
        "same",
        "--ca-file": "trust the CA certificates of this PEM file besides the system's",
    }
    add = adder(text)

    url = "start URL{}, e.g. https://www.example.com/ (or in --config)"
    if several:
        p.add_argument("url", nargs="*", default=[], help=url.format("(s) of one site"))
    else:
        p.add_argument("url", nargs="?", help=url.format(""))
    add(p, "--config", metavar="FILE")
    add(p, "--base-url", metavar="URL")
    for flag, what in (
        ("--max-pages", "fetch at most N pages"),
        ("--max-depth", "follow links at most N levels from the start URL"),
        ("--max-variants-per-path", "list at most N query variants of one path"),
    ):
        limit = f"{what} (default {setting_default(OPTION_DEFAULTS[flag])}; 0 means no limit)"
        p.add_argument(flag, type=non_negative_int, metavar="N", help=limit)
    add(p, "--calendar-window", type=window, metavar="DURATION")
    add(p, "--concurrency", type=positive_int, metavar="N")
    add(p, "--delay", type=seconds, metavar="S")
    add(p, "--user-agent", metavar="UA")
    add(p, "--robots-agent", type=robots_token, metavar="TOKEN")
    add(p, "--include", type=regex, metavar="REGEX", **REPEATABLE)
    add(p, "--exclude", type=regex, metavar="REGEX", **REPEATABLE)
    access = p.add_argument_group(
        "staging and private sites",
        "sent to the crawled site only (never to another host, even on a redirect) and "
        "never logged, recorded or reported",
    )
    add(access, "--header", type=header_option, metavar="'NAME: VALUE'", **REPEATABLE)
    add(access, "--auth", type=auth_option, metavar="USER:PASSWORD")
    add(access, "--cookie", type=cookie_option, metavar="NAME=VALUE", **REPEATABLE)
    tls = p.add_argument_group(
        "HTTPS",
        "certificates are verified against the system's trust store and the host name",
    )
    add(tls, "--insecure", action="store_true")
    add(tls, "--insecure-credentials", action="store_true")
    add(tls, "--ca-file", metavar="PEM")
    if not scrapy:
        add_log_and_settings(
            p,
            "Scrapy's log on stderr (default: %(default)s, i.e. only this command's summary, "
            "progress and a one-line error; every decision is in the ledger either way)",
            "set any Scrapy or SITEMAP_* setting (repeatable)",
        )


def add_log_and_settings(p: argparse.ArgumentParser, log_help: str, set_help: str) -> None:
    p.add_argument("--log-level", default="CRITICAL", choices=LOG_LEVELS, help=log_help)
    p.add_argument(
        "-s",
        "--set",
        dest="settings",
        type=setting,
        metavar="NAME=VALUE",
        help=set_help,
        **REPEATABLE,
    )


def given_settings(args: argparse.Namespace, names: Mapping[str, str]) -> dict[str, Any]:
    """The settings *names* maps the options given in *args* onto (None: left out)."""
    values = {name: getattr(args, flag[2:].replace("-", "_"), None) for flag, name in names.items()}
    return {name: value for name, value in values.items() if value is not None}


def site_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Check the shared options and map them onto settings. Several start URLs must be
    of one site: ``args.url`` becomes the first, the others ``SITEMAP_START_URLS``."""
    urls = [args.url] if isinstance(args.url, str) else list(args.url or [])
    if not urls:
        raise UsageError("a start URL is required (as an argument or url = ... in --config)")
    start = None
    for raw in urls:
        normal = normalize_url(raw) if isinstance(raw, str) else None
        if (normal is None or host_port(normal) is None) and (bare := bare_host(raw)):
            # A host without its scheme: https, unless resolve_start() finds only http.
            normal = normalize_url(f"https://{bare}")
        if normal is None or host_port(normal) is None:
            raise UsageError(not_a_start_url(raw))
        if start is None:
            start = normal
        elif site_of(normal) != site_of(start):
            raise UsageError(
                f"start URLs of different sites: {raw} is not on {urls[0]}'s host and port"
            )
    assert start is not None
    args.url = urls[0]
    try:
        PublicUrls.create(start, args.base_url)
    except BaseUrlError as e:
        raise UsageError(str(e)) from None
    settings: dict[str, Any] = {
        "SITEMAP_BASE_URL": args.base_url,
        "SITEMAP_INCLUDE": args.include,
        "SITEMAP_EXCLUDE": args.exclude,
        "LOG_LEVEL": args.log_level,
        **given_settings(args, OPTION_DEFAULTS),
    }
    if len(urls) > 1:
        settings["SITEMAP_START_URLS"] = urls[1:]
    if args.header:
        settings["SITEMAP_HEADERS"] = args.header
    if args.cookie:
        settings["SITEMAP_COOKIES"] = args.cookie
    auth = args.auth or os.environ.get(AUTH_ENV)
    if auth:
        try:
            auth_option(auth)
        except argparse.ArgumentTypeError as e:
            raise UsageError(f"{e} (from the {AUTH_ENV} environment variable)") from None
        settings["SITEMAP_AUTH"] = auth
    if args.insecure:
        settings["SITEMAP_TLS_VERIFY"] = False
    if args.insecure_credentials:
        settings["SITEMAP_INSECURE_CREDENTIALS"] = True
    if args.ca_file:
        if problem := check_ca_file(args.ca_file):
            raise UsageError(problem)
        settings["SITEMAP_CA_FILE"] = str(Path(args.ca_file).absolute())
    if args.concurrency is not None:
        settings["CONCURRENT_REQUESTS"] = args.concurrency
    if args.user_agent:
        settings["USER_AGENT"] = args.user_agent
        settings["ROBOTSTXT_USER_AGENT"] = product_token(args.user_agent)
    if args.robots_agent:
        settings["ROBOTSTXT_USER_AGENT"] = args.robots_agent
    return settings


def resolve_start(args: argparse.Namespace, overrides: Mapping[str, Any]) -> Origin:
    """Ask the start URL where the site is (:func:`crawler.fetch.origin.resolve_origin`)
    and move ``args.url`` there, with the other start URLs (*overrides*'
    ``SITEMAP_START_URLS``, after :func:`site_settings`) on the site as typed; map the
    arguments again afterwards. Raise CrawlFailure with one line when it cannot be
    crawled."""
    from crawler.fetch.origin import OriginError, resolve_origin

    first = args.url if isinstance(args.url, str) else args.url[0]
    try:
        origin = resolve_origin(first, project_settings(overrides))
    except OriginError as e:
        raise CrawlFailure(f"{e}; this run did nothing") from None
    others = overrides.get("SITEMAP_START_URLS") or []
    args.url = [origin.url, *(origin.rebase(url) for url in others)]
    if isinstance(getattr(args, "sitemap", None), list):  # --sitemap URLs of the site
        args.sitemap = [origin.rebase(url) for url in args.sitemap]
    return origin


def check_writable(directory: Path) -> None:
    """Raise UsageError unless files can be created in *directory* (or where it would be)."""
    existing = directory
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"cannot write to {directory}: {existing} is not a directory")
    try:
        # A real probe: root passes os.access() in /proc or on a read-only mount.
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".sitemap-probe-"):
            pass
    except OSError as e:
        why = {
            errno.EACCES: "permission denied",
            errno.EPERM: "permission denied",
            errno.EROFS: "read-only file system",
            errno.ENOSPC: "no space left on the device",
        }.get(e.errno or 0, "files cannot be created there")
        where = "" if existing == directory else f" (in {existing})"
        raise UsageError(f"cannot write to {directory}{where}: {why}") from None


def make_directories(*directories: Path) -> None:
    """Make the checked directories; raise UsageError when that still fails."""
    for directory in directories:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot write to {directory}: {e.strerror or e}") from None


# -- the config file and the Python API -------------------------------------------------


def load_config(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """*args*, filled from the TOML file of ``--config`` if any; the command line wins."""
    if not args.config:
        return args
    path = Path(args.config)
    try:
        with path.open("rb") as f:
            config = tomllib.load(f)
    except OSError as e:
        raise UsageError(f"cannot read --config {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"--config {path} is not valid TOML: {e}") from None
    apply_options(parser, args, config, where=f"--config {path}")
    return args


def apply_options(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    options: Mapping[str, Any],
    *,
    where: str,
) -> None:
    """Set *options* (long option names; ``settings`` a table of ``-s``) on *args*
    through the parser's own conversions, unless the command line set them (repeatable
    ones add to its); *where* names the source in errors."""
    actions = {a.dest: a for a in parser._actions if a.dest not in ("help", "config")}
    for name, value in options.items():
        dest = name.replace("-", "_")
        action = actions.get(dest)
        if action is None:
            # The hint spelled the way *name* is: - in a config file, _ in Python.
            dash = "_" not in name
            known = {(d.replace("_", "-") if dash else d): d for d in actions}
            close = difflib.get_close_matches(name.replace("_", "-") if dash else name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"{where}: unknown option {name!r}{hint}")
        try:
            converted = _option_value(action, value)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
            raise UsageError(f"{where}: {name}: {e}") from None
        current = getattr(args, dest)
        if isinstance(action, argparse._AppendAction):
            setattr(args, dest, [*converted, *current])  # the command line's come last
        elif current == parser.get_default(dest):
            setattr(args, dest, converted)


def _option_value(action: argparse.Action, value: Any) -> Any:
    if action.dest == "settings":
        if not isinstance(value, dict):
            raise TypeError("expected a table: [settings] NAME = value")
        return list(value.items())
    convert = action.type if callable(action.type) else None
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        return [convert(str(v)) if convert else v for v in items]
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise TypeError("expected true or false")
        return value
    if convert is not None:
        value = convert(str(value))
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"{value!r} is not one of {', '.join(map(str, action.choices))}")
    return value


# -- running ---------------------------------------------------------------------------


def project_settings(overrides: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """The project's settings (or *base*) with *overrides* at command-line priority."""
    from scrapy.settings import Settings

    if base is None:
        settings = Settings()
        settings.setmodule("settings", priority="project")
    else:
        settings = base.copy()
    settings.setdict(dict(overrides), priority="cmdline")
    return settings


def checked_settings(overrides: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """:func:`project_settings`, checked against every setting's rule; raise UsageError."""
    settings = project_settings(overrides, base)
    try:
        check_settings(settings, overrides)
    except SettingError as e:
        raise UsageError(str(e)) from None
    return settings


def attempt(work: Callable[[], T], *, what: str, interrupted: str) -> T | int:
    """Run a command's *work*: its result, or the exit status after one line (bad input
    2, a crawl that cannot start 3, Ctrl-C before Scrapy took the signals 130)."""
    try:
        return work()
    except UsageError as e:
        error(f"error: {e}")
        return EXIT_USAGE
    except CrawlFailure as e:
        error(str(e))
        return EXIT_CRAWL_FAILED
    except KeyboardInterrupt:
        error(interrupted)
        return EXIT_INTERRUPTED
    except Exception as e:  # a bad -s value, say: one line, not a traceback
        logging.getLogger(__name__).debug("%s failed", what, exc_info=True)
        error(f"error: {type(e).__name__}: {e}")
        return EXIT_USAGE


class Outcome(Protocol):
    """How a command's work ended: its exit status and the line saying why, if any."""

    code: int
    error: str | None


Done = TypeVar("Done", bound=Outcome)


def run_command(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    execute: Callable[[argparse.Namespace], Done],
    show: Callable[[Done], None],
    *,
    interrupted: str,
) -> int:
    """Apply ``--config``, *execute*, *show* the outcome and its error; the exit status."""
    work = attempt(
        lambda: execute(load_config(parser, args)), what=parser.prog, interrupted=interrupted
    )
    if isinstance(work, int):
        return work
    show(work)
    if work.error is not None:
        error(work.error)
    return work.code


def error(message: str) -> None:
    """One line on stderr, the way every command reports a failure."""
    print(f"{PROG}: {message}", file=sys.stderr)


def print_stdout(text: str) -> None:
    """Print to stdout; a closed pipe (``| head``) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python would complain again at exit when flushing stdout.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# -- the same commands through Scrapy's command line --------------------------------------


def scrapy_command(module: ModuleType) -> type[ScrapyCommand]:
    """The Scrapy command of a command *module* (the same code, with Scrapy's ``-s`` and
    ``-L``). Named in its module: Scrapy would take a class defined here for a command."""
    from scrapy.commands import ScrapyCommand

    class Command(ScrapyCommand):
        requires_project = True
        requires_crawler_process = False  # our commands run their own

        def syntax(self) -> str:
            return "--redis URL [options]" if module.NAME == "worker" else "URL [options]"

        def short_desc(self) -> str:
            return str(module.HELP)

        def long_desc(self) -> str:
            return str(module.DESCRIPTION)

        def add_options(self, parser: argparse.ArgumentParser) -> None:
            super().add_options(parser)
            module.add_arguments(parser, scrapy=True)

        def run(self, args: list[str], opts: argparse.Namespace) -> None:
            assert self.settings is not None
            # Scrapy applied -s to self.settings already (the base of the run's
            # settings); they are the command's own -s too, which win over --config's.
            opts.settings = [setting(text) for text in opts.set]
            opts.log_level = self.settings.get("LOG_LEVEL")
            if args:
                error(f"error: unrecognized arguments: {' '.join(args)}")
                self.exitcode = EXIT_USAGE
                return
            parser = argparse.ArgumentParser()
            module.add_arguments(parser, scrapy=True)
            self.exitcode = module.run(parser, opts, self.settings)

    Command.__module__ = module.__name__
    Command.__qualname__ = "Command"
    Command.__doc__ = f"``scrapy {module.NAME}``: {module.HELP}."
    return Command
