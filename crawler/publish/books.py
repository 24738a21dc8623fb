"""Closing the books of a run: what only the whole crawl can tell, decided once it is over.

The URLs left queued (``cap-reached``, or why the run could not fetch them), the query
variants and byte-identical pages (:func:`crawler.core.decisions.close_books`), the
rich entries (crawler.publish.richentries); then what the books say, as a
:class:`crawler.core.summary.Books`. Run by the publisher before it decides anything
(docs/ledger.md#decisions, docs/crawling.md#traps-learned).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.core.decisions import CALENDAR, QUEUED, UNFETCHED, UNFETCHED_TIME, close_books
from crawler.core.summary import Books
from crawler.crawl.calendars import date_of
from crawler.crawl.params import settler
from crawler.publish.richentries import settle

if TYPE_CHECKING:
    from crawler.ledger.runstate import RunState

#: Close reasons of a crawl stopped by a budget (Scrapy's CloseSpider extension)
#: that publishes what it judged, in words for the summary. Only time: the other
#: CLOSESPIDER_* closes stay a crawl that did not finish (--max-pages is the page
#: budget that publishes, with its URLs left cap-reached as it goes).
BUDGETS = {"closespider_timeout": "the time budget (--max-time) ran out"}


@dataclass(frozen=True, slots=True)
class BookKeeper:
    """Closes the books of a run: *dedupe_content* (byte-identical pages are one),
    *max_variants* (query variants of a path), *alternate_hosts* (None: pages were
    not read for rich entries, docs/rich.md)."""

    dedupe_content: bool
    max_variants: int
    alternate_hosts: frozenset[str] | None

    def close(self, state: RunState, reason: str, final: bool) -> Books:
        """The books of *state*'s ledger, closed when the run is *final* (an
        interrupted run kept to be resumed is only counted)."""
        ledger = state.ledger
        assert ledger is not None
        carried, left, unlinked, rich = 0, None, None, None
        if final:
            if state.unfetched is not None:
                # The run failed before it could fetch them: say why, not a cap.
                ledger.redecide_queued(*state.unfetched)
            if reason in BUDGETS and state.previous is not None and state.policy is not None:
                # Known pages the budget left unverified keep their record, still
                # due: carried to the next night (crawler.ledger.schedule).
                carried = ledger.carry_queued(state.previous.path)
            left = close_books(
                ledger,
                dedupe_content=self.dedupe_content,
                unfetched=UNFETCHED_TIME if reason == "closespider_timeout" else UNFETCHED,
                variants=settler(self.max_variants),
            )
            unlinked = ledger.listed_unlinked()
            if self.alternate_hosts is not None:
                rich = settle(ledger, state.public, self.alternate_hosts)
        decisions = ledger.counts()
        queued = decisions.pop(QUEUED, 0)
        rows = ledger.rows(decision=CALENDAR)
        policy, previous = state.policy, state.previous
        verified, kept, changed = (
            ledger.schedule_counts(policy.now, previous.path if previous is not None else None)
            if policy is not None
            else (0, 0, 0)
        )
        return Books(
            decisions=decisions,
            queued=queued,
            parameters=ledger.learned_params(),
            calendars=len({d.template for row in rows if (d := date_of(row["url"])) is not None}),
            listed_unlinked=unlinked,
            budget=BUDGETS.get(reason) if final else None,
            unfetched=left if final and reason in BUDGETS else None,
            rich=rich,
            verified=verified,
            kept=kept,
            changed=changed,
            carried=carried,
        )
