"""Tests for sections and the rows' own changefreq and priority (issue 15, writing part).

A set split into sections: each section's files are named ``sitemap-NAME-NNNNN-<h>``,
numbered from 00001 and rotated on their own, all listed in the one index; the
default section keeps today's names and bytes (pinned by hash). Rows may carry their
own changefreq and priority, the set-wide values applying where they have none.
Every file written is validated against the XSDs (tests/xsd.py).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

import crawler.sitemaps.entry
import crawler.sitemaps.entryrows
from crawler.publish.writer import CHILD_NAME_RE, WrittenFile, publish_sitemaps
from crawler.sitemaps.entry import ChangeFreq, News, SitemapEntry
from crawler.sitemaps.entryrows import (
    MAX_SECTION_LENGTH,
    ROW_COLUMNS,
    EntryBatch,
    EntryRow,
    EntryRows,
    check_section,
)
from crawler.sitemaps.extras import extras_json
from crawler.sitemaps.limits import SITEMAP_NS
from tests.xsd import validate_index, validate_urlset

BASE = "https://example.com/"
NS = {"s": SITEMAP_NS}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)
# <h>: 10 hex digits; the suffix: .xml or .txt, maybe .gz.
_H = r"[0-9a-f]{10}\.(?:xml|txt)(?:\.gz)?"


def decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


def set_digest(directory: Path) -> str:
    """One SHA-256 of every file's name and bytes, the index included."""
    sha = hashlib.sha256()
    for path in sorted(directory.iterdir()):
        sha.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return sha.hexdigest()


def published(out: Path) -> list[tuple[str, list[str]]]:
    """Validate the index and every XML child it lists; return each child's name
    and locs (a text child's lines), in the index's order."""
    index = (out / "sitemap_index.xml").read_bytes()
    validate_index(index)
    children: list[tuple[str, list[str]]] = []
    for element in etree.fromstring(index, _PARSER).findall("s:sitemap/s:loc", NS):
        loc = str(element.text)
        assert loc.startswith(BASE)
        name = loc.removeprefix(BASE)
        assert CHILD_NAME_RE.match(name), name
        content = decompressed(out / name)
        # The name holds the first 10 hex digits of the content's SHA-256.
        assert name.split("-")[-1].startswith(hashlib.sha256(content).hexdigest()[:10])
        if ".txt" in name:
            children.append((name, content.decode().splitlines()))
            continue
        validate_urlset(content)
        root = etree.fromstring(content, _PARSER)
        children.append((name, [str(e.text) for e in root.findall("s:url/s:loc", NS)]))
    return children


# A full row: (loc, lastmod, extras, section, changefreq, priority).
Row = tuple[str, str | None, str | None, str | None, str | None, str | None]


def row(
    loc: str,
    section: str | None = None,
    changefreq: str | None = None,
    priority: str | None = None,
    *,
    lastmod: str | None = None,
    extras: str | None = None,
) -> Row:
    """A full row, in ROW_COLUMNS order."""
    return (loc, lastmod, extras, section, changefreq, priority)


def section_rows(counts: dict[str | None, int]) -> list[Row]:
    """``counts[section]`` rows of each section, in the given order."""
    return [
        row(f"https://example.com/{section or 'home'}/{i:05d}", section)
        for section, n in counts.items()
        for i in range(n)
    ]


def plain_rows(count: int = 2500) -> list[tuple[str, str | None]]:
    """(loc, lastmod) rows: some locs to escape, some lastmods missing, dates and
    date-times (the same rows as the pins below were taken with, before sections)."""
    rows: list[tuple[str, str | None]] = []
    for i in range(count):
        loc = f"https://example.com/{'ab'[i % 2]}/page-{i:05d}" + ("?a=1&b=2" if i % 7 == 0 else "")
        if i % 5 == 0:
            lastmod = None
        elif i % 3:
            lastmod = f"2024-03-{i % 28 + 1:02d}"
        else:
            lastmod = f"2024-02-{i % 28 + 1:02d}T10:{i % 60:02d}:00+00:00"
        rows.append((loc, lastmod))
    return rows


# -- sections: split, named, numbered, rotated, indexed ----------------------------


