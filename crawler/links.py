"""Link discovery and the indexing signals of one HTML page.

One pass over the parsed page (lxml, through the response's selector) collects what
the spider needs to decide about the page and where to go next (issue #2,
"Crawling"):

* links to follow: ``<a href>``, ``<area href>``, ``<link rel=alternate hreflang>``,
  resolved against ``<base href>``; ``rel=nofollow`` links are skipped, and a page
  with ``nofollow`` in its robots meta tag or X-Robots-Tag gives none;
* canonicals: ``<link rel=canonical>`` in the head and HTTP ``Link`` headers with
  ``rel=canonical`` (a canonical in the body is ignored, as search engines do);
* ``noindex`` from ``<meta name=robots|googlebot|OUR-TOKEN>`` and ``X-Robots-Tag``
  (unprefixed, or prefixed with one of those agents);
* meta refresh (through Scrapy's ``get_meta_refresh``);
* a lastmod from page metadata, for when Last-Modified is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin

from scrapy.http import HtmlResponse, Response
from scrapy.utils.response import get_base_url, get_meta_refresh

from crawler.lastmod import lastmod_from_page

# Robots directives that are not user-agent names, so "noindex: x" is not a prefix.
_DIRECTIVES = frozenset(
    {
        "all",
        "noindex",
        "nofollow",
        "none",
        "noarchive",
        "nosnippet",
        "notranslate",
        "noimageindex",
        "unavailable_after",
        "max-snippet",
        "max-image-preview",
        "max-video-preview",
        "indexifembedded",
        "nocache",
    }
)
# HTML "whitespace" stripped from attribute URLs, plus tabs and newlines inside them
# (the URL standard removes those too).
_URL_STRIP = " \t\n\r\f"
_TAB_NL = re.compile(r"[\t\n\r]")


@dataclass(slots=True)
class RobotsDirectives:
    noindex: str | None = None  # where it came from, e.g. "meta robots"
    nofollow: str | None = None


@dataclass(slots=True)
class PageFacts:
    links: list[str] = field(default_factory=list)
    canonicals: list[str] = field(default_factory=list)
    refresh: tuple[float, str] | None = None
    robots: RobotsDirectives = field(default_factory=RobotsDirectives)
    page_lastmod: str | None = None


def clean_href(href: str) -> str:
    return _TAB_NL.sub("", href.strip(_URL_STRIP))


def header_directives(response: Response, agents: Iterable[str]) -> RobotsDirectives:
    """``X-Robots-Tag`` directives that apply to one of *agents* (lowercase)."""
    found = RobotsDirectives()
    wanted = set(agents)
    for raw in response.headers.getlist(b"X-Robots-Tag"):
        value = raw.decode("latin-1")
        agent = None
        head, sep, rest = value.partition(":")
        if sep and head.strip().lower() not in _DIRECTIVES:
            agent = head.strip().lower()
            value = rest
        if agent is not None and agent not in wanted:
            continue
        label = f"X-Robots-Tag ({agent})" if agent else "X-Robots-Tag"
        _apply(value, label, found)
    return found


def _apply(value: str, label: str, found: RobotsDirectives) -> None:
    tokens = {t.strip().lower() for t in value.split(",")}
    if "noindex" in tokens or "none" in tokens:
        found.noindex = found.noindex or label
    if "nofollow" in tokens or "none" in tokens:
        found.nofollow = found.nofollow or label


def link_header_canonicals(response: Response) -> list[str]:
    """Targets of HTTP ``Link: <url>; rel="canonical"`` headers (RFC 8288)."""
    out = []
    for raw in response.headers.getlist(b"Link"):
        value = raw.decode("latin-1")
        for m in re.finditer(r"<([^>]*)>\s*((?:;[^,<]*)*)", value):
            params = m.group(2)
            rel = re.search(r";\s*rel\s*=\s*\"?([^\";]*)\"?", params, re.I)
            if rel and "canonical" in rel.group(1).lower().split():
                out.append(urljoin(response.url, m.group(1).strip()))
    return out


def page_facts(response: HtmlResponse, agents: Iterable[str]) -> PageFacts:
    """Everything the spider needs from an HTML page."""
    agents = [a.lower() for a in agents]
    facts = PageFacts(robots=header_directives(response, agents))
    root = response.selector.root
    if root is None or not hasattr(root, "iter"):
        return facts
    base = get_base_url(response)

    meta_names = {"robots", *agents}
    for meta in root.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        if name in meta_names:
            _apply(meta.get("content") or "", f"meta {name}", facts.robots)

    for link in root.xpath("/html/head/link[@rel][@href]"):
        rels = link.get("rel", "").lower().split()
        if "canonical" in rels:
            facts.canonicals.append(urljoin(base, clean_href(link.get("href", ""))))
    facts.canonicals.extend(link_header_canonicals(response))

    interval, url = get_meta_refresh(response, ignore_tags=["noscript"])
    if url is not None and interval is not None:
        facts.refresh = (interval, url)

    facts.page_lastmod = lastmod_from_page(root)

    if facts.robots.nofollow:
        return facts
    for el in root.iter("a", "area", "link"):
        href = el.get("href")
        if not href:
            continue
        rels = (el.get("rel") or "").lower().split()
        if el.tag == "link":
            if "alternate" not in rels or el.get("hreflang") is None:
                continue
        elif "nofollow" in rels:
            continue
        facts.links.append(urljoin(base, clean_href(href)))
    return facts
