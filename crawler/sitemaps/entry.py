"""One ``<url>`` of a sitemap, as a read-only value.

The entry checks itself once, when it is made (as ultimate-sitemap-parser's slotted
page objects do), so the writer renders it without looking again, and a bad value fails
where it was produced rather than in a half-written file. Google's extensions
(:class:`Alternate`, image locs, :class:`Video`, :class:`News`) are checked likewise
(limits from :mod:`crawler.sitemaps.limits`, Google's schemas in ``tests/xsd/``). Many
entries at once: :mod:`crawler.sitemaps.entryrows`; their JSON: :mod:`.extras`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from crawler.core.lastmod import lastmod_datetime
from crawler.sitemaps.limits import (
    MAX_IMAGES_PER_URL,
    MAX_LOC_LENGTH,
    MAX_VIDEO_DESCRIPTION_LENGTH,
    MAX_VIDEO_DURATION,
    MAX_VIDEO_TITLE_LENGTH,
    MIN_LOC_LENGTH,
    MIN_VIDEO_DURATION,
)

__all__ = ["Alternate", "ChangeFreq", "News", "SitemapEntry", "Video", "check_lastmod", "check_loc"]

# Whitespace (NBSP included) and controls are never part of a URL, XML 1.0 cannot
# hold most of them, and readers strip them around <loc>: refusing them lets the
# writer escape only &, < and > and have the URL read back unchanged.
_FORBIDDEN_IN_LOC = re.compile(
    "[\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ud800-\udfff\ufffe\uffff]"
)
# Scheme, then an authority with a non-empty host and optional userinfo and port. Not
# urlsplit(): its lru_cache, which unique URLs only miss, was 2/3 of an entry's cost.
_ABSOLUTE_HTTP_URL = re.compile(
    r"https?://(?:[^/?#@]*@)?(?:\[[0-9a-f:.]+\]|[^/?#@:\[\]]+)(?::[0-9]+)?(?=[/?#]|$)",
    re.ASCII | re.IGNORECASE,
)
# A "%" must start a %XX escape (RFC 3986, 2.1).
_BAD_PERCENT = re.compile(r"%(?![0-9a-f]{2})", re.ASCII | re.IGNORECASE)
# The common case in one fast fullmatch (what safe_url_string() makes of a page's URL):
# everything it matches passes the full check (tests/test_writer.py holds it to that).
# Explicit ranges, not re.IGNORECASE, and possessive quantifiers: no part can end in
# two places, so sre keeps no backtracking points.
_PATH_CHAR = r"[\x21\x22\x24\x26-\x5a\x5c\x5e-\x7e]"
_COMMON_LOC = re.compile(
    rf"https?://[A-Za-z0-9.-]++(?::[0-9]++)?+"
    rf"(?:/{_PATH_CHAR}*+(?:%[0-9A-Fa-f]{{2}}{_PATH_CHAR}*+)*+)?+"
)
# The lastmod forms crawler.core.lastmod writes: for these, datetime.fromisoformat()
# is all that is left of lastmod_datetime()'s check.
_COMMON_LASTMOD = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}\+00:00)?")
#: Many common locs (or lastmods), one a line (which neither lets through): a batch
#: checked in one fullmatch() (:class:`crawler.sitemaps.entryrows.EntryBatch`).
COMMON_LOCS = re.compile(rf"(?:{_COMMON_LOC.pattern})(?:\n(?:{_COMMON_LOC.pattern}))*+")
COMMON_LASTMODS = re.compile(rf"(?:{_COMMON_LASTMOD.pattern})(?:\n(?:{_COMMON_LASTMOD.pattern}))*")
_PRIORITY_MIN = Decimal("0.0")
_PRIORITY_MAX = Decimal("1.0")
# What XML 1.0 cannot hold at all, even escaped (its production "Char").
NOT_XML_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# xhtml-link.xsd's hreflang: an ISO 639 language, an optional ISO 15924 script
# and an optional ISO 3166-1 alpha-2 (or UN M.49) region, or "x-default".
_HREFLANG = re.compile(
    r"x-default|[a-zA-Z]{2,3}(?:-[a-zA-Z]{4})?(?:-(?:[a-zA-Z]{2}|[0-9]{3}))?", re.ASCII
)
# sitemap-news.xsd's <news:language>: ISO 639, 2 or 3 letters, or zh-cn / zh-tw.
_NEWS_LANGUAGE = re.compile(r"zh-cn|zh-tw|[a-z]{2,3}", re.ASCII)


def check_loc(loc: str, shortest: int = MIN_LOC_LENGTH) -> None:
    """Raise ``ValueError`` unless ``loc`` may be published as a ``<loc>``: an absolute
    http(s) URL with a host, 12 (``shortest``) to 2,047 characters, without whitespace or controls,
    nor what makes libxml2's ``xsd:anyURI`` fail (a "%" that starts no %XX escape, "["
    or "]" outside an IPv6 host, a second "#"). An IRI (non-ASCII) is allowed."""
    if not isinstance(loc, str):
        raise ValueError(f"loc must be a str, not {type(loc).__name__}")
    if shortest <= len(loc) <= MAX_LOC_LENGTH and _COMMON_LOC.fullmatch(loc) is not None:
        return
    _check_loc_fully(loc, shortest)


def _check_loc_fully(loc: str, shortest: int = MIN_LOC_LENGTH) -> None:
    # check_loc() without its fast path; tests compare the two.
    if not shortest <= len(loc) <= MAX_LOC_LENGTH:
        raise ValueError(
            f"loc must be {shortest} to {MAX_LOC_LENGTH} characters long,"
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
    (:func:`crawler.core.lastmod.lastmod_datetime` is the definition)."""
    if isinstance(lastmod, str) and _COMMON_LASTMOD.fullmatch(lastmod) is not None:
        datetime.fromisoformat(lastmod)  # raises ValueError ("2025-02-30")
    else:
        lastmod_datetime(lastmod)  # raises ValueError