@pytest.mark.parametrize(
    ("counts", "max_urls"),
    [
        # Small: every file boundary is a section's or max_urls'.
        ({None: 4, "blog": 7, "docs": 3}, 3),
        # Large: sections change inside the writer's batches of 1,024 rows.
        ({None: 1500, "blog": 10, "docs": 2100}, 1000),
        # No default section at all.
        ({"blog": 5, "docs": 1}, 50_000),
    ],
)
@pytest.mark.parametrize("fmt", ["xml", "txt"])
def test_sections_split_exactly(
    tmp_path: Path, counts: dict[str | None, int], max_urls: int, fmt: str
) -> None:
    rows = section_rows(counts)
    index, files = publish_sitemaps(
        tmp_path, EntryRows(rows), index_base_url=BASE, max_urls=max_urls, fmt=fmt
    )
    children = published(tmp_path)
    # The index lists every file, in the order written: the sections' order.
    assert [name for name, _ in children] == [f.name for f in files]
    assert set(snapshot(tmp_path)) == {f.name for f in files} | {index.name}
    expected_files: list[tuple[str | None, int, list[str]]] = []
    for section, n in counts.items():
        locs = [r[0] for r in rows if r[3] == section]
        assert len(locs) == n
        for number, start in enumerate(range(0, n, max_urls), 1):
            expected_files.append((section, number, locs[start : start + max_urls]))
    assert len(files) == len(expected_files)
    for written, (name, locs), (section, number, expected_locs) in zip(
        files, children, expected_files, strict=True
    ):
        assert written.section == section
        assert written.urls == len(locs)
        assert locs == expected_locs
        prefix = "sitemap-" if section is None else f"sitemap-{section}-"
        assert re.fullmatch(rf"{re.escape(prefix)}{number:05d}-{_H}", name), name
        assert name.endswith(f".{fmt}.gz")
    assert Counter(f.section for f in files) == Counter(s for s, _, _ in expected_files)
    assert sum(f.urls for f in files) == len(rows)


def test_each_section_is_numbered_from_one(tmp_path: Path) -> None:
    rows = section_rows({None: 5, "a": 5, "b-2": 2, "zz": 6})
    _, files = publish_sitemaps(tmp_path, EntryRows(rows), index_base_url=BASE, max_urls=2)
    names = [f.name.rsplit("-", 1)[0] for f in files]
    assert names == [
        "sitemap-00001",
        "sitemap-00002",
        "sitemap-00003",
        "sitemap-a-00001",
        "sitemap-a-00002",
        "sitemap-a-00003",
        "sitemap-b-2-00001",
        "sitemap-zz-00001",
        "sitemap-zz-00002",
        "sitemap-zz-00003",
    ]
    assert [f.urls for f in files] == [2, 2, 1, 2, 2, 1, 2, 2, 2, 2]
    published(tmp_path)


def test_rotation_by_bytes_inside_a_section(tmp_path: Path) -> None:
    rows = section_rows({None: 3, "blog": 40})
    one = len(b"<url><loc>https://example.com/blog/00000</loc></url>\n")
    header_footer = len(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">\n</urlset>\n'
    )
    _, files = publish_sitemaps(
        tmp_path, EntryRows(rows), index_base_url=BASE, max_bytes=header_footer + 10 * one
    )
    assert [(f.section, f.urls) for f in files] == [(None, 3)] + [("blog", 10)] * 4
    assert all(f.bytes_uncompressed <= header_footer + 10 * one for f in files)
    published(tmp_path)


def test_index_lastmod_of_each_section_file(tmp_path: Path) -> None:
    rows = [
        row("https://example.com/a", lastmod="2024-01-05"),
        row("https://example.com/b", lastmod="2024-03-01T00:00:00+00:00"),
        row("https://example.com/blog/a", "blog", lastmod="2023-12-31"),
        row("https://example.com/blog/b", "blog"),
        row("https://example.com/docs/a", "docs"),
    ]
    _, files = publish_sitemaps(tmp_path, EntryRows(rows), index_base_url=BASE)
    assert [(f.section, f.lastmod) for f in files] == [
        (None, "2024-03-01T00:00:00+00:00"),
        ("blog", "2023-12-31"),
        ("docs", None),
    ]
    index = (tmp_path / "sitemap_index.xml").read_text()
    assert index.count("<lastmod>") == 2
    assert f"<loc>{BASE}{files[2].name}</loc></sitemap>" in index


