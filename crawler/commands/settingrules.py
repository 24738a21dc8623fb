"""The rules every setting must meet, checked before a crawl starts: a bad ``-s`` value
is one line (exit status 2), not a traceback mid-crawl. Every ``SITEMAP_*`` setting has
a rule (tests/test_settingrules.py), as do the Scrapy settings the crawl relies on; an
unknown ``SITEMAP_*`` name is an error too, with the closest name. An option that sets
a setting is checked by the same rule as its text is read (:func:`option_type`), so
the error names the flag or the config key the user typed.
"""

from __future__ import annotations

import argparse
import difflib
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import settings as project
from crawler.core.lastmod import w3c_datetime
from crawler.crawl.calendars import parse_window
from crawler.fetch.access import parse_auth, parse_cookie, parse_header
from crawler.fetch.rendering import MODES as RENDER_MODES
from crawler.fetch.tls import check_ca_file
from crawler.sitemaps.entry import ChangeFreq
from crawler.sitemaps.entryrows import check_section
from crawler.sitemaps.limits import MAX_BYTES_PER_FILE, MAX_URLS_PER_FILE
from pipelines.rules import regex, sections, value_rules

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class SettingError(ValueError):
    """A setting breaks its rule: the message names it, its value and what is allowed."""


#: A rule reads a setting and raises ValueError saying what is allowed.
Rule = Callable[["BaseSettings", str], object]


def _number(
    kind: Callable[[str], Any], low: float | None, high: float | None = None, cap: str = ""
) -> Rule:
    """A number (``int``: a whole one) from *low* to *high* (None: unbounded); *high*
    is the sitemap protocol's cap on a file of *cap* (bytes, URLs) when given."""
    what = "a whole number" if kind is int else "a number"

    def rule(settings: BaseSettings, name: str) -> None:
        raw = settings.get(name)
        try:
            value = settings.getint(name) if kind is int else settings.getfloat(name)
        except (TypeError, ValueError):
            value = None
        fraction = kind is int and isinstance(raw, float) and not raw.is_integer()
        if value is None or fraction or (low is not None and not value >= low):  # NaN
            raise ValueError(_allowed(what, low, high))
        if high is not None and value > high:
            over = f" (a file cannot exceed the protocol's {high} {cap})" if cap else ""
            raise ValueError(_allowed(what, low, high) + over)

    return rule


def _auto_or(rule: Rule) -> Rule:
    """``"auto"``, or what *rule* allows."""

    def auto_or(settings: BaseSettings, name: str) -> None:
        try:
            rule(settings, name)
        except ValueError as e:
            if settings.get(name) != "auto":
                raise ValueError(f"{e}, or auto") from None

    return auto_or


def _positive(settings: BaseSettings, name: str) -> None:
    try:
        value = settings.getfloat(name)
    except (TypeError, ValueError):
        value = 0.0
    if not value > 0:
        raise ValueError("must be a number greater than 0")


