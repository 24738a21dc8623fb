"""The audit against the issues of its tracker, each with a real crawl and audit.

Auditing what we just published from a local index (coverage 100%), a relative
``Sitemap:`` line of robots.txt, a file of more than the protocol's 50,000 entries
(only those are audited), a site with no sitemap at all (the summary's first line
says so), and Google's mobile annotation counted, not reported. Crawls and audits
run in this process against ``tests/mockserver.py`` as in ``tests/test_audit.py``;
the site without sitemaps is a directory served on 127.0.0.1 by a thread.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from crawler.audit.report import AuditReport, write_report
from crawler.audit.summary import format_summary
from crawler.ledger.ledger import Ledger
from crawler.sitemaps.limits import MAX_URLS_PER_FILE, SITEMAP_NS
from tests.conftest import MockServer, run_crawl
from tests.served import serve_directory
from tests.test_audit import audit

XHTML_NS = "http://www.w3.org/1999/xhtml"


def blockon(coroutine: Any) -> Any:
    return pytest_twisted.blockon(Deferred.fromCoroutine(coroutine))


@pytest.fixture(scope="module")
def crawled(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One crawl of the test site, published (public/ beside state/)."""
    tmp = tmp_path_factory.mktemp("crawled")
    result = blockon(run_crawl(site.url("/"), tmp))
    assert result.outcome == "published"
    assert (result.out / "sitemap_index.xml").is_file()
    return tmp


def state_copy(crawled: Path, tmp_path: Path) -> Path:
    """The crawl's state, copied: a test may change its ledger."""
    return Path(shutil.copytree(crawled / "state", tmp_path / "state"))


def sitemap_row(report: AuditReport, url: str) -> dict[str, Any]:
    return next(sm for sm in report.sitemaps if sm["url"] == url)


# -- 8: the set we just published, read from its local index ------------------------------


@pytest_twisted.ensureDeferred
async def test_local_index_of_the_published_set_covers_every_page(
    site: MockServer, crawled: Path, tmp_path: Path
) -> None:
    index = crawled / "public" / "sitemap_index.xml"
    children = sorted(
        p.name
        for p in (crawled / "public").iterdir()
        if p.name not in (index.name, "changes.atom")  # the delta feed is no child
    )
    assert children
    report, _ = await audit(site, tmp_path, str(index), state=state_copy(crawled, tmp_path))
    assert report.coverage == 100.0
    assert not [u for u in report.urls if u["class"] == "missing"]
    assert sitemap_row(report, str(index))["kind"] == "sitemapindex"
    for name in children:
        # Read from beside the index, judged as the file at the site's root.
        child = sitemap_row(report, str(crawled / "public" / name))
        assert (child["kind"], child["fetched"], child["via"]) == ("urlset", 1, "index")
        assert child["parent"] == str(index)
    assert not [
        p for p in report.problems if "outside the sitemap file's directory" in p["message"]
    ]
    # Nothing of ours was asked of the site: the files are local.
    assert not [r for r in site.requests() if r["path"].lstrip("/") in children]


# -- 7: a relative Sitemap: line in robots.txt ------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_relative_robots_sitemap_is_read_and_reported(
    site: MockServer, crawled: Path, tmp_path: Path
) -> None:
    state = state_copy(crawled, tmp_path)
    ledger = Ledger(state / "ledger.sqlite")
    try:
        declared = ledger.get_meta("robots_sitemaps", [])
        ledger.set_meta("robots_sitemaps", [*declared, "/hostile/truncated.xml"])
    finally:
        ledger.close()
    report, _ = await audit(site, tmp_path, state=state)
    row = sitemap_row(report, site.url("/hostile/truncated.xml"))
    assert (row["via"], row["fetched"], row["status"], row["kind"]) == ("robots", 1, 200, "urlset")
    assert row["entries"] == 2
    relative = [p for p in row["problems"] if p["code"] == "robots-relative-sitemap"]
    assert len(relative) == 1
    assert "'Sitemap: /hostile/truncated.xml'" in relative[0]["message"]
    assert site.url("/hostile/truncated.xml") in relative[0]["message"]
    assert "invalid-sitemap-url" not in {p["code"] for p in report.problems}


# -- 6: only the protocol's 50,000 entries of a file are audited -------------------------------


