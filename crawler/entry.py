"""One ``<url>`` of a sitemap, as a read-only value, and many of them at once.

Modelled on ultimate-sitemap-parser's slotted page objects: the entry checks
itself once, when it is made, so the writer can render it without looking
again, and a bad value fails where it was produced rather than in a half-written
file.

An entry may carry Google's sitemap extensions: hreflang alternates
(:class:`Alternate`, written as ``<xhtml:link>``), image locs (``<image:image>``),
:class:`Video` and :class:`News` objects. They are checked like the rest (limits
from :mod:`crawler.limits`, the rules of Google's schemas in ``tests/xsd/``).

:class:`EntryBatch` holds consecutive entries as two lists (locs, lastmods) and
checks them together: publishing a million URLs, a Python object and a few
function calls per URL cost more than compressing the files at gzip level 6.
:class:`EntryRows` turns database rows into either form; it is what
:meth:`crawler.ledger.Ledger.listed_entries` returns. A row is ``(loc, lastmod)``
or ``(loc, lastmod, extras)``, ``extras`` being ``None`` (a plain entry, which
takes the batch path above) or the JSON text of the entry's extensions
(:func:`extras_json` writes it, :func:`entry_extras` reads it: the one place
that knows the format), for the few entries that have them, which are checked
and rendered one by one.

A row may also say where and how it is published (issue 15): the full row is
``(loc, lastmod, extras, section, changefreq, priority)`` (:data:`ROW_COLUMNS`),
and any prefix of two columns or more is a row too. ``section`` names the
section of the set the entry is written in (:func:`check_section`; ``None``:
the default section, whose files are named as before sections existed); rows
come ordered by section, the default section first, so that the ledger streams
them in one query (``ORDER BY section, loc``) and the writer starts a section's
files when the section changes. ``changefreq`` and ``priority`` are the row's
own (``"daily"``, ``"0.8"``), checked as a :class:`SitemapEntry`'s are (a bad
one refuses the set, naming the loc), or ``None`` for the set-wide values
:class:`EntryRows` is given. A batch whose rows all have ``None`` in the three
optional columns is checked and rendered as plain rows always were.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from itertools import groupby, islice
from typing import Any, TypedDict, TypeVar

from crawler.lastmod import lastmod_datetime
from crawler.limits import (
    MAX_IMAGES_PER_URL,
    MAX_LOC_LENGTH,
    MAX_VIDEO_DESCRIPTION_LENGTH,
    MAX_VIDEO_DURATION,
    MAX_VIDEO_TITLE_LENGTH,
    MIN_LOC_LENGTH,
    MIN_VIDEO_DURATION,
)

__all__ = [
    "Alternate",
    "ChangeFreq",
    "EntryBatch",
    "EntryRow",
    "EntryRows",
    "Extensions",
    "MAX_SECTION_LENGTH",
    "NEWS_SECTION",
    "News",
    "SitemapEntry",
    "ROW_COLUMNS",
    "Video",
    "check_lastmod",
    "check_loc",
    "check_section",
    "entry_extras",
    "extras_json",
]

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
# What XML 1.0 cannot hold at all, even escaped (its production "Char"): C0
# controls other than tab, LF and CR, lone surrogates (which UTF-8 cannot encode
# either), U+FFFE and U+FFFF. A title with one would make the file unreadable.
_NOT_XML_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# xhtml-link.xsd's hreflang: an ISO 639 language, an optional ISO 15924 script
# and an optional ISO 3166-1 alpha-2 (or UN M.49) region, or "x-default".
_HREFLANG = re.compile(
    r"x-default|[a-zA-Z]{2,3}(?:-[a-zA-Z]{4})?(?:-(?:[a-zA-Z]{2}|[0-9]{3}))?", re.ASCII
)
# sitemap-news.xsd's <news:language>: "an ISO 639 Language Code (either 2 or 3
# letters) ... Exception: For Chinese, please use zh-cn for Simplified Chinese or
# zh-tw for Traditional Chinese." Lowercase, as the schema's pattern has it.
_NEWS_LANGUAGE = re.compile(r"zh-cn|zh-tw|[a-z]{2,3}", re.ASCII)


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


def _check_url(value: object, what: str) -> None:
    # The extensions' URLs (image:loc, xhtml:link href, the video locs) are
    # xsd:anyURI like <loc>, and read back the same way: the same rules.
    try:
        check_loc(value)  # type: ignore[arg-type]  # check_loc() checks the type too
    except ValueError as exc:
        raise ValueError(f"{what} is not a valid URL: {exc}") from None


def _check_text(value: object, what: str, max_length: int | None = None) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str, not {type(value).__name__}")
    # Readers strip surrounding whitespace (ultimate-sitemap-parser, Scrapy): a
    # blank title is a missing one.
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    if max_length is not None and len(value) > max_length:
        raise ValueError(
            f"{what} must be at most {max_length} characters, not {len(value)}: {value[:80]!r}"
        )
    if _NOT_XML_CHAR.search(value):
        raise ValueError(f"{what} contains characters XML cannot hold: {value[:80]!r}")


def _check_date(value: object, what: str) -> None:
    # The extensions' dates are xsd:date or xsd:dateTime, as <lastmod> is.
    try:
        check_lastmod(value)  # type: ignore[arg-type]  # lastmod_datetime() checks the type
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a W3C datetime: {value!r} ({exc})") from None


def _check_yes_no(value: object, what: str) -> None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{what} must be True, False or None, not {value!r}")


@dataclass(frozen=True, slots=True)
class Alternate:
    """An hreflang alternate of a page: ``<xhtml:link rel="alternate"
    hreflang="..." href="..."/>``. ``hreflang`` is a language (``en``), with an
    optional script and region (``zh-Hant-TW``, ``en-GB``), or ``x-default``;
    ``href`` is checked as a ``<loc>`` is."""

    hreflang: str
    href: str

    def __post_init__(self) -> None:
        if not isinstance(self.hreflang, str) or _HREFLANG.fullmatch(self.hreflang) is None:
            raise ValueError(
                f"hreflang must be a language with an optional script and region"
                f" (en, en-GB, zh-Hant-TW) or x-default, not {self.hreflang!r}"
            )
        _check_url(self.href, "alternate href")


@dataclass(frozen=True, slots=True)
class Video:
    """A ``<video:video>`` of a page, as Google's video sitemap extension has it.

    ``thumbnail_loc``, ``title`` (100 characters at most) and ``description``
    (2,048 at most) are required, and one of ``content_loc`` (the video file)
    and ``player_loc`` (a player for it). ``duration`` is in whole seconds, 1 to
    28,800; ``publication_date`` and ``expiration_date`` are W3C datetimes as
    ``lastmod`` is; ``family_friendly`` and ``live`` are written as yes/no.
    """

    thumbnail_loc: str
    title: str
    description: str
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None
    publication_date: str | None = None
    expiration_date: str | None = None
    family_friendly: bool | None = None
    live: bool | None = None

    def __post_init__(self) -> None:
        _check_url(self.thumbnail_loc, "video thumbnail_loc")
        _check_text(self.title, "video title", MAX_VIDEO_TITLE_LENGTH)
        _check_text(self.description, "video description", MAX_VIDEO_DESCRIPTION_LENGTH)
        if self.content_loc is None and self.player_loc is None:
            raise ValueError(f"a video needs a content_loc or a player_loc: {self.title[:80]!r}")
        if self.content_loc is not None:
            _check_url(self.content_loc, "video content_loc")
        if self.player_loc is not None:
            _check_url(self.player_loc, "video player_loc")
        duration = self.duration
        if duration is not None and (
            not isinstance(duration, int)
            or isinstance(duration, bool)
            or not MIN_VIDEO_DURATION <= duration <= MAX_VIDEO_DURATION
        ):
            raise ValueError(
                f"video duration must be whole seconds, {MIN_VIDEO_DURATION} to"
                f" {MAX_VIDEO_DURATION}, not {duration!r}"
            )
        if self.publication_date is not None:
            _check_date(self.publication_date, "video publication_date")
        if self.expiration_date is not None:
            _check_date(self.expiration_date, "video expiration_date")
        _check_yes_no(self.family_friendly, "video family_friendly")
        _check_yes_no(self.live, "video live")


@dataclass(frozen=True, slots=True)
class News:
    """A ``<news:news>`` of an article, as Google News sitemaps have it: the
    publication's name and language (an ISO 639 code of 2 or 3 lowercase
    letters, or ``zh-cn``/``zh-tw``), the article's publication date (a W3C
    datetime) and its title."""

    publication_name: str
    language: str
    publication_date: str
    title: str

    def __post_init__(self) -> None:
        _check_text(self.publication_name, "news publication_name")
        if not isinstance(self.language, str) or _NEWS_LANGUAGE.fullmatch(self.language) is None:
            raise ValueError(
                "news language must be an ISO 639 code of 2 or 3 lowercase letters,"
                f" or zh-cn or zh-tw, not {self.language!r}"
            )
        _check_date(self.publication_date, "news publication_date")
        _check_text(self.title, "news title")


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

    The extensions, keyword-only: ``alternates`` (:class:`Alternate`), ``images``
    (image URLs, checked as locs, 1,000 at most), ``videos`` (:class:`Video`) and
    ``news`` (:class:`News`). Lists are kept as tuples.
    """

    loc: str
    lastmod: str | None = None
    changefreq: ChangeFreq | None = None
    priority: Decimal | None = None
    alternates: tuple[Alternate, ...] = field(default=(), kw_only=True)
    images: tuple[str, ...] = field(default=(), kw_only=True)
    videos: tuple[Video, ...] = field(default=(), kw_only=True)
    news: News | None = field(default=None, kw_only=True)

    def __init__(
        self,
        loc: str,
        lastmod: str | None = None,
        changefreq: ChangeFreq | None = None,
        priority: Decimal | None = None,
        *,
        alternates: Iterable[Alternate] = (),
        images: Iterable[str] = (),
        videos: Iterable[Video] = (),
        news: News | None = None,
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
        # Plain entries, nearly all of them, skip the checks below at the cost of
        # one test.
        if alternates or images or videos or news is not None:
            alternates, images, videos = _checked_extensions(alternates, images, videos, news)
        else:  # empty lists, None
            alternates = images = videos = ()
        _set_alternates(self, alternates)
        _set_images(self, images)
        _set_videos(self, videos)
        _set_news(self, news)

    @property
    def extended(self) -> bool:
        """Whether the entry has any extension."""
        return bool(self.alternates or self.images or self.videos or self.news is not None)

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


def _as_tuple(values: object, what: str) -> tuple[Any, ...]:
    # A str is iterable too: images="https://..." would be a tuple of characters.
    if isinstance(values, str | bytes):
        raise ValueError(f"{what} must be a sequence of values, not a {type(values).__name__}")
    try:
        return tuple(values)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{what} must be a sequence, not {type(values).__name__}") from None


def _checked_extensions(
    alternates: Iterable[Alternate],
    images: Iterable[str],
    videos: Iterable[Video],
    news: News | None,
) -> tuple[tuple[Alternate, ...], tuple[str, ...], tuple[Video, ...]]:
    # The value objects checked themselves when they were made: what is left
    # is that they are what they say, and the count of images.
    alternates_tuple = _as_tuple(alternates, "alternates")
    for alternate in alternates_tuple:
        if not isinstance(alternate, Alternate):
            raise ValueError(f"alternates must be Alternate objects, not {alternate!r}")
    images_tuple = _as_tuple(images, "images")
    if len(images_tuple) > MAX_IMAGES_PER_URL:
        raise ValueError(
            f"at most {MAX_IMAGES_PER_URL:,} images per URL, not {len(images_tuple):,}"
        )
    for image in images_tuple:
        _check_url(image, "image loc")
    videos_tuple = _as_tuple(videos, "videos")
    for video in videos_tuple:
        if not isinstance(video, Video):
            raise ValueError(f"videos must be Video objects, not {video!r}")
    if news is not None and not isinstance(news, News):
        raise ValueError(f"news must be a News object or None, not {news!r}")
    return alternates_tuple, images_tuple, videos_tuple


# The slots' own setters: they store a value without going through the frozen
# class's __setattr__ (which raises). Only SitemapEntry.__init__ uses them.
_set_loc = SitemapEntry.__dict__["loc"].__set__
_set_lastmod = SitemapEntry.__dict__["lastmod"].__set__
_set_changefreq = SitemapEntry.__dict__["changefreq"].__set__
_set_priority = SitemapEntry.__dict__["priority"].__set__
_set_alternates = SitemapEntry.__dict__["alternates"].__set__
_set_images = SitemapEntry.__dict__["images"].__set__
_set_videos = SitemapEntry.__dict__["videos"].__set__
_set_news = SitemapEntry.__dict__["news"].__set__


# -- the extensions as JSON (what the ledger stores) -------------------------------


class Extensions(TypedDict, total=False):
    """An entry's extensions, as :class:`SitemapEntry` takes them by keyword:
    ``SitemapEntry(loc, lastmod, **entry_extras(text))``."""

    alternates: tuple[Alternate, ...]
    images: tuple[str, ...]
    videos: tuple[Video, ...]
    news: News


_EXTRAS_KEYS: frozenset[str] = frozenset({"alternates", "images", "videos", "news"})
_VIDEO_KEYS: tuple[str, ...] = tuple(Video.__dataclass_fields__)
_VIDEO_REQUIRED: tuple[str, ...] = ("thumbnail_loc", "title", "description")
_NEWS_KEYS: tuple[str, ...] = tuple(News.__dataclass_fields__)


def extras_json(entry: SitemapEntry) -> str | None:
    """The extensions of ``entry`` as the JSON text :func:`entry_extras` reads,
    or ``None`` for an entry without any (store NULL: the plain, fast path).

    ``{"alternates": [[hreflang, href], ...], "images": [loc, ...],
    "videos": [{field: value, ...}, ...], "news": {field: value, ...}}``: each key
    only when the entry has some; video and news fields are named as the
    :class:`Video` and :class:`News` fields, a video's ``None`` fields left out.
    Compact and in a fixed order, so that an unchanged entry stores the same text.
    """
    if not entry.extended:
        return None
    extras: dict[str, Any] = {}
    if entry.alternates:
        extras["alternates"] = [[a.hreflang, a.href] for a in entry.alternates]
    if entry.images:
        extras["images"] = list(entry.images)
    if entry.videos:
        extras["videos"] = [
            {key: getattr(video, key) for key in _VIDEO_KEYS if getattr(video, key) is not None}
            for video in entry.videos
        ]
    if entry.news is not None:
        extras["news"] = {key: getattr(entry.news, key) for key in _NEWS_KEYS}
    return json.dumps(extras, ensure_ascii=False, separators=(",", ":"))


def _object(value: object, what: str, keys: Iterable[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object, not {value!r}"[:200])
    unknown = set(value) - set(keys)
    if unknown:
        raise ValueError(f"{what} has unknown keys: {', '.join(sorted(map(str, unknown)))}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a JSON array, not {value!r}"[:200])
    return value


def entry_extras(extras: str | None) -> Extensions:
    """The extensions in ``extras`` (:func:`extras_json`'s format), checked, as
    keyword arguments of :class:`SitemapEntry`; ``{}`` for ``None``.

    Anything wrong (not JSON, an unknown key, a value of the wrong type, a value
    the value objects refuse) raises ``ValueError`` saying what.
    """
    if extras is None:
        return {}
    if not isinstance(extras, str):
        raise ValueError(f"extras must be JSON text or None, not {type(extras).__name__}")
    try:
        data = json.loads(extras)
    except ValueError as exc:  # json.JSONDecodeError, RecursionError aside
        raise ValueError(f"extras is not JSON: {exc}") from None
    data = _object(data, "extras", _EXTRAS_KEYS)
    result: Extensions = {}
    if "alternates" in data:
        alternates = []
        for pair in _list(data["alternates"], "extras alternates"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError(f"an alternate must be [hreflang, href], not {pair!r}"[:200])
            alternates.append(Alternate(pair[0], pair[1]))
        result["alternates"] = tuple(alternates)
    if "images" in data:
        result["images"] = tuple(_list(data["images"], "extras images"))
    if "videos" in data:
        videos = []
        for video in _list(data["videos"], "extras videos"):
            fields = _object(video, "a video", _VIDEO_KEYS)
            missing = [key for key in _VIDEO_REQUIRED if key not in fields]
            if missing:
                raise ValueError(f"a video lacks {', '.join(missing)}")
            videos.append(Video(**fields))
        result["videos"] = tuple(videos)
    if "news" in data:
        news = _object(data["news"], "extras news", _NEWS_KEYS)
        missing = [key for key in _NEWS_KEYS if key not in news]
        if missing:
            raise ValueError(f"extras news lacks {', '.join(missing)}")
        result["news"] = News(**news)
    # The image locs (plain strings) and their count, as SitemapEntry checks them.
    _checked_extensions((), result.get("images", ()), (), None)
    return result


# -- sections and the rows' own changefreq and priority -----------------------------

#: The longest section name (:func:`check_section`).
MAX_SECTION_LENGTH = 40
#: The section name the news sitemaps' files have (``sitemap-news-NNNNN-<h>``):
#: no other section may take it.
NEWS_SECTION = "news"
# Starts with a letter: a name of digits would make "sitemap-NAME-NNNNN-<h>"
# look like the start of a default section's "sitemap-NNNNN-<h>".
_SECTION_NAME = re.compile(rf"[a-z][a-z0-9-]{{0,{MAX_SECTION_LENGTH - 1}}}", re.ASCII)


def check_section(section: str) -> None:
    """Raise ``ValueError`` unless ``section`` may name a section of a sitemap set.

    That is 1 to 40 characters of ``a-z``, ``0-9`` and ``-``, the first a letter,
    and not ``news`` (the news sitemaps' name). The name becomes part of the
    section's file names (``sitemap-NAME-NNNNN-<h>.xml.gz``), hence the narrow
    alphabet: no path separator, no dot, no case to fold, and nothing that could
    pass for the number of a default section's file.
    """
    if not isinstance(section, str) or _SECTION_NAME.fullmatch(section) is None:
        raise ValueError(
            f"a section name must be 1 to {MAX_SECTION_LENGTH} characters of a-z, 0-9 and '-',"
            f" the first a letter, not {section!r:.80}"
        )
    if section == NEWS_SECTION:
        raise ValueError(f"the section name {NEWS_SECTION!r} is reserved for the news sitemaps")


def _row_section(section: object, loc: object) -> None:
    try:
        check_section(section)  # type: ignore[arg-type]  # check_section() checks the type too
    except ValueError as exc:
        raise ValueError(f"bad section of {str(loc)[:80]!r}: {exc}") from None


# A ledger's rows carry few distinct values (a rule's), each checked once. typed:
# else True, 1 and 1.0 would share an entry, and a bool priority is refused.
_cached_changefreq = functools.lru_cache(maxsize=256, typed=True)(SitemapEntry._checked_changefreq)
_cached_priority = functools.lru_cache(maxsize=256, typed=True)(SitemapEntry._checked_priority)

_T = TypeVar("_T")


def _row_value(
    value: object,
    loc: object,
    what: str,
    cached: Callable[[object], _T],
    check: Callable[[object], _T],
) -> _T:
    """A row's own changefreq or priority, checked; ``ValueError`` naming the loc."""
    try:
        try:
            return cached(value)
        except TypeError:  # unhashable: checked without the cache
            return check(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad {what} of {str(loc)[:80]!r}: {exc}") from None


def _row_changefreq(value: object, loc: object) -> ChangeFreq:
    return _row_value(
        value, loc, "changefreq", _cached_changefreq, SitemapEntry._checked_changefreq
    )


def _row_priority(value: object, loc: object) -> Decimal:
    return _row_value(value, loc, "priority", _cached_priority, SitemapEntry._checked_priority)


@dataclass(frozen=True, slots=True)
class EntryBatch:
    """Consecutive sitemap entries of one section, checked together: the same
    rules, and the same ``ValueError`` for the first bad entry, as making a
    :class:`SitemapEntry` of each in turn.

    The common case (what ``_COMMON_LOC`` and ``_COMMON_LASTMOD`` match) is
    checked a list at a time: one regex match over the values joined with
    ``"\n"``, and ``datetime.fromisoformat`` through ``map()``, with no Python
    call per value. A batch with anything else (an IRI, a fragment, a zone other
    than UTC, a bad value) is checked entry by entry. ``utc`` tells that every
    lastmod is a date or a ``+00:00`` date-time without a fraction, which the
    writer may then compare as text.

    ``extras``, when given, holds each entry's extensions as JSON text
    (:func:`entry_extras`) or ``None``. The entries that have some are made into
    :class:`SitemapEntry` objects, checked, and kept in ``extended`` by their
    position; a bad one raises ``ValueError`` as a bad loc does, naming the loc.

    ``section``: the section the entries are written in (:func:`check_section`;
    ``None``, the default section). ``changefreq`` and ``priority`` are every
    entry's, unless ``row_changefreqs`` or ``row_priorities`` give an entry its
    own (``None``: the batch's): checked as :class:`SitemapEntry` checks them (a
    :class:`ChangeFreq` value, a number from 0.0 to 1.0 such as ``"0.8"``), a bad
    one raising ``ValueError`` that names the loc. The values entries are written
    with are then in ``changefreqs`` and ``priorities``, one per entry, or those
    are ``None`` when no entry has its own (the batch's for all).
    """

    locs: list[str]
    lastmods: list[str | None]
    changefreq: ChangeFreq | None = None
    priority: Decimal | None = None
    extras: list[str | None] | None = None
    section: str | None = None
    row_changefreqs: Sequence[object] | None = field(default=None, repr=False)
    row_priorities: Sequence[object] | None = field(default=None, repr=False)
    utc: bool = field(init=False, default=False, repr=False, compare=False)
    extended: dict[int, SitemapEntry] = field(
        init=False, default_factory=dict, repr=False, compare=False
    )
    changefreqs: list[ChangeFreq | None] | None = field(
        init=False, default=None, repr=False, compare=False
    )
    priorities: list[Decimal | None] | None = field(
        init=False, default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        count = len(self.locs)
        if len(self.lastmods) != count:
            raise ValueError("an EntryBatch needs as many lastmods as locs")
        extras = self.extras
        if extras is not None and len(extras) != count:
            raise ValueError("an EntryBatch needs as many extras as locs")
        row_changefreqs, row_priorities = self.row_changefreqs, self.row_priorities
        if row_changefreqs is not None and len(row_changefreqs) != count:
            raise ValueError("an EntryBatch needs as many row_changefreqs as locs")
        if row_priorities is not None and len(row_priorities) != count:
            raise ValueError("an EntryBatch needs as many row_priorities as locs")
        if self.changefreq is not None:
            _set_batch_changefreq(self, SitemapEntry._checked_changefreq(self.changefreq))
        if self.priority is not None:
            _set_batch_priority(self, SitemapEntry._checked_priority(self.priority))
        if self.section is not None and count:
            _row_section(self.section, self.locs[0])
        own = row_changefreqs is not None or row_priorities is not None
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
            if own and fast and utc:
                # Every loc and lastmod is good: the rows' own values, in one go.
                _set_batch_changefreqs(
                    self, _own_values(row_changefreqs, self.changefreq, _cached_changefreq)
                )
                _set_batch_priorities(
                    self, _own_values(row_priorities, self.priority, _cached_priority)
                )
        except (TypeError, ValueError):
            # Not a str, a date that does not exist, a bad changefreq or priority:
            # the entry-by-entry check below raises the error for the first such entry.
            fast = utc = False
        if not (fast and utc):
            if extras is None and not own:
                # What SitemapEntry(loc, lastmod) checks, in its order, with its
                # messages, without making the entry (whose extension fields cost a
                # third more to set than the check of a common loc).
                for loc, lastmod in zip(locs, self.lastmods, strict=True):
                    check_loc(loc)  # raises ValueError
                    if lastmod is not None:
                        check_lastmod(lastmod)
            else:
                self._check_rows()
        elif extras is not None:
            # Every loc, lastmod and value is good: the extras are all that can fail.
            changefreqs, priorities = self.changefreqs, self.priorities
            for i, text in enumerate(extras):
                if text is not None:
                    self._extend(
                        i,
                        _row_entry(locs[i], self.lastmods[i], None, None, text),
                        self.changefreq if changefreqs is None else changefreqs[i],
                        self.priority if priorities is None else priorities[i],
                    )
        _set_batch_utc(self, utc)

    def _check_rows(self) -> None:
        # Row by row, in order, so that the first bad row raises, whatever is bad
        # in it: loc, lastmod, changefreq, priority, extras (as EntryRows' rows
        # are checked when iterated).
        extras, row_changefreqs, row_priorities = (
            self.extras,
            self.row_changefreqs,
            self.row_priorities,
        )
        count = len(self.locs)
        changefreqs = None if row_changefreqs is None else [self.changefreq] * count
        priorities = None if row_priorities is None else [self.priority] * count
        for i, (loc, lastmod) in enumerate(zip(self.locs, self.lastmods, strict=True)):
            check_loc(loc)
            if lastmod is not None:
                check_lastmod(lastmod)
            changefreq, priority = self.changefreq, self.priority
            if changefreqs is not None and row_changefreqs is not None:
                value = row_changefreqs[i]
                if value is not None:
                    changefreq = changefreqs[i] = _row_changefreq(value, loc)
            if priorities is not None and row_priorities is not None:
                value = row_priorities[i]
                if value is not None:
                    priority = priorities[i] = _row_priority(value, loc)
            text = None if extras is None else extras[i]
            if text is not None:
                self._extend(i, _row_entry(loc, lastmod, None, None, text), changefreq, priority)
        _set_batch_changefreqs(self, changefreqs)
        _set_batch_priorities(self, priorities)

    def _extend(
        self, i: int, entry: SitemapEntry, changefreq: ChangeFreq | None, priority: Decimal | None
    ) -> None:
        # Checked without changefreq and priority, which are checked already;
        # the entry the writer renders has them.
        if entry.extended:
            self.extended[i] = SitemapEntry(
                entry.loc,
                entry.lastmod,
                changefreq,
                priority,
                alternates=entry.alternates,
                images=entry.images,
                videos=entry.videos,
                news=entry.news,
            )

    def __len__(self) -> int:
        return len(self.locs)

    def __iter__(self) -> Iterator[SitemapEntry]:
        count, extended = len(self.locs), self.extended
        changefreqs = self.changefreqs or [self.changefreq] * count
        priorities = self.priorities or [self.priority] * count
        for i, (loc, lastmod, changefreq, priority) in enumerate(
            zip(self.locs, self.lastmods, changefreqs, priorities, strict=True)
        ):
            if i in extended:
                yield extended[i]
            else:
                yield SitemapEntry(loc, lastmod, changefreq, priority)


def _own_values(
    values: Sequence[object] | None, default: _T | None, check: Callable[[object], _T]
) -> list[_T | None] | None:
    # The values entries are written with: a row's own (checked), else the default.
    if values is None:
        return None
    return [default if value is None else check(value) for value in values]


def _row_entry(
    loc: str,
    lastmod: str | None,
    changefreq: ChangeFreq | None,
    priority: Decimal | None,
    extras: str,
) -> SitemapEntry:
    """The entry of a row with extras. The loc's and lastmod's own errors come
    first, with SitemapEntry's messages; a bad extension's says whose it is."""
    check_loc(loc)
    if lastmod is not None:
        check_lastmod(lastmod)
    try:
        return SitemapEntry(loc, lastmod, changefreq, priority, **entry_extras(extras))
    except ValueError as exc:
        raise ValueError(f"bad extras of {loc[:80]!r}: {exc}") from None


#: A row of :class:`EntryRows`: ``(loc, lastmod, extras, section, changefreq,
#: priority)``, or its first 2 to 5 columns (the others ``None``). ``extras``: the
#: JSON text of :func:`extras_json`; ``section``: a name (:func:`check_section`),
#: ``None`` for the default section; ``changefreq``: a :class:`ChangeFreq` value
#: (``"daily"``); ``priority``: a decimal string (``"0.8"``). ``None`` anywhere
#: but in ``loc``: none (``changefreq``, ``priority``: the set-wide value).
EntryRow = (
    tuple[str, str | None]
    | tuple[str, str | None, str | None]
    | tuple[str, str | None, str | None, str | None]
    | tuple[str, str | None, str | None, str | None, str | None]
    | tuple[str, str | None, str | None, str | None, str | None, str | None]
)
#: The columns of an :data:`EntryRow`, in their order.
ROW_COLUMNS = ("loc", "lastmod", "extras", "section", "changefreq", "priority")
_ROW_SHAPE = (
    "entry rows must be (loc, lastmod, extras, section, changefreq, priority) tuples,"
    " or their first 2 to 5 columns, all rows alike"
)


class EntryRows:
    """Sitemap entries from database rows (:data:`EntryRow`): ``(loc, lastmod,
    extras, section, changefreq, priority)``, or the first 2 to 5 of those
    columns; one pass, as the rows (a database cursor) allow.

    ``changefreq`` and ``priority`` are the set-wide values, for the rows whose
    own are ``None`` (or that have no such column). Rows with a ``section`` must
    come together, the default section's (``None``) first, each section's rows
    in publishing order: ``ORDER BY section, loc`` in SQLite, where NULL sorts
    first. (The writer refuses a section that comes back.)

    Iterating gives one :class:`SitemapEntry` a row (a section is checked but not
    kept: an entry does not know where it is written); :meth:`batches` gives
    :class:`EntryBatch` objects, each of one section, which is how
    :class:`crawler.writer.SitemapSetWriter` reads them.
    """

    def __init__(
        self,
        rows: Iterable[EntryRow],
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
        default_changefreq, default_priority = self.changefreq, self.priority
        section: object = None
        rows: Iterator[tuple[Any, ...]] = self._rows  # EntryRow's shapes, told apart by length
        for row in rows:
            width = len(row)
            if width == 2 or width == 3 and row[2] is None:
                yield SitemapEntry(row[0], row[1], default_changefreq, default_priority)
                continue
            if not 3 <= width <= 6:
                raise ValueError(_ROW_SHAPE)
            loc, lastmod, extras = row[0], row[1], row[2]
            if width > 3 and row[3] != section:
                section = row[3]
                if section is not None:
                    _row_section(section, loc)
            own_changefreq = row[4] if width > 4 else None
            own_priority = row[5] if width > 5 else None
            if own_changefreq is None and own_priority is None:
                changefreq, priority = default_changefreq, default_priority
            else:
                # The row's errors in its order: loc, lastmod, then the values.
                check_loc(loc)
                if lastmod is not None:
                    check_lastmod(lastmod)
                changefreq = (
                    default_changefreq
                    if own_changefreq is None
                    else _row_changefreq(own_changefreq, loc)
                )
                priority = (
                    default_priority if own_priority is None else _row_priority(own_priority, loc)
                )
            if extras is None:
                yield SitemapEntry(loc, lastmod, changefreq, priority)
            else:
                yield _row_entry(loc, lastmod, changefreq, priority, extras)

    def batches(self, size: int = 4096) -> Iterator[EntryBatch]:
        """The rows, up to ``size`` at a time, as checked batches; a batch ends
        where the section changes."""
        while rows := list(islice(self._rows, size)):
            try:
                columns = list(zip(*rows, strict=True))
            except ValueError:  # rows of different lengths
                raise ValueError(_ROW_SHAPE) from None
            if not 2 <= len(columns) <= 6:
                raise ValueError(_ROW_SHAPE)
            if len(columns) < 4 or columns[3].count(columns[3][0]) == len(rows):
                yield self._batch(columns)
                continue
            # Where the section changes, a batch ends.
            start = 0
            for _, run in groupby(columns[3]):
                stop = start + sum(1 for _ in run)
                yield self._batch([column[start:stop] for column in columns])
                start = stop

    def _batch(self, columns: list[tuple[Any, ...]]) -> EntryBatch:
        # A column that is missing or all None is none at all: a batch of plain
        # rows takes the path it always did.
        count = len(columns[0])

        def column(i: int) -> list[Any] | None:
            if len(columns) <= i or columns[i].count(None) == count:
                return None
            return list(columns[i])

        return EntryBatch(
            list(columns[0]),
            list(columns[1]),
            self.changefreq,
            self.priority,
            column(2),
            columns[3][0] if len(columns) > 3 else None,
            column(4),
            column(5),
        )


_set_batch_changefreq = EntryBatch.__dict__["changefreq"].__set__
_set_batch_priority = EntryBatch.__dict__["priority"].__set__
_set_batch_utc = EntryBatch.__dict__["utc"].__set__
_set_batch_changefreqs = EntryBatch.__dict__["changefreqs"].__set__
_set_batch_priorities = EntryBatch.__dict__["priorities"].__set__
