"""The items the spider yields: one decision about one URL, and the decisions one
response led to, as one item.

Every URL the crawl discovers ends with exactly one final decision and a reason
(issue #2, "Deciding what goes in the sitemap"). The spider fills the facts it saw;
the pipelines add the derived fields (``key``, ``loc``, ``lastmod``) and record it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Decisions. ``queued`` is the only non-final one: a URL scheduled but not yet fetched.
QUEUED = "queued"
LISTED = "listed"
REDIRECT = "redirect"
CANONICAL = "canonical"
NOINDEX = "noindex"
STATUS = "status"
NON_HTML = "non-html"
OTHER_SCHEME = "other-scheme"
ROBOTS = "robots-disallowed"
OFF_HOST = "off-host"
NON_PUBLIC = "non-public"
TOO_LONG = "too-long"
EXCLUDED = "excluded"
TRAP = "trap"
CAP = "cap-reached"
DUPLICATE = "duplicate"
INVALID = "invalid-url"
ERROR = "fetch-error"

FINAL_DECISIONS = (
    LISTED,
    REDIRECT,
    CANONICAL,
    NOINDEX,
    STATUS,
    NON_HTML,
    OTHER_SCHEME,
    ROBOTS,
    OFF_HOST,
    NON_PUBLIC,
    TOO_LONG,
    EXCLUDED,
    TRAP,
    CAP,
    DUPLICATE,
    INVALID,
    ERROR,
)

#: Decisions reached by fetching the URL (or by robots.txt and host rules): the audit
#: trusts them. Caps, traps and exclusions are not judgements of the page.
JUDGED = frozenset(
    {
        LISTED,
        REDIRECT,
        CANONICAL,
        NOINDEX,
        STATUS,
        NON_HTML,
        OTHER_SCHEME,
        DUPLICATE,
        INVALID,
        ERROR,
        ROBOTS,
        OFF_HOST,
        NON_PUBLIC,
    }
)


@dataclass(slots=True)
class UrlRecord:
    """What the crawl decided about one URL.

    ``url`` is the normalised URL (see :mod:`crawler.urls`); ``raw_url`` the form it
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
    content_type: str | None = None
    last_modified: str | None = None
    date: str | None = None
    page_lastmod: str | None = None
    content_hash: str | None = None
    etag: str | None = None
    main_hash: str | None = None
    links: list[str] = field(default_factory=list)
    # Set when a 304 replays the previous run's record: lastmod etc. are final.
    replayed: bool = False
    # Set when this decision replaces a "max depth" cap recorded earlier.
    overrides_cap: bool = False
    # Filled by the pipelines.
    key: str | None = None
    loc: str | None = None
    lastmod: str | None = None
    lastmod_source: str | None = None
    changed_at: str | None = None
    first_seen: float | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Alias:
    """Another form under which an already discovered URL was found (a tracking
    parameter, another query order, an unencoded character)."""

    alias: str
    url: str
    key: str | None = None


@dataclass(slots=True)
class PageRecords:
    """The records and aliases that one response led to (its own record, and those
    of the URLs it links to), in the order they were decided, as one item. Scrapy
    gives every item a task, three pipeline calls, a signal and a log record: on
    python3-doc, 530 pages made 4,700 items, and that machinery cost more than the
    recording. The pipelines treat each entry as they treat a lone item."""

    records: list[UrlRecord | Alias]
