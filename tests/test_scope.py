"""Scope and publishing options on real crawls: --base-url, include/exclude, page
and depth caps, rotation, text format, reproducible output, and a crawl that does
not finish leaving the previous set in place."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest_twisted
from scrapy.utils.sitemap import Sitemap

from tests.conftest import MockServer, run_crawl
from tests.test_crawl import LISTED
from tests.xsd import validate_index, validate_urlset

PUBLIC = "https://www.example.com/docs/"


def read_set(out: Path) -> tuple[list[str], list[str]]:
    """(index locs, page locs in file order) of a published set, validated."""
    index = (out / "sitemap_index.xml").read_bytes()
    validate_index(index)
    children = [e["loc"] for e in Sitemap(index)]
    pages: list[str] = []
    for loc in children:
        data = (out / loc.rsplit("/", 1)[1]).read_bytes()
        if loc.endswith(".gz"):
            data = gzip.decompress(data)
        if ".xml" in loc:
            validate_urlset(data)
            pages.extend(e["loc"] for e in Sitemap(data))
        else:
            pages.extend(data.decode("utf-8").splitlines())
    return children, pages


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest_twisted.ensureDeferred
async def test_base_url_rewrites_every_loc(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(
        site.url("/"), tmp_path, SITEMAP_BASE_URL=PUBLIC, SITEMAP_TRAP_MAX_QUERY_VARIANTS=5
    )
    children, pages = read_set(result.out)
    expected = {PUBLIC + p.lstrip("/") for p in LISTED} | {PUBLIC + "public-canonical.html"}
    assert set(pages) == expected
    assert all(loc.startswith(PUBLIC) for loc in children)
    # A canonical at the public address of the same page counts as self-canonical.
    row = result.ledger_rows()[site.url("/public-canonical.html")]
    assert (row["decision"], row["loc"]) == ("listed", PUBLIC + "public-canonical.html")
    # Canonical targets elsewhere are reported under their public address.
    row = result.ledger_rows()[site.url("/canon/dup.html?ref=1")]
    assert row["target"] == PUBLIC + "canon/self.html"
    assert result.stats["sitemap/index_url"] == PUBLIC + "sitemap_index.xml"


@pytest_twisted.ensureDeferred
async def test_base_url_with_start_in_a_directory(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(site.url("/relative/one.html"), tmp_path, SITEMAP_BASE_URL=PUBLIC)
    _, pages = read_set(result.out)
    assert set(pages) == {PUBLIC + f"{n}.html" for n in ("one", "two", "three", "four")}


@pytest_twisted.ensureDeferred
async def test_include_and_exclude(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(
        site.url("/"),
        tmp_path,
        SITEMAP_INCLUDE=[r"/(dates|relative)/"],
        SITEMAP_EXCLUDE=[r"rfc850", r"/relative/t"],
    )
    listed = result.listed()
    assert listed == {
        site.url(p)
        for p in (
            "/",
            "/dates/rfc1123.html",
            "/dates/asctime.html",
            "/dates/malformed.html",
            "/dates/future.html",
            "/dates/meta.html",
            "/relative/one.html",
            "/relative/four.html",
        )
    }
    decisions = result.decisions()
    assert decisions[site.url("/about.html")] == ("excluded", "matches no --include rule")
    assert decisions[site.url("/dates/rfc850.html")] == ("excluded", "matches --exclude 'rfc850'")


@pytest_twisted.ensureDeferred
async def test_max_pages(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(site.url("/"), tmp_path, SITEMAP_MAX_PAGES=10)
    decisions = result.decisions()
    fetched = [
        u
        for u, (d, r) in decisions.items()
        if d not in ("cap-reached", "off-host", "too-long", "trap")
    ]
    assert len(fetched) == 10
    assert result.stats["response_received_count"] <= 10 + 1  # + robots.txt
    assert sum(1 for d, r in decisions.values() if (d, r) == ("cap-reached", "max pages 10")) > 30


@pytest_twisted.ensureDeferred
async def test_max_depth(site: MockServer, tmp_path: Path) -> None:
    start = time.time()
    result = await run_crawl(site.url("/"), tmp_path, SITEMAP_MAX_DEPTH=1)
    decisions = result.decisions()
    # "/" links to /relative/one.html (depth 1), which links to two.html (depth 2).
    assert decisions[site.url("/relative/one.html")][0] == "listed"
    assert decisions[site.url("/relative/two.html")] == ("cap-reached", "max depth 1")
    assert "/relative/two.html" not in {r["path"] for r in site.requests() if r["time"] >= start}
    # A redirect target keeps its source's depth: /old-about (1) -> /about.html (1).
    assert decisions[site.url("/about.html")][0] == "listed"


@pytest_twisted.ensureDeferred
async def test_rotation_on_a_real_crawl(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(
        site.url("/"), tmp_path, SITEMAP_MAX_URLS_PER_FILE=7, SITEMAP_TRAP_MAX_QUERY_VARIANTS=5
    )
    children, pages = read_set(result.out)
    assert len(pages) == len(LISTED) == 44
    assert len(children) == 7  # ceil(44 / 7)
    assert pages == sorted(pages)
    assert result.stats["sitemap/files_written"] == 7


@pytest_twisted.ensureDeferred
async def test_byte_cap_rotation(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(
        site.url("/"), tmp_path, SITEMAP_MAX_BYTES_PER_FILE=2048, SITEMAP_GZIP=False
    )
    children, pages = read_set(result.out)
    assert len(children) > 1
    for loc in children:
        assert (result.out / loc.rsplit("/", 1)[1]).stat().st_size <= 2048
    assert len(pages) == result.stats["sitemap/decision/listed"]


@pytest_twisted.ensureDeferred
async def test_text_format(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(
        site.url("/"), tmp_path, SITEMAP_FORMAT="txt", SITEMAP_TRAP_MAX_QUERY_VARIANTS=5
    )
    children, pages = read_set(result.out)
    assert all(c.endswith(".txt.gz") for c in children)
    assert set(pages) == {site.url(p) for p in LISTED}


@pytest_twisted.ensureDeferred
async def test_unchanged_site_gives_identical_files(site: MockServer, tmp_path: Path) -> None:
    first = await run_crawl(site.url("/"), tmp_path / "a", SITEMAP_OUT_DIR=str(tmp_path / "out"))
    before = snapshot(first.out)
    second = await run_crawl(site.url("/"), tmp_path / "b", SITEMAP_OUT_DIR=str(tmp_path / "out"))
    assert second.outcome == "published"
    assert snapshot(second.out) == before


@pytest_twisted.ensureDeferred
async def test_crawl_that_does_not_finish_publishes_nothing(
    site: MockServer, tmp_path: Path
) -> None:
    out = str(tmp_path / "out")
    first = await run_crawl(site.url("/"), tmp_path / "a", SITEMAP_OUT_DIR=out)
    before = snapshot(first.out)
    # Scrapy closes the spider early ("closespider_pagecount"), as on Ctrl-C.
    second = await run_crawl(
        site.url("/"), tmp_path / "b", SITEMAP_OUT_DIR=out, CLOSESPIDER_PAGECOUNT=5
    )
    assert second.outcome == "failed"
    assert "did not finish (closespider_pagecount)" in second.stats["sitemap/message"]
    assert snapshot(second.out) == before
    assert (tmp_path / "b" / "state" / "ledger.failed.sqlite").exists()
    unfetched = [r for d, r in second.decisions().values() if d == "cap-reached"]
    assert "not fetched: the crawl stopped first" in unfetched


@pytest_twisted.ensureDeferred
async def test_changefreq_and_priority_only_when_configured(
    site: MockServer, tmp_path: Path
) -> None:
    result = await run_crawl(
        site.url("/relative/one.html"),
        tmp_path,
        SITEMAP_CHANGEFREQ="weekly",
        SITEMAP_PRIORITY="0.7",
    )
    index = Sitemap((result.out / "sitemap_index.xml").read_bytes())
    name = next(iter(index))["loc"].rsplit("/", 1)[1]
    entries = list(Sitemap(gzip.decompress((result.out / name).read_bytes())))
    assert {(e["changefreq"], e["priority"]) for e in entries} == {("weekly", "0.7")}
    plain = await run_crawl(site.url("/relative/one.html"), tmp_path / "plain")
    name = next(iter(Sitemap((plain.out / "sitemap_index.xml").read_bytes())))["loc"].rsplit(
        "/", 1
    )[1]
    body = gzip.decompress((plain.out / name).read_bytes())
    assert b"changefreq" not in body and b"priority" not in body


@pytest_twisted.ensureDeferred
async def test_nothing_listed_fails(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(site.url("/old-about"), tmp_path, SITEMAP_INCLUDE=["^$"])
    assert result.outcome == "failed"
    message = result.stats["sitemap/message"]
    assert message.startswith("nothing listed (start URL")
    assert "redirect" in message
    assert not (tmp_path / "public" / "sitemap_index.xml").exists()


@pytest_twisted.ensureDeferred
async def test_identical_pages_listed_once_unless_disabled(
    site: MockServer, tmp_path: Path
) -> None:
    dups = {site.url(p) for p in ("/dup/", "/dup/index.html", "/dup/copy.html")}
    merged = await run_crawl(site.url("/"), tmp_path / "a")
    assert merged.listed() & dups == {site.url("/dup/")}
    kept = await run_crawl(site.url("/"), tmp_path / "b", SITEMAP_DEDUPE_CONTENT=False)
    assert kept.listed() & dups == dups


@pytest_twisted.ensureDeferred
async def test_start_url_unreachable_fails(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(site.url("/hang"), tmp_path, DOWNLOAD_TIMEOUT=1, RETRY_TIMES=0)
    assert result.outcome == "failed"
    assert result.stats["sitemap/fatal"].startswith(f"start URL unreachable: {site.url('/hang')}")
    assert "TimeoutError" in result.stats["sitemap/fatal"]


@pytest_twisted.ensureDeferred
async def test_gzip_responses_are_decoded(site: MockServer, tmp_path: Path) -> None:
    result = await run_crawl(site.url("/relative/one.html"), tmp_path)
    assert result.stats["httpcompression/response_count"] >= 4
    assert result.listed() == {
        site.url(f"/relative/{n}.html") for n in ("one", "two", "three", "four")
    }
