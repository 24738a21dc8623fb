"""The audit's store: what the existing sitemaps say, in SQLite beside the ledger.

``sitemaps``: one row per file met (``via``: ``robots``, ``default``, ``argument`` or
``index`` with its ``parent``; ``problems`` a JSON list). ``listings``: one row per
entry: ``key`` the dedup key of its crawl-space URL (NULL: no usable URL), ``scope``
NULL in scope (else why not), ``audited`` 0 past its file's first 50,000; an index's
rows are taken back as the sitemaps to read. ``fetched``: the listed URLs the crawl did
not judge, fetched once by the audit.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crawler.core.items import UrlRecord
from crawler.core.urls import url_key

SCHEMA = """
CREATE TABLE IF NOT EXISTS sitemaps (
    url TEXT PRIMARY KEY,
    via TEXT NOT NULL,
    parent TEXT,
    depth INTEGER NOT NULL DEFAULT 0,
    status INTEGER,
    kind TEXT,
    entries INTEGER NOT NULL DEFAULT 0,
    compressed_layers INTEGER NOT NULL DEFAULT 0,
    size INTEGER NOT NULL DEFAULT 0,
    complete INTEGER NOT NULL DEFAULT 1,
    fetched INTEGER NOT NULL DEFAULT 1,
    problems TEXT NOT NULL DEFAULT '[]',
    not_audited INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS listings (
    id INTEGER PRIMARY KEY,
    loc TEXT NOT NULL,
    key TEXT,
    url TEXT,
    sitemap TEXT NOT NULL,
    line INTEGER,
    lastmod TEXT,
    changefreq TEXT,
    priority TEXT,
    alternates INTEGER NOT NULL DEFAULT 0,
    images INTEGER NOT NULL DEFAULT 0,
    scope TEXT,
    media_alternates INTEGER NOT NULL DEFAULT 0,
    audited INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS listings_key ON listings (key);
CREATE TABLE IF NOT EXISTS fetched (
    key TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    target TEXT,
    status INTEGER,
    last_modified TEXT
) WITHOUT ROWID;
"""

# One row of ``listings``, in the order of its columns (less ``id``).
_Text = str | None
Listing = tuple[str, _Text, _Text, str, int | None, _Text, _Text, _Text, int, int, _Text, int, int]


class AuditStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.executescript(SCHEMA)

    def add_sitemap(self, url: str, via: str, problems: list[Any], **fields: Any) -> None:
        names = ["url", "via", "problems", *fields]
        values = [url, via, json.dumps(problems), *fields.values()]
        self._db.execute(
            f"INSERT INTO sitemaps ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
            "ON CONFLICT (url) DO UPDATE SET "
            + ", ".join(f"{n} = excluded.{n}" for n in names[1:]),
            values,
        )

    def add_problem(self, url: str, problem: dict[str, Any]) -> None:
        row = self._db.execute("SELECT problems FROM sitemaps WHERE url = ?", (url,)).fetchone()
        problems = json.dumps([*(json.loads(row[0]) if row else []), problem])
        self._db.execute("UPDATE sitemaps SET problems = ? WHERE url = ?", (problems, url))

    def add_listings(self, rows: list[Listing]) -> None:
        self._db.executemany(
            "INSERT INTO listings (loc, key, url, sitemap, line, lastmod, changefreq, priority,"
            " alternates, images, scope, media_alternates, audited)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    def take_listings(self, sitemap: str, limit: int) -> list[str]:
        """The locs stored for *sitemap* (its first *limit*, in order), removed: an
        index's entries are the sitemaps it lists, not pages."""
        sql = "SELECT loc FROM listings WHERE sitemap = ? ORDER BY id LIMIT ?"
        locs = [row[0] for row in self._db.execute(sql, (sitemap, limit))]
        self._db.execute("DELETE FROM listings WHERE sitemap = ?", (sitemap,))
        return locs

    def audited_keys(self) -> Iterator[tuple[str, str]]:
        """``(key, url)`` of every listed URL in scope that the audit judges, by key."""
        yield from self._db.execute(
            "SELECT key, min(url) AS url FROM listings WHERE key IS NOT NULL "
            "AND scope IS NULL AND audited = 1 GROUP BY key ORDER BY key"
        )

    def add_fetched(self, rec: UrlRecord) -> None:
        """The audit's own verdict on a listed URL the crawl did not judge."""
        row = (url_key(rec.url), rec.url, rec.decision, rec.reason, rec.target, rec.status)
        self._db.execute(
            "INSERT INTO fetched VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
            (*row, rec.last_modified),
        )

    def commit(self) -> None:
        self._db.commit()

    def close(self) -> None:
        self._db.commit()
        self._db.close()

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[dict[str, Any]]:
        cur = self._db.execute(sql, params)
        names = [d[0] for d in cur.description]
        return (dict(zip(names, row, strict=True)) for row in cur)

    def sitemaps(self) -> list[dict[str, Any]]:
        rows = self.query("SELECT * FROM sitemaps ORDER BY depth, url")
        return [{**row, "problems": json.loads(row["problems"])} for row in rows]
