"""Rendering JavaScript-built pages in a real headless Chromium (issue #16).

The single-page application of tests/spaserver.py, served over real HTTP, crawled
once per mode (``never``, ``auto``, ``always``) with Debian's Chromium: the exact
listed set, why each page was rendered or not (the ledger's ``render`` column),
what the browser was let to fetch (the servers' own logs), and a nightly run whose
304s replay what the rendered pages gave without rendering again.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from tests.conftest import ROOT, CrawlResult, child_pids, run_crawl
from tests.spaserver import LISTED_RAW, LISTED_RENDERED, SpaServer


def _drop_earlier_garbage() -> None:
    """Collect what earlier test modules left (a pipe of a finished subprocess, say)
    now, with its ResourceWarnings dropped: a crawl with a browser makes enough
    garbage to start a collection, which would blame them on this module's tests."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook


@pytest.fixture(scope="module")
def spa(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpaServer]:
    _drop_earlier_garbage()
    with SpaServer(tmp_path_factory.mktemp("spa") / "requests.log") as served:
        yield served


def crawl(spa: SpaServer, tmp: Path, chromium: str, mode: str, **settings: Any) -> CrawlResult:
    coro = crawl_async(spa, tmp, chromium, mode, **settings)
    return pytest_twisted.blockon(Deferred.fromCoroutine(coro))  # type: ignore[no-any-return]


async def crawl_async(
    spa: SpaServer, tmp: Path, chromium: str, mode: str, **settings: Any
) -> CrawlResult:
    spa.clear_log()
    result = await run_crawl(
        spa.base + "/",
        tmp,
        SITEMAP_RENDER=mode,
        SITEMAP_RENDER_BROWSER=chromium,
        # Generous for a loaded machine; /hangs takes all of it.
        SITEMAP_RENDER_TIMEOUT=8.0,
        SITEMAP_RENDER_CONTEXT_PAGES=5,
        # A page auto cannot tell from its raw HTML (its links are there, a script
        # adds more): named.
        SITEMAP_RENDER_INCLUDE=[r"/news$"],
        **settings,
    )
    result.site_requests = spa.requests()  # type: ignore[attr-defined]
    return result


async def rendered_one_by_one(
    url: str, tmp: Path, chromium: str, setup: Any = None, **settings: Any
) -> CrawlResult:
    """Crawl *url* rendering every page with *chromium*, one page at a time."""
    return await run_crawl(
        url,
        tmp,
        setup=setup,
        SITEMAP_RENDER="always",
        SITEMAP_RENDER_BROWSER=chromium,
        SITEMAP_RENDER_CONCURRENCY=1,
        **settings,
    )


