"""Stats only report: how a run ended reaches the command as a value.

The publisher hands its outcome (published or not, the report's path, the index's
public address, a first run or not) to the command through the run state
(crawler.core.outcome); the exit status and IndexNow decide on that. Here an extension
scrambles every stat the command once read, after the publisher is done: a real
crawl of a real site (tests/nightlyserver.py) must still exit 0 and tell a
stand-in IndexNow endpoint (tests/indexnowserver.py) exactly what changed, and print
the run's own summary.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Self

import pytest
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.statscollectors import StatsCollector

from settings import EXTENSIONS
from tests.conftest import ROOT
from tests.indexnowserver import Answer, IndexNowServer
from tests.test_changes import KEY, build
from tests.test_nightly import NightlySite

#: What the command and its summary used to read from the stats, each set to a lie.
LIES = {
    "sitemap/outcome": "failed",
    "sitemap/decision/listed": 12345,
    "sitemap/files_written": 12345,
    "sitemap/message": "a lie told by the stats",
    "sitemap/report_path": "/nonexistent/report.json",
    "sitemap/first_run": True,
    "sitemap/index_url": "http://elsewhere.invalid/sitemap_index.xml",
    "sitemap/index_path": "/nonexistent/sitemap_index.xml",
    "sitemap/fatal": "a lie told by the stats",
    "finish_reason": "shutdown",
}


class StatsLiar:
    """An extension that rewrites the stats once the engine stopped (after the
    publisher, before the command reads anything)."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        liar = cls(crawler.stats)
        crawler.signals.connect(liar.lie, signal=signals.engine_stopped)
        return liar

    def lie(self) -> None:
        for name, value in LIES.items():
            self.stats.set_value(name, value)


@pytest.fixture
def site(nightly: NightlySite) -> NightlySite:
    return nightly


def crawl(site: NightlySite, out: Path, endpoint: IndexNowServer) -> tuple[int, str]:
    proc = subprocess.run(
        [
            sys.executable, "-m", "crawler.cli", "crawl", site.url("/"), "--out", str(out),
            "--indexnow-key", KEY, "--indexnow-endpoint", endpoint.url("/indexnow"),
            "-s", "AUTOTHROTTLE_START_DELAY=0",
            "-s", "EXTENSIONS=" + json.dumps({**EXTENSIONS, f"{__name__}.StatsLiar": 1000}),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stderr


def test_the_exit_status_and_indexnow_never_read_the_stats(
    site: NightlySite, endpoint: IndexNowServer, tmp_path: Path
) -> None:
    out = tmp_path / "public"
    build(site, {"/a.html": "a"})
    # A first run: published (exit 0 although the stats say "failed"), nothing submitted.
    code, err = crawl(site, out, endpoint)
    assert code == 0, err
    assert "a lie told by the stats" not in err.strip().splitlines()[-1]
    assert endpoint.received == []
    # The summary printed is the run's own (crawler.core.summary), not the stats'.
    assert "12345" not in err and "/nonexistent/" not in err, err
    assert "listed: 2\n" in err and "files: 1 written" in err, err
    # The second: b added; IndexNow is told, at the real site's host, with the key
    # file checked there (the stats say: a first run, another host, no report).
    endpoint.script = [Answer(200)]
    build(site, {"/a.html": "a", "/b.html": "b"})
    code, err = crawl(site, out, endpoint)
    assert code == 0, err
    (post,) = endpoint.received
    assert post.json["host"] == f"127.0.0.1:{site.port}"
    assert site.url("/b.html") in post.json["urlList"]
    report = json.loads((out.parent / "public.sitemap-state" / "report.json").read_text())
    assert report["indexnow"]["ok"] is True


def test_a_failed_run_fails_whatever_the_stats_say(
    site: NightlySite, endpoint: IndexNowServer, tmp_path: Path
) -> None:
    """The stats' ``finish_reason`` and ``sitemap/outcome`` lie the other way too: a
    start URL that answers 404 lists nothing, and the exit status says so."""
    build(site, {})
    site.pages.pop("/")
    site.save()
    code, err = crawl(site, tmp_path / "public", endpoint)
    assert code == 3, err
    assert "nothing listed" in err.strip().splitlines()[-1]


def test_the_audit_never_reads_the_stats(
    site: NightlySite, endpoint: IndexNowServer, tmp_path: Path
) -> None:
    """The audit crawls, then audits only when the crawl did its job, and reports
    unless its own spider was interrupted or failed: all read from the run, never
    from the stats (which here say the crawl failed and the audit was shut down)."""
    build(site, {"/a.html": "a"})
    proc = subprocess.run(
        [
            sys.executable, "-m", "crawler.cli", "audit", site.url("/"),
            "--report", str(tmp_path / "audit"),
            "-s", "AUTOTHROTTLE_START_DELAY=0",
            "-s", "EXTENSIONS=" + json.dumps({**EXTENSIONS, f"{__name__}.StatsLiar": 1000}),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "coverage:" in proc.stdout
    assert (tmp_path / "audit" / "audit.json").is_file()
