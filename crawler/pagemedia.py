"""The rich data of one page: its images, its videos, its publication (issue #14).

Pure functions over a parsed page (the lxml root from
:func:`crawler.links.parse_html`) that give what Google's sitemap extensions carry.
The results are small and picklable (tuples, frozen dataclasses with slots), as the
page analysis may run in a worker process, and each result type has ``to_json()``
and ``from_json()`` for the ledger. Which URLs may be written (host, robots.txt) is
the caller's decision, made with the crawl's scope: every URL here is absolute and
not normalised.

:func:`images`, for image sitemaps
(https://developers.google.com/search/docs/crawling-indexing/sitemaps/image-sitemaps:
``image:loc``, at most 1,000 per page). Read in page order, each URL once:

* ``<img src>``; the largest candidate of ``<img srcset>`` and of
  ``<picture><source srcset>`` (by ``w`` descriptor, else ``x``, else the first;
  the srcset grammar of
  https://html.spec.whatwg.org/multipage/images.html#parsing-a-srcset-attribute);
* the lazy-loading attributes ``data-src``, ``data-srcset``, ``data-lazy-src`` (the
  image a script puts in place: Google renders pages, so it sees it);
* ``<meta property="og:image">`` (and ``og:image:url``; ``name=`` too, as sites
  write it): https://ogp.me/#structured; ``<link rel="image_src">``.

Left out: ``data:`` and ``blob:`` URLs (and anything else that is not http(s): a
sitemap holds URLs Google can fetch), and images declared 1x1 or smaller
(``width``/``height`` attributes, or ``width``/``height`` in ``style``, in pixels,
the style winning): tracking pixels, no content.

:func:`videos`, for video sitemaps
(https://developers.google.com/search/docs/crawling-indexing/sitemaps/video-sitemaps),
from, in this order:

* schema.org ``VideoObject`` (https://schema.org/VideoObject;
  https://developers.google.com/search/docs/appearance/structured-data/video) in
  JSON-LD, wherever it is in a block (top level, lists, ``@graph``, the ``video``
  of an article, any property), and in microdata (``itemscope
  itemtype=".../VideoObject"``, its ``itemprop`` values read as the microdata
  standard says: ``content`` of ``<meta>``, ``href`` of ``<link>``/``<a>``, ``src``
  of media elements, ``datetime`` of ``<time>``, else the text; ``itemref`` is not
  followed). ``thumbnailUrl`` (or ``thumbnail``) -> thumbnail_loc, ``name`` ->
  title, ``description``, ``contentUrl`` -> content_loc, ``embedUrl`` ->
  player_loc, ``duration`` (ISO 8601, ``PT1M30S``) -> seconds, ``uploadDate`` ->
  publication_date, ``expires`` -> expiration_date, ``isFamilyFriendly`` ->
  family_friendly, ``publication`` (a ``BroadcastEvent``, and its
  ``isLiveBroadcast``) -> live;
* Open Graph ``og:video`` / ``og:video:url`` / ``og:video:secure_url`` (the secure
  one preferred), with ``og:title``, ``og:description`` and ``og:image`` for the
  thumbnail (https://ogp.me/#structured). ``og:video:type`` ``text/html`` (or
  Flash) makes the URL a player_loc, another type a content_loc; without a type, a
  URL ending in a video file extension is a content_loc, any other a player_loc;
* ``<video poster=...>``: the poster is the thumbnail, content_loc the ``src`` or
  the first ``<source src>``, the title the element's ``title`` attribute, else
  the page's ``<title>``, the description the page's meta description (a video
  found above as well keeps what was found there).

The same video found twice (the same content_loc or player_loc) is one, each field
taken from where it was found first. Google's rules applied: a duration must be 1
to 28,800 seconds, a content_loc or player_loc must not be the page itself (both
dropped with a problem); dates are W3C datetimes (:func:`crawler.lastmod.w3c_datetime`:
a date, or a date-time with a time zone; anything else is dropped with a problem).
``missing`` names what Google requires and the page did not give: ``thumbnail_loc``,
``title``, ``description``, ``content_loc or player_loc``.

:func:`news`, for news sitemaps
(https://developers.google.com/search/docs/crawling-indexing/sitemaps/news-sitemap):
the publication date from ``<meta property="article:published_time">``
(https://ogp.me/#type_article), else the ``datePublished`` of a JSON-LD
``NewsArticle``/``Article``/``BlogPosting`` (or a subtype) at a block's top level,
in a list, ``@graph`` or ``mainEntity``; the title from ``og:title``, else that
article's ``headline``, else ``<title>``; the language from ``<html lang>`` (else
the ``Content-Language`` header) as news sitemaps want it: an ISO 639 code of two
or three letters, except ``zh-cn`` and ``zh-tw`` for Simplified and Traditional
Chinese (``zh-Hans``, ``zh-SG`` -> ``zh-cn``; ``zh-Hant``, ``zh-HK``, ``zh-MO`` ->
``zh-tw``; the script decides before the region). No date, no news.

Malformed data is skipped, never raised: broken JSON-LD costs its block only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urljoin, urlsplit

import pycountry
from scrapy.http import Response

from crawler.lastmod import w3c_datetime
from crawler.limits import MAX_IMAGES_PER_URL, MAX_VIDEO_DURATION
from crawler.links import clean_href
from crawler.urls import normalize_url

__all__ = ["NewsFacts", "VideoFacts", "images", "news", "news_language", "videos"]

_MAX_DEPTH = 32  # nesting of JSON-LD and microdata items read
_HTTP = frozenset({"http", "https"})
_HTML_SPACE = " \t\n\r\f"

# -- shared reading ------------------------------------------------------------------


def _absolute(base: str, value: Any) -> str | None:
    """*value* (an attribute, a JSON-LD string) as an absolute http(s) URL, or None."""
    if not isinstance(value, str):
        return None
    href = clean_href(value)
    if not href:
        return None
    url = urljoin(base, href)
    return url if url.partition(":")[0].lower() in _HTTP else None


def _metas(root: Any) -> dict[str, list[str]]:
    """``<meta>`` content by property (or name), lowercased key, in page order."""
    found: dict[str, list[str]] = {}
    for meta in root.iter("meta"):
        content = meta.get("content")
        key = (meta.get("property") or meta.get("name") or "").strip().lower()
        if content is not None and key:
            found.setdefault(key, []).append(content)
    return found


def _first_text(values: list[str] | None) -> str | None:
    for value in values or ():
        text = " ".join(value.split())
        if text:
            return text
    return None


def _page_title(root: Any) -> str | None:
    for title in root.xpath("//title[not(ancestor::svg)]"):
        text = " ".join("".join(title.itertext()).split())
        if text:
            return text
    return None


def _jsonld_blocks(root: Any) -> Iterator[Any]:
    for script in root.iter("script"):
        kind = (script.get("type") or "").partition(";")[0].strip().lower()
        if kind != "application/ld+json":
            continue
        try:
            yield json.loads(script.text or "")
        except (ValueError, RecursionError):
            continue  # trailing commas, unescaped quotes...: this block only


def _types(node: Mapping[str, Any]) -> set[str]:
    """The schema.org type names of a JSON-LD object or microdata item, without
    their vocabulary: ``VideoObject``, ``http://schema.org/VideoObject``,
    ``schema:VideoObject`` are all ``VideoObject``."""
    raw = node.get("@type")
    names = raw if isinstance(raw, list) else [raw]
    return {re.split(r"[/#:]", n.strip())[-1] for n in names if isinstance(n, str)}


def _text(value: Any) -> str | None:
    """A property's text: a string (whitespace collapsed), a number, a
    ``{"@value": ...}``, or the first of a list that is one."""
    if isinstance(value, list):
        for item in value:
            text = _text(item)
            if text is not None:
                return text
        return None
    if isinstance(value, dict):
        return _text(value.get("@value"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return " ".join(value.split()) or None
    return None


def _url(base: str, value: Any) -> str | None:
    """A property's URL: a string, an object's ``url``/``contentUrl``/``@id``, or
    the first of a list that gives one."""
    if isinstance(value, list):
        for item in value:
            url = _url(base, item)
            if url is not None:
                return url
        return None
    if isinstance(value, dict):
        for key in ("url", "contentUrl", "@id"):
            url = _url(base, value.get(key))
            if url is not None:
                return url
        return None
    return _absolute(base, value)


def _bool(value: Any) -> bool | None:
    if isinstance(value, list):
        return _bool(value[0]) if value else None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = re.split(r"[/#:]", value.strip())[-1].lower()
        if word in ("true", "yes"):
            return True
        if word in ("false", "no"):
            return False
    return None


# -- images --------------------------------------------------------------------------


def _srcset(value: str) -> list[tuple[str, str]]:
    """(URL, descriptors) of each candidate of a srcset, as the HTML standard
    splits them (a URL may hold commas; a candidate ends at a comma after it)."""
    out: list[tuple[str, str]] = []
    pos, end = 0, len(value)
    while True:
        while pos < end and (value[pos] in _HTML_SPACE or value[pos] == ","):
            pos += 1
        if pos >= end:
            return out
        start = pos
        while pos < end and value[pos] not in _HTML_SPACE:
            pos += 1
        url, descriptors = value[start:pos], ""
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            start, depth = pos, 0
            while pos < end:
                char = value[pos]
                if char == "(":
                    depth += 1
                elif char == ")" and depth:
                    depth -= 1
                elif char == "," and not depth:
                    break
                pos += 1
            descriptors = value[start:pos].strip()
            pos += 1
        if url:
            out.append((url, descriptors))


_W = re.compile(r"(\d+)w", re.ASCII)
_X = re.compile(r"(\d+(?:\.\d+)?|\.\d+)x", re.ASCII)


def _largest(value: str | None) -> str | None:
    """The candidate of a srcset with the largest width (``w``), else the largest
    density (``x``; none is 1x), else the first; the first of equals."""
    if not value:
        return None
    candidates = _srcset(value)
    if not candidates:
        return None
    widths: list[tuple[int, str]] = []
    densities: list[tuple[float, str]] = []
    for url, descriptors in candidates:
        for token in descriptors.split():
            if m := _W.fullmatch(token):
                widths.append((int(m.group(1)), url))
            elif m := _X.fullmatch(token):
                densities.append((float(m.group(1)), url))
    if widths:
        return max(widths, key=lambda c: c[0])[1]
    if densities:
        described = {url for _, url in densities}
        densities += [(1.0, url) for url, _ in candidates if url not in described]
        best = max(d for d, _ in densities)
        return next(url for d, url in densities if d == best)
    return candidates[0][0]


_PIXELS = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:px)?\s*(?:!\s*important)?\s*", re.I | re.A)


def _pixels(value: str | None) -> float | None:
    if value is None:
        return None
    m = _PIXELS.fullmatch(value)
    return float(m.group(1)) if m else None


def _tiny(img: Any) -> bool:
    """Declared 1x1 or smaller (a tracking pixel): by attributes, or by ``style``,
    which wins over them."""
    width, height = _pixels(img.get("width")), _pixels(img.get("height"))
    for declaration in (img.get("style") or "").split(";"):
        name, _, value = declaration.partition(":")
        name = name.strip().lower()
        if name == "width":
            width = _pixels(value)
        elif name == "height":
            height = _pixels(value)
    return width is not None and height is not None and width <= 1 and height <= 1


def images(root: Any, base: str, limit: int = MAX_IMAGES_PER_URL) -> tuple[str, ...]:
    """The image URLs of a page (see the module docstring): absolute against
    *base* (the page's ``<base href>``, else its URL), in page order, each once, at
    most *limit*."""
    found: dict[str, None] = {}
    if limit <= 0 or root is None or not hasattr(root, "iter"):
        return ()
    for el in root.iter("img", "source", "meta", "link"):
        tag = el.tag
        if tag == "img":
            if _tiny(el):
                continue
            candidates = [
                el.get("src"),
                _largest(el.get("srcset")),
                el.get("data-src"),
                _largest(el.get("data-srcset")),
                el.get("data-lazy-src"),
            ]
        elif tag == "source":
            # libxml2 does not know <source> is void: a source's siblings become
            # its children, so its container is its first ancestor of another tag.
            parent = el.getparent()
            while parent is not None and parent.tag == "source":
                parent = parent.getparent()
            if parent is None or parent.tag != "picture":
                continue  # <video>/<audio> sources are not images
            candidates = [_largest(el.get("srcset")), _largest(el.get("data-srcset"))]
        elif tag == "meta":
            key = (el.get("property") or el.get("name") or "").strip().lower()
            if key not in ("og:image", "og:image:url"):
                continue
            candidates = [el.get("content")]
        else:
            if "image_src" not in (el.get("rel") or "").lower().split():
                continue
            candidates = [el.get("href")]
        for candidate in candidates:
            url = _absolute(base, candidate)
            if url is not None and url not in found:
                found[url] = None
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)


# -- videos --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VideoFacts:
    """One video of a page, as a video sitemap's ``video:video`` carries it.

    URLs absolute (not normalised); *duration* in whole seconds (1 to 28,800);
    dates W3C (``YYYY-MM-DD`` or ``YYYY-MM-DDThh:mm:ss+00:00``); *missing*: what
    Google requires and the page did not give; *problems*: what was found and left
    out, and why. JSON: an object with these field names, tuples as lists.
    """

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
    missing: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["missing"] = list(self.missing)
        data["problems"] = list(self.problems)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VideoFacts:
        values: dict[str, Any] = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values["missing"] = tuple(data.get("missing", ()))
        values["problems"] = tuple(data.get("problems", ()))
        return cls(**values)


_REQUIRED = ("thumbnail_loc", "title", "description")  # and content_loc or player_loc
_VIDEO_FIELDS = (
    "thumbnail_loc",
    "title",
    "description",
    "content_loc",
    "player_loc",
    "duration",
    "publication_date",
    "expiration_date",
    "family_friendly",
    "live",
)
_DURATION = re.compile(
    r"P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?=\d|\.\d)(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?",
    re.I | re.A,
)
_UNITS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
# A URL without og:video:type is a file (content_loc) when its path ends so.
# fmt: off
_VIDEO_EXTENSIONS = (
    ".mp4", ".m4v", ".webm", ".ogv", ".ogg", ".mov", ".mpg", ".mpeg", ".avi", ".wmv", ".flv",
    ".mkv", ".3gp", ".m3u8", ".mpd", ".ts",
)
# fmt: on
_PLAYER_TYPES = frozenset({"text/html", "application/x-shockwave-flash"})


def _duration(value: Any, problems: list[str]) -> int | None:
    text = _text(value)
    if text is None:
        return None
    m = _DURATION.fullmatch(text)
    if m is None or m.group(0) in ("P", "p") or not any(m.group(u) for u in _UNITS):
        problems.append(f"duration {text!r} is not an ISO 8601 duration: left out")
        return None
    total = sum(float(m.group(u).replace(",", ".")) * s for u, s in _UNITS.items() if m.group(u))
    seconds = int(total + 0.5)
    if seconds > MAX_VIDEO_DURATION:
        problems.append(f"duration {seconds} s is over Google's limit of 28,800 s: left out")
        return None
    if seconds < 1:
        problems.append(f"duration {seconds} s is under Google's minimum of 1 s: left out")
        return None
    return seconds


def _date(value: Any, what: str, problems: list[str]) -> str | None:
    text = _text(value)
    if text is None:
        return None
    found = w3c_datetime(text)
    if found is None:
        problems.append(
            f"{what} {text!r} is not a W3C date or date-time with a time zone: left out"
        )
    return found


def _live(value: Any) -> bool | None:
    """From ``publication``: a ``BroadcastEvent`` is live unless its
    ``isLiveBroadcast`` says it is not; any event's ``isLiveBroadcast`` counts."""
    events = value if isinstance(value, list) else [value]
    for event in events:
        if not isinstance(event, dict):
            continue
        flag = _bool(event.get("isLiveBroadcast"))
        if flag is not None:
            return flag
        if "BroadcastEvent" in _types(event):
            return True
    return None


def _from_schema(node: Mapping[str, Any], base: str) -> dict[str, Any]:
    """A draft video from a JSON-LD ``VideoObject`` or a microdata item (the same
    shape: property -> value or list of values)."""
    problems: list[str] = []
    return {
        "thumbnail_loc": _url(base, node.get("thumbnailUrl")) or _url(base, node.get("thumbnail")),
        "title": _text(node.get("name")),
        "description": _text(node.get("description")),
        "content_loc": _url(base, node.get("contentUrl")),
        "player_loc": _url(base, node.get("embedUrl")),
        "duration": _duration(node.get("duration"), problems),
        "publication_date": _date(node.get("uploadDate"), "uploadDate", problems),
        "expiration_date": _date(node.get("expires"), "expires", problems),
        "family_friendly": _bool(node.get("isFamilyFriendly")),
        "live": _live(node.get("publication")),
        "problems": problems,
    }


def _jsonld_videos(node: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """Every ``VideoObject`` in a JSON-LD value, wherever it is (not inside another)."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, list):
        for item in node:
            yield from _jsonld_videos(item, depth + 1)
    elif isinstance(node, dict):
        if "VideoObject" in _types(node):
            yield node
            return
        for value in node.values():
            if isinstance(value, dict | list):
                yield from _jsonld_videos(value, depth + 1)


_URL_ELEMENTS = {
    "audio": "src",
    "embed": "src",
    "iframe": "src",
    "img": "src",
    "source": "src",
    "track": "src",
    "video": "src",
    "a": "href",
    "area": "href",
    "link": "href",
    "object": "data",
}


def _microdata_value(el: Any, base: str) -> Any:
    """An ``itemprop``'s value, as the microdata standard reads it."""
    tag = el.tag
    if tag == "meta":
        return el.get("content")
    if tag in _URL_ELEMENTS:
        value = el.get(_URL_ELEMENTS[tag])
        return urljoin(base, clean_href(value)) if value else None
    if tag in ("data", "meter"):
        return el.get("value")
    if tag == "time" and el.get("datetime") is not None:
        return el.get("datetime")
    return "".join(el.itertext())


def _microdata_item(scope: Any, base: str, depth: int = 0) -> dict[str, Any]:
    """A microdata item as a JSON-LD-like object: ``@type`` and property -> list
    of values (a nested item an object of its own)."""
    item: dict[str, Any] = {"@type": (scope.get("itemtype") or "").split()}
    stack = list(reversed(scope))
    while stack:
        el = stack.pop()
        if not isinstance(el.tag, str):
            continue  # a comment
        scoped = el.get("itemscope") is not None
        names = (el.get("itemprop") or "").split()
        if names:
            if scoped:
                value = _microdata_item(el, base, depth + 1) if depth < _MAX_DEPTH else None
            else:
                value = _microdata_value(el, base)
            for name in names:
                item.setdefault(name, []).append(value)
        if not scoped:
            stack.extend(reversed(el))
    return item


def _og_videos(metas: Mapping[str, list[str]], root: Any, base: str) -> list[dict[str, Any]]:
    """Open Graph videos: each ``og:video``/``og:video:url`` starts one (unless the
    current one has no URL yet), ``:secure_url`` and ``:type`` belong to the
    current one."""
    groups: list[dict[str, str]] = []
    for meta in root.iter("meta"):
        key = (meta.get("property") or meta.get("name") or "").strip().lower()
        content = meta.get("content")
        if content is None or not key.startswith("og:video"):
            continue
        if key in ("og:video", "og:video:url"):
            if not groups or "url" in groups[-1]:
                groups.append({})
            groups[-1]["url"] = content
        elif key in ("og:video:secure_url", "og:video:type"):
            if not groups or key.rpartition(":")[2] in groups[-1]:
                groups.append({})
            groups[-1][key.rpartition(":")[2]] = content
    out: list[dict[str, Any]] = []
    thumbnail = next(
        (u for u in (_absolute(base, v) for v in metas.get("og:image", ())) if u), None
    )
    for group in groups:
        url = _absolute(base, group.get("secure_url")) or _absolute(base, group.get("url"))
        if url is None:
            continue
        kind = group.get("type", "").strip().lower()
        if kind:
            player = kind in _PLAYER_TYPES
        else:
            player = not urlsplit(url).path.lower().endswith(_VIDEO_EXTENSIONS)
        out.append(
            {
                "thumbnail_loc": thumbnail,
                "title": _first_text(metas.get("og:title")),
                "description": _first_text(metas.get("og:description")),
                "player_loc" if player else "content_loc": url,
                "problems": [],
            }
        )
    return out


def _video_elements(root: Any, metas: Mapping[str, list[str]], base: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    page_title: str | None = None
    for video in root.iter("video"):
        poster = _absolute(base, video.get("poster"))
        if poster is None:
            continue
        src = _absolute(base, video.get("src"))
        if src is None:
            for source in video.iter("source"):
                src = _absolute(base, source.get("src"))
                if src is not None:
                    break
        title = _text(video.get("title"))
        if title is None:
            page_title = page_title or _page_title(root)
            title = page_title
        out.append(
            {
                "thumbnail_loc": poster,
                "title": title,
                "description": _first_text(metas.get("description")),
                "content_loc": src,
                "problems": [],
            }
        )
    return out


def _same_page(url: str | None, page: str) -> bool:
    if url is None:
        return False
    return (normalize_url(url) or url) == page


def videos(root: Any, base: str, page_url: str) -> tuple[VideoFacts, ...]:
    """The videos of a page (see the module docstring), URLs absolute against
    *base*; *page_url*: the page's own URL, which Google forbids as a video's
    content_loc or player_loc."""
    if root is None or not hasattr(root, "iter"):
        return ()
    metas = _metas(root)
    drafts: list[dict[str, Any]] = []
    for block in _jsonld_blocks(root):
        drafts.extend(_from_schema(node, base) for node in _jsonld_videos(block))
    for scope in root.xpath("//*[@itemscope][@itemtype]"):
        if "VideoObject" in _types({"@type": scope.get("itemtype").split()}):
            drafts.append(_from_schema(_microdata_item(scope, base), base))
    drafts.extend(_og_videos(metas, root, base))
    drafts.extend(_video_elements(root, metas, base))

    page = normalize_url(page_url) or page_url
    merged: list[dict[str, Any]] = []
    for draft in drafts:
        for key in ("content_loc", "player_loc"):
            if _same_page(draft.get(key), page):
                draft["problems"].append(
                    f"{key} {draft[key]} is the page itself (Google: it must not be): left out"
                )
                draft[key] = None
        same = next(
            (
                kept
                for kept in merged
                if any(
                    draft.get(k) is not None and draft.get(k) == kept.get(k)
                    for k in ("content_loc", "player_loc")
                )
            ),
            None,
        )
        if same is None:
            merged.append(draft)
            continue
        for name in _VIDEO_FIELDS:
            if same.get(name) is None:
                same[name] = draft.get(name)
        same["problems"].extend(p for p in draft["problems"] if p not in same["problems"])
    return tuple(_facts(draft) for draft in merged)


def _facts(draft: Mapping[str, Any]) -> VideoFacts:
    missing = [name for name in _REQUIRED if draft.get(name) is None]
    if draft.get("content_loc") is None and draft.get("player_loc") is None:
        missing.append("content_loc or player_loc")
    values: dict[str, Any] = {name: draft.get(name) for name in _VIDEO_FIELDS}
    return VideoFacts(
        **values, missing=tuple(missing), problems=tuple(dict.fromkeys(draft["problems"]))
    )


# -- news ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewsFacts:
    """An article's publication, as a news sitemap's ``news:news`` carries it
    (the publication's name is the crawl's setting, not the page's).

    JSON: ``{"publication_date": ..., "title": ..., "language": ...}``."""

    publication_date: str  # W3C date or date-time
    title: str | None = None
    language: str | None = None  # ISO 639, or zh-cn / zh-tw

    def to_json(self) -> dict[str, Any]:
        return {
            "publication_date": self.publication_date,
            "title": self.title,
            "language": self.language,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NewsFacts:
        return cls(data["publication_date"], data.get("title"), data.get("language"))


# schema.org's Article types a news page uses: Article, NewsArticle and its subtypes,
# BlogPosting and LiveBlogPosting.
_ARTICLES = frozenset(
    {
        "Article",
        "NewsArticle",
        "AnalysisNewsArticle",
        "AskPublicNewsArticle",
        "BackgroundNewsArticle",
        "OpinionNewsArticle",
        "ReportageNewsArticle",
        "ReviewNewsArticle",
        "BlogPosting",
        "LiveBlogPosting",
    }
)
# ISO 639: the two-letter codes (639-1) and the three-letter ones (639-2/T and B,
# 639-3), lowercase.
_ISO639 = frozenset(
    code.lower()
    for lang in pycountry.languages
    for code in (
        getattr(lang, "alpha_2", None),
        getattr(lang, "alpha_3", None),
        getattr(lang, "bibliographic", None),
    )
    if code
)


def _articles(node: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """Article objects of a JSON-LD block: at its top level, in lists, ``@graph``
    and ``mainEntity`` (not in other properties: an article's ``citation`` is not
    the page)."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, list):
        for item in node:
            yield from _articles(item, depth + 1)
    elif isinstance(node, dict):
        if _types(node) & _ARTICLES:
            yield node
        for key in ("@graph", "mainEntity"):
            if key in node:
                yield from _articles(node[key], depth + 1)


def news_language(tag: str) -> str | None:
    """A language tag (``<html lang>``) as news sitemaps want it: the primary
    subtag lowercased if it is an ISO 639 code, ``zh-cn`` or ``zh-tw`` for Chinese
    written in Simplified or Traditional characters (by script, else by region),
    else None."""
    parts = tag.strip().replace("_", "-").lower().split("-")
    primary, rest = parts[0], parts[1:]
    if not primary.isascii() or primary not in _ISO639:
        return None
    if primary == "zh":
        if "hans" in rest:
            return "zh-cn"
        if "hant" in rest:
            return "zh-tw"
        if any(r in ("cn", "sg") for r in rest):
            return "zh-cn"
        if any(r in ("tw", "hk", "mo") for r in rest):
            return "zh-tw"
    return primary


def news(root: Any, response: Response) -> NewsFacts | None:
    """The page's publication (see the module docstring), or None when it gives no
    publication date that is a W3C date or date-time with a time zone."""
    if root is None or not hasattr(root, "iter"):
        return None
    metas = _metas(root)
    published = next(
        (d for d in map(w3c_datetime, metas.get("article:published_time", ())) if d), None
    )
    headline: str | None = None
    for block in _jsonld_blocks(root):
        for article in _articles(block):
            if headline is None:
                headline = _text(article.get("headline"))
            if published is None:
                published = w3c_datetime(_text(article.get("datePublished")) or "")
    if published is None:
        return None
    title = _first_text(metas.get("og:title")) or headline or _page_title(root)
    html = root if root.tag == "html" else next(iter(root.iter("html")), None)
    tag = None if html is None else html.get("lang") or html.get("xml:lang")
    if not tag:
        header = response.headers.get(b"Content-Language")
        tag = header.decode("latin-1").split(",")[0] if header else None
    return NewsFacts(published, title, news_language(tag) if tag else None)
