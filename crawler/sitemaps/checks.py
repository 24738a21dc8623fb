"""The protocol's checks on one entry, and the location rule for a whole file.

:class:`Checker` checks an entry (its ``loc``, ``lastmod`` or RSS ``pubDate``,
``changefreq``, ``priority``, images and alternates; the codes:
:class:`~crawler.sitemaps.model.Problem`, docs/audit.md, "Protocol problems"), each
distinct value of a file judged once. :class:`Scope` is the protocol's "Sitemap file
location".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Final
from urllib.parse import urljoin, urlsplit

from crawler.core import clock
from crawler.core.lastmod import lastmod_datetime, w3c_datetime
from crawler.sitemaps.entry import ChangeFreq, check_loc
from crawler.sitemaps.limits import MAX_IMAGES_PER_URL, MAX_LOC_LENGTH, MIN_LOC_LENGTH
from crawler.sitemaps.model import Entry, Problem, quote

__all__ = ["Checker", "Scope", "entry_url"]

# A future lastmod is only reported beyond this: time zones alone put a page
# written "today" up to 14 hours ahead of UTC.
_FUTURE_SLACK = timedelta(days=1)
_CHANGEFREQS = frozenset(value.value for value in ChangeFreq)
# xsd:decimal: no exponent, no "NaN" (Decimal() would take both).
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)
_PRIORITY_MAX = Decimal("1.0")
# The W3C Datetime note's forms that xsd:date / xsd:dateTime also accept, except
# that hh:mm without seconds is taken (the note allows it; search engines read
# it). Year-only and year-month are W3C but not xsd, and are invalid here.
_W3C_LASTMOD = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:[0-9]{2}))?",
    re.ASCII,
)
_LASTMOD_NO_ZONE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?", re.ASCII
)
# A subset of what check_loc() accepts (no %, brackets, userinfo, second "#"
# or non-ASCII): URLs like this need no closer look.
_PLAIN_HTTP_URL = re.compile(
    r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:[/?#][A-Za-z0-9._~!$&'()*+,;=:@/?-]*)?", re.ASCII
)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_WHITESPACE = re.compile(r"\s")
# The codes _check_url() gives a bad loc: such an entry is not also judged
# against the scope.
LOC_FAULTS: Final = frozenset(
    {"empty-loc", "loc-too-long", "whitespace-in-loc", "relative-loc", "invalid-loc"}
)


def _check_url(value: str, line: int | None, what: str) -> Problem | None:
    """The first thing wrong with an absolute http(s) URL, or None."""
    if _PLAIN_HTTP_URL.fullmatch(value) and MIN_LOC_LENGTH <= len(value) <= MAX_LOC_LENGTH:
        return None  # the common case, decided by one regex
    if not value:
        return Problem("empty-loc", f"empty {what}", line)
    if len(value) > MAX_LOC_LENGTH:
        return Problem(
            "loc-too-long",
            f"{what} is {len(value):,} characters, over {MAX_LOC_LENGTH:,}: {quote(value)}",
            line,
        )
    if _WHITESPACE.search(value):
        return Problem("whitespace-in-loc", f"whitespace inside {what}: {quote(value)}", line)
    scheme = _SCHEME.match(value)
    if scheme is None:
        return Problem("relative-loc", f"{what} is not an absolute URL: {quote(value)}", line)
    if scheme.group(1).lower() not in ("http", "https"):
        return Problem("invalid-loc", f"{what} is not an http or https URL: {quote(value)}", line)
    try:
        # The writer's own test of a publishable <loc>: a host, 12+ characters,
        # no controls, valid %-escapes, brackets only around an IPv6 host.
        check_loc(value)
    except ValueError as exc:
        return Problem("invalid-loc", str(exc), line)
    return None


def entry_url(loc: str, base: str | None) -> str:
    """The URL an entry names, for its problems: *loc* as written, or, when it is
    relative (no scheme) and the sitemap's address *base* is known, resolved against
    it, as a reader that resolves it would fetch it (docs/audit.md, "Protocol problems")."""
    if base is None or _SCHEME.match(loc):
        return loc
    try:
        return urljoin(base, loc)
    except ValueError:  # an unparsable base ("http://[x"): the loc as written
        return loc


# A judge of one field's value: None, or a problem's code and message.
Fault = tuple[str, str] | None
Judge = Callable[[str, datetime], Fault]


def _lastmod_fault(value: str, now: datetime) -> Fault:
    text = value.strip()
    normalised = w3c_datetime(text) if _W3C_LASTMOD.fullmatch(text) else None
    if normalised is None:
        if _LASTMOD_NO_ZONE.fullmatch(text):
            return "lastmod-no-timezone", f"lastmod has a time but no time zone: {quote(text)}"
        return "invalid-lastmod", f"lastmod is not a W3C datetime: {quote(text)}"
    if lastmod_datetime(normalised) > now + _FUTURE_SLACK:
        return "lastmod-future", f"lastmod is in the future: {quote(text)}"
    return None


def _pubdate_fault(value: str, now: datetime) -> Fault:
    # RSS 2.0 dates are RFC 822 (RFC 2822 in practice), not W3C: kept raw, and
    # checked here as what they are.
    try:
        moment = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return "invalid-lastmod", f"pubDate is not an RFC 822 date: {quote(value)}"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment > now + _FUTURE_SLACK:
        return "lastmod-future", f"pubDate is in the future: {quote(value)}"
    return None


def _changefreq_fault(value: str, now: datetime) -> Fault:
    # xsd:token collapses whitespace; the enumeration itself is case-sensitive.
    if value.strip() in _CHANGEFREQS:
        return None
    return (
        "invalid-changefreq",
        f"changefreq {quote(value)} is not one of {', '.join(sorted(_CHANGEFREQS))}",
    )


def _priority_fault(value: str, now: datetime) -> Fault:
    text = value.strip()
    # What _DECIMAL matches, Decimal() reads.
    if _DECIMAL.fullmatch(text) and Decimal(0) <= Decimal(text) <= _PRIORITY_MAX:
        return None
    return "invalid-priority", f"priority {quote(value)} is not a decimal from 0.0 to 1.0"


def aware(now: datetime | None) -> datetime:
    """``now`` as an aware datetime: the current time when None, UTC when naive."""
    now = clock.now() if now is None else now
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


class Checker:
    """The protocol's checks on a file's entries (a naive *now* is UTC), with memory: a
    file repeats a few values thousands of times, so each distinct value is judged once."""

    _CACHE_SIZE = 4096

    def __init__(self, now: datetime) -> None:
        self.now = aware(now)
        self.verdicts: dict[Judge, dict[str, Fault]] = {}  # each judge's, by value

    def check(
        self, entry: Entry, *, pubdate: bool = False, base: str | None = None
    ) -> list[Problem]:
        """The problems of *entry*, each at its line and naming its URL (:func:`entry_url`
        of its loc and the sitemap's address *base*). Never raises."""
        line = entry.line
        loc_problem = _check_url(entry.loc, line, "loc")
        problems = [] if loc_problem is None else [loc_problem]
        for value, judge in (
            (entry.lastmod, _pubdate_fault if pubdate else _lastmod_fault),
            (entry.changefreq, _changefreq_fault),
            (entry.priority, _priority_fault),
        ):
            if value is None:
                continue
            verdicts = self.verdicts.setdefault(judge, {})
            if value not in verdicts:
                if len(verdicts) >= self._CACHE_SIZE:
                    verdicts.clear()  # a file of unique dates: memory stays bounded
                verdicts[value] = judge(value, self.now)
            fault = verdicts[value]
            if fault is not None:
                problems.append(Problem(fault[0], fault[1], line))
        if entry.images > MAX_IMAGES_PER_URL:
            problems.append(
                Problem(
                    "too-many-images", f"{entry.images:,} images, over {MAX_IMAGES_PER_URL:,}", line
                )
            )
        for kind, alternates in (("hreflang", entry.alternates), ("media", entry.media_alternates)):
            for value, href in alternates:
                if _check_url(href, line, "href") is not None:
                    problems.append(
                        Problem(
                            "invalid-alternate",
                            f"{kind} {quote(value)} alternate is not an absolute http(s)"
                            f" URL: {quote(href)}",
                            line,
                        )
                    )
        if not problems:
            return problems
        url = entry_url(entry.loc, base)
        return [replace(problem, url=url) for problem in problems]


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@dataclass(slots=True)
class Scope:
    """The URLs a sitemap at a given URL may list (protocol, "Sitemap file location")."""

    scheme: str
    host: str
    port: int
    directory: str

    @classmethod
    def of(cls, url: str | None) -> Scope | None:
        if not url:
            return None
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return None
        scheme, path = parts.scheme.lower(), parts.path or "/"
        if scheme not in ("http", "https") or not parts.hostname:
            return None
        return cls(
            scheme, parts.hostname, port or _DEFAULT_PORTS[scheme], path[: path.rfind("/") + 1]
        )

    def allows(self, loc: str, same_directory: bool) -> bool:
        try:
            parts = urlsplit(loc)
            scheme = parts.scheme.lower()
            port = parts.port or _DEFAULT_PORTS.get(scheme)
        except ValueError:
            return True  # reported as invalid-loc already
        if (scheme, parts.hostname, port) != (self.scheme, self.host, self.port):
            return False
        return not same_directory or (parts.path or "/").startswith(self.directory)
