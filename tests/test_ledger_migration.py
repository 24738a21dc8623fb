"""A ledger of the version that kept a page's lists as newline-joined text in ``urls``
(``links``, ``unfollowed``: up to commit 9c01963) is migrated when it is first opened:
its records, schedule, meta, aliases and learned parameters stay, the lists move to
the ``links`` table of address ids (crawler.ledger.links), and the next night builds on
it as on a ledger of this version (docs/ledger.md, "Earlier versions")."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest_twisted

from crawler.ledger import records, runs
from crawler.ledger.ledger import Ledger, LedgerReader
from tests.test_nightly import NightlySite, published
from tests.test_revisit import PAGES, Clock, fetched, night, schedule
from tests.test_revisit import clock as clock  # noqa: F401  (a fixture)
from tests.test_revisit import site as site  # noqa: F401  (a fixture)

#: The DDL of that version: ``urls`` with its two text columns after ``first_seen``.
OLD_SCHEMA = (
    records.SCHEMA.replace(
        "    first_seen REAL,\n", "    first_seen REAL,\n    links TEXT,\n    unfollowed TEXT,\n"
    )
    + runs.SCHEMA
)
OLD_COLUMNS = [*records.COLUMNS[: records.COLUMNS.index("first_seen") + 1], "links", "unfollowed"]
OLD_COLUMNS += records.COLUMNS[len(OLD_COLUMNS) - 2 :]


def write_old(path: Path, rows: list[dict[str, Any]], copy_from: Path | None = None) -> None:
    """An old-schema ledger at *path* holding *rows* (their lists as Python lists), and
    the meta, aliases and params of the ledger *copy_from*."""
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.executemany(
        f"INSERT INTO urls ({', '.join(OLD_COLUMNS)}) VALUES ({', '.join('?' * len(OLD_COLUMNS))})",
        [
            tuple(
                "\n".join(row.get(c) or ()) or None if c in ("links", "unfollowed") else row.get(c)
                for c in OLD_COLUMNS
            )
            for row in rows
        ],
    )
    if copy_from is not None:
        db.execute("ATTACH DATABASE ? AS new", (str(copy_from),))
        for table in ("meta", "aliases", "params"):
            db.execute(f"INSERT INTO {table} SELECT * FROM new.{table}")
    db.commit()
    db.close()


def test_the_old_schema_is_that_versions() -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(OLD_SCHEMA)
    assert [r[1] for r in db.execute("PRAGMA table_info(urls)")] == OLD_COLUMNS
    assert {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {
        "urls",
        "aliases",
        "params",
        "meta",
    }


def test_an_earlier_ledger_is_migrated_when_opened(tmp_path: Path) -> None:
    site = "https://example.com"
    page = {
        "key": "example.com/",
        "url": f"{site}/",
        "decision": "listed",
        "reason": "",
        "status": 200,
        "due_at": 1e9,
        "checks": 3,
        "updated": 1.0,
        # Out of address order, a repeat: kept as the page had them.
        "links": [f"{site}/b", f"{site}/a", f"{site}/b", f"{site}/c"],
        "unfollowed": [f"image {site}/i.png", f"nofollow {site}/a"],
    }
    other = {
        "key": "example.com/a",
        "url": f"{site}/a",
        "decision": "status",
        "reason": "HTTP 404",
        "updated": 1.0,
    }
    old = tmp_path / "ledger.sqlite"
    write_old(old, [page, other])
    copy = tmp_path / "copy.sqlite"
    shutil.copy(old, copy)
    with sqlite3.connect(old) as db:
        db.execute("INSERT INTO meta VALUES ('start_url', '\"https://example.com/\"')")
        db.execute("INSERT INTO aliases VALUES ('https://example.com/index.html', 'example.com/')")
    db.close()

    ledger = Ledger(old)
    assert not ledger.earlier() and "links" not in ledger._columns_of("urls")
    row = ledger.row("example.com/")
    assert row is not None
    assert (row["decision"], row["due_at"], row["checks"]) == ("listed", 1e9, 3)
    assert row["links"] == page["links"] and row["unfollowed"] == page["unfollowed"]
    assert ledger.row("example.com/a") == {**other, **ledger.row("example.com/a"), "links": []}
    assert ledger.get_meta("start_url") == "https://example.com/"
    assert ledger.alias("https://example.com/index.html") == "example.com/"
    assert ledger.referring(f"{site}/a") == {
        "nofollow": {"pages": 1, "page": f"{site}/", "robots": None}
    }
    ledger.close()
    # A reader (explain, the previous run) migrates it as well, once.
    reader = LedgerReader.open(copy)
    assert not reader.earlier()
    assert [r["links"] for r in reader.rows()] == [page["links"], []]
    reader.close()


@pytest_twisted.ensureDeferred
async def test_a_night_after_an_earlier_ledger_keeps_its_records_and_schedule(
    site: NightlySite,  # noqa: F811
    tmp_path: Path,
    clock: Clock,  # noqa: F811
) -> None:
    run0 = await night(site, tmp_path)
    first, rows0 = published(run0.out), schedule(run0)
    assert any(row["links"] for row in rows0.values())
    # The same night's books, as the earlier version would have filed them.
    ledger, new = run0.state / "ledger.sqlite", tmp_path / "new.sqlite"
    every = list(run0.ledger_rows().values())
    ledger.replace(new)
    write_old(ledger, every, copy_from=new)
    # That version's copy of it, written on every run: out of date once a run files its own.
    (run0.state / "ledger.jsonl").write_text("{}\n")
    clock.advance()
    run = await night(site, tmp_path)
    assert run.outcome == "published", run.stats.get("sitemap/message")
    assert run.stats.get("sitemap/full_night") is None  # the schedule was kept
    assert not (run.state / "ledger.jsonl").exists()
    assert published(run.out) == first
    pages = [p for p in fetched(site) if p != "/"]
    assert 3 <= len(pages) <= 5, pages
    assert run.stats.get("sitemap/schedule/kept") == 28 - len(pages)
    rows = schedule(run)
    for path in PAGES:
        url = site.url(path)
        before, after = rows0[url], rows[url]
        assert after["first_seen"] == before["first_seen"]
        assert after["links"] == before["links"]
        if path not in pages:  # kept: its record stands
            assert after["due_at"] == before["due_at"], path
