"""Seeds beyond links (issue #19): several start URLs, a --urls file, the site's own
sitemaps; a time budget that still publishes; a page too large is no failure; links
after </html>; session identifiers in any spelling.

Each crawl runs against a scripted site on 127.0.0.1 (tests/seedserver.py); the
listed set, every decision and how each URL was found are asserted exactly.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from crawler.core.decisions import UNFETCHED_TIME
from crawler.core.urls import is_session_param, normalize_url
from crawler.crawl.traps import TrapDetector
from crawler.page.links import reopen_body
from tests.conftest import ROOT, run_crawl
from tests.seedserver import ScriptedSite
from tests.test_cli import assert_one_line_error

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>'
        + "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
        + "</urlset>"
    )


def index(*locs: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex {NS}>'
        + "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
        + "</sitemapindex>"
    )


@pytest.fixture
def site(tmp_path: Path) -> Iterator[ScriptedSite]:
    s = ScriptedSite(tmp_path)
    yield s
    s.stop()


def found(rows: dict[str, dict[str, Any]], site: ScriptedSite) -> dict[str, tuple[Any, ...]]:
    """path -> (decision, found_by, found_from, referrer), paths of the site only."""
    prefix = site.url("")
    return {
        url.removeprefix(prefix): (
            row["decision"],
            row["found_by"],
            row["found_from"] and row["found_from"].removeprefix(prefix),
            row["referrer"] and row["referrer"].removeprefix(prefix),
        )
        for url, row in rows.items()
    }


# -- the site's sitemaps as seeds ----------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_sitemap_seeds_list_live_orphans_and_never_dead_entries(
    site: ScriptedSite, tmp_path: Path
) -> None:
    u = site.url
    site.spec["robots"] = f"User-agent: *\nDisallow: /private\nSitemap: {u('/sitemap_index.xml')}\n"
    site.page("/", "/linked")
    site.page("/linked")
    for orphan in ("/orphan-1", "/orphan-2", "/orphan-3"):
        site.page(orphan)
    site.page("/moved-to")
    site.raw("/moved", "", status=301, headers={"Location": u("/moved-to")})
    site.page("/hidden", head='<meta name="robots" content="noindex">')
    site.page("/copy", head=f'<link rel="canonical" href="{u("/orphan-1")}">')
    site.page("/private/page")
    # The index robots.txt names, a sitemap it lists, and the usual /sitemap.xml.
    site.raw("/sitemap_index.xml", index(u("/sitemap-pages.xml.gz")), type="application/xml")
    pages = urlset(
        u("/linked"),
        u("/orphan-1"),
        u("/orphan-2"),
        u("/gone"),  # 404
        u("/moved"),  # a redirect: its target is judged, the seed is not listed
        u("/hidden"),  # noindex
        u("/copy"),  # canonicalised to /orphan-1
        u("/private/page"),  # robots.txt disallows it
        "http://localhost:1/elsewhere",  # another host: never fetched
    )
    site.raw("/sitemap-pages.xml.gz", pages, type="application/gzip", gzip=True)
    site.raw("/sitemap.xml", urlset(u("/orphan-3")), type="application/xml")
    site.save()
    result = await run_crawl(u("/"), tmp_path, SITEMAP_SEED_SITEMAPS=True)
    assert result.outcome == "published", result.stats.get("sitemap/message")
    assert result.listed() == {
        u(p) for p in ("/", "/linked", "/orphan-1", "/orphan-2", "/orphan-3", "/moved-to")
    }
    rows = found(result.ledger_rows(), site)
    pages_gz, plain = "/sitemap-pages.xml.gz", "/sitemap.xml"
    assert {p: r for p, r in rows.items() if p != "/linked"} == {
        "/": ("listed", "start", None, None),
        "/orphan-1": ("listed", "sitemap", pages_gz, None),
        "/orphan-2": ("listed", "sitemap", pages_gz, None),
        "/orphan-3": ("listed", "sitemap", plain, None),
        "/gone": ("status", "sitemap", pages_gz, None),
        "/moved": ("redirect", "sitemap", pages_gz, None),
        "/moved-to": ("listed", "redirect", None, "/moved"),
        "/hidden": ("noindex", "sitemap", pages_gz, None),
        "/copy": ("canonical", "sitemap", pages_gz, None),
        "/private/page": ("robots-disallowed", "sitemap", pages_gz, None),
        "http://localhost:1/elsewhere": ("off-host", "sitemap", pages_gz, None),
    }
    # Linked from the start page and listed in a sitemap: whichever came first, the
    # page that links to it is its referrer (it is no orphan).
    assert rows["/linked"][0] == "listed" and rows["/linked"][3] == "/"
    assert rows["/linked"][1] in ("link", "sitemap")
    stats = result.stats
    assert stats["sitemap/seeds/sitemaps_read"] == 3
    # The orphans (/moved-to was found by a redirect, not in a sitemap).
    assert stats["sitemap/seeds/listed_unlinked"] == 3
    report = json.loads((result.state / "report.json").read_text())
    assert report["seeds"]["listed_unlinked"] == stats["sitemap/seeds/listed_unlinked"]
    assert "seeds: 1 start URLs" in result.summary_text()
    # The other host was never contacted (the network watch of run_crawl).
    assert not [a for _, a in result.network if "localhost" in str(a)]


@pytest_twisted.ensureDeferred
async def test_given_sitemap_alone_seeds_without_the_usual_places(
    site: ScriptedSite, tmp_path: Path
) -> None:
    site.page("/")
    site.page("/orphan")
    site.page("/unlisted-orphan")
    site.raw("/maps/pages.xml", urlset(site.url("/orphan")), type="application/xml")
    site.raw("/sitemap.xml", urlset(site.url("/unlisted-orphan")), type="application/xml")
    site.save()
    result = await run_crawl(
        site.url("/"), tmp_path, SITEMAP_SEED_SITEMAP_URLS=[site.url("/maps/pages.xml")]
    )
    assert result.listed() == {site.url("/"), site.url("/orphan")}
    assert "/sitemap.xml" not in {r["path"] for r in site.requests()}


# -- start URLs and a URL file ---------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_several_start_urls_and_a_url_file(site: ScriptedSite, tmp_path: Path) -> None:
    u = site.url
    site.page("/", "/a")
    site.page("/a")
    site.page("/island", "/b")  # reached by no link from /
    site.page("/b")
    site.page("/from-file")
    site.page("/also-from-file")
    site.raw("/was-here", "", status=410)
    site.save()
    listing = tmp_path / "urls.txt"
    listing.write_text(
        "# pages no link reaches\n\n"
        f"{u('/from-file')}\n"
        "  /also-from-file  \n"
        "/was-here\n"
        "https://example.invalid/other-site\n"
    )
    result = await run_crawl(
        u("/"),
        tmp_path,
        SITEMAP_START_URLS=[u("/island")],
        SITEMAP_URL_FILE=str(listing),
        SITEMAP_EXCLUDE=["island", "from-file"],  # start URLs are exempt, seeds are not
    )
    assert result.outcome == "published"
    assert result.listed() == {u(p) for p in ("/", "/a", "/island", "/b")}
    rows = found(result.ledger_rows(), site)
    name = str(listing)
    assert rows == {
        "/": ("listed", "start", None, None),
        "/a": ("listed", "link", None, "/"),
        "/island": ("listed", "start", None, None),
        "/b": ("listed", "link", None, "/island"),
        "/from-file": ("excluded", "url-file", name, None),
        "/also-from-file": ("excluded", "url-file", name, None),
        "/was-here": ("status", "url-file", name, None),
        "https://example.invalid/other-site": ("off-host", "url-file", name, None),
    }
    assert result.stats["sitemap/seeds/start"] == 2
    assert result.stats["sitemap/seeds/url-file"] == 4


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_start_urls_of_two_sites_are_a_usage_error(tmp_path: Path) -> None:
    done = cli("crawl", "http://127.0.0.1:9/", "http://localhost:9/a", "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "sitemap-crawler: error: start URLs of different sites: http://localhost:9/a is not "
        "on http://127.0.0.1:9/'s host and port"
    ]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("http://127.0.0.1:9/ok\nmailto:someone@example.com\n", "line 2: not an http(s) URL"),
        ("ftp://127.0.0.1/x\n", "line 1: not an http(s) URL"),
        (None, "cannot read --urls"),  # no such file
    ],
)
def test_url_file_that_is_missing_or_has_a_line_that_is_no_url_is_a_usage_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    listing, out = tmp_path / "urls.txt", tmp_path / "o"
    if content is not None:
        listing.write_text(content)
    assert_one_line_error(
        cli("crawl", "http://127.0.0.1:9/", "--urls", str(listing), "--out", str(out)), 2, message
    )
    assert not out.exists()


# -- a time budget ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("45", 45)]
)
def test_durations(text: str, seconds: float) -> None:
    from crawler.commands.values import duration

    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "soon", "5x", "-3m"])
def test_bad_durations(text: str) -> None:
    import argparse

    from crawler.commands.values import duration

    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_bad_duration_on_the_command_line(tmp_path: Path) -> None:
    done = cli("crawl", "http://127.0.0.1:9/", "--max-time", "soon", "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "not a duration: 'soon'" in done.stderr


@pytest_twisted.ensureDeferred
async def test_time_budget_publishes_what_was_judged(site: ScriptedSite, tmp_path: Path) -> None:
    slow = [f"/slow-{i}" for i in range(40)]
    site.page("/", *slow)
    for path in slow:
        site.page(path, delay=0.5)
    site.save()
    result = await run_crawl(
        site.url("/"),
        tmp_path,
        CLOSESPIDER_TIMEOUT=2,
        CONCURRENT_REQUESTS=2,
        CONCURRENT_REQUESTS_PER_DOMAIN=2,
    )
    stats = result.stats
    assert result.outcome == "published", stats.get("sitemap/message")
    rows = result.ledger_rows()
    listed = {url for url, row in rows.items() if row["decision"] == "listed"}
    unfetched = {
        url
        for url, row in rows.items()
        if row["decision"] == "cap-reached" and row["reason"] == UNFETCHED_TIME
    }
    # Some slow pages were judged and published, the rest were found but not fetched.
    assert site.url("/") in listed and 1 < len(listed) < 41
    assert listed | unfetched == {site.url("/"), *(site.url(p) for p in slow)}
    assert stats["sitemap/budget/unfetched"] == len(unfetched)
    published = gzip.decompress(next((result.out).glob("sitemap-*.xml.gz")).read_bytes()).decode()
    assert published.count("<loc>") == len(listed)
    assert (
        f"stopped early: the time budget (--max-time) ran out; {len(unfetched)} URLs found "
        "but not fetched (cap-reached)"
    ) in result.summary_text()
    report = json.loads((result.state / "report.json").read_text())
    assert report["budget"] == {
        "stopped": "the time budget (--max-time) ran out",
        "unfetched": len(unfetched),
    }
    assert report["published"] is True


# -- too large is not down; links after </html> ------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_oversized_page_on_a_small_site_still_publishes(
    site: ScriptedSite, tmp_path: Path
) -> None:
    site.page("/", "/a", "/b", "/huge", tail='<p><a href="/after-html">after</a></p>')
    site.page("/a")
    site.page("/b")
    site.page("/after-html")
    site.spec["pages"]["/huge"] = {"size": 200_000}
    site.save()
    result = await run_crawl(site.url("/"), tmp_path, DOWNLOAD_MAXSIZE=100_000)
    assert result.outcome == "published", result.stats.get("sitemap/message")
    assert result.listed() == {site.url(p) for p in ("/", "/a", "/b", "/after-html")}
    assert result.decisions()[site.url("/huge")] == (
        "too-large",
        "over the download size cap (DOWNLOAD_MAXSIZE, 100000 bytes)",
    )
    assert result.stats["sitemap/too_large"] == 1
    assert "too large: 1 pages over the download size cap" in result.summary_text()


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<html><body><a href=/a>a</a></body></html>", None),  # as it is
        ("<html><body><a href=/a>a</a></body></html>\n  \n", None),
        (
            "<html><body><a href=/a>a</a></body></html><a href=/b>b</a>",
            "<html><body><a href=/a>a</a><a href=/b>b</a>",
        ),
        (
            "<html><body>x</BODY >\n</html>\n<p><a href=/c>c</a></p>",
            "<html><body>x\n\n<p><a href=/c>c</a></p>",
        ),
        # Between </body> and </html>: libxml2 reads it already.
        ("<html><body>x</body><a href=/d>d</a></html>", None),
        # Two documents in one (an include that closes the page again).
        (
            "<html><body>x</body></html><html><body><a href=/e>e</a></body></html>",
            "<html><body>x<html><body><a href=/e>e</a>",
        ),
        (
            "<HTML><BODY>x</BODY></HTML>\n<A HREF=/f>f</A>",
            "<HTML><BODY>x\n<A HREF=/f>f</A>",
        ),
    ],
)
def test_reopen_body(html: str, expected: str | None) -> None:
    assert reopen_body(html) == (html if expected is None else expected)


@pytest.mark.parametrize(
    "html",
    [
        "<html><body><a href=/a>a</a></body></html><a href=/b>b</a>",
        "<html><body><a href=/a>a</a></body><a href=/b>b</a></html>",
        "<html><body><a href=/a>a</a></body></html><html><body><a href=/b>b</a></body></html>",
    ],
)
def test_links_after_the_document_are_read(html: str) -> None:
    from scrapy.http import HtmlResponse

    from crawler.page.links import page_facts, parse_html

    response = HtmlResponse("http://h/", body=html.encode(), encoding="utf-8")
    facts = page_facts(response, ["sitemap-crawler"], parse_html(response))
    assert facts.hrefs == ["/a", "/b"]


# -- session identifiers in any spelling ---------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "ASPSESSIONIDQQGGQGPG",
        "aspsessionidabcdefgh",
        "ASPSESSIONID",
        "sessionid",
        "SessionID",
        "session_id",
        "session-id",
        "sessid",
        "PHPSESSID",
        "jsessionid",
        "sid",
        "CFID",
        "CFTOKEN",
        "zenid",
        "osCsid",
    ],
)
def test_session_identifiers_in_any_spelling(name: str) -> None:
    assert is_session_param(name)
    assert normalize_url(f"http://h/p?{name}=x1&page=2") == "http://h/p?page=2"
    assert normalize_url(f"http://h/p;{name}=x1") == "http://h/p"


@pytest.mark.parametrize("name", ["session", "sessions", "s", "id", "sort", "aspid", "sidebar"])
def test_other_parameters_are_no_session(name: str) -> None:
    assert not is_session_param(name)
    assert normalize_url(f"http://h/p?{name}=x") == f"http://h/p?{name}=x"


def test_unstripped_session_parameter_is_still_a_trap() -> None:
    traps = TrapDetector(max_repeats=2, max_segments=20, max_query_variants=100)
    url = normalize_url("http://h/p?ASPSESSIONIDQQ=1", strip_params=False)
    assert url is not None
    refusal = traps.shape(url)
    assert refusal is not None and refusal.reason == "session identifier in query (ASPSESSIONIDQQ)"


@pytest_twisted.ensureDeferred
async def test_session_variants_are_one_page(site: ScriptedSite, tmp_path: Path) -> None:
    variants = [f"/p?ASPSESSIONID{chr(65 + i % 26)}QGG{i}=tok{i}" for i in range(30)]
    site.page("/", *variants, "/only-with-session?sessionid=abc123", "/q?Session_ID=1&page=2")
    site.page("/p")
    site.page("/only-with-session")
    site.page("/q?page=2")
    site.save()
    result = await run_crawl(site.url("/"), tmp_path)
    assert result.outcome == "published"
    assert result.listed() == {site.url(p) for p in ("/", "/p", "/only-with-session", "/q?page=2")}
    assert not [d for d, _ in result.decisions().values() if d == "trap"]


@pytest_twisted.ensureDeferred
async def test_audit_of_a_seeded_crawl_still_finds_the_orphans(
    site: ScriptedSite, tmp_path: Path
) -> None:
    """The crawl judged the sitemap's entries, but an entry no page links to is an
    orphan all the same; one a page links to is not."""
    site.page("/", "/linked")
    site.page("/linked")
    site.page("/orphan")
    site.raw(
        "/sitemap.xml",
        urlset(site.url("/"), site.url("/linked"), site.url("/orphan")),
        type="application/xml",
    )
    site.save()
    result = await run_crawl(site.url("/"), tmp_path, SITEMAP_SEED_SITEMAPS=True)
    assert result.listed() == {site.url(p) for p in ("/", "/linked", "/orphan")}
    report = tmp_path / "audit"
    done = cli("audit", site.url("/"), "--state", str(result.state), "--report", str(report))
    assert done.returncode == 0, done.stderr[-2000:]
    classes = {
        u["url"]: u["class"] for u in json.loads((report / "audit.json").read_text())["urls"]
    }
    assert classes == {
        site.url("/"): "indexable",
        site.url("/linked"): "indexable",
        site.url("/orphan"): "orphan",
    }
