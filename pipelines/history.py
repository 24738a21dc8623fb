"""History pipeline: what each listed page's nightly runs have seen change.

A nightly run compares every listed page with the previous successful run's record
(:class:`crawler.ledger.previous.PreviousRun`), after the lastmod pipeline has decided its
lastmod, and keeps three facts the delta feed, ``--changefreq auto`` and IndexNow
build on (issue #15):

- ``listed_at``: the start of the run that first listed the page. The first run is
  the baseline: it adds nothing, so a page it lists has none; a page first listed by
  a later run has that run's time, and keeps it while it stays listed.
- ``lastmod_moved_at``: the start of the last run that saw the page's lastmod move
  (a page that gains or changes its lastmod); kept from run to run.
- ``history``: one flag a run, oldest first, at most :data:`HISTORY_RUNS` kept:
  ``1`` when the run saw the page change (its lastmod moved, or its content), ``0``
  when not. The first run that sees a page has nothing to compare: no flag.

A 304 is a run that saw no change. Records that are not listed carry nothing.

Stats: ``sitemap/history/changed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.core.decisions import LISTED
from crawler.core.items import UrlRecord
from crawler.ledger.runstate import RunState
from crawler.page.content import same_content
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.ledger.previous import PreviousRun

#: Change flags kept per page (a month of nightly runs).
HISTORY_RUNS = 30


class HistoryPipeline(RecordPipeline):
    """*previous*: the previous run (None: this is the baseline run); *run_time*:
    this run's start, as a W3C datetime."""

    def __init__(self, stats: StatsCollector, previous: PreviousRun | None, run_time: str) -> None:
        self.stats = stats
        self.previous = previous
        self.run_time = run_time

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
            and same_content(
                prev["main_hash"], item.main_hash, prev["content_hash"], item.content_hash
            )
            is False
        )
        if changed:
            self.stats.inc_value("sitemap/history/changed")
        history = (prev.get("history") or "") + ("1" if changed else "0")
        item.history = history[-HISTORY_RUNS:]
        return item
