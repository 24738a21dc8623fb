"""Staging and private sites (issue #19): --auth, --cookie and --header reach the
crawled site and no other host, even on a redirect, and no log, ledger or report.

Two scripted servers on 127.0.0.1 (tests/seedserver.py) record every header they
receive: the staging site, which refuses a request without the credentials and
redirects its robots.txt and one page to the second server, and that second server.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

from tests.conftest import cli, run_crawl
from tests.seedserver import ScriptedSite
from tests.test_cli import assert_one_line_error

USER, PASSWORD = "stage", "s3cret-Pa55"
TOKEN = "tok-4f1e9a"  # the header's value
SESSION = "sess-77ab01"  # the cookie's value
SECRETS = (PASSWORD, TOKEN, SESSION, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())


@pytest.fixture
def sites(tmp_path: Path) -> Iterator[tuple[ScriptedSite, ScriptedSite]]:
    staging, other = ScriptedSite(tmp_path, "staging"), ScriptedSite(tmp_path, "other")
    other.page("/landing")
    other.save()
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    staging.spec["require"] = {
        "authorization": basic,
        "x-token": TOKEN,
        "cookie": f"session={SESSION}",
    }
    # robots.txt lives on the other host (RFC 9309 lets the crawl follow it there).
    staging.spec["robots"] = {"status": 301, "location": other.url("/robots.txt")}
    staging.page("/", "/a", "/go", headers={"Set-Cookie": "site=1; Path=/"})
    staging.page("/a", "/b")
    staging.page("/b")
    staging.raw("/go", "", status=302, headers={"Location": other.url("/landing")})
    staging.save()
    yield staging, other
    staging.stop()
    other.stop()


def check_hosts(
    staging: ScriptedSite, other: ScriptedSite, cookies_enabled: bool, preflight: bool = False
) -> None:
    """Every request to the staging site carried the credentials; none to the other.
    *preflight*: the command asked the start URL first (crawler.fetch.origin), before
    it knew the site's origin: without them (robots.txt, then /)."""
    got = staging.requests()
    if preflight:
        first = got[:2]
        assert [r["path"] for r in first] == ["/robots.txt", "/"]
        for r in first:
            assert not any(secret in repr(r["headers"]) for secret in SECRETS)
        got = got[2:]
    # The soft-404 probe (issue 19: an address that cannot exist, on the staging
    # site) carries the credentials too, like every request there.
    probes = {r["path"] for r in got if r["path"].startswith("/sitemap-crawler-probe-")}
    assert len(probes) == 1
    assert {r["path"] for r in got} - probes == {"/robots.txt", "/", "/a", "/b", "/go"}
    for r in got:
        h = r["headers"]
        assert h["x-token"] == TOKEN
        assert h["authorization"].startswith("Basic ")
        assert f"session={SESSION}" in h["cookie"]
    by_path = {r["path"]: r["headers"] for r in got}
    # The site's own cookie goes along with ours when Scrapy keeps cookies.
    assert ("site=1" in by_path["/b"]["cookie"]) is cookies_enabled
    elsewhere = other.requests()
    assert [r["path"] for r in elsewhere] == ["/robots.txt"]  # /landing never fetched
    for r in elsewhere:
        text = repr(r["headers"])
        assert "authorization" not in r["headers"] and "x-token" not in r["headers"]
        assert not any(secret in text for secret in SECRETS), text


def check_nothing_kept(*places: Path, text: str = "") -> None:
    """No secret in any file under *places* (ledgers, report, JSON Lines copy) or *text*."""
    blobs = [text.encode()]
    for place in places:
        blobs += [p.read_bytes() for p in place.rglob("*") if p.is_file()]
    for secret in SECRETS:
        assert not any(secret.encode() in blob for blob in blobs), secret


@pytest_twisted.ensureDeferred
async def test_credentials_reach_the_staging_site_only(
    sites: tuple[ScriptedSite, ScriptedSite], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    staging, other = sites
    caplog.set_level("DEBUG")
    result = await run_crawl(
        staging.url("/"),
        tmp_path,
        SITEMAP_AUTH=f"{USER}:{PASSWORD}",
        SITEMAP_HEADERS=[f"X-Token: {TOKEN}"],
        SITEMAP_COOKIES=[f"session={SESSION}"],
        COOKIES_ENABLED=False,
        LOG_LEVEL="DEBUG",
    )
    assert result.outcome == "published", result.stats.get("sitemap/message")
    assert result.listed() == {staging.url(p) for p in ("/", "/a", "/b")}
    assert result.decisions()[staging.url("/go")] == (
        "redirect",
        f"302 -> {other.url('/landing')}",
    )
    assert result.decisions()[other.url("/landing")] == ("off-host", "another host")
    check_hosts(staging, other, cookies_enabled=False)
    check_nothing_kept(result.out, result.state, text=caplog.text)


@pytest.mark.parametrize("where", ["environment", "config"])
def test_from_the_command_line(
    sites: tuple[ScriptedSite, ScriptedSite], tmp_path: Path, where: str
) -> None:
    """Cookies on (Scrapy's jar keeps the site's own cookie beside ours), the
    password from SITEMAP_AUTH or the config file (and the header and cookie from
    the command line or the config file), Scrapy's log at DEBUG (its settings dump
    included)."""
    staging, other = sites
    out = tmp_path / "public"
    env = {k: v for k, v in os.environ.items() if k != "SITEMAP_AUTH"}
    if where == "environment":
        env["SITEMAP_AUTH"] = f"{USER}:{PASSWORD}"
        options = ["--header", f"X-Token: {TOKEN}", "--cookie", f"session={SESSION}"]
    else:
        config = tmp_path / "staging.toml"
        config.write_text(
            f'auth = "{USER}:{PASSWORD}"\nheader = ["X-Token: {TOKEN}"]\n'
            f'cookie = ["session={SESSION}"]\n'
        )
        options = ["--config", str(config)]
    done = cli(
        *("crawl", staging.url("/"), "--out", str(out), *options, "--log-level", "DEBUG"),
        *("-s", "SITEMAP_PROGRESS_INTERVAL=0"),
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Overridden settings" in done.stderr  # Scrapy's dump is there, without them
    check_hosts(staging, other, cookies_enabled=True, preflight=True)
    check_nothing_kept(out, Path(f"{out}.sitemap-state"), text=done.stdout + done.stderr)


def test_without_credentials_the_staging_site_refuses(
    sites: tuple[ScriptedSite, ScriptedSite], tmp_path: Path
) -> None:
    staging, _ = sites
    done = cli(
        *("crawl", staging.url("/"), "--out", str(tmp_path / "o")),
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "SITEMAP_AUTH"},
    )
    assert done.returncode == 3, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--header", f"X-Token {TOKEN}"], "argument --header: expected 'Name: value'"),
        (["--header", f"Host: {TOKEN}"], "the Host header is the crawl's own"),
        (["--cookie", f"session {SESSION}"], "argument --cookie: expected NAME=VALUE"),
        (["--auth", PASSWORD], "argument --auth: expected USER:PASSWORD"),
        (["-s", f"SITEMAP_AUTH={PASSWORD}"], "setting SITEMAP_AUTH = (hidden): expected"),
        (["-s", f"SITEMAP_HEADERS=X {TOKEN}"], "setting SITEMAP_HEADERS = (hidden)"),
    ],
)
def test_bad_credentials_are_one_line_without_the_secret(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = cli("crawl", "http://127.0.0.1:9/", *args, cwd=tmp_path, timeout=60)
    assert_one_line_error(done, 2, message)
    assert not any(secret in done.stderr for secret in SECRETS)
