"""Nightly operation over several runs against a site that changes between them
(tests/nightlyserver.py): conditional requests, honest lastmod, added and removed
URLs, refusing to publish a broken run, resuming an interrupted one, the lock, the
config file and the progress line."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.utils.sitemap import Sitemap

from tests.conftest import ROOT, CrawlResult, run_crawl, start_cli, wait_for
from tests.served import ServedSite

HTML = "<html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


def body(title: str, text: str, head: str = "") -> str:
    return HTML.format(title=title, head=head, body=text)


class NightlySite(ServedSite):
    """The site file and the server that serves it."""

    def __init__(self, tmp: Path) -> None:
        self.file = tmp / "site.json"
        self.log = tmp / "requests.log"
        self.pages: dict[str, dict[str, Any]] = {}
        self.robots = "User-agent: *\nAllow: /\n"
        self.save()
        super().__init__(
            "tests.nightlyserver",
            *("--site", str(self.file), "--gate", str(self.gate_path)),
            log=self.log,
        )

    def page(self, path: str, text: str, **spec: Any) -> None:
        self.pages[path] = {"body": body(path, text, spec.pop("head", "")), **spec}

    def home(self, *paths: str, etag: str | None = None) -> None:
        links = "".join(f'<a href="{p}">{p}</a>' for p in paths)
        self.pages["/"] = {"body": body("home", links), "etag": etag}

    def save(self) -> None:
        self.file.write_text(json.dumps({"robots": self.robots, "pages": self.pages}))

    def numbered(self, count: int, etags: bool = True) -> list[str]:
        """A home page linking to *count* pages /p0.html, /p1.html, ..., each with an
        ETag unless not *etags*, saved: the paths."""
        pages = [f"/p{i}.html" for i in range(count)]
        self.home(*pages, etag='"home"' if etags else None)
        for path in pages:
            self.page(path, f"page {path}", **({"etag": f'"{path}"'} if etags else {}))
        self.save()
        return pages


async def night(site: NightlySite, tmp_path: Path, **overrides: Any) -> CrawlResult:
    site.save()
    site.clear_log()
    return await run_crawl(
        site.url("/"),
        tmp_path,
        SITEMAP_OUT_DIR=str(tmp_path / "public"),
        SITEMAP_STATE_DIR=str(tmp_path / "state"),
        SITEMAP_VOLATILE_SELECTORS=[".ts"],
        **overrides,
    )


def published(out: Path) -> dict[str, str | None]:
    """loc -> lastmod of the published set."""
    entries: dict[str, str | None] = {}
    for child in Sitemap((out / "sitemap_index.xml").read_bytes()):
        data = gzip.decompress((out / child["loc"].rsplit("/", 1)[1]).read_bytes())
        entries.update({e["loc"]: e.get("lastmod") for e in Sitemap(data)})
    return entries


def snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def report(result: CrawlResult) -> dict[str, Any]:
    return json.loads((result.state / "report.json").read_text())


LM1 = "Tue, 15 Nov 2022 12:45:26 GMT"
LM2 = "Wed, 16 Nov 2022 08:00:00 GMT"
STEADY = [f"/s{i}.html" for i in range(8)]


def first_night(site: NightlySite) -> None:
    site.home(*(f"/{name}.html" for name in "abcdfgh"), *STEADY, etag='"h1"')
    site.page("/a.html", "a one", etag='"a1"', last_modified=LM1)
    site.page("/b.html", "b one")
    site.page("/c.html", 'c <span class="ts">10:00</span>', head="<script>var t = 1</script>")
    site.page("/d.html", "d")
    site.page("/f.html", "f one", volatile_last_modified=True, ignore_conditional=True)
    site.page("/g.html", "g", last_modified=LM1, ignore_conditional=True)
    site.page("/h.html", "h", etag='"h"')
    for path in STEADY:
        site.page(path, f"steady {path}", etag=f'"{path}"')


@pytest_twisted.ensureDeferred
async def test_runs_over_a_changing_site(nightly: NightlySite, tmp_path: Path) -> None:
    site = nightly
    first_night(site)
    run1 = await night(site, tmp_path)
    assert run1.outcome == "published"
    lastmod1 = published(run1.out)
    assert lastmod1[site.url("/a.html")] == "2022-11-15T12:45:26+00:00"
    assert lastmod1[site.url("/g.html")] == "2022-11-15T12:45:26+00:00"
    # No usable Last-Modified and seen for the first time: no evidence, no lastmod.
    for path in ("/b.html", "/c.html", "/f.html", "/h.html"):
        assert lastmod1[site.url(path)] is None, path
    assert run1.stats.get("sitemap/conditional/requests", 0) == 0

    # Night 2: a edited (new validators), b's text edited, c only in its volatile
    # parts, d gone, e new; f and g and h and the steady pages unchanged.
    site.home(*(f"/{name}.html" for name in "abcefgh"), *STEADY, etag='"h2"')
    site.page("/a.html", "a two", etag='"a2"', last_modified=LM2)
    site.page("/b.html", "b two")
    site.page("/c.html", 'c <span class="ts">11:30</span>', head="<script>var t = 2</script>")
    del site.pages["/d.html"]
    site.page("/e.html", "e")
    run2 = await night(site, tmp_path)
    assert run2.outcome == "published", run2.stats.get("sitemap/message")
    lastmod2 = published(run2.out)
    rep2 = report(run2)
    assert rep2["added"] == [site.url("/e.html")]
    assert rep2["removed"] == [site.url("/d.html")]
    assert lastmod2[site.url("/a.html")] == "2022-11-16T08:00:00+00:00"
    changed_b = lastmod2[site.url("/b.html")]
    assert changed_b is not None and changed_b.startswith(time.strftime("%Y-%m-%d", time.gmtime()))
    for path in ("/c.html", "/e.html", "/f.html", "/h.html"):
        assert lastmod2[site.url(path)] is None, path
    assert lastmod2[site.url("/g.html")] == lastmod1[site.url("/g.html")]
    # The home page's links changed too: its content evidence moves its lastmod.
    assert {c["url"] for c in rep2["lastmod_changes"]} == {
        site.url("/"),
        site.url("/a.html"),
        site.url("/b.html"),
    }
    # Conditional: every page the previous run saw with a validator.
    statuses = {r["path"]: r["status"] for r in site.requests()}
    conditional = [r for r in site.requests() if r["if_none_match"] or r["if_modified_since"]]
    assert {r["path"] for r in conditional} == {
        "/",
        "/a.html",
        "/f.html",
        "/g.html",
        "/h.html",
        *STEADY,
    }
    assert rep2["conditional_requests"] == len(conditional) == 4 + 1 + len(STEADY)
    not_modified = {p for p, s in statuses.items() if s == 304}
    assert not_modified == {"/h.html", *STEADY}
    assert rep2["not_modified"] == len(not_modified)

    # Night 3: c and f change for real; b does not (its lastmod stays byte for byte).
    site.page("/c.html", 'c three <span class="ts">12:00</span>', head="<script>var t = 3</script>")
    site.page("/f.html", "f three", volatile_last_modified=True, ignore_conditional=True)
    run3 = await night(site, tmp_path)
    lastmod3 = published(run3.out)
    assert lastmod3[site.url("/b.html")] == changed_b
    assert lastmod3[site.url("/c.html")] is not None
    assert lastmod3[site.url("/f.html")] is not None
    assert {c["url"] for c in report(run3)["lastmod_changes"]} == {
        site.url("/c.html"),
        site.url("/f.html"),
    }

    # Night 4: nothing changed: the same bytes, and no body the server could validate.
    before = snapshot(run3.out)
    run4 = await night(site, tmp_path)
    assert run4.outcome == "published"
    assert snapshot(run4.out) == before
    rep4 = report(run4)
    assert rep4["added"] == rep4["removed"] == rep4["lastmod_changes"] == []
    bodies = {
        r["path"] for r in site.requests() if r["status"] == 200 and r["path"] != "/robots.txt"
    }
    # Only what cannot be validated is downloaded: no validators (b, c, e), a
    # volatile Last-Modified (f), a server that ignores them (g).
    assert bodies == {"/b.html", "/c.html", "/e.html", "/f.html", "/g.html"}


@pytest_twisted.ensureDeferred
async def test_an_unchanged_night_touches_no_published_file(
    nightly: NightlySite, tmp_path: Path
) -> None:
    """The same bytes under the same names are left as they are: no rename, the
    modification times kept (rsync, a CDN, HTTP validators see no change); the
    summary and report.json say 0 written, 1 unchanged, and when the set was first
    published."""
    site = nightly
    site.home("/a.html", etag='"h"')
    site.page("/a.html", "a", etag='"a"')
    run1 = await night(site, tmp_path)
    assert run1.outcome == "published"
    assert "files: 1 written, 0 unchanged (2 URLs)" in run1.summary_text()
    rep1 = report(run1)  # the state's report.json is the last run's
    old = 1_000_000_000  # 2001: any rewrite shows
    for path in run1.out.iterdir():
        os.utime(path, (old, old))
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime) for p in run1.out.iterdir()}
    assert "changes.atom" in before and "sitemap_index.xml" in before

    run2 = await night(site, tmp_path)
    assert run2.outcome == "published"
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime) for p in run2.out.iterdir()}
    assert after == before
    summary = run2.summary_text()
    assert "files: 0 written, 1 unchanged (2 URLs)" in summary, summary
    rep2 = report(run2)
    assert (rep2["files_written"], rep2["files_unchanged"]) == (0, 1)
    assert "the set is unchanged since the last run: 1 file left untouched" in rep2["message"]
    assert rep2["published_since"] == rep1["published_since"] is not None
    assert rep2["set_unchanged"] and not rep1["set_unchanged"]

    # A change: the file is written again, and the set is new from this run on.
    site.page("/a.html", "a two", etag='"a2"')
    run3 = await night(site, tmp_path)
    rep3 = report(run3)
    assert (rep3["files_written"], rep3["files_unchanged"]) == (1, 0)
    assert not rep3["set_unchanged"] and "1 file written" in rep3["message"]
    assert rep3["published_since"] > rep1["published_since"]


@pytest_twisted.ensureDeferred
async def test_a_last_modified_stamped_a_moment_before_date_is_volatile(
    nightly: NightlySite, tmp_path: Path
) -> None:
    """A server that stamps Last-Modified from the clock, then Date, can cross a
    second boundary between the two: within 2 seconds it is still "now"; three
    seconds before Date it is a real date."""
    site = nightly
    site.home("/now.html", "/second.html", "/two.html", "/older.html")
    site.page("/now.html", "now", volatile_last_modified=0, ignore_conditional=True)
    site.page("/second.html", "one", volatile_last_modified=1, ignore_conditional=True)
    site.page("/two.html", "two", volatile_last_modified=2, ignore_conditional=True)
    site.page("/older.html", "older", volatile_last_modified=4, ignore_conditional=True)
    run = await night(site, tmp_path)
    lastmod = published(run.out)
    for path in ("/now.html", "/second.html", "/two.html"):
        assert lastmod[site.url(path)] is None, path
    assert lastmod[site.url("/older.html")] is not None
    assert run.stats["sitemap/lastmod/volatile"] == 3


@pytest_twisted.ensureDeferred
async def test_half_down_site_keeps_yesterdays_set(nightly: NightlySite, tmp_path: Path) -> None:
    site = nightly
    pages = site.numbered(10, etags=False)
    run1 = await night(site, tmp_path)
    assert run1.outcome == "published"
    good = snapshot(run1.out)
    ledger_before = (run1.state / "ledger.sqlite").read_bytes()
    for path in pages[:5]:
        site.pages[path]["status"] = 503
    # The back-off on 503 is real; keep it short here.
    run2 = await night(site, tmp_path, RETRY_TIMES=0, AUTOTHROTTLE_MAX_DELAY=0.1)
    assert run2.outcome == "refused"
    assert "5 of 11 fetched pages failed" in run2.stats["sitemap/message"]
    assert snapshot(run2.out) == good
    assert (run2.state / "ledger.sqlite").read_bytes() == ledger_before
    assert (run2.state / "ledger.failed.sqlite").exists()
    assert report(run2)["published"] is False
    forced = await night(
        site, tmp_path, RETRY_TIMES=0, AUTOTHROTTLE_MAX_DELAY=0.1, SITEMAP_FORCE=True
    )
    assert forced.outcome == "published"
    assert len(published(forced.out)) == 6


@pytest_twisted.ensureDeferred
async def test_dropping_too_many_urls_is_refused(nightly: NightlySite, tmp_path: Path) -> None:
    site = nightly
    pages = site.numbered(10, etags=False)
    assert (await night(site, tmp_path)).outcome == "published"
    site.home(*pages[:7])  # 3 of 11 published URLs gone: 27% > 20%
    run2 = await night(site, tmp_path)
    assert run2.outcome == "refused"
    assert "drops 3 of the 11 URLs published last time" in run2.stats["sitemap/message"]
    site.home(*pages[:9])  # 2 of 11 gone: 18%, under the bar
    assert (await night(site, tmp_path)).outcome == "published"


# -- the command line: interruption, resume, lock, config, progress -------------------


def slow_site(site: NightlySite, n: int = 30) -> list[str]:
    pages = site.numbered(n, etags=False)
    site.robots = "User-agent: *\nCrawl-delay: 0.2\n"
    site.save()
    return pages


cli = start_cli


def _as_earlier_version_saved(job: Path) -> None:
    # An earlier version pickled the seen-set, the URLs held by the depth cap, the
    # count of pages queued and the query variants of each path apart.
    path = job / "spider.state"
    state = pickle.loads(path.read_bytes())
    counters = state.pop("seen")
    variants = {k.split(" ", 1)[1]: n for k, n in counters.counters.items() if " " in k}
    state.update(seen=counters.seen, depth_capped=counters.held, trap_variants=variants)
    state["scheduled"] = counters.counters["pages"]
    path.write_bytes(pickle.dumps(state))


@pytest.mark.parametrize("earlier", [False, True], ids=["same-version", "earlier-version"])
def test_interrupted_run_resumes_and_finishes(
    nightly: NightlySite, tmp_path: Path, earlier: bool
) -> None:
    site = nightly
    pages = slow_site(site)
    out, state = tmp_path / "public", tmp_path / "state"
    args = ("crawl", site.url("/"), "--out", str(out), "--state", str(state), "--full")
    first = cli(*args)
    wait_for(lambda: len(site.requests()) >= 8)
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    assert "run again with --resume to continue" in err
    assert (state / "job").is_dir() and (state / "ledger.running.sqlite").exists()
    assert not (out / "sitemap_index.xml").exists()
    fetched_first = Counter(r["path"] for r in site.requests() if r["status"] == 200)

    if earlier:
        _as_earlier_version_saved(state / "job")
        # Links the resumed run finds put the converted seen-set and counters to use.
        for path in pages:
            site.page(path, f'page {path} <a href="/">home</a> <a href="/p0.html">first</a>')
        site.save()
    site.clear_log()
    second = cli(*args, "--resume")
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    fetched_second = Counter(r["path"] for r in site.requests() if r["status"] == 200)
    listed = published(out)
    assert set(listed) == {site.url(p) for p in ["/", *pages]}
    # It carried on: nothing fetched by the first run was fetched again, except what
    # was in flight when it stopped (one at a time, Crawl-delay).
    again = set(fetched_first) & set(fetched_second)
    assert len(again) <= 1, again
    assert set(fetched_first) | set(fetched_second) >= {"/", *pages}
    assert sum(fetched_second.values()) < len(pages)  # it did not start over
    assert not (state / "job").exists()  # discarded after a successful publish


def test_two_runs_at_once(nightly: NightlySite, tmp_path: Path) -> None:
    site = nightly
    slow_site(site, n=30)
    args = (
        "crawl",
        site.url("/"),
        "--out",
        str(tmp_path / "public"),
        "--state",
        str(tmp_path / "state"),
    )
    first = cli(*args)
    wait_for(lambda: len(site.requests()) >= 3)
    with site.gate():  # the first run waits on the site, however slowly the second starts
        second = cli(*args)
        _, err2 = second.communicate(timeout=60)
    assert second.returncode == 3
    lines = [line for line in err2.splitlines() if line.strip()]
    assert len(lines) == 1 and "is using the state directory" in lines[0]
    assert f"pid {first.pid}" in lines[0]
    _, err1 = first.communicate(timeout=120)
    assert first.returncode == 0, err1
    assert len(published(tmp_path / "public")) == 31


def test_config_file(nightly: NightlySite, tmp_path: Path) -> None:
    site = nightly
    pages = [f"/p{i}.html" for i in range(5)]
    site.home(*pages)
    for path in pages:
        site.page(path, path)
    site.save()
    config = tmp_path / "site.toml"
    config.write_text(
        f'url = "{site.url("/")}"\nout = "{tmp_path / "public"}"\nmax-urls-per-file = 2\n'
        'no_gzip = true\nexclude = ["p4"]\n[settings]\nAUTOTHROTTLE_START_DELAY = 0\n'
    )
    proc = cli("crawl", "--config", str(config), "--exclude", "p3")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    names = sorted(p.name for p in (tmp_path / "public").iterdir() if p.name != "changes.atom")
    assert len(names) == 3 and all(n.endswith(".xml") for n in names)  # 4 URLs, 2 per file
    assert "listed: 4" in err
    bad = tmp_path / "bad.toml"
    bad.write_text('url = "http://127.0.0.1/"\nmax-pagez = 3\n')
    proc = cli("crawl", "--config", str(bad))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert [line for line in err.splitlines() if line] == [
        f"sitemap-crawler: error: --config {bad}: unknown option 'max-pagez'; "
        "did you mean 'max-pages'?"
    ]


def test_progress_lines_when_not_a_terminal(nightly: NightlySite, tmp_path: Path) -> None:
    slow_site(nightly, n=10)
    proc = cli(
        "crawl",
        nightly.url("/"),
        "--out",
        str(tmp_path / "public"),
        "-s",
        "SITEMAP_PROGRESS_INTERVAL=0.3",
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    progress = [line for line in err.splitlines() if line.startswith("progress: ")]
    assert progress and "fetched" in progress[-1] and "pages/s" in progress[-1]
    assert "\r" not in err


def test_live_progress_on_a_terminal(nightly: NightlySite, tmp_path: Path) -> None:
    slow_site(nightly, n=10)
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crawler.cli",
            "crawl",
            nightly.url("/"),
            "--out",
            str(tmp_path / "public"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    assert proc.wait(timeout=60) == 0
    os.close(leader)
    text = output.decode()
    assert "\r\x1b[Kfetched " in text
    assert "progress: " not in text


def test_interrupted_run_publishes_only_when_forced(nightly: NightlySite, tmp_path: Path) -> None:
    site = nightly
    slow_site(site)
    out = tmp_path / "public"
    proc = cli("crawl", site.url("/"), "--out", str(out), "--force")
    wait_for(lambda: len(site.requests()) >= 6)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    listed = published(out)
    assert site.url("/") in listed and 3 <= len(listed) < 31
    assert not (tmp_path / "public.sitemap-state" / "job").exists()


def summary_figures(err: str) -> dict[str, Any]:
    """The figures of the summary a crawl printed on stderr."""
    figures: dict[str, Any] = {}
    for line in err.splitlines():
        if m := re.match(
            r"pages fetched: (\d+)(?: \((\d+) conditional, (\d+) not modified\))?", line
        ):
            figures["pages_fetched"] = int(m[1])
            figures["conditional"] = int(m[2] or 0)
        elif m := re.match(r"listed: (-?\d+)$", line):
            figures["listed"] = int(m[1])
        elif line.startswith("excluded: "):
            pairs = (part.rsplit(" ", 1) for part in line[len("excluded: ") :].split(", "))
            figures["excluded"] = {name: int(n) for name, n in pairs}
        elif line.startswith(("since the last run:", "the refused set")):
            figures["changes"] = line
    return figures


def test_summaries_say_what_an_interrupted_and_a_resumed_run_did(
    nightly: NightlySite, tmp_path: Path
) -> None:
    site = nightly
    pages = [f"/p{i}.html" for i in range(30)]
    site.home(*pages, etag='"home"')
    for path in pages:
        site.page(path, f"page {path}", etag=f'"{path}"')
    site.robots = "User-agent: *\nCrawl-delay: 0.2\n"
    site.save()
    out, state = tmp_path / "public", tmp_path / "state"
    args = ("crawl", site.url("/"), "--out", str(out), "--state", str(state), "--full")
    first = cli(*args, "-s", "AUTOTHROTTLE_START_DELAY=0")
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err

    # The second night, interrupted: every page is known, few were asked yet.
    site.clear_log()
    second = cli(*args)
    wait_for(lambda: len(site.requests()) >= 6)
    second.send_signal(signal.SIGINT)
    _, err = second.communicate(timeout=60)
    assert second.returncode == 130, err
    figures = summary_figures(err)
    report = json.loads((state / "report.json").read_text())
    # It says what it did: no "removed" for a set it never published, and only the
    # conditional requests it sent.
    assert "changes" not in figures, err
    assert report["added"] is None and report["removed"] is None
    assert 0 < figures["conditional"] <= figures["pages_fetched"] == report["pages_fetched"]
    assert figures["conditional"] == report["conditional_requests"]
    assert figures["listed"] == report["listed"]

    resumed = cli(*args, "--resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    figures = summary_figures(err)
    report = json.loads((state / "report.json").read_text())
    assert figures["listed"] == report["listed"] == 31
    assert figures.get("excluded", {}) == {k: v for k, v in report["excluded"].items() if v}
    assert figures["changes"] == "since the last run: 0 added, 0 removed, 0 lastmod changes"
