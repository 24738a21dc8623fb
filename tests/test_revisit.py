"""The revisit schedule of nightly runs (crawler.ledger.schedule, docs/nightly.md):
nights simulated by moving the one clock (crawler.core.clock) a day at a time, while
the test site's own clock stays where it is. An unchanged night fetches only what is
due and the signals, and publishes the same set; a changed page shrinks its interval;
an unchanged one reaches the maximum and is verified at least that often; the load
is spread; a link that disappears and a link that appears are verified that night;
``--full``, changed options and a ledger without a schedule make a full night."""

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

from crawler.core import clock as clock_module
from crawler.ledger.schedule import BASIS_SETTINGS, DAY, RevisitPolicy, later
from crawler.ledger.schedule import COLUMNS as SCHEDULE_COLUMNS
from tests import wpserver as wp
from tests.conftest import ROOT, CrawlResult, run_crawl
from tests.served import ServedSite
from tests.test_nightly import NightlySite, published
from tests.test_nightly import night as full_night

PAGES = [f"/p{i}.html" for i in range(1, 29)]


class Clock:
    """The crawl's clock, moved forward by whole days."""

    def __init__(self) -> None:
        self.offset = 0.0

    def advance(self, days: float = 1) -> None:
        self.offset += days * DAY


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    now, timestamp = clock_module.now, clock_module.timestamp
    monkeypatch.setattr(clock_module, "now", lambda: now() + timedelta(seconds=moved.offset))
    monkeypatch.setattr(clock_module, "timestamp", lambda: timestamp() + moved.offset)
    return moved


@pytest.fixture
def site(tmp_path: Path) -> Iterator[NightlySite]:
    with NightlySite(tmp_path) as served:
        served.home(*PAGES)
        for path in PAGES:
            served.page(path, f"page {path} <a href='/'>home</a>")
        yield served


async def night(site: NightlySite, tmp_path: Path, **overrides: Any) -> CrawlResult:
    """A night with the revisit schedule (the default settings); it publishes."""
    run = await full_night(site, tmp_path, **{"SITEMAP_REVISIT_FULL": False, **overrides})
    assert run.outcome == "published", run.stats.get("sitemap/message")
    return run


def fetched(site: NightlySite) -> list[str]:
    """The pages the last night asked for (not robots.txt, not the soft-404 probe)."""
    return [
        r["path"]
        for r in site.requests()
        if r["path"] != "/robots.txt" and "sitemap-crawler-probe" not in r["path"]
    ]


def schedule(run: CrawlResult) -> dict[str, dict[str, Any]]:
    return {url: row for url, row in run.ledger_rows().items() if row["decision"] != "queued"}


def test_policy_grows_shrinks_and_stays_within_bounds() -> None:
    policy = RevisitPolicy(1.0, 7.0, now=20000 * DAY)
    # No date of its own: the minimum when a scheduled night finds it, the maximum
    # on a full night (the whole site new to the schedule, spread).
    assert policy.verified(None, None, [])["revisit_days"] == 1.0
    whole = RevisitPolicy(1.0, 7.0, now=20000 * DAY, full=True)
    assert whole.verified(None, None, [])["revisit_days"] == 7.0
    old = policy.verified(None, None, ["1998-01-01"])  # an old page: the maximum
    assert old["revisit_days"] == 7.0
    # 20000 days after 1970 is 2024-10-04: a page edited two days before, two days.
    recent = policy.verified(None, None, ["2024-10-02T00:00:00Z"])
    assert recent["revisit_days"] == pytest.approx(2.0)
    prev = {"revisit_days": 2.0, "due_at": 19999 * DAY, "checks": 3, "changes": 1}
    assert policy.verified(prev, False, [])["revisit_days"] == pytest.approx(2.4)
    changed = policy.verified(prev, True, [])
    assert changed["revisit_days"] == pytest.approx(1.6)
    assert (changed["checks"], changed["changes"]) == (4, 2)
    assert policy.verified({**prev, "revisit_days": 1.0}, True, [])["revisit_days"] == 1.0
    assert policy.verified({**prev, "revisit_days": 7.0}, False, [])["revisit_days"] == 7.0
    # Due tonight: within half the minimum of the run's start, whatever the minutes.
    assert policy.due({"decision": "listed", "status": 200, "due_at": 20000.4 * DAY})
    assert not policy.due({"decision": "listed", "status": 200, "due_at": 20000.6 * DAY})
    # A failure is always asked again; a full night asks everything.
    assert policy.due({"decision": "fetch-error", "status": None, "due_at": 21000 * DAY})
    full = RevisitPolicy(1.0, 7.0, now=20000 * DAY, full=True)
    assert full.due({"decision": "listed", "status": 200, "due_at": 21000 * DAY})
    spread = [full.verified(None, None, [])["due_at"] for _ in range(14)]
    nights = sorted(round((due - full.now) / DAY) for due in spread)
    assert nights == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]


