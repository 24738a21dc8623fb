"""Where a page's ``<lastmod>`` comes from, and what a valid one looks like.

Three sources, all turned into the one form the sitemap files carry:

* the HTTP ``Last-Modified`` header (:func:`http_date_to_w3c`), in any of the
  three date formats of RFC 9110, section 5.6.7, clamped to the ``Date`` header;
* page metadata, ``<meta property="article:modified_time">`` /
  ``og:updated_time`` and JSON-LD ``dateModified`` (:func:`lastmod_from_page`),
  parsed by :func:`w3c_datetime`;
* nothing: a page that gives no date gets no ``<lastmod>``. Google ignores a
  lastmod that is not accurate, so we never stamp "now" on a page.

Bad data is a value, not a crash: every parser here returns ``None`` for a
missing or malformed date and never raises (as Scrapy's ``rfc1123_to_epoch``).

:func:`lastmod_datetime` is the strict check used for a value that is about to be
written: the intersection of the W3C Datetime note (which requires a time zone on
a time) and the XSD's ``xsd:date | xsd:dateTime`` (which requires seconds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

__all__ = [
    "http_date_to_w3c",
    "lastmod_datetime",
    "lastmod_from_page",
    "w3c_datetime",
]

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}

# RFC 9110, 5.6.7. Field names and day names are case-sensitive in the grammar,
# but the same section asks recipients "to be robust in parsing timestamps", so
# case is ignored, the day name of an IMF-fixdate is optional (RFC 5322 allows
# that), a one-digit day and a four-digit RFC 850 year are accepted, and "UTC"
# is taken for "GMT". The day name is redundant and is not checked against the
# date. re.ASCII: \d must not match other scripts' digits.
_TIME = r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})"
_MONTH = r"(?P<month>[a-z]{3})"
_IMF_FIXDATE = re.compile(
    r"(?:(?:mon|tue|wed|thu|fri|sat|sun),\s*)?"
    rf"(?P<day>\d{{1,2}}) {_MONTH} (?P<year>\d{{4}}) {_TIME} (?:gmt|utc)",
    re.ASCII | re.IGNORECASE,
)
_RFC850_DATE = re.compile(
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday), "
    rf"(?P<day>\d{{2}})-{_MONTH}-(?P<year>\d{{2}}|\d{{4}}) {_TIME} (?:gmt|utc)",
    re.ASCII | re.IGNORECASE,
)
_ASCTIME_DATE = re.compile(
    r"(?:mon|tue|wed|thu|fri|sat|sun) "
    rf"{_MONTH} +(?P<day>\d{{1,2}}) {_TIME} (?P<year>\d{{4}})",
    re.ASCII | re.IGNORECASE,
)

# W3C Datetime (https://www.w3.org/TR/NOTE-datetime) forms found in page
# metadata. Also accepted, because CMSs emit them: a space instead of "T", a
# comma before the fraction, and "+hhmm" without the colon.
_W3C_DATETIME = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    r"(?:[Tt ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?"
    r"(?:(?P<utc>[Zz])|(?P<sign>[+-])(?P<tzhour>\d{2}):?(?P<tzminute>\d{2}))?)?",
    re.ASCII,
)

# What we write: YYYY-MM-DD, or a full date-time with seconds and a zone.
_SITEMAP_LASTMOD = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))?",
    re.ASCII,
)
# xsd:dateTime allows time zone offsets from -14:00 to +14:00 only.
_MAX_XSD_OFFSET = timedelta(hours=14)

_META_PROPERTIES = ("article:modified_time", "og:updated_time")
# Nesting deeper than this in JSON-LD is not a page's own metadata.
_MAX_JSONLD_DEPTH = 8


def _format_utc(moment: datetime) -> str:
    # f-string, not strftime: %Y does not zero-pad years below 1000 everywhere.
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}+00:00"
    )


def _as_text(value: str | bytes | None) -> str | None:
    if isinstance(value, bytes):
        # Header values are octets; ISO-8859-1 maps each to one character and
        # never fails (RFC 9110, 5.5), and a date is ASCII anyway.
        return value.decode("latin-1")
    if isinstance(value, str):
        return value
    return None


def _expand_two_digit_year(yy: int, rest: tuple[int, ...], now: datetime) -> int:
    # RFC 9110, 5.6.7: "Recipients of a timestamp value in rfc850-date format,
    # which uses a two-digit year, MUST interpret a timestamp that appears to be
    # more than 50 years in the future as representing the most recent year in
    # the past that had the same last two digits." Tuples, not datetimes: the
    # candidate year may make 29 February invalid, which is decided later.
    limit = (now.year + 50, now.month, now.day, now.hour, now.minute, now.second)
    year = now.year - now.year % 100 + yy
    if (year, *rest) > limit:
        year -= 100
    elif (year + 100, *rest) <= limit:
        year += 100
    return year


def _parse_http_date(text: str, now: datetime) -> datetime | None:
    text = text.strip()
    match = (
        _IMF_FIXDATE.fullmatch(text)
        or _RFC850_DATE.fullmatch(text)
        or _ASCTIME_DATE.fullmatch(text)
    )
    if match is None:
        return None
    month = _MONTHS.get(match["month"].lower())
    if month is None:
        return None
    day, hour, minute = int(match["day"]), int(match["hour"]), int(match["minute"])
    # The grammar's time-of-day runs to 23:59:60 (leap second), which datetime
    # cannot hold; one second early is the closest representable time.
    second = min(int(match["second"]), 59)
    year = int(match["year"])
    if len(match["year"]) == 2:
        year = _expand_two_digit_year(year, (month, day, hour, minute, second), now)
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None


def http_date_to_w3c(
    value: str | bytes | None,
    date_header: str | bytes | None = None,
    *,
    now: datetime | None = None,
) -> str | None:
    """Turn a ``Last-Modified`` header value into ``YYYY-MM-DDThh:mm:ss+00:00``.

    Accepts the IMF-fixdate, RFC 850 and asctime formats (RFC 9110, 5.6.7), as
    ``str`` or as the ``bytes`` Scrapy's ``Headers`` hold. ``date_header`` is the
    response's ``Date``: "An origin server with a clock MUST NOT generate a
    Last-Modified date that is later than the server's time of message
    origination (Date)" (RFC 9110, 8.8.2.1), so a later value is clamped to it.
    ``now`` (UTC) only decides the century of a two-digit year; it defaults to
    the current time and is never returned.

    Returns ``None`` for a missing or malformed value; never raises.
    """
    try:
        text = _as_text(value)
        if text is None:
            return None
        if now is None:
            now = datetime.now(UTC)
        elif now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        modified = _parse_http_date(text, now)
        if modified is None:
            return None
        date_text = _as_text(date_header)
        if date_text is not None:
            sent = _parse_http_date(date_text, now)
            if sent is not None and sent < modified:
                modified = sent
        return _format_utc(modified)
    except (ValueError, OverflowError, TypeError, AttributeError):
        # Belt and braces: the contract is "None, never an exception".
        return None


def w3c_datetime(value: str) -> str | None:
    """Normalise a W3C Datetime from page metadata for ``<lastmod>``.

    ``YYYY-MM-DD`` stays a date. ``YYYY-MM-DDThh:mm[:ss[.s]]TZD`` (TZD is ``Z``
    or ``+hh:mm``/``-hh:mm``) becomes ``YYYY-MM-DDThh:mm:ss+00:00`` in UTC, the
    fraction dropped. A time without a time zone is ambiguous (the server's local
    time? UTC?) and gives ``None``, as does anything that is not a real date;
    so do the year-only and year-month forms, which ``xsd:date`` rejects.
    Never raises.
    """
    if not isinstance(value, str):
        return None
    match = _W3C_DATETIME.fullmatch(value.strip())
    if match is None:
        return None
    try:
        year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
        if match["hour"] is None:
            return date(year, month, day).isoformat()
        if match["utc"] is not None:
            offset = timedelta(0)
        elif match["sign"] is not None:
            tzhour, tzminute = int(match["tzhour"]), int(match["tzminute"])
            if tzhour > 23 or tzminute > 59:
                return None
            offset = timedelta(hours=tzhour, minutes=tzminute)
            if match["sign"] == "-":
                offset = -offset
        else:
            return None
        local = datetime(
            year,
            month,
            day,
            int(match["hour"]),
            int(match["minute"]),
            int(match["second"] or 0),
            tzinfo=timezone(offset),
        )
        return _format_utc(local.astimezone(UTC))
    except (ValueError, OverflowError):
        return None


def lastmod_datetime(value: str) -> datetime:
    """Check a ``<lastmod>`` value about to be written and return it as an
    aware datetime, for comparisons (a date-only value is midnight UTC).

    The accepted forms are those valid for both the W3C Datetime note and the
    XSD: ``YYYY-MM-DD`` or ``YYYY-MM-DDThh:mm:ss[.s](Z|+hh:mm|-hh:mm)`` with an
    offset within +-14:00. Raises ``ValueError`` otherwise: a value that
    reaches this point was built by our own code, so a bad one is a bug.
    """
    if not isinstance(value, str) or _SITEMAP_LASTMOD.fullmatch(value) is None:
        raise ValueError(f"not a sitemap lastmod (W3C date or date-time with zone): {value!r}")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    offset = moment.utcoffset()
    if offset is not None and abs(offset) > _MAX_XSD_OFFSET:
        raise ValueError(f"time zone offset outside xsd:dateTime's +-14:00: {value!r}")
    return moment


def _jsonld_date_modified(node: Any, depth: int = 0) -> list[str]:
    # A JSON-LD block is an object, a list of objects, or an object with an
    # @graph list; dateModified of nested values (an author, an image) is not
    # the page's, so only those containers are walked.
    found: list[str] = []
    if depth > _MAX_JSONLD_DEPTH:
        return found
    if isinstance(node, list):
        for item in node:
            found.extend(_jsonld_date_modified(item, depth + 1))
    elif isinstance(node, dict):
        modified = node.get("dateModified")
        if isinstance(modified, str):
            found.append(modified)
        graph = node.get("@graph")
        if graph is not None:
            found.extend(_jsonld_date_modified(graph, depth + 1))
    return found


def _page_candidates(html_root: Any) -> Iterator[str]:
    # A generator: the JSON-LD is parsed only when no <meta> gave a date.
    # iter() is a tag-filtered walk in libxml2: several times faster than the XPath
    # "//meta[@content]" on a large page.
    metas = [meta for meta in html_root.iter("meta") if meta.get("content") is not None]
    for wanted in _META_PROPERTIES:
        for meta in metas:
            # Sites write property= (Open Graph's RDFa) or name=; both are seen.
            key = meta.get("property") or meta.get("name") or ""
            if key.strip().lower() == wanted:
                yield meta.get("content")
    for script in html_root.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json":
            continue
        try:
            data = json.loads(script.text or "")
        except (ValueError, RecursionError):
            # Broken JSON-LD is common (trailing commas, unescaped quotes); it
            # costs that block, not the page.
            continue
        yield from _jsonld_date_modified(data)


def lastmod_from_page(html_root: Any) -> str | None:
    """The page's own modification date, from its metadata, or ``None``.

    ``html_root`` is an lxml HTML element, e.g. ``HtmlResponse(...).selector.root``.
    Tries ``<meta property="article:modified_time">``, then ``og:updated_time``,
    then JSON-LD ``dateModified`` (in objects, lists and ``@graph``), and returns
    the first one that :func:`w3c_datetime` accepts. Never raises.
    """
    if html_root is None or not hasattr(html_root, "xpath"):
        return None
    try:
        for candidate in _page_candidates(html_root):
            normalised = w3c_datetime(candidate)
            if normalised is not None:
                return normalised
    except (ValueError, TypeError):
        # lxml raises these on documents it could not make a tree of.
        return None
    return None
