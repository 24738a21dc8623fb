"""``sitemap-crawler explain URL`` (issue 17) on a real crawl of the test site: a URL
of every decision kind, URLs the crawl never saw, spellings of one URL, and the JSON
against the text."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from crawler.cli import main
from crawler.ledger.ledger import Ledger
from tests.conftest import ROOT, CrawlResult, MockServer, run_crawl
from tests.test_nightly import NightlySite, night

PUBLIC = "https://www.example.com/docs/"
EXCLUDE = r"/files/data\.json"


@pytest.fixture(scope="module")
def crawled(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> CrawlResult:
    """One crawl of the test site, published for a public address, in files of at
    most 10 URLs (so that which file holds a page is a real question)."""
    tmp = tmp_path_factory.mktemp("explain")
    result: CrawlResult = pytest_twisted.blockon(
        Deferred.fromCoroutine(
            run_crawl(
                site.url("/"),
                tmp,
                SITEMAP_BASE_URL=PUBLIC,
                SITEMAP_MAX_URLS_PER_FILE=10,
                SITEMAP_EXCLUDE=[EXCLUDE],
            )
        )
    )
    assert result.outcome == "published"
    return result


def explain(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, url: str, *more: str
) -> tuple[int, str]:
    code = main(["explain", url, "--state", str(crawled.state), *more])
    out, err = capsys.readouterr()
    assert not err
    return code, out


def answer(capsys: pytest.CaptureFixture[str], crawled: CrawlResult, url: str) -> dict[str, Any]:
    code, out = explain(capsys, crawled, url, "--json")
    found: dict[str, Any] = json.loads(out)
    assert code == (0 if found["known"] else 1)
    return found


def chain(found: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(step["url"], step["decision"]) for step in found["chain"]["steps"]]


def trail(found: dict[str, Any]) -> list[tuple[str, str | None]]:
    steps = found["found_via"]["steps"]
    assert found["referrers"] == [step["url"] for step in steps[:-1]]
    assert found["referrer"] == (steps[-2]["url"] if len(steps) > 1 else None)
    return [(step["url"], step["via"]) for step in steps]


# -- every decision kind ------------------------------------------------------------------


def test_listed_page_names_its_file_and_line(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    found = answer(capsys, crawled, site.url("/about.html"))
    assert (found["decision"], found["reason"], found["status"]) == ("listed", "", 200)
    assert chain(found) == [(site.url("/about.html"), "listed")]
    assert trail(found) == [(site.url("/"), None), (site.url("/about.html"), "link")]
    published = found["sitemap"]
    assert published["in_set"] and published["loc"] == PUBLIC + "about.html"
    # The file and line it names hold the page, as an independent read finds them.
    path = crawled.out / published["file"]
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert f"<loc>{PUBLIC}about.html</loc>" in lines[published["line"] - 1]
    assert published["file_url"] == PUBLIC + published["file"]
    # The index lists more than one file: the rank found the right one among them.
    assert len(list(crawled.out.glob("sitemap-0*.xml.gz"))) > 1
    # Its lastmod came from the Last-Modified header, in this run.
    lastmod = found["lastmod"]
    assert (lastmod["value"], lastmod["source"]) == ("1994-11-06T08:49:37+00:00", "header")
    assert "Sun, 06 Nov 1994 08:49:37 GMT" in lastmod["from"]
    assert found["first_seen"] and found["last_seen"] == found["run"]["started"]
    assert lastmod["run"] == found["first_seen"]


def test_every_listed_page_is_found_in_its_file(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult
) -> None:
    rows = [row for row in crawled.ledger_rows().values() if row["decision"] == "listed"]
    assert len(rows) > 20
    for row in rows:
        published = answer(capsys, crawled, row["url"])["sitemap"]
        lines = gzip.decompress((crawled.out / published["file"]).read_bytes()).decode()
        assert f"<loc>{escape(row['loc'])}</loc>" in lines.splitlines()[published["line"] - 1]


@pytest.mark.parametrize(
    ("path", "decision", "reason", "ends"),
    [
        ("/old-about", "redirect", "301 -> {base}/about.html", ["/old-about", "/about.html"]),
        ("/r307", "redirect", "307 -> {base}/r308 (chain)", ["/r307", "/r308", "/final.html"]),
        ("/loop1", "redirect", "301 -> {base}/loop2 (loop)", ["/loop1", "/loop2", "/loop1"]),
        (
            "/canon/dup.html?ref=1",
            "canonical",
            "canonical -> {public}canon/self.html",
            ["/canon/dup.html?ref=1", "/canon/self.html"],
        ),
        (
            "/canon/chain-a.html",
            "canonical",
            # No "(chain)": with --base-url a canonical's target is its public
            # address, which close_books does not map back (explain does).
            "canonical -> {public}canon/chain-b.html",
            ["/canon/chain-a.html", "/canon/chain-b.html", "/canon/self.html"],
        ),
        ("/noindex/meta.html", "noindex", "noindex (meta robots)", ["/noindex/meta.html"]),
        ("/noindex/header.html", "noindex", "noindex (X-Robots-Tag)", ["/noindex/header.html"]),
        (
            "/private/secret.html",
            "robots-disallowed",
            # The group and the line of robots.txt that matched (tests/mockserver.py's).
            "Forbidden by robots.txt: the group for sitemap-crawler, "
            "`Disallow: /private/` (line 5)",
            None,
        ),
        ("/gone-404", "status", "HTTP 404", ["/gone-404"]),
        ("/err-500", "status", "HTTP 500", ["/err-500"]),
        ("/files/doc.pdf", "non-html", "application/pdf", ["/files/doc.pdf"]),
        ("/files/data.json", "excluded", f"matches --exclude {EXCLUDE!r}", None),
        ("{other}/elsewhere.html", "off-host", "another host", None),
        (
            "/dup/index.html",
            "duplicate",
            "same content as {base}/dup/",
            ["/dup/index.html", "/dup/"],
        ),
    ],
)
def test_decision_and_chain(
    capsys: pytest.CaptureFixture[str],
    crawled: CrawlResult,
    site: MockServer,
    path: str,
    decision: str,
    reason: str,
    ends: list[str] | None,
) -> None:
    other = f"http://localhost:{site.port}"
    url = path.replace("{other}", other) if path.startswith("{") else site.url(path)
    found = answer(capsys, crawled, url)
    assert found["known"] and found["url"] == url
    assert found["decision"] == decision
    assert found["reason"] == reason.format(base=site.base, public=PUBLIC)
    steps = [step["url"] for step in found["chain"]["steps"]]
    assert steps == [site.url(p) for p in ends or [path]] if ends else steps == [url]
    assert found["chain"]["loop"] == (path == "/loop1")
    assert not found["sitemap"]["in_set"] and found["sitemap"]["why"].startswith("not listed")
    # Every one of them was found on the home page.
    assert trail(found) == [(site.url("/"), None), (url, "link")]


def test_robots_directives_and_status_seen(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    assert answer(capsys, crawled, site.url("/noindex/meta.html"))["robots"] == (
        "noindex (meta robots)"
    )
    nofollow = answer(capsys, crawled, site.url("/nofollow/header.html"))
    assert (nofollow["decision"], nofollow["robots"]) == ("listed", "nofollow (X-Robots-Tag)")
    pdf = answer(capsys, crawled, site.url("/files/doc.pdf"))
    assert (pdf["status"], pdf["content_type"], pdf["robots"]) == (200, "application/pdf", None)


def test_found_through_redirects_referrer_by_referrer(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    found = answer(capsys, crawled, site.url("/final.html"))
    assert found["decision"] == "listed"
    assert trail(found) == [
        (site.url("/"), None),
        (site.url("/r307"), "link"),
        (site.url("/r308"), "redirect"),
        (site.url("/final.html"), "redirect"),
    ]
    deep = answer(capsys, crawled, site.url("/relative/two.html"))
    assert trail(deep) == [
        (site.url("/"), None),
        (site.url("/relative/one.html"), "link"),
        (site.url("/relative/two.html"), "link"),
    ]
    assert deep["depth"] == 2
    via_canonical = answer(capsys, crawled, site.url("/canon/chain-b.html"))
    assert trail(via_canonical)[-2:] == [
        (site.url("/canon/chain-a.html"), "link"),
        (site.url("/canon/chain-b.html"), "canonical"),
    ]


def test_trap_decision(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    trapped = [row for row in crawled.ledger_rows().values() if row["decision"] == "trap"]
    assert trapped
    found = answer(capsys, crawled, trapped[0]["url"])
    assert (found["decision"], found["reason"]) == ("trap", trapped[0]["reason"])
    assert found["found_via"]["steps"][0]["url"] == site.url("/")
    assert found["found_via"]["steps"][-1]["url"] == trapped[0]["url"]


# -- URLs the crawl never saw ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "would", "rule", "decision"),
    [
        ("/nowhere.html", True, None, None),
        ("/private/never.html", False, "robots.txt", "robots-disallowed"),
        ("/blocked-for-us/other.html", False, "robots.txt", "robots-disallowed"),
        ("/private/open-too.html", False, "robots.txt", "robots-disallowed"),
        ("/files/data.json?v=2", False, "include/exclude", "excluded"),
        ("/a/b/a/b/a/", False, "traps", "trap"),
        ("http://other.example/page.html", False, "host", "off-host"),
        ("/" + "y" * 2100, False, "length", "too-long"),
    ],
)
def test_never_seen(
    capsys: pytest.CaptureFixture[str],
    crawled: CrawlResult,
    site: MockServer,
    path: str,
    would: bool,
    rule: str | None,
    decision: str | None,
) -> None:
    url = path if "://" in path else site.url(path)
    assert url not in crawled.ledger_rows()
    found = answer(capsys, crawled, url)
    assert not found["known"] and found["url"] == url
    assert found["would_fetch"] is would and found["decision"] is None
    assert found["would_decide"] == decision
    failed = [c for c in found["checks"] if c["ok"] is False]
    if would:
        assert not failed and "would fetch" in found["summary"]
        assert {c["rule"] for c in found["checks"]} >= {"host", "robots.txt", "traps"}
    else:
        assert (failed[0]["rule"], failed[0]["decision"]) == (rule, decision)
        assert found["summary"].endswith(failed[0]["detail"])


@pytest.mark.parametrize(
    ("path", "kind", "page", "words"),
    [
        ("/media/photo.png", "image", "/dates/rfc850.html", "an image embedded on"),
        ("/static/site.css", "stylesheet", "/dates/rfc850.html", "a stylesheet embedded on"),
        ("/static/site.js", "script", "/dates/rfc850.html", "a script embedded on"),
        ("/nofollow/hidden3.html", "nofollow", "/", "only with nofollow (rel=nofollow)"),
        (
            "/nofollow/hidden1.html",
            "nofollow",
            "/nofollow/meta.html",
            "robots directives say nofollow (nofollow (meta robots))",
        ),
    ],
)
def test_what_a_crawled_page_refers_to_without_following_it(
    capsys: pytest.CaptureFixture[str],
    crawled: CrawlResult,
    site: MockServer,
    path: str,
    kind: str,
    page: str,
    words: str,
) -> None:
    """Issue 24: an embedded image, stylesheet or script is said to be one, on its
    page, never listed; a URL linked only with nofollow is said to be, from its page;
    neither is "no crawled page links to it"."""
    found = answer(capsys, crawled, site.url(path))
    assert not found["known"]
    assert found["referred"][0] == {
        "as": kind,
        "page": site.url(page),
        "pages": 1,
        "summary": found["summary"],
    }
    assert words in found["summary"] and site.url(page) in found["summary"]
    assert "no crawled page links to it" not in found["summary"]
    if kind != "nofollow":
        assert "not a page" in found["summary"] and "never lists it" in found["summary"]
    else:
        assert "which the crawl does not follow" in found["summary"]
    code, text = explain(capsys, crawled, site.url(path))
    assert code == 1
    assert f"verdict    {found['summary']}" in text
    assert f"referred   {kind} on {site.url(page)} (1 page)" in text


@pytest_twisted.ensureDeferred
async def test_what_a_page_embeds_is_kept_when_it_answers_304(
    nightly: NightlySite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page that answers 304 the next night keeps what it embeds in the ledger."""
    nightly.home("/p.html")
    nightly.page(
        "/p.html", '<img src="/i.png" alt="i"> p', last_modified="Tue, 15 Nov 2022 12:45:26 GMT"
    )
    for _ in range(2):
        done = await night(nightly, tmp_path)
        assert done.outcome == "published"
    assert {r["path"]: r["status"] for r in nightly.requests()}["/p.html"] == 304
    assert main(["explain", nightly.url("/i.png"), "--state", str(done.state), "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["referred"][0]["page"] == nightly.url("/p.html")
    assert found["summary"].startswith(f"an image embedded on {nightly.url('/p.html')}")


def test_a_session_id_is_stripped_before_the_rules(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    """issue 19: `sessionid=` is a session identifier in any spelling, stripped like
    PHPSESSID, so a never-seen `/other?sessionid=1` is asked about as `/other`."""
    found = answer(capsys, crawled, site.url("/other?sessionid=1"))
    assert found["url"] == site.url("/other")
    assert not found["known"] and found["would_fetch"] is True


def test_open_path_under_a_disallowed_one_is_allowed(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    """robots.txt as the crawl read it, with its group for us: Allow: /private/open.html."""
    found = answer(capsys, crawled, site.url("/private/open.html?unseen=1"))
    assert not found["known"] and found["would_fetch"] is True
    robots = next(c for c in found["checks"] if c["rule"] == "robots.txt")
    assert robots["detail"] == "allowed (group 'sitemap-crawler')"


# -- spellings ----------------------------------------------------------------------------------


def test_spellings_resolve_to_the_same_key(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    key = answer(capsys, crawled, site.url("/about.html"))["key"]
    spellings = {
        # The public address, with the host's case, the default port and a fragment.
        "HTTPS://WWW.Example.COM:443/docs/about.html#team": "public address",
        f"{PUBLIC}about.html": "public address",
        # Tracking parameters and a fragment; a path of the site.
        site.url("/about.html?utm_source=news&utm_medium=mail#team"): "url",
        "/about.html": "url",
        f"HTTP://127.0.0.1:{site.port}/about.html": "url",
    }
    for spelling, how in spellings.items():
        found = answer(capsys, crawled, spelling)
        assert (found["key"], found["matched_by"]) == (key, how), spelling
        assert found["url"] == site.url("/about.html")
    # Another order of the query is the same page.
    first = answer(capsys, crawled, site.url("/products?id=1&color=red"))
    second = answer(capsys, crawled, site.url("/products?color=red&id=1"))
    assert first["key"] == second["key"] and first["decision"] == "listed"


def test_default_port_of_a_public_https_address(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer
) -> None:
    found = answer(capsys, crawled, "https://www.example.com:443/docs/canon/self.html")
    assert found["url"] == site.url("/canon/self.html") and found["decision"] == "listed"


# -- the text, the JSON, the exit status ---------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/old-about", "/about.html", "/noindex/meta.html", "/nowhere.html", "/canon/loop-a.html"],
)
def test_text_says_what_the_json_says(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer, path: str
) -> None:
    found = answer(capsys, crawled, site.url(path))
    code, text = explain(capsys, crawled, site.url(path))
    assert code == (0 if found["known"] else 1)
    fields = {line[:11].strip(): line[11:] for line in text.splitlines() if line[:11].strip()}
    assert fields["url"] == found["url"]
    if not found["known"]:
        assert fields["decision"] == "never seen by the crawl"
        assert fields["verdict"] == found["summary"]
        for check in found["checks"]:
            assert f"{check['rule']}: {check['detail']}" in text
        return
    reason = f": {found['reason']}" if found["reason"] else ""
    assert fields["decision"] == found["decision"] + reason
    for step in found["chain"]["steps"][1:]:
        assert f"-> {step['url']}  {step['decision']}" in text
    for step in found["found_via"]["steps"][1:]:
        assert f"-> {step['via']}: {step['url']}" in text
    assert fields["status"].startswith(str(found["status"]))
    assert fields["robots"] == (found["robots"] or "no robots directive")
    sitemap = found["sitemap"]
    if sitemap["in_set"]:
        assert f"{sitemap['file']}, line {sitemap['line']}" in fields["sitemap"]
    else:
        assert fields["sitemap"].startswith("not in the published set")
    assert fields["seen"] == f"first {found['first_seen']}, last {found['last_seen']}"
    if found["lastmod"]["value"]:
        assert fields["lastmod"].startswith(found["lastmod"]["value"])


def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, tmp_path: Path
) -> None:
    cases = [
        (["explain", "mailto:someone@example.com", "--state", str(crawled.state)], "not an http"),
        (["explain", "http://", "--state", str(crawled.state)], "not an http"),
        (["explain", "http://example.com/", "--state", str(tmp_path / "none")], "no state"),
        (["explain", "http://example.com/", "--state", str(tmp_path)], "no finished crawl"),
        (["explain", "--state", str(crawled.state)], "a URL is required"),
    ]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "ledger.sqlite").write_bytes(b"not a database at all" * 100)
    cases.append((["explain", "http://example.com/", "--state", str(broken)], "cannot read"))
    for argv, message in cases:
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert not out and len(err.strip().splitlines()) == 1 and message in err, (argv, err)


def test_command_line_exit_status(crawled: CrawlResult, site: MockServer) -> None:
    """The installed command: 0 for a known URL, 1 for one the crawl never saw."""
    command = [sys.executable, "-m", "crawler.cli", "explain", "--state", str(crawled.state)]
    known = subprocess.run([*command, site.url("/gone-404")], capture_output=True, text=True)
    assert known.returncode == 0 and "decision   status: HTTP 404" in known.stdout
    unknown = subprocess.run([*command, site.url("/never.html")], capture_output=True, text=True)
    assert unknown.returncode == 1 and "never seen by the crawl" in unknown.stdout


def test_scrapy_explain_from_the_project_root(crawled: CrawlResult, site: MockServer) -> None:
    scrapy = Path(sys.executable).with_name("scrapy")
    done = subprocess.run(
        [str(scrapy), "explain", site.url("/old-about"), "--state", str(crawled.state), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["decision"] == "redirect"


def test_the_ledger_keeps_what_explain_reads(crawled: CrawlResult) -> None:
    ledger = Ledger(crawled.state / "ledger.sqlite")
    try:
        published = ledger.get_meta("published")
        assert sum(f["urls"] for f in published["files"]) == ledger.counts()["listed"]
        assert ledger.get_meta("robots")["state"] == "parsed"
        assert ledger.get_meta("scope")["exclude"] == [EXCLUDE]
        assert ledger.get_meta("run_started")
    finally:
        ledger.close()


def test_a_broken_referrer_trail_falls_back_to_a_shortest_path(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer, tmp_path: Path
) -> None:
    """A referrer that is not in the ledger (a hand-edited or partial ledger): the
    answer is a shortest path over the links and targets the ledger keeps."""
    import shutil
    import sqlite3

    state = tmp_path / "state"
    shutil.copytree(crawled.state, state)
    db = sqlite3.connect(state / "ledger.sqlite")
    with db:
        db.execute(
            "UPDATE urls SET referrer = 'http://gone.example/' WHERE url = ?",
            (site.url("/r308"),),
        )
    db.close()
    code = main(["explain", site.url("/final.html"), "--state", str(state), "--json"])
    found = json.loads(capsys.readouterr().out)
    assert code == 0
    assert found["found_via"]["from"] == "shortest path over the stored links"
    assert trail(found) == [
        (site.url("/"), None),
        (site.url("/r307"), "link"),
        (site.url("/r308"), "redirect"),
        (site.url("/final.html"), "redirect"),
    ]


@pytest_twisted.ensureDeferred
async def test_a_crawl_that_published_nothing(
    capsys: pytest.CaptureFixture[str], site: MockServer, tmp_path: Path
) -> None:
    """Publishing off: a listed page is listed, but in no published set; and the
    crawl's --include rules are what a URL it never saw is held to."""
    result = await run_crawl(
        site.url("/"), tmp_path, SITEMAP_PUBLISH=False, SITEMAP_INCLUDE=[r"/(about|relative/)"]
    )
    assert result.outcome == "crawled"
    about = answer(capsys, result, site.url("/about.html"))
    assert about["decision"] == "listed" and not about["sitemap"]["in_set"]
    assert about["sitemap"]["why"].startswith("listed, but the run published nothing")
    assert about["run"]["outcome"] == "crawled"
    excluded = answer(capsys, result, site.url("/gone-404"))
    assert (excluded["decision"], excluded["reason"]) == ("excluded", "matches no --include rule")
    unseen = answer(capsys, result, site.url("/elsewhere.html"))
    assert unseen["would_fetch"] is False
    assert unseen["summary"].endswith("matches no --include rule")
    inside = answer(capsys, result, site.url("/relative/unseen.html"))
    assert inside["would_fetch"] is True


def test_a_ledger_without_the_newer_facts_still_answers(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, site: MockServer, tmp_path: Path
) -> None:
    """A ledger written before explain existed keeps no robots.txt, scope or file
    list: the answer says what it cannot tell instead of guessing."""
    import shutil
    import sqlite3

    state = tmp_path / "state"
    shutil.copytree(crawled.state, state)
    db = sqlite3.connect(state / "ledger.sqlite")
    with db:
        db.execute("DELETE FROM meta WHERE name IN ('robots', 'scope', 'published')")
        db.execute("ALTER TABLE urls DROP COLUMN robots")
    db.close()

    def ask(url: str) -> dict[str, Any]:
        code = main(["explain", url, "--state", str(state), "--json"])
        found: dict[str, Any] = json.loads(capsys.readouterr().out)
        assert code == (0 if found["known"] else 1)
        return found

    about = ask(site.url("/about.html"))
    assert about["sitemap"]["in_set"] and about["sitemap"]["file"] is None
    assert about["robots"] is None
    unseen = ask(site.url("/private/unseen.html"))
    assert unseen["would_fetch"] is None
    robots = next(c for c in unseen["checks"] if c["rule"] == "robots.txt")
    assert robots["ok"] is None and robots["detail"].startswith("unknown")


def test_out_finds_the_state_beside_it(
    capsys: pytest.CaptureFixture[str], crawled: CrawlResult, tmp_path: Path
) -> None:
    """``--out DIR`` reads ``DIR.sitemap-state``, as crawl keeps it."""
    out = tmp_path / "public"
    (tmp_path / "public.sitemap-state").symlink_to(crawled.state)
    code = main(["explain", "/", "--out", str(out), "--json"])
    found = json.loads(capsys.readouterr().out)
    assert code == 0
    assert found["decision"] == "listed"
