"""Crawler-trap detection: URLs that a site can generate without end
(docs/crawling.md, "Order and limits").

A URL is cut, with the reason in the ledger, when one path segment occurs more than
``max_repeats`` times (relative links that keep appending to themselves), the path
has more than ``max_segments`` segments, or it carries a session identifier that
normalisation did not strip (an ASP.NET ``/(S(...))/`` path, or a session parameter
when ``SITEMAP_STRIP_PARAMS`` is off: with it on, they are removed and the URL is the
page without them). ``max_query_variants``, the query strings of one path fetched at
most (the most to learn from: :mod:`crawler.crawl.params`), is counted by the rule
book (:class:`crawler.crawl.rulebook.QueryVariants`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from crawler.core import decisions as d
from crawler.core.decisions import Refusal
from crawler.core.urls import is_session_param

_SESSION_PATH = re.compile(r"/\((?:[A-Z]\([^)]*\))+\)/", re.I)


@dataclass(kw_only=True, eq=False)
class TrapDetector:
    max_repeats: int
    max_segments: int
    max_query_variants: int

    def shape(self, url: str) -> Refusal | None:
        """Why *url* is a trap by its own shape, or None (the query variants are
        counted: crawler.crawl.rulebook.QueryVariants)."""
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        if len(segments) > self.max_segments:
            return _trap("segments", limit=self.max_segments)
        if segments:
            segment, count = Counter(segments).most_common(1)[0]
            if count > self.max_repeats:
                return _trap("repeats", segment=segment, count=count, limit=self.max_repeats)
        if _SESSION_PATH.search(parts.path):
            return _trap("session-path")
        if parts.query:
            for name, _ in parse_qsl(parts.query, keep_blank_values=True):
                if is_session_param(name):
                    return _trap("session-query", name=name)
        return None

    @staticmethod
    def variant_path(url: str) -> str | None:
        """The path whose query variants *url* counts as one of (None: no query)."""
        parts = urlsplit(url)
        return parts.path if parts.query else None


def _trap(kind: str, **values: object) -> Refusal:
    return Refusal(d.TRAP, d.RULE_TRAPS, kind, values)
