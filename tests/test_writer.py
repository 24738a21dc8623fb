"""Tests for crawler.publish.writer: what is written, how it rotates, and how it is published.

Every file written is validated against the official XSDs (tests/xsd.py) and read
back with an independent parser, Scrapy's ``scrapy.utils.sitemap.Sitemap``.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from xml.sax.saxutils import escape as sax_escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.utils.sitemap import Sitemap

import crawler.publish.writer
from crawler.core.decisions import LISTED, REDIRECT
from crawler.core.items import UrlRecord
from crawler.core.lastmod import lastmod_datetime
from crawler.ledger.ledger import Ledger
from crawler.ledger.records import LISTED_ROWS, LISTED_ROWS_PLAIN
from crawler.publish.sitemapxml import escape
from crawler.publish.writer import (
    CHILD_NAME_RE,
    SitemapSetWriter,
    WrittenFile,
    publish_sitemaps,
)
from crawler.sitemaps.entry import (
    _COMMON_LOC,
    ChangeFreq,
    SitemapEntry,
    _check_loc_fully,
    check_loc,
)
from crawler.sitemaps.entryrows import EntryBatch, EntryRows
from crawler.sitemaps.limits import MAX_BYTES_PER_FILE, MAX_URLS_PER_FILE, SITEMAP_NS
from tests.xsd import validate_index, validate_urlset

BASE = "https://example.com/"
REPO_ROOT = Path(__file__).resolve().parents[1]
URLSET_HEADER = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">\n'.encode()
URLSET_FOOTER = b"</urlset>\n"


def make_entries(
    count: int, prefix: str = "https://example.com/page/", **fields: object
) -> list[SitemapEntry]:
    return [SitemapEntry(f"{prefix}{i:05d}", **fields) for i in range(count)]  # type: ignore[arg-type]


def decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


def temp_files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir() if path.name.endswith(".tmp"))


def read_published_set(
    out_dir: Path, index_name: str = "sitemap_index.xml"
) -> tuple[list[dict], list[dict]]:
    """Validate the index and every child it lists; return (index records, URL records).

    URL records of a text child are ``{"loc": line}``.
    """
    index_bytes = (out_dir / index_name).read_bytes()
    validate_index(index_bytes)
    index = Sitemap(index_bytes)
    assert index.type == "sitemapindex"
    sitemaps = list(index)
    urls: list[dict] = []
    for record in sitemaps:
        assert record["loc"].startswith(BASE)
        name = record["loc"].removeprefix(BASE)
        assert CHILD_NAME_RE.match(name), name
        content = decompressed(out_dir / name)
        if ".xml" in name:
            validate_urlset(content)
            child = Sitemap(content)
            assert child.type == "urlset"
            urls.extend(child)
        else:
            assert content.endswith(b"\n")
            urls.extend({"loc": line} for line in content.decode("utf-8").split("\n")[:-1])
    return sitemaps, urls


def expected_record(entry: SitemapEntry) -> dict[str, str]:
    record = {"loc": entry.loc}
    if entry.lastmod is not None:
        record["lastmod"] = entry.lastmod
    if entry.changefreq is not None:
        record["changefreq"] = entry.changefreq.value
    if entry.priority is not None:
        record["priority"] = PRIORITY_TEXT[entry.priority]
    return record


PRIORITY_TEXT = {Decimal("0.8"): "0.8", Decimal("1"): "1.0", Decimal("0.0"): "0.0"}


VARIED = [
    SitemapEntry("https://example.com/"),
    SitemapEntry("https://example.com/a?x=1&y=2", lastmod="2024-01-02"),
    SitemapEntry(
        "https://example.com/b", lastmod="2024-01-02T03:04:05+00:00", changefreq=ChangeFreq.DAILY
    ),
    SitemapEntry("https://example.com/c", changefreq="weekly", priority=Decimal("0.8")),  # type: ignore[arg-type]
    SitemapEntry("https://example.com/d", lastmod="2024-01-02T03:04:05.25Z", priority=Decimal("1")),
    SitemapEntry("https://example.com/caf\u00e9/\u65e5\u672c", priority=Decimal("0.0")),
    SitemapEntry("https://example.com/e?q=<tag>&amp;", changefreq=ChangeFreq.NEVER),
]


# -- entries ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "loc",
    [
        "https://example.com",
        "http://example.com/a/b?c=d&e=f#g",
        "HTTPS://EXAMPLE.COM/",
        "http://[::1]:8080/path",
        "https://user:pw@example.com/",
        "https://example.com/caf\u00e9",
        "https://example.com/a%2Fb%c3%a9",
        "https://example.com/<x>",
        "https://example.com/" + "x" * (2047 - 20),
    ],
)
def test_entry_accepts(loc: str) -> None:
    assert SitemapEntry(loc).loc == loc


@pytest.mark.parametrize(
    "loc",
    [
        "",
        "http://a.b/",  # 11 characters: below the XSD's minLength 12
        "https://example.com/" + "x" * (2048 - 20),  # "less than 2,048 characters"
        "/relative/path/only",
        "//example.com/no-scheme",
        "ftp://example.com/file",
        "mailto:someone@example.com",
        "https:///no-host/path",
        "https://:80/no-host",
        "https://example.com:/empty-port",
        "https://example.com:port/",
        "https://example.com/a b",
        "https://example.com/tab\there",
        "https://example.com/\x00",
        "https://example.com/\ud800",
        "https://example.com/\uffff",
        "https://example.com/\x85",  # C1 control (NEL)
        "https://example.com/nbsp\xa0",  # readers strip it: it would not round-trip
        "https://example.com/\u3000",
        "https://example.com/100%",
        "https://example.com/%zz",
        "https://example.com/[x]",
        "https://example.com/?q=]",
        "https://example.com/#a#b",
        b"https://example.com/",
    ],
)
def test_entry_rejects_loc(loc: object) -> None:
    with pytest.raises(ValueError):
        SitemapEntry(loc)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"priority": Decimal("0.5")}, {"priority": Decimal("0.5")}),
        ({"priority": 0.1}, {"priority": Decimal("0.1")}),
        ({"priority": 1}, {"priority": Decimal("1")}),
        ({"priority": "0.25"}, {"priority": Decimal("0.25")}),
        ({"changefreq": "hourly"}, {"changefreq": ChangeFreq.HOURLY}),
        ({"lastmod": "2024-01-02T03:04:05+14:00"}, {"lastmod": "2024-01-02T03:04:05+14:00"}),
    ],
)
def test_entry_converts(fields: dict[str, object], expected: dict[str, object]) -> None:
    entry = SitemapEntry("https://example.com/", **fields)  # type: ignore[arg-type]
    for name, value in expected.items():
        assert getattr(entry, name) == value
        assert type(getattr(entry, name)) is type(value)


@pytest.mark.parametrize(
    "fields",
    [
        {"priority": Decimal("1.1")},
        {"priority": Decimal("-0.1")},
        {"priority": Decimal("NaN")},
        {"priority": float("inf")},
        {"priority": "high"},
        {"priority": True},
        {"changefreq": "sometimes"},
        {"lastmod": "2024-01-02T03:04"},
        {"lastmod": "2024-01-02T03:04:05"},
        {"lastmod": "yesterday"},
        {"lastmod": "Sun, 06 Nov 1994 08:49:37 GMT"},
    ],
)
def test_entry_rejects_fields(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SitemapEntry("https://example.com/", **fields)  # type: ignore[arg-type]


def test_entry_is_frozen_and_slotted() -> None:
    entry = SitemapEntry("https://example.com/")
    with pytest.raises(AttributeError):
        entry.loc = "https://example.org/"  # type: ignore[misc]
    assert not hasattr(entry, "__dict__")


# -- content -----------------------------------------------------------------------


@pytest.mark.parametrize("use_gzip", [True, False])
def test_round_trip_through_xsd_and_scrapy(tmp_path: Path, use_gzip: bool) -> None:
    index, files = publish_sitemaps(tmp_path, VARIED, index_base_url=BASE, gzip=use_gzip)
    assert index == tmp_path / "sitemap_index.xml"
    assert len(files) == 1  # one file still gets an index
    assert files[0].name.endswith(".xml.gz" if use_gzip else ".xml")
    sitemaps, urls = read_published_set(tmp_path)
    assert [record["loc"] for record in sitemaps] == [BASE + files[0].name]
    assert urls == [expected_record(entry) for entry in VARIED]
    content = decompressed(tmp_path / files[0].name)
    assert files[0] == WrittenFile(
        files[0].name, len(VARIED), len(content), "2024-01-02T03:04:05.25Z"
    )


def test_exact_bytes_of_a_child_file(tmp_path: Path) -> None:
    entries = [
        SitemapEntry(
            "https://example.com/",
            lastmod="2024-01-02",
            changefreq=ChangeFreq.MONTHLY,
            priority=Decimal("0.50"),
        ),
        SitemapEntry("https://example.com/x"),
    ]
    _, files = publish_sitemaps(tmp_path, entries, index_base_url=BASE, gzip=False)
    assert (tmp_path / files[0].name).read_bytes() == (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<url><loc>https://example.com/</loc><lastmod>2024-01-02</lastmod>"
        b"<changefreq>monthly</changefreq><priority>0.5</priority></url>\n"
        b"<url><loc>https://example.com/x</loc></url>\n"
        b"</urlset>\n"
    )


@pytest.mark.parametrize(
    ("loc", "escaped"),
    [
        ("https://example.com/?a=1&b=2", b"https://example.com/?a=1&amp;b=2"),
        ("https://example.com/<script>", b"https://example.com/&lt;script&gt;"),
        ("https://example.com/&amp;", b"https://example.com/&amp;amp;"),
        ("https://example.com/'\"", b"https://example.com/'\""),
        ("https://example.com/caf\u00e9", "https://example.com/caf\u00e9".encode()),
        ("https://\u4f8b\u3048.jp/\U0001f600", "https://\u4f8b\u3048.jp/\U0001f600".encode()),
    ],
)
def test_escaping_and_utf8(tmp_path: Path, loc: str, escaped: bytes) -> None:
    _, files = publish_sitemaps(tmp_path, [SitemapEntry(loc)], index_base_url=BASE)
    content = decompressed(tmp_path / files[0].name)
    assert b"<loc>" + escaped + b"</loc>" in content
    validate_urlset(content)
    assert [record["loc"] for record in Sitemap(content)] == [loc]


def test_index_base_url_is_escaped(tmp_path: Path) -> None:
    base = "https://example.com/maps?site=a&x=/"
    publish_sitemaps(tmp_path, make_entries(3), index_base_url=base)
    index_bytes = (tmp_path / "sitemap_index.xml").read_bytes()
    validate_index(index_bytes)
    assert b"?site=a&amp;x=/sitemap-00001-" in index_bytes
    assert [record["loc"].startswith(base) for record in Sitemap(index_bytes)] == [True]


@pytest.mark.parametrize(
    ("lastmods", "expected"),
    [
        # Compared as instants: 23:00 at -05:00 is 04:00 UTC the next day.
        (
            ["2024-01-02T03:00:00+00:00", "2024-01-01T23:00:00-05:00", "2024-01-01"],
            "2024-01-01T23:00:00-05:00",
        ),
        (["2024-01-01", "2024-01-02", "2023-12-31"], "2024-01-02"),
        # A date is midnight UTC: any time that day is later.
        (["2024-01-02", "2024-01-02T00:00:01Z"], "2024-01-02T00:00:01Z"),
        (["2024-01-02T10:00:00.5Z", "2024-01-02T10:00:00Z"], "2024-01-02T10:00:00.5Z"),
        ([None, "2024-01-02", None], "2024-01-02"),
        ([None, None], None),
    ],
)
def test_index_lastmod_is_the_latest_entry(
    tmp_path: Path, lastmods: list[str | None], expected: str | None
) -> None:
    entries = [
        SitemapEntry(f"https://example.com/{i}/", lastmod=lastmod)
        for i, lastmod in enumerate(lastmods)
    ]
    _, files = publish_sitemaps(tmp_path, entries, index_base_url=BASE)
    assert files[0].lastmod == expected
    sitemaps, _ = read_published_set(tmp_path)
    assert sitemaps[0].get("lastmod") == expected


def test_text_format(tmp_path: Path) -> None:
    entries = [
        *make_entries(20, lastmod="2024-05-06"),
        SitemapEntry("https://example.com/caf\u00e9?a=1&b=2"),
    ]
    _, files = publish_sitemaps(tmp_path, entries, index_base_url=BASE, fmt="txt", max_urls=7)
    assert [written.urls for written in files] == [7, 7, 7]
    assert all(written.name.endswith(".txt.gz") for written in files)
    sitemaps, urls = read_published_set(tmp_path)  # the index is XML all the same
    assert [record["lastmod"] for record in sitemaps] == ["2024-05-06", "2024-05-06", "2024-05-06"]
    assert [record["loc"] for record in urls] == [entry.loc for entry in entries]
    assert decompressed(tmp_path / files[2].name).endswith("caf\u00e9?a=1&b=2\n".encode())


def test_gzip_header_is_reproducible(tmp_path: Path) -> None:
    _, files = publish_sitemaps(tmp_path, make_entries(3), index_base_url=BASE)
    data = (tmp_path / files[0].name).read_bytes()
    assert data[:3] == b"\x1f\x8b\x08"
    assert data[3] == 0  # FLG: no FNAME, no FCOMMENT, no FEXTRA
    assert data[4:8] == b"\x00\x00\x00\x00"  # MTIME 0


def test_reproducible_bytes_and_names(tmp_path: Path) -> None:
    entries = make_entries(
        50, lastmod="2024-01-02T03:04:05Z", changefreq=ChangeFreq.DAILY, priority=Decimal("0.3")
    )
    _, first = publish_sitemaps(tmp_path / "one", entries, index_base_url=BASE, max_urls=20)
    time.sleep(1.1)  # a gzip mtime, were one written, would now differ
    _, second = publish_sitemaps(tmp_path / "two", entries, index_base_url=BASE, max_urls=20)
    assert first == second
    assert snapshot(tmp_path / "one") == snapshot(tmp_path / "two")


def test_names_are_content_addressed(tmp_path: Path) -> None:
    import hashlib

    _, files = publish_sitemaps(tmp_path, make_entries(10), index_base_url=BASE, max_urls=4)
    for number, written in enumerate(files, start=1):
        digest = hashlib.sha256(decompressed(tmp_path / written.name)).hexdigest()[:10]
        assert written.name == f"sitemap-{number:05d}-{digest}.xml.gz"


# -- rotation ----------------------------------------------------------------------


def test_rotation_by_url_count(tmp_path: Path) -> None:
    entries = make_entries(20, lastmod="2024-01-02")
    _, files = publish_sitemaps(tmp_path, entries, index_base_url=BASE, max_urls=7)
    assert [written.urls for written in files] == [7, 7, 6]
    assert [written.name[:13] for written in files] == [
        "sitemap-00001",
        "sitemap-00002",
        "sitemap-00003",
    ]
    sitemaps, urls = read_published_set(tmp_path)
    assert [record["loc"] for record in sitemaps] == [BASE + written.name for written in files]
    assert [record["loc"] for record in urls] == [entry.loc for entry in entries]


def _rendered_size(entry: SitemapEntry, fmt: str) -> int:
    # An independent rendering (xml.sax's escape) of what one entry costs.
    if fmt == "txt":
        return len(entry.loc.encode()) + 1
    return len(f"<url><loc>{sax_escape(entry.loc)}</loc></url>\n".encode())


def _expected_partition(sizes: list[int], fmt: str, max_bytes: int) -> list[int]:
    overhead = 0 if fmt == "txt" else len(URLSET_HEADER) + len(URLSET_FOOTER)
    counts: list[int] = []
    used = None
    for size in sizes:
        if used is None or used + size > max_bytes:
            counts.append(0)
            used = overhead
        counts[-1] += 1
        used += size
    return counts


@pytest.mark.parametrize("fmt", ["xml", "txt"])
def test_rotation_by_bytes(tmp_path: Path, fmt: str) -> None:
    # Locs of varied lengths, some with characters that grow when escaped or encoded.
    grows = "caf\u00e9&"  # 5 characters, 6 bytes in UTF-8, 10 once "&" is escaped
    entries = [
        SitemapEntry(f"https://example.com/{grows * (i % 7)}{'x' * (i * 37 % 300)}/{i}")
        for i in range(120)
    ]
    max_bytes = 2048
    _, files = publish_sitemaps(
        tmp_path, entries, index_base_url=BASE, fmt=fmt, max_bytes=max_bytes
    )
    sizes = [_rendered_size(entry, fmt) for entry in entries]
    assert [written.urls for written in files] == _expected_partition(sizes, fmt, max_bytes)
    for written in files:
        content = decompressed(tmp_path / written.name)
        assert len(content) == written.bytes_uncompressed <= max_bytes
    _, urls = read_published_set(tmp_path)
    assert [record["loc"] for record in urls] == [entry.loc for entry in entries]


def test_rotation_exact_fit(tmp_path: Path) -> None:
    # A file may be exactly max_bytes long, not one byte more.
    entries = make_entries(4)
    line = _rendered_size(entries[0], "xml")
    overhead = len(URLSET_HEADER) + len(URLSET_FOOTER)
    _, files = publish_sitemaps(
        tmp_path, entries, index_base_url=BASE, max_bytes=overhead + 2 * line
    )
    assert [(written.urls, written.bytes_uncompressed) for written in files] == [
        (2, overhead + 2 * line)
    ] * 2
    _, files = publish_sitemaps(
        tmp_path / "b", entries, index_base_url=BASE, max_bytes=overhead + 2 * line - 1
    )
    assert [written.urls for written in files] == [1, 1, 1, 1]


@pytest.mark.parametrize("fmt", ["xml", "txt"])
@pytest.mark.parametrize("position", [0, 5])
def test_entry_too_big_for_a_file(tmp_path: Path, fmt: str, position: int) -> None:
    entries = make_entries(10)
    entries.insert(position, SitemapEntry("https://example.com/" + "x" * 1500))
    with pytest.raises(ValueError, match="does not fit"):
        publish_sitemaps(tmp_path, entries, index_base_url=BASE, fmt=fmt, max_bytes=1024)
    assert list(tmp_path.iterdir()) == []


def test_too_many_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 50,001 real files would make a slow test; the check is the same with 2.
    monkeypatch.setattr(crawler.publish.writer, "MAX_SITEMAPS_PER_INDEX", 2)
    _, files = publish_sitemaps(tmp_path / "ok", make_entries(2), index_base_url=BASE, max_urls=1)
    assert len(files) == 2
    with pytest.raises(ValueError, match="more than 2 sitemap files"):
        publish_sitemaps(tmp_path / "over", make_entries(3), index_base_url=BASE, max_urls=1)
    assert list((tmp_path / "over").iterdir()) == []


def test_empty_set_is_refused(tmp_path: Path) -> None:
    publish_sitemaps(tmp_path, make_entries(3), index_base_url=BASE)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="no entries"):
        publish_sitemaps(tmp_path, [], index_base_url=BASE)
    assert snapshot(tmp_path) == before


@settings(max_examples=25, deadline=None)
@given(
    paths=st.lists(
        st.text(st.characters(min_codepoint=0x21, exclude_categories=("Cs",)), max_size=60),
        max_size=40,
    ),
    max_urls=st.integers(1, 10),
    max_bytes=st.integers(400, 3000),
    fmt=st.sampled_from(["xml", "txt"]),
)
def test_any_set_round_trips_within_limits(
    paths: list[str], max_urls: int, max_bytes: int, fmt: str
) -> None:
    entries = []
    for i, path in enumerate(paths):
        try:
            entries.append(SitemapEntry(f"https://example.com/{i}/{path}"))
        except ValueError:
            continue  # characters no URL (and no XML file) may hold
    with tempfile.TemporaryDirectory() as directory:
        out_dir = Path(directory)
        try:
            _, files = publish_sitemaps(
                out_dir,
                entries,
                index_base_url=BASE,
                fmt=fmt,
                max_urls=max_urls,
                max_bytes=max_bytes,
            )
        except ValueError as exc:
            assert not entries or "does not fit" in str(exc)
            assert list(out_dir.iterdir()) == []
            return
        assert all(
            written.urls <= max_urls and written.bytes_uncompressed <= max_bytes
            for written in files
        )
        _, urls = read_published_set(out_dir)
        assert [record["loc"] for record in urls] == [entry.loc for entry in entries]


# -- arguments and misuse ---------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"fmt": "html"},
        {"index_base_url": "https://example.com/maps"},  # no trailing slash
        {"index_base_url": "ftp://example.com/"},
        {"index_base_url": "/maps/"},
        {"index_base_url": "https://example.com/a b/"},
        {"index_base_url": "https://example.com/" + "x" * 2020 + "/"},
        {"max_urls": 0},
        {"max_urls": MAX_URLS_PER_FILE + 1},
        {"max_bytes": 0},
        {"max_bytes": MAX_BYTES_PER_FILE + 1},
        {"index_name": ""},
        {"index_name": "sub/index.xml"},
        {"index_name": ".index.xml"},
        {"index_name": "sitemap-00001-0123456789.xml"},
        {"compresslevel": 10},
    ],
)
def test_invalid_arguments(tmp_path: Path, kwargs: dict[str, object]) -> None:
    arguments: dict[str, object] = {"index_base_url": BASE, **kwargs}
    with pytest.raises(ValueError):
        SitemapSetWriter(tmp_path, **arguments)  # type: ignore[arg-type]


def test_misuse_is_refused(tmp_path: Path) -> None:
    writer = SitemapSetWriter(tmp_path, index_base_url=BASE)
    with pytest.raises(RuntimeError):
        writer.publish()
    writer.write(make_entries(2))
    with pytest.raises(RuntimeError):
        writer.write(make_entries(2))
    writer.publish()
    with pytest.raises(RuntimeError):
        writer.publish()


def test_nothing_visible_before_publish_and_discard(tmp_path: Path) -> None:
    writer = SitemapSetWriter(tmp_path, index_base_url=BASE, max_urls=3)
    files = writer.write(make_entries(10))
    assert len(files) == 4
    # Only hidden temporary files, named after the final ones, exist so far.
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        f".{written.name}.{os.getpid()}.tmp" for written in files
    )
    writer.discard()
    assert list(tmp_path.iterdir()) == []


def test_custom_index_name(tmp_path: Path) -> None:
    index, _ = publish_sitemaps(
        tmp_path, make_entries(3), index_base_url=BASE, index_name="maps.xml"
    )
    assert index == tmp_path / "maps.xml"
    read_published_set(tmp_path, "maps.xml")


def test_out_dir_is_created(tmp_path: Path) -> None:
    out_dir = tmp_path / "a" / "b" / "c"
    publish_sitemaps(out_dir, make_entries(3), index_base_url=BASE)
    read_published_set(out_dir)


def test_out_dir_errors_propagate(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError):
        publish_sitemaps(blocker / "out", make_entries(3), index_base_url=BASE)
    with pytest.raises(OSError):
        publish_sitemaps(blocker, make_entries(3), index_base_url=BASE)


# -- publishing over a previous set -------------------------------------------------


UNRELATED = {
    "robots.txt": b"User-agent: *\nSitemap: https://example.com/sitemap_index.xml\n",
    "sitemap.xml": b"<urlset>written by someone else</urlset>",
    "index.html": b"<html></html>",
    "sitemap-1.xml.gz": b"another tool's naming",
    "sitemap-00001-0123456789.xml.gz.bak": b"a backup",
    ".sitemap-notes.txt": b"hidden, but not a temporary file of ours",
}


def _publish_previous(out_dir: Path) -> dict[str, bytes]:
    publish_sitemaps(
        out_dir, make_entries(20, lastmod="2024-01-01"), index_base_url=BASE, max_urls=7
    )
    for name, data in UNRELATED.items():
        (out_dir / name).write_bytes(data)
    return snapshot(out_dir)


def test_publish_replaces_the_previous_set(tmp_path: Path) -> None:
    before = _publish_previous(tmp_path)
    old_children = {name for name in before if CHILD_NAME_RE.match(name)}
    assert len(old_children) == 3
    # Stale temporary files from a crashed run, ours by name.
    for stale in (
        ".sitemap-00007.4242.tmp",
        ".sitemap-00001-0123456789.xml.gz.4242.tmp",
        ".sitemap_index.xml.4242.tmp",
    ):
        (tmp_path / stale).write_bytes(b"partial")

    # The first 7 entries are unchanged, so the first file keeps its name.
    entries = make_entries(7, lastmod="2024-01-01") + make_entries(
        10, prefix="https://example.com/new/"
    )
    _, files = publish_sitemaps(tmp_path, entries, index_base_url=BASE, max_urls=7)
    new_children = {written.name for written in files}
    assert len(old_children & new_children) == 1

    after = snapshot(tmp_path)
    assert set(after) == new_children | {"sitemap_index.xml"} | set(UNRELATED)
    for name, data in UNRELATED.items():
        assert after[name] == data
    _, urls = read_published_set(tmp_path)
    assert [record["loc"] for record in urls] == [entry.loc for entry in entries]


def test_republishing_an_unchanged_site_changes_nothing(tmp_path: Path) -> None:
    before = _publish_previous(tmp_path)
    publish_sitemaps(
        tmp_path, make_entries(20, lastmod="2024-01-01"), index_base_url=BASE, max_urls=7
    )
    assert snapshot(tmp_path) == before


def test_identical_files_are_left_untouched(tmp_path: Path) -> None:
    """An unchanged night renames nothing over the published files: each keeps its
    inode and modification time (rsync, a CDN and HTTP validators see no change);
    a changed file is replaced, and said so."""
    _publish_previous(tmp_path)
    old = 1_000_000_000  # 2001: any rewrite would show
    for path in tmp_path.iterdir():
        os.utime(path, (old, old))
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime) for p in tmp_path.iterdir()}
    _, files = publish_sitemaps(
        tmp_path, make_entries(20, lastmod="2024-01-01"), index_base_url=BASE, max_urls=7
    )
    assert [f.unchanged for f in files] == [True, True, True]
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime) for p in tmp_path.iterdir()}
    assert after == before
    assert temp_files(tmp_path) == []
    # The last file changes: it alone (and the index) is written.
    entries = make_entries(19, lastmod="2024-01-01")
    _, files = publish_sitemaps(tmp_path, entries, index_base_url=BASE, max_urls=7)
    assert [f.unchanged for f in files] == [True, True, False]
    assert (tmp_path / files[0].name).stat().st_mtime == old
    assert (tmp_path / files[2].name).stat().st_mtime > old
    assert (tmp_path / "sitemap_index.xml").stat().st_mtime > old
    _, urls = read_published_set(tmp_path)
    assert [record["loc"] for record in urls] == [entry.loc for entry in entries]


def test_a_damaged_file_under_the_same_name_is_replaced(tmp_path: Path) -> None:
    _, files = publish_sitemaps(tmp_path, make_entries(5), index_base_url=BASE)
    (tmp_path / files[0].name).write_bytes(b"damaged")
    _, files = publish_sitemaps(tmp_path, make_entries(5), index_base_url=BASE)
    assert not files[0].unchanged
    _, urls = read_published_set(tmp_path)
    assert len(urls) == 5


def _failing_entries(exception: BaseException) -> Iterator[SitemapEntry]:
    yield from make_entries(15, prefix="https://example.com/doomed/")
    raise exception


@pytest.mark.parametrize(
    "exception", [RuntimeError("crawl crashed"), KeyboardInterrupt(), OSError("disk")]
)
def test_failure_midway_leaves_the_previous_set_intact(
    tmp_path: Path, exception: BaseException
) -> None:
    before = _publish_previous(tmp_path)
    with pytest.raises(type(exception)):
        # max_urls=4: three files are finished (as temporary files) before the crash.
        publish_sitemaps(tmp_path, _failing_entries(exception), index_base_url=BASE, max_urls=4)
    assert snapshot(tmp_path) == before
    assert temp_files(tmp_path) == []
    read_published_set(tmp_path)


def test_failure_while_publishing_leaves_the_previous_set_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _publish_previous(tmp_path)
    real_replace = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst).name == "sitemap_index.xml":
            raise OSError("no space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(crawler.publish.writer.os, "replace", replace)
    with pytest.raises(OSError, match="no space"):
        publish_sitemaps(
            tmp_path,
            make_entries(30, prefix="https://example.com/v2/"),
            index_base_url=BASE,
            max_urls=7,
        )
    monkeypatch.undo()
    # The new children reached their final names, but the index is the old one
    # and every file it lists is as it was; the orphans go at the next publish.
    after = snapshot(tmp_path)
    assert {name: after[name] for name in before} == before
    assert temp_files(tmp_path) == []
    read_published_set(tmp_path)
    _, files = publish_sitemaps(tmp_path, make_entries(3), index_base_url=BASE)
    assert set(snapshot(tmp_path)) == {files[0].name, "sitemap_index.xml"} | set(UNRELATED)


# -- a real interruption: SIGKILL ----------------------------------------------------

KILLED_WRITER = """
import sys
from crawler.sitemaps.entry import SitemapEntry
from crawler.publish.writer import publish_sitemaps

