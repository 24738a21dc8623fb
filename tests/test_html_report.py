"""The HTML reports (issue #17) opened in a real, headless Chromium from disk.

Every page is opened as a ``file://`` URL with every other request aborted (and
recorded: none may happen), must render with no console error and no page error,
and each of its figures (``data-figure``) must equal the number at that path in
the JSON it sits beside. A screenshot of each goes under the test's tmp_path. The
crawl report comes from two real runs over a site that changes between them; the
audit report from two real audits (``sitemap-crawler audit``) of the test site; a
hostile URL in the data must stay text.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest_twisted

from crawler.publish.htmlpage import number
from tests.browser import CHROMIUM_ARGS
from tests.conftest import ROOT, MockServer, run_crawl
from tests.test_nightly import NightlySite

HOSTILE = '"><script>alert(1)</script>'
LM1 = "Tue, 15 Nov 2022 12:45:26 GMT"
LM2 = "Wed, 16 Nov 2022 08:00:00 GMT"


# -- the browser ------------------------------------------------------------------------------


@dataclass
class Opened:
    """What the browser saw of one report."""

    figures: list[dict[str, str]]
    text: str
    points: list[dict[str, str]] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def in_thread(fn: Any, *args: Any) -> None:
    """Run *fn*: playwright's sync API wants no running event loop, and the tests'
    asyncio reactor runs one (pytest-twisted), so the browser works in a thread."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(fn, *args).result()


@contextmanager
def browser(chromium: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS), timeout=30_000)
        try:
            yield b
        finally:
            b.close()


@contextmanager
def opened(b: Any, path: Path, width: int = 1280) -> Iterator[tuple[Any, Opened]]:
    """*path* open in a new page, offline; yields the page and what it saw."""
    context = b.new_context(viewport={"width": width, "height": 900})
    seen = Opened([], "")

    def route(r: Any) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            seen.requested.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on(
        "console",
        lambda m: seen.errors.append(m.text) if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda e: seen.errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: seen.requested.append(r.url))

    def dialog(d: Any) -> None:
        seen.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.goto(path.as_uri(), wait_until="load")
    seen.figures = page.eval_on_selector_all(
        "[data-figure]",
        "els => els.map(e => ({path: e.getAttribute('data-figure'),"
        " value: e.getAttribute('data-value'), text: e.textContent}))",
    )
    seen.points = page.eval_on_selector_all(
        "[data-point]",
        "els => els.map(e => ({path: e.getAttribute('data-point'),"
        " value: e.getAttribute('data-value')}))",
    )
    seen.text = page.inner_text("body")
    try:
        yield page, seen
    finally:
        context.close()