def _allowed(what: str, low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"must be {what} from {_plain(low)} to {_plain(high)}"
    if low is not None:
        return f"must be {what} of at least {_plain(low)}"
    return f"must be {what}"


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _optional(rule: Rule) -> Rule:
    def optional(settings: BaseSettings, name: str) -> None:
        if settings.get(name) not in (None, ""):
            rule(settings, name)

    return optional


def _bool(settings: BaseSettings, name: str) -> None:
    try:
        settings.getbool(name)
    except ValueError:
        raise ValueError("must be true or false (True, False, 1 or 0)") from None


def _choice(*choices: str) -> Rule:
    def rule(settings: BaseSettings, name: str) -> None:
        if settings.get(name) not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")

    return rule


def _text(settings: BaseSettings, name: str) -> None:
    if not isinstance(settings.get(name), str) or not settings.get(name).strip():
        raise ValueError("must be a non-empty text")


def _window(settings: BaseSettings, name: str) -> None:
    parse_window(settings.get(name))  # its ValueError says what is allowed


def _path(settings: BaseSettings, name: str) -> None:
    if not isinstance(settings.get(name), str):
        raise ValueError("must be a path")


def _texts(settings: BaseSettings, name: str) -> list[str]:
    try:
        values = settings.getlist(name)
    except (TypeError, ValueError):
        raise ValueError("must be a list of texts") from None
    if not all(isinstance(v, str) for v in values):
        raise ValueError("must be a list of texts")
    return values


def _media_type(value: str) -> None:
    if not re.fullmatch(r"[\w.+-]+/[\w.+-]+", value.strip()):
        raise ValueError(f"{value!r} is not a media type such as application/pdf")


def _selector(selector: str) -> None:
    from cssselect import GenericTranslator, SelectorError  # Scrapy's, through parsel

    try:
        GenericTranslator().css_to_xpath(selector)
    except SelectorError as e:
        raise ValueError(f"{selector!r} is not a CSS selector: {e}") from None


def _is_priority(value: object) -> bool:
    try:
        return Decimal(0) <= Decimal(str(value)) <= Decimal(1)
    except InvalidOperation:  # NaN too
        return False


def _priority(settings: BaseSettings, name: str) -> None:
    if not _is_priority(settings.get(name)):
        raise ValueError("must be a number from 0.0 to 1.0")


def _w3c(settings: BaseSettings, name: str) -> None:
    if w3c_datetime(str(settings.get(name))) is None:
        raise ValueError("must be a W3C datetime such as 2026-11-23T08:00:00+00:00")


def _sections(settings: BaseSettings, name: str) -> None:
    names = [n for n, _ in sections(_texts(settings, name))]
    for section in names:
        check_section(section)
    if len(set(names)) != len(names):
        raise ValueError("a section is named twice")


def _changefreq_rules(settings: BaseSettings, name: str) -> None:
    allowed = {c.value for c in ChangeFreq}
    for _, value in value_rules(_texts(settings, name)):
        if value != "auto" and value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(sorted(allowed))} or auto")


def _priority_rules(settings: BaseSettings, name: str) -> None:
    for _, value in value_rules(_texts(settings, name)):
        if not _is_priority(value):
            raise ValueError(f"{value!r} is not a priority from 0.0 to 1.0")


def _indexnow_key(settings: BaseSettings, name: str) -> None:
    from crawler.publish.indexnow import valid_key

    if not valid_key(str(settings.get(name))):
        raise ValueError("must be 8 to 128 letters, digits or -, as IndexNow asks")


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("xml", "txt")


def _log_level(settings: BaseSettings, name: str) -> None:
    if str(settings.get(name)).upper() not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")


_PATH = _optional(_path)


def _credentials(settings: BaseSettings, name: str) -> None:
    _text(settings, name)
    parse_auth(str(settings.get(name)))


def _ca_file(settings: BaseSettings, name: str) -> None:
    _text(settings, name)
    if problem := check_ca_file(str(settings.get(name))):
        raise ValueError(problem.partition(": ")[2])


def _addresses(settings: BaseSettings, name: str) -> None:
    """A table of host names and addresses (``{"www.example.test": "127.0.0.1"}``)."""
    try:
        table = settings.getdict(name)
    except (TypeError, ValueError):
        raise ValueError("expected a table of host names and addresses, as JSON") from None
    for host, address in table.items():
        try:
            ipaddress.ip_address(str(address))
        except ValueError:
            raise ValueError(f"{host}: {address!r} is not an IP address") from None


def _each(parse: Callable[[str], object]) -> Rule:
    """A list of texts whose every item *parse* accepts (its ValueError says why)."""

    def rule(settings: BaseSettings, name: str) -> None:
        _texts(settings, name)
        for item in settings.getlist(name):
            parse(str(item))

    return rule


#: Settings that hold credentials: an error names them, never their value.
SECRET = frozenset({"SITEMAP_AUTH", "SITEMAP_COOKIES", "SITEMAP_HEADERS"})


def _revisit_max(settings: BaseSettings, name: str) -> None:
    """The longest revisit interval: a number of days, not below the shortest."""
    _positive(settings, name)
    low = settings.get("SITEMAP_REVISIT_MIN")
    try:
        below = settings.getfloat(name) < float(str(low))
    except ValueError:  # SITEMAP_REVISIT_MIN's own rule says what is wrong with it
        return
    if below:
        raise ValueError(f"a number of days, at least SITEMAP_REVISIT_MIN ({low})")


