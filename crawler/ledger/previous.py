"""What the previous successful run learned: the state a nightly run starts from
(docs/nightly.md). Its ``ledger.sqlite`` stays in place until this run succeeds, and is read here,
read-only, one URL at a time, with the ledger's own queries
(:class:`crawler.ledger.ledger.LedgerReader`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from crawler.ledger.ledger import LedgerError, LedgerReader

#: The meta entry of the links the site's REST API listed (crawler.crawl.restapi).
API_LINKS = "rest_links"

#: The columns without which a ledger has no history to offer (an earlier version's).
HISTORY = frozenset({"etag", "main_hash", "links"})


class PreviousRun(LedgerReader):
    """The previous run's ledger, read-only (see the module docstring)."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        super().__init__(path, db)
        self._memo: tuple[str, dict[str, Any] | None] | None = None

    @classmethod
    def find(cls, path: Path) -> PreviousRun | None:
        """The ledger at *path*, or None: none there, unreadable, or written before
        it kept the history a nightly run builds on."""
        if not path.is_file():
            return None
        try:
            previous = cls.open(path)
        except LedgerError:
            return None
        if not previous.columns() >= HISTORY:
            previous.close()
            return None
        return previous

    def get(self, key: str) -> dict[str, Any] | None:
        """The row of *key* (as :meth:`crawler.distributed.previous.RedisPrevious.get`).
        The judge and each pipeline ask for the same record in turn: the last row is
        kept (read-only to every caller), so it is read from disk once."""
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        row = self.row(key)
        self._memo = (key, row)
        return row

    def scheduled(self) -> bool:
        """Whether this run can keep pages from it (it has a schedule; whether tonight
        does is the run state's policy)."""
        return "due_at" in self.columns()

    def api_links(self) -> list[str] | None:
        """The links the site's REST API listed on that night (None: not read)."""
        links = self.get_meta(API_LINKS)
        return [str(link) for link in links] if isinstance(links, list) else None
