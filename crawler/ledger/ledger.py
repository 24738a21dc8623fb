"""The crawl's ledger: one row per discovered URL with its decision and reason.

An SQLite database in the state directory, written as the crawl goes and
read back by the publisher, sorted and streamed; later commands (audit, nightly runs,
``explain``) query it. The schema and every decision are documented in docs/ledger.md,
which tests/test_docs.py holds to :data:`SCHEMA`.

This module is the ledger's one access layer: every SQL statement on its tables is here
(:class:`Ledger` for the running crawl, :class:`LedgerReader` for a filed ledger), which
is why it is longer than the others; tests/test_oneplace.py keeps SQL on these tables
out of every other module."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.core import clock
from crawler.core.decisions import (
    CANONICAL,
    ERROR,
    LISTED,
    QUEUED,
    REDIRECT,
    REPLAYABLE,
    RULE_DEPTH,
    STATUS,
    target_key,
)
from crawler.core.items import FOUND_SITEMAP, UrlRecord
from crawler.core.urls import url_key
from crawler.sitemaps.entry import ChangeFreq
from crawler.sitemaps.entryrows import EntryRows

if TYPE_CHECKING:
    from typing import Self

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    key TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    target TEXT,
    target_key TEXT,
    status INTEGER,
    depth INTEGER,
    referrer TEXT,
    content_type TEXT,
    last_modified TEXT,
    loc TEXT,
    lastmod TEXT,
    warnings TEXT,
    content_hash TEXT,
    etag TEXT,
    main_hash TEXT,
    lastmod_source TEXT,
    changed_at TEXT,
    first_seen REAL,
    links TEXT,
    unfollowed TEXT,
    alternates TEXT,
    images TEXT,
    videos TEXT,
    news TEXT,
    problems TEXT,
    extras TEXT,
    title TEXT,
    listed_at TEXT,
    lastmod_moved_at TEXT,
    history TEXT,
    section TEXT,
    changefreq TEXT,
    priority TEXT,
    found_by TEXT,
    found_from TEXT,
    robots TEXT,
    elapsed REAL,
    size INTEGER,
    render TEXT,
    rule TEXT,
    lastmod_from TEXT,
    page_dates TEXT,
    own_hash TEXT,
    verified_at REAL,
    verified_date TEXT,
    revisit_days REAL,
    due_at REAL,
    checks INTEGER,
    changes INTEGER,
    updated REAL NOT NULL
) WITHOUT ROWID;
-- The listed pages by address (the comparisons with the previous run), covering: no
-- sort, no visit to the wide rows; "decision" is in it because SQLite takes a partial
-- index as covering only with its WHERE clause's columns. It replaces urls_listed.
CREATE INDEX IF NOT EXISTS urls_listed_sorted ON urls (loc, lastmod, decision)
    WHERE decision = 'listed';
DROP INDEX IF EXISTS urls_listed;
-- The writer's rows (LISTED_ROWS: crawler.sitemaps.entryrows.ROW_COLUMNS), covered the
-- same way, in its order: by section (the default, NULL, first), then address.
CREATE INDEX IF NOT EXISTS urls_listed_rows
    ON urls (section, loc, lastmod, extras, changefreq, priority, decision)
    WHERE decision = 'listed';
DROP INDEX IF EXISTS urls_listed_entries;
CREATE TABLE IF NOT EXISTS aliases (
    alias TEXT PRIMARY KEY,
    key TEXT NOT NULL
) WITHOUT ROWID;
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

#: The ``urls`` table's columns and their types, read from :data:`SCHEMA`.
_TYPES = dict(re.findall(r"^    (\w+) (\w+)", SCHEMA.partition(") WITHOUT ROWID")[0], re.M))
COLUMNS = tuple(_TYPES)

#: Set when a URL is first found; a later final decision keeps them (and a seed's
#: referrer, set when a page links to it: Ledger.linked).
_KEPT = ("found_by", "found_from", "referrer")

#: What a record carried over from the previous run takes from this run's instead.
_NOT_CARRIED = frozenset({"key", "url", "depth", "referrer", "found_by", "found_from", "rule"})

_INSERT = f"INSERT INTO urls ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
# A final decision replaces a ``queued`` placeholder, never another final decision
# (the first one about a URL wins), except a depth cap: a URL left out for depth is
# judged after all when a shorter path to it turns up, and a record kept from the
# previous run (not due tonight), when a signal has it verified after all.
_RECORD = (
    _INSERT
    + " ON CONFLICT (key) DO UPDATE SET "
    + ", ".join(
        f"{c} = coalesce(excluded.{c}, urls.{c})" if c in _KEPT else f"{c} = excluded.{c}"
        for c in COLUMNS
        if c != "key"
    )
    + f" WHERE urls.decision = '{QUEUED}'"
    + f" OR urls.rule = '{RULE_DEPTH}'"
    + " OR excluded.verified_at > urls.verified_at"
)
_QUEUE = _INSERT + " ON CONFLICT (key) DO NOTHING"


def _json(value: object) -> str | None:
    """A JSON column: None (NULL) for nothing, as a plain page has."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value else None


