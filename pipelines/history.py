"""History pipeline: what each listed page's nightly runs have seen change (docs/around.md),
against the previous run's record, after the lastmod pipeline: the columns
``listed_at``, ``lastmod_moved_at`` and ``history`` (docs/ledger.md, "Table urls"),
which the delta feed, ``--changefreq auto`` and IndexNow build on. A 304 is no change.

Stats: ``sitemap/history/changed``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crawler.core.decisions import LISTED
from crawler.core.items import UrlRecord
from crawler.ledger.runstate import RunState
from crawler.page.content import same_page
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.ledger.previous import PreviousRun

#: Change flags kept per page (a month of nightly runs).
HISTORY_RUNS = 30


@dataclass(eq=False)
class HistoryPipeline(RecordPipeline):
    """*previous*: the previous run (None: this is the baseline run); *run_time*:
    this run's start, as a W3C datetime."""

    stats: StatsCollector
    previous: PreviousRun | None
    run_time: str

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        state = RunState.of(crawler)
        return cls(crawler.stats, state.previous, state.run_time)

    def _process(self, item: Any) -> Any:
        if not isinstance(item, UrlRecord) or item.decision != LISTED:
            return item
        if self.previous is None:
            return item  # the baseline run: nothing to compare with
        prev = self.previous.get(item.key) if item.key else None
        if prev is None or prev["decision"] != LISTED:
            item.listed_at = self.run_time  # added since the last run
            return item
        item.listed_at = prev.get("listed_at")
        moved = (prev["lastmod"] or None) != (item.lastmod or None) and item.lastmod is not None
        item.lastmod_moved_at = self.run_time if moved else prev.get("lastmod_moved_at")
        changed = moved or (
            not item.replayed
            and same_page(prev, item.own_hash, item.main_hash, item.content_hash) is False
        )
        if changed:
            self.stats.inc_value("sitemap/history/changed")
        history = (prev.get("history") or "") + ("1" if changed else "0")
        item.history = history[-HISTORY_RUNS:]
        return item