@pytest_twisted.ensureDeferred
async def test_entries_past_50000_are_not_audited(
    site: MockServer, crawled: Path, tmp_path: Path
) -> None:
    # 50,000 entries the crawl judged (the home page, again and again), then pages
    # the audit would otherwise fetch (/never/..., an orphan) or cover (/canon/self.html).
    past = [f"/never/{i}.html" for i in range(100)] + ["/orphan-live.html", "/canon/self.html"]
    blocks = [f"<url><loc>{site.url('/')}</loc></url>"] * MAX_URLS_PER_FILE
    blocks += [f"<url><loc>{site.url(path)}</loc></url>" for path in past]
    big = tmp_path / "big.xml"
    big.write_text(f'<urlset xmlns="{SITEMAP_NS}">\n' + "\n".join(blocks) + "\n</urlset>\n")
    site.clear_log()
    report, _ = await audit(site, tmp_path, str(big), state=state_copy(crawled, tmp_path))
    row = sitemap_row(report, str(big))
    assert (row["entries"], row["not_audited"]) == (MAX_URLS_PER_FILE + len(past), len(past))
    assert "not-audited" in {p["code"] for p in row["problems"]}
    assert "too-many-urls" in {p["code"] for p in row["problems"]}
    # Never fetched, never classified.
    assert not [r for r in site.requests() if r["path"].startswith("/never/")]
    assert not [u for u in report.urls if "/never/" in u["url"]]
    # A page listed only there is missing, and says why.
    missing = {u["url"]: u["reason"] for u in report.urls if u["class"] == "missing"}
    assert (
        f"past the first {MAX_URLS_PER_FILE:,} entries of {big}"
        in missing[site.url("/canon/self.html")]
    )
    assert report.not_audited == len(past)
    assert "102 not audited" in format_summary(report).splitlines()[0]
    write_report(report, tmp_path / "r")
    data = json.loads((tmp_path / "r" / "audit.json").read_text())
    assert data["not_audited"] == len(past)
    assert data["no_sitemap"] is False


# -- 2: Google's mobile annotation, counted and not reported -----------------------------------


@pytest_twisted.ensureDeferred
async def test_mobile_alternates_are_counted_not_reported(
    site: MockServer, crawled: Path, tmp_path: Path
) -> None:
    media = "only screen and (max-width: 640px)"
    blocks = [
        f"<url><loc>{site.url(path)}</loc><xhtml:link rel='alternate' media='{media}'"
        f" href='https://m.example.com{path}'/></url>"
        for path in ("/", "/about.html", "/cart")
    ]
    local = tmp_path / "mobile.xml"
    local.write_text(
        f'<urlset xmlns="{SITEMAP_NS}" xmlns:xhtml="{XHTML_NS}">\n'
        + "\n".join(blocks)
        + "\n</urlset>"
    )
    report, _ = await audit(site, tmp_path, str(local), state=state_copy(crawled, tmp_path))
    row = sitemap_row(report, str(local))
    assert (row["media_alternates"], row["hreflang_alternates"]) == (3, 0)
    assert not [p for p in report.problems if p["sitemap"] == str(local)]
    assert "mobile alternates: 3" in format_summary(report)


# -- 9: a site without any sitemap -------------------------------------------------------------


_HOME = '<a href="/a.html">a</a> <a href="/b.html">b</a>'
#: A site without any sitemap: a home page and the two pages it links to.
NO_SITEMAP = {
    f"{name}.html": f"<html><head><title>{title}</title></head><body>{text}</body></html>"
    for name, title, text in (("index", "home", _HOME), ("a", "a", "page a"), ("b", "b", "page b"))
}


@pytest_twisted.ensureDeferred
async def test_no_sitemap_at_all_is_the_headline(tmp_path: Path) -> None:
    with serve_directory(tmp_path / "www", NO_SITEMAP) as site:
        report, _ = await audit(site, tmp_path)  # type: ignore[arg-type]
    assert report.no_sitemap
    first = format_summary(report).splitlines()[0]
    assert first.startswith("no sitemap found; tried: robots.txt (no Sitemap: line), ")
    for place in ("sitemap.xml", "sitemap_index.xml", "sitemap.xml.gz", "sitemap.txt"):
        assert f"{site.url('/' + place)} (HTTP 404)" in first
    write_report(report, tmp_path / "r")
    data = json.loads((tmp_path / "r" / "audit.json").read_text())
    assert data["no_sitemap"] is True
    assert data["coverage"]["covered"] == 0


@pytest_twisted.ensureDeferred
async def test_a_site_with_sitemaps_has_no_such_headline(
    site: MockServer, crawled: Path, tmp_path: Path
) -> None:
    report, _ = await audit(site, tmp_path, state=state_copy(crawled, tmp_path))
    assert not report.no_sitemap
    assert format_summary(report).startswith("sitemaps read: ")


# -- 24: what the crawl's rules excluded is no orphan; counts that agree -------------------