def _json_of(name: str) -> Callable[[UrlRecord], str | None]:
    return lambda rec: _json(getattr(rec, name))


#: How a record gives each column (its attribute of the same name unless named here).
_CONVERT: dict[str, Callable[[UrlRecord], Any]] = {
    "target_key": lambda rec: target_key(rec.target),
    "warnings": lambda rec: json.dumps(rec.warnings) if rec.warnings else None,
    "links": lambda rec: "\n".join(rec.links) if rec.links else None,
    "unfollowed": lambda rec: "\n".join(rec.unfollowed) if rec.unfollowed else None,
    **{c: _json_of(c) for c in ("alternates", "images", "videos", "news", "problems")},
    "extras": lambda rec: None,  # decided when the books are closed
    "page_dates": attrgetter("page_verdicts"),
    "updated": lambda rec: clock.timestamp(),
}
_VALUES = tuple(_CONVERT.get(c, attrgetter(c)) for c in COLUMNS)

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

#: The writer's rows (crawler.sitemaps.entryrows.ROW_COLUMNS), answered from urls_listed_rows.
LISTED_ROWS = (
    "SELECT loc, lastmod, extras, section, changefreq, priority FROM urls"
    f" WHERE decision = '{LISTED}' ORDER BY section, loc"
)

#: The same rows, when no rule set a section, changefreq or priority.
LISTED_ROWS_PLAIN = LISTED_ROWS.replace(", section, changefreq, priority FROM", " FROM")

#: How many writes go into one transaction.
COMMIT_EVERY = 2000


class LedgerError(Exception):
    """A ledger file that cannot be read (the message names it and says why)."""