def test_news_sitemaps_come_after_every_section(tmp_path: Path) -> None:
    stories = [
        SitemapEntry(
            f"https://example.com/news/{i}",
            news=News("The Example Times", "en", "2026-11-20T08:00:00+00:00", f"Story {i}"),
        )
        for i in range(3)
    ]
    rows = section_rows({None: 2, "blog": 2})
    _, files = publish_sitemaps(
        tmp_path, EntryRows(rows), news=stories, index_base_url=BASE, extensions={"news"}
    )
    assert [f.section for f in files] == [None, "blog", "news"]
    assert re.fullmatch(rf"sitemap-news-00001-{_H}", files[2].name)
    assert [name for name, _ in published(tmp_path)] == [f.name for f in files]


def test_written_file_says_its_section(tmp_path: Path) -> None:
    # The default section is None, positionally as before sections existed.
    assert WrittenFile("sitemap-00001-0123456789.xml.gz", 1, 100, None).section is None
    rows = section_rows({None: 3, "blog": 5, "docs": 1})
    _, files = publish_sitemaps(tmp_path, EntryRows(rows), index_base_url=BASE, max_urls=2)
    per_section: Counter[str | None] = Counter()
    for written in files:
        per_section[written.section] += written.urls
    assert per_section == {None: 3, "blog": 5, "docs": 1}


def test_sections_streamed_from_sqlite_in_one_query(tmp_path: Path) -> None:
    # The ledger's query: the full row, ORDER BY section, loc. NULL (the default
    # section) sorts first in SQLite; the rows go in shuffled.
    rows = [
        row("https://example.com/docs/b", "docs", priority="0.3"),
        row("https://example.com/z", lastmod="2024-01-01"),
        row("https://example.com/blog/b", "blog", "weekly"),
        row("https://example.com/a"),
        row("https://example.com/docs/a", "docs"),
        row("https://example.com/blog/a", "blog", "daily", "0.9"),
        row("https://example.com/m", None, "never"),
    ]
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    db.execute(f"CREATE TABLE urls ({', '.join(f'{c} TEXT' for c in ROW_COLUMNS)})")
    db.executemany(f"INSERT INTO urls VALUES ({', '.join('?' * len(ROW_COLUMNS))})", rows)
    cursor = db.execute(f"SELECT {', '.join(ROW_COLUMNS)} FROM urls ORDER BY section, loc")
    _, files = publish_sitemaps(
        tmp_path / "out", EntryRows(cursor, priority=Decimal("0.5")), index_base_url=BASE
    )
    db.close()
    children = published(tmp_path / "out")
    assert [(f.section, locs) for f, (_, locs) in zip(files, children, strict=True)] == [
        (None, ["https://example.com/a", "https://example.com/m", "https://example.com/z"]),
        ("blog", ["https://example.com/blog/a", "https://example.com/blog/b"]),
        ("docs", ["https://example.com/docs/a", "https://example.com/docs/b"]),
    ]
    blog = decompressed(tmp_path / "out" / files[1].name)
    assert (
        b"<url><loc>https://example.com/blog/a</loc><changefreq>daily</changefreq>"
        b"<priority>0.9</priority></url>\n"
        b"<url><loc>https://example.com/blog/b</loc><changefreq>weekly</changefreq>"
        b"<priority>0.5</priority></url>\n"
    ) in blog


# -- sections refused ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "what"),
    [
        # A section whose rows are not together.
        (
            [*section_rows({"blog": 2, "docs": 2}), row("https://example.com/blog/late", "blog")],
            "section 'blog'",
        ),
        # The default section after another.
        (section_rows({"blog": 2, None: 2}), "the default section"),
    ],
)
def test_rows_not_ordered_by_section_are_refused(
    tmp_path: Path, rows: list[EntryRow], what: str
) -> None:
    out = tmp_path / "out"
    publish_sitemaps(out, [SitemapEntry("https://example.com/old")], index_base_url=BASE)
    before = snapshot(out)
    with pytest.raises(ValueError, match=f"the rows of {what} do not come together"):
        publish_sitemaps(out, EntryRows(rows), index_base_url=BASE)
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_section_that_comes_back_inside_a_batch_is_refused(tmp_path: Path) -> None:
    rows = [*section_rows({"a": 2, "b": 2}), row("https://example.com/a/again", "a")]
    with pytest.raises(ValueError, match="'a' do not come together .* ordered by section"):
        publish_sitemaps(tmp_path, EntryRows(rows), index_base_url=BASE)
    assert list(tmp_path.iterdir()) == []


