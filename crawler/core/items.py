"""The items the spider yields: one decision about one URL, and the decisions one
response led to, as one item. The frontier and the page judge fill the decision and
the facts they saw; the pipelines add the derived fields and record it in the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy import Request, Spider

# How a URL was first found (the ledger's ``found_by``): a seed (a start URL, a line of
# --urls, a sitemap entry), or a page's link, redirect, canonical or refresh target.
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
    """What the crawl decided about one URL (normalised; ``raw_url``: the form it was
    found in, when different). ``target``: where a redirect or canonical points. HTTP
    header values are kept raw; the pipelines interpret them."""

    url: str
    decision: str
    reason: str = ""
    target: str | None = None
    raw_url: str | None = None
    status: int | None = None
    depth: int | None = None
    referrer: str | None = None
    # How it was first found (FOUND_*) and the seed's source: set on the ``queued`` record.
    found_by: str | None = None
    found_from: str | None = None
    rule: str | None = None  # the rule book's rule that refused it (decisions.RULES)
    content_type: str | None = None
    last_modified: str | None = None
    date: str | None = None
    # The dates the page declares (lastmod.Declared), in the order believed.
    page_dates: list[Any] = field(default_factory=list)
    title: str | None = None
    content_hash: str | None = None
    etag: str | None = None
    main_hash: str | None = None
    # The page's own content (its <main>, without asides and navigation): what the
    # revisit schedule counts as a change (crawler.page.content.own_hash).
    own_hash: str | None = None
    bag_hash: str | None = None  # main_hash whatever the order (page.content); not kept
    links: list[str] = field(default_factory=list)
    # What it refers to without the crawl following it, as "KIND URL" (for explain).
    unfollowed: list[str] = field(default_factory=list)
    # A listed page's rich data (docs/rich.md), JSON-able; ``problems``: what was left out.
    alternates: list[list[str]] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    videos: list[dict[str, Any]] = field(default_factory=list)
    news: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    render: str | None = None  # rendered in Chromium and why, or why not (fetch.rendering)
    replayed: bool = False  # a 304 replayed the previous run's record
    kept: bool = False  # not due tonight: the previous run's record stands, unfetched
    conditional: bool = False  # asked conditionally
    key: str | None = None  # the dedup key
    loc: str | None = None  # a listed page's published address
    # Filled by the pipelines: the lastmod, where it came from, every declaration's
    # verdict (JSON), the change history (pipelines/history.py) and the rules' values.
    lastmod: str | None = None
    lastmod_source: str | None = None
    lastmod_from: str | None = None
    page_verdicts: str | None = None
    changed_at: str | None = None
    first_seen: float | None = None
    listed_at: str | None = None
    lastmod_moved_at: str | None = None
    history: str | None = None
    section: str | None = None
    changefreq: str | None = None
    priority: str | None = None
    warnings: list[str] = field(default_factory=list)
    # The robots directives that apply to us, and where each came from (for explain).
    robots: str | None = None
    # What the fetch cost: download latency in seconds, and the decompressed body's bytes.
    elapsed: float | None = None
    size: int | None = None
    # The revisit schedule (crawler.ledger.schedule): set by pipelines/schedule.py.
    verified_at: float | None = None
    verified_date: str | None = None  # the site's Date then (its own clock), W3C
    revisit_days: float | None = None
    due_at: float | None = None
    checks: int | None = None
    changes: int | None = None


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
    from a linked page (the audit reads it: docs/audit.md, "Classes")."""

    key: str
    referrer: str


@dataclass(slots=True)
class PageRecords:
    """The records and aliases one response led to, in the order decided, as one item:
    Scrapy's cost per item is more than the recording (bench/README.md, "One item per
    response"). ``meta`` is the meta of the request it answers (a distributed crawl
    ends the request's claim with it), ``fetched`` whether a response came."""

    records: list[UrlRecord | Alias | Linked]
    meta: dict[str, Any] = field(default_factory=dict)
    fetched: bool = False


class PageRequest(Request):
    """A request of the crawl, written to the JOBDIR (or scrapy-redis) queue without
    Scrapy's ``inspect.getmembers(spider)`` per request (a measurable share of a large
    crawl, bench/README.md): its callbacks are the spider's methods, named by
    ``__name__``, and ``request_from_dict`` reads them back as usual."""

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