def test_the_settings_that_decide_the_set_exist() -> None:
    from scrapy.settings import Settings

    project = Settings()
    project.setmodule("settings")
    assert [name for name in BASIS_SETTINGS if name not in project] == []


def test_a_signal_is_later_only_in_the_sites_own_time() -> None:
    assert later("2024-05-02T10:00:00Z", "2024-05-01T10:00:00+00:00")
    assert not later("2024-05-01T10:00:00Z", "2024-05-01T10:00:00+00:00")
    assert not later("2024-05-01", "2024-05-01T10:00:00+00:00")
    assert later("2024-05-02", "2024-05-01T10:00:00+00:00")
    assert not later("not a date", None)


@pytest_twisted.ensureDeferred
async def test_unchanged_nights_fetch_what_is_due_and_publish_the_same_set(
    site: NightlySite, tmp_path: Path, clock: Clock
) -> None:
    run0 = await night(site, tmp_path)
    assert run0.stats.get("sitemap/full_night") == "no previous run"
    first = published(run0.out)
    assert len(first) == 29 and sorted(fetched(site)) == sorted(["/", *PAGES])
    seen: dict[str, list[int]] = {path: [] for path in PAGES}
    for n in range(1, 15):
        clock.advance()
        run = await night(site, tmp_path)
        assert published(run.out) == first  # the same set, the same lastmod
        asked = fetched(site)
        assert asked.count("/") == 1  # the start URL, every night
        pages = [p for p in asked if p != "/"]
        assert len(pages) == len(set(pages))
        # Spread evenly: 28 pages (and the home page) over 7 nights.
        assert 3 <= len(pages) <= 5, (n, pages)
        for path in pages:
            seen[path].append(n)
        assert run.stats.get("sitemap/schedule/kept") == 28 - len(pages)
        assert run.stats.get("sitemap/schedule/verified") == len(pages) + 1
        assert not run.stats.get("sitemap/schedule/changed")
    for path, nights in seen.items():
        # Never unverified for more than the maximum (7 nights), each verified twice.
        gaps = [b - a for a, b in zip([0, *nights], [*nights, 15], strict=True)]
        assert len(nights) == 2 and max(gaps) <= 7, (path, nights)
    rows = schedule(run)
    assert all(rows[site.url(p)]["revisit_days"] == 7.0 for p in PAGES)
    assert all(rows[site.url(p)]["checks"] == 2 for p in PAGES)
    html = (run.state / "report.html").read_text()
    assert "<h2>Revisit schedule</h2>" in html and "requests saved" in html
    report = json.loads((run.state / "report.json").read_text())
    assert report["schedule"]["kept"] == report["schedule"]["requests_saved"] > 20
    # explain says when a URL was verified, its interval and when it is due next.
    said = explain_json(run, site.url("/p5.html"))["revisit"]
    row = rows[site.url("/p5.html")]
    assert said["interval_days"] == 7.0 and (said["checks"], said["changes"]) == (2, 0)
    due = datetime.fromtimestamp(row["due_at"], UTC).isoformat(timespec="seconds")
    assert said["due"] == due
    assert said["verified"] < due


