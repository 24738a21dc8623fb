"""Link discovery and the indexing signals of one HTML page, in one pass
(docs/crawling.md, "Links"): links to follow (``<a>``, ``<area>``,
``<link rel=alternate hreflang>``; none with ``rel=nofollow`` or on a ``nofollow``
page), what the page refers to without the crawl following it (for ``explain``),
canonicals (the head's and ``Link`` headers: search engines ignore one in the body),
``noindex``/``nofollow`` from ``<meta name=robots|googlebot|OUR-TOKEN>`` and
``X-Robots-Tag``, meta refresh, and the dates it declares."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import urljoin

from lxml import etree
from scrapy.http import HtmlResponse, Response
from scrapy.utils.response import get_base_url, get_meta_refresh

from crawler.core.lastmod import Declared, page_dates
from crawler.core.seen import fingerprint
from crawler.core.urls import C0_CONTROL_OR_SPACE, normalize_url, url_key

# Robots directives that are not user-agent names, so "noindex: x" is not a prefix.
# fmt: off
_DIRECTIVES = frozenset({
    "all", "noindex", "nofollow", "none", "noarchive", "nosnippet", "notranslate", "noimageindex",
    "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview",
    "indexifembedded", "nocache",
})
# fmt: on
# HTML "whitespace" stripped from attribute URLs, plus tabs and newlines inside them
# (the URL standard removes those too).
_URL_STRIP = " \t\n\r\f"
# The end tags of the document, which libxml2's parser stops at and a browser reads
# past (HTML's "after body" insertion modes): reopen_body, docs/crawling.md, "Links".
_DOCUMENT_END = re.compile(r"</(?:body|html)\s*>", re.I)
_TAB_NL = re.compile(r"[\t\n\r]")


@dataclass(slots=True)
class RobotsDirectives:
    noindex: str | None = None  # where it came from, e.g. "meta robots"
    nofollow: str | None = None


@dataclass(slots=True)
class PageFacts:
    # Links to follow as the page wrote them, and the base URL they are relative
    # to: the spider resolves them through a LinkResolver.
    hrefs: list[str] = field(default_factory=list)
    base: str = ""
    canonicals: list[str] = field(default_factory=list)
    refresh: tuple[float, str] | None = None
    robots: RobotsDirectives = field(default_factory=RobotsDirectives)
    # The dates the page declares (crawler.core.lastmod.page_dates), in the order believed.
    page_dates: list[Declared] = field(default_factory=list)
    title: str | None = None  # <title>, whitespace collapsed (the delta feed's entry title)
    # What the page refers to without the crawl following it, as (kind, href as
    # written): "nofollow" links, and the "image", "stylesheet" and "script" it embeds.
    unfollowed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def links(self) -> list[str]:
        """The links to follow, absolute."""
        return [urljoin(self.base, clean_href(href)) for href in self.hrefs]


def clean_href(href: str) -> str:
    return _TAB_NL.sub("", href.strip(_URL_STRIP))


def _title(root: Any) -> str | None:
    """The page's ``<title>`` (the first), whitespace collapsed, at most 500 characters."""
    for element in root.iter("title"):
        text = " ".join((element.text or "").split())
        return text[:500] or None
    return None


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


# RFC 8288, section 3: link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param ),
# link-param = token BWS [ "=" BWS ( token / quoted-string ) ]; link-values are
# separated by commas (outside <> and quoted strings).
_LINK_VALUE = re.compile(
    r"<(?P<target>[^>]*)>(?P<params>(?:\s*;\s*[^;,=\s]+(?:\s*=\s*(?:\"(?:[^\"\\]|\\.)*\"|[^;,]*))?)*)"
)
_LINK_PARAM = re.compile(
    r";\s*(?P<name>[^;,=\s]+)(?:\s*=\s*(?:\"(?P<quoted>(?:[^\"\\]|\\.)*)\"|(?P<token>[^;,]*)))?"
)
_QUOTED_PAIR = re.compile(r"\\(.)")


