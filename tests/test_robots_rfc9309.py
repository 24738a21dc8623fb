"""robots.txt by RFC 9309, against real servers on 127.0.0.1 (``tests/robotsserver.py``):
a redirect to another host, a rule line across the 500 KiB mark, an 11 MiB file,
groups named by a prefix of our token, an unknown line inside a group, the
compatible form of the User-Agent, and a robots.txt that changes during a crawl."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from crawler.cli import command_parser
from crawler.commands.options import site_settings
from tests.conftest import ROOT, run_crawl
from tests.robotsserver import RobotsServer
from tests.test_redis import published
from tests.test_robots import crawled

SMALL = {"SITEMAP_MAX_DEPTH": 1}
COMPATIBLE_UA = "Mozilla/5.0 (compatible; AcmeBot/1.0; +https://acme.example/bot)"


@pytest.fixture(scope="module")
def robots_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``robots_servers(mode, **options)`` starts a :class:`RobotsServer` (one per
    call: each test gets a fresh log and fresh counters)."""
    started: list[RobotsServer] = []
    tmp = tmp_path_factory.mktemp("robotsservers")

    def start(mode: str, **options: Any) -> RobotsServer:
        log = tmp / f"{len(started)}-{mode}.log"
        srv = RobotsServer(mode, log, **options)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


def paths(server: RobotsServer) -> list[str]:
    return [r["path"] for r in server.requests()]


@pytest_twisted.ensureDeferred
async def test_robots_redirect_to_another_host_applies_there(
    robots_servers: Any, tmp_path: Path
) -> None:
    # example.com/robots.txt -> www.example.com/robots.txt: two hosts, two ports.
    www = robots_servers("target")
    site = robots_servers("redirect-elsewhere", other=www.base)
    result, decisions = await crawled(site, tmp_path)
    # www's rules apply to the original host.
    assert decisions[site.url("/private/secret.html")][0] == "robots-disallowed"
    assert decisions[site.url("/about.html")][0] == "listed"
    assert "/private/secret.html" not in paths(site)
    # Only robots.txt was fetched from the other host, once; no page of it.
    assert paths(www) == ["/robots.txt"]
    assert result.stats.get("sitemap/robots/unavailable") is None
    assert result.stats["sitemap/robots/group"] == "*"
    ports = {port for kind, (host, port) in result.network if kind == "connect"}
    assert ports <= {site.port, www.port}


@pytest.mark.parametrize("hops", [1, 5])
@pytest_twisted.ensureDeferred
async def test_robots_redirects_across_hosts_and_paths_are_followed(
    robots_servers: Any, tmp_path: Path, hops: int
) -> None:
    # /robots.txt -> http://other/static/robots-main.txt (one hop), or five hops back
    # and forth between the two hosts (RFC 9309 2.3.1.2: at least five, across hosts).
    other = robots_servers("target")
    site = robots_servers("chain", other=other.base, hops=hops)
    result, decisions = await crawled(site, tmp_path)
    assert result.stats.get("sitemap/robots/unavailable") is None
    # The rules reached (robots-main.txt: /acme-only/), not the other host's robots.txt.
    assert decisions[site.url("/acme-only/page.html")][0] == "robots-disallowed"
    assert decisions[site.url("/private/secret.html")][0] == "listed"
    assert "/acme-only/page.html" not in paths(site)
    # Every hop was fetched once; no page of the other host.
    hopped = paths(site) + paths(other)
    assert hopped.count("/static/robots-main.txt") == 1
    assert len([p for p in hopped if p.startswith("/hop/")]) == hops - 1
    assert not [p for p in paths(other) if p.endswith(".html")]
    ports = {port for kind, (host, port) in result.network if kind == "connect"}
    assert ports <= {site.port, other.port}


@pytest_twisted.ensureDeferred
async def test_more_than_five_robots_redirects_make_it_unavailable(
    robots_servers: Any, tmp_path: Path
) -> None:
    # RFC 9309 2.3.1.2: past five consecutive redirects robots.txt may be taken as
    # unavailable: everything is allowed.
    other = robots_servers("target")
    site = robots_servers("chain", other=other.base, hops=6)
    result, decisions = await crawled(site, tmp_path)
    assert result.stats["sitemap/robots/unavailable"] == 1
    assert decisions[site.url("/acme-only/page.html")][0] == "listed"
    hopped = paths(site) + paths(other)
    assert "/static/robots-main.txt" not in hopped
    assert len([p for p in hopped if p.startswith("/hop/")]) == 5


