"""The audit against real servers: a test site whose existing sitemaps hold every
class and protocol fault in every format, plus a hostile set."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from crawler.audit.report import AuditReport, build_report, write_report
from crawler.audit.summary import failures, format_summary
from tests.conftest import ROOT, MockServer, NetworkWatch, cli, crawl_settings, run_crawl, scrapy

# path -> (class, reason fragment, found by the crawl)
EXPECTED = {
    "/": ("indexable", "", True),
    "/about.html": ("indexable", "", True),
    "/old-about": ("redirect", "301 -> {base}/about.html", True),
    "/gone-404": ("4xx", "HTTP 404", True),
    "/err-500": ("5xx", "HTTP 500", True),
    "/noindex/meta.html": ("noindex", "noindex (meta robots)", True),
    "/canon/dup.html?ref=1": ("canonicalised", "canonical -> {base}/canon/self.html", True),
    "/private/secret.html": ("robots-blocked", "Forbidden by robots.txt", True),
    "{other}/elsewhere.html": ("off-host", "another host", False),
    "/orphan-live.html": ("orphan", "not linked from the crawled pages", False),
    "/orphan-dead.html": ("4xx", "HTTP 404", False),
    "/files/doc.pdf": ("not-html", "application/pdf", True),
    "/relative/one.html": ("indexable", "", True),
    "/relative/two.html": ("indexable", "", True),
    "/relative/three.html": ("indexable", "", True),
    "/relative/four.html": ("indexable", "", True),
    "/dates/rfc1123.html": ("indexable", "", True),
    "/dates/rfc850.html": ("indexable", "", True),
    "/dates/asctime.html": ("indexable", "", True),
    "/base/page.html": ("indexable", "", True),
    "/en/page.html": ("indexable", "", True),
    "/de/page.html": ("indexable", "", True),
    "/map-target.html": ("indexable", "", True),
    "/cart": ("indexable", "", True),
    "/products?id=1&color=red": ("indexable", "", True),
    "/~user/": ("indexable", "", True),
    "/refresh5.html": ("indexable", "", True),
}
# (code, sitemap path) pairs the report must contain.
PROBLEMS = {
    ("relative-loc", "/sitemap-pages.xml.gz"),
    ("invalid-lastmod", "/sitemap-pages.xml.gz"),
    ("lastmod-no-timezone", "/sitemap-pages.xml.gz"),
    ("invalid-changefreq", "/sitemap-pages.xml.gz"),
    ("invalid-priority", "/sitemap-pages.xml.gz"),
    ("lastmod-future", "/sitemap-pages.xml.gz"),
    ("lastmod-stale", "/sitemap-pages.xml.gz"),
    ("no-namespace", "/sitemap-nons.xml"),
    ("lastmod-uniform", "/sitemap-uniform.xml"),
    ("index-lists-index", "/sitemap-nested.xml"),
    ("index-lists-index", "/sitemap-cycle.xml"),
    ("index-cycle", "/sitemap-cycle.xml"),
    ("loc-out-of-scope", "/sub/sitemap-sub.xml"),
    ("sitemap-out-of-scope", "{other}/sitemap-offhost.xml"),
}


def fill(text: str, site: MockServer) -> str:
    return text.replace("{base}", site.base).replace("{other}", f"http://localhost:{site.port}")


async def audit(
    site: MockServer, tmp_path: Path, *sitemaps: str, state: Path | None = None, **overrides: Any
) -> tuple[AuditReport, dict[str, Any]]:
    """Crawl (unless *state*) and audit in this process, as the CLI does."""
    from scrapy.crawler import AsyncCrawlerRunner, Crawler
    from scrapy.settings import Settings

    from crawler.audit.spider import AuditSpider

    if state is None:
        crawled = await run_crawl(
            site.url("/"), tmp_path / "crawl", SITEMAP_PUBLISH=False, **overrides
        )
        assert crawled.outcome == "crawled"
        state = crawled.state
    settings = Settings()
    settings.setmodule("settings", priority="project")
    settings.setdict(
        crawl_settings(
            tmp_path / "audit",
            SITEMAP_AUDIT_LEDGER=str(state / "ledger.sqlite"),
            SITEMAP_AUDIT_STORE=str(tmp_path / "audit.sqlite"),
            SITEMAP_AUDIT_SITEMAPS=list(sitemaps),
            **overrides,
        ),
        priority="cmdline",
    )
    runner = AsyncCrawlerRunner()
    crawler = Crawler(AuditSpider, settings)
    with NetworkWatch() as network:
        await Deferred.fromFuture(asyncio.ensure_future(runner.crawl(crawler, url=site.url("/"))))
        seen = list(network)
    for _, (host, port) in seen:
        assert (host, int(port)) == ("127.0.0.1", site.port)
    report = build_report(site.url("/"), state / "ledger.sqlite", tmp_path / "audit.sqlite")
    return report, crawler.stats.get_stats()


@pytest.fixture(scope="module")
def audited(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> AuditReport:
    site.clear_log()
    tmp = tmp_path_factory.mktemp("audit")
    report, _ = pytest_twisted.blockon(Deferred.fromCoroutine(audit(site, tmp)))
    return report


def by_url(report: AuditReport) -> dict[str, dict[str, Any]]:
    out = {}
    for u in report.urls:
        assert u["url"] not in out, f"{u['url']} has two classes"
        out[u["url"]] = u
    return out


@pytest.mark.parametrize(("path", "expected"), list(EXPECTED.items()))
def test_listed_url_class(
    audited: AuditReport, site: MockServer, path: str, expected: tuple[str, str, bool]
) -> None:
    cls, reason, found = expected
    url = fill(path if "{" in path else "{base}" + path, site)
    got = by_url(audited)[url]
    assert (got["class"], got["found_by_crawl"]) == (cls, found)
    assert fill(reason, site) in got["reason"]


def test_every_listed_url_is_classified_once(audited: AuditReport, site: MockServer) -> None:
    listed = {u["url"] for u in audited.urls if u["class"] not in ("missing", "invalid-loc")}
    expected = {fill(p if "{" in p else "{base}" + p, site) for p in EXPECTED}
    assert listed == expected


def test_invalid_locs(audited: AuditReport) -> None:
    invalid = sorted(u["url"] for u in audited.urls if u["class"] == "invalid-loc")
    assert "relative/page.html" in invalid


def test_missing_pages(audited: AuditReport, site: MockServer) -> None:
    missing = {u["url"] for u in audited.urls if u["class"] == "missing"}
    assert site.url("/canon/self.html") in missing
    assert site.url("/nofollow/meta.html") in missing
    assert site.url("/about.html") not in missing
    assert audited.indexable_found == audited.covered + len(missing)
    assert audited.coverage == pytest.approx(100 * audited.covered / audited.indexable_found)


def test_duplicate_listing_flag(audited: AuditReport, site: MockServer) -> None:
    flagged = {u["url"] for u in audited.urls if "duplicate-listing" in u["flags"]}
    assert flagged == {site.url("/about.html")}


def test_protocol_problems(audited: AuditReport, site: MockServer) -> None:
    found = {(p["code"], p["sitemap"]) for p in audited.problems}
    for code, sitemap in PROBLEMS:
        url = fill(sitemap if "{" in sitemap else "{base}" + sitemap, site)
        assert (code, url) in found, (code, url)


# The entry faults seeded in /sitemap-pages.xml.gz: code -> the loc as written.
ENTRY_FAULTS = {
    "relative-loc": "relative/page.html",
    "invalid-lastmod": "{base}/relative/one.html",
    "lastmod-no-timezone": "{base}/relative/two.html",
    "invalid-changefreq": "{base}/relative/three.html",
    "invalid-priority": "{base}/relative/four.html",
    "lastmod-future": "{base}/dates/rfc1123.html",
}


def test_entry_problems_name_their_url(audited: AuditReport, site: MockServer) -> None:
    """Issue 17: a problem about one entry names its URL (a relative loc resolved
    against the sitemap's address), its file and the line of its <loc>."""
    from tests.mockserver import SITEMAPS

    sitemap = site.url("/sitemap-pages.xml.gz")
    lines = SITEMAPS["/sitemap-pages.xml.gz"][1].splitlines()
    for code, written in ENTRY_FAULTS.items():
        line = next(n for n, text in enumerate(lines, 1) if f"<loc>{written}</loc>" in text)
        url = fill(written, site)
        if "://" not in url:
            url = site.url("/" + url)  # resolved against the sitemap's directory, /
        found = [p for p in audited.problems if p["code"] == code and p["sitemap"] == sitemap]
        assert [(p["url"], p["line"]) for p in found] == [(url, line)], code
    # A file's problem names no URL.
    nons = [p for p in audited.problems if p["code"] == "no-namespace"]
    assert nons and all(p["url"] is None for p in nons)


def test_formats_read(audited: AuditReport, site: MockServer) -> None:
    kinds = {s["url"]: (s["kind"], s["compressed_layers"]) for s in audited.sitemaps if s["kind"]}
    assert kinds[site.url("/sitemap-pages.xml.gz")] == ("urlset", 1)
    assert kinds[site.url("/sitemap-double.xml.gz")] == ("urlset", 2)
    assert kinds[site.url("/sitemap-text.txt")][0] == "text"
    assert kinds[site.url("/feed.rss")][0] == "rss"
    assert kinds[site.url("/feed.atom")][0] == "atom"
    assert kinds[site.url("/sitemap_index.xml")][0] == "sitemapindex"
    media = next(s for s in audited.sitemaps if s["url"] == site.url("/sitemap-media.xml"))
    assert (media["hreflang_alternates"], media["images"]) == (1, 2)


def test_never_fetched_off_host(audited: AuditReport, site: MockServer) -> None:
    assert {r["host"] for r in site.requests()} == {f"127.0.0.1:{site.port}"}
    fetched = {r["path"] for r in site.requests()}
    assert "/orphan-live.html" in fetched and "/orphan-dead.html" in fetched
    assert "/private/secret.html" not in fetched


def test_report_files(audited: AuditReport, tmp_path: Path) -> None:
    written = write_report(audited, tmp_path)
    data = json.loads((tmp_path / "audit.json").read_text())
    assert data["schema"] == "sitemap-crawler/audit/1"
    assert data["counts"]["orphan"] == 1
    assert len(data["urls"]) == len(audited.urls)
    with (tmp_path / "redirect.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["class"] for r in rows] == ["redirect"]
    assert (tmp_path / "problems.csv").exists()
    # json, index.html, problems, 16 classes, 2 flags
    assert written[:2] == [tmp_path / "audit.json", tmp_path / "index.html"]
    assert len(written) == 3 + 16 + 2


def test_dead_orphans_carry_their_flag(
    audited: AuditReport, site: MockServer, tmp_path: Path
) -> None:
    """Issue 24: the dead orphans counted are the URLs that carry the flag, in
    audit.json, in dead-orphan.csv, in the summary and for --fail-on."""
    flagged = [u["url"] for u in audited.urls if "dead-orphan" in u["flags"]]
    assert flagged == [site.url("/orphan-dead.html")]
    assert audited.counts["dead-orphan"] == len(flagged)
    write_report(audited, tmp_path)
    data = json.loads((tmp_path / "audit.json").read_text())
    assert [u["url"] for u in data["urls"] if "dead-orphan" in u["flags"]] == flagged
    assert data["counts"]["dead-orphan"] == len(flagged)
    with (tmp_path / "dead-orphan.csv").open() as f:
        assert [r["url"] for r in csv.DictReader(f)] == flagged
    summary = format_summary(audited)
    assert "dead-orphan             1  (listed, not found by the crawl" in summary
    assert f"    {flagged[0]} (HTTP 404" in summary
    assert failures(audited, None, ["dead-orphan"]) == ["1 dead-orphan"]


def test_counts_agree(audited: AuditReport, tmp_path: Path) -> None:
    """Issue 24: the card of listed indexable pages is the indexable class's count,
    and the sitemap files the page counts are the files the command line counts (the
    usual places that answered 404 are no files)."""
    assert audited.counts["indexable"] == audited.covered
    read = [s for s in audited.sitemaps if s["status"] in (200, None) and s["fetched"]]
    probes = [s for s in audited.sitemaps if s["status"] == 404]
    assert probes and audited.sitemaps_read == len(read) < len(audited.sitemaps)
    assert f"sitemaps read: {len(read)} " in format_summary(audited)
    write_report(audited, tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert f'Sitemap files: <span data-figure="sitemaps_read" data-value="{len(read)}">' in page


def test_failure_bars(audited: AuditReport) -> None:
    assert failures(audited, None, []) == []
    assert failures(audited, 100.0, []) != []
    assert failures(audited, 1.0, []) == []
    assert failures(audited, None, ["redirect"]) == ["1 redirect"]
    assert failures(audited, None, ["dead-orphan"]) == ["1 dead-orphan"]
    assert failures(audited, None, ["protocol"])


# -- hostile sitemaps -------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[AuditReport, Path]:
    """The audit of four hostile sitemaps, and of the gzip bomb alone under tracemalloc
    (its peak, in bytes, is the Path): memory is measured where it is at stake, and
    the 60,000 entries are read at full speed (tracing every allocation costs several
    times the audit)."""
    tmp = tmp_path_factory.mktemp("hostile")
    secret = tmp / "secret.txt"
    secret.write_text("TOP-SECRET-7f3a9")
    crawled = pytest_twisted.blockon(
        Deferred.fromCoroutine(run_crawl(site.url("/"), tmp / "crawl", SITEMAP_PUBLISH=False))
    )

    def audited(name: str, *sitemaps: str) -> AuditReport:
        report, _ = pytest_twisted.blockon(
            Deferred.fromCoroutine(
                audit(
                    site,
                    tmp / name,
                    *(site.url(f"/hostile/{path}") for path in sitemaps),
                    state=crawled.state,
                    SITEMAP_AUDIT_MAX_BYTES=10 * 1024 * 1024,
                )
            )
        )
        return report

    report = audited("files", f"xxe.xml?{secret}", "laughs.xml", "truncated.xml", "big.xml")
    tracemalloc.start()
    bombed = audited("bomb", "bomb.xml.gz")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    report.problems.extend(bombed.problems)
    return report, Path(str(peak))


def _problems_of(report: AuditReport, site: MockServer, path: str) -> set[str]:
    return {p["code"] for p in report.problems if p["sitemap"].startswith(site.url(path))}


def test_xxe_never_reads_the_file(hostile: tuple[AuditReport, Path], site: MockServer) -> None:
    report, _ = hostile
    assert "TOP-SECRET-7f3a9" not in json.dumps(report.to_json())
    assert "entity-declaration" in _problems_of(report, site, "/hostile/xxe.xml")


def test_billion_laughs_reported(hostile: tuple[AuditReport, Path], site: MockServer) -> None:
    report, _ = hostile
    assert "entity-declaration" in _problems_of(report, site, "/hostile/laughs.xml")
    assert "lol" * 100 not in json.dumps(report.to_json())


def test_gzip_bomb_stops_at_the_cap(hostile: tuple[AuditReport, Path], site: MockServer) -> None:
    report, peak = hostile
    codes = _problems_of(report, site, "/hostile/bomb.xml.gz")
    assert codes & {"gzip-bomb", "too-large"}
    # 200 MiB of zeros behind the bomb; the audit kept well under that.
    assert int(str(peak)) < 120 * 1024 * 1024


def test_truncated_file_read_as_far_as_valid(
    hostile: tuple[AuditReport, Path], site: MockServer
) -> None:
    report, _ = hostile
    assert "truncated" in _problems_of(report, site, "/hostile/truncated.xml")
    sm = next(s for s in report.sitemaps if s["url"] == site.url("/hostile/truncated.xml"))
    assert sm["entries"] == 2 and not sm["complete"]


def test_60000_url_file(hostile: tuple[AuditReport, Path], site: MockServer) -> None:
    report, _ = hostile
    assert "too-many-urls" in _problems_of(report, site, "/hostile/big.xml")
    sm = next(s for s in report.sitemaps if s["url"] == site.url("/hostile/big.xml"))
    assert sm["entries"] == 60_000
    # Issue 13: only the protocol's first 50,000 entries are audited; the rest are
    # counted as not audited. They lie outside /hostile/, the file's directory:
    # reported, never fetched.
    assert sm["not_audited"] == 10_000
    big = [u for u in report.urls if u["url"].startswith(site.url("/big/"))]
    assert len(big) == 50_000
    assert {u["class"] for u in big} == {"off-host"}
    assert {u["reason"] for u in big} == {
        f"outside the sitemap file's directory {site.url('/hostile/')}"
    }
    assert not any(r["path"].startswith("/big/") for r in site.requests())


# -- the command line ------------------------------------------------------------------------


def test_audit_cli_with_report_and_bars(site: MockServer, tmp_path: Path) -> None:
    proc = cli(
        *("audit", site.url("/"), "--report", str(tmp_path / "r")),
        *("--fail-on", "dead-orphan,redirect", "-s", "AUTOTHROTTLE_START_DELAY=0"),
        timeout=300,
    )
    assert proc.returncode == 5, proc.stderr
    assert "coverage:" in proc.stdout
    assert "orphan" in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == ["sitemap-crawler: audit failed: 1 dead-orphan; 1 redirect"]
    assert json.loads((tmp_path / "r" / "audit.json").read_text())["counts"]["redirect"] == 1


def test_audit_cli_from_state_passes_without_bars(site: MockServer, tmp_path: Path) -> None:
    crawl = cli("crawl", site.url("/"), "--out", str(tmp_path / "pub"), timeout=300)
    assert crawl.returncode == 0, crawl.stderr
    # Our own published files, read as local files: they cover every indexable page.
    ours = [str(p) for p in sorted((tmp_path / "pub").glob("sitemap-*.xml.gz"))]
    assert ours
    proc = cli(
        *("audit", site.url("/"), "--state", str(tmp_path / "pub.sitemap-state")),
        *(a for p in ours for a in ("--sitemap", p)),
        *("--fail-under", "100", "--fail-on", "missing"),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "coverage: 100.0%" in proc.stdout


def test_scrapy_audit_from_the_project_root(site: MockServer, tmp_path: Path) -> None:
    # crawler/commands is Scrapy's COMMANDS_MODULE: the same command, Scrapy's options.
    proc = scrapy(
        *("audit", site.url("/"), "--report", str(tmp_path / "r"), "--fail-on", "redirect"),
        *("-s", "AUTOTHROTTLE_START_DELAY=0", "-L", "WARNING"),
    )
    assert proc.returncode == 5, proc.stderr
    assert "coverage:" in proc.stdout
    assert "sitemap-crawler: audit failed: 1 redirect" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "r" / "audit.json").read_text())["counts"]["redirect"] == 1


def test_scrapy_lists_the_projects_commands() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy"], cwd=ROOT, capture_output=True, text=True, env=env
    )
    commands = {line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ")}
    assert {"audit", "worker", "crawl"} <= commands
    worker = subprocess.run(
        [sys.executable, "-m", "scrapy", "worker", "--redis", "redis://127.0.0.1:1/0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert worker.returncode == 3, worker.stderr
    assert "cannot reach Redis at redis://127.0.0.1:1/0" in worker.stderr
    assert "Traceback" not in worker.stderr