def explain_json(run: CrawlResult, url: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "explain", url, "--state", str(run.state), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest_twisted.ensureDeferred
async def test_a_changed_page_shrinks_its_interval(
    site: NightlySite, tmp_path: Path, clock: Clock
) -> None:
    await night(site, tmp_path)
    clock.advance(7)  # everything is due
    site.page("/p3.html", "page 3, edited <a href='/'>home</a>")
    run = await night(site, tmp_path)
    assert sorted(fetched(site)) == sorted(["/", *PAGES])
    assert run.stats.get("sitemap/schedule/changed") == 1
    rows = schedule(run)
    edited = rows[site.url("/p3.html")]
    assert edited["revisit_days"] == pytest.approx(7 * 0.8)
    assert (edited["checks"], edited["changes"]) == (1, 1)
    same = rows[site.url("/p4.html")]
    assert (same["revisit_days"], same["checks"], same["changes"]) == (7.0, 1, 0)
    assert same["due_at"] == pytest.approx(same["verified_at"] + 7 * DAY)


@pytest_twisted.ensureDeferred
async def test_a_link_gone_and_a_link_new_are_verified_the_same_night(
    site: NightlySite, tmp_path: Path, clock: Clock
) -> None:
    site.page("/p1.html", "page 1 <a href='/p2.html'>two</a> <a href='/'>home</a>")
    run0 = await night(site, tmp_path)
    rows = schedule(run0)
    due = rows[site.url("/p2.html")]["due_at"] - rows[site.url("/")]["verified_at"]
    assert due > 1.5 * DAY  # p2 is not due on night 1: only a signal fetches it
    # The home page drops p2 (trashed: 404) and links a new page; p1 still links p2.
    site.home(*[p for p in PAGES if p != "/p2.html"], "/new.html")
    del site.pages["/p2.html"]
    site.page("/new.html", "new <a href='/'>home</a>")
    clock.advance()
    run = await night(site, tmp_path)
    asked = fetched(site)
    assert "/p2.html" in asked and "/new.html" in asked
    lastmods = published(run.out)
    assert site.url("/p2.html") not in lastmods
    assert site.url("/new.html") in lastmods
    assert len(lastmods) == 29


@pytest_twisted.ensureDeferred
async def test_a_sitemap_whose_dates_are_stamps_names_no_page(
    site: NightlySite, tmp_path: Path, clock: Clock
) -> None:
    entries = "".join(f"<url><loc>{site.url(p)}</loc><lastmod>%NOW%</lastmod></url>" for p in PAGES)
    site.pages["/sitemap.xml"] = {
        "body": f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    }
    site.robots = f"User-agent: *\nAllow: /\nSitemap: {site.url('/sitemap.xml')}\n"
    await night(site, tmp_path)
    clock.advance()
    run = await night(site, tmp_path)
    assert "/sitemap.xml" in fetched(site)
    assert run.stats.get("sitemap/signals/stamped_sitemaps") == 1
    assert not run.stats.get("sitemap/schedule/signalled")
    assert len(fetched(site)) <= 8  # the home page, the sitemap and the night's share


@pytest_twisted.ensureDeferred
async def test_full_nights(site: NightlySite, tmp_path: Path, clock: Clock) -> None:
    await night(site, tmp_path)
    clock.advance()
    run = await night(site, tmp_path, SITEMAP_REVISIT_FULL=True)
    assert run.stats.get("sitemap/full_night") == "asked for (--full)"
    assert len(fetched(site)) == 29
    clock.advance()
    run = await night(site, tmp_path, SITEMAP_EXCLUDE=["p28"])
    assert "options" in str(run.stats.get("sitemap/full_night"))
    assert len(fetched(site)) == 28
    clock.advance()
    run = await night(site, tmp_path, SITEMAP_EXCLUDE=["p28"])
    assert run.stats.get("sitemap/full_night") is None
    assert len(fetched(site)) < 10


@pytest_twisted.ensureDeferred
async def test_a_ledger_without_a_schedule_is_read_and_spread(
    site: NightlySite, tmp_path: Path, clock: Clock
) -> None:
    run0 = await night(site, tmp_path)
    first = published(run0.out)
    # The ledger as the version before the schedule wrote it: no columns, no basis.
    db = sqlite3.connect(run0.state / "ledger.sqlite")
    for column in (*SCHEDULE_COLUMNS, "own_hash"):
        db.execute(f"ALTER TABLE urls DROP COLUMN {column}")
    db.execute("DELETE FROM meta WHERE name = 'revisit_basis'")
    db.commit()
    db.close()
    clock.advance()
    run = await night(site, tmp_path)
    assert run.stats.get("sitemap/full_night") == "the previous run kept no revisit schedule"
    assert len(fetched(site)) == 29 and published(run.out) == first
    clock.advance()
    run = await night(site, tmp_path)
    assert published(run.out) == first
    assert 3 <= len(fetched(site)) - 1 <= 5


@pytest_twisted.ensureDeferred
async def test_a_budget_carries_what_is_due_to_the_next_night_most_overdue_first(
    site: NightlySite, tmp_path: Path, clock: Clock
) -> None:
    run0 = await night(site, tmp_path)
    first, rows0 = published(run0.out), schedule(run0)
    for path in PAGES:
        site.pages[path]["delay"] = 0.5
    clock.advance(7)  # every page due
    run = await night(site, tmp_path, CLOSESPIDER_TIMEOUT=1.2, CONCURRENT_REQUESTS_PER_DOMAIN=2)
    carried = run.stats.get("sitemap/schedule/carried", 0)
    assert carried >= 3, carried
    assert published(run.out) == first  # the due pages left keep their record
    rows = schedule(run)
    left = {url for url, row in rows.items() if row["verified_at"] == rows0[url]["verified_at"]}
    assert len(left) == carried
    assert all(rows[url]["due_at"] == rows0[url]["due_at"] for url in left)  # still due
    # The next night asks the carried pages first, and those alone are due.
    for path in PAGES:
        site.pages[path]["delay"] = 0
    clock.advance()
    await night(site, tmp_path)
    assert {site.url(p) for p in fetched(site) if p != "/"} == left


# -- a WordPress-like site: the REST API, the feed and the core sitemaps as signals ------


class WordPress(ServedSite):
    """tests/wpserver.py serving a blog whose state the test edits between nights."""

    def __init__(self, tmp: Path, posts: int = 60, robots_extra: str = "") -> None:
        self.file, self.log = tmp / "wp.json", tmp / "wp.log"
        self.state = wp.make_site(posts, 3)
        self.state["robots_extra"] = robots_extra
        wp.save(self.state, self.file)
        super().__init__("tests.wpserver", "--site", str(self.file), "--log", str(self.log))

    def save(self) -> None:
        wp.save(self.state, self.file)

    def requests(self) -> list[str]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [json.loads(line)["path"] for line in lines if line]


@pytest.fixture
def blog(tmp_path: Path) -> Iterator[WordPress]:
    with WordPress(tmp_path) as served:
        yield served


async def wp_night(blog: WordPress, tmp_path: Path, **overrides: Any) -> CrawlResult:
    """A night of *blog* with the revisit schedule; it publishes."""
    blog.save()
    blog.log.write_text("")
    run = await run_crawl(
        blog.url("/"),
        tmp_path,
        SITEMAP_OUT_DIR=str(tmp_path / "public"),
        SITEMAP_STATE_DIR=str(tmp_path / "state"),
        SITEMAP_REVISIT_FULL=False,
        **overrides,
    )
    assert run.outcome == "published", run.stats.get("sitemap/message")
    return run


def server_now() -> str:
    """The site's own clock (the test moves only the crawl's)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")


@pytest_twisted.ensureDeferred
async def test_a_wordpress_night_finds_a_new_an_edited_and_a_trashed_post(
    blog: WordPress, tmp_path: Path, clock: Clock
) -> None:
    run0 = await wp_night(blog, tmp_path)
    night0 = len(blog.requests())
    first = published(run0.out)
    clock.advance()
    run1 = await wp_night(blog, tmp_path)
    asked = blog.requests()
    assert published(run1.out) == first  # nothing changed: the same entries
    assert len(asked) <= 0.4 * night0, (len(asked), night0)
    assert any(path.startswith("/wp-json/wp/v2/posts?") for path in asked)
    assert "/feed/" in asked and "/wp-sitemap.xml" in asked
    # An editor publishes a post, edits one deep in the archive, trashes another.
    publish_time = server_now()
    new = wp.publish_post(blog.state, publish_time)
    edit_time = server_now()
    edited = wp.edit_post(blog.state, 40, edit_time)
    trashed = wp.trash_post(blog.state, 50)
    clock.advance()
    run2 = await wp_night(blog, tmp_path)
    asked = blog.requests()
    assert len(asked) <= 0.5 * night0, (len(asked), night0)
    lastmods = published(run2.out)
    assert blog.url(new) in lastmods
    assert blog.url(trashed) not in lastmods
    # The page's own modification time, though seconds before the fetch: an edit
    # (its content changed), not a template stamping "now".
    assert lastmods[blog.url(edited)] == edit_time + "+00:00"
    assert edited in asked and trashed in asked
    rows = run2.ledger_rows()
    assert rows[blog.url(trashed)]["decision"] == "status"
    # The full crawl of the same site tonight publishes the same set.
    full = await run_crawl(blog.url("/"), tmp_path / "full")
    assert set(published(full.out)) == set(lastmods)
    # The new post gave a date too close to its fetch to be believed yet (a theme
    # stamping "now" looks the same): it starts at the minimum interval, and is
    # verified again the next night (a day later, its date is believed).
    assert rows[blog.url(new)]["revisit_days"] == 1.0
    assert lastmods[blog.url(new)] in (None, publish_time + "+00:00")
    clock.advance()
    await wp_night(blog, tmp_path)
    assert new in blog.requests()


@pytest_twisted.ensureDeferred
async def test_a_wordpress_api_robots_txt_disallows_is_no_signal(
    tmp_path: Path, clock: Clock
) -> None:
    blog = WordPress(tmp_path, posts=30, robots_extra="User-agent: *\nDisallow: /wp-json/\n")
    try:
        run0 = await wp_night(blog, tmp_path)
        first = published(run0.out)
        edited = wp.edit_post(blog.state, 20, server_now())
        clock.advance()
        run = await wp_night(blog, tmp_path)
        assert not any(p.startswith("/wp-json/wp/v2/") for p in blog.requests())
        assert run.stats.get("sitemap/signals/api_failed")  # asked, refused by robots.txt
        # The core sitemap's <lastmod> still names the edit: verified that night.
        assert edited in blog.requests()
        assert published(run.out)[blog.url(edited)] != first[blog.url(edited)]
    finally:
        blog.stop()