entries = (
    SitemapEntry(f"https://example.com/big/{i:07d}", lastmod="2025-06-01") for i in range(300_000)
)
publish_sitemaps(sys.argv[1], entries, index_base_url="https://example.com/", max_urls=500)
"""


def _temps_appeared(count: int) -> Callable[[Path], bool]:
    return lambda out_dir: len(temp_files(out_dir)) >= count


def _publishing(old_names: set[str]) -> Callable[[Path], bool]:
    # A child of the new set under its final name: publish() has begun.
    return lambda out_dir: any(
        CHILD_NAME_RE.match(path.name) and path.name not in old_names for path in out_dir.iterdir()
    )


@pytest.mark.parametrize(
    "moment",
    ["at start", "first temporary file", "many temporary files", "publishing"],
)
def test_sigkill_leaves_a_complete_set(tmp_path: Path, moment: str) -> None:
    out_dir = tmp_path / "public"
    before = _publish_previous(out_dir)
    conditions: dict[str, Callable[[Path], bool]] = {
        "at start": lambda out_dir: True,
        "first temporary file": _temps_appeared(1),
        "many temporary files": _temps_appeared(100),
        "publishing": _publishing(set(before)),
    }
    condition = conditions[moment]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(out_dir)], cwd=tmp_path, env=env
    )
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and not condition(out_dir) and time.monotonic() < deadline:
            time.sleep(0.002)
        if moment == "at start":
            time.sleep(0.2)  # Python has started; the writer may not have.
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()

    # Whatever the moment, the index in place lists a complete, valid set...
    read_published_set(out_dir)
    after = snapshot(out_dir)
    if after["sitemap_index.xml"] == before["sitemap_index.xml"]:
        # ...and while it is the old index, every old file is as it was. (Killed
        # "publishing", it usually is: new children are in place, index not yet.)
        assert {name: after[name] for name in before} == before
    if moment != "publishing":
        # Before publish() begins, only hidden temporary files have appeared.
        assert {name: after[name] for name in before} == before
        assert set(after) - set(before) == set(temp_files(out_dir))
    # The next successful publish sweeps the killed run's leftovers.
    _, files = publish_sitemaps(out_dir, make_entries(5), index_base_url=BASE)
    assert set(snapshot(out_dir)) == {files[0].name, "sitemap_index.xml"} | set(UNRELATED)
    read_published_set(out_dir)


# -- the fast paths: checks, escaping, batches (what publishing from the ledger uses) --


def _error(function: Callable[..., object], *args: object) -> str | None:
    """The ValueError message ``function(*args)`` raises, or None."""
    try:
        function(*args)
    except ValueError as exc:
        return str(exc)
    return None


# URLs close to the common case (most pass the fast path), with now and then a
# piece that the fast path or the full check does not accept.
_GOOD_PIECES = [*"abcXYZ019.-/:?=&;@!$'()*+,~_<>\"{|}\\^`", "%2F", "%c3%A9", "/x", "?q=1"]
_BAD_PIECES = ["%", "%zz", "%4", "#", "##", "[", "]", " ", "\t", "\n", "\x7f", "\x85", "\xa0"]
_ODD_PIECES = ["\u3000", "\u00e9", "\U0001f600", "\ud800", "\uffff"]
_HOST = st.lists(st.sampled_from([*"abcXYZ019.-"]), min_size=1, max_size=12).map("".join)
_ODD_HOST = st.lists(st.sampled_from(["@", "[::1]", "%41", "\u00e9", ":"]), max_size=3).map("".join)
_URLS = st.one_of(
    st.builds(
        lambda start, host, odd_host, port, path: start + host + odd_host + port + path,
        st.sampled_from(["https://", "http://", "https://", "HTTP://", "https:/", "ftp://", ""]),
        _HOST,
        st.one_of(st.just(""), _ODD_HOST),
        st.sampled_from(["", "", ":8080", ":", ":x"]),
        st.one_of(
            st.lists(st.sampled_from(_GOOD_PIECES), max_size=40),
            st.lists(st.sampled_from(_GOOD_PIECES + _BAD_PIECES + _ODD_PIECES), max_size=30),
        ).map(lambda pieces: "/" + "".join(pieces) if pieces else ""),
    ),
    st.text(max_size=40),
)


@settings(max_examples=2000, deadline=None)
@given(loc=_URLS)
def test_check_loc_fast_path_is_the_full_check(loc: str) -> None:
    # What the fast path lets through, the full check accepts; and check_loc()
    # accepts and rejects exactly what the full check does, with its message.
    if _COMMON_LOC.fullmatch(loc) and 12 <= len(loc) <= 2047:
        _check_loc_fully(loc)
    assert _error(check_loc, loc) == _error(_check_loc_fully, loc)


@pytest.mark.parametrize(
    "loc",
    [
        "https://example.com/a%2fb%C3%A9?q=1&r=<2>",
        "http://example.com:8080",
        "https://example.com/" + "x" * (2047 - 20),
        "https://example.com/" + "x" * (2048 - 20),
        "http://a.b/",
        "https://example.com/%",
        "https://example.com/%4",
        "https://example.com/#a#b",
        "https://example.com/a\nb",
        "https://example.com:/x",
        "https://ex ample.com/",
    ],
)
def test_check_loc_fast_path_edges(loc: str) -> None:
    assert _error(check_loc, loc) == _error(_check_loc_fully, loc)


@settings(max_examples=500, deadline=None)
@given(text=st.lists(st.sampled_from([*"ab&<>;\"'\n", "&amp;", "&lt;"]), max_size=30).map("".join))
def test_escape_is_xml_escape(text: str) -> None:
    assert escape(text) == sax_escape(text)


_LOCS = st.sampled_from(
    [
        "https://example.com/a",
        "https://example.com/b?x=1&y=<2>",
        "https://example.com/caf\u00e9",
        "https://example.com/c#frag",
        "http://[::1]:8080/d",
        "https://example.com/e%C3%A9",
        "https://example.com/a b",
        "https://example.com/a\nhttps://example.com/b",
        "https://example.com/%zz",
        "http://a.b/",
        "",
        None,
    ]
)
_LASTMODS = st.sampled_from(
    [
        None,
        "2024-01-02",
        "2024-01-02T00:00:00+00:00",
        "2024-01-01T23:00:00+00:00",
        "2024-01-01T23:00:00-05:00",
        "2024-01-02T00:00:00.5Z",
        "2024-01-02T00:00:00Z",
        "2024-02-30",
        "2024-13-01T00:00:00+00:00",
        "2024-01-02T03:04:05+15:00",
        "2024-01-02\n2024-01-03",
        "",
        "yesterday",
        20240102,
    ]
)


@settings(max_examples=1000, deadline=None)
@given(rows=st.lists(st.tuples(_LOCS, _LASTMODS), min_size=1, max_size=8))
def test_entry_batch_checks_as_entries_do(rows: list[tuple[object, object]]) -> None:
    # The first bad row raises, with SitemapEntry's message, or none does.
    def one_by_one() -> None:
        for loc, lastmod in rows:
            SitemapEntry(loc, lastmod)  # type: ignore[arg-type]

    locs, lastmods = [row[0] for row in rows], [row[1] for row in rows]
    expected = _error(one_by_one)
    assert _error(EntryBatch, locs, lastmods) == expected
    if expected is None:
        batch = EntryBatch(locs, lastmods)  # type: ignore[arg-type]
        # A date, or a "+00:00" date-time without a fraction (these are valid).
        assert batch.utc == all(
            lastmod is None or len(lastmod) == 10 or str(lastmod).endswith("+00:00")
            for lastmod in lastmods
        )
        assert list(batch) == [SitemapEntry(loc, lastmod) for loc, lastmod in rows]  # type: ignore[arg-type]


def test_entry_rows_check_changefreq_and_priority_once() -> None:
    rows = EntryRows([("https://example.com/a", None)], "daily", "0.5")  # type: ignore[arg-type]
    assert (rows.changefreq, rows.priority) == (ChangeFreq.DAILY, Decimal("0.5"))
    with pytest.raises(ValueError):
        EntryRows([], priority=Decimal("1.5"))
    with pytest.raises(ValueError):
        EntryRows([], changefreq="sometimes")  # type: ignore[arg-type]


# Valid entries in every form the two paths treat differently: escaping, IRIs (the
# batch's entry-by-entry check), and lastmods that do and do not compare as text.
_GOOD_LOCS = st.sampled_from(
    [
        "https://example.com/a",
        "https://example.com/b?x=1&y=<2>",
        "https://example.com/caf\u00e9/" + "\u65e5" * 40,
        "https://example.com/c#frag",
        "https://example.com/" + "x" * 300,
    ]
)
_GOOD_LASTMODS = st.sampled_from(
    [
        None,
        "2024-01-02",
        "2024-01-02T00:00:00+00:00",
        "2024-01-01T23:00:00+00:00",
        "2024-01-03T00:00:00+00:00",
        "2024-01-01T23:00:00-05:00",
        "2024-01-02T04:00:00.5Z",
        "2024-01-02T04:00:00.50Z",
    ]
)


def _reference_files(
    entries: list[SitemapEntry], fmt: str, max_urls: int, max_bytes: int
) -> list[tuple[bytes, str | None]]:
    """Each file's content and latest lastmod, entry by entry, as the writer was
    written before the fast paths: an independent oracle."""
    header, footer = (URLSET_HEADER, URLSET_FOOTER) if fmt == "xml" else (b"", b"")
    files: list[tuple[list[bytes], list[str | None]]] = []
    size = 0
    for entry in entries:
        if fmt == "txt":
            line = f"{entry.loc}\n".encode()
        else:
            optional = "" if entry.lastmod is None else f"<lastmod>{entry.lastmod}</lastmod>"
            if entry.changefreq is not None:
                optional += f"<changefreq>{entry.changefreq.value}</changefreq>"
            if entry.priority is not None:
                optional += f"<priority>{PRIORITY_TEXT[entry.priority]}</priority>"
            line = f"<url><loc>{sax_escape(entry.loc)}</loc>{optional}</url>\n".encode()
        if not files or len(files[-1][0]) >= max_urls or size + len(line) + len(footer) > max_bytes:
            files.append(([], []))
            size = len(header)
        files[-1][0].append(line)
        files[-1][1].append(entry.lastmod)
        size += len(line)
    result = []
    for lines, lastmods in files:
        latest = None
        for lastmod in lastmods:  # the first of the latest instants
            if lastmod is not None and (
                latest is None or lastmod_datetime(lastmod) > lastmod_datetime(latest)
            ):
                latest = lastmod
        result.append((header + b"".join(lines) + footer, latest))
    return result


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.tuples(_GOOD_LOCS, _GOOD_LASTMODS), min_size=1, max_size=60),
    fmt=st.sampled_from(["xml", "txt"]),
    extra=st.sampled_from([{}, {"changefreq": ChangeFreq.WEEKLY, "priority": Decimal("0.8")}]),
    max_urls=st.integers(1, 30),
    max_bytes=st.integers(2500, 9000),
    batch_size=st.sampled_from([1, 3, 4096]),
)
def test_rows_and_entries_are_written_alike(
    rows: list[tuple[str, str | None]],
    fmt: str,
    extra: dict[str, object],
    max_urls: int,
    max_bytes: int,
    batch_size: int,
) -> None:
    entries = [SitemapEntry(loc, lastmod, **extra) for loc, lastmod in rows]  # type: ignore[arg-type]
    expected = _reference_files(entries, fmt, max_urls, max_bytes)
    options = {"index_base_url": BASE, "fmt": fmt, "max_urls": max_urls, "max_bytes": max_bytes}
    entry_rows = EntryRows(rows, **extra)  # type: ignore[arg-type]
    real_batches = entry_rows.batches
    entry_rows.batches = lambda size=4096: real_batches(batch_size)  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        _, from_entries = publish_sitemaps(one, entries, **options)  # type: ignore[arg-type]
        _, from_rows = publish_sitemaps(two, entry_rows, **options)  # type: ignore[arg-type]
        assert snapshot(Path(one)) == snapshot(Path(two))
        assert from_entries == from_rows
        assert [
            (decompressed(Path(one) / written.name), written.lastmod) for written in from_rows
        ] == expected


@pytest.mark.parametrize(
    ("lastmods", "expected"),
    [
        (["2024-01-02", "2024-01-02T00:00:00+00:00"], "2024-01-02"),
        (["2024-01-02T00:00:00+00:00", "2024-01-02"], "2024-01-02T00:00:00+00:00"),
        ([None, "2024-01-02", None, "2024-01-01T23:59:59+00:00"], "2024-01-02"),
        (["2024-01-02T00:00:01+00:00", "2024-01-02"], "2024-01-02T00:00:01+00:00"),
        (["2024-01-02T00:00:00+00:00", "2024-01-01T19:00:00-05:00"], "2024-01-02T00:00:00+00:00"),
        (["2024-01-01T19:00:00-05:00", "2024-01-02T00:00:00+00:00"], "2024-01-01T19:00:00-05:00"),
        ([None, None], None),
    ],
)
@pytest.mark.parametrize("batch_size", [1, 4096])
def test_index_lastmod_from_rows_first_of_equal_instants(
    tmp_path: Path, lastmods: list[str | None], expected: str | None, batch_size: int
) -> None:
    rows = EntryRows((f"https://example.com/{i}/", lastmod) for i, lastmod in enumerate(lastmods))
    real_batches = rows.batches
    rows.batches = lambda size=4096: real_batches(batch_size)  # type: ignore[method-assign]
    _, files = publish_sitemaps(tmp_path, rows, index_base_url=BASE)
    assert files[0].lastmod == expected


def test_zlib_gets_its_input_in_the_same_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At compresslevel 0 the gzip bytes depend on where the input is split: the
    # writer hands zlib a batch when it reaches 256 KiB, after the entry that
    # takes it there, as it did when entries were written one at a time.
    pieces: list[int] = []
    real_write = gzip.GzipFile.write

    def write(self: gzip.GzipFile, data: bytes) -> int:
        pieces.append(len(data))
        return real_write(self, data)

    monkeypatch.setattr(gzip.GzipFile, "write", write)
    entries = [SitemapEntry(f"https://example.com/{'p' * (i % 90)}/{i}") for i in range(9000)]
    publish_sitemaps(tmp_path, EntryRows((e.loc, None) for e in entries), index_base_url=BASE)
    expected, batch = [], len(URLSET_HEADER)
    for entry in entries:
        batch += _rendered_size(entry, "xml")
        if batch >= 256 * 1024:
            expected.append(batch)
            batch = 0
    expected.append(batch + len(URLSET_FOOTER))
    assert pieces == expected


# -- publishing from the ledger ----------------------------------------------------------


def _listed(url: str, lastmod: str | None = None, loc: str | None = None) -> UrlRecord:
    record = UrlRecord(url=url, decision=LISTED, key=url, loc=loc or url)
    record.lastmod = lastmod
    return record


def test_ledger_read_streams_from_the_covering_index(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    plan = ledger._db.execute(
        "EXPLAIN QUERY PLAN SELECT loc, lastmod FROM urls WHERE decision = 'listed' ORDER BY loc"
    ).fetchall()
    details = " ".join(row[-1] for row in plan)
    assert "COVERING INDEX urls_listed_sorted" in details
    assert "TEMP B-TREE" not in details  # no sort
    # The writer's rows, with their sections and own values, likewise (issue 15).
    for query in (LISTED_ROWS, LISTED_ROWS_PLAIN):
        plan = ledger._db.execute("EXPLAIN QUERY PLAN " + query).fetchall()
        details = " ".join(row[-1] for row in plan)
        assert "COVERING INDEX urls_listed_rows" in details
        assert "TEMP B-TREE" not in details
    ledger.close()


def test_ledger_of_an_earlier_run_opens_and_publishes(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "ledger.sqlite"
    Ledger(path).close()
    # The index an earlier version created instead of urls_listed_sorted, and a
    # table without the columns of later versions.
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX urls_listed_sorted")
        db.execute("DROP INDEX urls_listed_rows")
        db.execute("CREATE INDEX urls_listed ON urls (loc) WHERE decision = 'listed'")
        db.execute("ALTER TABLE urls DROP COLUMN extras")
    db.close()
    ledger = Ledger(path)
    for name in ("c", "a", "b"):
        ledger.record(_listed(f"https://example.com/{name}", "2024-01-0" + str(ord(name) - 96)))
    ledger.record(UrlRecord(url="https://example.com/r", decision=REDIRECT, key="r"))
    ledger.commit()
    indexes = {row[0] for row in ledger._db.execute("SELECT name FROM sqlite_master")}
    assert {"urls_listed_sorted", "urls_listed_rows"} <= indexes and "urls_listed" not in indexes
    # Iterated (as report.py does), the rows give entries, one a row.
    assert [entry.loc for entry in ledger.listed_entries()] == [
        f"https://example.com/{name}" for name in "abc"
    ]
    _, files = publish_sitemaps(tmp_path / "out", ledger.listed_entries(), index_base_url=BASE)
    ledger.close()
    _, urls = read_published_set(tmp_path / "out")
    assert [(u["loc"], u["lastmod"]) for u in urls] == [
        ("https://example.com/a", "2024-01-01"),
        ("https://example.com/b", "2024-01-02"),
        ("https://example.com/c", "2024-01-03"),
    ]
    assert files[0].lastmod == "2024-01-03"


@pytest.mark.parametrize(
    ("loc", "lastmod"),
    [
        ("https://example.com/a b", None),
        ("https://example.com/z%zz", None),
        (None, None),
        ("https://example.com/ok", "2024-02-30"),
        ("https://example.com/ok", "2024-01-02T03:04"),
    ],
)
def test_a_bad_ledger_row_is_refused_as_before(
    tmp_path: Path, loc: str | None, lastmod: str | None
) -> None:
    out = tmp_path / "out"
    before = _publish_previous(out)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for i in range(5000):  # the bad row is in the second batch
        ledger.record(_listed(f"https://example.com/{i:05d}"))
    ledger.commit()
    ledger._db.execute(
        "INSERT INTO urls (key, url, decision, loc, lastmod, updated) VALUES (?, ?, ?, ?, ?, 0)",
        ("bad", "https://example.com/zz", LISTED, loc, lastmod),
    )
    expected = _error(SitemapEntry, loc, lastmod)
    assert expected is not None
    with pytest.raises(ValueError) as raised:
        publish_sitemaps(out, ledger.listed_entries(), index_base_url=BASE, max_urls=1000)
    assert str(raised.value) == expected
    ledger.close()
    assert snapshot(out) == before
    assert temp_files(out) == []


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("fails", [False, True])
def test_the_garbage_collector_is_paused_while_writing_only(
    tmp_path: Path, enabled: bool, fails: bool
) -> None:
    import gc

    seen: list[bool] = []

    def entries() -> Iterator[SitemapEntry]:
        seen.append(gc.isenabled())
        yield SitemapEntry("https://example.com/a")
        if fails:
            raise RuntimeError("the ledger went away")

    was_enabled = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        if fails:
            with pytest.raises(RuntimeError):
                publish_sitemaps(tmp_path, entries(), index_base_url=BASE)
        else:
            publish_sitemaps(tmp_path, entries(), index_base_url=BASE)
        assert seen == [False]
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was_enabled else gc.disable)()
