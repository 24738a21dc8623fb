"""The crawl's own rules, as the audit applies them to a listed URL the crawl never met.

A listed URL that the crawl met and left out by its rules has that decision in the
ledger (:data:`crawler.decisions.RULED_OUT`). One it never met (linked only from
pages its rules excluded) is judged here by the user's rules that the ledger keeps
in its ``scope`` meta (``--include`` and ``--exclude``, in the frontier's order and
wording): such a URL is ``excluded`` in the report, never an orphan, and the audit
does not fetch it (issue 24).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from crawler.ledger import Ledger
from crawler.urls import url_key


class CrawlRules:
    """The ``--include`` and ``--exclude`` rules of a crawl (its ledger's ``scope``
    meta), and its start URL, which they never exclude."""

    def __init__(self, scope: dict[str, Any], start: str | None) -> None:
        self.include = [re.compile(p) for p in scope.get("include") or ()]
        self.exclude = [re.compile(p) for p in scope.get("exclude") or ()]
        self.start_key = url_key(start) if start else None

    @classmethod
    def of_ledger(cls, path: Path) -> CrawlRules:
        """The rules of the crawl whose ledger is at *path*."""
        ledger = Ledger(path)
        try:
            scope = ledger.get_meta("scope", {}) or {}
            start = ledger.get_meta("start_url")
        finally:
            ledger.close()
        return cls(
            scope if isinstance(scope, dict) else {}, start if isinstance(start, str) else None
        )

    def excludes(self, url: str) -> str | None:
        """Why the crawl's rules leave *url* (crawl space, normalised) out, or None."""
        if self.start_key is not None and url_key(url) == self.start_key:
            return None
        if self.include and not any(p.search(url) for p in self.include):
            return "matches no --include rule"
        for p in self.exclude:
            if p.search(url):
                return f"matches --exclude {p.pattern!r}"
        return None