def _check_url(value: object, what: str, shortest: int = MIN_LOC_LENGTH) -> None:
    # The extensions' URLs (image:loc, xhtml:link href, the video locs) are
    # xsd:anyURI like <loc>, and read back the same way: the same rules.
    try:
        check_loc(value, shortest)  # type: ignore[arg-type]  # check_loc() checks the type too
    except ValueError as exc:
        raise ValueError(f"{what} is not a valid URL: {exc}") from None


def _check_text(value: object, what: str, max_length: int | None = None) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str, not {type(value).__name__}")
    # Readers strip surrounding whitespace: a blank title is a missing one.
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    if max_length is not None and len(value) > max_length:
        raise ValueError(
            f"{what} must be at most {max_length} characters, not {len(value)}: {value[:80]!r}"
        )
    if NOT_XML_CHAR.search(value):
        raise ValueError(f"{what} contains characters XML cannot hold: {value[:80]!r}")


def _check_date(value: object, what: str) -> None:
    # The extensions' dates are xsd:date or xsd:dateTime, as <lastmod> is.
    try:
        check_lastmod(value)  # type: ignore[arg-type]  # lastmod_datetime() checks the type
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a W3C datetime: {value!r} ({exc})") from None


@dataclass(frozen=True, slots=True)
class Alternate:
    """An hreflang alternate of a page (``<xhtml:link rel="alternate" ...>``): a language
    with an optional script and region (``zh-Hant-TW``), or ``x-default``; an href."""

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
class VideoFields:
    """The fields of Google's ``<video:video>``, any of them possibly absent (as a page
    gives them): :class:`Video` is the checked, writable form."""

    thumbnail_loc: str | None = None
    title: str | None = None
    description: str | None = None
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None
    publication_date: str | None = None
    expiration_date: str | None = None
    family_friendly: bool | None = None
    live: bool | None = None


