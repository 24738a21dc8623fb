"""The counted rules applied: the seen-set, the counters, the URLs held aside.

The rule book makes a URL a :class:`Claim` (:meth:`crawler.crawl.rulebook.RuleBook.claim`):
the counters it counts in, with their limits, then whether it is queued, held aside
(the depth cap) or refused. A backend applies claims and knows no rule:
:class:`MemoryCounters` here, the report script in Redis (crawler.distributed.crawl),
by the same steps. 1. A URL seen before is ``known``, unless held aside and now
queued: claimed ``again``. 2. Each counter at its limit refuses it, else counts it.
3. It is queued, held aside or refused (docs/crawling.md, "Order and limits").
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from crawler.core.decisions import Refusal
from crawler.core.seen import SeenKeys

#: What follows a claim's counts; whether the URL of a claim was seen before.
QUEUE, HOLD, REFUSE = "queue", "hold", "refuse"
KNOWN, NEW, AGAIN = "known", "new", "again"


@dataclass(frozen=True, slots=True)
class Count:
    """One counted check: *refusal* when *counter* has reached *limit*."""

    counter: str
    limit: int
    refusal: Refusal


@dataclass(frozen=True, slots=True)
class Claim:
    """What a URL asks of the counters: *counts*, then *after* (with *refusal*)."""

    counts: tuple[Count, ...] = ()
    after: str = QUEUE
    refusal: Refusal | None = None

    def plan(self) -> str:
        """The claim as the report script reads it (JSON)."""
        counts = [[count.counter, count.limit] for count in self.counts]
        return json.dumps({"counts": counts, "after": self.after})


class Outcome(NamedTuple):
    """A claim applied: *seen*, and the number of the count that refused it (0: none)."""

    seen: str
    refused: int = 0

    def refusal(self, claim: Claim) -> Refusal | None:
        """Why the URL of *claim* is not queued, or None (it is)."""
        return claim.counts[self.refused - 1].refusal if self.refused else claim.refusal


@dataclass(eq=False)
class MemoryCounters:
    """The backend of one process (pickled into the JOBDIR for ``--resume``)."""

    seen: SeenKeys = field(default_factory=SeenKeys)
    held: SeenKeys = field(default_factory=SeenKeys)
    counters: Counter[str] = field(default_factory=Counter)

    def known(self, fp: int) -> bool:
        """Seen and not held aside: no claim changes what became of it."""
        return self.seen.has_fp(fp) and not self.held.has_fp(fp)

    def apply(self, fp: int, claim: Claim) -> Outcome:
        seen = NEW
        if not self.seen.has_fp(fp):
            self.seen.add_fp(fp)
        elif claim.after == QUEUE and self.held.has_fp(fp):
            self.held.discard_fp(fp)
            seen = AGAIN
        else:
            return Outcome(KNOWN)
        for number, count in enumerate(claim.counts, 1):
            if self.counters[count.counter] >= count.limit:
                return Outcome(seen, number)
            self.counters[count.counter] += 1
        if claim.after == HOLD:
            self.held.add_fp(fp)
        return Outcome(seen)
