"""The audit's classes and flags (docs/audit.md says what each means), and the class
a crawl decision gives a listed URL."""

from __future__ import annotations

from typing import Any

from crawler.core import decisions as d
from crawler.core.items import FOUND_SITEMAP

#: The classes, in the reports' order, and how each reads.
MEANINGS = {
    "indexable": "listed and indexable (good)",
    "orphan": "listed and indexable, but linked from no crawled page",
    "redirect": "listed, but redirects",
    "4xx": "listed, but answers 4xx",
    "5xx": "listed, but answers 5xx",
    "noindex": "listed, but noindex",
    "canonicalised": "listed, but names another URL as canonical",
    "duplicate": "listed, but a byte-identical copy of another listed URL (the target)",
    "robots-blocked": "listed, but robots.txt forbids fetching it",
    "off-host": "listed, but on another host or scheme, or outside the sitemap's directory",
    "not-html": "listed, but not an HTML page",
    "error": "listed, but fetching it failed",
    "not-crawled": "listed, never fetched",
    "excluded": "listed, but the crawl met it and left it out by its rules (the reason)",
    "invalid-loc": "the entry's loc is no absolute http(s) URL",
    "missing": "indexable, found by the crawl, in no sitemap",
}
CLASSES = tuple(MEANINGS)
FLAGS = ("duplicate-listing", "dead-orphan")
#: Classes whose URLs are never dead orphans: never fetched (off-host, invalid-loc),
#: indexable (orphan), or met by the crawl and left out by its rules (excluded).
NOT_DEAD = frozenset({"orphan", "invalid-loc", "off-host", "excluded"})
#: Names --fail-on accepts: classes, flags, and "protocol" (any protocol problem).
FAILABLE = frozenset(CLASSES) | frozenset(FLAGS) | {"protocol"}

_BY_DECISION = {
    d.LISTED: "indexable",
    d.DUPLICATE: "indexable",
    d.REDIRECT: "redirect",
    d.CANONICAL: "canonicalised",
    d.NOINDEX: "noindex",
    d.NON_HTML: "not-html",
    d.ROBOTS: "robots-blocked",
    d.OFF_HOST: "off-host",
    d.NON_PUBLIC: "off-host",
    d.OTHER_SCHEME: "off-host",
    d.ERROR: "error",
    d.TOO_LARGE: "error",  # over the download size cap: not judged, reason says why
    d.INVALID: "invalid-loc",
    # The site's "not found" page served with 200: a 404 as search engines see it.
    d.SOFT_404: "4xx",
}


def seeded(row: dict[str, Any] | None) -> bool:
    """Whether the crawl found this URL only in a sitemap (``--seed-sitemaps``): no
    crawled page links to it (a seed a page links to has that page as referrer)."""
    return row is not None and row.get("found_by") == FOUND_SITEMAP and not row["referrer"]


def classify(decision: str, status: int | None) -> str:
    if decision == d.STATUS:
        status = status or 0
        return "5xx" if status >= 500 else "4xx" if status >= 400 else "error"
    return _BY_DECISION.get(decision, "not-crawled")
