"""How a run ended, as a value: what the publisher hands the command.

The publisher builds one :class:`RunOutcome` at the end of a run and keeps it on the run
state (:attr:`crawler.ledger.runstate.RunState.outcome`); the command that ran the
spider (:func:`crawler.commands.process.run_spider`) returns it in a :class:`SpiderRun`.
The exit status, IndexNow and the Python API decide on these fields, never on stats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from crawler.core.summary import RunSummary

#: What a run did: published its set, crawled without publishing (publishing off),
#: refused to publish a set that looks broken, was interrupted, failed, or could not
#: write its output.
Outcome = Literal["published", "crawled", "refused", "interrupted", "failed", "output-error"]
#: Outcomes of a run that did its job.
GOOD: frozenset[str] = frozenset({"published", "crawled"})


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """The end of a run: its *outcome*, the one line that says why (*message*), and its
    :class:`RunSummary` (None: the run kept no books): the set published (IndexNow
    submits nothing for a state's first unless asked) and the reports written."""

    outcome: Outcome
    message: str
    summary: RunSummary | None = None

    @property
    def good(self) -> bool:
        """The run did its job (its ledger becomes the next run's previous one)."""
        return self.outcome in GOOD


@dataclass(frozen=True, slots=True)
class SpiderRun:
    """One spider run as the command sees it: the exit status, the publisher's
    :class:`RunOutcome` (None when it never ran), Scrapy's close reason, the run's fatal
    problem, and the stats (for the summary only)."""

    code: int
    outcome: RunOutcome | None
    reason: str | None = None
    fatal: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C or SIGTERM."""
        return self.reason in INTERRUPTED or (
            self.outcome is not None and self.outcome.outcome == "interrupted"
        )


#: Scrapy's close reasons of a crawl stopped by Ctrl-C or SIGTERM.
INTERRUPTED = frozenset({"shutdown", "cancelled"})
