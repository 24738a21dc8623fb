"""Schedule pipeline: each URL verified tonight gets its next due date, by the evidence
of its changes (crawler.ledger.schedule; docs/nightly.md#the-revisit-schedule).

A page fetched (or answered 304) is compared with the previous run's record: its own
content, its decision and target. A page kept from the previous run keeps its schedule
as it was; a URL that failed gets none, so the next night asks it again. (The publisher
counts what was verified, kept and changed from the ledger.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crawler.core.decisions import QUEUED
from crawler.core.items import UrlRecord
from crawler.core.lastmod import http_date_to_w3c
from crawler.ledger.runstate import RunState
from crawler.ledger.schedule import keepable
from crawler.page.content import same_page
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.ledger.previous import PreviousRun
    from crawler.ledger.schedule import RevisitPolicy


@dataclass(eq=False)
class SchedulePipeline(RecordPipeline):
    """*policy*: tonight's schedule (None: a run that keeps none); *previous*: the
    previous run's records, to compare with."""

    stats: StatsCollector
    policy: RevisitPolicy | None
    previous: PreviousRun | None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        state = RunState.of(crawler)
        policy = state.policy if state.ledger is not None else None
        return cls(crawler.stats, policy, state.previous)

    def _process(self, item: Any) -> Any:
        if (
            self.policy is None
            or not isinstance(item, UrlRecord)
            or item.kept
            or item.decision == QUEUED
            or not keepable({"due_at": 0, "status": item.status, "decision": item.decision})
        ):
            return item
        prev = self.previous.get(item.key) if self.previous is not None and item.key else None
        changed = changed_since(prev, item)
        dates = [item.lastmod] if item.lastmod else []
        schedule = self.policy.verified(prev, changed, dates)
        for name, value in schedule.items():
            setattr(item, name, value)
        # When, in the site's own time, it was verified: what a signal's date is
        # compared with (crawler.crawl.frontier.Frontier.signal).
        item.verified_date = http_date_to_w3c(item.date) if item.date else None
        return item


def changed_since(prev: dict[str, Any] | None, rec: UrlRecord) -> bool | None:
    """Whether *rec*'s page changed since its previous record *prev*: its decision or
    target, else its own content (None: nothing to compare; a 304 is no change)."""
    if prev is None:
        return None
    if rec.replayed:
        return False
    if prev["decision"] != rec.decision or (prev["target"] or None) != (rec.target or None):
        return True
    same = same_page(prev, rec.own_hash, rec.main_hash, rec.content_hash)
    return None if same is None else not same
