"""Where a page's ``<lastmod>`` comes from: the HTTP ``Last-Modified`` header
(:func:`http_date_to_w3c`, RFC 9110's three date formats, clamped to ``Date``), or what
the page declares (:func:`page_dates`, parsed by :func:`w3c_datetime`; the lastmod
pipeline guards them); never "now": Google ignores a lastmod that is not accurate.

The parsers return ``None`` for a missing or malformed date and never raise;
:func:`lastmod_datetime` is the strict check of a value about to be written (W3C
Datetime: a time needs a zone; ``xsd:dateTime``: seconds too)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any, NamedTuple
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from crawler.core import clock

__all__ = [
    "Declared",
    "http_date_to_w3c",
    "item_types",
    "jsonld_blocks",
    "jsonld_walk",
    "lastmod_datetime",
    "lastmod_from_page",
    "page_dates",
    "page_metas",
    "w3c_datetime",
]

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {name: n for n, name in enumerate(_MONTH_NAMES, 1)}

# RFC 9110, 5.6.7, read as it asks ("be robust in parsing timestamps"): any case, an
# optional IMF-fixdate day name (RFC 5322), a one-digit day, a four-digit RFC 850 year,
# "UTC" for "GMT"; the day name is not checked. re.ASCII: \d is not another script's.
_TIME = r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})"
_MONTH = r"(?P<month>[a-z]{3})"
_HTTP_DATES = [  # IMF-fixdate, rfc850-date, asctime-date
    re.compile(pattern, re.ASCII | re.IGNORECASE)
    for pattern in (
        r"(?:(?:mon|tue|wed|thu|fri|sat|sun),\s*)?"
        rf"(?P<day>\d{{1,2}}) {_MONTH} (?P<year>\d{{4}}) {_TIME} (?:gmt|utc)",
        r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday), "
        rf"(?P<day>\d{{2}})-{_MONTH}-(?P<year>\d{{2}}|\d{{4}}) {_TIME} (?:gmt|utc)",
        r"(?:mon|tue|wed|thu|fri|sat|sun) "
        rf"{_MONTH} +(?P<day>\d{{1,2}}) {_TIME} (?P<year>\d{{4}})",
    )
]

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
_META_PUBLISHED = "article:published_time"
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
        return value.decode("latin-1")  # never fails (RFC 9110, 5.5); a date is ASCII
    return value if isinstance(value, str) else None


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
    match = next(filter(None, (p.fullmatch(text.strip()) for p in _HTTP_DATES)), None)
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
    """A ``Last-Modified`` value (``str``, or ``bytes`` as Scrapy's ``Headers`` hold it) as
    ``YYYY-MM-DDThh:mm:ss+00:00``, or ``None``; never raises. *date_header*: the response's
    ``Date``: "An origin server with a clock MUST NOT generate a Last-Modified date that is
    later than the server's time of message origination (Date)" (RFC 9110, 8.8.2.1), so a
    later value is clamped to it. *now* (UTC) decides the century of a two-digit year only."""
    try:
        text = _as_text(value)
        if text is None:
            return None
        if now is None:
            now = clock.now()
        elif now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        modified = _parse_http_date(text, now)
        if modified is None:
            return None
        date_text = _as_text(date_header)
        sent = _parse_http_date(date_text, now) if date_text is not None else None
        return _format_utc(min(modified, sent) if sent is not None else modified)
    except (ValueError, OverflowError, TypeError, AttributeError):
        # Belt and braces: the contract is "None, never an exception".
        return None


def w3c_datetime(value: str) -> str | None:
    """A W3C Datetime from page metadata, for ``<lastmod>``: ``YYYY-MM-DD`` stays a date;
    ``YYYY-MM-DDThh:mm[:ss[.s]]TZD`` becomes ``YYYY-MM-DDThh:mm:ss+00:00`` (UTC, no
    fraction). ``None`` for a time without a zone (whose local time?), for the year and
    year-month forms (``xsd:date`` rejects them) and for anything not a real date."""
    if not isinstance(value, str):
        return None
    match = _W3C_DATETIME.fullmatch(value.strip())
    if match is None:
        return None
    try:
        year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
        if match["hour"] is None:
            return date(year, month, day).isoformat()
        if match["utc"] is None and match["sign"] is None:
            return None
        tzhour, tzminute = int(match["tzhour"] or 0), int(match["tzminute"] or 0)
        if tzhour > 23 or tzminute > 59:
            return None
        offset = timedelta(hours=tzhour, minutes=tzminute) * (-1 if match["sign"] == "-" else 1)
        hour, minute, second = (int(match[part] or 0) for part in ("hour", "minute", "second"))
        local = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
        return _format_utc(local.astimezone(UTC))
    except (ValueError, OverflowError):
        return None


def lastmod_datetime(value: str) -> datetime:
    """A ``<lastmod>`` about to be written, checked, as an aware datetime (a date is midnight
    UTC): ``YYYY-MM-DD`` or ``YYYY-MM-DDThh:mm:ss[.s](Z|+hh:mm|-hh:mm)`` within +-14:00.
    ``ValueError`` otherwise: our own code built it, so a bad one is a bug."""
    if not isinstance(value, str) or _SITEMAP_LASTMOD.fullmatch(value) is None:
        raise ValueError(f"not a sitemap lastmod (W3C date or date-time with zone): {value!r}")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    offset = moment.utcoffset()
    if offset is not None and abs(offset) > _MAX_XSD_OFFSET:
        raise ValueError(f"time zone offset outside xsd:dateTime's +-14:00: {value!r}")
    return moment


# -- what the page declares ------------------------------------------------------------

#: schema.org types that are never a page's own node: who wrote it or runs the site,
#: the site itself, its images and media, its comments, its navigation.
# fmt: off
_NOT_THE_PAGE = frozenset({
    "person", "organization", "corporation", "localbusiness", "newsmediaorganization",
    "educationalorganization", "governmentorganization", "ngo", "website", "imageobject",
    "mediaobject", "videoobject", "audioobject", "comment", "answer", "question", "review",
    "breadcrumblist", "listitem", "itemlist", "sitenavigationelement", "wpheader", "wpfooter",
    "wpsidebar", "searchaction", "brand", "offer", "rating", "aggregaterating", "place",
    "postaladdress", "contactpoint",
})
#: schema.org types of a page's main entity (besides every type ending in "Page",
#: "Article" or "Posting").
_MAIN_TYPES = frozenset({
    "webpage", "article", "blogposting", "newsarticle", "techarticle", "scholarlyarticle",
    "report", "product", "recipe", "event", "course", "book", "movie", "softwareapplication",
    "jobposting", "howto", "dataset", "creativework", "service", "faqpage", "qapage",
})
# fmt: on
# A WordPress comment page (/post/comment-page-2/, ?cpage=2) names its post.
_COMMENT_PAGE = re.compile(r"/comment-page-\d+/?$")


class Declared(NamedTuple):
    """One date the page declares: *label* says where (``meta article:modified_time``),
    *value* the date by :func:`w3c_datetime` (None: malformed), *raw* as written (100
    characters at most), *why* it is not the page's date when the page itself shows it
    (None for a candidate: the lastmod pipeline guards those)."""

    label: str
    value: str | None
    raw: str
    published: bool = False
    why: str | None = None


def item_types(node: Mapping[str, Any]) -> list[str]:
    """The schema.org type names of a JSON-LD object or microdata item, without
    their vocabulary: ``VideoObject``, ``http://schema.org/VideoObject``,
    ``schema:VideoObject`` are all ``VideoObject``."""
    raw = node.get("@type")
    names = raw if isinstance(raw, list) else [raw]
    return [re.split(r"[/#:]", n.strip())[-1] for n in names if isinstance(n, str) and n.strip()]


def _types(node: dict[str, Any]) -> list[str]:
    return [kind.lower() for kind in item_types(node)]


def _is_main(kinds: list[str]) -> bool:
    return any(k in _MAIN_TYPES or k.endswith(("page", "article", "posting")) for k in kinds)


def _excluded(kinds: list[str]) -> bool:
    return any(k in _NOT_THE_PAGE or k.endswith("organization") for k in kinds)


def _loose(url: str) -> str | None:
    """A URL compared loosely: no scheme, fragment, ``www.`` or trailing slash."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if not parts.netloc:
        return None
    host = (parts.hostname or "").lower().removeprefix("www.")
    path = unquote(parts.path).rstrip("/")
    port = f":{parts.port}" if parts.port not in (None, 80, 443) else ""
    return f"{host}{port}{path}" + (f"?{parts.query}" if parts.query else "")


def page_names(url: str, canonicals: Iterable[str] = ()) -> frozenset[str]:
    """The loose forms of the addresses a node may name this page by: its own, its
    canonical targets, and, for a WordPress comment page, its post's."""
    names = set()
    for candidate in (url, *canonicals):
        if (loose := _loose(candidate)) is not None:
            names.add(loose)
        parts = urlsplit(candidate)
        post = _COMMENT_PAGE.sub("/", parts.path)
        query = "&".join(p for p in parts.query.split("&") if p and not p.startswith("cpage="))
        post_url = urlunsplit(parts._replace(path=post, query=query))
        if (post != parts.path or query != parts.query) and (loose := _loose(post_url)):
            names.add(loose)
    return frozenset(names)


def _node_names(node: dict[str, Any], base: str) -> list[str]:
    """The loose forms of the URLs a JSON-LD node names itself by (``@id``, ``url``,
    ``mainEntityOfPage``); a blank node's ``_:b0`` names nothing."""
    found: list[str] = []
    for value in (node.get("@id"), node.get("url"), node.get("mainEntityOfPage")):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                item = item.get("@id") or item.get("url")
            if (
                isinstance(item, str)
                and item.strip()
                and not item.startswith("_:")
                and (loose := _loose(urljoin(base, item.strip()))) is not None
            ):
                found.append(loose)
    return found


def page_metas(root: Any) -> dict[str, list[str]]:
    """``<meta>`` content by property (Open Graph's RDFa) or name, lowercased key, in
    page order."""
    found: dict[str, list[str]] = {}
    for meta in root.iter("meta"):
        content = meta.get("content")
        key = (meta.get("property") or meta.get("name") or "").strip().lower()
        if content is not None and key:
            found.setdefault(key, []).append(content)
    return found


def jsonld_blocks(root: Any) -> Iterator[Any]:
    """The parsed ``application/ld+json`` scripts (a ``; charset=`` parameter allowed)."""
    for script in root.iter("script"):
        kind = (script.get("type") or "").partition(";")[0].strip().lower()
        if kind != "application/ld+json":
            continue
        try:
            yield json.loads(script.text or "")
        except (ValueError, RecursionError):
            continue  # trailing commas, unescaped quotes...: this block only


def jsonld_walk(
    node: Any,
    step: Callable[[dict[str, Any]], tuple[bool, Iterable[Any]]],
    limit: int,
    depth: int = 0,
) -> Iterator[dict[str, Any]]:
    """The objects of a JSON-LD value that *step* takes (its first answer), found in
    lists and in the values *step* gives (its second), at most *limit* deep."""
    if depth > limit:
        return
    if isinstance(node, list):
        for item in node:
            yield from jsonld_walk(item, step, limit, depth + 1)
    elif isinstance(node, dict):
        take, inner = step(node)
        if take:
            yield node
        for value in inner:
            yield from jsonld_walk(value, step, limit, depth + 1)


def _top_level(node: dict[str, Any]) -> tuple[bool, Iterable[Any]]:
    """A block's top-level nodes: an object, a list's, an ``@graph``'s (not an author)."""
    return any(k not in ("@context", "@graph") for k in node), [node.get("@graph")]


def _declared(label: str, raw: Any, published: bool, why: str | None = None) -> Declared:
    text = raw if isinstance(raw, str) else json.dumps(raw)[:100]
    value = w3c_datetime(text) if isinstance(raw, str) else None
    if value is None and why is None:
        why = "malformed (a W3C date, or a date-time with a time zone, is needed)"
    return Declared(label, value, text.strip()[:100], published, why)


def _jsonld(html_root: Any, url: str, names: frozenset[str]) -> Iterator[Declared]:
    nodes = [
        node
        for block in jsonld_blocks(html_root)
        for node in jsonld_walk(block, _top_level, _MAX_JSONLD_DEPTH)
    ]
    named = [n for n in nodes if names.intersection(_node_names(n, url))]
    if named:
        # Nodes that name this page (or its canonical target): the page's own.
        own = [n for n in named if not _excluded(_types(n))]
    else:
        # None does: the main entity (a node of no type is taken for one: a plain
        # {"dateModified": ...}), unless it names another page.
        own = [
            n
            for n in nodes
            if (_is_main(_types(n)) or not _types(n))
            and not _excluded(_types(n))
            and not _node_names(n, url)
        ]
    for node in nodes:
        kind = node.get("@type") if isinstance(node.get("@type"), str) else None
        kind = kind or "/".join(_types(node)) or "node"
        why = None
        if not any(node is n for n in own):
            if _excluded(_types(node)) and any(node is n for n in named):
                why = f"it names this page but is a {kind}"
            elif _excluded(_types(node)) or not _node_names(node, url):
                why = f"not this page's node ({kind})"
            else:
                why = "a node of another page"
        for prop, published in (("dateModified", False), ("datePublished", True)):
            if prop in node:
                yield _declared(f"JSON-LD {kind} {prop}", node[prop], published, why)


_MICRODATA_DATES = (
    "//*[not(@itemscope)][normalize-space(@itemprop)='dateModified'"
    " or normalize-space(@itemprop)='datePublished']"
)


def _microdata(html_root: Any, url: str) -> Iterator[Declared]:
    # One XPath (libxml2) finds the dated properties: a walk over every element in
    # Python would cost as much as the parse.
    dated: list[tuple[Any, str, Any, bool]] = []  # (item, its type, the property, published)
    for el in html_root.xpath(_MICRODATA_DATES):
        item = next((a for a in el.iterancestors() if a.get("itemscope") is not None), None)
        if item is None:
            continue
        kind = (item.get("itemtype") or "").strip().split()
        published = el.get("itemprop").strip() == "datePublished"
        dated.append((item, re.split(r"[:/#]", kind[0])[-1] if kind else "item", el, published))
    # A listing (an archive of posts) holds several main items of one type: none of
    # them is the page. Items that name another page by itemid are not it either.
    kinds: dict[str, set[Any]] = {}
    for item, kind, _, _ in dated:
        kinds.setdefault(kind.lower(), set()).add(item)
    for item, kind, el, published in dated:
        raw = el.get("content") or el.get("datetime") or (el.text or "")
        label = f"microdata {kind} {'datePublished' if published else 'dateModified'}"
        types = [kind.lower()]
        itemid = item.get("itemid")
        why = None  # a candidate: the lastmod pipeline guards it
        if _excluded(types) or not _is_main(types):
            why = f"not this page's item ({kind})"
        elif len(kinds[kind.lower()]) > 1 and not kind.lower().endswith("page"):
            why = f"one of several {kind} items (a listing)"
        elif itemid and _loose(urljoin(url, itemid)) not in page_names(url):
            why = "an item of another page"
        yield _declared(label, raw, published, why)


def page_dates(
    html_root: Any, url: str = "", canonicals: Iterable[str] = (), structured: bool = True
) -> list[Declared]:
    """Every date the page at *url* (or one of its *canonicals*) declares, in the order
    they are believed (docs/lastmod.md, "Which declaration"). *structured* False: the
    page's bytes hold neither ``dateModified`` nor ``datePublished``, and only its
    ``<meta>`` are read. Never raises."""
    if html_root is None or not hasattr(html_root, "iter"):
        return []
    try:
        metas = page_metas(html_root)
        meta = {
            key: [_declared(f"meta {key}", text, key == _META_PUBLISHED) for text in metas[key]]
            for key in (*_META_PROPERTIES, _META_PUBLISHED)
            if key in metas
        }
        found: list[Declared] = []
        if structured:
            # An XPath over every element for microdata costs as much as a tenth of the
            # parse: only on a page that has such a date at all.
            names = page_names(url, canonicals) if url else frozenset()
            found = [*_jsonld(html_root, url, names), *_microdata(html_root, url)]
    except (ValueError, TypeError):
        # lxml raises these on documents it could not make a tree of.
        return []
    modified = [d for key in _META_PROPERTIES for d in meta.get(key, [])]
    modified += [d for d in found if not d.published]
    published = meta.get(_META_PUBLISHED, []) + [d for d in found if d.published]
    if any(d.value is not None and d.why is None for d in modified):
        published = [
            d if d.why else d._replace(why="a publication date; the page declares a modification")
            for d in published
        ]
    return modified + published


def lastmod_from_page(html_root: Any, url: str = "", canonicals: Iterable[str] = ()) -> str | None:
    """The first date of :func:`page_dates` that the page itself does not rule out, or
    ``None`` (the guards that need the response or the site are the lastmod pipeline's)."""
    dates = page_dates(html_root, url, canonicals)
    return next((d.value for d in dates if d.why is None and d.value is not None), None)