@dataclass(frozen=True, slots=True)
class Video(VideoFields):
    """A ``<video:video>`` of a page (Google's extension): a thumbnail, title and
    description, and a ``content_loc`` (the file) or a ``player_loc``; ``duration`` in
    whole seconds; dates as ``lastmod``; ``family_friendly`` and ``live`` yes/no."""

    thumbnail_loc: str
    title: str
    description: str

    def __post_init__(self) -> None:
        _check_url(self.thumbnail_loc, "video thumbnail_loc")
        _check_text(self.title, "video title", MAX_VIDEO_TITLE_LENGTH)
        _check_text(self.description, "video description", MAX_VIDEO_DESCRIPTION_LENGTH)
        if self.content_loc is None and self.player_loc is None:
            raise ValueError(f"a video needs a content_loc or a player_loc: {self.title[:80]!r}")
        for name in ("content_loc", "player_loc"):
            if getattr(self, name) is not None:
                _check_url(getattr(self, name), f"video {name}")
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
        for name in ("publication_date", "expiration_date"):
            if getattr(self, name) is not None:
                _check_date(getattr(self, name), f"video {name}")
        for name in ("family_friendly", "live"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"video {name} must be True, False or None, not {value!r}")


@dataclass(frozen=True, slots=True)
class News:
    """A ``<news:news>`` of an article (Google News): the publication's name and
    language, the article's publication date and title."""

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


# init=False: the __init__ below sets each field once through its slot; a frozen
# dataclass's own (object.__setattr__, then __post_init__) made an entry cost twice.
@dataclass(frozen=True, slots=True, init=False)
class SitemapEntry:
    """A page as it is published in a sitemap: ``loc`` (:func:`check_loc`), ``lastmod``
    (:func:`check_lastmod`), ``changefreq`` (a ``str`` converted) and ``priority`` (0.0
    to 1.0; a number or ``str`` converted); invalid: ``ValueError``. The extensions,
    keyword-only, kept as tuples: ``alternates``, ``images`` (checked as locs, 1,000
    at most), ``videos``, ``news``.
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


def _as_tuple(values: object, what: str, kind: type = object) -> tuple[Any, ...]:
    # A str is iterable too: images="https://..." would be a tuple of characters.
    if isinstance(values, str | bytes):
        raise ValueError(f"{what} must be a sequence of values, not a {type(values).__name__}")
    try:
        found: tuple[Any, ...] = tuple(values)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{what} must be a sequence, not {type(values).__name__}") from None
    for value in found:
        if not isinstance(value, kind):
            raise ValueError(f"{what} must be {kind.__name__} objects, not {value!r}")
    return found


def _checked_extensions(
    alternates: Iterable[Alternate],
    images: Iterable[str],
    videos: Iterable[Video],
    news: News | None,
) -> tuple[tuple[Alternate, ...], tuple[str, ...], tuple[Video, ...]]:
    # The value objects checked themselves: what is left is their types, and the images.
    alternates_tuple = _as_tuple(alternates, "alternates", Alternate)
    images_tuple = _as_tuple(images, "images")
    if len(images_tuple) > MAX_IMAGES_PER_URL:
        raise ValueError(
            f"at most {MAX_IMAGES_PER_URL:,} images per URL, not {len(images_tuple):,}"
        )
    for image in images_tuple:
        _check_url(image, "image loc")
    videos_tuple = _as_tuple(videos, "videos", Video)
    if news is not None and not isinstance(news, News):
        raise ValueError(f"news must be a News object or None, not {news!r}")
    return alternates_tuple, images_tuple, videos_tuple


# The slots' own setters, past the frozen class's __setattr__ (SitemapEntry.__init__).
_set_loc = SitemapEntry.__dict__["loc"].__set__
_set_lastmod = SitemapEntry.__dict__["lastmod"].__set__
_set_changefreq = SitemapEntry.__dict__["changefreq"].__set__
_set_priority = SitemapEntry.__dict__["priority"].__set__
_set_alternates = SitemapEntry.__dict__["alternates"].__set__
_set_images = SitemapEntry.__dict__["images"].__set__
_set_videos = SitemapEntry.__dict__["videos"].__set__
_set_news = SitemapEntry.__dict__["news"].__set__