class LedgerReader:
    """The queries that read a ledger: the running one (:class:`Ledger`, which writes it
    too), or a filed one opened read-only (:meth:`open`)."""

    path: Path
    _db: sqlite3.Connection

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self._db = db

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
                return cls(Path(path), db)
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

    def columns(self) -> set[str]:
        """The columns of the ``urls`` table (an earlier version wrote fewer)."""
        return {row[1] for row in self._q("PRAGMA table_info(urls)")}

    def get_meta(self, name: str, default: Any = None) -> Any:
        try:
            row = self._q("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        except sqlite3.OperationalError:  # a ledger older than the meta table
            return default
        return json.loads(row[0]) if row else default

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

    def row(self, key: str | None) -> dict[str, Any] | None:
        """The row of the URL with dedup key *key*, if known."""
        if key is None:
            return None
        return self._dict("SELECT * FROM urls WHERE key = ?", (key,))

    def decision_of(self, key: str) -> tuple[str, str, str | None] | None:
        """``(decision, reason, target)`` of the URL with dedup key *key*, if known."""
        row = self._q("SELECT decision, reason, target FROM urls WHERE key = ?", (key,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def rows(self, **where: Any) -> Iterator[dict[str, Any]]:
        """Rows as dicts, ordered by URL; ``where`` filters on equal columns."""
        for name in where:
            if name not in COLUMNS:
                raise ValueError(f"unknown ledger column: {name}")
        clause = " AND ".join(f"{name} = ?" for name in where)
        sql = "SELECT * FROM urls" + (f" WHERE {clause}" if clause else "") + " ORDER BY url"
        return self._dicts(sql, tuple(where.values()))

    def conditional_rows(self) -> Iterator[dict[str, Any]]:
        """The records a conditional request can be made from (and a 304 replays):
        fetched with a 200, a replayable decision, and an ETag or a Last-Modified; and
        those the revisit schedule may keep (crawler.ledger.schedule)."""
        marks = ",".join("?" * len(REPLAYABLE))
        scheduled = " OR due_at IS NOT NULL" if "due_at" in self.columns() else ""
        return self._dicts(
            f"SELECT * FROM urls WHERE status = 200 AND decision IN ({marks}) "
            f"AND (etag IS NOT NULL OR last_modified IS NOT NULL){scheduled}",
            sorted(REPLAYABLE),
        )

    def listed_count(self) -> int:
        return self._count("SELECT count(*) FROM urls WHERE decision = ?", LISTED)

    def aliases(self) -> dict[str, str]:
        return dict(self._q("SELECT alias, key FROM aliases"))

    def alias(self, form: str) -> str | None:
        """The key of the URL *form* is an alias of, if it is one."""
        row = self._q("SELECT key FROM aliases WHERE alias = ?", (form,)).fetchone()
        return None if row is None else str(row[0])

    def aliases_of(self, key: str) -> list[str]:
        return [
            r[0] for r in self._q("SELECT alias FROM aliases WHERE key = ? ORDER BY alias", (key,))
        ]

    def by_loc(self, loc: str) -> dict[str, Any] | None:
        """The listed row published as *loc*."""
        # The decision a literal, so that SQLite uses the partial index on loc.
        return self._dict(f"SELECT * FROM urls WHERE decision = '{LISTED}' AND loc = ?", (loc,))

    def rank(self, section: str | None, loc: str) -> int:
        """How many listed pages of *section* come before *loc* in the writer's
        order (``urls_listed_rows``: section, then address)."""
        return self._count(
            f"SELECT count(*) FROM urls WHERE decision = '{LISTED}' AND section IS ? AND loc < ?",
            section,
            loc,
        )

    def rows_from(self, prefix: str) -> list[dict[str, Any]]:
        """``key``, ``url``, ``rule`` and ``referrer`` of the rows whose URL starts
        with *prefix* (``rule`` NULL in a ledger without that column)."""
        rule = "rule" if "rule" in self.columns() else "NULL AS rule"
        return list(
            self._dicts(
                f"SELECT key, url, {rule}, referrer FROM urls WHERE url >= ? AND url < ?",
                (prefix, prefix + "\U0010ffff"),
            )
        )

    def queued(self) -> int | None:
        """How many URLs the frontier queued (no rule refused them); None for a
        ledger without the ``rule`` column."""
        if "rule" not in self.columns():
            return None
        return self._count("SELECT count(*) FROM urls WHERE rule IS NULL")

    def referring(self, url: str) -> dict[str, dict[str, Any]]:
        """How the crawled pages refer to *url* without following it (``unfollowed``): by
        kind, the number of pages and the first (listed first, then the shallowest), with
        its robots directives. A scan of the ledger: one question, asked once."""
        try:
            rows = self._dicts(
                "SELECT url, decision, depth, robots, unfollowed FROM urls"
                " WHERE instr(unfollowed || char(10), ?) > 0",
                (f" {url}\n",),
            )
        except sqlite3.Error:  # a ledger older than these columns
            return {}
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            rank = (row["decision"] != LISTED, row["depth"] or 0, row["url"])
            for line in str(row["unfollowed"]).split("\n"):
                kind, _, target = line.partition(" ")
                if target != url:
                    continue
                seen = found.setdefault(kind, {"pages": 0, "rank": None})
                seen["pages"] += 1
                if seen["rank"] is None or rank < seen["rank"]:
                    seen.update(rank=rank, page=row["url"], robots=row["robots"])
        for seen in found.values():
            del seen["rank"]
        return found

    def keys_by_url(self) -> dict[str, str]:
        """Every row's key by its (normalised) URL."""
        return {str(url): str(key) for key, url in self._q("SELECT key, url FROM urls")}

    def _q(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, tuple(params))

    def _count(self, sql: str, *params: Any) -> int:
        return int(self._q(sql, params).fetchone()[0])

    def _dicts(self, sql: str, params: Iterable[Any] = ()) -> Iterator[dict[str, Any]]:
        cur = self._q(sql, params)
        names = [d[0] for d in cur.description]
        return (dict(zip(names, row, strict=True)) for row in cur)

    def _dict(self, sql: str, params: Iterable[Any] = ()) -> dict[str, Any] | None:
        return next(self._dicts(sql, params), None)


class Ledger(LedgerReader):
    """An SQLite ledger at *path* (created if missing), read and written."""

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
        self._pending = 0

    def _add_missing_columns(self) -> None:
        """An earlier version's ledger gets the newer columns, before the indexes use them."""
        have = {row[1] for row in self._q("PRAGMA table_info(urls)")}
        if not have:
            return  # a new ledger: SCHEMA makes the table
        for column in COLUMNS:
            if column not in have:
                self._q(f"ALTER TABLE urls ADD COLUMN {column} {_TYPES[column]}")
        self._db.commit()

    # -- writing -----------------------------------------------------------------

    def record(self, rec: UrlRecord) -> bool:
        """Record *rec*; return False when the URL already had a final decision."""
        assert rec.key is not None
        row = tuple(value(rec) for value in _VALUES)
        cur = self._q(_QUEUE if rec.decision == QUEUED else _RECORD, row)
        written = cur.rowcount > 0
        if rec.raw_url and rec.raw_url != rec.url:
            self.add_alias(rec.raw_url, rec.key)
        if not written and rec.decision != QUEUED:
            # The same page reached under another form: keep it as an alias.
            self.add_alias(rec.url, rec.key)
        self._tick()
        return written

    def linked(self, key: str, referrer: str) -> None:
        """A URL found in a sitemap is linked from *referrer* too: its first linking
        page, kept in ``referrer`` (a seed's is NULL until then)."""
        self._write(
            "UPDATE urls SET referrer = ? WHERE key = ? AND referrer IS NULL",
            (referrer, key),
        )

    def add_alias(self, alias: str, key: str) -> None:
        self._write(
            "INSERT INTO aliases (alias, key) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (alias, key),
        )

    def set_meta(self, name: str, value: Any) -> None:
        self._write(
            "INSERT INTO meta (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, json.dumps(value)),
        )

    # -- closing the books (the rules are crawler.core.decisions.close_books) ------------

    def redecide_queued(self, decision: str, reason: str) -> int:
        """Give every URL still ``queued`` *decision* and *reason*; return how many."""
        cur = self._q(
            "UPDATE urls SET decision = ?, reason = ?, updated = ? WHERE decision = ?",
            (decision, reason, clock.timestamp(), QUEUED),
        )
        return cur.rowcount

    def carry_queued(self, previous: Path) -> int:
        """URLs still queued when a budget stopped the run, that the *previous* ledger
        has a scheduled record of (crawler.ledger.schedule): that record stands, due as
        it was, so the next night verifies them first. Returns how many."""
        self._attach(previous)
        have = {row[1] for row in self._q("PRAGMA prev.table_info(urls)")}
        if "due_at" not in have:
            return 0
        columns = [c for c in COLUMNS if c not in _NOT_CARRIED and c in have]
        cur = self._q(
            f"UPDATE urls SET ({', '.join(columns)}) = (SELECT {', '.join(columns)}"
            " FROM prev.urls AS p WHERE p.key = urls.key)"
            " WHERE decision = ? AND key IN (SELECT key FROM prev.urls WHERE due_at IS NOT NULL"
            " AND status IS NOT NULL AND status < 500 AND status <> 429 AND decision <> ?)",
            (QUEUED, ERROR),
        )
        return cur.rowcount

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
            if "changes" in {row[1] for row in self._q("PRAGMA prev.table_info(urls)")}:
                changed = self._count(
                    "SELECT count(*) FROM main.urls AS m JOIN prev.urls AS p ON m.key = p.key"
                    " WHERE m.verified_at >= ? AND m.changes > coalesce(p.changes, 0)",
                    now,
                )
        return int(verified), int(kept), changed

    def listed_by_content(self) -> Iterator[list[str]]:
        """The URLs of each body (``content_hash``) that more than one listed page has."""
        cur = self._q(
            "SELECT content_hash, url FROM urls WHERE decision = ? AND content_hash IN ("
            "  SELECT content_hash FROM urls WHERE decision = ? AND content_hash IS NOT NULL"
            "  GROUP BY content_hash HAVING count(*) > 1"
            ") ORDER BY content_hash",
            (LISTED, LISTED),
        )
        for _, rows in itertools.groupby(cur, key=itemgetter(0)):
            yield [url for _, url in rows]

    def redecide(self, changes: Iterable[tuple[str, str, str, str | None]]) -> None:
        """Apply ``(url, decision, reason, target)`` changes; a page that is no longer
        listed loses its published address."""
        self._db.executemany(
            "UPDATE urls SET decision = ?, reason = ?, target = ?, target_key = ?, loc = NULL "
            "WHERE url = ?",
            [(d, reason, t, target_key(t), url) for url, d, reason, t in changes],
        )

    def query_rows(self) -> Iterator[tuple[str, str, str | None]]:
        """``(url, decision, target)`` of every URL with a query, by URL."""
        yield from self._q(
            "SELECT url, decision, target FROM urls WHERE instr(url, '?') > 0 ORDER BY url"
        ).fetchall()

    def decision_by_url(self, url: str) -> tuple[str, str | None] | None:
        """``(decision, target)`` of *url* (normalised), if known."""
        row = self._q("SELECT decision, target FROM urls WHERE key = ?", (url_key(url),)).fetchone()
        return None if row is None else (row[0], row[1])

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

    def hops(self) -> dict[str, str]:
        """The key of every redirect and canonical -> the key of its target."""
        return dict(
            self._q(
                "SELECT key, target_key FROM urls WHERE decision IN (?, ?) "
                "AND target_key IS NOT NULL",
                (REDIRECT, CANONICAL),
            )
        )

    def append_reasons(self, notes: Iterable[tuple[str, str]]) -> None:
        """Append each ``(key, text)`` note to that URL's reason."""
        self._db.executemany(
            "UPDATE urls SET reason = reason || ? WHERE key = ?", [(n, k) for k, n in notes]
        )

    def page_dated(self, value: str) -> Iterator[dict[str, Any]]:
        """The listed pages whose lastmod is *value*, taken from their own metadata
        (the lastmod pipeline's template dates)."""
        yield from list(  # read before the caller writes
            self._dicts(
                "SELECT key, own_hash, main_hash, content_hash, page_dates FROM urls"
                " WHERE decision = ? AND lastmod_source = 'page' AND lastmod = ?",
                (LISTED, value),
            )
        )

    def set_lastmod(
        self,
        key: str,
        lastmod: str | None,
        source: str | None,
        lastmod_from: str | None,
        changed_at: str | None,
        page_dates: str | None,
    ) -> None:
        """A listed page's lastmod decided again once the crawl is over."""
        self._write(
            "UPDATE urls SET lastmod = ?, lastmod_source = ?, lastmod_from = ?,"
            " changed_at = ?, page_dates = ? WHERE key = ?",
            (lastmod, source, lastmod_from, changed_at, page_dates, key),
        )

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

    def close(self) -> None:
        self.commit()
        self._db.close()

    # -- reading -----------------------------------------------------------------

    def listed_entries(
        self,
        changefreq: ChangeFreq | None = None,
        priority: Decimal | None = None,
        per_row: bool = True,
    ) -> EntryRows:
        """The listed pages as :class:`~crawler.sitemaps.entryrows.EntryRows` streamed
        from disk in the covering index's order (:data:`LISTED_ROWS`), with this
        *changefreq* and *priority* unless a row has its own. Without *per_row* (no rule
        set a section, changefreq or priority) three columns are read: wider rows cost
        sqlite3 about 0.2 s a million (bench/README.md)."""
        cursor = self._q(LISTED_ROWS if per_row else LISTED_ROWS_PLAIN)
        return EntryRows(cursor, changefreq, priority)

    # -- rich entries (crawler.publish.richentries) -----------------------------------------

    def rich_rows(
        self,
    ) -> Iterator[tuple[str, str, str, str | None, str | None, str | None, str | None]]:
        """``(key, url, loc, alternates, images, videos, problems)`` of every listed
        page with rich data (JSON columns), by URL."""
        yield from self._q(
            "SELECT key, url, loc, alternates, images, videos, problems FROM urls"
            " WHERE decision = ? AND (alternates IS NOT NULL OR images IS NOT NULL"
            " OR videos IS NOT NULL OR problems IS NOT NULL) ORDER BY url",
            (LISTED,),
        ).fetchall()

    def set_rich(self, key: str, extras: str | None, problems: list[str]) -> None:
        """Store a listed page's settled extensions (the writer's JSON) and problems."""
        self._write(
            "UPDATE urls SET extras = ?, problems = ? WHERE key = ?",
            (extras, _json(problems), key),
        )

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

    def listed_unlinked(self) -> int:
        """Listed pages found in a sitemap that no crawled page links to (orphans)."""
        return self._count(
            "SELECT count(*) FROM urls WHERE decision = ? AND found_by = ? AND referrer IS NULL",
            LISTED,
            FOUND_SITEMAP,
        )

    def counts(self) -> dict[str, int]:
        return dict(self._q("SELECT decision, count(*) FROM urls GROUP BY decision"))

    # -- the HTML report's figures (crawler.publish.report) -----------------------------------

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

    def _attach(self, previous: Path) -> None:
        if any(row[1] == "prev" for row in self._q("PRAGMA database_list")):
            self._q("DETACH DATABASE prev")
        self._q("ATTACH DATABASE ? AS prev", (Path(previous).absolute().as_uri() + "?mode=ro",))

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

    def _lazy(self, query: str) -> Iterator[tuple[Any, ...]]:
        # A generator: the query runs when iteration starts, so several can be handed
        # out at once and read one after the other.
        yield from self._q(query)

    def _locs(self, query: str) -> Iterator[str]:
        return (row[0] for row in self._lazy(query))

    def export_jsonl(self, path: Path) -> int:
        """Write every row as one JSON object a line; return the row count."""
        tmp = path.with_name(f".{path.name}.tmp")
        n = 0
        with tmp.open("w", encoding="utf-8") as f:
            for row in self.rows():
                if row["warnings"]:
                    row["warnings"] = json.loads(row["warnings"])
                f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
                n += 1
        tmp.replace(path)
        return n