def local_sitemap(tmp_path: Path, site: MockServer, *paths: str) -> Path:
    blocks = [f"<url><loc>{site.url(path)}</loc></url>" for path in paths]
    local = tmp_path / "listed.xml"
    local.write_text(f'<urlset xmlns="{SITEMAP_NS}">\n' + "\n".join(blocks) + "\n</urlset>\n")
    return local


def classes_of(urls: list[dict[str, Any]], site: MockServer, *paths: str) -> dict[str, Any]:
    by_url = {u["url"]: u for u in urls}
    return {path: by_url[site.url(path)] for path in paths}


EXCLUDED = ("/relative/one.html", "/relative/two.html")


def assert_excluded(urls: list[dict[str, Any]], site: MockServer) -> None:
    got = classes_of(urls, site, *EXCLUDED)
    # Met by the crawl (linked from the home page) and left out by --exclude.
    one = got["/relative/one.html"]
    assert one["class"] == "excluded", one
    assert one["reason"] == "excluded: matches --exclude '/relative/'"
    # Linked only from /relative/one.html, which the crawl did not fetch: never met,
    # and the crawl's rules would leave it out too.
    two = got["/relative/two.html"]
    assert two["class"] == "excluded", two
    assert "never met by the crawl" in two["reason"]
    assert "matches --exclude '/relative/'" in two["reason"]
    for u in got.values():
        # Also in the site's own sitemaps: a duplicate listing, never a dead orphan.
        assert u["found_by_crawl"] is False and u["flags"] == ["duplicate-listing"], u
    assert not [u for u in urls if u["class"] == "orphan" and "/relative/" in u["url"]]


@pytest_twisted.ensureDeferred
async def test_what_the_rules_exclude_is_excluded_not_orphan(
    site: MockServer, tmp_path: Path
) -> None:
    """`audit URL --exclude /relative/`: the listed /relative/ pages are excluded,
    never orphans nor dead orphans, and the audit does not fetch them."""
    local = local_sitemap(tmp_path, site, *EXCLUDED, "/about.html")
    site.clear_log()
    report, _ = await audit(site, tmp_path, str(local), SITEMAP_EXCLUDE=["/relative/"])
    assert_excluded(report.urls, site)
    assert classes_of(report.urls, site, "/about.html")["/about.html"]["class"] == "indexable"
    assert not [r for r in site.requests() if r["path"].startswith("/relative/")]
    assert report.counts["excluded"] >= 2
    assert "excluded " in format_summary(report)
    write_report(report, tmp_path / "r")
    with (tmp_path / "r" / "excluded.csv").open() as f:
        assert {site.url(p) for p in EXCLUDED} <= {row["url"] for row in csv.DictReader(f)}


def test_api_audit_of_a_state_with_excludes(site: MockServer, tmp_path: Path) -> None:
    from crawler import api

    fast = {"AUTOTHROTTLE_START_DELAY": 0, "RETRY_TIMES": 1}
    crawled = api.crawl(
        site.url("/"), out=str(tmp_path / "public"), exclude=["/relative/"], settings=fast
    )
    assert crawled.published, crawled.message
    local = local_sitemap(tmp_path, site, *EXCLUDED)
    result = api.audit(site.url("/"), state=str(crawled.state), sitemap=[str(local)], settings=fast)
    assert result.exit_code == 0, result.error
    assert result.audit is not None
    assert_excluded(result.audit.urls, site)


@pytest_twisted.ensureDeferred
async def test_a_listed_copy_of_a_listed_page_is_no_second_indexable_page(
    site: MockServer, crawled: Path, tmp_path: Path
) -> None:
    """/dup/ and /dup/index.html are one page: listed both, one is indexable and the
    other a duplicate of it, so that the class's count is the card's."""
    local = local_sitemap(tmp_path, site, "/dup/", "/dup/index.html")
    report, _ = await audit(site, tmp_path, str(local), state=state_copy(crawled, tmp_path))
    got = classes_of(report.urls, site, "/dup/", "/dup/index.html")
    assert sorted(u["class"] for u in got.values()) == ["duplicate", "indexable"]
    kept = next(u for u in got.values() if u["class"] == "indexable")
    copy = next(u for u in got.values() if u["class"] == "duplicate")
    assert copy["target"] == kept["url"]
    assert "byte-identical copy of" in copy["reason"] and copy["flags"] == []
    assert report.counts["indexable"] == report.covered
    write_report(report, tmp_path / "r")
    data = json.loads((tmp_path / "r" / "audit.json").read_text())
    assert data["counts"]["indexable"] == data["coverage"]["covered"]
