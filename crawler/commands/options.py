"""What every command shares: exit statuses, one-line errors, the start URLs and the
options given mapped onto settings (the options themselves: :mod:`.declarations`), the
TOML ``--config`` file and the Python API's keyword arguments (through the same argparse
actions as the command line, which wins), and how a command runs.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import logging
import os
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

from crawler.commands import declarations
from crawler.commands.declarations import FLAG_OF, SITE, Option, given_settings
from crawler.commands.settingrules import SettingError, check_settings, check_value
from crawler.commands.values import setting
from crawler.core.publicurl import BaseUrlError, PublicUrls
from crawler.core.urls import bare_host, host_port, normalize_url, not_a_start_url, site_of

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


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


class CrawlFailure(Exception):
    """The crawl cannot start (Redis unreachable, busy): one line, exit status 3."""


#: The environment variable that holds --auth's USER:PASSWORD.
AUTH_ENV = "SITEMAP_AUTH"


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (exit status 2), not a usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def site_settings(args: argparse.Namespace, options: Iterable[Option] = SITE) -> dict[str, Any]:
    """Check the start URLs and ``--base-url``, and map the *options* given in *args*
    onto settings. Several start URLs must be of one site: ``args.url`` becomes the
    first, the others ``SITEMAP_START_URLS``."""
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
    settings = given_settings(args, options)
    if len(urls) > 1:
        settings["SITEMAP_START_URLS"] = urls[1:]
    if "SITEMAP_AUTH" not in settings and (auth := os.environ.get(AUTH_ENV)):
        try:
            check_value("SITEMAP_AUTH", auth)
        except ValueError as e:
            raise UsageError(f"{e} (from the {AUTH_ENV} environment variable)") from None
        settings["SITEMAP_AUTH"] = auth
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
        if (action := actions.get(dest)) is None:
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


def checked_settings(
    overrides: Mapping[str, Any], base: Settings | None = None, typed: Iterable[str] = ()
) -> Settings:
    """:func:`project_settings`, checked against every setting's rule; raise UsageError.
    An error names the option that set a setting, unless *typed* (``-s``) names it."""
    settings = project_settings(overrides, base)
    flags = {name: flag for name, flag in FLAG_OF.items() if name not in set(typed)}
    try:
        check_settings(settings, overrides, flags)
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
            declarations.add_options(parser, module.OPTIONS, scrapy=True)

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
            declarations.add_options(parser, module.OPTIONS, scrapy=True)
            self.exitcode = module.run(parser, opts, self.settings)

    Command.__module__ = module.__name__
    Command.__qualname__ = "Command"
    Command.__doc__ = f"``scrapy {module.NAME}``: {module.HELP}."
    return Command
