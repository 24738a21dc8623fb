"""One ``<url>`` of a sitemap, as a read-only value.

Modelled on ultimate-sitemap-parser's slotted page objects: the entry checks
itself once, when it is made, so the writer can render it without looking
again, and a bad value fails where it was produced rather than in a half-written
file.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from crawler.lastmod import lastmod_datetime
from crawler.limits import MAX_LOC_LENGTH, MIN_LOC_LENGTH

__all__ = ["ChangeFreq", "SitemapEntry", "check_loc"]

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


class ChangeFreq(enum.Enum):
    """``<changefreq>`` values, as enumerated by ``sitemap.xsd`` (tChangeFreq)."""

    ALWAYS = "always"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    YEARLY = "yearly"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
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

    def __post_init__(self) -> None:
        check_loc(self.loc)
        if self.lastmod is not None:
            lastmod_datetime(self.lastmod)  # raises ValueError
        if self.changefreq is not None and not isinstance(self.changefreq, ChangeFreq):
            # object.__setattr__: the documented way to set a field of a frozen
            # dataclass from __post_init__.
            object.__setattr__(self, "changefreq", ChangeFreq(self.changefreq))
        if self.priority is not None:
            object.__setattr__(self, "priority", self._checked_priority(self.priority))

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
