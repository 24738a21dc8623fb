"""The two-mode matrix (issue 23): every crawl feature, once in one process and once
with ``--processes 2`` (the coordinator and a worker on a private Redis server),
over the same fixture sites, must publish the same set, with the same lastmod
values, and record the same decisions in the ledger.

The sites are those of the feature tests: the trap site (query-variant traps,
learned parameters, calendars; and its soft-404 site, for the probe), a scripted
site for seeds (``--urls``, ``--seed-sitemaps``, robots.txt's ``Sitemap:`` line)
and staging credentials, a nightly site whose second night replays 304s with the
first night's lastmod, a rich site (hreflang, images) written in sections with its
feed, the single-page application (rendering), a slow site that the time budget
(``--max-time``) cuts short, and a nightly site whose changes go to a local IndexNow
endpoint. report.html and report.json are written in every mode, and report.html
renders the same pages and decisions.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email.utils import formatdate
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from scrapy.utils.sitemap import Sitemap

from crawler.core.decisions import UNFETCHED_TIME
from crawler.crawl.notfoundprobe import PROBE_PREFIX
from crawler.ledger.ledger import Ledger
from tests import wpserver as wp
from tests.conftest import TrapServer, cli
from tests.indexnowserver import Answer, IndexNowServer
from tests.seedserver import ScriptedSite
from tests.served import ServedSite
from tests.spaserver import SpaServer
from tests.test_changes import KEY, build
from tests.test_nightly import NightlySite
from tests.xsd import validate_index, validate_urlset

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
    found: dict[str, tuple[str | None, str | None]]  # found_by, found_from
    depths: dict[str, tuple[int | None, str | None]]  # depth, referrer
    feed: set[str]
    report: dict[str, Any]  # what report.html renders of the pages and decisions, robots.txt
    stderr: str
    report_json: dict[str, Any]  # the crawl's report.json


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


#: Figures of report.html about the fetching, not the pages and decisions: which
#: process fetched a page, how often (a URL fetched before its parameter was learned
#: elsewhere, robots.txt once a process), how fast, is a race between the processes.
#: So is the depth a URL was first found at (the pages answer in any order).
FETCHING = (
    "duration_seconds",
    "depths.",
    "pages_fetched",
    "conditional_requests",
    "not_modified",
    "status_codes.",
    "slowest.",
    "largest.",
    "history.",
    "schedule.",  # URLs verified (fetched) and kept: the same race
)
#: The columns of report.html's URL tables that say how a page was judged.
JUDGED = ("URL", "reason", "target", "lastmod")


def read_report(path: Path) -> dict[str, Any]:
    """The pages and decisions report.html renders: every URL table (added, removed,
    lastmod changes, listed, each excluded decision) by its class, row by row, and
    every figure but those of the fetching."""
    page = lxml.html.parse(path).getroot()
    rendered: dict[str, Any] = {
        f"figure {f.get('data-figure')}": f.get("data-value")
        for f in page.xpath("//*[@data-figure]")
        if not f.get("data-figure").startswith(FETCHING)
    }
    for group in page.xpath("//details[@data-class]"):
        # Not the status a URL answered, nor the page it was first found on: whether
        # it was fetched, and which page a process read first, is a race too.
        kept = [th.text_content() in JUDGED for th in group.xpath(".//thead//th")]
        rendered[group.get("data-class")] = sorted(
            tuple(td.text_content() for td, k in zip(row.xpath("td"), kept, strict=True) if k)
            for row in group.xpath(".//tr[@data-row]")
        )
    return rendered


def crawl(url: str, work: Path, mode: str, *options: str, env: Any = None) -> Run:
    out, state = work / "public", work / "state"
    done = cli(
        "crawl", url, "--out", str(out), "--state", str(state), *MODES[mode], *options, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    ledger = Ledger(state / "ledger.sqlite")
    try:
        rows = list(ledger.rows())
        decisions = {row["url"]: (row["decision"], row["reason"]) for row in rows}
        found = {row["url"]: (row["found_by"], row["found_from"]) for row in rows}
        depths = {row["url"]: (row["depth"], row["referrer"]) for row in rows}
    finally:
        ledger.close()
    feed = set()
    if (out / "changes.atom").exists():
        text = (out / "changes.atom").read_text()
        feed = {part.split("</id>")[0] for part in text.split("<id>")[2:]}
    report = read_report(state / "report.html")
    # The robots.txt read, whichever process read it (with --no-fetch, a worker).
    report_json = json.loads((state / "report.json").read_text())
    report["robots"] = report_json["robots"]
    return Run(
        *read_sitemaps(out), decisions, found, depths, feed, report, done.stderr, report_json
    )


def same(one: Run, *others: Run) -> None:
    for two in others:
        assert set(two.lastmods) == set(one.lastmods)
        assert two.lastmods == one.lastmods
        assert two.files == one.files  # rich entries, sections: the same bytes
        assert two.decisions == one.decisions
        assert two.feed == one.feed
        assert two.report == one.report


@pytest.fixture
def both(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[Run]]:
    """``both(url, *options, name=...)``: the crawl in every mode (one process first)."""

    def run(url: str, *options: str, name: str, env: Any = None) -> list[Run]:
        return [
            crawl(url, tmp_path_factory.mktemp(f"{name}-{i}"), mode, *options, env=env)
            for i, mode in enumerate(MODES)
        ]

    return run


def test_traps_calendars_and_learned_parameters(traps: TrapServer, both: Any) -> None:
    one, *two = both(traps.url("/"), name="traps")
    same(one, *two)
    kinds = {decision for decision, _ in one.decisions.values()}
    assert {"listed", "calendar", "ignored-parameter"} <= kinds, kinds


def test_caps_of_depth_query_variants_and_pages(tmp_path: Path, both: Any) -> None:
    """The depth cap and the counted rules decide the same in every mode: the rule book
    names them, and memory or Redis applies them (crawler/crawl/counted.py)."""
    site = NightlySite(tmp_path)
    lists = [f"/list?p={n}" for n in range(1, 6)]
    pages = [f"/p{n}.html" for n in range(1, 9)]
    site.home("/deep/1.html", *lists, *pages)
    site.page("/deep/1.html", '<a href="/deep/2.html">2</a> <a href="/list?p=9">9</a>')
    for path in (*lists, *pages, "/deep/2.html"):
        site.page(path, f"page {path}")
    site.save()
    caps = ("--max-depth", "1", "--max-pages", "9", "-s", "SITEMAP_TRAP_MAX_QUERY_VARIANTS=3")
    try:
        one, *two = both(site.url("/"), *caps, name="caps")
    finally:
        site.stop()
    same(one, *two)
    decided = {url[len(site.url("")) :]: decision for url, decision in one.decisions.items()}
    variants = ("trap", "more than 3 query variants of /list")
    # The home page, /deep/1.html, three variants of /list and four pages: nine.
    assert [decided[p] for p in ("/list?p=3", "/list?p=4", "/p4.html", "/p5.html")] == [
        ("listed", ""),
        variants,
        ("listed", ""),
        ("cap-reached", "max pages 9"),
    ]
    assert decided["/list?p=9"] == variants  # counted before the depth cap
    assert decided["/deep/2.html"] == ("cap-reached", "max depth 1")


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
        # How each seed was found, in every mode's ledger.
        for run in (one, *two):
            assert run.found[u("/from-file")] == ("url-file", str(urls))
            assert run.found[u("/in-sitemap")] == ("sitemap", u("/sitemap.xml"))
            assert run.found[u("/declared-only")] == ("sitemap", u("/maps/declared.xml"))
            assert run.found[u("/a")][0] == "link"
        # Each sitemap read once crawl-wide.
        for path in ("/sitemap.xml", "/maps/declared.xml"):
            assert [r["path"] for r in site.requests()].count(path) == len(MODES)
    finally:
        site.stop()


#: Seconds the site holds the soft-404 probe's answer, waiting for a seed's page.
HOLD = 5.0


def test_start_url_before_the_seeds_of_robots_sitemap(tmp_path: Path, both: Any) -> None:
    """robots.txt's ``Sitemap:`` line is read during the soft-404 probe, and the seed's
    page links to the start URL. The site answers the probe only once that page was
    asked (or after HOLD s: a crawl that reads the sitemap after the start URLs never
    asks it sooner). The start URL is still found at depth 0, as the start, in every
    mode, so the depth cap cuts at the same place."""
    site = ScriptedSite(tmp_path)
    try:
        u = site.url
        site.spec["robots"] = f"User-agent: *\nAllow: /\nSitemap: {u('/maps/declared.xml')}\n"
        site.spec["hold"] = {"prefix": PROBE_PREFIX, "until": "/seed", "most": HOLD}
        site.page("/", "/a")
        site.page("/a", "/b")
        site.page("/b")
        site.page("/seed", "/")
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        site.raw(
            "/maps/declared.xml",
            f"<?xml version='1.0'?><urlset {ns}><url><loc>{u('/seed')}</loc></url></urlset>",
            type="application/xml",
        )
        site.save()
        runs = both(u("/"), "--seed-sitemaps", "--max-depth", "1", name="first")
        same(*runs)
        for run in runs:
            assert (run.depths[u("/")], run.found[u("/")]) == ((0, None), ("start", None))
            assert set(run.lastmods) == {u("/"), u("/a"), u("/seed")}
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
        pages = site.numbered(12)
        nights = {}
        for mode in MODES:
            work = tmp_path / mode.replace(" ", "-")
            crawl(site.url("/"), work, mode)
            # The second night: the site changed one page; every other answers 304.
            site.page(pages[0], "page changed", etag='"changed"')
            site.save()
            nights[mode] = crawl(site.url("/"), work, mode, "--full")
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


#: The time budget, and the pages' answer time: the site (200 pages, two requests at a
#: time in each process: 25 s or more) takes far longer than the budget in every mode.
#: With ``--no-fetch`` the workers start within the budget, even on a busy machine.
BUDGET = 12.0
DELAY = 0.5


def test_time_budget(tmp_path: Path) -> None:
    """``--max-time`` cuts the crawl of a slow site in every mode alike: the requests
    stop within the budget and the answers in flight, the pages judged are published
    (a valid set), every URL found and not fetched is cap-reached for the budget, the
    run exits 0 and the summary and report.json say the budget ran out. Which pages
    made it in time is a race: not compared."""
    site = ScriptedSite(tmp_path)
    try:
        slow = [f"/slow-{i}" for i in range(200)]
        site.page("/", *slow)
        for path in slow:
            site.page(path, "/", delay=DELAY)
        site.save()
        every = {site.url(p) for p in ("/", *slow)}
        kinds = {}
        for mode in MODES:
            work = tmp_path / mode.replace(" ", "-").replace(",", "")
            before = len(site.requests())
            run = crawl(
                site.url("/"), work, mode, "--max-time", f"{BUDGET:g}s",
                "-s", "CONCURRENT_REQUESTS=2", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2",
            )  # fmt: skip
            report = json.loads((work / "state" / "report.json").read_text())
            started = datetime.fromisoformat(report["started"]).timestamp()
            # Measured at the site: no request after the budget and the answers in
            # flight (a few pages' time; the workers see the end within a second).
            last = max(r["time"] for r in site.requests()[before:])
            assert last - started < BUDGET + 4 * DELAY + 2, (mode, last - started)
            assert set(run.decisions) == every, mode
            listed = {url for url, (kind, _) in run.decisions.items() if kind == "listed"}
            budget = ("cap-reached", UNFETCHED_TIME)
            unfetched = {url for url, d in run.decisions.items() if d == budget}
            assert listed | unfetched == every, mode
            assert site.url("/") in listed and unfetched, (mode, len(listed))
            assert set(run.lastmods) == listed
            validate_index((work / "public" / "sitemap_index.xml").read_bytes())
            for body in run.files.values():
                validate_urlset(body)
            assert report["published"] is True
            assert report["budget"] == {
                "stopped": "the time budget (--max-time) ran out",
                "unfetched": len(unfetched),
            }
            assert (
                f"stopped early: the time budget (--max-time) ran out; {len(unfetched)} URLs "
                "found but not fetched (cap-reached)"
            ) in run.stderr
            assert run.report["cap-reached"] == sorted(
                (url, UNFETCHED_TIME, "") for url in unfetched
            )
            kinds[mode] = {decision for decision, _ in run.decisions.values()}
        assert all(k == {"listed", "cap-reached"} for k in kinds.values()), kinds
    finally:
        site.stop()


def test_indexnow_first_run_and_the_next_night(tmp_path: Path) -> None:
    """A local IndexNow endpoint hears the same URLs from every mode: every listed
    URL after a first run (``--indexnow-all``), then the next night's added, changed
    and removed ones."""
    site = NightlySite(tmp_path)
    endpoint = IndexNowServer().start()
    try:
        u = site.url
        options = ("--indexnow-key", KEY, "--indexnow-endpoint", endpoint.url("/indexnow"))
        sent = {}
        for mode in MODES:
            work = tmp_path / mode.replace(" ", "-").replace(",", "")
            pages = {f"/p{i}.html": f"page {i}" for i in range(1, 7)}
            build(site, pages)
            endpoint.received.clear()
            endpoint.script = [Answer(200), Answer(200)]
            first = crawl(u("/"), work, mode, *options, "--indexnow-all")
            pages.pop("/p6.html")
            build(site, {**pages, "/p2.html": "page 2, changed", "/p7.html": "page 7"})
            second = crawl(u("/"), work, mode, *options, "--full")
            sent[mode] = [post.json for post in endpoint.received]
            assert "IndexNow: 7 URLs submitted" in first.stderr
            assert "IndexNow: 4 URLs submitted" in second.stderr
        one, *two = sent.values()
        assert all(other == one for other in two), sent
        first_run, next_night = one
        assert set(first_run["urlList"]) == {u("/")} | {u(f"/p{i}.html") for i in range(1, 7)}
        assert next_night == {
            "host": f"127.0.0.1:{site.port}",
            "key": KEY,
            "keyLocation": u(f"/{KEY}.txt"),
            "urlList": [u("/p7.html"), u("/"), u("/p2.html"), u("/p6.html")],
        }
    finally:
        endpoint.stop()
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
    with SpaServer(tmp_path / "spa.log") as spa:
        one, *two = both(
            spa.url("/"),
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
        assert spa.url("/gallery/1") in one.lastmods, rendered
        # The summary counts every process's renders and responses (a rendered page
        # is two), as one process does.
        for line in ("rendered in Chromium: ", "pages fetched: "):
            said = [[w for w in r.stderr.splitlines() if w.startswith(line)] for r in (one, *two)]
            assert len(said[0]) == 1 and said == [said[0]] * 3, said
        # --processes 2 shares the cores: its processes render no more pages at once
        # in all than one process does.
        at_once = [r.report_json["render"]["concurrency"] for r in (one, *two)]
        assert at_once[0] >= 1 and all(1 <= n <= at_once[0] for n in at_once), at_once


def shifted(days: int) -> dict[str, str]:
    """The environment of a crawl whose clock runs *days* ahead of the site's
    (libfaketime, the Debian package ``faketime``: ``.ci/run`` installs it)."""
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))
    assert found, "libfaketime is missing: apt-get install faketime"
    return {**os.environ, "LD_PRELOAD": str(found[0]), "FAKETIME": f"+{days}d"}


def test_revisit_schedule(tmp_path: Path) -> None:
    """Nights one and two days later, under a shifted system clock: every mode keeps
    the pages that are not due, fetches its share of the rest, and publishes the
    first night's set."""
    site = NightlySite(tmp_path)
    pages = [f"/p{i}.html" for i in range(1, 22)]
    site.home(*pages)
    for path in pages:
        site.page(path, f"page {path}")
    site.save()
    try:
        shares: dict[str, list[int]] = {}
        for mode in MODES:
            work = tmp_path / mode.replace(" ", "-").replace(",", "")
            first = crawl(site.url("/"), work, mode)
            assert first.report_json["schedule"]["full_night"] == "no previous run"
            shares[mode] = []
            for days in (1, 2):
                run = crawl(site.url("/"), work, mode, env=shifted(days))
                schedule = run.report_json["schedule"]
                assert schedule["full_night"] is None
                assert run.lastmods == first.lastmods
                assert schedule["kept"] + schedule["verified"] == 22
                probes = run.report_json["learned"]["soft404"]["probes"]
                assert run.report_json["pages_fetched"] == schedule["verified"] + probes
                assert "revisit: " in run.stderr
                shares[mode].append(schedule["verified"])
        # 22 pages over 7 nights: 3 or 4 a night, the start URL always among them.
        assert all(3 <= n <= 5 for counts in shares.values() for n in counts), shares
    finally:
        site.stop()


def test_revisit_signals_of_a_wordpress_site(tmp_path: Path) -> None:
    """A post trashed deep in the archive (linked by pages that are not due) is gone
    the next night in every mode: the REST API's lists, read by whichever process
    fetches the start page, are compared with the previous night's."""
    state = wp.make_site(40, 2)
    wp.save(state, tmp_path / "wp.json")
    site = ServedSite("tests.wpserver", "--site", str(tmp_path / "wp.json"), "--log", "/dev/null")
    try:
        works = {mode: tmp_path / mode.replace(" ", "-").replace(",", "") for mode in MODES}
        for mode, work in works.items():
            crawl(site.url("/"), work, mode)
        trashed = site.url(wp.trash_post(state, 30))
        wp.save(state, tmp_path / "wp.json")
        for mode, work in works.items():
            run = crawl(site.url("/"), work, mode, env=shifted(1))
            assert run.report_json["schedule"]["full_night"] is None
            assert trashed not in run.lastmods, mode
            assert run.decisions[trashed][0] == "status", mode
            assert run.report_json["schedule"]["kept"] > 40, mode
    finally:
        site.stop()
