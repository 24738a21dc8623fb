"""Ledger pipeline: record every decision in the run's ledger
(:class:`crawler.ledger.runstate.RunState` opens and files it). Keyed by the dedup key:
a page reached under two forms is recorded once, the second form kept as an alias, the
first final decision wins (docs/ledger.md). First-seen times carry over from the
previous run; robots.txt's ``Sitemap:`` lines go to ``meta``; a
:class:`~crawler.core.items.Linked` item gives a sitemap URL its linking page.

Stats: ``sitemap/decision/<decision>`` for every final decision as it is recorded
(the publisher sets them from the ledger once the books are closed),
``sitemap/conditional/requests`` (conditional requests answered or failed, whichever
process sent them), ``sitemap/duplicates``, ``sitemap/aliases``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import signals

from crawler.core.decisions import QUEUED
from crawler.core.items import Alias, Linked, UrlRecord
from crawler.ledger.runstate import RunState
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.ledger.ledger import Ledger
    from crawler.ledger.previous import PreviousRun


@dataclass(eq=False)
class LedgerPipeline(RecordPipeline):
    """Writes into *ledger* (None: a run that keeps no books); *previous*: whose first-seen
    times carry over; *run_started*: the first-seen time of a URL new in this run."""

    ledger: Ledger | None
    previous: PreviousRun | None
    run_started: float
    stats: StatsCollector
    robots_sitemaps: list[str] = field(init=False, default_factory=list)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        state = RunState.of(crawler)
        pipeline = cls(state.ledger, state.previous, state.started.timestamp(), crawler.stats)
        crawler.signals.connect(pipeline.robots_parsed, signal=signals.robots_parsed)
        return pipeline

    def robots_parsed(self, robotparser: Any, request: Any) -> None:
        sitemaps = getattr(getattr(robotparser, "rp", None), "sitemaps", None)
        if sitemaps and self.ledger is not None:
            self.robots_sitemaps.extend(s for s in sitemaps if s not in self.robots_sitemaps)
            self.ledger.set_meta("robots_sitemaps", self.robots_sitemaps)

    def _process(self, item: Any) -> Any:
        if self.ledger is None:
            return item
        if isinstance(item, Alias):
            assert item.key is not None
            self.ledger.add_alias(item.alias, item.key)
            self.stats.inc_value("sitemap/aliases")
            return item
        if isinstance(item, Linked):
            self.ledger.linked(item.key, item.referrer)
            return item
        if not isinstance(item, UrlRecord):
            return item
        if item.conditional:
            self.stats.inc_value("sitemap/conditional/requests")
        prev = self.previous.get(item.key) if self.previous and item.key else None
        item.first_seen = prev["first_seen"] if prev and prev["first_seen"] else self.run_started
        if self.ledger.record(item):
            if item.decision != QUEUED:
                self.stats.inc_value(f"sitemap/decision/{item.decision}")
        elif item.decision != QUEUED:
            self.stats.inc_value("sitemap/duplicates")
        return item