def link_headers(response: Response) -> Iterator[tuple[str, dict[str, str]]]:
    """(target, parameters) of each link-value of the response's ``Link`` headers; a
    parameter named twice keeps its first value (RFC 8288, 3.3 says so of ``rel``);
    names are lowercased."""
    for raw in response.headers.getlist(b"Link"):
        for link in _LINK_VALUE.finditer(raw.decode("latin-1")):
            params: dict[str, str] = {}
            for param in _LINK_PARAM.finditer(link.group("params")):
                if param.group("quoted") is not None:
                    text = _QUOTED_PAIR.sub(r"\1", param.group("quoted"))
                else:
                    text = (param.group("token") or "").strip()
                params.setdefault(param.group("name").lower(), text)
            yield link.group("target"), params


def link_header_targets(response: Response, rel: str = "canonical") -> list[str]:
    """Targets of HTTP ``Link: <url>; rel="canonical"`` headers (or of another *rel*)."""
    return [
        urljoin(response.url, target.strip())
        for target, params in link_headers(response)
        if rel in params.get("rel", "").lower().split()
    ]


def parse_html(response: HtmlResponse) -> Any:
    """The page's lxml tree, parsed as parsel's ``create_root_node`` does but with lxml's
    own element classes: lxml.html's class lookup, run in Python for every element
    touched, cost as much as the parse."""
    text = reopen_body(response.text.strip().replace("\x00", ""))
    body = text.encode("utf-8") or b"<html/>"
    parser = etree.HTMLParser(recover=True, encoding="utf-8", huge_tree=True)
    root = etree.fromstring(body, parser=parser, base_url=response.url)
    if root is None:
        root = etree.fromstring(b"<html/>", parser=parser, base_url=response.url)
    return root


def reopen_body(text: str) -> str:
    """*text* without its ``</body>`` and ``</html>`` end tags when anything but white space
    follows its first ``</html>``: a browser reads that into the body, libxml2 drops it.
    Two substring searches (``</html``, then ``</HTML``; not a mixed case) find it: a
    case-insensitive regex over the page cost about 5% of its parse, the search 2%."""
    first = text.find("</html")
    if first < 0:
        first = text.find("</HTML")
    if first < 0 or not _DOCUMENT_END.sub("", text[first:]).strip():
        return text
    return _DOCUMENT_END.sub("", text)


def page_facts(response: HtmlResponse, agents: Iterable[str], root: Any = None) -> PageFacts:
    """Everything the spider needs from an HTML page (*root*: its tree, when the
    caller has parsed it with :func:`parse_html`)."""
    agents = [a.lower() for a in agents]
    facts = PageFacts(robots=header_directives(response, agents))
    if root is None:
        root = response.selector.root
    if root is None or not hasattr(root, "iter"):
        return facts
    base = facts.base = get_base_url(response)

    meta_names = {"robots", *agents}
    for meta in root.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        if name in meta_names:
            _apply(meta.get("content") or "", f"meta {name}", facts.robots)

    for link in root.xpath("/html/head/link[@rel][@href]"):
        rels = link.get("rel", "").lower().split()
        if "canonical" in rels:
            facts.canonicals.append(urljoin(base, clean_href(link.get("href", ""))))
    facts.canonicals.extend(link_header_targets(response))

    interval, url = get_meta_refresh(response, ignore_tags=["noscript"])
    if url is not None and interval is not None:
        facts.refresh = (interval, url)

    body = response.body
    structured = b"dateModified" in body or b"datePublished" in body
    facts.page_dates = page_dates(root, response.url, facts.canonicals, structured)
    facts.title = _title(root)

    hrefs, unfollowed = facts.hrefs, facts.unfollowed
    page_nofollow = bool(facts.robots.nofollow)
    for el in root.iter("a", "area", "link", "img", "script"):
        tag = el.tag
        if tag == "img" or tag == "script":
            src = el.get("src")
            if src:
                unfollowed.append(("image" if tag == "img" else "script", src))
            continue
        href = el.get("href")
        if not href:
            continue
        rel = el.get("rel")
        if tag == "link":
            rels = rel.lower().split() if rel is not None else ()
            if "stylesheet" in rels:
                unfollowed.append(("stylesheet", href))
            elif "alternate" in rels and (el.get("type") or "").lower() in FEED_TYPES:
                unfollowed.append(("feed", href))  # a change signal (crawler.crawl.signals)
            elif API_REL in rels:
                unfollowed.append(("api", href))
            if page_nofollow or "alternate" not in rels or el.get("hreflang") is None:
                continue
        elif page_nofollow or (rel is not None and "nofollow" in rel.lower().split()):
            unfollowed.append(("nofollow", href))
            continue
        hrefs.append(href)
    return facts


