"""What is written once stays in one place: a grep of the product code.

- ``SITEMAP_STRIP_PARAMS`` and ``SITEMAP_STRIP_EXTRA`` are read from the settings in
  :class:`crawler.core.urls.Stripping` only; every part that normalises URLs takes that
  object's fields.
- SQL on the ledger's tables is written in its rooms only (crawler/ledger/records.py,
  links.py, runs.py, revisits.py, put together in ledger.py): the running ledger, the
  previous run (crawler/ledger/previous.py), ``explain``, ``export`` and the audit read
  a ledger through :class:`crawler.ledger.ledger.LedgerReader`. (The audit's own store,
  crawler/audit/store.py, keeps its own tables: ``sitemaps``, ``listings``,
  ``fetched``.)
- The report pages' URL cap is the setting's default, not a copy of it.
"""

from __future__ import annotations

import re
from pathlib import Path

from crawler.ledger import ledger

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [*sorted((ROOT / "crawler").rglob("*.py")), *sorted((ROOT / "pipelines").rglob("*.py"))]


def readers(pattern: re.Pattern[str]) -> dict[str, int]:
    """{module: lines} of the product modules where *pattern* matches."""
    found: dict[str, int] = {}
    for path in PRODUCT:
        hits = len(pattern.findall(path.read_text(encoding="utf-8")))
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    return found


def test_the_strip_settings_are_read_in_one_place() -> None:
    read = readers(re.compile(r"\.get\w*\(\s*[\"']SITEMAP_STRIP_(?:PARAMS|EXTRA)[\"']"))
    assert read == {"crawler/core/urls.py": 2}, read


def ledger_tables() -> list[str]:
    return re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", ledger.SCHEMA)


def test_the_ledger_tables_are_known() -> None:
    assert {"urls", "aliases", "params", "meta", "addresses", "links"} <= set(ledger_tables())
    assert not {"sitemaps", "listings", "fetched"} & set(ledger_tables())


#: The ledger's modules that hold SQL on its tables.
ROOMS = ("ledger", "records", "links", "runs", "revisits")


def test_no_sql_on_the_ledger_outside_its_module() -> None:
    names = "|".join(ledger_tables())
    sql = re.compile(
        rf"\b(?:FROM|INTO|UPDATE|JOIN|TABLE|table_info)\b\s*\(?\s*(?:\w+\.)?(?:{names})\b"
    )
    found = readers(sql)
    for room in ROOMS:
        found.pop(f"crawler/ledger/{room}.py", None)
    assert not found, f"SQL on the ledger's tables outside its rooms: {found}"
    connects = readers(re.compile(r"sqlite3\.connect\("))
    assert set(connects) <= {"crawler/ledger/ledger.py", "crawler/audit/store.py"}, connects


def test_the_report_pages_cap_is_the_settings_default() -> None:
    import settings
    from crawler.publish.htmlpage import DEFAULT_CAP

    assert DEFAULT_CAP == settings.SITEMAP_REPORT_HTML_URLS
    assert not readers(re.compile(r"^DEFAULT_CAP\b.*=\s*\d", re.M)), "a copied number"
