"""What the crawl needs from an HTML page's body, in one small value:
:func:`analyse_response` parses and reads a page once (most of a crawl's CPU on pages
of real size) and returns a :class:`PageAnalysis` that the page judge
(:mod:`crawler.crawl.judge`) decides from. It runs in a worker of
:mod:`crawler.page.parsepool` (:func:`analyse`) or in the crawl's process, with the same
result (the tests check it)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.http import HtmlResponse

from crawler.core.urls import Stripping
from crawler.page.appshell import shell_signs
from crawler.page.content import bag_hash, main_content, own_hash
from crawler.page.hreflang import declared
from crawler.page.links import LinkResolver, PageFacts, Resolved, page_facts, parse_html
from crawler.page.pagemedia import NewsFacts, images, news
from crawler.page.pagevideos import VideoFacts, videos
from crawler.page.softnotfound import PagePrint, page_print, says_not_found

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: The media types read as HTML pages.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


@dataclass(frozen=True, slots=True)
class Rich:
    """What rich data the crawl wants from its pages (all off: none is read)."""

    hreflang: bool = False
    images: bool = False
    videos: bool = False
    news: bool = False

    def __bool__(self) -> bool:
        return self.hreflang or self.images or self.videos or self.news

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Rich:
        get, news = settings.getbool, bool(settings.get("SITEMAP_NEWS_PUBLICATION"))
        return cls(get("SITEMAP_HREFLANG"), get("SITEMAP_IMAGES"), get("SITEMAP_VIDEOS"), news)


#: No rich data: a plain crawl.
NO_RICH = Rich()


@dataclass(frozen=True, slots=True)
class RichFacts:
    """A page's rich data, URLs absolute and normalised (the videos' absolute only)."""

    alternates: tuple[tuple[str, str], ...] = ()
    images: tuple[str, ...] = ()
    videos: tuple[VideoFacts, ...] = ()
    news: NewsFacts | None = None


@dataclass(slots=True)
class PageAnalysis:
    facts: PageFacts
    # facts.hrefs resolved (None: not http(s)), each once in page order (the spider judges
    # a link once a page; every None kept: each counts), facts.hrefs left empty: joining
    # and normalising was the largest part of the crawl process's own work on a page.
    links: list[Resolved | None]
    encoding: str  # the response's encoding (declared, or detected from the body)
    content_hash: str  # of the whole body
    main_hash: str | None  # of the main content (crawler.page.content)
    own_hash: str | None = None  # of the page's own content (crawler.page.content)
    rich: RichFacts | None = None  # with Rich options on
    soft_print: PagePrint | None = None  # when asked for (crawler.page.softnotfound)
    # crawler.page.content.bag_hash, for a page with a query or a link to its own path
    # with one (crawler.crawl.params learns from it that ?sort= changes nothing).
    bag_hash: str | None = None
    shell: str | None = None  # crawler.page.appshell.shell_signs
    # facts.unfollowed resolved: (kind, normalised URL), each once, for explain.
    unfollowed: tuple[tuple[str, str], ...] = ()
    not_found: str | None = None  # crawler.page.softnotfound.says_not_found


def analyse_response(
    response: HtmlResponse,
    agents: Iterable[str],
    volatile: Iterable[str],
    resolver: LinkResolver,
    rich: Rich = NO_RICH,
    prints: bool | str = False,
) -> PageAnalysis:
    """The analysis of an HTML *response*; *prints*: with its soft-404 fingerprint
    (``"exact"``: without its simhash)."""
    root = parse_html(response)
    facts = page_facts(response, agents, root)
    # Before the main-content hash strips <noscript>.
    shell = shell_signs(root, len(facts.hrefs))
    encoding = response.encoding
    resolved = resolver.resolve_all(facts.base, facts.hrefs, encoding)
    links = list({link or i: link for i, link in enumerate(resolved)}.values())  # see .links
    # Resolved, the raw hrefs are spent: not sent back (half the result's size).
    facts.hrefs = []
    kinds = [kind for kind, _ in facts.unfollowed]
    refs = resolver.resolve_all(facts.base, [href for _, href in facts.unfollowed], encoding)
    unfollowed = tuple(
        dict.fromkeys((kind, ref.url) for kind, ref in zip(kinds, refs, strict=True) if ref)
    )
    facts.unfollowed = []
    # Before the main-content hash, which strips scripts (JSON-LD) from the tree.
    rich_facts = _rich(response, root, facts.base, rich, resolver) if rich else None
    main_hash, text = main_content(root, volatile)
    base = response.url.partition("?")[0] + "?"
    variants = "?" in response.url or any(
        link is not None and link.url.startswith(base) for link in links
    )
    bag = bag_hash(root) if variants else None
    not_found = says_not_found(root, facts.title, len(text))
    return PageAnalysis(
        facts=facts,
        links=links,
        encoding=encoding,
        content_hash=hashlib.blake2b(response.body, digest_size=16).hexdigest(),
        rich=rich_facts,
        main_hash=main_hash,
        own_hash=own_hash(root),  # last: it strips the tree
        soft_print=page_print(text, response.url, prints is True) if prints else None,
        bag_hash=bag,
        shell=shell,
        unfollowed=unfollowed,
        not_found=not_found,
    )


def not_found_print(response: HtmlResponse, volatile: Iterable[str]) -> PagePrint | None:
    """The words' print (no simhash) of the site's own "not found" page, as the soft-404
    probe got it answered 404: a page answered 200 with the same main text is one."""
    _, text = main_content(parse_html(response), volatile)
    return page_print(text, response.url, similar=False)


def _rich(
    response: HtmlResponse, root: object, base: str, rich: Rich, resolver: LinkResolver
) -> RichFacts:
    strip = Stripping(resolver.strip_params, resolver.extra_strip)
    normal = functools.partial(strip.normalize, encoding=response.encoding)
    pairs = declared(root, response, base) if rich.hreflang else ()
    alternates = tuple((code, url) for code, href in pairs if (url := normal(href)) is not None)
    found_images = (normal(image) for image in images(root, base)) if rich.images else ()
    return RichFacts(
        alternates=alternates,
        images=tuple(dict.fromkeys(url for url in found_images if url is not None)),
        videos=videos(root, base, response.url) if rich.videos else (),
        news=news(root, response) if rich.news else None,
    )


# A worker's resolvers, one per crawl configuration (their caches are what counts).
_resolvers: dict[tuple[bool, tuple[str, ...]], LinkResolver] = {}


def analyse(
    url: str,
    status: int,
    headers: dict[bytes, list[bytes]],
    body: bytes,
    agents: tuple[str, ...],
    volatile: tuple[str, ...],
    strip: tuple[bool, tuple[str, ...]],
    rich: Rich = NO_RICH,
    prints: bool | str = False,
) -> PageAnalysis:
    """:func:`analyse_response` of the response made of these parts (in a worker);
    *strip*: the crawl's (``SITEMAP_STRIP_PARAMS``, ``SITEMAP_STRIP_EXTRA``)."""
    resolver = _resolvers.get(strip)
    if resolver is None:
        resolver = _resolvers[strip] = LinkResolver(strip_params=strip[0], extra_strip=strip[1])
    response = HtmlResponse(url=url, status=status, headers=headers, body=body)
    return analyse_response(response, agents, volatile, resolver, rich, prints)
