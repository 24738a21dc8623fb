"""Rules pipeline: each listed page's section, changefreq and priority, by the user's
rules (issue #15).

- ``--section NAME=REGEX`` (``SITEMAP_SECTIONS``, repeatable): the first rule whose
  regex matches the page's published address (``re.search`` on its ``<loc>``)
  decides its section; the rest go to the default section. Each section gets its own
  rotated files, all listed in the one index, so that search engines report on each.
- ``--changefreq REGEX=VALUE`` and ``--priority REGEX=VALUE`` (``SITEMAP_CHANGEFREQ_RULES``,
  ``SITEMAP_PRIORITY_RULES``, repeatable): the first match wins; values are checked
  against the protocol when the settings are (``crawler/commands/settingrules.py``).
- ``--changefreq auto`` (an ``auto`` rule, matched by every page the rules before it
  did not): derived from the page's change history (:mod:`pipelines.history`), which
  assumes one run a day, as a nightly job makes: over the last 7 runs, changed on 5
  or more -> ``daily``, on 1 or more -> ``weekly``; none in the last 7 but one in the
  history kept (30 runs) -> ``monthly``; none in 30 runs -> ``yearly``. With fewer
  than 7 runs of history there is not enough to say, and nothing is written.

A page no rule speaks for gets the set-wide ``SITEMAP_CHANGEFREQ`` and
``SITEMAP_PRIORITY`` (nothing, by default, as before).

Settings: ``SITEMAP_SECTIONS``, ``SITEMAP_CHANGEFREQ_RULES``, ``SITEMAP_PRIORITY_RULES``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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
#: A section's name: what its file names carry.
SECTION_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")


def split_rule(text: str, *, value_last: bool) -> tuple[str, str]:
    """``NAME=REGEX`` (split at the first ``=``) or ``REGEX=VALUE`` (at the last);
    ValueError when there is no ``=``."""
    left, sep, right = text.partition("=") if not value_last else text.rpartition("=")
    if not sep or not left or not right:
        raise ValueError(f"expected {'REGEX=VALUE' if value_last else 'NAME=REGEX'}: {text!r}")
    return left, right


def sections(texts: Iterable[str]) -> list[tuple[str, re.Pattern[str]]]:
    rules = []
    for text in texts:
        name, pattern = split_rule(text, value_last=False)
        rules.append((name, re.compile(pattern)))
    return rules


def value_rules(texts: Iterable[str]) -> list[tuple[re.Pattern[str] | None, str]]:
    """``REGEX=VALUE`` rules; ``auto`` alone is a rule for every page (None)."""
    rules: list[tuple[re.Pattern[str] | None, str]] = []
    for text in texts:
        if text == AUTO:
            rules.append((None, AUTO))
            continue
        pattern, value = split_rule(text, value_last=True)
        rules.append((re.compile(pattern), value))
    return rules


def auto_changefreq(history: str | None) -> str | None:
    """``changefreq`` from a page's change history (see the module docstring)."""
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


class RulesPipeline(RecordPipeline):
    """Applies *section_rules* (name, pattern), *changefreq_rules* and
    *priority_rules* (pattern or None for ``auto``, value) to listed records."""

    def __init__(
        self,
        section_rules: list[tuple[str, re.Pattern[str]]],
        changefreq_rules: list[tuple[re.Pattern[str] | None, str]],
        priority_rules: list[tuple[re.Pattern[str] | None, str]],
    ) -> None:
        self.section_rules = section_rules
        self.changefreq_rules = changefreq_rules
        self.priority_rules = priority_rules

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        return cls(
            sections(settings.getlist("SITEMAP_SECTIONS")),
            value_rules(settings.getlist("SITEMAP_CHANGEFREQ_RULES")),
            value_rules(settings.getlist("SITEMAP_PRIORITY_RULES")),
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls.from_settings(crawler.settings)

    def _process(self, item: Any) -> Any:
        if not isinstance(item, UrlRecord) or item.decision != LISTED or item.loc is None:
            return item
        loc = item.loc
        item.section = next((name for name, p in self.section_rules if p.search(loc)), None)
        item.changefreq = _first(self.changefreq_rules, loc, item.history)
        item.priority = _first(self.priority_rules, loc, None)
        return item
