"""Traps learned, duplicates merged (issue #19): query parameters that do not change
the page, facets, calendars and date sequences, soft 404s; on a real test site
(tests/trapserver.py), over two nights."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.http import HtmlResponse

from crawler.crawl.calendars import date_of, parse_window
from crawler.crawl.params import ParamLearner, settle
from crawler.page.content import bag_hash, main_content
from crawler.page.links import parse_html
from crawler.page.softnotfound import page_print, says_not_found
from tests.conftest import TrapServer, run_crawl


def _today() -> date:
    return datetime.now(UTC).date()


def _cal(offset: int) -> str:
    return f"/cal/{_today() + timedelta(days=offset)}/"


#: What the trap site lists: every real page, the facets one at a time, one entry
#: into each calendar and two days either side of today's.
LISTED = {
    "/",
    "/about.html",
    "/shop/",
    "/shop/?color=red",
    "/shop/?color=blue",
    "/shop/?size=s",
    "/shop/?size=m",
    "/product/1",
    "/product/2",
    "/product/3",
    "/product/4",
    "/events?month=2015-01",
    "/archive/2019/05/",
    "/blog/2019/05/17/old-post/",
    *(_cal(n) for n in range(-2, 3)),
}

SORT = "parameter 'sort' does not change the page"
REF = "parameter 'ref' does not change the page"
BOTH = "parameters 'ref', 'sort' do not change the page"

#: The URLs left out, with decision, reason and target (a path, or None).
LEFT_OUT = {
    "/shop/?sort=price": ("ignored-parameter", SORT, "/shop/"),
    "/shop/?sort=name": ("ignored-parameter", SORT, "/shop/"),
    "/shop/?sort=price&ref=menu": ("ignored-parameter", BOTH, "/shop/"),
    "/shop/?ref=nav": ("ignored-parameter", REF, "/shop/"),
    "/shop/?ref=footer": ("ignored-parameter", REF, "/shop/"),
    "/shop/?ref=about": ("ignored-parameter", REF, "/shop/"),
    "/shop/?ref=product": ("ignored-parameter", REF, "/shop/"),
    "/shop/?color=red&sort=price": ("ignored-parameter", SORT, "/shop/?color=red"),
    "/shop/?color=blue&sort=name&ref=menu": ("ignored-parameter", BOTH, "/shop/?color=blue"),
    "/shop/?color=red&size=s": ("facet-combination", "facet combination (color, size)", None),
    "/shop/?color=red&size=m": ("facet-combination", "facet combination (color, size)", None),
    "/shop/?color=blue&size=s": ("facet-combination", "facet combination (color, size)", None),
    "/shop/?color=blue&size=m": ("facet-combination", "facet combination (color, size)", None),
    "/events?month=2014-12": (
        "calendar",
        "calendar beyond window: 2014-12 is more than 365 days from today",
        None,
    ),
    "/events?month=2015-02": (
        "calendar",
        "calendar beyond window: 2015-02 is more than 365 days from today",
        None,
    ),
    "/archive/2019/04/": (
        "calendar",
        "calendar beyond window: 2019-04 is more than 365 days from today",
        None,
    ),
    "/archive/2019/06/": (
        "calendar",
        "calendar beyond window: 2019-06 is more than 365 days from today",
        None,
    ),
    _cal(-3): ("calendar", "calendar: more than 2 steps from where the sequence was entered", None),
    _cal(3): ("calendar", "calendar: more than 2 steps from where the sequence was entered", None),
}


def _decisions(result: Any, base: str) -> dict[str, tuple[str, str, str | None]]:
    return {
        url[len(base) :]: (
            row["decision"],
            row["reason"],
            row["target"][len(base) :] if row["target"] else None,
        )
        for url, row in result.ledger_rows().items()
    }


@pytest_twisted.ensureDeferred
async def test_traps_learned_and_reused_the_next_night(traps: TrapServer, tmp_path: Path) -> None:
    traps.clear_log()
    first = await run_crawl(traps.url("/"), tmp_path)
    assert first.outcome == "published"
    first_paths = traps.paths()
    decided = _decisions(first, traps.base)
    listed = {path for path, (decision, _, _) in decided.items() if decision == "listed"}
    assert listed == LISTED
    assert {path: decided[path] for path in LEFT_OUT} == LEFT_OUT
    # Nothing else was recorded: each URL has one of these decisions.
    assert set(decided) == LISTED | set(LEFT_OUT)
    # At most a handful of URLs from any trap.
    assert sum(1 for p in first_paths if p.startswith("/cal/")) == 5
    assert sum(1 for p in first_paths if p.startswith(("/events", "/archive/"))) == 2
    # Facet combinations are never fetched: the facets were known before them.
    assert not [p for p in first_paths if "color=" in p and "size=" in p]
    stats = first.stats
    assert stats["sitemap/excluded/ignored-parameter"] == 9
    assert stats["sitemap/excluded/facet-combination"] == 4
    assert stats["sitemap/excluded/calendar"] == 6
    assert stats["sitemap/learned/parameters"] == {traps.url("/shop/"): ["ref", "sort"]}
    assert stats["sitemap/learned/calendars"] == 3
    assert stats["sitemap/soft404/probes"] == 1
    assert stats["sitemap/soft404/probe_status"] == 404
    assert stats["sitemap/soft404/detected"] is False
    summary = first.summary_text()
    assert (
        "learned: 2 parameters ignored on /shop/, 3 calendars cut, "
        "4 facet combinations left out" in summary
    )
    report = json.loads((first.state / "report.json").read_text())
    assert report["learned"]["parameters"] == {traps.url("/shop/"): ["ref", "sort"]}
    assert report["excluded"]["ignored-parameter"] == 9
    # The probe is in no published or recorded place.
    probes = [p for p in first_paths if p.startswith("/sitemap-crawler-probe-")]
    assert len(probes) == 1
    assert not [u for u in first.ledger_rows() if "probe" in u]

    # The next night starts from what was learned: no variant that differs only in
    # a learned parameter is fetched, and the same set is published.
    traps.clear_log()
    second = await run_crawl(traps.url("/"), tmp_path)
    assert second.outcome == "published"
    second_paths = traps.paths()
    assert not [p for p in second_paths if "sort=" in p or "ref=" in p]
    variants = [p for p in first_paths if "sort=" in p or "ref=" in p]
    assert len(variants) >= 3  # the evidence night one fetched to learn from
    assert len(second_paths) == len(first_paths) - len(variants)
    assert _decisions(second, traps.base) == decided
    assert second.stats["sitemap/added"] == 0 and second.stats["sitemap/removed"] == 0
    assert "sitemap/learned/params" not in second.stats  # nothing new to learn


@pytest_twisted.ensureDeferred
async def test_listing_budget_per_path(traps: TrapServer, tmp_path: Path) -> None:
    """--max-variants-per-path lists the shortest variants of a path; the others
    are traps with the budget in the reason."""
    result = await run_crawl(traps.url("/"), tmp_path, SITEMAP_MAX_VARIANTS_PER_PATH=2)
    decided = _decisions(result, traps.base)
    shop = {p for p, (dec, _, _) in decided.items() if dec == "listed" and p.startswith("/shop/?")}
    assert shop == {"/shop/?size=m", "/shop/?size=s"}
    for path in ("/shop/?color=red", "/shop/?color=blue"):
        assert decided[path] == ("trap", "more than 2 query variants of /shop/ listed", None)


@pytest_twisted.ensureDeferred
async def test_calendar_window_off(traps: TrapServer, tmp_path: Path) -> None:
    """--calendar-window 0 turns the rule off: the old month calendar is followed
    (until the query-variant cap stops it, as before issue #19)."""
    result = await run_crawl(
        traps.url("/"),
        tmp_path,
        SITEMAP_CALENDAR_WINDOW="0",
        SITEMAP_TRAP_MAX_QUERY_VARIANTS=5,
        SITEMAP_MAX_DEPTH=4,
    )
    decided = _decisions(result, traps.base)
    assert not [p for p, (dec, _, _) in decided.items() if dec == "calendar"]
    assert decided["/events?month=2014-12"][0] == "listed"
    assert decided["/archive/2019/04/"][0] == "listed"


@pytest_twisted.ensureDeferred
async def test_soft_404(soft: TrapServer, tmp_path: Path) -> None:
    """A site that answers 200 for every unknown address: its not-found page is
    recognised wherever it is served, whatever path it echoes."""
    soft.clear_log()
    result = await run_crawl(soft.url("/"), tmp_path)
    assert result.outcome == "published"
    decided = _decisions(result, soft.base)
    reason = "soft 404: the page the site serves for an address that cannot exist"
    assert decided == {
        "/": ("listed", "", None),
        "/real.html": ("listed", "", None),
        "/real2.html": ("listed", "", None),
        "/gone.html": ("soft-404", reason, None),
        "/missing/page": ("soft-404", reason, None),
    }
    probes = [p for p in soft.paths() if p.startswith("/sitemap-crawler-probe-")]
    assert len(probes) == 2 and probes[1].endswith(".html")  # a second, of another shape
    stats = result.stats
    assert stats["sitemap/soft404/probes"] == 2
    assert stats["sitemap/soft404/detected"] is True
    assert stats["sitemap/excluded/soft-404"] == 2
    assert "learned: soft-404 page detected" in result.summary_text()
    report = json.loads((result.state / "report.json").read_text())
    assert report["learned"]["soft404"] == {"probes": 2, "probe_status": 200, "detected": True}


@pytest_twisted.ensureDeferred
async def test_soft_404_probe_can_be_turned_off(soft: TrapServer, tmp_path: Path) -> None:
    soft.clear_log()
    result = await run_crawl(
        soft.url("/"), tmp_path, SITEMAP_SOFT404_PROBE=False, SITEMAP_SOFT404_CONTENT=False
    )
    assert not [p for p in soft.paths() if "probe" in p]
    assert len(result.listed()) == 5
    assert "sitemap/soft404/probes" not in result.stats
    # Without the probe, the "not found" pages still say what they are, and are thin.
    words = await run_crawl(soft.url("/"), tmp_path / "words", SITEMAP_SOFT404_PROBE=False)
    assert len(words.listed()) == 3
    assert words.decisions()[soft.url("/gone.html")] == (
        "soft-404",
        "soft 404: title says 'Page not found'; 18 words",
    )


@pytest_twisted.ensureDeferred
async def test_soft_404_probe_obeys_robots_txt(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with TrapServer("soft404-robots", tmp_path_factory.mktemp("robots") / "log") as server:
        result = await run_crawl(server.url("/"), tmp_path)
        assert not [p for p in server.paths() if "probe" in p]
    assert result.outcome == "published"
    assert result.stats["sitemap/soft404/probes"] == 1
    assert result.stats["sitemap/soft404/detected"] is False
    # Without the probe's answer, the not-found pages are told by their words.
    assert len(result.listed()) == 3
    assert {d for d, _ in result.decisions().values()} == {"listed", "soft-404"}


@pytest_twisted.ensureDeferred
async def test_soft_404_behind_a_redirect(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A site that redirects every unknown address to a "not found" page served
    with 200: the probe follows the redirect, and that page is not listed."""
    with TrapServer("redirect404", tmp_path_factory.mktemp("redirect") / "log") as server:
        result = await run_crawl(server.url("/"), tmp_path)
        paths = server.paths()
    decided = _decisions(result, server.base)
    assert decided["/not-found.html"] == (
        "soft-404",
        "soft 404: the page the site serves for an address that cannot exist",
        None,
    )
    assert decided["/gone.html"][:2] == ("redirect", "302 -> " + server.url("/not-found.html"))
    assert {p for p, (dec, _, _) in decided.items() if dec == "listed"} == {
        "/",
        "/real.html",
        "/real2.html",
    }
    assert len([p for p in paths if p.startswith("/sitemap-crawler-probe-")]) == 2


# -- the rules on their own ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "template", "label"),
    [
        ("http://h/cal/2024/05/17/", "h/cal/{date}/", "2024-05-17"),
        ("http://h/cal/2024-05-17/", "h/cal/{date}/", "2024-05-17"),
        ("http://h/blog/2024/05/", "h/blog/{date}/", "2024-05"),
        ("http://h/news/2019/", "h/news/{date}/", "2019"),
        ("http://h/2024-05.html", "h/{date}.html", "2024-05"),
        ("http://h/p/2019/05/a-post/", "h/p/{date}/a-post/", "2019-05"),
        ("http://h/e?date=2024-05-17&x=1", "h/e?x&{date}", "2024-05-17"),
        ("http://h/e?x=1&y=2024&m=5&d=17", "h/e?x&{date}", "2024-05-17"),
        ("http://h/e?date=20240517", "h/e?{date}", "2024-05-17"),
        ("http://h/e?month=2024-05", "h/e?{date}", "2024-05"),
        ("http://h/e?y=2024&m=5", "h/e?{date}", "2024-05"),
        ("http://h/e?year=2024&month=5&day=17", "h/e?{date}", "2024-05-17"),
        ("http://h/e?year=2024", "h/e?{date}", "2024"),
        # Not dates: versions, numbers, identifiers.
        ("http://h/3.11/library/os.html", None, None),
        ("http://h/3/whatsnew/3.12.html", None, None),
        ("http://h/library/2to3.html", None, None),
        ("http://h/product/123456/", None, None),
        ("http://h/cal/2024/13/", "h/cal/{date}/13/", "2024"),
        ("http://h/e?date=tomorrow", None, None),
        ("http://h/e?m=5", None, None),
    ],
)
def test_date_of(url: str, template: str | None, label: str | None) -> None:
    dated = date_of(url)
    assert (dated.template if dated else None, dated.label if dated else None) == (
        template,
        label,
    )


@pytest.mark.parametrize(
    ("text", "days"), [("365d", 365), ("52w", 364), ("12m", 360), ("1y", 365), ("30", 30), ("0", 0)]
)
def test_parse_window(text: str, days: int) -> None:
    assert parse_window(text) == timedelta(days=days)


@pytest.mark.parametrize("text", ["", "a year", "-3d", "1.5y", "3h"])
def test_parse_window_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_window(text)


def test_learning_needs_evidence_and_no_contradiction() -> None:
    base = "http://h/list"
    learner = ParamLearner()
    learner.check(base + "?sort=a")  # discovered: the path has variants
    assert learner.observe(base, "H") == []
    assert learner.observe(base + "?sort=a", "H") == []  # one agreeing pair: not enough
    assert learner.observe(base + "?sort=b", "H") == ["sort"]
    # A parameter seen to change the page once is never learned on that path.
    assert learner.observe(base + "?page=2", "P2") == []
    assert learner.observe(base + "?page=3", "P2") == []
    assert learner.observe(base + "?page=4", "P2") == []
    assert learner.summary() == {base: ["sort"]}
    # Learned, it is forgotten on the first page that shows it matters.
    assert learner.observe(base + "?page=2&sort=c", "other") == []
    assert learner.summary() == {}


def test_settle_does_not_depend_on_the_crawl_order() -> None:
    """Night one fetched every variant before learning; night two cut them at the
    frontier with another target: the books close on the same decisions."""
    b = "http://h/shop/"
    learned = {b: ["sort"]}

    def bare(url: str) -> tuple[str, str | None]:
        return ("listed", None)

    night1: list[tuple[str, str, str | None]] = [
        (b + "?color=red", "listed", None),
        (b + "?color=red&sort=1", "listed", None),
        (b + "?sort=1", "listed", None),
        (b + "?sort=2", "listed", None),
    ]
    night2: list[tuple[str, str, str | None]] = [
        (b + "?color=red", "listed", None),
        (b + "?color=red&sort=1", "ignored-parameter", b + "?sort=1"),
        (b + "?sort=1", "listed", None),
        (b + "?sort=2", "ignored-parameter", b + "?sort=1"),
    ]

    def final(rows: list[tuple[str, str, str | None]]) -> dict[str, tuple[str, str | None]]:
        out = {url: (decision, target) for url, decision, target in rows}
        for url, decision, _, target in settle(rows, learned, bare, 20):
            out[url] = (decision, target)
        return out

    assert (
        final(night1)
        == final(night2)
        == {
            b + "?color=red": ("listed", None),
            b + "?color=red&sort=1": ("ignored-parameter", b + "?color=red"),
            b + "?sort=1": ("ignored-parameter", b),
            b + "?sort=2": ("ignored-parameter", b),
        }
    )


def test_bag_hash_ignores_the_order_only() -> None:
    def hashes(*items: str) -> tuple[str | None, str | None]:
        body = "<html><body><ul>" + "".join(
            f'<li><a href="/p/{i}">sock {i}</a></li>' for i in items
        )
        response = HtmlResponse("http://h/shop/", body=(body + "</ul></body></html>").encode())
        root = parse_html(response)
        main = main_content(root)[0]
        return main, bag_hash(root)

    plain, name_sorted, other = hashes("1", "2", "3"), hashes("3", "2", "1"), hashes("1", "2", "4")
    assert plain[0] != name_sorted[0] and plain[1] == name_sorted[1]
    assert plain[1] != other[1]


def test_soft_404_print_ignores_the_echoed_path() -> None:
    template = "Page not found. Sorry, the page {} could not be found. Try the home page."
    probe_path = "/sitemap-crawler-probe-1f2e"
    probe = page_print(template.format(probe_path), "http://h" + probe_path)
    other = page_print(template.format("/a/b.html"), "http://h/a/b.html")
    real = page_print("A real page about socks. Try the home page.", "http://h/a/b.html")
    assert probe is not None and other is not None and real is not None
    assert probe == other
    assert probe[0] != real[0] and bin(probe[1] ^ real[1]).count("1") > 3


#: A short page's title and heading, and whether they say it is not there. A number
#: is no evidence: 404 counts as a status, with "error" or "HTTP", or alone.
SAYS_404 = [
    # The false alarm seen on a real site, and its kin.
    ("Chapter twelve filler page 404", "Filler page 404", None),
    ("Route 404", "Route 404", None),
    ("Page 404 of the archive", "Archive", None),
    ("404 ways to cook eggs", "Eggs", None),
    ("Bus 404 timetable", "Stops of bus 404", None),
    # What says so: "not found", the status named as one, or 404 alone.
    ("Page not found", "Sorry", "title says 'Page not found'"),
    ("Error 404", "Sorry", "title says 'Error 404'"),
    ("404 Error | Example", "Sorry", "title says '404 Error | Example'"),
    ("HTTP 404", "Sorry", "title says 'HTTP 404'"),
    ("Example", "Error code: 404", "heading says 'Error code: 404'"),
    ("404", "Sorry", "title says '404'"),
    ("Example", "404!", "heading says '404!'"),
    ("404 - Not Found", "Sorry", "title says '404 - Not Found'"),
    ("Erreur 404 - page introuvable", "Oups", "title says 'Erreur 404 - page introuvable'"),
    ("Fehler 404", "Hoppla", "title says 'Fehler 404'"),
]


@pytest.mark.parametrize(("title", "heading", "reason"), SAYS_404)
def test_a_number_404_is_no_evidence(title: str, heading: str, reason: str | None) -> None:
    body = f"<h1>{heading}</h1>\n<p>" + " ".join(["word"] * 12) + "</p>"
    html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    response = HtmlResponse("http://h/archive/404", body=html.encode())
    words = 12 + len(heading.split())
    said = says_not_found(parse_html(response), title)
    assert said == (f"{reason}; {words} words" if reason else None)


def test_a_thin_page_whose_text_says_error_404() -> None:
    html = "<html><body><main><p>Fehler 404: diese Seite gibt es nicht.</p></main></body></html>"
    response = HtmlResponse("http://h/x", body=html.encode())
    said = says_not_found(parse_html(response), "Example")
    assert said == "text says 'Fehler 404: diese Seite gibt es nicht.'; 7 words"
