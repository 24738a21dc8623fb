"""The revisit schedule's side of the ledger (crawler.ledger.schedule is its policy;
docs/nightly.md): the records a conditional request or a kept page comes from, records
carried to the next night when a budget stops a run, and what a run verified."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crawler.core.decisions import ERROR, QUEUED, REPLAYABLE
from crawler.ledger.links import decoded
from crawler.ledger.records import COLUMNS, FULL_ROW, NOT_CARRIED, Records


class Revisits(Records):
    """The queries of the schedule's columns of ``urls``."""

    def conditional_rows(self) -> Iterator[dict[str, Any]]:
        """The records a conditional request can be made from (and a 304 replays):
        fetched with a 200, a replayable decision, and an ETag or a Last-Modified; and
        those the revisit schedule may keep (crawler.ledger.schedule)."""
        marks = ",".join("?" * len(REPLAYABLE))
        scheduled = " OR due_at IS NOT NULL" if "due_at" in self.columns() else ""
        return decoded(
            self._dicts(
                f"{FULL_ROW} WHERE status = 200 AND decision IN ({marks}) "
                f"AND (etag IS NOT NULL OR last_modified IS NOT NULL){scheduled}",
                sorted(REPLAYABLE),
            )
        )

    def carry_queued(self, previous: Path) -> int:
        """URLs still queued when a budget stopped the run, that the *previous* ledger
        has a scheduled record of (crawler.ledger.schedule): that record stands, due as
        it was, so the next night verifies them first, its lists with it. Returns how many."""
        self._attach(previous)
        have = self._columns_of("urls", "prev")
        if "due_at" not in have:
            return 0
        columns = [c for c in COLUMNS if c not in NOT_CARRIED and c in have]
        carried = (
            " WHERE decision = ? AND key IN (SELECT key FROM prev.urls WHERE due_at IS NOT NULL"
            " AND status IS NOT NULL AND status < 500 AND status <> 429 AND decision <> ?)"
        )
        keys = [key for (key,) in self._q("SELECT key FROM urls" + carried, (QUEUED, ERROR))]
        self._q(
            f"UPDATE urls SET ({', '.join(columns)}) = (SELECT {', '.join(columns)}"
            " FROM prev.urls AS p WHERE p.key = urls.key)" + carried,
            (QUEUED, ERROR),
        )
        if self._columns_of("links", "prev"):
            self._carry_links(keys)
        return len(keys)

    def schedule_counts(self, now: float, previous: Path | None) -> tuple[int, int, int]:
        """(verified, kept, changed) by the run that started at *now*: URLs it fetched
        and judged, URLs whose earlier record it kept, and of the verified ones those
        whose change count grew since the *previous* ledger (crawler.ledger.schedule)."""
        verified, kept = self._q(
            "SELECT coalesce(sum(verified_at >= ?), 0), coalesce(sum(verified_at < ?), 0)"
            " FROM urls WHERE decision <> ?",
            (now, now, QUEUED),
        ).fetchone()
        changed = 0
        if previous is not None:
            self._attach(previous)
            if "changes" in self._columns_of("urls", "prev"):
                changed = self._count(
                    "SELECT count(*) FROM main.urls AS m JOIN prev.urls AS p ON m.key = p.key"
                    " WHERE m.verified_at >= ? AND m.changes > coalesce(p.changes, 0)",
                    now,
                )
        return int(verified), int(kept), changed
