"""One ``<url>`` of a sitemap, as a read-only value, and many of them at once.

Modelled on ultimate-sitemap-parser's slotted page objects: the entry checks
itself once, when it is made, so the writer can render it without looking
again, and a bad value fails where it was produced rather than in a half-written
file.

:class:`EntryBatch` holds consecutive entries as two lists (locs, lastmods) and
checks them together: publishing a million URLs, a Python object and a few
function calls per URL cost more than compressing the files at gzip level 6.
:class:`EntryRows` turns database rows into either form; it is what
:meth:`crawler.ledger.Ledger.listed_entries` returns.
"""

from __future__ import annotations

import enum
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from itertools import islice

from crawler.lastmod import lastmod_datetime
from crawler.limits import MAX_LOC_LENGTH, MIN_LOC_LENGTH

__all__ = ["ChangeFreq", "EntryBatch", "EntryRows", "SitemapEntry", "check_lastmod", "check_loc"]

# Whitespace (every character str.isspace() knows, NBSP included) and controls
# (C0, DEL, C1) are never part of a URL, and a safe_url_string() result has
# none. Most controls, lone surrogates and U+FFFE/U+FFFF cannot appear in an
# XML 1.0 document at all, and readers strip leading and trailing whitespace
# from <loc> (Scrapy's Sitemap does): rejecting them here is what lets the
# writer escape only &, < and > and have the URL read back unchanged.
_FORBIDDEN_IN_LOC = re.compile(
    "[\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ud800-\udfff\ufffe\uffff]"
)
# Scheme, then an authority with a non-empty host (a name or an [IPv6]
# literal), an optional userinfo and port. A regex rather than urlsplit(): on
# Python 3.11 urlsplit() goes through an lru_cache that a crawl's unique URLs
# only ever miss, and it was two thirds of the cost of making an entry.
_ABSOLUTE_HTTP_URL = re.compile(
    r"https?://(?:[^/?#@]*@)?(?:\[[0-9a-f:.]+\]|[^/?#@:\[\]]+)(?::[0-9]+)?(?=[/?#]|$)",
    re.ASCII | re.IGNORECASE,
)
# A "%" must start a %XX escape (RFC 3986, 2.1).
_BAD_PERCENT = re.compile(r"%(?![0-9a-f]{2})", re.ASCII | re.IGNORECASE)
# The common case, checked in one fullmatch: what safe_url_string() makes of a
# page's URL. A host of letters, digits, "." and "-", an optional port, then
# printable ASCII without space, "#", "[", "]" or a "%" outside a %XX escape.
# Everything it matches passes the full check (tests/test_writer.py holds it
# to that); anything else, an IRI or a fragment say, gets the full check. It
# halves the cost of a check, which publishing pays once per URL
# (bench/write.py). Explicit ranges: re.IGNORECASE makes sre twice as slow.
# Possessive quantifiers (*+, Python 3.11): no part can end in two places (each
# class excludes what follows it), so none needs backtracking, and sre is a
# third faster without keeping the means to.
_PATH_CHAR = r"[\x21\x22\x24\x26-\x5a\x5c\x5e-\x7e]"
_COMMON_LOC = re.compile(
    rf"https?://[A-Za-z0-9.-]++(?::[0-9]++)?+"
    rf"(?:/{_PATH_CHAR}*+(?:%[0-9A-Fa-f]{{2}}{_PATH_CHAR}*+)*+)?+"
)
# The lastmod forms crawler.lastmod writes (a date, or a UTC date-time without
# a fraction): for these, datetime.fromisoformat() is all that is left of
# lastmod_datetime()'s check (the range of each field; the zone is in range).
_COMMON_LASTMOD = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}\+00:00)?")
# The same, for many values joined with "\n" (which neither lets through): one
# fullmatch() for a batch, with no call per value.
_COMMON_LOCS = re.compile(rf"(?:{_COMMON_LOC.pattern})(?:\n(?:{_COMMON_LOC.pattern}))*+")
_COMMON_LASTMODS = re.compile(rf"(?:{_COMMON_LASTMOD.pattern})(?:\n(?:{_COMMON_LASTMOD.pattern}))*")
_PRIORITY_MIN = Decimal("0.0")
_PRIORITY_MAX = Decimal("1.0")


def check_loc(loc: str) -> None:
    """Raise ``ValueError`` unless ``loc`` may be published as a ``<loc>``.

    That is: an absolute ``http``/``https`` URL with a host, 12 to 2,047
    characters (limits.py), without whitespace or control characters, and
    without what makes ``xsd:anyURI`` (tLoc) fail in libxml2, the validator
    behind lxml and xmllint: a "%" that starts no %XX escape, "[" or "]" outside
    an IPv6 host, a second "#". Non-ASCII (an IRI) is allowed; the protocol
    accepts RFC 3987 IRIs and the file is UTF-8. Characters such as "<" or "{"
    are not URI characters either, but validators and search engines escape
    them rather than fail; the crawler publishes safe_url_string() results,
    which have none of these anyway.
    """
    if not isinstance(loc, str):
        raise ValueError(f"loc must be a str, not {type(loc).__name__}")
    if MIN_LOC_LENGTH <= len(loc) <= MAX_LOC_LENGTH and _COMMON_LOC.fullmatch(loc) is not None:
        return
    _check_loc_fully(loc)


