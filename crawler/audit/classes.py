"""The audit's classes and flags (docs/audit.md says what each means), and the class
a crawl decision gives a listed URL."""

from __future__ import annotations

from typing import Any

from crawler.core import decisions as d
from crawler.core.items import FOUND_SITEMAP

CLASSES = (
    "indexable",
    "orphan",
    "redirect",
    "4xx",
    "5xx",
    "noindex",
    "canonicalised",
    "duplicate",
    "robots-blocked",
    "off-host",
    "not-html",
    "error",
    "not-crawled",
    "excluded",
    "invalid-loc",
    "missing",
)
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
