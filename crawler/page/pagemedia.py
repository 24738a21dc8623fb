"""A page's images and news publication (docs/rich.md, which says what is
read; its videos: :mod:`crawler.page.pagevideos`). Pure functions over a parsed page
whose results are small and picklable (the analysis may run in a worker); URLs
absolute, not normalised. Malformed data is skipped, never raised."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import pycountry
from scrapy.http import Response

from crawler.core.lastmod import item_types, jsonld_blocks, jsonld_walk, page_metas, w3c_datetime
from crawler.page import pageread as read
from crawler.sitemaps.limits import MAX_IMAGES_PER_URL

__all__ = ["NewsFacts", "images", "news", "news_language"]

_HTML_SPACE = " \t\n\r\f"


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
    candidates = _srcset(value) if value else []
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
    """The page's image URLs, absolute against *base* (its ``<base href>``, else its URL),
    in page order, each once, at most *limit*."""
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
            url = read.absolute(base, candidate)
            if url is not None and url not in found:
                found[url] = None
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)


# -- news ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewsFacts:
    """An article's publication, as a news sitemap's ``news:news`` carries it (the
    publication's name is the crawl's setting). JSON: an object with these field names."""

    publication_date: str  # W3C date or date-time
    title: str | None = None
    language: str | None = None  # ISO 639, or zh-cn / zh-tw

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# schema.org's Article types a news page uses: Article, NewsArticle and its subtypes,
# BlogPosting and LiveBlogPosting.
# fmt: off
_ARTICLES = frozenset({
    "Article", "NewsArticle", "AnalysisNewsArticle", "AskPublicNewsArticle",
    "BackgroundNewsArticle", "OpinionNewsArticle", "ReportageNewsArticle", "ReviewNewsArticle",
    "BlogPosting", "LiveBlogPosting",
})
# fmt: on


def _article(node: dict[str, Any]) -> tuple[bool, list[Any]]:
    """Article objects are at a block's top level, in lists, ``@graph`` and
    ``mainEntity`` (not in other properties: an article's ``citation`` is not the page)."""
    return bool(_ARTICLES.intersection(item_types(node))), [
        node.get("@graph"),
        node.get("mainEntity"),
    ]


_CHINESE = {"hans": "cn", "hant": "tw", "cn": "cn", "sg": "cn", "tw": "tw", "hk": "tw", "mo": "tw"}


def news_language(tag: str) -> str | None:
    """A language tag (``<html lang>``) as news sitemaps want it: the primary
    subtag lowercased if it is an ISO 639 code, ``zh-cn`` or ``zh-tw`` for Chinese
    written in Simplified or Traditional characters (by script, else by region),
    else None."""
    parts = tag.strip().replace("_", "-").lower().split("-")
    primary, rest = parts[0], parts[1:]
    codes = ("alpha_2", "alpha_3", "bibliographic")  # ISO 639-1, 2/T and B, 3: read once asked
    if not primary.isascii() or not any(pycountry.languages.get(**{c: primary}) for c in codes):
        return None
    if primary == "zh":
        return next((f"zh-{_CHINESE[part]}" for part in _CHINESE if part in rest), primary)
    return primary


def news(root: Any, response: Response) -> NewsFacts | None:
    """The page's publication: ``article:published_time``, else a JSON-LD article's
    ``datePublished`` (None without one); ``og:title``, else its ``headline``, else
    ``<title>``; ``<html lang>``, else ``Content-Language``, by :func:`news_language`."""
    if root is None or not hasattr(root, "iter"):
        return None
    metas = page_metas(root)
    published = next(
        (d for d in map(w3c_datetime, metas.get("article:published_time", ())) if d), None
    )
    headline: str | None = None
    for block in jsonld_blocks(root):
        for article in jsonld_walk(block, _article, read.MAX_DEPTH):
            if headline is None:
                headline = read.text_value(article.get("headline"))
            if published is None:
                published = w3c_datetime(read.text_value(article.get("datePublished")) or "")
    if published is None:
        return None
    title = read.first_text(metas.get("og:title")) or headline or read.html_title(root)
    html = root if root.tag == "html" else next(iter(root.iter("html")), None)
    tag = None if html is None else html.get("lang") or html.get("xml:lang")
    if not tag:
        header = response.headers.get(b"Content-Language")
        tag = header.decode("latin-1").split(",")[0] if header else None
    return NewsFacts(published, title, news_language(tag) if tag else None)
