"""The ledger's runs (docs/ledger.md, tables ``meta`` and ``params``): what a run
noted about itself and learned for the next, its figures for the reports, the listed
set compared with the previous run's, and the ledger exported as JSON lines."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crawler.core import clock
from crawler.core.decisions import ERROR, LISTED, STATUS
from crawler.ledger.sql import Tables

SCHEMA = """
-- Query parameters learned not to change the pages of a path (crawler.crawl.params);
-- the next run starts from them.
CREATE TABLE IF NOT EXISTS params (
    path TEXT NOT NULL,
    name TEXT NOT NULL,
    learned_at REAL NOT NULL,
    PRIMARY KEY (path, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""

_ONLY_IN = (
    "SELECT loc FROM {}.urls WHERE decision = 'listed' AND loc NOT IN"
    " (SELECT loc FROM {}.urls WHERE decision = 'listed' AND loc IS NOT NULL) ORDER BY loc"
)
_ADDED, _REMOVED = _ONLY_IN.format("main", "prev"), _ONLY_IN.format("prev", "main")
_ALL_LISTED = "SELECT loc FROM urls WHERE decision = 'listed' ORDER BY loc"
_LASTMOD_CHANGES = (
    "SELECT m.loc, p.lastmod, m.lastmod FROM main.urls AS m JOIN prev.urls AS p ON m.loc = p.loc"
    " WHERE m.decision = 'listed' AND p.decision = 'listed' AND m.lastmod IS NOT p.lastmod"
    " ORDER BY m.loc"
)


class Runs(Tables):
    """Reads and writes the ``meta`` and ``params`` tables, and counts a run's rows."""

    def get_meta(self, name: str, default: Any = None) -> Any:
        try:
            row = self._q("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        except sqlite3.OperationalError:  # a ledger older than the meta table
            return default
        return json.loads(row[0]) if row else default

    def set_meta(self, name: str, value: Any) -> None:
        self._write(
            "INSERT INTO meta (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, json.dumps(value)),
        )

    def learned_params(self) -> dict[str, list[str]]:
        """Path -> the parameters learned not to change its pages (crawler.crawl.params;
        none in a ledger older than the ``params`` table)."""
        learned: dict[str, list[str]] = {}
        try:
            found = self._q("SELECT path, name FROM params ORDER BY path, name")
        except sqlite3.OperationalError:
            return learned
        for path, name in found.fetchall():
            learned.setdefault(path, []).append(name)
        return learned

    def learn_param(self, path: str, name: str, learned: bool) -> None:
        """Keep (*learned*) or forget that parameter *name* does not change the pages
        of *path* (crawler.crawl.params)."""
        if learned:
            self._write(
                "INSERT INTO params (path, name, learned_at) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (path, name, clock.timestamp()),
            )
        else:
            self._write("DELETE FROM params WHERE path = ? AND name = ?", (path, name))

    def counts(self) -> dict[str, int]:
        return dict(self._q("SELECT decision, count(*) FROM urls GROUP BY decision"))

    def status_counts(self) -> dict[int, int]:
        """HTTP status -> URLs answered with it (a 304 replay counts as its 200)."""
        return dict(
            self._q(
                "SELECT status, count(*) FROM urls WHERE status IS NOT NULL"
                " GROUP BY status ORDER BY status"
            )
        )

    def depth_counts(self) -> dict[int, tuple[int, int]]:
        """Link depth -> (URLs found at it, of which listed)."""
        return {
            depth: (n, listed)
            for depth, n, listed in self._q(
                "SELECT depth, count(*), coalesce(sum(decision = ?), 0) FROM urls"
                " WHERE depth IS NOT NULL GROUP BY depth ORDER BY depth",
                (LISTED,),
            )
        }

    def top(self, column: str, most: int) -> list[tuple[str, str, float]]:
        """``(url, decision, value)`` of the *most* URLs with the largest *column*
        (``elapsed`` or ``size``), largest first."""
        if column not in ("elapsed", "size"):
            raise ValueError(f"not a measured column: {column}")
        return self._q(
            f"SELECT url, decision, {column} FROM urls WHERE {column} IS NOT NULL"
            f" ORDER BY {column} DESC, url LIMIT ?",
            (most,),
        ).fetchall()

    def listed_in_section(self, section: str | None, most: int) -> list[tuple[str, str | None]]:
        """The first *most* listed pages of *section* (None: the default one), by
        published address: ``(loc, lastmod)`` (from the covering index)."""
        return self._q(
            f"SELECT loc, lastmod FROM urls WHERE decision = '{LISTED}' AND section IS ?"
            " ORDER BY section, loc LIMIT ?",
            (section, most),
        ).fetchall()

    def decided(self, decision: str, most: int) -> Iterator[dict[str, Any]]:
        """url, reason, target, status, referrer of the first *most* URLs with *decision*."""
        yield from self._dicts(
            "SELECT url, reason, target, status, referrer FROM urls WHERE decision = ?"
            " ORDER BY url LIMIT ?",
            (decision, most),
        )

    def error_counts(self, since: float = 0.0) -> tuple[int, int]:
        """(pages fetched, pages that failed: 5xx or no response); with *since*, the
        run's start, not the pages whose earlier record it kept (not fetched)."""
        fetched, failed = self._q(
            "SELECT count(*), coalesce(sum(decision = ? OR (decision = ? AND status >= 500)), 0)"
            " FROM urls WHERE (status IS NOT NULL OR decision = ?)"
            " AND (verified_at IS NULL OR verified_at >= ?)",
            (ERROR, STATUS, ERROR, since),
        ).fetchone()
        return fetched, failed

    def news_rows(self) -> Iterator[tuple[str, str]]:
        """``(loc, news)`` of every listed page that is a news article."""
        yield from self._q(
            "SELECT loc, news FROM urls WHERE decision = ? AND news IS NOT NULL ORDER BY loc",
            (LISTED,),
        )

    def changed_rows(
        self, since: str
    ) -> Iterator[tuple[str, str | None, str | None, str | None, str | None]]:
        """``(loc, lastmod, listed_at, lastmod_moved_at, title)`` of the listed pages
        whose lastmod, listing or lastmod move may be as recent as *since* (a W3C
        date; compared as text, so the caller gives a day's slack and checks)."""
        yield from self._q(
            "SELECT loc, lastmod, listed_at, lastmod_moved_at, title FROM urls"
            " WHERE decision = ? AND (lastmod >= ? OR listed_at >= ? OR lastmod_moved_at >= ?)",
            (LISTED, since, since, since),
        )

    def latest_change(self) -> str | None:
        """The latest lastmod, listing or lastmod move of a listed page (text order)."""
        row = self._q(
            "SELECT max(max(coalesce(lastmod, ''), coalesce(listed_at, ''),"
            " coalesce(lastmod_moved_at, ''))) FROM urls WHERE decision = ?",
            (LISTED,),
        ).fetchone()
        return row[0] or None

    def rich_problems(self) -> Iterator[tuple[str, list[str]]]:
        """``(url, problems)`` of every page with problems in its rich data."""
        for url, problems in self._q(
            "SELECT url, problems FROM urls WHERE problems IS NOT NULL ORDER BY url"
        ):
            yield url, json.loads(problems)

    def count_removed(self, previous: Path) -> int:
        """Listed URLs of the *previous* ledger that this one no longer lists."""
        self._attach(previous)
        return self._count(_REMOVED.replace("SELECT loc", "SELECT count(*)", 1))

    def changes_since(
        self, previous: Path | None
    ) -> tuple[Iterator[str], Iterator[str], Iterator[dict[str, Any]]]:
        """(added, removed, lastmod changes) of the listed set since *previous* (None:
        no previous run, every listed URL is added), each streamed from disk when it
        is iterated (a million added URLs are no list in memory)."""
        if previous is None:
            return self._locs(_ALL_LISTED), iter(()), iter(())
        self._attach(previous)
        changed = (
            {"url": loc, "old": old, "new": new} for loc, old, new in self._lazy(_LASTMOD_CHANGES)
        )
        return self._locs(_ADDED), self._locs(_REMOVED), changed

    def _locs(self, query: str) -> Iterator[str]:
        return (row[0] for row in self._lazy(query))
