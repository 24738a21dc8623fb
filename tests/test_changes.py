"""Around the sitemap (issue 15): nightly runs on a changing site (tests/nightlyserver.py
on 127.0.0.1) publish changes.atom with exactly the added and changed URLs, newest
first; and tell a stand-in IndexNow endpoint (tests/indexnowserver.py) exactly the
added, changed and removed URLs of each run, and nothing on a refused run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from lxml import etree

from tests.conftest import ROOT
from tests.indexnowserver import Answer, IndexNowServer
from tests.test_nightly import NightlySite

ATOM = {"a": "http://www.w3.org/2005/Atom"}
KEY = "a1b2c3d4e5f6"


def build(site: NightlySite, pages: dict[str, str]) -> None:
    """The site: a home page linking to *pages* (path -> text), each with an ETag,
    and the IndexNow key file at the root."""
    site.pages = {}
    site.home(*pages, etag=f'"home:{len(pages)}:{hash(tuple(pages))}"')
    for path, text in pages.items():
        site.page(path, text, etag=f'"{path}:{hash(text)}"')
    site.pages[f"/{KEY}.txt"] = {"body": KEY}
    site.save()


def crawl(site: NightlySite, out: Path, endpoint: IndexNowServer, *extra: str) -> tuple[int, str]:
    proc = subprocess.run(
        [
            sys.executable, "-m", "crawler.cli", "crawl", site.url("/"), "--out", str(out),
            "--indexnow-key", KEY, "--indexnow-endpoint", endpoint.url("/indexnow"),
            # --full: each night verifies every page (the schedule: tests/test_revisit.py).
            "-s", "AUTOTHROTTLE_START_DELAY=0", "--full", *extra,
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stderr


def feed(out: Path) -> list[tuple[str, str]]:
    root = etree.fromstring((out / "changes.atom").read_bytes())
    return [
        (e.xpath("string(a:id)", namespaces=ATOM), e.xpath("string(a:updated)", namespaces=ATOM))
        for e in root.xpath("a:entry", namespaces=ATOM)
    ]


def test_three_nights(nightly: NightlySite, endpoint: IndexNowServer, tmp_path: Path) -> None:
    site, out = nightly, tmp_path / "public"
    u = site.url
    pages = {f"/p{i}.html": f"page {i}" for i in range(1, 7)}
    build(site, pages)

    # Night 1, the baseline: nothing is new, nothing is submitted.
    code, err = crawl(site, out, endpoint)
    assert code == 0, err
    assert feed(out) == []
    assert endpoint.received == []
    assert f"Sitemap: {u('/changes.atom')}" in err

    # Night 2: p7 added, p2 changed, p6 removed (and the home page changed: its links).
    endpoint.script = [Answer(202)]
    pages.pop("/p6.html")
    build(site, {**pages, "/p2.html": "page 2, changed", "/p7.html": "page 7"})
    code, err = crawl(site, out, endpoint)
    assert code == 0, err
    (post,) = endpoint.received
    assert post.json == {
        "host": f"127.0.0.1:{site.port}",
        "key": KEY,
        "keyLocation": u(f"/{KEY}.txt"),
        "urlList": [u("/p7.html"), u("/"), u("/p2.html"), u("/p6.html")],
    }
    night2 = feed(out)
    # Newest first; changed at the same moment (this run), by address.
    assert [url for url, _ in night2] == [u("/"), u("/p2.html"), u("/p7.html")]
    assert len({when for _, when in night2}) == 1
    assert "IndexNow: 4 URLs submitted" in err
    report = json.loads((out.parent / "public.sitemap-state" / "report.json").read_text())
    assert report["indexnow"]["ok"] is True and report["indexnow"]["submitted"] == 4

    # Night 3: most of the site gone: refused, so nothing is submitted and the feed
    # published last night stays.
    build(site, {"/p1.html": "page 1"})
    code, err = crawl(site, out, endpoint)
    assert code == 4, err
    assert len(endpoint.received) == 1
    assert feed(out) == night2


def test_a_missing_key_file_submits_nothing_and_exits_7(
    nightly: NightlySite, endpoint: IndexNowServer, tmp_path: Path
) -> None:
    site, out = nightly, tmp_path / "public"
    build(site, {"/a.html": "a"})
    assert crawl(site, out, endpoint)[0] == 0
    site.pages.pop(f"/{KEY}.txt")
    site.page("/b.html", "b")
    site.home("/a.html", "/b.html")
    site.save()
    code, err = crawl(site, out, endpoint)
    assert code == 7, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("sitemap-crawler: IndexNow: nothing submitted: the key file")
    assert endpoint.received == []
    assert (out / "sitemap_index.xml").exists()  # the publish stands


def test_a_first_run_submits_everything_when_asked(
    nightly: NightlySite, endpoint: IndexNowServer, tmp_path: Path
) -> None:
    site, out = nightly, tmp_path / "public"
    build(site, {"/a.html": "a", "/b.html": "b"})
    endpoint.script = [Answer(200)]
    code, err = crawl(site, out, endpoint, "--indexnow-all", "-s", "USER_AGENT=ExampleBot/2.0")
    assert code == 0, err
    (post,) = endpoint.received
    assert sorted(post.json["urlList"]) == sorted(
        [site.url("/"), site.url("/a.html"), site.url("/b.html")]
    )
    # The key file is fetched, and the URLs submitted, as the crawl's own User-Agent.
    assert post.headers["User-Agent"] == "ExampleBot/2.0"
    [key_file] = [r for r in site.requests() if r["path"] == f"/{KEY}.txt"]
    assert key_file["user_agent"] == "ExampleBot/2.0"


def test_no_feed(nightly: NightlySite, endpoint: IndexNowServer, tmp_path: Path) -> None:
    site, out = nightly, tmp_path / "public"
    build(site, {"/a.html": "a"})
    code, err = crawl(site, out, endpoint, "--no-feed")
    assert code == 0, err
    assert not (out / "changes.atom").exists()
    assert "changes.atom" not in err


# -- sections, changefreq and priority by rule ------------------------------------------


def published(out: Path) -> dict[str, dict[str, tuple[str | None, str | None]]]:
    """file name -> {loc: (changefreq, priority)} of every urlset the index lists."""
    import gzip

    from tests.xsd import validate_index, validate_urlset

    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    index = (out / "sitemap_index.xml").read_bytes()
    validate_index(index)
    files: dict[str, dict[str, tuple[str | None, str | None]]] = {}
    for loc in etree.fromstring(index).xpath("//s:loc/text()", namespaces=ns):
        name = loc.rsplit("/", 1)[1]
        data = gzip.decompress((out / name).read_bytes())
        validate_urlset(data)
        files[name] = {
            u.xpath("string(s:loc)", namespaces=ns): (
                u.xpath("string(s:changefreq)", namespaces=ns) or None,
                u.xpath("string(s:priority)", namespaces=ns) or None,
            )
            for u in etree.fromstring(data).xpath("s:url", namespaces=ns)
        }
    return files


@pytest_twisted.ensureDeferred
async def test_sections_and_rules_split_the_set_exactly(
    nightly: NightlySite, tmp_path: Path
) -> None:
    from tests.conftest import run_crawl

    site = nightly
    pages = ["/docs/a.html", "/docs/b.html", "/blog/x.html", "/blog/docs.html", "/about.html"]
    build(site, {p: p for p in pages})
    result = await run_crawl(
        site.url("/"),
        tmp_path,
        SITEMAP_SECTIONS=["blog=/blog/", "docs=/docs/"],
        SITEMAP_CHANGEFREQ_RULES=["/blog/=daily", r"\.html$=monthly"],
        SITEMAP_PRIORITY_RULES=[r"/$=1.0", "/docs/=0.8"],
    )
    assert result.outcome == "published"
    files = published(result.out)
    by_section: dict[str, dict[str, tuple[str | None, str | None]]] = {}
    for name, entries in files.items():
        section = name.split("-")[1] if not name.split("-")[1].isdigit() else "(default)"
        by_section.setdefault(section, {}).update(entries)
    u = site.url
    assert by_section == {
        "(default)": {u("/"): (None, "1.0"), u("/about.html"): ("monthly", None)},
        "blog": {u("/blog/docs.html"): ("daily", None), u("/blog/x.html"): ("daily", None)},
        "docs": {u("/docs/a.html"): ("monthly", "0.8"), u("/docs/b.html"): ("monthly", "0.8")},
    }
    assert result.stats["sitemap/section/blog"] == 2
    assert result.stats["sitemap/section/docs"] == 2
    report = json.loads((result.state / "report.json").read_text())
    assert report["sections"]["blog"] == 2 and report["sections"]["docs"] == 2


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        (None, None),
        ("111111", None),  # fewer than 7 runs: not enough to say
        ("0011111", "daily"),
        ("0000011", "weekly"),
        ("1000000", "weekly"),
        ("1" + "0" * 7, "monthly"),
        ("0" * 29, None),
        ("0" * 30, "yearly"),
    ],
)
def test_auto_changefreq(history: str | None, expected: str | None) -> None:
    from pipelines.rules import auto_changefreq

    assert auto_changefreq(history) == expected


def test_the_history_of_a_page(tmp_path: Path) -> None:
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from crawler.core.items import UrlRecord
    from crawler.core.urls import url_key
    from crawler.ledger.ledger import Ledger
    from crawler.ledger.previous import PreviousRun
    from pipelines.history import HistoryPipeline

    def page(url: str, main: str, lastmod: str | None = None, **kw: Any) -> UrlRecord:
        return UrlRecord(
            url=url, decision="listed", key=url_key(url), loc=url, status=200,
            main_hash=main, content_hash=main, lastmod=lastmod, etag='"e"', **kw,
        )  # fmt: skip

    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record(page("http://h/same", "m1", history="000000", listed_at="2026-01-01"))
    ledger.record(page("http://h/moved", "m1", "2026-01-01", history="0"))
    ledger.close()
    previous = PreviousRun.open(tmp_path / "ledger.sqlite")
    stats = MemoryStatsCollector(get_crawler())
    now = "2026-11-20T03:00:00+00:00"
    pipeline = HistoryPipeline(stats, previous, now)
    same, moved, new = (
        page("http://h/same", "m1"),
        page("http://h/moved", "m2", "2026-11-20"),
        page("http://h/new", "m9"),
    )
    for record in (same, moved, new):
        pipeline.process_item(record)
    assert (same.history, same.listed_at, same.lastmod_moved_at) == ("0000000", "2026-01-01", None)
    assert (moved.history, moved.lastmod_moved_at) == ("01", now)
    assert (new.history, new.listed_at) == (None, now)  # added by this run
    # The baseline run (no previous run) lists nothing as new.
    first = page("http://h/first", "m1")
    HistoryPipeline(stats, None, now).process_item(first)
    assert (first.history, first.listed_at) == (None, None)
    assert previous is not None
    previous.close()


def test_the_audit_counts_our_sections(nightly: NightlySite, tmp_path: Path) -> None:
    site = nightly
    build(site, {"/docs/a.html": "a", "/docs/b.html": "b", "/blog/x.html": "x"})
    out = tmp_path / "public"
    crawl = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "crawl", site.url("/"), "--out", str(out),
         "--section", "docs=/docs/", "--section", "blog=/blog/"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert crawl.returncode == 0, crawl.stderr
    assert "sections: (default) 1, blog 1, docs 2" in crawl.stderr
    audit = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "audit", site.url("/"),
         "--sitemap", str(out / "sitemap_index.xml"), "--sitemap", str(out / "changes.atom"),
         "--report", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stderr
    assert "sections: (default) 1, blog 1, docs 2" in audit.stdout
    report = json.loads((tmp_path / "r" / "audit.json").read_text())
    assert report["sections"] == {"(default)": 1, "blog": 1, "docs": 2}
    # The audit reads our delta feed too (an Atom feed is a sitemap), without a problem.
    (feed_row,) = [s for s in report["sitemaps"] if s["url"].endswith("changes.atom")]
    assert feed_row["kind"] == "atom" and feed_row["problems"] == []