def screenshot(page: Any, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000, len(data)  # a rendered page, not a blank one


def resolve(data: Any, path: str) -> Any:
    """The value at the dotted *path* of *data*; a list's length when it is one."""
    for part in path.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return len(data) if isinstance(data, list) else data


def check_figures(seen: Opened, data: dict[str, Any]) -> set[str]:
    """Every figure on the page equals the JSON's; returns the paths seen."""
    assert seen.figures
    for fig in seen.figures:
        expected = resolve(data, fig["path"])
        assert fig["value"] == ("null" if expected is None else str(expected)), fig
        assert fig["text"] == number(expected), fig
    for point in seen.points:  # the charts' points
        expected = resolve(data, point["path"])
        assert point["value"] == ("null" if expected is None else str(expected)), point
    return {fig["path"] for fig in seen.figures} | {p["path"] for p in seen.points}


def assert_clean(seen: Opened) -> None:
    assert seen.requested == []
    assert seen.errors == []
    assert seen.dialogs == []


def visible_rows(page: Any, group: str) -> list[str]:
    return page.eval_on_selector_all(
        f'[data-group][data-class="{group}"] tr[data-row]',
        "rows => rows.filter(r => !r.hidden).map(r => r.textContent)",
    )


def text_of(page: Any, selector: str) -> str:
    """The text of *selector*, closed details included."""
    return str(page.eval_on_selector(selector, "e => e.textContent"))


def shown(page: Any, selector: str) -> bool:
    return bool(page.eval_on_selector(selector, "e => !e.hidden"))


def no_sideways_scroll(page: Any) -> None:
    """On a phone the page scrolls down only (wide tables scroll in their box)."""
    width = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert width <= 1, width


# -- the crawl report -------------------------------------------------------------------------


#: Pages that stay (so that one page gone is no drop the publisher refuses).
STEADY = tuple(f"/s{i}.html" for i in range(8))


def build_site(site: NightlySite) -> None:
    site.home(
        "/a.html",
        "/b.html",
        "/d.html",
        "/hidden.html",
        "/copy.html",
        "/gone.html",
        "http://other.invalid/elsewhere.html",
        *STEADY,
    )
    for path in STEADY:
        site.page(path, f"steady {path}")
    site.page("/a.html", "a one", etag='"a1"', last_modified=LM1)
    site.page("/b.html", "b one" + "x" * 5000)
    site.page("/d.html", "d")
    site.page("/hidden.html", "h", head='<meta name="robots" content="noindex">')
    site.page("/copy.html", "c", head='<link rel="canonical" href="/a.html">')


async def two_nights(site: NightlySite, tmp_path: Path) -> tuple[Any, Any]:
    build_site(site)
    options = {
        "SITEMAP_OUT_DIR": str(tmp_path / "public"),
        "SITEMAP_STATE_DIR": str(tmp_path / "state"),
    }
    site.save()
    first = await run_crawl(site.url("/"), tmp_path, **options)
    assert first.outcome == "published", first.stats.get("sitemap/message")
    # Night 2: d gone, e new, a edited (new validators and Last-Modified).
    site.home(
        "/a.html",
        "/b.html",
        "/e.html",
        "/hidden.html",
        "/copy.html",
        "/gone.html",
        "http://other.invalid/elsewhere.html",
        *STEADY,
    )
    del site.pages["/d.html"]
    site.page("/e.html", "e")
    site.page("/a.html", "a two", etag='"a2"', last_modified=LM2)
    site.save()
    second = await run_crawl(site.url("/"), tmp_path, **options)
    assert second.outcome == "published", second.stats.get("sitemap/message")
    return first, second


@pytest_twisted.ensureDeferred
async def test_crawl_report_in_a_browser(
    nightly: NightlySite, tmp_path: Path, chromium: str
) -> None:
    _, second = await two_nights(nightly, tmp_path)
    state = second.state
    report = json.loads((state / "report.json").read_text())
    html = state / "report.html"
    assert second.stats["sitemap/report_html_path"] == str(html)
    assert report["added"] == [nightly.url("/e.html")]
    assert report["removed"] == [nightly.url("/d.html")]
    assert [len(report["history"]), report["history"][-1]["listed"]] == [2, report["listed"]]
    assert set(report["excluded"]) >= {"noindex", "canonical", "status", "off-host"}
    assert sum(report["status_codes"].values()) >= report["listed"]
    assert report["largest"][0]["url"] == nightly.url("/b.html")
    assert not list(state.glob(".*tmp"))

    in_thread(check_crawl_page, chromium, html, report, nightly, tmp_path)


def check_crawl_page(
    chromium: str, html: Path, report: dict[str, Any], nightly: NightlySite, tmp_path: Path
) -> None:
    with browser(chromium) as b:
        with opened(b, html) as (page, seen):
            assert_clean(seen)
            paths = check_figures(seen, report)
            must = {"listed", "excluded_total", "pages_fetched", "added", "removed"}
            must |= {"lastmod_changes", "history.0.listed", "history.1.excluded"}
            must |= {f"excluded.{name}" for name in report["excluded"] if name != "off-host"}
            must |= {"other_hosts"}  # links to other hosts: apart from the exclusions
            must |= {f"status_codes.{code}" for code in report["status_codes"]}
            must |= {f"depths.{depth}.urls" for depth in report["depths"]}
            assert must <= paths, must - paths
            assert page.get_attribute("[data-outcome]", "data-outcome") == "published"
            assert report["message"] in seen.text
            for url in (
                nightly.url("/e.html"),
                nightly.url("/d.html"),
                nightly.url("/hidden.html"),
            ):
                assert url in seen.text
            # The canonical's target is shown with it.
            canonical = text_of(page, '[data-group][data-class="canonical"]')
            assert nightly.url("/a.html") in canonical
            # The filter: words of one URL leave only the rows that have them.
            before = len(visible_rows(page, "noindex")) + len(visible_rows(page, "status"))
            page.fill("input[data-filter]", "hidden.html")
            assert visible_rows(page, "noindex") == [
                row for row in visible_rows(page, "noindex") if "hidden.html" in row
            ]
            assert len(visible_rows(page, "noindex")) == 1
            assert not shown(page, '[data-group][data-class="status"]')
            page.fill("input[data-filter]", "")
            after = len(visible_rows(page, "noindex")) + len(visible_rows(page, "status"))
            assert after == before
            screenshot(page, tmp_path / "report.png")
            assert seen.requested == [] and seen.errors == []
        with opened(b, html, width=390) as (page, seen):
            assert_clean(seen)
            no_sideways_scroll(page)
            screenshot(page, tmp_path / "report-phone.png")


@pytest_twisted.ensureDeferred
async def test_crawl_report_can_be_turned_off_and_capped(
    nightly: NightlySite, tmp_path: Path
) -> None:
    build_site(nightly)
    nightly.save()
    off = await run_crawl(nightly.url("/"), tmp_path / "off", SITEMAP_REPORT_HTML=False)
    assert (off.state / "report.json").exists()
    assert not (off.state / "report.html").exists()
    capped = await run_crawl(nightly.url("/"), tmp_path / "capped", SITEMAP_REPORT_HTML_URLS=1)
    report = json.loads((capped.state / "report.json").read_text())
    text = (capped.state / "report.html").read_text()
    added = len(report["added"])
    assert added > 1
    assert f"1 of {added} shown; the other {added - 1} are in report.json" in text
    # The "status" decisions are the site's broken links, called so.
    assert report["excluded"].get("status")
    assert "broken links: " in text and "404s and other errors, each with a page" in text


@pytest_twisted.ensureDeferred
async def test_crawl_report_says_what_is_listed_plainly(
    nightly: NightlySite, tmp_path: Path, chromium: str
) -> None:
    """Issue 24: the listed URLs by section, filterable and capped; times as a person
    reads them; plurals; a "why" that says something; links to other hosts apart
    from the site's exclusions; an unchanged night said to be one."""
    build_site(nightly)
    nightly.save()
    options = {
        "SITEMAP_OUT_DIR": str(tmp_path / "public"),
        "SITEMAP_STATE_DIR": str(tmp_path / "state"),
        "SITEMAP_SECTIONS": ["steady=/s[0-9]"],
        "SITEMAP_REPORT_HTML_URLS": 3,
    }
    first = await run_crawl(nightly.url("/"), tmp_path, **options)
    assert first.outcome == "published", first.stats.get("sitemap/message")
    report1 = json.loads((first.state / "report.json").read_text())
    (tmp_path / "first.html").write_bytes((first.state / "report.html").read_bytes())
    second = await run_crawl(nightly.url("/"), tmp_path, **options)
    assert second.outcome == "published", second.stats.get("sitemap/message")
    report2 = json.loads((second.state / "report.json").read_text())
    assert report1["sections"] == {"(default)": 4, "steady": 8}
    assert report1["other_hosts"] == report1["excluded"]["off-host"] == 1
    assert report1["excluded_total"] == sum(report1["excluded"].values()) - 1
    assert (report2["files_written"], report2["files_unchanged"]) == (0, 2)
    in_thread(
        check_plain_pages,
        chromium,
        tmp_path / "first.html",
        report1,
        second.state / "report.html",
        report2,
        nightly,
    )


def check_plain_pages(
    chromium: str,
    first: Path,
    report1: dict[str, Any],
    second: Path,
    report2: dict[str, Any],
    nightly: NightlySite,
) -> None:
    with browser(chromium) as b:
        with opened(b, first) as (page, seen):
            assert_clean(seen)
            paths = check_figures(seen, report1)
            assert {"other_hosts", "sections.steady", "sections.(default)"} <= paths
            text = seen.text
            # Times: to the second, in one zone, with the duration.
            assert re.search(
                r"Started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, finished "
                r"\d\d:\d\d:\d\d UTC, after [\d.]+ s\.",
                text,
            ), text[:400]
            assert not re.search(r"\d\d:\d\d:\d\d\.\d", text)  # no microseconds
            assert "+00:00" not in text.split("Figures")[0]
            # Plurals, and a "why" that says why it was published.
            assert "History: the last run" in text and "the last 1 runs" not in text
            why = text.split("Why: ", 1)[1].split("\n", 1)[0]
            assert why.startswith("the crawl finished and looks sound: 0 of "), why
            assert "2 files written" in why and report1["index"] not in why
            # Links to other hosts: apart, not an exclusion of the site.
            assert page.query_selector('[data-bar="off-host"]') is None
            others = text_of(page, '[data-group][data-class="off-host"]')
            assert "http://other.invalid/elsewhere.html" in others
            assert nightly.url("/") in others  # found on
            # The listed URLs, by section, capped, with where the rest is.
            assert len(page.query_selector_all('[data-group][data-class="listed"]')) == 2
            listed = "".join(visible_rows(page, "listed"))
            assert nightly.url("/s0.html") in listed and nightly.url("/a.html") in listed
            main = text_of(page, "main")
            assert "3 of 8 shown; the other 5 are in the ledger" in main
            assert "3 of 4 shown; the other one is in the ledger" in main
            page.fill("input[data-filter]", "s1.html")
            assert visible_rows(page, "listed") == [
                row for row in visible_rows(page, "listed") if "s1.html" in row
            ]
            assert len(visible_rows(page, "listed")) == 1
        with opened(b, second) as (page, seen):
            assert_clean(seen)
            check_figures(seen, report2)
            text = seen.text
            assert "The new sitemap set was published" not in text
            first_published = datetime.fromisoformat(report2["published_since"])
            assert (
                "The sitemap set is unchanged since the last run: no file was rewritten (first "
                f"published {first_published.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC)."
            ) in text
            assert report2["published_since"] == report1["published_since"]
            assert "History: the last 2 runs" in text


# -- the audit report -------------------------------------------------------------------------
# -- the audit report -------------------------------------------------------------------------


def audit(site: MockServer, report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", "audit", site.url("/"), "--report", str(report)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_audit_report_in_a_browser(site: MockServer, tmp_path: Path, chromium: str) -> None:
    out = tmp_path / "audit"
    for _ in range(2):
        proc = audit(site, out)
        assert proc.returncode == 0, proc.stderr
        time.sleep(1)  # two audits, two "generated" seconds
    assert f"html report: {out / 'index.html'}" in proc.stdout
    data = json.loads((out / "audit.json").read_text())
    kept = json.loads((out / "audit-history.json").read_text())
    assert kept == data["history"] and len(kept) == 2
    assert kept[-1]["coverage"] == data["coverage"]["percent"]
    assert any(p["url"] for p in data["problems"])
    # Issue 24: the page's count of sitemap files is the command line's (the usual
    # places that answered 404 are tried, not read).
    assert f"sitemaps read: {data['sitemaps_read']} " in proc.stdout
    assert data["sitemaps_read"] < len(data["sitemaps"])
    in_thread(check_audit_page, chromium, out, data, tmp_path)


def check_audit_page(chromium: str, out: Path, data: dict[str, Any], tmp_path: Path) -> None:
    with browser(chromium) as b:
        with opened(b, out / "index.html") as (page, seen):
            assert_clean(seen)
            paths = check_figures(seen, data)
            must = {"coverage.percent", "coverage.covered", "history.0.coverage"}
            must |= {"history.1.coverage", "problems", "counts.protocol", "sitemaps_read"}
            must |= {f"counts.{name}" for name, n in data["counts"].items() if n}
            assert must <= paths, must - paths
            # Every class with its URLs, reasons and targets.
            everything = text_of(page, "main")
            for u in data["urls"]:
                assert u["url"] in everything, u
                assert u["reason"] in everything, u
            redirect = next(u for u in data["urls"] if u["class"] == "redirect")
            assert redirect["target"] in text_of(page, '[data-group][data-class="redirect"]')
            # Protocol problems with their sitemap file, line and entry URL.
            problems = text_of(page, '[data-group][data-class="protocol"]')
            for p in data["problems"]:
                assert p["sitemap"] in problems
                if p["line"] is not None:
                    assert str(p["line"]) in problems
                if p["url"]:
                    assert p["url"] in problems
            # A class box hides its class; the search box keeps the matching rows.
            page.uncheck('input[data-class-toggle="redirect"]')
            assert not shown(page, '[data-group][data-class="redirect"]')
            assert shown(page, '[data-group][data-class="orphan"]')
            page.check('input[data-class-toggle="redirect"]')
            assert shown(page, '[data-group][data-class="redirect"]')
            page.fill("input[data-filter]", "orphan-live")
            rows = page.eval_on_selector_all(
                "[data-group] tr[data-row]",
                "rows => rows.filter(r => !r.hidden).map(r => r.textContent)",
            )
            assert rows and all("orphan-live" in row for row in rows)
            assert not shown(page, '[data-group][data-class="redirect"]')
            # The dead orphans the card counts are the rows flagged so (issue 24).
            dead = [u["url"] for u in data["urls"] if "dead-orphan" in u["flags"]]
            assert dead and len(dead) == data["counts"]["dead-orphan"]
            page.fill("input[data-filter]", "dead-orphan")
            rows = page.eval_on_selector_all(
                "[data-group] tr[data-row]",
                "rows => rows.filter(r => !r.hidden).map(r => r.textContent)",
            )
            assert len(rows) == len(dead)
            assert all(any(url in row for url in dead) for row in rows)
            page.fill("input[data-filter]", "")
            screenshot(page, tmp_path / "audit.png")
            assert seen.requested == [] and seen.errors == []
        with opened(b, out / "index.html", width=390) as (page, seen):
            assert_clean(seen)
            no_sideways_scroll(page)
            screenshot(page, tmp_path / "audit-phone.png")


# -- hostile input ------------------------------------------------------------------------------


def hostile_reports(tmp_path: Path) -> tuple[Path, Path]:
    """A crawl report and an audit report whose data carry HOSTILE everywhere."""
    from crawler.audit.report import AuditReport, write_report
    from crawler.core.items import UrlRecord
    from crawler.core.summary import Books, CrawlFigures, RunSummary
    from crawler.ledger.ledger import Ledger
    from crawler.publish.htmlpage import write_html
    from crawler.publish.report import run_model, write_json
    from crawler.publish.runhtml import render_run

    evil = f"http://127.0.0.1:9/{HOSTILE}"
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.set_meta("start_url", evil)
    ledger.record(
        UrlRecord(
            url=evil,
            key="k1",
            decision="listed",
            loc=evil,
            status=200,
            depth=0,
            size=10,
            elapsed=0.5,
        )
    )
    ledger.record(
        UrlRecord(
            url=evil + "2",
            key="k2",
            decision="canonical",
            reason=HOSTILE,
            target=f"javascript:alert(2)//{HOSTILE}",
            status=200,
            depth=1,
            referrer=evil,
        )
    )
    ledger.record(
        UrlRecord(url=evil + "3", key="k3", decision="status", reason=HOSTILE, status=404, depth=1)
    )
    ledger.commit()
    stats = {"start_time": datetime.now(UTC), "response_received_count": 3}
    figures = CrawlFigures.from_stats(stats)
    summary = RunSummary("published", f"message {HOSTILE}", True, Books(ledger.counts()), figures)
    model = run_model(summary, ledger, None)
    model.fields["history"] = [model.history_entry()]
    write_json(tmp_path / "report.json", model)
    crawl = write_html(tmp_path / "report.html", render_run(model, ledger))
    ledger.close()
    url = {
        "url": evil,
        "class": "redirect",
        "reason": HOSTILE,
        "target": evil,
        "found_by_crawl": True,
        "sitemaps": [evil],
        "flags": [],
    }
    problem = {
        "code": "lastmod-invalid",
        "message": HOSTILE,
        "sitemap": evil,
        "line": 3,
        "url": evil,
    }
    sitemap = {
        "url": evil,
        "via": "robots",
        "parent": None,
        "depth": 0,
        "status": 200,
        "kind": "urlset",
        "entries": 1,
        "compressed_layers": 0,
        "size": 1,
        "complete": True,
        "fetched": True,
        "problems": [problem],
        "not_audited": 0,
    }
    report = AuditReport(evil, 50.0, 1, 2, [sitemap], [url], [problem])
    report.history = [report.history_entry()]
    write_report(report, tmp_path / "audit")
    return crawl, tmp_path / "audit" / "index.html"


def test_hostile_urls_stay_text(tmp_path: Path, chromium: str) -> None:
    crawl, audit_page = hostile_reports(tmp_path)
    for path in (crawl, audit_page):
        assert "<script>alert" not in path.read_text()
    in_thread(check_hostile_pages, chromium, tmp_path, crawl, audit_page)


def check_hostile_pages(chromium: str, tmp_path: Path, crawl: Path, audit_page: Path) -> None:
    with browser(chromium) as b:
        for path, data in (
            (crawl, json.loads((tmp_path / "report.json").read_text())),
            (audit_page, json.loads((tmp_path / "audit" / "audit.json").read_text())),
        ):
            with opened(b, path) as (page, seen):
                assert_clean(seen)  # no dialog: nothing ran
                assert HOSTILE in seen.text  # the text, escaped, is there to read
                check_figures(seen, data)
                # The embedded JSON is the JSON, whole, despite its "</script>".
                embedded = json.loads(page.eval_on_selector("#report-data", "e => e.textContent"))
                assert embedded["site" if "site" in embedded else "start_url"].endswith(HOSTILE)
                # No live javascript: link, no injected element.
                assert page.eval_on_selector_all("a[href^='javascript']", "e => e.length") == 0
                assert page.eval_on_selector_all("script", "e => e.length") == 2


# -- the kept histories -------------------------------------------------------------------------


def test_history_keeps_the_last_entries_of_each_site(tmp_path: Path) -> None:
    from crawler.publish.reporthistory import append_history, read_history

    path = tmp_path / "audit-history.json"
    for i in range(5):
        for site in ("a", "b"):
            kept = append_history(
                path,
                {"generated": f"2026-01-0{i + 1}", "site": site, "n": i},
                3,
                group="site",
                key="generated",
            )
            assert [e["n"] for e in kept] == list(range(max(0, i - 2), i + 1))
            assert all(e["site"] == site for e in kept)
    assert len(read_history(path)) == 6
    # The same time again (a resumed run) replaces its entry.
    kept = append_history(
        path, {"generated": "2026-01-05", "site": "a", "n": 9}, 3, group="site", key="generated"
    )
    assert [e["n"] for e in kept] == [2, 3, 9]
    path.write_text("{not json")
    assert read_history(path) == []
    assert append_history(path, {"started": "x"}, 3) == [{"started": "x"}]
    assert not list(tmp_path.glob(".*tmp"))


def test_audit_history_goes_to_the_state_directory(tmp_path: Path) -> None:
    from crawler.audit.report import AuditReport, write_report
    from crawler.commands.audit import keep_history

    state, out = tmp_path / "state", tmp_path / "report"
    report = AuditReport("http://127.0.0.1:9/", 80.0, 4, 5, [], [], [])
    report.history = keep_history(report, state)
    assert json.loads((state / "audit-history.json").read_text()) == report.history
    assert report.history[-1]["coverage"] == 80.0
    written = write_report(report, out, html=False)
    assert not (out / "index.html").exists() and written[0] == out / "audit.json"
    assert json.loads((out / "audit.json").read_text())["history"] == report.history


def test_one_audit_and_one_run_read_in_the_singular(tmp_path: Path) -> None:
    """Issue 24: "the last 1 audits" reads as "the last audit"; times to the second."""
    from crawler.audit.report import AuditReport, write_report
    from crawler.commands.audit import keep_history

    report = AuditReport("http://127.0.0.1:9/", 80.0, 4, 5, [], [], [])
    report.history = keep_history(report, tmp_path / "state")
    write_report(report, tmp_path / "report", html=True)
    text = (tmp_path / "report" / "index.html").read_text()
    assert "Coverage over the last audit<" in text and "last 1 audits" not in text
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.", text), text[:2000]