#: The rule of each setting the crawl defines or relies on. One of ours whose default is
#: true or false, or a list, is a boolean, or a list of texts, unless named here.
RULES: dict[str, Rule] = {
    **{
        name: _bool if isinstance(value, bool) else _texts
        for name, value in vars(project).items()
        if name.startswith("SITEMAP_") and isinstance(value, bool | list)
    },
    # sitemap-crawler's own (settings/__init__.py documents each).
    "SITEMAP_AUDIT_LEDGER": _PATH,
    "SITEMAP_AUDIT_MAX_BYTES": _number(int, 1),
    "SITEMAP_AUDIT_MAX_DEPTH": _number(int, 0),
    "SITEMAP_AUDIT_STORE": _PATH,
    "SITEMAP_AUTH": _optional(_credentials),
    "SITEMAP_BASE_URL": _optional(_text),
    "SITEMAP_CA_FILE": _optional(_ca_file),
    "SITEMAP_CALENDAR_WINDOW": _window,
    "SITEMAP_CHANGEFREQ": _optional(_choice(*(c.value for c in ChangeFreq))),
    "SITEMAP_CHANGEFREQ_RULES": _changefreq_rules,
    "SITEMAP_COOKIES": _each(parse_cookie),
    "SITEMAP_EXCLUDE": _each(regex),
    "SITEMAP_FEED_DAYS": _number(int, 1),
    "SITEMAP_FEED_MAX": _number(int, 1),
    "SITEMAP_FORMAT": _choice(*FORMATS),
    "SITEMAP_HEADERS": _each(parse_header),
    "SITEMAP_INCLUDE": _each(regex),
    "SITEMAP_INDEXNOW_ENDPOINT": _optional(_text),
    "SITEMAP_INDEXNOW_KEY": _optional(_indexnow_key),
    "SITEMAP_INDEXNOW_KEY_LOCATION": _optional(_text),
    "SITEMAP_LISTED_TYPES": _each(_media_type),
    "SITEMAP_MAX_BYTES_PER_FILE": _number(int, 1, MAX_BYTES_PER_FILE, "bytes"),
    "SITEMAP_MAX_CRAWL_DELAY": _number(float, 0),
    "SITEMAP_MAX_DEPTH": _number(int, 0),
    "SITEMAP_MAX_DROP": _number(float, 0, 1),
    "SITEMAP_MAX_ERROR_RATE": _number(float, 0, 1),
    "SITEMAP_MAX_PAGES": _number(int, 0),
    "SITEMAP_MAX_REDIRECTS": _number(int, 0),
    "SITEMAP_MAX_URLS_PER_FILE": _number(int, 1, MAX_URLS_PER_FILE, "URLs"),
    "SITEMAP_MAX_VARIANTS_PER_PATH": _number(int, 0),
    "SITEMAP_NEWS_PUBLICATION": _optional(_text),
    "SITEMAP_NEWS_TIME": _optional(_w3c),
    "SITEMAP_OUT_DIR": _PATH,
    "SITEMAP_PARSE_BACKLOG": _number(int, 0),
    "SITEMAP_PARSE_LOCAL_BELOW": _number(int, 0),
    "SITEMAP_PARSE_PROCESSES": _optional(_number(int, 0)),
    "SITEMAP_PRIORITY": _optional(_priority),
    "SITEMAP_PRIORITY_RULES": _priority_rules,
    "SITEMAP_PROGRESS_INTERVAL": _number(float, 0),
    "SITEMAP_REDIS_CRAWL": _optional(_text),
    "SITEMAP_REDIS_LOCAL_WORKERS": _each(int),
    "SITEMAP_REDIS_POLL_INTERVAL": _positive,
    "SITEMAP_REDIS_PROCESSES_HERE": _number(int, 1),
    "SITEMAP_REDIS_REPORT_BATCH": _number(int, 1),
    "SITEMAP_REDIS_ROLE": _optional(_choice("coordinator", "worker")),
    "SITEMAP_REDIS_SERVER": _optional(_text),
    "SITEMAP_REDIS_URL": _optional(_text),
    "SITEMAP_REDIS_WORKER_TIMEOUT": _number(float, 1),
    "SITEMAP_RENDER": _choice(*RENDER_MODES),
    "SITEMAP_RENDER_BROWSER": _optional(_text),
    "SITEMAP_RENDER_CONCURRENCY": _auto_or(_number(int, 1)),
    "SITEMAP_RENDER_CONTEXT_PAGES": _number(int, 1),
    "SITEMAP_RENDER_CONTEXT_MB": _number(int, 1),
    "SITEMAP_RENDER_INCLUDE": _each(regex),
    "SITEMAP_RENDER_SHELL_LINKS": _number(int, 0),
    "SITEMAP_RENDER_TIMEOUT": _positive,
    "SITEMAP_REPORT_HTML_URLS": _number(int, 1),
    "SITEMAP_REVISIT_MAX": _revisit_max,
    "SITEMAP_REVISIT_MIN": _positive,
    "SITEMAP_ROBOTS_MAX_AGE": _number(float, 0),
    "SITEMAP_ROBOTS_MAX_BYTES": _number(int, 1),
    "SITEMAP_SECTIONS": _sections,
    "SITEMAP_STATE_DIR": _PATH,
    "SITEMAP_TEST_HOSTS": _addresses,
    "SITEMAP_TRAP_MAX_QUERY_VARIANTS": _number(int, 1),
    "SITEMAP_TRAP_MAX_REPEATS": _number(int, 1),
    "SITEMAP_TRAP_MAX_SEGMENTS": _number(int, 1),
    "SITEMAP_URL_FILE": _PATH,
    "SITEMAP_VOLATILE_SELECTORS": _each(_selector),
    # Scrapy's, which the crawl relies on.
    "AUTOTHROTTLE_ENABLED": _bool,
    "AUTOTHROTTLE_MAX_DELAY": _number(float, 0),
    "AUTOTHROTTLE_START_DELAY": _number(float, 0),
    "AUTOTHROTTLE_TARGET_CONCURRENCY": _positive,
    "CLOSESPIDER_ERRORCOUNT": _number(int, 0),
    "CLOSESPIDER_ITEMCOUNT": _number(int, 0),
    "CLOSESPIDER_PAGECOUNT": _number(int, 0),
    "CLOSESPIDER_TIMEOUT": _number(float, 0),
    "CONCURRENT_ITEMS": _number(int, 1),
    "CONCURRENT_REQUESTS": _number(int, 1),
    "CONCURRENT_REQUESTS_PER_DOMAIN": _number(int, 1),
    "DEPTH_PRIORITY": _number(int, None),
    "DNS_TIMEOUT": _positive,
    "DOWNLOAD_DELAY": _number(float, 0, 3600),
    "DOWNLOAD_MAXSIZE": _number(int, 0),
    "DOWNLOAD_TIMEOUT": _positive,
    "DOWNLOAD_WARNSIZE": _number(int, 0),
    "LOG_LEVEL": _log_level,
    "REDIRECT_MAX_TIMES": _number(int, 0),
    "RETRY_TIMES": _number(int, 0),
    "ROBOTSTXT_OBEY": _bool,
    "USER_AGENT": _text,
}