L, D = "listed", "robots-disallowed"
RULES = [
    # Byte 512000 falls right after "Disallow: /" of "Disallow: /archive/": read as
    # it was cut, the line would disallow the whole site. "Disallow: /about.html" lies
    # past the limit.
    pytest.param(
        "line-cut",
        {"/": L, "/private/secret.html": D, "/about.html": L},
        {"sitemap/robots/truncated": 1},
        id="a rule line cut at 500 KiB is dropped",
    ),
    # Larger than robots.txt's download cap (10 MiB), with a Content-Length or none,
    # or sent gzipped to a client that accepts gzip.
    *(
        pytest.param(
            mode,
            {"/private/secret.html": D, "/about.html": L},
            {"sitemap/robots/unreachable": None, "sitemap/robots/truncated": 1},
            id=f"an 11 MiB robots.txt is read up to the limit ({mode})",
        )
        for mode in ["eleven-mib", "eleven-mib-chunked", "eleven-mib-gzip"]
    ),
    # "User-agent: sitemap" and "User-agent: s" disallow everything; they do not
    # name sitemap-crawler, so the "*" group applies.
    pytest.param(
        "prefix-groups",
        {"/": L, "/about.html": L, "/private/secret.html": D},
        {"sitemap/robots/token": "sitemap-crawler", "sitemap/robots/group": "*"},
        id="a group named by a prefix of our token does not apply",
    ),
    # User-agent: sitemap-crawler / Clean-param: ... / Sitemap: ... /
    # User-agent: otherbot / Disallow: /private/ : one group for both agents.
    pytest.param(
        "unknown-line",
        {"/private/secret.html": D, "/about.html": L},
        {"sitemap/robots/group": "sitemap-crawler"},
        id="an unknown line does not end a group",
    ),
]


@pytest.mark.parametrize(("mode", "decided", "stats"), RULES)
@pytest_twisted.ensureDeferred
async def test_the_rules_read_decide_the_pages(
    robots_servers: Any, tmp_path: Path, mode: str, decided: dict[str, str], stats: Any
) -> None:
    server = robots_servers(mode)
    # The downloader's byte count is off by default: on here, to measure the download.
    result, decisions = await crawled(server, tmp_path, DOWNLOADER_STATS=True)
    assert {path: decisions[server.url(path)][0] for path in decided} == decided
    assert {name: result.stats.get(name) for name in stats} == stats
    # The download stopped soon after the limit: nowhere near 11 MiB came.
    assert result.stats["downloader/response_bytes"] < 2 * 1024 * 1024


@pytest_twisted.ensureDeferred
async def test_the_compatible_user_agent_names_its_crawler(
    robots_servers: Any, tmp_path: Path
) -> None:
    # --user-agent "Mozilla/5.0 (compatible; AcmeBot/1.0; +...)": the token is AcmeBot,
    # whose group disallows /private/ only (Mozilla's disallows everything).
    server = robots_servers("compatible")
    args = command_parser("crawl").parse_args([server.url("/"), "--user-agent", COMPATIBLE_UA])
    options = site_settings(args)
    assert options["ROBOTSTXT_USER_AGENT"] == "AcmeBot"
    overrides = {k: v for k, v in options.items() if k in ("USER_AGENT", "ROBOTSTXT_USER_AGENT")}
    result, decisions = await crawled(server, tmp_path, **overrides)
    assert decisions[server.url("/about.html")][0] == "listed"
    assert decisions[server.url("/private/secret.html")][0] == "robots-disallowed"
    assert result.stats["sitemap/robots/token"] == "AcmeBot"
    assert result.stats["sitemap/robots/group"] == "AcmeBot"
    assert {r["user_agent"] for r in server.requests()} == {COMPATIBLE_UA}


@pytest_twisted.ensureDeferred
async def test_the_token_comes_from_the_compatible_user_agent_setting(
    robots_servers: Any, tmp_path: Path
) -> None:
    # With ROBOTSTXT_USER_AGENT unset, the middleware takes the User-Agent's token.
    server = robots_servers("compatible")
    result = await run_crawl(
        server.url("/"), tmp_path, USER_AGENT=COMPATIBLE_UA, ROBOTSTXT_USER_AGENT=None, **SMALL
    )
    assert result.decisions()[server.url("/about.html")][0] == "listed"
    assert result.decisions()[server.url("/private/secret.html")][0] == "robots-disallowed"
    assert result.stats["sitemap/robots/token"] == "AcmeBot"


@pytest_twisted.ensureDeferred
async def test_robots_agent_option_sets_the_token(robots_servers: Any, tmp_path: Path) -> None:
    server = robots_servers("compatible")
    args = command_parser("crawl").parse_args(
        [server.url("/"), "--user-agent", "Mozilla/5.0 (X11)", "--robots-agent", "AcmeBot"]
    )
    options = site_settings(args)
    result = await run_crawl(
        server.url("/"),
        tmp_path,
        USER_AGENT=options["USER_AGENT"],
        ROBOTSTXT_USER_AGENT=options["ROBOTSTXT_USER_AGENT"],
        **SMALL,
    )
    assert result.decisions()[server.url("/about.html")][0] == "listed"
    assert result.stats["sitemap/robots/token"] == "AcmeBot"