#: The types of a feed a page declares (``<link rel=alternate type=...>``), and the
#: relation of the WordPress REST API's root (its ``Link`` header and ``<link>``).
FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml"})
API_REL = "https://api.w.org/"


class Resolved(NamedTuple):
    raw: str  # the href joined with its base, without fragment, as a browser requests it
    url: str  # its normalised form (crawler.core.urls.normalize_url)
    key: str  # the dedup key of url (crawler.core.urls.url_key)
    fp: int  # the key's fingerprint (crawler.core.seen.fingerprint)


class LinkResolver:
    """``href`` -> (absolute, normalised, key), cached: joining and normalising are most of
    a crawler's per-link cost, and most links repeat. A reference not starting with ``#``
    or ``?`` resolves the same against every base in one directory, so the cache is keyed
    on that part of the base, and emptied at *max_entries* (65,536: about 40 MB)."""

    def __init__(
        self,
        *,
        strip_params: bool = True,
        extra_strip: Iterable[str] = (),
        max_entries: int = 1 << 16,
    ) -> None:
        self.strip_params = strip_params
        self.extra_strip = tuple(extra_strip)
        self.max_entries = max_entries
        self._cache: dict[tuple[str, str, str], Resolved | None] = {}
        self._joined: dict[tuple[str, str], Resolved | None] = {}  # by the joined URL

    def resolve(self, base: str, href: str, encoding: str = "utf-8") -> Resolved | None:
        """The link *href* (as written in the page) on a page at *base*, or None for
        a link that is not an http(s) URL."""
        return self.resolve_all(base, (href,), encoding)[0]

    def resolve_all(
        self, base: str, hrefs: Iterable[str], encoding: str = "utf-8"
    ) -> list[Resolved | None]:
        """:meth:`resolve` for every href of one page."""
        directory = _directory(base)
        cache, joined, out = self._cache, self._joined, []
        for href in hrefs:
            # clean_href, without copies for the usual href that needs no cleaning
            href = href.strip(_URL_STRIP)
            if "\n" in href or "\t" in href or "\r" in href:
                href = _TAB_NL.sub("", href)
            if href and href[0] <= " ":
                href = href.lstrip(C0_CONTROL_OR_SPACE)  # as urlsplit does
            # The fragment never reaches the server and makes no other form of a
            # URL; dropping it lets "page.html#a" and "page.html#b" share an entry.
            href = href.partition("#")[0]
            # The part of the base that the join depends on (or more): the whole
            # base for "", "?q", "http:x" (relative to a base of that scheme) and
            # "//" (an empty authority: relative too); the directory for the rest.
            if (
                not href
                or href[0] == "?"
                or (":" in href and _SCHEME_ONLY.match(href))
                or ("//" in href and _EMPTY_AUTHORITY.match(href))
            ):
                key = (base, href, encoding)
            else:
                key = (directory, href, encoding)
            try:
                out.append(cache[key])
                continue
            except KeyError:
                pass
            raw = urljoin(base, href).partition("#")[0]
            if len(cache) >= self.max_entries:
                cache.clear()
                joined.clear()
            # "../x.html" from each directory of a level joins to one URL: normalised once.
            if (raw, encoding) not in joined:
                strip, extra = self.strip_params, self.extra_strip
                url = normalize_url(raw, strip_params=strip, extra_strip=extra, encoding=encoding)
                k = url_key(url) if url else ""
                joined[raw, encoding] = Resolved(raw, url, k, fingerprint(k)) if url else None
            found = cache[key] = joined[raw, encoding]
            out.append(found)
        return out


def _directory(base: str) -> str:
    """The base's directory: what a path-relative reference is resolved against (for
    a base without a path, the whole base)."""
    scheme, sep, rest = base.partition("://")
    rest = rest.partition("#")[0].partition("?")[0]
    if not sep or "/" not in rest:
        return base
    return scheme + sep + rest.rpartition("/")[0] + "/"


# A scheme followed by no "//": "http:x" (relative to an http base), "mailto:x".
_SCHEME_ONLY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?!//)")
# An empty authority and no path: "//", "http://?q".
_EMPTY_AUTHORITY = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//(?:\?|$)")