BAD_SECTIONS = [
    "",
    "news",
    "News",
    "Blog",
    "1blog",
    "2024",
    "-blog",
    "blog.xml",
    "blog/x",
    "../x",
    "blog_x",
    "blog x",
    "bl\u00f6g",
    "blog\n",
    "a" * (MAX_SECTION_LENGTH + 1),
    5,
    b"blog",
]


@pytest.mark.parametrize("section", BAD_SECTIONS)
def test_bad_section_names_are_refused(tmp_path: Path, section: Any) -> None:
    with pytest.raises(ValueError):
        check_section(section)
    out = tmp_path / "out"
    publish_sitemaps(out, [SitemapEntry("https://example.com/old")], index_base_url=BASE)
    before = snapshot(out)
    rows = [*section_rows({None: 3, "blog": 1500}), row("https://example.com/x/1", section)]
    message = (
        "reserved for the news sitemaps"
        if section == "news"
        else "a section name must be 1 to 40 characters of a-z, 0-9 and '-', the first a letter"
    )
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        publish_sitemaps(out, EntryRows(rows), index_base_url=BASE, max_urls=1000)
    assert str(raised.value).startswith("bad section of 'https://example.com/x/1': ")
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    # Iterated one by one, the same error.
    with pytest.raises(ValueError) as one_by_one:
        list(EntryRows(rows))
    assert str(one_by_one.value) == str(raised.value)


@pytest.mark.parametrize("section", ["a", "blog", "blog-2024", "x-1", "a-", "a--b", "a" * 40])
def test_good_section_names(tmp_path: Path, section: str) -> None:
    check_section(section)
    _, files = publish_sitemaps(
        tmp_path, EntryRows([row("https://example.com/x", section)]), index_base_url=BASE
    )
    assert re.fullmatch(rf"sitemap-{re.escape(section)}-00001-{_H}", files[0].name)
    published(tmp_path)


def test_a_section_name_too_long_for_the_base_url_is_refused(tmp_path: Path) -> None:
    # A default section's names fit this base; a 40-letter section's do not.
    base = "https://example.com/" + "d" * (2047 - 21 - 31) + "/"
    assert len(base + "sitemap-00001-0123456789.xml.gz") == 2047
    publish_sitemaps(tmp_path / "ok", [SitemapEntry("https://example.com/a")], index_base_url=base)
    rows = [row("https://example.com/a"), row("https://example.com/b", "a" * 40)]
    with pytest.raises(ValueError, match="index_base_url .* makes an invalid <loc>"):
        publish_sitemaps(tmp_path / "no", EntryRows(rows), index_base_url=base)


# -- the names: ours, and only ours -------------------------------------------------


@given(
    section=st.from_regex(r"[a-z][a-z0-9-]{0,39}", fullmatch=True).filter(lambda s: s != "news"),
    number=st.integers(1, 50_000),
    digest=st.text("0123456789abcdef", min_size=10, max_size=10),
    suffix=st.sampled_from([".xml", ".xml.gz", ".txt", ".txt.gz"]),
)
def test_child_name_re_matches_every_section_name(
    section: str, number: int, digest: str, suffix: str
) -> None:
    check_section(section)
    assert CHILD_NAME_RE.match(f"sitemap-{section}-{number:05d}-{digest}{suffix}")


@pytest.mark.parametrize(
    "name",
    [
        "sitemap-notes.txt",
        "sitemap-blog.xml",
        "sitemap-blog.xml.gz",
        "sitemap.xml",
        "sitemap-blog-1-0123456789.xml",
        "sitemap-blog-00001.xml",
        "sitemap-blog-00001-0123456789.xml.gz.bak",
        "sitemap-blog-00001-0123456789.html",
        "sitemap-blog-00001-ABCDEF0123.xml",
        "sitemap-Blog-00001-0123456789.xml",
        "sitemap-1-00001-0123456789.xml",
        "sitemap-2024-00001-0123456789.xml",
        "sitemap--00001-0123456789.xml",
        "sitemap--blog-00001-0123456789.xml",
        "sitemap-blog_x-00001-0123456789.xml",
        "sitemap-news-00001-0123456789.txt",
        "sitemap-news-00001-0123456789.txt.gz",
        f"sitemap-{'a' * 41}-00001-0123456789.xml",
        ".sitemap-blog-00001-0123456789.xml",
        "xsitemap-blog-00001-0123456789.xml",
    ],
)
def test_child_name_re_matches_no_foreign_file(name: str) -> None:
    assert not CHILD_NAME_RE.match(name)