@pytest.mark.parametrize(
    ("mode", "late", "counted"),
    [
        # Every later robots.txt disallows /late/: the rules fetched again apply.
        ("changing", "robots-disallowed", "sitemap/robots/refetched"),
        # RFC 9309 2.4: past the age, an unreachable robots.txt leaves the cached rules in
        # force; the crawl goes on (it stops only when the first fetch is unreachable).
        ("then-503", "listed", "sitemap/robots/unreachable"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_robots_txt_is_fetched_again_when_older_than_the_max_age(
    robots_servers: Any, tmp_path: Path, mode: str, late: str, counted: str
) -> None:
    # The first robots.txt allows /late/. /late/page.html is linked from /slow.html,
    # which answers after 2 s: by then the rules, fetched at the start, are older than
    # SITEMAP_ROBOTS_MAX_AGE (1 s here, a day by default).
    server = robots_servers(mode, delay=2.0)
    result = await run_crawl(server.url("/"), tmp_path, SITEMAP_ROBOTS_MAX_AGE=1)
    assert result.outcome == "published", result.stats.get("sitemap/fatal")
    decisions = result.decisions()
    assert decisions[server.url("/early.html")][0] == "listed"
    assert decisions[server.url("/slow.html")][0] == "listed"
    assert decisions[server.url("/late/page.html")][0] == late
    assert ("/late/page.html" in paths(server)) == (late == "listed")
    assert paths(server).count("/robots.txt") >= 2
    assert result.stats[counted] >= 1


@pytest_twisted.ensureDeferred
async def test_robots_txt_is_kept_for_the_max_age(robots_servers: Any, tmp_path: Path) -> None:
    # The same crawl with the default age: one robots.txt, the first, for the crawl.
    server = robots_servers("changing", delay=1.0)
    result = await run_crawl(server.url("/"), tmp_path)
    assert result.decisions()[server.url("/late/page.html")][0] == "listed"
    assert paths(server).count("/robots.txt") == 1
    assert result.stats.get("sitemap/robots/refetched") is None


@pytest_twisted.ensureDeferred
async def test_retry_after_is_a_floor_of_the_randomised_delay(
    robots_servers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # robots.txt answered 429 once, /about.html 503 once, each with Retry-After: 1.
    # Scrapy randomises a slot's delay (RANDOMIZE_DOWNLOAD_DELAY: 0.5 to 1.5 times
    # it); here always at its lowest, so that a delay under the server's floor shows
    # in every run, not in one of two.
    import scrapy.core.downloader as downloader

    monkeypatch.setattr(downloader.random, "uniform", lambda low, high: low)
    server = robots_servers("busy", retry_after="1")
    result = await run_crawl(server.url("/"), tmp_path, **SMALL)
    assert result.outcome == "published", result.stats.get("sitemap/fatal")
    assert result.decisions()[server.url("/about.html")][0] == "listed"
    assert result.decisions()[server.url("/private/secret.html")][0] == "robots-disallowed"
    for path in ("/robots.txt", "/about.html"):
        times = [r["time"] for r in server.requests() if r["path"] == path]
        assert len(times) == 2, path
        assert times[1] - times[0] >= 1.0, (path, times[1] - times[0])


# Pages robots.txt disallows in the ``members`` site, and one reachable only through them.
MEMBERS = ("/members/", "/members/area/", "/tools/report.cgi", "/members/only.html")


@pytest.mark.parametrize("processes", [1, 2])
def test_requests_that_waited_for_robots_txt_obey_it(
    robots_servers: Any, tmp_path: Path, processes: int
) -> None:
    # robots.txt comes a second late: every request asked meanwhile waits for it. Each
    # one must then be judged by it (the second and later waiters were let through
    # as if there were no robots.txt at all), in one process and with --processes 2,
    # whose processes each take several queued requests before their robots.txt came.
    site = robots_servers("members", delay=1.0)
    seeds = tmp_path / "urls.txt"
    every = ("/", "/about.html", "/tools/index.html", *MEMBERS[:3])
    seeds.write_text("".join(site.url(p) + "\n" for p in every))
    out = tmp_path / "public"
    args = ["crawl", site.url("/"), "--out", str(out), "--state", str(tmp_path / "state")]
    args += ["--urls", str(seeds), "-s", "SITEMAP_SOFT404_PROBE=False"]
    if processes > 1:
        args += ["--processes", str(processes)]
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    fetched = paths(site)
    # The start URL's pre-flight (crawler.fetch.origin): robots.txt, then the start URL.
    assert fetched[:2] == ["/robots.txt", "/"], fetched
    fetched = fetched[2:]
    assert not set(MEMBERS) & set(fetched), fetched
    assert fetched[0] == "/robots.txt" and fetched.count("/robots.txt") <= processes
    assert published(out) == {site.url(p) for p in ("/", "/about.html", "/tools/index.html")}