@pytest.fixture(scope="module")
def runs(spa: SpaServer, chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``runs(mode)``: the crawl of the SPA site in *mode*, once per module."""
    done: dict[str, CrawlResult] = {}

    def get(mode: str) -> CrawlResult:
        if mode not in done:
            done[mode] = crawl(spa, tmp_path_factory.mktemp(mode), chromium, mode)
        return done[mode]

    yield get


@pytest.fixture(scope="module")
def never(runs: Any) -> CrawlResult:
    return runs("never")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def auto(runs: Any) -> CrawlResult:
    return runs("auto")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def always(runs: Any) -> CrawlResult:
    return runs("always")  # type: ignore[no-any-return]


@pytest.fixture(scope="module", params=["auto", "always"])
def rendered(runs: Any, request: pytest.FixtureRequest) -> CrawlResult:
    """The crawl in each mode that renders."""
    return runs(request.param)  # type: ignore[no-any-return]


def paths(spa: SpaServer, urls: set[str]) -> set[str]:
    assert all(u.startswith(spa.base) for u in urls), urls
    return {u[len(spa.base) :] for u in urls}


def test_never_lists_what_raw_html_links(spa: SpaServer, never: CrawlResult) -> None:
    assert never.outcome == "published", never.stats.get("sitemap/message")
    assert paths(spa, never.listed()) == LISTED_RAW
    assert never.decisions()[spa.base + "/about"][0] == "duplicate"
    assert not any(k.startswith("sitemap/render/") for k in never.stats)
    assert all(row["render"] is None for row in never.ledger_rows().values())


def test_rendering_lists_the_true_indexable_set(spa: SpaServer, rendered: CrawlResult) -> None:
    result = rendered
    assert result.outcome == "published", result.stats.get("sitemap/message")
    assert paths(spa, result.listed()) == LISTED_RENDERED
    decisions = {
        u[len(spa.base) :]: d for u, (d, _) in result.decisions().items() if u.startswith(spa.base)
    }
    # The in-app 404 (a soft 404 with a script-added noindex), the raw noindex a
    # script removes, the script-added canonical.
    assert decisions["/old-offer"] == "noindex"
    assert decisions["/raw-noindex"] == "noindex"
    assert decisions["/product-b-alias"] == "canonical"
    # Found only behind a blocked request, or a page never rendered.
    for hidden in ("/partner-secret", "/private-secret", "/from-raw-noindex"):
        assert hidden not in decisions


def test_the_browser_fetches_only_what_it_may(spa: SpaServer, rendered: CrawlResult) -> None:
    result = rendered
    log = result.site_requests  # type: ignore[attr-defined]
    assert not [r for r in log if r["server"] == "other"]
    fetched = {r["path"] for r in log}
    assert "/app.js" in fetched and "/api/products.json" in fetched
    assert "/private-api/links.json" not in fetched  # robots.txt disallows it
    assert "/logo.png" not in fetched  # images are not loaded
    stats = result.stats
    assert stats["sitemap/render/blocked/other_host"] >= 1
    assert stats["sitemap/render/blocked/robots"] >= 1
    assert stats["sitemap/render/aborted/image"] >= 1
    assert stats["sitemap/render/aborted/stylesheet"] >= 1
    assert "/app.css" not in fetched  # nor stylesheets: no layout is needed
    # Contexts were recycled (every 5 pages here).
    assert stats["sitemap/render/contexts"] >= 1


def test_one_request_to_the_site_per_rendered_page(spa: SpaServer, rendered: CrawlResult) -> None:
    """The raw answer the crawl has serves the browser's request for the document:
    every page the site saw asked once, rendered or not; the bundle every route
    loads, once in the whole crawl (contexts recycled every 5 pages here)."""
    log = rendered.site_requests  # type: ignore[attr-defined]
    asked = Counter(r["path"] for r in log if r["server"] == "site")
    pages = {p: n for p, n in asked.items() if "." not in p.rsplit("/", 1)[-1]}
    assert pages and all(n == 1 for n in pages.values()), pages
    # (/hangs too, though its render then fails.)
    assert (
        rendered.stats["sitemap/render/document_from_raw"]
        == rendered.stats["sitemap/render/wanted"]
    )
    assert asked["/app.js"] == 1
    assert rendered.stats["sitemap/render/cache/hits"] >= 10
    assert rendered.stats["sitemap/render/contexts"] >= 2
    # Pages are kept open and reused from one URL to the next.
    assert rendered.stats["sitemap/render/pages_reused"] >= 1


@pytest_twisted.ensureDeferred
async def test_the_full_browser_renders_the_same_pages(
    spa: SpaServer, always: CrawlResult, chromium: str, tmp_path: Path
) -> None:
    """The crawl renders with the headless shell when it is there (the ``chromium``
    fixture's choice too); Debian's full browser, ``--browser /usr/bin/chromium``,
    lists the same pages for the same reasons, one request to the site a page."""
    full = shutil.which("chromium")
    assert full, "Debian's chromium is not installed (apt-get install chromium)"
    result = await crawl_async(spa, tmp_path, full, "always")
    assert result.outcome == "published", result.stats.get("sitemap/message")
    assert paths(spa, result.listed()) == paths(spa, always.listed()) == LISTED_RENDERED
    assert result.decisions() == always.decisions()
    asked = Counter(r["path"] for r in result.site_requests if r["server"] == "site")  # type: ignore[attr-defined]
    assert all(n == 1 for p, n in asked.items() if "." not in p.rsplit("/", 1)[-1]), asked


def test_content_that_arrives_late_is_read(spa: SpaServer, rendered: CrawlResult) -> None:
    """/slow's data comes after 2.5 s: its render waits for the fetch the page has
    pending (no quiet period would), and reads the link the data brings."""
    rows = {u[len(spa.base) :]: r for u, r in rendered.ledger_rows().items()}
    assert rows["/slow"]["decision"] == "listed"
    assert "not settled" not in rows["/slow"]["render"]
    assert rows["/slow-found"]["referrer"] == spa.base + "/slow"


def test_auto_renders_shells_only(spa: SpaServer, auto: CrawlResult) -> None:
    rows = {u[len(spa.base) :]: r for u, r in auto.ledger_rows().items()}
    # Plain pages are not rendered, nor one whose raw HTML says noindex.
    for path in ("/docs/", "/docs/a", "/docs/b", "/raw-noindex"):
        assert rows[path]["render"] is None, path
    assert rows["/"]["render"].startswith("rendered (empty mount element #root, 2 links")
    assert rows["/about"]["render"].startswith("rendered (empty mount element #root")
    # A server-rendered page whose list a script fills: named by --render-include.
    assert rows["/news"]["render"] == "rendered (matches --render-include)"
    assert auto.stats["sitemap/render/reason/include"] == 1
    assert auto.stats["sitemap/render/skipped/noindex"] == 1
    # Every route of the application reached and /news (LISTED_RENDERED less the
    # three static /docs/ pages, plus the in-app 404 and the canonicalised alias);
    # /hangs failed.
    report = json.loads((auto.state / "report.json").read_text())
    assert report["render"]["rendered"] == len(LISTED_RENDERED) - 3 + 2 - 1
    assert report["render"]["failed"] == 1
    assert report["render"]["unavailable"] == 0
    assert report["render"]["blocked"] >= 2  # the other host's data, the robots-blocked API
    assert "rendered in Chromium:" in _summary(auto)


def test_always_renders_every_page_not_noindex(spa: SpaServer, always: CrawlResult) -> None:
    rows = {u[len(spa.base) :]: r for u, r in always.ledger_rows().items()}
    assert rows["/docs/a"]["render"] == "rendered (always)"
    assert rows["/raw-noindex"]["render"] is None
    report = json.loads((always.state / "report.json").read_text())
    assert report["render"]["rendered"] == len(LISTED_RENDERED) + 2 - 1


def test_script_errors_and_failed_renders(spa: SpaServer, rendered: CrawlResult) -> None:
    result = rendered
    rows = {u[len(spa.base) :]: r for u, r in result.ledger_rows().items()}
    # A script that throws after building its links: the rendered DOM counts (as a
    # browser shows it), with the error noted.
    assert "1 script errors" in rows["/throws"]["render"]
    assert "boom after rendering" in rows["/throws"]["warnings"]
    # A script that never ends: judged on the raw HTML, with a warning.
    assert rows["/hangs"]["render"].startswith("render failed (")
    assert "render failed" in rows["/hangs"]["warnings"]
    assert result.stats["sitemap/render/failed"] == 1
    # pushState: the gallery's photo, linked nowhere, was found through the router.
    assert rows["/gallery/1"]["referrer"] == spa.base + "/gallery"


def _summary(result: CrawlResult) -> str:
    return result.summary_text()


@pytest_twisted.ensureDeferred
async def test_a_nightly_304_replays_the_rendered_page(
    spa: SpaServer, auto: CrawlResult, tmp_path: Path
) -> None:
    """The next run asks each page conditionally; a 304 replays what the rendered
    page gave (its links, its decision, why it was rendered), rendering nothing."""
    shutil.copytree(auto.state, tmp_path / "state")
    shutil.copytree(auto.out, tmp_path / "public")
    spa.clear_log()
    again = await run_crawl(
        spa.base + "/", tmp_path, SITEMAP_RENDER="auto", SITEMAP_RENDER_TIMEOUT=8.0
    )
    assert again.outcome == "published", again.stats.get("sitemap/message")
    assert again.stats["sitemap/conditional/not_modified"] >= len(LISTED_RENDERED)
    assert "sitemap/render/wanted" not in again.stats
    assert "/app.js" not in {r["path"] for r in spa.requests()}  # no browser at all
    assert paths(spa, again.listed()) == LISTED_RENDERED
    rows = {u[len(spa.base) :]: r for u, r in again.ledger_rows().items()}
    first = {u[len(spa.base) :]: r for u, r in auto.ledger_rows().items()}
    for path in ("/", "/gallery", "/old-offer"):
        assert rows[path]["render"] == first[path]["render"] and rows[path]["render"], path
        assert rows[path]["links"] == first[path]["links"], path


@pytest.fixture(scope="module")
def no_browser_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH with Python's directory and no Chromium on it."""
    return str(Path(sys.executable).parent)


def cli(*args: str, path: str | None = None, block: str | None = None) -> Any:
    """``sitemap-crawler ARGS`` in a child Python; *path*: its PATH; *block*: a
    module made unimportable, as when the render extra is not installed."""
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    code = "import sys\n"
    if block:
        code += f"sys.modules[{block!r}] = None\n"
    code += "from crawler.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_always_without_a_browser_says_what_to_install(
    spa: SpaServer, no_browser_path: str, tmp_path: Path
) -> None:
    out = str(tmp_path / "public")
    proc = cli("crawl", spa.base + "/", "--out", out, "--render", "always", path=no_browser_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "sitemap-crawler: error: --render always: rendering needs a Chromium: "
        "apt-get install chromium-headless-shell (or --browser PATH)"
    ]
    proc = cli("crawl", spa.base + "/", "--out", out, "--browser", str(tmp_path / "nothing"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"sitemap-crawler: error: --browser {tmp_path / 'nothing'}: not an executable file"
    ]


def test_always_without_the_extra_says_what_to_install(
    spa: SpaServer, chromium: str, tmp_path: Path
) -> None:
    out = str(tmp_path / "public")
    proc = cli(
        "crawl",
        spa.base + "/",
        "--out",
        out,
        "--render",
        "always",
        "--browser",
        chromium,
        block="scrapy_playwright",
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "sitemap-crawler: error: --render always: rendering needs scrapy-playwright: "
        'pip install -e ".[render]"'
    ]


def test_auto_without_a_browser_reads_raw_html_and_warns(
    spa: SpaServer, no_browser_path: str, tmp_path: Path
) -> None:
    out = tmp_path / "public"
    proc = cli("crawl", spa.base + "/", "--out", str(out), path=no_browser_path)
    assert proc.returncode == 0, proc.stderr
    # The shells the raw HTML reaches: / and /about.
    assert (
        "warning: 2 pages look built by JavaScript but were judged on their raw HTML "
        "(rendering needs a Chromium: apt-get install chromium-headless-shell (or --browser PATH))"
    ) in proc.stderr.splitlines()
    assert f"listed: {len(LISTED_RAW)}" in proc.stderr.splitlines()


@pytest_twisted.ensureDeferred
async def test_a_page_whose_script_hangs_after_it_was_read_harms_no_other(
    served: tuple[Path, str], chromium: str, tmp_path: Path
) -> None:
    """/a/ is read at once, then its script loops forever (after 0.5 s). The kept
    page cannot leave it for /b/ (its renderer is stuck): /b/ is rendered again in a
    fresh page, not judged on its raw HTML."""
    root, base = served
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    pages = {
        "": '<a href="/a/">a</a>',
        "a/": '<a href="/b/">b</a><script>setTimeout(() => { for (;;) {} }, 500)</script>',
        "b/": '<div id="root"></div><script>document.getElementById("root").innerHTML = '
        "'<a href=\"/c/\">c</a>'</script>",
        "c/": "the end",
    }
    for path, body in pages.items():
        (root / path).mkdir(parents=True, exist_ok=True)
        (root / path / "index.html").write_text(f"<!DOCTYPE html><title>{path}</title>{body}")
    result = await rendered_one_by_one(
        base,
        tmp_path,
        chromium,
        SITEMAP_RENDER_TIMEOUT=3.0,
        # /b/ is asked for a second after /a/ was: its loop has begun by then.
        DOWNLOAD_DELAY=1.0,
        DOWNLOAD_DELAY_JITTER=0,
    )
    rows = {u[len(base) :]: r for u, r in result.ledger_rows().items() if u.startswith(base)}
    assert rows["b/"]["render"] == "rendered (always)", rows["b/"]
    # /c/ is linked only by /b/'s script: found through /b/'s render.
    assert rows["c/"]["decision"] == "listed"
    assert "sitemap/render/failed" not in result.stats
    # (On a machine too slow to read /a/ within 0.5 s, /a/'s own render fails and its
    # page is not kept: no page was stuck. Otherwise /b/'s first page was.)
    if rows["a/"]["render"] == "rendered (always)":
        assert result.stats["sitemap/render/stuck_pages"] == 1


@pytest_twisted.ensureDeferred
async def test_the_driver_runs_with_a_small_young_generation(
    served: tuple[Path, str], chromium: str, tmp_path: Path
) -> None:
    """Playwright's driver (Node.js) is started with DRIVER_NODE_OPTIONS added to the
    crawl's NODE_OPTIONS, which the crawl's own environment keeps as it was."""
    from scrapy import signals

    root, base = served
    (root / "index.html").write_text("<!DOCTYPE html><title>one</title><p>one page")
    environs: list[bytes] = []

    def read_driver(response: Any, request: Any, spider: Any) -> None:
        for pid in child_pids(os.getpid()):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/exe").resolve().name == "node":
                    environs.append(Path(f"/proc/{pid}/environ").read_bytes())

    def setup(crawler: Any) -> None:
        crawler.signals.connect(read_driver, signal=signals.response_received)

    before = os.environ.get("NODE_OPTIONS")
    os.environ["NODE_OPTIONS"] = "--no-deprecation"
    try:
        result = await run_crawl(
            base, tmp_path, setup=setup, SITEMAP_RENDER="always", SITEMAP_RENDER_BROWSER=chromium
        )
        assert os.environ["NODE_OPTIONS"] == "--no-deprecation"
    finally:
        os.environ.pop("NODE_OPTIONS")
        if before is not None:
            os.environ["NODE_OPTIONS"] = before
    assert result.stats["sitemap/render/pages"] == 1
    assert environs, "no Playwright driver among this process's children"
    assert b"NODE_OPTIONS=--no-deprecation --max-semi-space-size=1\0" in environs[0]


@pytest_twisted.ensureDeferred
async def test_a_browser_that_dies_is_launched_again(
    spa: SpaServer, chromium: str, tmp_path: Path
) -> None:
    """Chromium killed after the third rendered page: the next pages launch it again."""
    from scrapy import signals

    rendered: list[str] = []

    def kill_after_three(response: Any, request: Any, spider: Any) -> None:
        if "playwright" not in response.flags:
            return
        rendered.append(response.url)
        if len(rendered) == 3:
            # Playwright's driver is a child of this process; Chromium, a child of it
            # (or of the shell script that starts it, as Debian's headless shell's).
            for driver in child_pids(os.getpid()):
                for browser in child_pids(driver):
                    for pid in (*child_pids(browser), browser):
                        os.kill(pid, signal.SIGKILL)

    def setup(crawler: Any) -> None:
        crawler.signals.connect(kill_after_three, signal=signals.response_received)

    result = await rendered_one_by_one(
        spa.base + "/",
        tmp_path,
        chromium,
        setup,
        SITEMAP_RENDER_TIMEOUT=8.0,
        SITEMAP_EXCLUDE=[r"/hangs$"],  # its timeout is another test's
    )
    stats = result.stats
    assert result.outcome == "published", stats.get("sitemap/message")
    assert stats["playwright/browser_count"] == 2
    # At most the page in flight when Chromium died fails.
    assert stats["sitemap/render/pages"] >= stats["sitemap/render/wanted"] - 1
    assert len(rendered) > 10


@pytest_twisted.ensureDeferred
async def test_contexts_are_recycled_on_a_memory_budget(
    spa: SpaServer, chromium: str, tmp_path: Path
) -> None:
    """Renderers over SITEMAP_RENDER_CONTEXT_MB: a fresh context after 20 pages, well
    before SITEMAP_RENDER_CONTEXT_PAGES, and every page still rendered."""
    result = await rendered_one_by_one(
        spa.base + "/",
        tmp_path,
        chromium,
        SITEMAP_RENDER_TIMEOUT=8.0,
        SITEMAP_RENDER_CONTEXT_PAGES=1000,
        SITEMAP_RENDER_CONTEXT_MB=1,
        SITEMAP_EXCLUDE=[r"/hangs$"],
    )
    stats = result.stats
    assert result.outcome == "published", stats.get("sitemap/message")
    assert stats["sitemap/render/wanted"] >= 20
    assert stats["sitemap/render/contexts"] >= 1
    assert stats["sitemap/render/pages"] == stats["sitemap/render/wanted"]


def test_the_crawl_cache_honours_the_sites_cache_headers() -> None:
    """What the browser fetched is reused within the crawl unless its headers say
    not to: no-store, no-cache, max-age=0, Vary: *, an Expires in the past."""
    from crawler.fetch.browser import ResourceCache, freshness

    now = 1_000_000.0
    assert freshness({}, now) == float("inf")  # a snapshot: kept for the crawl
    assert freshness({"etag": '"x"', "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT"}, now)
    assert freshness({"cache-control": "public, max-age=60"}, now) == now + 60
    for never in (
        {"cache-control": "no-store"},
        {"cache-control": "no-cache"},
        {"cache-control": "max-age=0"},
        {"vary": "*"},
        {"expires": "Thu, 01 Jan 1970 00:00:00 GMT"},
        {"expires": "0"},
    ):
        assert freshness(never, now) is None, never
    dated = {"date": "Mon, 01 Jan 2024 00:00:00 GMT", "expires": "Mon, 01 Jan 2024 00:01:40 GMT"}
    assert freshness(dated, now) == now + 100
    cache = ResourceCache(budget=10)
    assert cache.put("http://a/1.js", 200, {"content-encoding": "gzip"}, b"12345")
    entry = cache.get("http://a/1.js")
    assert entry is not None and entry.body == b"12345" and entry.headers == {}
    assert not cache.put("http://a/2.js", 404, {}, b"x")
    assert not cache.put("http://a/3.js", 200, {"cache-control": "no-store"}, b"x")
    assert cache.put("http://a/4.js", 200, {}, b"678901")  # past the budget: 1.js goes
    assert cache.get("http://a/1.js") is None and cache.size == 6


def test_render_concurrency_follows_the_machine_and_the_site() -> None:
    from scrapy.settings import Settings

    from crawler.fetch.browser import render_concurrency

    cores = len(os.sched_getaffinity(0))
    polite = {"CONCURRENT_REQUESTS_PER_DOMAIN": 8, "CONCURRENT_REQUESTS": 16}
    assert render_concurrency(Settings({**polite, "SITEMAP_RENDER_CONCURRENCY": 3})) == 3
    auto = Settings({**polite, "SITEMAP_RENDER_CONCURRENCY": "auto"})
    assert render_concurrency(auto) == min(2 * cores, 8)
    one = Settings(
        {**polite, "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "SITEMAP_RENDER_CONCURRENCY": "auto"}
    )
    assert render_concurrency(one) == 1
    # crawl --processes N: each process renders its share of the cores' pages.
    for here in (2, 3):
        shared = Settings({**auto.copy_to_dict(), "SITEMAP_REDIS_PROCESSES_HERE": here})
        assert render_concurrency(shared) == max(1, min(round(2 * cores / here), 8))
