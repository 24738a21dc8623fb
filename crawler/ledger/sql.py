"""What every room of the ledger shares: the connection, its query helpers and the
batched commit (docs/ledger.md). Each room (:mod:`~crawler.ledger.records`,
:mod:`~crawler.ledger.links`, :mod:`~crawler.ledger.runs`,
:mod:`~crawler.ledger.revisits`) is a mixin of :class:`Tables` with its own tables and
queries; :class:`crawler.ledger.ledger.LedgerReader` is all of them together."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

#: How many writes go into one transaction.
COMMIT_EVERY = 2000


def to_json(value: object) -> str | None:
    """A JSON column: None (NULL) for nothing, as a plain page has."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value else None


class Tables:
    """A ledger's connection (*path*, *db*) and the helpers every query goes through."""

    path: Path
    _db: sqlite3.Connection
    _pending: int = 0

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self._db = db

    def _q(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, tuple(params))

    def _count(self, sql: str, *params: Any) -> int:
        return int(self._q(sql, params).fetchone()[0])

    def _dicts(self, sql: str, params: Iterable[Any] = ()) -> Iterator[dict[str, Any]]:
        cur = self._q(sql, params)
        names = [d[0] for d in cur.description]
        return (dict(zip(names, row, strict=True)) for row in cur)

    def _lazy(self, query: str) -> Iterator[tuple[Any, ...]]:
        # A generator: the query runs when iteration starts, so several can be handed
        # out at once and read one after the other.
        yield from self._q(query)

    def _write(self, sql: str, params: Iterable[Any] = ()) -> None:
        self._q(sql, params)
        self._tick()

    def _tick(self) -> None:
        self._pending += 1
        if self._pending >= COMMIT_EVERY:
            self.commit()

    def commit(self) -> None:
        self._db.commit()
        self._pending = 0

    def _attach(self, previous: Path) -> None:
        """The *previous* ledger as schema ``prev``, read-only."""
        if any(row[1] == "prev" for row in self._q("PRAGMA database_list")):
            self._q("DETACH DATABASE prev")
        self._q("ATTACH DATABASE ? AS prev", (Path(previous).absolute().as_uri() + "?mode=ro",))

    def _columns_of(self, table: str, schema: str = "main") -> set[str]:
        return {row[1] for row in self._q(f"PRAGMA {schema}.table_info({table})")}