def test_child_name_re_keeps_its_old_names() -> None:
    for name in (
        "sitemap-00001-0123456789.xml",
        "sitemap-00001-0123456789.xml.gz",
        "sitemap-49999-abcdef0123.txt.gz",
        "sitemap-news-00001-0123456789.xml",
        "sitemap-news-00001-0123456789.xml.gz",
    ):
        assert CHILD_NAME_RE.match(name), name


# -- publishing over a previous set with other sections ------------------------------

FOREIGN = {
    "sitemap-notes.txt": b"notes",
    "sitemap-blog.xml": b"<urlset>another tool's</urlset>",
    "sitemap-blog-1.xml.gz": b"another tool's naming",
    "sitemap-2024-00001-0123456789.xml": b"digits are not a section of ours",
    "robots.txt": b"User-agent: *\n",
}


@pytest.mark.parametrize("new_sections", [{None: 4, "help": 3, "docs": 2}, {None: 5}])
def test_previous_sections_are_removed_after_the_new_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_sections: dict[str | None, int]
) -> None:
    _, old = publish_sitemaps(
        tmp_path,
        EntryRows(section_rows({None: 3, "blog": 5, "docs": 4})),
        index_base_url=BASE,
        max_urls=2,
    )
    old_names = {f.name for f in old}
    assert {f.section for f in old} == {None, "blog", "docs"}
    for name, data in FOREIGN.items():
        (tmp_path / name).write_bytes(data)

    present_at_index_rename: set[str] = set()
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst).name == "sitemap_index.xml":
            present_at_index_rename.update(os.listdir(tmp_path))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)  # the os module the writer uses
    _, new = publish_sitemaps(
        tmp_path, EntryRows(section_rows(new_sections)), index_base_url=BASE, max_urls=2
    )
    # Until the new index was in place, the old set was whole.
    assert old_names <= present_at_index_rename
    after = snapshot(tmp_path)
    assert set(after) == {f.name for f in new} | {"sitemap_index.xml"} | set(FOREIGN)
    for name, data in FOREIGN.items():
        assert after[name] == data
    assert [name for name, _ in published(tmp_path)] == [f.name for f in new]


def test_a_refused_set_leaves_the_previous_sections_alone(tmp_path: Path) -> None:
    publish_sitemaps(
        tmp_path, EntryRows(section_rows({None: 3, "blog": 5})), index_base_url=BASE, max_urls=2
    )
    before = snapshot(tmp_path)
    rows = [*section_rows({None: 3, "help": 5}), row("https://example.com/x", "News")]
    with pytest.raises(ValueError, match="bad section"):
        publish_sitemaps(tmp_path, EntryRows(rows), index_base_url=BASE, max_urls=2)
    assert snapshot(tmp_path) == before


# -- the rows' own changefreq and priority -------------------------------------------


def test_rows_own_changefreq_and_priority_are_written(tmp_path: Path) -> None:
    rows = [
        row("https://example.com/1", None, "daily", "0.8"),
        row("https://example.com/2", None, None, "1", lastmod="2024-01-02"),
        row("https://example.com/3", None, "never", None),
        row("https://example.com/4"),
        row("https://example.com/5", None, "hourly", "0.000"),
        row("https://example.com/6", None, None, "0.50"),
    ]
    _, files = publish_sitemaps(
        tmp_path,
        EntryRows(rows, ChangeFreq.WEEKLY, Decimal("0.5")),
        index_base_url=BASE,
        gzip=False,
    )
    assert (tmp_path / files[0].name).read_bytes() == (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<url><loc>https://example.com/1</loc>"
        b"<changefreq>daily</changefreq><priority>0.8</priority></url>\n"
        b"<url><loc>https://example.com/2</loc><lastmod>2024-01-02</lastmod>"
        b"<changefreq>weekly</changefreq><priority>1.0</priority></url>\n"
        b"<url><loc>https://example.com/3</loc>"
        b"<changefreq>never</changefreq><priority>0.5</priority></url>\n"
        b"<url><loc>https://example.com/4</loc>"
        b"<changefreq>weekly</changefreq><priority>0.5</priority></url>\n"
        b"<url><loc>https://example.com/5</loc>"
        b"<changefreq>hourly</changefreq><priority>0.0</priority></url>\n"
        b"<url><loc>https://example.com/6</loc>"
        b"<changefreq>weekly</changefreq><priority>0.5</priority></url>\n"
        b"</urlset>\n"
    )
    published(tmp_path)


