"""End-to-end: crawl the test site over real HTTP and check every decision.

One crawl of ``tests/mockserver.py`` (robots.txt with rules), shared by the module;
each test asserts one aspect of it: the exact listed set, each URL's decision and
reason, what was (not) fetched, lastmod, aliases, stats, and the published files.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.utils.sitemap import Sitemap
from twisted.internet.defer import Deferred

from tests.conftest import CrawlResult, MockServer, run_crawl
from tests.xsd import validate_index, validate_urlset

LISTED = {
    "/",
    "/about.html",
    "/base/page.html",
    "/base/sub/target.html",
    "/caf%C3%A9.html",
    "/canon/body.html",
    "/canon/conflict.html",
    "/canon/file.html",
    "/canon/relative.html",
    "/canon/self.html",
    "/cart",
    "/dates/asctime.html",
    "/dates/future.html",
    "/dates/malformed.html",
    "/dates/meta.html",
    "/dates/rfc1123.html",
    "/dates/rfc850.html",
    "/de/page.html",
    "/dup/",
    "/en/page.html",
    "/final.html",
    "/map-target.html",
    "/new.html",
    "/nofollow/header.html",
    "/nofollow/meta.html",
    "/noindex/otherbot.html",
    "/private/open.html",
    "/products?id=1&color=red",
    "/refresh-target.html",
    "/refresh5.html",
    "/relative/four.html",
    "/relative/one.html",
    "/relative/three.html",
    "/relative/two.html",
    "/search?q=1",
    "/search?q=2",
    "/search?q=3",
    "/search?q=4",
    "/search?q=5",
    # Linked only as /shop?sessionid=abc123: a session identifier names the visitor,
    # not the page (issue #19; it used to make a trap of the page).
    "/shop",
    "/trap/",
    "/trap/x/",
    "/trap/x/x/",
    "/~user/",
}

# path -> (decision, text the reason must contain); {base} and {other} as in the server.
DECISIONS = [
    ("/blocked-for-us/page.html", "robots-disallowed", "Forbidden by robots.txt"),
    ("/private/secret.html", "robots-disallowed", "Forbidden by robots.txt"),
    ("/old-about", "redirect", "301 -> {base}/about.html"),
    ("/r302", "redirect", "302 -> {base}/new.html"),
    ("/r307", "redirect", "307 -> {base}/r308 (chain)"),
    ("/r308", "redirect", "308 -> {base}/final.html"),
    ("/loop1", "redirect", "301 -> {base}/loop2 (loop)"),
    ("/loop2", "redirect", "301 -> {base}/loop1 (loop)"),
    ("/to-offhost", "redirect", "302 -> {other}/landing.html"),
    ("/refresh0.html", "redirect", "meta refresh -> {base}/about.html"),
    ("/canon/dup.html?ref=1", "canonical", "canonical -> {base}/canon/self.html"),
    ("/canon/header.html", "canonical", "canonical -> {base}/canon/self.html"),
    ("/canon/chain-a.html", "canonical", "canonical -> {base}/canon/chain-b.html (chain)"),
    ("/canon/chain-b.html", "canonical", "canonical -> {base}/canon/self.html"),
    ("/canon/loop-a.html", "canonical", "canonical -> {base}/canon/loop-b.html (loop)"),
    ("/canon/loop-b.html", "canonical", "canonical -> {base}/canon/loop-a.html (loop)"),
    ("/canon/offhost.html", "canonical", "canonical -> {other}/canon/offhost.html (another host)"),
    (
        "/public-canonical.html",
        "canonical",
        "canonical -> https://www.example.com/docs/public-canonical.html (another host)",
    ),
    ("/noindex/meta.html", "noindex", "noindex (meta robots)"),
    ("/noindex/googlebot.html", "noindex", "noindex (meta googlebot)"),
    ("/noindex/header.html", "noindex", "noindex (X-Robots-Tag)"),
    ("/gone-404", "status", "HTTP 404"),
    ("/gone-410", "status", "HTTP 410"),
    ("/err-500", "status", "HTTP 500"),
    ("/files/doc.pdf", "non-html", "application/pdf"),
    ("/files/data.json", "non-html", "application/json"),
    ("/trap/x/x/x/", "trap", "path segment 'x' repeated 3 times"),
    ("/search?q=6", "trap", "more than 5 query variants of /search"),
    ("/long/" + "x" * 2100, "too-long", "longer than 2047 characters"),
    ("/dup/index.html", "duplicate", "same content as {base}/dup/"),
    ("/dup/copy.html", "duplicate", "same content as {base}/dup/"),
]
OFF_HOST = {
    "{other}/elsewhere.html",
    "{other}/landing.html",
    "{other}/canon/offhost.html",
    "http://xn--bcher-kva.example/",
    "https://www.example.com/docs/public-canonical.html",
}
NEVER_FETCHED = {
    "/private/secret.html",
    "/blocked-for-us/page.html",
    "/nofollow/hidden1.html",
    "/nofollow/hidden2.html",
    "/nofollow/hidden3.html",
    "/search?q=7",
    "/trap/x/x/x/",
    "/long/" + "x" * 2100,
}


def fill(text: str, site: MockServer) -> str:
    return text.replace("{base}", site.base).replace("{other}", f"http://localhost:{site.port}")


@pytest.fixture(scope="module")
def result(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> CrawlResult:
    site.clear_log()
    tmp = tmp_path_factory.mktemp("crawl")
    coro = run_crawl(site.url("/"), tmp, SITEMAP_TRAP_MAX_QUERY_VARIANTS=5)
    return pytest_twisted.blockon(Deferred.fromCoroutine(coro))


def test_published(result: CrawlResult) -> None:
    assert result.outcome == "published", result.stats.get("sitemap/message")


def test_listed_set_is_exact(result: CrawlResult, site: MockServer) -> None:
    assert result.listed() == {site.url(p) for p in LISTED}


@pytest.mark.parametrize(("path", "decision", "reason"), DECISIONS)
def test_decision_and_reason(
    result: CrawlResult, site: MockServer, path: str, decision: str, reason: str
) -> None:
    decisions = result.decisions()
    url = site.url(path)
    assert url in decisions, f"{url} has no decision"
    assert decisions[url][0] == decision
    assert fill(reason, site) in decisions[url][1]


def test_off_host_urls_recorded_never_fetched(result: CrawlResult, site: MockServer) -> None:
    decisions = result.decisions()
    off = {url for url, (decision, _) in decisions.items() if decision == "off-host"}
    assert off == {fill(u, site) for u in OFF_HOST}
    assert {r["host"] for r in site.requests()} == {f"127.0.0.1:{site.port}"}


def test_talks_to_the_test_server_only(result: CrawlResult, site: MockServer) -> None:
    assert result.network, "the network watch saw nothing: it is not working"
    for kind, (host, port) in result.network:
        assert (host, int(port)) == ("127.0.0.1", site.port), (kind, host, port)


def test_never_fetched(result: CrawlResult, site: MockServer) -> None:
    fetched = {r["path"] for r in site.requests()}
    for path in NEVER_FETCHED:
        assert path not in fetched


def test_every_page_fetched_once(result: CrawlResult, site: MockServer) -> None:
    counts = Counter(r["path"] for r in site.requests())
    # /err-500 is retried once (RETRY_TIMES = 1 in the tests); nothing else repeats.
    assert {p: n for p, n in counts.items() if n > 1} == {"/err-500": 2}


def test_every_discovered_url_has_a_final_decision(result: CrawlResult) -> None:
    decisions = result.decisions()
    assert "queued" not in {d for d, _ in decisions.values()}
    assert len(decisions) == result.stats["sitemap/discovered"]


def test_stats_count_the_ledger(result: CrawlResult) -> None:
    counts = Counter(d for d, _ in result.decisions().values())
    stats = {
        k.removeprefix("sitemap/decision/"): v
        for k, v in result.stats.items()
        if k.startswith("sitemap/decision/")
    }
    assert stats == dict(counts)
    assert result.stats["sitemap/urls_written"] == len(LISTED)


@pytest.mark.parametrize(
    ("path", "lastmod"),
    [
        ("/about.html", "1994-11-06T08:49:37+00:00"),
        ("/dates/rfc1123.html", "2022-11-15T12:45:26+00:00"),
        ("/dates/rfc850.html", "2022-11-15T12:45:26+00:00"),
        ("/dates/asctime.html", "2022-11-15T12:45:26+00:00"),
        ("/dates/future.html", "2023-01-02T03:04:05+00:00"),  # clamped to Date
        ("/dates/meta.html", "2021-05-06T05:08:09+00:00"),  # article:modified_time
        ("/dates/malformed.html", None),
        ("/final.html", None),
    ],
)
def test_lastmod(result: CrawlResult, site: MockServer, path: str, lastmod: str | None) -> None:
    assert result.ledger_rows()[site.url(path)]["lastmod"] == lastmod


def test_malformed_last_modified_is_a_warning(result: CrawlResult, site: MockServer) -> None:
    row = result.ledger_rows()[site.url("/dates/malformed.html")]
    assert "ignored malformed Last-Modified 'yesterday at noon'" in json.loads(row["warnings"])


@pytest.mark.parametrize(
    ("path", "warning"),
    [
        ("/canon/file.html", "ignored canonical 'file:///usr/share/doc/python3/html/x.html'"),
        ("/canon/conflict.html", "ignored conflicting canonicals"),
    ],
)
def test_invalid_canonicals_ignored_with_warning(
    result: CrawlResult, site: MockServer, path: str, warning: str
) -> None:
    row = result.ledger_rows()[site.url(path)]
    assert row["decision"] == "listed"
    assert any(w.startswith(warning) for w in json.loads(row["warnings"]))


def test_aliases_recorded(result: CrawlResult, site: MockServer) -> None:
    from crawler.ledger.ledger import Ledger

    ledger = Ledger(result.state / "ledger.sqlite")
    try:
        aliases = ledger.aliases()
        meta_sitemaps = ledger.get_meta("robots_sitemaps")
    finally:
        ledger.close()
    assert aliases[site.url("/about.html?utm_source=news&utm_medium=mail")] == site.url(
        "/about.html"
    )
    assert aliases[site.url("/cart;jsessionid=ABC123")] == site.url("/cart")
    assert aliases[site.url("/shop?sessionid=abc123")] == site.url("/shop")
    assert aliases[site.url("/café.html")] == site.url("/caf%C3%A9.html")
    assert meta_sitemaps == [site.url("/sitemap_index.xml")]


def _files(result: CrawlResult) -> tuple[bytes, dict[str, bytes]]:
    index = (result.out / "sitemap_index.xml").read_bytes()
    children = {}
    for loc in Sitemap(index):
        name = loc["loc"].rsplit("/", 1)[1]
        children[name] = gzip.decompress((result.out / name).read_bytes())
    return index, children


def test_published_files_validate_and_read_back(result: CrawlResult, site: MockServer) -> None:
    index, children = _files(result)
    validate_index(index)
    assert len(children) == 1
    urls = []
    for body in children.values():
        validate_urlset(body)
        urls.extend(entry["loc"] for entry in Sitemap(body))
    assert urls == sorted(site.url(p) for p in LISTED)
    # Issue 15: the delta feed (changes.atom) is published beside the index.
    assert sorted(p.name for p in result.out.iterdir()) == sorted(
        ["changes.atom", "sitemap_index.xml", *children]
    )


def test_index_entries_use_the_public_prefix(result: CrawlResult, site: MockServer) -> None:
    index, children = _files(result)
    assert [e["loc"] for e in Sitemap(index)] == [site.url("/" + n) for n in children]


def test_jsonl_export_matches_ledger(result: CrawlResult, tmp_path: Path) -> None:
    from crawler.cli import main

    # A run writes no copy of its ledger; the export command does, when asked.
    assert not (result.state / "ledger.jsonl").exists()
    out = tmp_path / "ledger.jsonl"
    assert main(["export", "--state", str(result.state), "--file", str(out)]) == 0
    lines = out.read_text().splitlines()
    rows: dict[str, Any] = {json.loads(line)["url"]: json.loads(line) for line in lines}
    ledger = result.ledger_rows()
    assert set(rows) == set(ledger)
    assert all(set(r) >= {"url", "decision", "reason", "loc", "lastmod"} for r in rows.values())
    # The lists as JSON lists, as the ledger gives them.
    assert all(rows[url]["links"] == row["links"] for url, row in ledger.items())
    assert any(row["links"] for row in rows.values())


def test_state_kept_outside_output(result: CrawlResult) -> None:
    assert not Path(result.state).is_relative_to(result.out)
    assert not any(p.suffix == ".sqlite" for p in result.out.iterdir())
