"""The ledger's URLs and their decisions (docs/ledger.md, tables ``urls`` and
``aliases``): one row per discovered URL keyed by its dedup key, the other forms it was
found under, and the queries of the stages that decide, close the books and publish."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from operator import attrgetter, itemgetter
from typing import Any

from crawler.core import clock
from crawler.core.decisions import CANONICAL, LISTED, QUEUED, REDIRECT, RULE_DEPTH, target_key
from crawler.core.items import FOUND_SITEMAP, UrlRecord
from crawler.core.urls import url_key
from crawler.ledger.links import LISTS, Links, decoded, lists
from crawler.ledger.sql import to_json
from crawler.sitemaps.entry import ChangeFreq
from crawler.sitemaps.entryrows import EntryRows

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
"""

#: The ``urls`` table's columns and their types, read from :data:`SCHEMA`.
_TYPES = dict(re.findall(r"^    (\w+) (\w+)", SCHEMA.partition(") WITHOUT ROWID")[0], re.M))
COLUMNS = tuple(_TYPES)

#: Set when a URL is first found; a later final decision keeps them (and a seed's
#: referrer, set when a page links to it: Ledger.linked).
_KEPT = ("found_by", "found_from", "referrer")

#: What a record carried over from the previous run takes from this run's instead.
NOT_CARRIED = frozenset({"key", "url", "depth", "referrer", "found_by", "found_from", "rule"})

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


def _json_of(name: str) -> Callable[[UrlRecord], str | None]:
    return lambda rec: to_json(getattr(rec, name))


#: How a record gives each column (its attribute of the same name unless named here).
_CONVERT: dict[str, Callable[[UrlRecord], Any]] = {
    "target_key": lambda rec: target_key(rec.target),
    "warnings": lambda rec: json.dumps(rec.warnings) if rec.warnings else None,
    **{c: _json_of(c) for c in ("alternates", "images", "videos", "news", "problems")},
    "extras": lambda rec: None,  # decided when the books are closed
    "page_dates": attrgetter("page_verdicts"),
    "updated": lambda rec: clock.timestamp(),
}
_VALUES = tuple(_CONVERT.get(c, attrgetter(c)) for c in COLUMNS)

#: The writer's rows (crawler.sitemaps.entryrows.ROW_COLUMNS), answered from urls_listed_rows.
LISTED_ROWS = (
    "SELECT loc, lastmod, extras, section, changefreq, priority FROM urls"
    f" WHERE decision = '{LISTED}' ORDER BY section, loc"
)

#: The same rows, when no rule set a section, changefreq or priority.
LISTED_ROWS_PLAIN = LISTED_ROWS.replace(", section, changefreq, priority FROM", " FROM")

#: Every column of a row, and its lists (crawler.ledger.links).
FULL_ROW = f"SELECT urls.*, {lists()} FROM urls"


class Records(Links):
    """Reads and writes the ``urls`` and ``aliases`` tables (and a record's lists)."""

    def _add_missing_columns(self) -> None:
        """An earlier version's ledger gets the newer columns, before the indexes use them."""
        have = self._columns_of("urls")
        if not have:
            return  # a new ledger: SCHEMA makes the table
        for column in COLUMNS:
            if column not in have:
                self._q(f"ALTER TABLE urls ADD COLUMN {column} {_TYPES[column]}")
        self._db.commit()

    def record(self, rec: UrlRecord) -> bool:
        """Record *rec*; return False when the URL already had a final decision."""
        assert rec.key is not None
        row = tuple(value(rec) for value in _VALUES)
        written = self._q(_QUEUE if rec.decision == QUEUED else _RECORD, row).rowcount > 0
        if rec.raw_url and rec.raw_url != rec.url:
            self.add_alias(rec.raw_url, rec.key)
        if written and rec.decision != QUEUED:
            self.keep_links(rec.key, rec.links, rec.unfollowed)
        elif not written and rec.decision != QUEUED:
            # The same page reached under another form: keep it as an alias.
            self.add_alias(rec.url, rec.key)
        self._tick()
        return written

    def columns(self) -> set[str]:
        """The columns of a row (an earlier version wrote fewer): ``urls``'s and, with
        the ``links`` table, its lists."""
        return self._columns_of("urls") | (set(LISTS) if self._columns_of("links") else set())

    def row(self, key: str | None) -> dict[str, Any] | None:
        """The row of the URL with dedup key *key*, if known."""
        if key is None:
            return None
        return next(decoded(self._dicts(f"{FULL_ROW} WHERE key = ?", (key,))), None)

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
        sql = FULL_ROW + (f" WHERE {clause}" if clause else "") + " ORDER BY url"
        return decoded(self._dicts(sql, tuple(where.values())))

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
        sql = f"{FULL_ROW} WHERE decision = '{LISTED}' AND loc = ?"
        return next(decoded(self._dicts(sql, (loc,))), None)

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

    def keys_by_url(self) -> dict[str, str]:
        """Every row's key by its (normalised) URL."""
        return {str(url): str(key) for key, url in self._q("SELECT key, url FROM urls")}

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

    def redecide_queued(self, decision: str, reason: str) -> int:
        """Give every URL still ``queued`` *decision* and *reason*; return how many."""
        return self._q(
            "UPDATE urls SET decision = ?, reason = ?, updated = ? WHERE decision = ?",
            (decision, reason, clock.timestamp(), QUEUED),
        ).rowcount

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
            "SELECT url, decision, target FROM urls WHERE url LIKE '%?%' ORDER BY url"
        ).fetchall()

    def decision_by_url(self, url: str) -> tuple[str, str | None] | None:
        """``(decision, target)`` of *url* (normalised), if known."""
        row = self._q("SELECT decision, target FROM urls WHERE key = ?", (url_key(url),)).fetchone()
        return None if row is None else (row[0], row[1])

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
            (extras, to_json(problems), key),
        )

    def listed_unlinked(self) -> int:
        """Listed pages found in a sitemap that no crawled page links to (orphans)."""
        return self._count(
            "SELECT count(*) FROM urls WHERE decision = ? AND found_by = ? AND referrer IS NULL",
            LISTED,
            FOUND_SITEMAP,
        )