def _check_loc_fully(loc: str) -> None:
    # check_loc() without its fast path; tests compare the two.
    if not MIN_LOC_LENGTH <= len(loc) <= MAX_LOC_LENGTH:
        raise ValueError(
            f"loc must be {MIN_LOC_LENGTH} to {MAX_LOC_LENGTH} characters long,"
            f" not {len(loc)}: {loc[:80]!r}"
        )
    if _FORBIDDEN_IN_LOC.search(loc):
        raise ValueError(f"loc contains whitespace or control characters: {loc[:80]!r}")
    authority = _ABSOLUTE_HTTP_URL.match(loc)
    if authority is None:
        raise ValueError(f"loc must be an absolute http(s) URL with a host: {loc[:80]!r}")
    rest = loc[authority.end() :]
    if "[" in rest or "]" in rest or rest.count("#") > 1 or _BAD_PERCENT.search(loc):
        raise ValueError(f"loc is not a valid URI (bad %-escape, [ ] or #): {loc[:80]!r}")


def check_lastmod(lastmod: str) -> None:
    """Raise ``ValueError`` unless ``lastmod`` may be published as a ``<lastmod>``
    (:func:`crawler.lastmod.lastmod_datetime` is the definition)."""
    if isinstance(lastmod, str) and _COMMON_LASTMOD.fullmatch(lastmod) is not None:
        datetime.fromisoformat(lastmod)  # raises ValueError ("2025-02-30")
    else:
        lastmod_datetime(lastmod)  # raises ValueError


class ChangeFreq(enum.Enum):
    """``<changefreq>`` values, as enumerated by ``sitemap.xsd`` (tChangeFreq)."""

    ALWAYS = "always"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    YEARLY = "yearly"
    NEVER = "never"


# init=False: the __init__ below checks and converts the values first, then sets
# each field once through its slot. The generated __init__ of a frozen dataclass
# sets fields with object.__setattr__(), and __post_init__ would set the converted
# ones again: that made an entry cost twice as much, paid once per published URL.
@dataclass(frozen=True, slots=True, init=False)
class SitemapEntry:
    """A page as it is published in a sitemap.

    ``loc`` is the real, safe URL (absolute ``http``/``https``, 12 to 2,047
    characters, no whitespace or control characters); ``lastmod`` a W3C datetime
    string as produced by :mod:`crawler.lastmod` (``YYYY-MM-DD`` or a date-time
    with seconds and a zone); ``priority`` between 0.0 and 1.0. A ``str``
    changefreq and an ``int``/``float``/``str`` priority are converted; anything
    invalid raises ``ValueError``.
    """

    loc: str
    lastmod: str | None = None
    changefreq: ChangeFreq | None = None
    priority: Decimal | None = None

    def __init__(
        self,
        loc: str,
        lastmod: str | None = None,
        changefreq: ChangeFreq | None = None,
        priority: Decimal | None = None,
    ) -> None:
        check_loc(loc)
        if lastmod is not None:
            check_lastmod(lastmod)
        if changefreq is not None:
            changefreq = self._checked_changefreq(changefreq)
        if priority is not None:
            priority = self._checked_priority(priority)
        _set_loc(self, loc)
        _set_lastmod(self, lastmod)
        _set_changefreq(self, changefreq)
        _set_priority(self, priority)

    @staticmethod
    def _checked_changefreq(value: object) -> ChangeFreq:
        return value if isinstance(value, ChangeFreq) else ChangeFreq(value)

    @staticmethod
    def _checked_priority(value: object) -> Decimal:
        if isinstance(value, bool):
            raise ValueError(f"priority must be a number, not {value!r}")
        try:
            # Through str() so that 0.1 (a float) becomes Decimal("0.1"), not
            # 0.1000000000000000055511151231257827...
            priority = value if isinstance(value, Decimal) else Decimal(str(value))
        except InvalidOperation:
            raise ValueError(f"priority must be a number, not {value!r}") from None
        if not priority.is_finite() or not _PRIORITY_MIN <= priority <= _PRIORITY_MAX:
            raise ValueError(f"priority must be between 0.0 and 1.0, not {value!r}")
        return priority


