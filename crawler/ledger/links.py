"""The ledger's links: what each page leads to and what it refers to without the crawl
following it (docs/ledger.md, tables ``addresses`` and ``links``).

A URL is written once, in ``addresses``, and a page's lists are JSON arrays of those
integer ids in ``links``, in the page's order: about seven bytes a link, where the URL
text a link cost a row of its own in overflow pages. SQLite reads them as tables
(``json_each``); :func:`lists` gives a row's lists back as URLs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from crawler.core.decisions import LISTED
from crawler.ledger.sql import Tables

SCHEMA = """
CREATE TABLE IF NOT EXISTS addresses (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS links (
    key TEXT PRIMARY KEY,
    targets TEXT,
    unfollowed TEXT
) WITHOUT ROWID;
"""

#: A row's own lists, named as its record has them (crawler.core.items.UrlRecord).
LISTS = ("links", "unfollowed")

_ADD = (
    "INSERT INTO addresses (url) SELECT value FROM json_each(?) WHERE true ON CONFLICT DO NOTHING"
)
# The ids of a JSON array of URLs, in its order; of [kind, URL] pairs, as [kind, id].
_IDS = (
    "nullif((SELECT json_group_array(id) FROM (SELECT a.id FROM json_each(?) AS j"
    " JOIN addresses AS a ON a.url = j.value ORDER BY j.key)), '[]')"
)
_PAIRS = (
    "nullif((SELECT json_group_array(json_array(kind, id)) FROM (SELECT"
    " json_extract(j.value, '$[0]') AS kind, a.id FROM json_each(?) AS j JOIN addresses AS a"
    " ON a.url = json_extract(j.value, '$[1]') ORDER BY j.key)), '[]')"
)
_KEEP = (
    f"INSERT INTO links (key, targets, unfollowed) VALUES (?, {_IDS}, {_PAIRS})"
    " ON CONFLICT (key) DO UPDATE SET targets = excluded.targets, unfollowed = excluded.unfollowed"
)


def lists(db: str = "main", row: str = "urls") -> str:
    """The select-list items giving the lists of the rows of *row* (a table or alias of
    the ledger *db*) as JSON arrays: ``links`` (URLs) and ``unfollowed`` (``KIND URL``)."""
    return (
        f"(SELECT json_group_array(a.url) FROM {db}.links AS l, json_each(l.targets) AS j"
        f" JOIN {db}.addresses AS a ON a.id = j.value WHERE l.key = {row}.key) AS links, "
        f"(SELECT json_group_array(json_extract(j.value, '$[0]') || ' ' || a.url)"
        f" FROM {db}.links AS l, json_each(l.unfollowed) AS j JOIN {db}.addresses AS a"
        f" ON a.id = json_extract(j.value, '$[1]') WHERE l.key = {row}.key) AS unfollowed"
    )


def decoded(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """*rows* read with :func:`lists`, their lists as Python lists."""
    for row in rows:
        for name in LISTS:
            row[name] = json.loads(row[name])
        yield row


def _lines(text: str | None) -> list[str]:
    return text.split("\n") if text else []


class Links(Tables):
    """Writes and reads the ``addresses`` and ``links`` tables."""

    def keep_links(self, key: str, links: list[str], unfollowed: list[str]) -> None:
        """The lists of the page *key*: the URLs it leads to, and ``KIND URL`` lines of
        what it refers to unfollowed (none: the page keeps no lists)."""
        if not links and not unfollowed:
            self._q("DELETE FROM links WHERE key = ?", (key,))
            return
        pairs = [line.split(" ", 1) for line in unfollowed]
        targets = json.dumps(links)
        self._q(_ADD, (json.dumps([*links, *(url for _, url in pairs)]) if pairs else targets,))
        self._q(_KEEP, (key, targets, json.dumps(pairs)))

    def _carry_links(self, keys: list[str]) -> None:
        """The lists of the pages *keys* as the previous ledger (``prev``) has them."""
        found = self._q(
            f"SELECT p.key, {lists('prev', 'p')} FROM prev.urls AS p"
            " WHERE p.key IN (SELECT value FROM json_each(?))",
            (json.dumps(keys),),
        ).fetchall()
        for key, links, unfollowed in found:
            self.keep_links(key, json.loads(links), json.loads(unfollowed))

    def earlier(self) -> bool:
        """Whether an earlier version wrote this ledger: no ``links`` table, or the lists
        still as text in ``urls`` (:meth:`_migrate_lists`)."""
        return not self._columns_of("links") or bool(set(LISTS) & self._columns_of("urls"))

    def _migrate_lists(self) -> None:
        """A ledger of the version that kept the lists as newline-joined text in ``urls``:
        they move here and the text columns go (then the file is vacuumed: their overflow
        pages were most of it)."""
        old = [name for name in LISTS if name in self._columns_of("urls")]
        if not old:
            return
        text = [name if name in old else "NULL" for name in LISTS]
        found = self._db.execute(
            f"SELECT key, {', '.join(text)} FROM urls"
            f" WHERE {' OR '.join(f'{name} IS NOT NULL' for name in old)}"
        )
        for key, links, unfollowed in found:
            self.keep_links(key, _lines(links), _lines(unfollowed))
        for name in old:
            self._q(f"ALTER TABLE urls DROP COLUMN {name}")
        self.commit()
        self._q("VACUUM")

    def referring(self, url: str) -> dict[str, dict[str, Any]]:
        """How the crawled pages refer to *url* without following it (``unfollowed``): by
        kind, the number of pages and the first (listed first, then the shallowest), with
        its robots directives. A scan of the lists: one question, asked once."""
        robots = "u.robots" if "robots" in self._columns_of("urls") else "NULL"
        rows = self._q(
            f"SELECT json_extract(j.value, '$[0]'), u.url, u.decision, u.depth, {robots}"
            " FROM addresses AS t, links AS l, json_each(l.unfollowed) AS j"
            " JOIN urls AS u ON u.key = l.key"
            " WHERE t.url = ? AND json_extract(j.value, '$[1]') = t.id",
            (url,),
        )
        found: dict[str, dict[str, Any]] = {}
        for kind, page, decision, depth, robots in rows:
            rank = (decision != LISTED, depth or 0, page)
            seen = found.setdefault(kind, {"pages": 0, "rank": None})
            seen["pages"] += 1
            if seen["rank"] is None or rank < seen["rank"]:
                seen.update(rank=rank, page=page, robots=robots)
        for seen in found.values():
            del seen["rank"]
        return found
