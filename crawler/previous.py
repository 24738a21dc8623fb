"""What the previous successful run learned: the state a nightly run starts from.

The previous run's ledger (``ledger.sqlite`` in the state directory) stays in place
until this run succeeds, so it is read here, read-only, one URL at a time: the
validators for conditional requests, the record a 304 replays, the content hash
and lastmod that honest lastmod builds on, first-seen times, and the published set
a new one is compared with (issue #4).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crawler.decisions import LISTED, REPLAYABLE
from crawler.ledger import read_params


class PreviousRun:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        names = {row[1] for row in self._db.execute("PRAGMA table_info(urls)")}
        # A ledger written before these columns existed has no history to offer.
        self.has_history = {"etag", "main_hash", "links"} <= names

    @classmethod
    def open(cls, path: Path) -> PreviousRun | None:
        if not path.is_file():
            return None
        try:
            previous = cls(path)
        except sqlite3.Error:
            return None
        return previous if previous.has_history else None

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM urls WHERE key = ?", (key,)).fetchone()
        return dict(row) if row is not None else None

    def meta(self, name: str) -> Any:
        """The previous run's ``meta`` value *name* (None when it has none)."""
        try:
            row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        except sqlite3.Error:
            return None
        return json.loads(row[0]) if row else None

    def learned_params(self) -> dict[str, list[str]]:
        """What the previous run learned about query parameters (crawler.params)."""
        return read_params(self._db)

    def conditional_rows(self) -> Iterator[dict[str, Any]]:
        """The records a conditional request can be made from (and a 304 replays):
        fetched with a 200, a replayable decision, and an ETag or a Last-Modified."""
        marks = ",".join("?" * len(REPLAYABLE))
        query = (
            f"SELECT * FROM urls WHERE status = 200 AND decision IN ({marks}) "
            "AND (etag IS NOT NULL OR last_modified IS NOT NULL)"
        )
        for row in self._db.execute(query, sorted(REPLAYABLE)):
            yield dict(row)

    def listed_count(self) -> int:
        row = self._db.execute("SELECT count(*) FROM urls WHERE decision = ?", (LISTED,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        self._db.close()