# The slots' own setters: they store a value without going through the frozen
# class's __setattr__ (which raises). Only SitemapEntry.__init__ uses them.
_set_loc = SitemapEntry.__dict__["loc"].__set__
_set_lastmod = SitemapEntry.__dict__["lastmod"].__set__
_set_changefreq = SitemapEntry.__dict__["changefreq"].__set__
_set_priority = SitemapEntry.__dict__["priority"].__set__


@dataclass(frozen=True, slots=True)
class EntryBatch:
    """Consecutive sitemap entries with one ``changefreq`` and ``priority``,
    checked together: the same rules, and the same ``ValueError`` for the first
    bad entry, as making a :class:`SitemapEntry` of each in turn.

    The common case (what ``_COMMON_LOC`` and ``_COMMON_LASTMOD`` match) is
    checked a list at a time: one regex match over the values joined with
    ``"\n"``, and ``datetime.fromisoformat`` through ``map()``, with no Python
    call per value. A batch with anything else (an IRI, a fragment, a zone other
    than UTC, a bad value) is checked entry by entry. ``utc`` tells that every
    lastmod is a date or a ``+00:00`` date-time without a fraction, which the
    writer may then compare as text.
    """

    locs: list[str]
    lastmods: list[str | None]
    changefreq: ChangeFreq | None = None
    priority: Decimal | None = None
    utc: bool = field(init=False, default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.locs) != len(self.lastmods):
            raise ValueError("an EntryBatch needs as many lastmods as locs")
        if self.changefreq is not None:
            _set_batch_changefreq(self, SitemapEntry._checked_changefreq(self.changefreq))
        if self.priority is not None:
            _set_batch_priority(self, SitemapEntry._checked_priority(self.priority))
        locs = self.locs
        present = [lastmod for lastmod in self.lastmods if lastmod is not None]
        try:
            locs_text, lastmods_text = "\n".join(locs), "\n".join(present)
            fast = (
                min(map(len, locs), default=MIN_LOC_LENGTH) >= MIN_LOC_LENGTH
                and max(map(len, locs), default=0) <= MAX_LOC_LENGTH
                # A "\n" inside a value would pass for a separator.
                and locs_text.count("\n") == len(locs) - 1
                and _COMMON_LOCS.fullmatch(locs_text) is not None
            )
            utc = not present or (
                lastmods_text.count("\n") == len(present) - 1
                and _COMMON_LASTMODS.fullmatch(lastmods_text) is not None
            )
            # maxlen=0: run fromisoformat over them (it raises for "2025-02-30"), keep nothing.
            deque(map(datetime.fromisoformat, present), maxlen=0)
        except (TypeError, ValueError):
            # Not a str, or a date that does not exist: the entry-by-entry check
            # below raises the error for the first such entry.
            fast = utc = False
        if not (fast and utc):
            for loc, lastmod in zip(locs, self.lastmods, strict=True):
                SitemapEntry(loc, lastmod)  # raises ValueError
        _set_batch_utc(self, utc)

    def __len__(self) -> int:
        return len(self.locs)

    def __iter__(self) -> Iterator[SitemapEntry]:
        changefreq, priority = self.changefreq, self.priority
        for loc, lastmod in zip(self.locs, self.lastmods, strict=True):
            yield SitemapEntry(loc, lastmod, changefreq, priority)


class EntryRows:
    """Sitemap entries from ``(loc, lastmod)`` rows, all with one ``changefreq``
    and ``priority``; one pass, as the rows (a database cursor) allow.

    Iterating gives one :class:`SitemapEntry` a row; :meth:`batches` gives
    :class:`EntryBatch` objects, which is how
    :class:`crawler.writer.SitemapSetWriter` reads them.
    """

    def __init__(
        self,
        rows: Iterable[tuple[str, str | None]],
        changefreq: ChangeFreq | None = None,
        priority: Decimal | None = None,
    ) -> None:
        self._rows = iter(rows)
        # Checked now, once, rather than with every entry.
        self.changefreq = (
            None if changefreq is None else SitemapEntry._checked_changefreq(changefreq)
        )
        self.priority = None if priority is None else SitemapEntry._checked_priority(priority)

    def __iter__(self) -> Iterator[SitemapEntry]:
        changefreq, priority = self.changefreq, self.priority
        for loc, lastmod in self._rows:
            yield SitemapEntry(loc, lastmod, changefreq, priority)

    def batches(self, size: int = 4096) -> Iterator[EntryBatch]:
        """The rows, ``size`` at a time, as checked batches."""
        while rows := list(islice(self._rows, size)):
            locs, lastmods = zip(*rows, strict=True)
            yield EntryBatch(list(locs), list(lastmods), self.changefreq, self.priority)


_set_batch_changefreq = EntryBatch.__dict__["changefreq"].__set__
_set_batch_priority = EntryBatch.__dict__["priority"].__set__
_set_batch_utc = EntryBatch.__dict__["utc"].__set__
