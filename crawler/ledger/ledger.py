"""The crawl's ledger: one row per discovered URL with its decision and reason.

An SQLite database in the state directory, written as the crawl goes and
read back by the publisher, sorted and streamed; later commands (audit, nightly runs,
``explain``, ``export``) query it. The schema and every decision are documented in
docs/ledger.md, which tests/test_docs.py holds to :data:`SCHEMA`.

Its rooms, one concern a module, are the ledger's only SQL (tests/test_oneplace.py keeps
SQL on its tables out of every other module): the URLs and their decisions
(:mod:`~crawler.ledger.records`), their links (:mod:`~crawler.ledger.links`), the runs
(:mod:`~crawler.ledger.runs`) and the revisit schedule (:mod:`~crawler.ledger.revisits`).
Here they are put together: :class:`LedgerReader` reads a filed ledger, :class:`Ledger`
writes the running one."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.ledger import links, records, runs
from crawler.ledger.revisits import Revisits
from crawler.ledger.runs import Runs

if TYPE_CHECKING:
    from typing import Self

SCHEMA = records.SCHEMA + links.SCHEMA + runs.SCHEMA


class LedgerError(Exception):
    """A ledger file that cannot be read (the message names it and says why)."""


class LedgerReader(Revisits, Runs):
    """The queries that read a ledger: the running one (:class:`Ledger`, which writes it
    too), or a filed one opened read-only (:meth:`open`)."""

    @classmethod
    def open(cls, path: Path, *, immutable: bool = False) -> Self:
        """The ledger at *path*, read-only (a running crawl is not disturbed); with
        *immutable*, as an immutable file when even that cannot be (a read-only directory
        without its -shm file: nothing writes a filed ledger). Else LedgerError."""
        failure: sqlite3.Error | None = None
        for mode in ("mode=ro", "immutable=1") if immutable else ("mode=ro",):
            db = None
            try:
                db = sqlite3.connect(
                    f"{Path(path).absolute().as_uri()}?{mode}", uri=True, check_same_thread=False
                )
                db.execute("SELECT key, url, decision FROM urls LIMIT 1").fetchall()
                reader = cls(Path(path), db)
                if not reader.earlier():
                    return reader
                db.close()
                Ledger(path).close()  # an earlier version's: migrated in place, once
                return cls.open(path, immutable=immutable)
            except sqlite3.Error as e:
                if db is not None:
                    db.close()
                failure = e
        raise LedgerError(f"cannot read the ledger {path}: {failure}")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()


class Ledger(LedgerReader):
    """An SQLite ledger at *path* (created if missing, an earlier version's migrated),
    read and written."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A URI connection, so that a previous ledger can be attached read-only.
        self._db = sqlite3.connect(
            self.path.absolute().as_uri(), uri=True, isolation_level="DEFERRED"
        )
        self._q("PRAGMA journal_mode = WAL")
        self._q("PRAGMA synchronous = NORMAL")
        self._add_missing_columns()
        self._db.executescript(SCHEMA)
        self._migrate_lists()

    def close(self) -> None:
        self.commit()
        self._db.close()