def test_without_set_wide_values_a_row_without_its_own_has_none(tmp_path: Path) -> None:
    rows = [
        row("https://example.com/1", None, "daily"),
        row("https://example.com/2", None, None, "0.3"),
        row("https://example.com/3"),
    ]
    _, files = publish_sitemaps(tmp_path, EntryRows(rows), index_base_url=BASE, gzip=False)
    content = (tmp_path / files[0].name).read_bytes()
    assert (
        b"<url><loc>https://example.com/1</loc><changefreq>daily</changefreq></url>\n"
        b"<url><loc>https://example.com/2</loc><priority>0.3</priority></url>\n"
        b"<url><loc>https://example.com/3</loc></url>\n"
    ) in content
    validate_urlset(content)


def _entries_of(rows: list[Row], **defaults: Any) -> list[SitemapEntry]:
    # What each row stands for, made one by one: the row's values, else the defaults.
    entries = []
    values: tuple[Any, ...]
    for values in rows:
        loc, lastmod, extras, _, changefreq, priority = values
        extensions = crawler.sitemaps.extras.entry_extras(extras)
        entries.append(
            SitemapEntry(
                loc,
                lastmod,
                ChangeFreq(changefreq) if changefreq else defaults.get("changefreq"),
                Decimal(priority) if priority else defaults.get("priority"),
                **extensions,
            )
        )
    return entries


@pytest.mark.parametrize("batch_size", [1, 7, 1024])
def test_rows_with_own_values_publish_what_entries_do(tmp_path: Path, batch_size: int) -> None:
    # Own values, set-wide ones, extras, IRIs and a non-UTC lastmod (the
    # entry-by-entry check), mixed; published from rows and from entries alike.
    freqs = [None, "daily", "monthly", None, "always"]
    priorities = [None, "0.1", None, "0.95", "1.0", None]
    image = SitemapEntry("https://example.com/x", images=["https://example.com/i.png"])
    rows: list[Row] = [
        row(
            f"https://example.com/p/{i:04d}" + ("/\u00e9t\u00e9" if i % 11 == 0 else ""),
            None,
            freqs[i % len(freqs)],
            priorities[i % len(priorities)],
            lastmod="2024-01-02T03:04:05+02:00" if i % 13 == 0 else "2024-01-02",
            extras=extras_json(image) if i % 17 == 0 else None,
        )
        for i in range(3000)
    ]
    defaults: dict[str, Any] = {"changefreq": ChangeFreq.YEARLY, "priority": Decimal("0.4")}
    entry_rows = EntryRows(rows, **defaults)
    real_batches = entry_rows.batches
    entry_rows.batches = lambda size=4096: real_batches(batch_size)  # type: ignore[method-assign]
    options: dict[str, Any] = {"index_base_url": BASE, "extensions": {"image"}, "max_urls": 700}
    _, from_rows = publish_sitemaps(tmp_path / "rows", entry_rows, **options)
    entries = _entries_of(rows, **defaults)
    _, from_entries = publish_sitemaps(tmp_path / "entries", entries, **options)
    assert snapshot(tmp_path / "rows") == snapshot(tmp_path / "entries")
    assert from_rows == from_entries
    published(tmp_path / "rows")
    # Iterated, one by one or by batch, the same entries.
    assert list(EntryRows(rows, **defaults)) == entries
    batched = [e for b in EntryRows(rows, **defaults).batches(batch_size) for e in b]
    assert batched == entries


BAD_VALUES = [
    ("changefreq", "sometimes", "'sometimes' is not a valid ChangeFreq"),
    ("changefreq", "Daily", "'Daily' is not a valid ChangeFreq"),
    ("changefreq", "", "'' is not a valid ChangeFreq"),
    ("priority", "1.5", "priority must be between 0.0 and 1.0, not '1.5'"),
    ("priority", "-0.1", "priority must be between 0.0 and 1.0, not '-0.1'"),
    ("priority", "NaN", "priority must be between 0.0 and 1.0, not 'NaN'"),
    ("priority", "high", "priority must be a number, not 'high'"),
    ("priority", "", "priority must be a number, not ''"),
    ("priority", True, "priority must be a number, not True"),
    ("priority", [0.5], "priority must be a number, not [0.5]"),
]


