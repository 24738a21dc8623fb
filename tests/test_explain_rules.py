"""explain equals the crawl (issue 23): the frontier, the distributed frontier and
``explain`` judge with one rule book; ``explain`` builds it from what the run
recorded. On a real crawl of the trap site (tests/trapserver.py, mode ``rules``):
every URL the crawl refused before fetching it, and every URL it fetched, put to
the run's rules by ``explain``, gets the crawl's decision; URLs it never saw are
judged with the run's values, not the settings'."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from crawler.cli import main
from crawler.crawl.traps import TrapDetector
from settings import SITEMAP_TRAP_MAX_QUERY_VARIANTS, SITEMAP_TRAP_MAX_REPEATS
from tests.conftest import ROOT, CrawlResult, TrapServer, run_crawl

#: The run's own values, unlike the settings' (2 and 40): explain must follow them.
REPEATS = 3
VARIANTS = 15
DEPTH = 4
REDIRECTS = 2

#: Every rule of the rule book refuses something on the trap site (robots.txt where
#: the page is fetched), so each is compared.
EVERY_RULE = {
    "host",
    "length",
    "include/exclude",
    "hops",
    "calendar",
    "parameters",
    "traps",
    "query-variants",
    "depth",
    "robots.txt",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapServer]:
    with TrapServer("rules", tmp_path_factory.mktemp("rules") / "log") as server:
        yield server


def _crawl(tmp: Path, url: str, **settings: Any) -> CrawlResult:
    result: CrawlResult = pytest_twisted.blockon(
        Deferred.fromCoroutine(run_crawl(url, tmp, **settings))
    )
    assert result.outcome == "published"
    return result


@pytest.fixture(scope="module")
def crawled(site: TrapServer, tmp_path_factory: pytest.TempPathFactory) -> CrawlResult:
    return _crawl(
        tmp_path_factory.mktemp("crawl"),
        site.url("/"),
        SITEMAP_TRAP_MAX_REPEATS=REPEATS,
        SITEMAP_TRAP_MAX_QUERY_VARIANTS=VARIANTS,
        SITEMAP_MAX_DEPTH=DEPTH,
        SITEMAP_MAX_REDIRECTS=REDIRECTS,
        SITEMAP_EXCLUDE=[r"/skip/"],
    )


@pytest.fixture(scope="module")
def capped(site: TrapServer, tmp_path_factory: pytest.TempPathFactory) -> CrawlResult:
    """The page cap: four URLs queued, every later one left out; a second start URL
    that --exclude matches (start URLs are exempt)."""
    return _crawl(
        tmp_path_factory.mktemp("capped"),
        site.url("/"),
        SITEMAP_MAX_PAGES=4,
        SITEMAP_START_URLS=[site.url("/skip/this.html")],
        SITEMAP_EXCLUDE=[r"/skip/"],
    )


def ask(capsys: pytest.CaptureFixture[str], result: CrawlResult | Path, url: str) -> dict[str, Any]:
    state = result if isinstance(result, Path) else result.state
    code = main(["explain", url, "--state", str(state), "--json"])
    out, err = capsys.readouterr()
    assert not err
    found: dict[str, Any] = json.loads(out)
    assert code == (0 if found["known"] else 1)
    return found


def rows(result: CrawlResult | Path) -> list[dict[str, Any]]:
    state = result if isinstance(result, Path) else result.state
    db = sqlite3.connect(state / "ledger.sqlite")
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM urls ORDER BY url")]
    finally:
        db.close()


def refused(found: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in found["checks"] if c["ok"] is False), None)


def assert_explain_equals_the_crawl(
    capsys: pytest.CaptureFixture[str], result: CrawlResult | Path
) -> dict[str, int]:
    """Every URL of the run put to explain: a URL refused before it was fetched gets
    the same decision, rule, reason and target; a URL the frontier queued passes
    (robots.txt refuses what it refused). Returns how many URLs each rule refused."""
    by_rule: dict[str, int] = {}
    for row in rows(result):
        found = ask(capsys, result, row["url"])
        judged = found["rules"]
        check = refused(judged)
        if row["rule"] is not None:
            by_rule[row["rule"]] = by_rule.get(row["rule"], 0) + 1
            assert check is not None, (row["url"], row["decision"], judged["checks"])
            assert (check["rule"], check["decision"], check["detail"], check.get("target")) == (
                row["rule"],
                row["decision"],
                row["reason"],
                row["target"],
            ), row["url"]
            assert judged["would_decide"] == row["decision"]
        elif row["decision"] == "robots-disallowed":
            by_rule["robots.txt"] = by_rule.get("robots.txt", 0) + 1
            assert check is not None and check["rule"] == "robots.txt", row["url"]
            assert judged["would_decide"] == "robots-disallowed"
        elif row["decision"] in ("ignored-parameter", "facet-combination"):
            # Fetched before the parameter was learned (or the path known as
            # faceted), decided when the books were closed: the final state
            # explain judges with gives the same decision.
            settled = f"settled:{row['decision']}"
            by_rule[settled] = by_rule.get(settled, 0) + 1
            assert check is not None, (row["url"], judged["checks"])
            assert (check["decision"], check["detail"], check.get("target")) == (
                row["decision"],
                row["reason"],
                row["target"],
            ), row["url"]
        else:
            # Queued, then fetched: every rule let it through.
            assert check is None and judged["would_fetch"] is True, (row["url"], judged)
    return by_rule


def test_explain_equals_the_crawl(capsys: pytest.CaptureFixture[str], crawled: CrawlResult) -> None:
    by_rule = assert_explain_equals_the_crawl(capsys, crawled)
    assert set(by_rule) >= EVERY_RULE, by_rule


def test_explain_equals_the_crawl_with_a_page_cap(
    capsys: pytest.CaptureFixture[str], capped: CrawlResult, site: TrapServer
) -> None:
    by_rule = assert_explain_equals_the_crawl(capsys, capped)
    assert by_rule.get("pages", 0) > 5, by_rule
    # Every start URL is exempt from --exclude, not only the first.
    second = ask(capsys, capped, site.url("/skip/this.html"))
    assert second["decision"] == "listed"
    exempt = next(c for c in second["rules"]["checks"] if c["rule"] == "include/exclude")
    assert (exempt["ok"], exempt["detail"]) == (True, "a start URL (exempt)")


def _unseen(
    capsys: pytest.CaptureFixture[str], result: CrawlResult | Path, url: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    found = ask(capsys, result, url)
    assert not found["known"], url
    return found, refused(found)


def test_a_url_never_seen_is_judged_with_the_runs_values(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: TrapServer
) -> None:
    """The run allowed a segment 3 times and 15 query variants a path; the settings
    say 2 and 40. explain follows the run."""
    assert (SITEMAP_TRAP_MAX_REPEATS, SITEMAP_TRAP_MAX_QUERY_VARIANTS) != (REPEATS, VARIANTS)
    thrice = site.url("/q/q/q/")
    settings_traps = TrapDetector(
        max_repeats=SITEMAP_TRAP_MAX_REPEATS, max_segments=20, max_query_variants=40
    )
    assert settings_traps.shape(thrice) is not None  # the settings would refuse it
    found, check = _unseen(capsys, crawled, thrice)
    assert check is None and found["would_fetch"] is True
    found, check = _unseen(capsys, crawled, site.url("/q/q/q/q/"))
    assert check is not None
    assert (check["rule"], check["detail"]) == ("traps", "path segment 'q' repeated 4 times")
    # The list's 15 query variants were fetched: a 16th is a trap (the settings'
    # 40 would let it through).
    found, check = _unseen(capsys, crawled, site.url("/list?page=99"))
    assert check is not None and found["would_decide"] == "trap"
    assert check["detail"] == f"more than {VARIANTS} query variants of /list"


def test_a_url_never_seen_meets_calendars_and_learned_parameters(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: TrapServer
) -> None:
    today = datetime.now(UTC).date()
    with sqlite3.connect(crawled.state / "ledger.sqlite") as db:
        (scope,) = db.execute("SELECT value FROM meta WHERE name = 'scope'").fetchone()
    recorded = json.loads(scope)
    assert recorded["calendar_today"] == today.isoformat()
    assert recorded["trap_max_repeats"] == REPEATS and recorded["starts"] == [site.url("/")]
    # A day of the calendar far from where the crawl entered it, reached through
    # its prev/next links.
    found, check = _unseen(capsys, crawled, site.url(f"/cal/{today + timedelta(days=9)}/"))
    assert check is not None and check["rule"] == "calendar"
    assert check["detail"] == "calendar: more than 2 steps from where the sequence was entered"
    found, check = _unseen(capsys, crawled, site.url("/events?month=2015-06"))
    assert check is not None
    assert check["detail"] == "calendar beyond window: 2015-06 is more than 365 days from today"
    # A variant of the shop with a learned parameter is the shop; a combination of
    # its facets is left out.
    found, check = _unseen(capsys, crawled, site.url("/shop/?ref=new"))
    assert check is not None
    assert (check["decision"], check["target"]) == ("ignored-parameter", site.url("/shop/"))
    found, check = _unseen(capsys, crawled, site.url("/shop/?size=m&sort=name&color=blue"))
    assert check is not None and check["decision"] in ("ignored-parameter", "facet-combination")
    # A page never linked, none of whose rules refuses it; the depth cap cannot be
    # applied without a page linking it: it is named.
    found, check = _unseen(capsys, crawled, site.url("/deep/3?x=1"))
    assert check is None and found["would_fetch"] is True, found["checks"]
    depth = next(c for c in found["checks"] if c["rule"] == "depth")
    assert depth["detail"].startswith(f"max depth {DEPTH}: followed when linked")


@pytest.mark.parametrize("fetch", [[], ["--no-fetch"]], ids=["coordinator-fetches", "no-fetch"])
def test_explain_equals_a_crawl_with_two_processes(
    capsys: pytest.CaptureFixture[str], site: TrapServer, tmp_path: Path, fetch: list[str]
) -> None:
    """The distributed frontier calls the same rule book; the counted rules (query
    variants, depth) are settled in Redis and come back as the same refusals. Every
    rule refused something here too, so each was compared."""
    state = tmp_path / "state"
    crawl = subprocess.run(
        [
            sys.executable, "-m", "crawler.cli", "crawl", site.url("/"),
            "--out", str(tmp_path / "public"), "--state", str(state), "--processes", "2",
            "--exclude", "/skip/", "--max-depth", str(DEPTH),
            "-s", f"SITEMAP_TRAP_MAX_REPEATS={REPEATS}",
            "-s", f"SITEMAP_TRAP_MAX_QUERY_VARIANTS={VARIANTS}",
            "-s", f"SITEMAP_MAX_REDIRECTS={REDIRECTS}", *fetch,
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert crawl.returncode == 0, crawl.stderr
    by_rule = assert_explain_equals_the_crawl(capsys, state)
    assert set(by_rule) >= EVERY_RULE, by_rule


def test_a_ledger_without_the_rule_column_cannot_count(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: TrapServer, tmp_path: Path
) -> None:
    """A ledger of an earlier version does not say which rule refused a URL: the
    counted rules answer "?" instead of counting every URL as let through."""
    import shutil

    state = tmp_path / "state"
    shutil.copytree(crawled.state, state)
    with sqlite3.connect(state / "ledger.sqlite") as db:
        db.execute("ALTER TABLE urls DROP COLUMN rule")
    db.close()
    found, check = _unseen(capsys, state, site.url("/list?page=99"))
    assert check is None and found["would_fetch"] is None
    unknown = [c["rule"] for c in found["checks"] if c["ok"] is None]
    assert unknown == ["query-variants", "pages"]
    # The rules that need no count still answer.
    found, check = _unseen(capsys, state, site.url("/q/q/q/q/"))
    assert check is not None and check["rule"] == "traps"
    known = ask(capsys, state, site.url("/about.html"))
    assert known["known"] and known["rules"]["would_fetch"] is None
