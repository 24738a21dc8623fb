"""The items the spider yields: one decision about one URL, and the decisions one
response led to, as one item.

Every URL the crawl discovers ends with exactly one final decision and a reason
(:mod:`crawler.core.decisions`). The frontier and the page judge fill the decision and
the facts they saw; the pipelines add the derived fields (``key``, ``lastmod``,
``first_seen``) and record it in the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy import Request, Spider

# How a URL was first found (the ledger's ``found_by``, issue #19): one of the start
# URLs, a line of the --urls file, an entry of one of the site's sitemaps
# (--seed-sitemaps), or, for all the rest, a page: its link, its redirect, canonical
# or refresh target. ``found_from`` names the seed's source (the sitemap, the file);
# a page's is the ``referrer``.
FOUND_START = "start"
FOUND_URL_FILE = "url-file"
FOUND_SITEMAP = "sitemap"
FOUND_LINK = "link"
FOUND_REDIRECT = "redirect"
FOUND_CANONICAL = "canonical"
FOUND_REFRESH = "refresh"
#: The seeds: URLs found by no page.
SEEDS = (FOUND_START, FOUND_URL_FILE, FOUND_SITEMAP)


@dataclass(slots=True)
class UrlRecord:
    """What the crawl decided about one URL.

    ``url`` is the normalised URL (see :mod:`crawler.core.urls`); ``raw_url`` the form it
    was found in, when different (an alias). ``target`` is where a redirect or a
    canonical points. HTTP header values are kept raw; the pipelines interpret them.
    """

    url: str
    decision: str
    reason: str = ""
    target: str | None = None
    raw_url: str | None = None
    status: int | None = None
    depth: int | None = None
    referrer: str | None = None
    # How it was first found (FOUND_*), and the seed's source (set by the frontier on
    # the ``queued`` record; the ledger keeps them when the final decision comes).
    found_by: str | None = None
    found_from: str | None = None
    # The rule of the frontier's rule book that refused it (crawler.core.decisions.RULES;
    # None for a URL the frontier queued).
    rule: str | None = None
    content_type: str | None = None
    last_modified: str | None = None
    date: str | None = None
    # The dates the page declares (crawler.core.lastmod.Declared), in the order believed:
    # the lastmod pipeline guards them and picks one.
    page_dates: list[Any] = field(default_factory=list)
    title: str | None = None
    content_hash: str | None = None
    etag: str | None = None
    main_hash: str | None = None
    # The main content's hash whatever its order (crawler.page.content.bag_hash): what
    # crawler.crawl.params learns from besides main_hash; not kept in the ledger.
    bag_hash: str | None = None
    links: list[str] = field(default_factory=list)
    # What the page refers to on its site without the crawl following it, as
    # "KIND URL" (KIND: nofollow, image, stylesheet, script; URL normalised): kept
    # for explain (issue 24).
    unfollowed: list[str] = field(default_factory=list)
    # A listed page's rich data (issue #14), JSON-able: the hreflang alternates it
    # declares ([code, URL]), its images, its complete videos (VideoFacts.to_json),
    # its news publication (NewsFacts.to_json), and what was left out, in words.
    alternates: list[list[str]] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    videos: list[dict[str, Any]] = field(default_factory=list)
    news: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    # Whether the page was rendered in a headless Chromium and why, or why not
    # (crawler.fetch.rendering; None: its raw HTML showed no need).
    render: str | None = None
    # Set when a 304 replays the previous run's record: lastmod etc. are final.
    replayed: bool = False
    # Set when the URL was asked conditionally (and answered, or failed).
    conditional: bool = False
    # The dedup key (filled by the frontier when it keys the URL, else by the
    # normalise pipeline) and, for a listed page, the published address (the judge).
    key: str | None = None
    loc: str | None = None
    # Filled by the pipelines.
    lastmod: str | None = None
    lastmod_source: str | None = None
    # Which declaration gave a page-sourced lastmod ("JSON-LD WebPage dateModified"),
    # and every declaration with what became of it (JSON: [label, value, verdict]).
    lastmod_from: str | None = None
    page_verdicts: str | None = None
    changed_at: str | None = None
    first_seen: float | None = None
    # The change history of a listed page (pipelines/history.py): the run that first
    # listed it, the run that saw its lastmod move, and one flag a run ("1": changed).
    listed_at: str | None = None
    lastmod_moved_at: str | None = None
    history: str | None = None
    # Its entry's section, changefreq and priority by the user's rules (pipelines/rules.py).
    section: str | None = None
    changefreq: str | None = None
    priority: str | None = None
    warnings: list[str] = field(default_factory=list)
    # The robots directives the response gave that apply to us, where each came
    # from: "noindex (meta robots), nofollow (X-Robots-Tag)" (None: none). Kept for
    # `explain` (issue 17); the decision is made from them by the judge.
    robots: str | None = None
    # What the fetch cost (the HTML report's slowest and largest pages, issue #17):
    # Scrapy's download latency in seconds, and the body's bytes (decompressed; a
    # 304 keeps the size of the body it replays).
    elapsed: float | None = None
    size: int | None = None


@dataclass(slots=True)
class Alias:
    """Another form under which an already discovered URL was found (a tracking
    parameter, another query order, an unencoded character)."""

    alias: str
    url: str
    key: str | None = None


@dataclass(slots=True)
class Linked:
    """A URL first found in a sitemap (``found_by`` ``sitemap``) that a page links
    to after all: its ``referrer`` is that page, so an orphan (no referrer) is told
    from a linked page (issue #19; the audit reads it)."""

    key: str
    referrer: str


@dataclass(slots=True)
class PageRecords:
    """The records and aliases that one response led to (its own record, and those
    of the URLs it links to), in the order they were decided, as one item. Scrapy
    gives every item a task, three pipeline calls, a signal and a log record, which
    cost more than the recording (bench/README.md, "One item per response"). The
    pipelines treat each entry as they treat a lone item. ``meta`` is the meta of the
    request it answers (a distributed crawl ends the request's claim with the item),
    ``fetched`` whether a response came."""

    records: list[UrlRecord | Alias | Linked]
    meta: dict[str, Any] = field(default_factory=dict)
    fetched: bool = False


class PageRequest(Request):
    """A request of the crawl: Scrapy's own, but written to the JOBDIR queue (or
    scrapy-redis's) without a search for its callbacks' names. Scrapy's
    :meth:`Request.to_dict` finds them with ``inspect.getmembers(spider)`` for every
    request queued, a measurable share of a large crawl (bench/README.md). The
    callbacks are the spider's own methods, so their names are their ``__name__``;
    :func:`scrapy.utils.request.request_from_dict` reads them back as usual."""

    def to_dict(self, *, spider: Spider | None = None) -> dict[str, Any]:
        d = {
            "url": self.url,
            "callback": _method_name(spider, self.callback),
            "errback": _method_name(spider, self.errback),
            "headers": dict(self.headers),
        }
        for attr in self.attributes:
            d.setdefault(attr, getattr(self, attr))
        d["_class"] = f"{type(self).__module__}.{type(self).__qualname__}"
        return d


def _method_name(spider: Spider | None, method: Any) -> Any:
    if method is None or not callable(method):
        return method
    name = getattr(method, "__name__", None)
    if spider is None or name is None or getattr(spider, name, None) != method:
        raise ValueError(f"{method!r} is not a method of {spider!r}")
    return name
