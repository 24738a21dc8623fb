"""Rules pipeline: each listed page's section, changefreq and priority, by the user's
rules (docs/around.md; docs/lastmod.md, "changefreq and priority").

For each of ``--section``, ``--changefreq`` and ``--priority`` the first rule whose
regex matches the page's ``<loc>`` decides; ``--changefreq auto`` reads the change
history (:mod:`pipelines.history`). A page no rule speaks for gets
``SITEMAP_CHANGEFREQ`` and ``SITEMAP_PRIORITY``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crawler.core.decisions import LISTED
from crawler.core.items import UrlRecord
from pipelines.history import HISTORY_RUNS
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

AUTO = "auto"


def split_rule(text: str, *, value_last: bool) -> tuple[str, str]:
    """``NAME=REGEX`` (split at the first ``=``) or ``REGEX=VALUE`` (at the last);
    ValueError when there is no ``=``."""
    left, sep, right = text.partition("=") if not value_last else text.rpartition("=")
    if not sep or not left or not right:
        raise ValueError(f"expected {'REGEX=VALUE' if value_last else 'NAME=REGEX'}: {text!r}")
    return left, right


def regex(pattern: str) -> re.Pattern[str]:
    """ValueError, in one line, when *pattern* is no regular expression."""
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(f"{pattern!r} is not a regular expression: {e}") from None


def sections(texts: Iterable[str]) -> list[tuple[str, re.Pattern[str]]]:
    pairs = (split_rule(text, value_last=False) for text in texts)
    return [(name, regex(pattern)) for name, pattern in pairs]


def value_rules(texts: Iterable[str]) -> list[tuple[re.Pattern[str] | None, str]]:
    """``REGEX=VALUE`` rules; ``auto`` alone is a rule for every page (None)."""
    pairs = (("", AUTO) if text == AUTO else split_rule(text, value_last=True) for text in texts)
    return [(regex(pattern) if pattern else None, value) for pattern, value in pairs]


def row_rules(settings: BaseSettings) -> tuple[list[Any], list[Any], list[Any]]:
    """The section, changefreq and priority rules, read here only (docs/around.md)."""
    return (
        sections(settings.getlist("SITEMAP_SECTIONS")),
        value_rules(settings.getlist("SITEMAP_CHANGEFREQ_RULES")),
        value_rules(settings.getlist("SITEMAP_PRIORITY_RULES")),
    )


def auto_changefreq(history: str | None) -> str | None:
    """``changefreq`` from a page's change history (the table in docs/around.md)."""
    if history is None or len(history) < 7:
        return None
    recent = history[-7:].count("1")
    if recent >= 5:
        return "daily"
    if recent >= 1:
        return "weekly"
    if "1" in history:
        return "monthly"
    return "yearly" if len(history) >= HISTORY_RUNS else None


def _first(
    rules: list[tuple[re.Pattern[str] | None, str]], loc: str, history: str | None
) -> str | None:
    for pattern, value in rules:
        if pattern is None:
            return auto_changefreq(history)
        if pattern.search(loc):
            return value
    return None


@dataclass(eq=False)
class RulesPipeline(RecordPipeline):
    """Applies *section_rules* (name, pattern), *changefreq_rules* and
    *priority_rules* (pattern or None for ``auto``, value) to listed records."""

    section_rules: list[tuple[str, re.Pattern[str]]]
    changefreq_rules: list[tuple[re.Pattern[str] | None, str]]
    priority_rules: list[tuple[re.Pattern[str] | None, str]]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(*row_rules(crawler.settings))

    def _process(self, item: Any) -> Any:
        if not isinstance(item, UrlRecord) or item.decision != LISTED or item.loc is None:
            return item
        loc = item.loc
        item.section = next((name for name, p in self.section_rules if p.search(loc)), None)
        item.changefreq = _first(self.changefreq_rules, loc, item.history)
        item.priority = _first(self.priority_rules, loc, None)
        return item