def check_value(name: str, value: Any) -> None:
    """Ask the rule of setting *name* about *value* alone (another setting it compares
    with is checked with all of them); its ValueError says what is allowed."""
    from scrapy.settings import BaseSettings

    RULES[name](BaseSettings({name: value}), name)


def option_type(name: str, read: Callable[[str], Any] | None, many: bool) -> Callable[[str], Any]:
    """The argparse type of an option that sets *name*: its text, or what *read* (int,
    say) makes of it, once *name*'s rule accepts it (*many*: as one item of the list). The error
    names the text unless it is a secret; argparse, the config file and the API name
    the option."""

    def check(text: str) -> Any:
        try:
            value = read(text) if read else text
        except ValueError:  # int("lots"): the rule says what is allowed
            value = text
        try:
            check_value(name, [value] if many else value)
        except ValueError as e:
            said = str(e) if name in SECRET or repr(text) in str(e) else f"{text!r}: {e}"
            raise argparse.ArgumentTypeError(said) from None
        return value

    return check


def check_settings(
    settings: BaseSettings,
    given: Mapping[str, Any] | Iterable[str],
    flags: Mapping[str, str] | None = None,
) -> None:
    """Raise SettingError for the first setting that breaks its rule, or for a
    ``SITEMAP_*`` name in *given* (the names the user set) that does not exist.
    *flags*: the command-line option of a setting, named in its error."""
    known = sorted(name for name in RULES if name.startswith("SITEMAP_"))
    for name in given:
        if name.startswith("SITEMAP_") and name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise SettingError(f"unknown setting {name}{hint}")
    for name, rule in RULES.items():
        if name not in settings:
            continue
        try:
            rule(settings, name)
        except ValueError as e:
            shown = "(hidden)" if name in SECRET else repr(settings.get(name))
            flag = (flags or {}).get(name)
            said = f" (option {flag})" if flag else ""
            raise SettingError(f"setting {name} = {shown}: {e}{said}") from None
