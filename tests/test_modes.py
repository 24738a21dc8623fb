"""The two-mode matrix (issue 23): every crawl feature, once in one process and once
with ``--processes 2`` (the coordinator and a worker on a private Redis server),
over the same fixture sites, must publish the same set, with the same lastmod
values, and record the same decisions in the ledger.

The sites are those of the feature tests: the trap site (query-variant traps,
learned parameters, calendars; and its soft-404 site, for the probe), a scripted
site for seeds (``--urls``, ``--seed-sitemaps``, robots.txt's ``Sitemap:`` line)
and staging credentials, a nightly site whose second night replays 304s with the
first night's lastmod, a rich site (hreflang, images) written in sections with its
feed, and the single-page application (rendering). report.html and report.json are
written in both modes.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.sitemap import Sitemap

from crawler.ledger.ledger import Ledger
from tests.conftest import ROOT
from tests.seedserver import ScriptedSite
from tests.test_nightly import NightlySite
from tests.test_traps_learning import TrapServer

pytest.importorskip("redis")  # the test extra installs it

# The coordinator fetches too with --processes 2, and may well fetch a small site
# alone before its worker is up; with --no-fetch two workers fetch every page.
MODES = {
    "one process": [],
    "processes 2": ["--processes", "2"],
    "processes 2, no fetch": ["--processes", "2", "--no-fetch"],
}


@dataclass
class Run:
    """What one crawl published and recorded."""

    lastmods: dict[str, str | None]  # every <loc> published, with its <lastmod>
    files: dict[str, bytes]  # every sitemap file published, by name, decompressed
    decisions: dict[str, tuple[str, str | None]]
    feed: set[str]
    stderr: str


def read_sitemaps(out: Path) -> tuple[dict[str, str | None], dict[str, bytes]]:
    index = Sitemap((out / "sitemap_index.xml").read_bytes())
    locs: dict[str, str | None] = {}
    files: dict[str, bytes] = {}
    for entry in index:
        path = out / entry["loc"].rsplit("/", 1)[1]
        body = path.read_bytes()
        if path.suffix == ".gz":
            body = gzip.decompress(body)
        files[path.name] = body
        for e in Sitemap(body):
            locs[e["loc"]] = e.get("lastmod")
    return locs, files


def crawl(url: str, work: Path, mode: str, *options: str, env: Any = None) -> Run:
    out, state = work / "public", work / "state"
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "crawl", url, "--out", str(out)]
        + ["--state", str(state), *MODES[mode], *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    ledger = Ledger(state / "ledger.sqlite")
    try:
        decisions = {row["url"]: (row["decision"], row["reason"]) for row in ledger.rows()}
    finally:
        ledger.close()
    feed = set()
    if (out / "changes.atom").exists():
        text = (out / "changes.atom").read_text()
        feed = {part.split("</id>")[0] for part in text.split("<id>")[2:]}
    assert (state / "report.html").is_file() and (state / "report.json").is_file()
    return Run(*read_sitemaps(out), decisions, feed, done.stderr)


def same(one: Run, *others: Run) -> None:
    for two in others:
        assert set(two.lastmods) == set(one.lastmods)
        assert two.lastmods == one.lastmods
        assert two.files == one.files  # rich entries, sections: the same bytes
        assert two.decisions == one.decisions
        assert two.feed == one.feed


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[Run]]:
    """``both(url, *options, name=...)``: the crawl in every mode (one process first)."""

    def run(url: str, *options: str, name: str, env: Any = None) -> list[Run]:
        return [
            crawl(url, tmp_path_factory.mktemp(f"{name}-{i}"), mode, *options, env=env)
            for i, mode in enumerate(MODES)
        ]

    return run


@pytest.fixture(scope="module")
def traps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapServer]:
    server = TrapServer("traps", tmp_path_factory.mktemp("traps") / "log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def soft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapServer]:
    server = TrapServer("soft404", tmp_path_factory.mktemp("soft") / "log")
    yield server
    server.stop()


def test_traps_calendars_and_learned_parameters(traps: TrapServer, both: Any) -> None:
    one, *two = both(traps.url("/"), name="traps")
    same(one, *two)
    kinds = {decision for decision, _ in one.decisions.values()}
    assert {"listed", "calendar", "ignored-parameter"} <= kinds, kinds


def test_soft_404_probe(soft: TrapServer, both: Any) -> None:
    one, *two = both(soft.url("/"), name="soft")
    same(one, *two)
    assert "soft-404" in {decision for decision, _ in one.decisions.values()}
    # The probe: once per crawl, in either mode.
    assert all("sitemap-crawler-probe" not in " ".join(run.lastmods) for run in two)


def test_seeds_urls_and_sitemaps(tmp_path: Path, both: Any) -> None:
    site = ScriptedSite(tmp_path)
    try:
        u = site.url
        site.spec["robots"] = f"User-agent: *\nAllow: /\nSitemap: {u('/maps/declared.xml')}\n"
        site.page("/", "/a", "/b")
        for path in ("/a", "/b", "/from-file", "/in-sitemap", "/declared-only"):
            site.page(path, "/")
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        site.raw(
            "/sitemap.xml",
            f"<?xml version='1.0'?><urlset {ns}><url><loc>{u('/in-sitemap')}</loc></url></urlset>",
            type="application/xml",
        )
        site.raw(
            "/maps/declared.xml",
            f"<?xml version='1.0'?><urlset {ns}><url><loc>{u('/declared-only')}</loc></url>"
            "</urlset>",
            type="application/xml",
        )
        site.save()
        urls = tmp_path / "urls.txt"
        urls.write_text(u("/from-file") + "\n")
        one, *two = both(u("/"), "--urls", str(urls), "--seed-sitemaps", name="seeds")
        same(one, *two)
        assert {u(p) for p in ("/from-file", "/in-sitemap", "/declared-only")} <= set(one.lastmods)
        # Each sitemap read once crawl-wide.
        for path in ("/sitemap.xml", "/maps/declared.xml"):
            assert [r["path"] for r in site.requests()].count(path) == len(MODES)
    finally:
        site.stop()


def test_staging_credentials(tmp_path: Path, both: Any) -> None:
    site = ScriptedSite(tmp_path)
    try:
        site.spec["robots"] = "User-agent: *\nAllow: /\n"
        site.spec["require"] = {"authorization": "Basic dXNlcjpwdw==", "x-token": "abc"}
        site.page("/", "/a", "/b")
        site.page("/a", "/")
        site.page("/b", "/a")
        site.save()
        one, *two = both(
            site.url("/"), "--auth", "user:pw", "--header", "X-Token: abc", name="staging"
        )
        same(one, *two)
        assert set(one.lastmods) == {site.url(p) for p in ("/", "/a", "/b")}
    finally:
        site.stop()


def test_nightly_lastmod_second_night(tmp_path: Path) -> None:
    site = NightlySite(tmp_path)
    try:
        pages = [f"/p{i}.html" for i in range(12)]
        site.home(*pages, etag='"home"')
        for path in pages:
            site.page(path, f"page {path}", etag=f'"{path}"')
        site.save()
        nights = {}
        for mode in MODES:
            work = tmp_path / mode.replace(" ", "-")
            crawl(site.url("/"), work, mode)
            # The second night: the site changed one page; every other answers 304.
            site.page(pages[0], "page changed", etag='"changed"')
            site.save()
            nights[mode] = crawl(site.url("/"), work, mode)
            site.page(pages[0], f"page {pages[0]}", etag=f'"{pages[0]}"')
            site.save()
        one, *two = nights.values()
        changed = site.url(pages[0])
        for run in two:
            assert run.decisions == one.decisions
            # The page that changed has the lastmod of its own night; every other one
            # the first night's (none here: no Last-Modified, no dates in the pages).
            assert {**run.lastmods, changed: 0} == {**one.lastmods, changed: 0}
        assert all(run.lastmods[changed] is not None for run in nights.values())
        assert all("(13 conditional, 12 not modified)" in run.stderr for run in nights.values())
    finally:
        site.stop()


def test_rich_entries_sections_and_feed(tmp_path: Path, both: Any) -> None:
    site = ScriptedSite(tmp_path)
    try:
        u = site.url
        site.spec["robots"] = "User-agent: *\nAllow: /\n"
        alternates = (
            f'<link rel="alternate" hreflang="en" href="{u("/en/")}">'
            f'<link rel="alternate" hreflang="de" href="{u("/de/")}">'
        )
        site.page("/", "/en/", "/de/", "/blog/one", "/blog/two")
        site.page("/en/", "/de/", head=alternates, tail="")
        site.page("/de/", "/en/", head=alternates)
        image = f'<img src="{u("/img/photo.jpg")}" alt="a photo">'
        site.page("/blog/one", "/", head="", tail="")
        site.spec["pages"]["/blog/one"]["body"] = site.spec["pages"]["/blog/one"]["body"].replace(
            "</body>", image + "</body>"
        )
        site.page("/blog/two", "/blog/one")
        # Recent Last-Modified dates: the blog pages' lastmod, and the feed's entries.
        for days, path in enumerate(("/blog/one", "/blog/two"), start=1):
            stamp = formatdate(time.time() - days * 86400, usegmt=True)
            site.spec["pages"][path]["headers"] = {"Last-Modified": stamp}
        site.save()
        one, *two = both(
            u("/"), "--images", "--section", "blog=/blog/", "--feed-days", "30", name="rich"
        )
        same(one, *two)
        assert one.feed
        assert set(one.lastmods) == {u(p) for p in ("/", "/en/", "/de/", "/blog/one", "/blog/two")}
    finally:
        site.stop()


def test_rendering(tmp_path: Path, both: Any, chromium: str) -> None:
    log = tmp_path / "spa.log"
    log.write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.spaserver", "--log", str(log)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        port = int(proc.stdout.readline().split()[0])
        one, *two = both(
            f"http://127.0.0.1:{port}/",
            "--render",
            "auto",
            "--browser",
            chromium,
            "--render-include",
            "/news$",
            "-s",
            "SITEMAP_RENDER_TIMEOUT=8",
            name="render",
        )
        same(one, *two)
        rendered = json.dumps(one.decisions)
        assert f"http://127.0.0.1:{port}/gallery/1" in one.lastmods, rendered
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