@pytest.mark.parametrize(("column", "value", "message"), BAD_VALUES)
@pytest.mark.parametrize("batch_size", [1, 4096])
def test_a_bad_own_value_refuses_the_set_naming_the_loc(
    tmp_path: Path, column: str, value: object, message: str, batch_size: int
) -> None:
    out = tmp_path / "out"
    publish_sitemaps(out, [SitemapEntry("https://example.com/old")], index_base_url=BASE)
    before = snapshot(out)
    rows: list[Any] = [
        row(f"https://example.com/{i:04d}", None, "daily", "0.5") for i in range(3000)
    ]
    bad: list[Any] = list(row("https://example.com/bad"))
    bad[ROW_COLUMNS.index(column)] = value
    rows[2000] = tuple(bad)
    entry_rows = EntryRows(rows)
    real_batches = entry_rows.batches
    entry_rows.batches = lambda size=4096: real_batches(batch_size)  # type: ignore[method-assign]
    with pytest.raises(ValueError) as raised:
        publish_sitemaps(out, entry_rows, index_base_url=BASE, max_urls=500)
    assert str(raised.value) == f"bad {column} of 'https://example.com/bad': {message}"
    assert snapshot(out) == before
    with pytest.raises(ValueError) as one_by_one:
        list(EntryRows(rows))
    assert str(one_by_one.value) == str(raised.value)


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        ("loc", "loc contains whitespace"),
        ("lastmod", "not a sitemap lastmod"),
        ("changefreq", "bad changefreq of 'https://example.com/0003'"),
        ("priority", "bad priority of 'https://example.com/0003'"),
        ("extras", "bad extras of 'https://example.com/0003'"),
    ],
)
@pytest.mark.parametrize("batch_size", [1, 4096])
def test_the_first_bad_row_is_reported_whatever_is_bad_in_it(
    first: str, expected: str, batch_size: int
) -> None:
    # Row 3 is bad in one column, row 4 in every other: row 3's error is raised.
    bad_values = {
        "loc": "https://example.com/a b",
        "lastmod": "yesterday",
        "changefreq": "often",
        "priority": "2",
        "extras": '{"images":["not a url"]}',
    }

    def bad_row(loc: str, columns: list[str]) -> tuple[Any, ...]:
        values = list(row(loc))
        for column in columns:
            values[ROW_COLUMNS.index(column)] = bad_values[column]
        return tuple(values)

    rows: list[Any] = [row(f"https://example.com/{i:04d}") for i in range(3)]
    rows.append(bad_row("https://example.com/0003", [first]))
    rows.append(bad_row("https://example.com/0004", [c for c in bad_values if c != first]))
    with pytest.raises(ValueError) as raised:
        for _ in EntryRows(rows).batches(batch_size):
            pass
    assert str(raised.value).startswith(expected)
    with pytest.raises(ValueError) as one_by_one:
        list(EntryRows(rows))
    assert str(one_by_one.value) == str(raised.value)


def test_own_values_in_a_text_sitemap_are_checked_not_written(tmp_path: Path) -> None:
    rows = [row("https://example.com/1", "blog", "daily", "0.8"), row("https://example.com/2")]
    _, files = publish_sitemaps(
        tmp_path, EntryRows(rows[::-1]), index_base_url=BASE, fmt="txt", gzip=False
    )
    assert [(tmp_path / f.name).read_bytes() for f in files] == [
        b"https://example.com/2\n",
        b"https://example.com/1\n",
    ]
    with pytest.raises(ValueError, match="bad priority"):
        publish_sitemaps(
            tmp_path,
            EntryRows([row("https://example.com/1", None, None, "9")]),
            index_base_url=BASE,
            fmt="txt",
        )


def test_own_values_reach_an_entry_with_extensions(tmp_path: Path) -> None:
    entry = SitemapEntry("https://example.com/x", images=["https://example.com/i.png"])
    rows = [row(entry.loc, "blog", "daily", "0.7", extras=extras_json(entry))]
    _, files = publish_sitemaps(
        tmp_path, EntryRows(rows), index_base_url=BASE, extensions={"image"}, gzip=False
    )
    assert (
        b"<url><loc>https://example.com/x</loc><changefreq>daily</changefreq>"
        b"<priority>0.7</priority><image:image>"
    ) in (tmp_path / files[0].name).read_bytes()
    assert files[0].section == "blog"


