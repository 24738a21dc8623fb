"""The crawl's ``--include``/``--exclude`` rule, as the audit applies it to a listed URL
the crawl never met (linked only from pages its rules excluded): such a URL is
``excluded``, never an orphan, and never fetched by the audit.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from crawler.core.urls import url_key
from crawler.crawl.rulebook import Found, IncludeExclude, RuleParams
from crawler.ledger.ledger import LedgerReader


class CrawlRules:
    """A crawl's include/exclude rule, and its start URLs, which it never excludes."""

    def __init__(self, scope: dict[str, Any], start: str | None) -> None:
        params = RuleParams.from_record(start or "", scope)
        self.rule = IncludeExclude(
            [re.compile(p) for p in params.include or ()],
            [re.compile(p) for p in params.exclude or ()],
        )
        self.starts = {url_key(u) for u in (params.starts or (start,)) if u}

    @classmethod
    def of_ledger(cls, path: Path) -> CrawlRules:
        """The rules of the crawl whose ledger is at *path*."""
        with LedgerReader.open(path) as ledger:
            scope = ledger.get_meta("scope", {}) or {}
            start = ledger.get_meta("start_url")
        return cls(
            scope if isinstance(scope, dict) else {}, start if isinstance(start, str) else None
        )

    def excludes(self, url: str) -> str | None:
        """Why the crawl's rules leave *url* (crawl space, normalised) out, or None."""
        found = Found(depth=0, start=url_key(url) in self.starts)
        refusal = self.rule.check(url, found)
        return None if refusal is None else refusal.reason
