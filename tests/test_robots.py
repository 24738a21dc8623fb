"""robots.txt with RFC 9309 semantics, against real servers whose robots.txt is
missing, forbidden, failing, redirected, oversized, BOM-prefixed or slow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.conftest import CrawlResult, run_crawl

# A small crawl: the home page and what it links to directly.
SMALL = {"SITEMAP_MAX_DEPTH": 1}


async def crawled(server: Any, tmp_path: Path, **overrides: Any) -> tuple[CrawlResult, Any]:
    """A small crawl of *server* (with *overrides*) that publishes: its result, and the
    decision and reason of every URL."""
    result = await run_crawl(server.url("/"), tmp_path, **{**SMALL, **overrides})
    assert result.outcome == "published", result.stats.get("sitemap/fatal")
    return result, result.decisions()


def fetched_paths(server: Any) -> set[str]:
    return {r["path"] for r in server.requests()}


@pytest.mark.parametrize("mode", ["404", "403", "redirect-loop"])
@pytest_twisted.ensureDeferred
async def test_unavailable_robots_allows_everything(
    servers: Any, tmp_path: Path, mode: str
) -> None:
    server = servers(mode)
    result, decisions = await crawled(server, tmp_path)
    assert decisions[server.url("/private/secret.html")][0] == "listed"
    assert decisions[server.url("/blocked-for-us/page.html")][0] == "listed"
    assert result.stats["sitemap/robots/unavailable"] >= 1
    assert result.stats["sitemap/robots/group"] == "none"


@pytest_twisted.ensureDeferred
async def test_redirect_loop_stops_after_five_hops(servers: Any, tmp_path: Path) -> None:
    # RFC 9309 2.3.1.2: at least five consecutive redirects, then "unavailable".
    server = servers("redirect-loop")
    server.clear_log()
    await run_crawl(server.url("/"), tmp_path, SITEMAP_MAX_PAGES=1)
    robots = [r for r in server.requests() if r["path"].startswith("/robots.txt")]
    assert len(robots) == 6  # the first request and five redirects


@pytest.mark.parametrize("mode", ["500", "503", "429"])
@pytest_twisted.ensureDeferred
async def test_unreachable_robots_stops_the_crawl(servers: Any, tmp_path: Path, mode: str) -> None:
    server = servers(mode)
    previous = tmp_path / "public"
    previous.mkdir()
    (previous / "sitemap_index.xml").write_text("previous good set")
    result = await run_crawl(server.url("/"), tmp_path, RETRY_TIMES=0)
    assert result.outcome == "failed"
    assert f"HTTP {mode}" in result.stats["sitemap/fatal"]
    assert "unreachable" in result.stats["sitemap/fatal"]
    # Nothing but robots.txt was requested; nothing was published.
    assert fetched_paths(server) <= {"/robots.txt"}
    assert (previous / "sitemap_index.xml").read_text() == "previous good set"
    assert sorted(p.name for p in previous.iterdir()) == ["sitemap_index.xml"]
    assert (tmp_path / "state" / "ledger.failed.sqlite").exists()


@pytest_twisted.ensureDeferred
async def test_robots_timeout_stops_the_crawl(servers: Any, tmp_path: Path) -> None:
    server = servers("slow")
    result = await run_crawl(server.url("/"), tmp_path, DOWNLOAD_TIMEOUT=1, RETRY_TIMES=0)
    assert result.outcome == "failed"
    assert "(no answer in time)" in result.stats["sitemap/fatal"]
    assert fetched_paths(server) == {"/robots.txt"}


@pytest_twisted.ensureDeferred
async def test_robots_redirect_is_followed(servers: Any, tmp_path: Path) -> None:
    server = servers("redirect")
    result = await run_crawl(server.url("/"), tmp_path, **SMALL)
    decisions = result.decisions()
    # /robots-real.txt disallows /about.html for everyone.
    assert decisions[server.url("/about.html")] == ("robots-disallowed", "Forbidden by robots.txt")
    assert decisions[server.url("/private/secret.html")][0] == "listed"
    assert "/about.html" not in fetched_paths(server)


@pytest_twisted.ensureDeferred
async def test_robots_redirect_to_another_host_is_followed_for_robots_txt_only(
    servers: Any, tmp_path: Path
) -> None:
    # 127.0.0.1:PORT/robots.txt -> localhost:PORT/robots.txt, which redirects to
    # itself: followed (RFC 9309 2.3.1.2) for five hops, then "unavailable". The
    # home page's link to localhost:PORT/elsewhere.html is never requested.
    server = servers("redirect-offhost")
    server.clear_log()
    result = await run_crawl(server.url("/"), tmp_path, **SMALL)
    assert result.outcome == "published"
    elsewhere = [r for r in server.requests() if r["host"] != f"127.0.0.1:{server.port}"]
    assert [r["path"] for r in elsewhere] == ["/robots.txt"] * 5
    assert result.stats["sitemap/robots/unavailable"] == 1
    assert result.decisions()[server.url("/private/secret.html")][0] == "listed"


@pytest_twisted.ensureDeferred
async def test_robots_with_bom(servers: Any, tmp_path: Path) -> None:
    server = servers("bom")
    result = await run_crawl(server.url("/"), tmp_path, **SMALL)
    assert result.decisions()[server.url("/about.html")][0] == "robots-disallowed"


@pytest_twisted.ensureDeferred
async def test_only_first_500_kib_of_robots_is_read(servers: Any, tmp_path: Path) -> None:
    server = servers("huge")
    result = await run_crawl(server.url("/"), tmp_path, **SMALL)
    decisions = result.decisions()
    # The Disallow for /private/ is at the top; the one for /about.html is past 500 KiB.
    assert decisions[server.url("/private/secret.html")][0] == "robots-disallowed"
    assert decisions[server.url("/about.html")][0] == "listed"


@pytest_twisted.ensureDeferred
async def test_crawl_delay_is_honoured(servers: Any, tmp_path: Path) -> None:
    server = servers("crawl-delay")
    result = await run_crawl(server.url("/"), tmp_path, SITEMAP_MAX_PAGES=4, CONCURRENT_REQUESTS=8)
    assert result.stats["sitemap/throttle/crawl_delay"] == 1.0
    # The soft-404 probe (issue #19) waits its turn like any request, and is no page.
    times = sorted(r["time"] for r in server.requests() if r["path"] != "/robots.txt")
    assert len(times) == 5
    assert server.requests()[1]["path"].startswith("/sitemap-crawler-probe-")
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # Times of arrival at the server: the first request's connection set-up and a busy
    # machine move one of them by a few tenths of a second, not the span of four gaps.
    assert min(gaps) >= 0.6, gaps
    assert times[-1] - times[0] >= 3.6, gaps


@pytest_twisted.ensureDeferred
async def test_crawl_delay_is_capped(servers: Any, tmp_path: Path) -> None:
    server = servers("crawl-delay")
    result = await run_crawl(
        server.url("/"), tmp_path, SITEMAP_MAX_PAGES=2, SITEMAP_MAX_CRAWL_DELAY=0.2
    )
    assert result.stats["sitemap/throttle/crawl_delay"] == 0.2


@pytest_twisted.ensureDeferred
async def test_user_agent_token_selects_the_group(servers: Any, tmp_path: Path) -> None:
    server = servers("rules")
    result = await run_crawl(
        server.url("/"),
        tmp_path,
        USER_AGENT="OtherBot/2.0",
        ROBOTSTXT_USER_AGENT="OtherBot",
        **SMALL,
    )
    decisions = result.decisions()
    # The "*" group applies to OtherBot: /blocked-for-us/ is allowed, /private/ is not.
    assert decisions[server.url("/blocked-for-us/page.html")][0] == "listed"
    assert decisions[server.url("/private/open.html")][0] == "robots-disallowed"
    assert {r["user_agent"] for r in server.requests()} == {"OtherBot/2.0"}


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "1"}, 1.0),
        ({"Retry-After": " 2.5 "}, 2.5),
        # An HTTP date, counted from the response's Date.
        (
            {
                "Retry-After": "Wed, 21 Oct 2015 07:28:05 GMT",
                "Date": "Wed, 21 Oct 2015 07:28:00 GMT",
            },
            5.0,
        ),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:05 GMT"}, None),  # long past
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-3"}, None),
        ({"Retry-After": "nan"}, None),
        ({}, None),
    ],
)
def test_retry_after_values(headers: dict[str, str], seconds: float | None) -> None:
    from scrapy.http import Response

    from crawler.fetch.throttle import _retry_after

    assert _retry_after(Response("http://h.test/", headers=headers)) == seconds