# -- unchanged without sections and own values -----------------------------------------

# SHA-256 of every file's name and bytes (set_digest()) of plain_rows() published
# before sections existed (the writer of commit 9990c66).
PINNED = {
    "xml-gzip-defaults": "360d889de819a10b674f6aac882339c494e94f4d8e495443e307af4663f84cd9",
    "xml-plain": "995d39c24446b3edafd655bae37c301ad175f249ba549d0a10489cd935e11df3",
    "txt": "92b656b6d1c4076fa379ef26f7249e1b7e897ca39e38af05eed04bd42ea8439a",
}
CONFIGS: dict[str, tuple[dict[str, Any], ChangeFreq | None, Decimal | None]] = {
    "xml-gzip-defaults": ({"max_urls": 1000}, ChangeFreq.DAILY, Decimal("0.8")),
    "xml-plain": ({"max_urls": 1000, "gzip": False}, None, None),
    "txt": ({"max_urls": 1000, "fmt": "txt", "gzip": False}, None, None),
}


def _shapes(config: str) -> Iterator[tuple[str, Callable[[], Any]]]:
    _, changefreq, priority = CONFIGS[config]
    cf = None if changefreq is None else changefreq.value
    pr = None if priority is None else str(priority)
    yield "2 columns", lambda: EntryRows(plain_rows(), changefreq, priority)
    yield "3 columns", lambda: EntryRows([(*r, None) for r in plain_rows()], changefreq, priority)
    yield (
        "6 columns, all None",
        lambda: EntryRows(
            [(*r, None, None, None, None) for r in plain_rows()], changefreq, priority
        ),
    )
    # Every row's own values are the set-wide ones.
    yield (
        "6 columns, own values",
        lambda: EntryRows([(*r, None, None, cf, pr) for r in plain_rows()]),
    )
    yield (
        "entries",
        lambda: [SitemapEntry(loc, lastmod, changefreq, priority) for loc, lastmod in plain_rows()],
    )


@pytest.mark.parametrize("config", sorted(PINNED))
def test_a_set_without_sections_is_byte_for_byte_as_before(tmp_path: Path, config: str) -> None:
    options, _, _ = CONFIGS[config]
    for shape, entries in _shapes(config):
        out = tmp_path / shape.replace(" ", "-").replace(",", "")
        _, files = publish_sitemaps(out, entries(), index_base_url=BASE, **options)
        assert set_digest(out) == PINNED[config], shape
        assert {f.section for f in files} == {None}
        assert all(re.fullmatch(rf"sitemap-\d{{5}}-{_H}", f.name) for f in files)


def test_plain_wide_rows_keep_the_batch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows whose extras, changefreq and priority are all None are checked a list
    # at a time, and rendered with one set of optional tags.
    def refuse(*args: object) -> None:
        raise AssertionError("a plain row was checked one by one")

    monkeypatch.setattr(crawler.sitemaps.entryrows.EntryBatch, "_extend", refuse)
    monkeypatch.setattr(crawler.sitemaps.entryrows, "_row_changefreq", refuse)
    monkeypatch.setattr(crawler.sitemaps.entryrows, "_row_priority", refuse)
    monkeypatch.setattr(EntryBatch, "_check_rows", refuse)
    rows = [(f"https://example.com/{i}", "2024-01-02", None, None, None, None) for i in range(5000)]
    batches = list(EntryRows(rows).batches(1024))
    assert [len(b) for b in batches] == [1024] * 4 + [904]
    for batch in batches:
        assert batch.extras is None and batch.extended == {} and batch.utc
        assert batch.changefreqs is None and batch.priorities is None
        assert batch.row_changefreqs is None and batch.row_priorities is None
        assert batch.section is None


def test_batches_end_where_the_section_changes() -> None:
    rows = section_rows({None: 1000, "a": 50, "b": 2000})
    batches = list(EntryRows(rows).batches(1024))
    assert [(b.section, len(b)) for b in batches] == [
        (None, 1000),
        ("a", 24),
        ("a", 26),
        ("b", 998),
        ("b", 1002),
    ]
    assert all(b.utc for b in batches)
