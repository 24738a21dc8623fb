"""Pages parsed in worker processes (crawler/page/parsepool.py) are judged as in one process.

The test site (tests/mockserver.py) is crawled three times: with no worker
(``SITEMAP_PARSE_PROCESSES = 0``), with one, and with one that is killed after a
few responses. The ledgers must be the same, row for row, and the stats must show
where the pages were parsed.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import signals
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from crawler.page.analysis import analyse, analyse_response
from crawler.page.links import LinkResolver
from crawler.page.parsepool import (
    BACKLOG_MAX_BYTES,
    PageAnalyser,
    _shared_pool,
    default_processes,
    processes_from,
)
from tests.conftest import ROOT, CrawlResult, MockServer, run_crawl, wait_for

# Per-run columns: when the row was written and first seen, and how long its fetch
# took (elapsed, issue #17).
# Times of the run (and the due dates spread in the order the pages came).
VOLATILE_COLUMNS = {"updated", "first_seen", "elapsed", "verified_at", "verified_date", "due_at"}


async def crawl(
    site: MockServer,
    tmp: Path,
    processes: int,
    setup: Any = None,
    local_below: int = 0,
    backlog: int = 0,
) -> CrawlResult:
    """The test site's pages are small: every one goes to the worker unless
    *local_below* or *backlog* says otherwise."""
    return await run_crawl(
        site.url("/"),
        tmp,
        setup=setup,
        SITEMAP_TRAP_MAX_QUERY_VARIANTS=5,
        SITEMAP_PARSE_PROCESSES=processes,
        SITEMAP_PARSE_LOCAL_BELOW=local_below,
        SITEMAP_PARSE_BACKLOG=backlog,
    )


def crawl_now(site: MockServer, tmp: Path, processes: int, local_below: int = 0) -> CrawlResult:
    """:func:`crawl` from a (module) fixture."""
    coro = crawl(site, tmp, processes, local_below=local_below)
    return pytest_twisted.blockon(Deferred.fromCoroutine(coro))


def rows(result: CrawlResult) -> dict[str, dict[str, Any]]:
    return {
        url: {k: v for k, v in dict(row).items() if k not in VOLATILE_COLUMNS}
        for url, row in result.ledger_rows().items()
    }


@pytest.fixture(scope="module")
def in_process(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> CrawlResult:
    return crawl_now(site, tmp_path_factory.mktemp("local"), 0)


def started_pool() -> None:
    """Start the shared one-worker pool and wait until its worker is up: the test
    site is crawled faster than a worker starts, and pages that come before are
    parsed in the crawl's process."""
    assert _shared_pool(1).wait_ready(60)


async def pooled_crawl(site: MockServer, tmp: Path, **options: Any) -> CrawlResult:
    """:func:`crawl` with one parse process, once the shared pool's worker is up."""
    started_pool()
    return await crawl(site, tmp, 1, **options)


@pytest.fixture(scope="module")
def in_worker(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> CrawlResult:
    started_pool()
    return crawl_now(site, tmp_path_factory.mktemp("worker"), 1)


def test_in_process_parses_every_page_here(in_process: CrawlResult) -> None:
    stats = in_process.stats
    assert stats.get("sitemap/parse/local", 0) > 20
    assert "sitemap/parse/remote" not in stats


def test_worker_parses_every_page(in_worker: CrawlResult, in_process: CrawlResult) -> None:
    stats = in_worker.stats
    assert stats.get("sitemap/parse/remote") == in_process.stats["sitemap/parse/local"]
    assert "sitemap/parse/local" not in stats


@pytest_twisted.ensureDeferred
async def test_pages_before_the_worker_is_up_are_parsed_here(
    site: MockServer, tmp_path: Path, in_process: CrawlResult
) -> None:
    from crawler.page import parsepool as analysis

    for pool in list(analysis._pools.values()):
        analysis._drop_pool(pool)  # so that this crawl starts a new one
    result = await crawl(site, tmp_path, 1)
    stats = result.stats
    assert stats.get("sitemap/parse/local", 0) > 0  # the test site is fast
    total = stats.get("sitemap/parse/remote", 0) + stats["sitemap/parse/local"]
    assert total == in_process.stats["sitemap/parse/local"]
    assert rows(result) == rows(in_process)


def test_same_ledger_either_way(in_worker: CrawlResult, in_process: CrawlResult) -> None:
    local, remote = rows(in_process), rows(in_worker)
    assert local.keys() == remote.keys()
    for url, row in local.items():
        assert remote[url] == row, url
    # Not vacuous: the rows carry what only the parse gives.
    listed = [r for r in local.values() if r["decision"] == "listed"]
    assert len(listed) > 30
    assert all(r["main_hash"] and r["content_hash"] for r in listed)
    assert any(r["links"] for r in listed)


@pytest_twisted.ensureDeferred
async def test_killed_worker_loses_nothing(
    site: MockServer, tmp_path: Path, in_process: CrawlResult
) -> None:
    """A worker that dies (out of memory, killed) costs a warning, not a page."""
    killed: list[int] = []

    def setup(crawler: Any) -> None:
        def kill_worker() -> None:
            pool = crawler.spider.analyser.pool
            if killed or pool is None or crawler.stats.get_value("sitemap/parse/remote", 0) < 5:
                return
            for proc in pool.procs:
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)

        # weak=False: nothing else holds this closure.
        crawler.signals.connect(kill_worker, signal=signals.response_received, weak=False)

    result = await pooled_crawl(site, tmp_path, setup=setup)
    assert killed
    assert result.stats.get("sitemap/parse/broken_pool") == 1
    assert result.stats.get("sitemap/parse/local", 0) > 0
    assert rows(result) == rows(in_process)


@pytest_twisted.ensureDeferred
async def test_pool_comes_back_after_a_broken_one(site: MockServer, tmp_path: Path) -> None:
    # The killed pool of the test above is not reused by the next crawl.
    result = await pooled_crawl(site, tmp_path)
    assert result.stats.get("sitemap/parse/remote", 0) > 20
    assert "sitemap/parse/broken_pool" not in result.stats


PAGE = b"""<!doctype html><html><head><meta charset="iso-8859-1">
<link rel="canonical" href="/c"><meta name="robots" content="noindex">
<meta property="article:modified_time" content="2024-05-01T10:00:00Z"></head>
<body><a href="caf\xe9.html">x</a><script>var x = 1;</script><p>Text</p></body></html>"""


def test_worker_function_matches_local() -> None:
    headers = {b"Content-Type": [b"text/html"], b"X-Robots-Tag": [b"noarchive"]}
    response = HtmlResponse("http://127.0.0.1/p/", body=PAGE, headers=headers)
    local = analyse_response(response, ("robots",), (), LinkResolver())
    remote = analyse("http://127.0.0.1/p/", 200, headers, PAGE, ("robots",), (), (True, ()))
    assert pickle.loads(pickle.dumps(remote)) == local  # as it comes back from a worker
    assert local.encoding == "cp1252"  # iso-8859-1 as browsers read it
    assert local.facts.robots.noindex and not local.facts.robots.nofollow
    assert local.facts.canonicals == ["http://127.0.0.1/c"]
    assert [d.value for d in local.facts.page_dates] == ["2024-05-01T10:00:00+00:00"]
    assert local.main_hash is not None and local.main_hash.startswith("m2-")
    # The link, resolved with the page's encoding and normalised.
    assert [r.url for r in local.links if r] == ["http://127.0.0.1/p/caf%C3%A9.html"]


def test_each_link_comes_back_once() -> None:
    page = b"""<html><body><a href="a.html">1</a><a href="mailto:x@y">m</a>
    <a href="b.html">2</a><a href="a.html#s">3</a><a href="mailto:x@y">m</a>
    <a href="./a.html">4</a><a href="/p/b.html">5</a></body></html>"""
    response = HtmlResponse("http://127.0.0.1/p/", body=page, headers={})
    result = analyse_response(response, (), (), LinkResolver())
    # a.html, a.html#s and ./a.html are one link (one raw form), b.html and
    # /p/b.html another; every link that is not http(s) is kept, to be counted.
    assert [r and r.raw for r in result.links] == [
        "http://127.0.0.1/p/a.html",
        None,
        "http://127.0.0.1/p/b.html",
        None,
    ]
    assert result.facts.hrefs == []  # resolved: not sent back


@pytest_twisted.ensureDeferred
async def test_small_pages_are_parsed_here(
    site: MockServer, tmp_path: Path, in_process: CrawlResult
) -> None:
    result = await pooled_crawl(site, tmp_path, local_below=1_000_000)
    assert "sitemap/parse/remote" not in result.stats
    assert result.stats["sitemap/parse/local"] == in_process.stats["sitemap/parse/local"]
    assert rows(result) == rows(in_process)


@pytest_twisted.ensureDeferred
async def test_pages_are_parsed_here_while_the_worker_is_behind() -> None:
    started_pool()
    # The pool's channels in this event loop first (another test may have made them,
    # or not): pages asked while they are being made are parsed here.
    warm = PageAnalyser(1, ("robots",), (), local_below=0)
    warm.open()
    page = HtmlResponse("http://127.0.0.1/p/warm.html", body=PAGE, headers={})
    await Deferred.fromFuture(asyncio.ensure_future(warm.analyse(page)))
    assert [c.ready for c in warm.channels] == [True]
    stats = get_crawler().stats
    analyser = PageAnalyser(1, ("robots",), (), local_below=0, backlog=2)
    analyser.open(stats)
    responses = [
        HtmlResponse(f"http://127.0.0.1/p/{i}.html", body=PAGE, headers={}) for i in range(5)
    ]
    huge = PAGE.replace(b"<p>Text</p>", b"<p>Text</p>" * (BACKLOG_MAX_BYTES // 11))
    responses.append(HtmlResponse("http://127.0.0.1/p/huge.html", body=huge, headers={}))
    # Asked at once: the first two wait for the worker, the next three find it
    # behind and are parsed here, and the huge page waits for the worker all the
    # same; the answers are the same either way.
    coros = [analyser.analyse(r) for r in responses]
    results = await Deferred.fromFuture(asyncio.ensure_future(asyncio.gather(*coros)))
    assert stats.get_value("sitemap/parse/remote") == 3
    assert stats.get_value("sitemap/parse/backlog") == stats.get_value("sitemap/parse/local") == 3
    assert [len(c.waiting) for c in analyser.channels] == [0]
    assert results == [PageAnalyser(0, ("robots",), ()).local(r) for r in responses]


@pytest_twisted.ensureDeferred
async def test_backlog_counts_pages_parsed_here(
    site: MockServer, tmp_path: Path, in_process: CrawlResult
) -> None:
    result = await pooled_crawl(site, tmp_path, backlog=1)
    stats = result.stats
    local, backlog = stats.get("sitemap/parse/local", 0), stats.get("sitemap/parse/backlog", 0)
    assert local == backlog  # every page parsed here was one the worker was behind on
    assert stats.get("sitemap/parse/remote", 0) + local == in_process.stats["sitemap/parse/local"]
    assert rows(result) == rows(in_process)


def test_no_pool_without_processes() -> None:
    analyser = PageAnalyser(0, ("robots",), ())
    analyser.open()
    assert not analyser.enabled and analyser.pool is None


@pytest_twisted.ensureDeferred
async def test_no_worker_for_a_site_of_small_pages(site: MockServer, tmp_path: Path) -> None:
    from crawler.page import parsepool as analysis

    for pool in list(analysis._pools.values()):
        analysis._drop_pool(pool)
    result = await crawl(site, tmp_path, 1, local_below=1_000_000)
    assert "sitemap/parse/remote" not in result.stats
    assert not analysis._pools  # never started


@pytest.mark.parametrize(("cores", "expected"), [(1, 0), (2, 1), (3, 2), (16, 2)])
def test_default_processes(monkeypatch: pytest.MonkeyPatch, cores: int, expected: int) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert default_processes() == expected


def test_processes_setting() -> None:
    from scrapy.settings import Settings

    assert processes_from(Settings({"SITEMAP_PARSE_PROCESSES": "3"})) == 3
    assert processes_from(Settings({"SITEMAP_PARSE_PROCESSES": None})) == default_processes()


FORK_CHECK = """
import sys, threading
from crawler.page.parsepool import _pools, fork_workers
if sys.argv[1] == "reactor":
    from scrapy.utils.reactor import install_reactor
    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
elif sys.argv[1] == "thread":
    threading.Thread(target=threading.Event().wait, args=(5,), daemon=True).start()
first, second = fork_workers(1), fork_workers(1)
print(first, second, [up for pool in _pools.values() for up in pool.up])
"""


@pytest.mark.parametrize(
    ("state", "expected"),
    [("fresh", "True False [True]"), ("reactor", "False False []"), ("thread", "False False []")],
)
def test_workers_are_forked_only_before_the_reactor_and_threads(state: str, expected: str) -> None:
    # A fresh interpreter each: this one has a reactor and threads. Forked, the worker
    # is up when fork_workers returns; a second call finds the pool there.
    out = subprocess.run(
        [sys.executable, "-c", FORK_CHECK, state],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.split("\n")[0] == expected


def test_command_line_crawl_sends_every_page_to_a_forked_worker(
    site: MockServer, tmp_path: Path, in_process: CrawlResult
) -> None:
    out = tmp_path / "public"
    run = subprocess.run(
        [
            *(sys.executable, "-m", "crawler.cli", "crawl", site.url("/"), "--out", str(out)),
            *("-s", "SITEMAP_PARSE_LOCAL_BELOW=0", "-s", "SITEMAP_PARSE_PROCESSES=1"),
            *("-s", "SITEMAP_TRAP_MAX_QUERY_VARIANTS=5", "-s", "RETRY_TIMES=1"),
            # No page parsed here because the worker is behind: on a busy machine it
            # can be four pages behind (SITEMAP_PARSE_BACKLOG) at any moment.
            *("-s", "SITEMAP_PARSE_BACKLOG=0", "-s", "LOG_LEVEL=INFO"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    # The worker was up before the first page: none waited for it here.
    parsed = re.findall(r"'sitemap/parse/[a-z_]+': \d+", run.stderr)
    assert "'sitemap/parse/local'" not in run.stderr, parsed
    remote = re.search(r"'sitemap/parse/remote': (\d+)", run.stderr)
    assert remote and int(remote.group(1)) == in_process.stats["sitemap/parse/local"]
    result = CrawlResult({}, out, out.with_name("public.sitemap-state"), [])
    assert rows(result) == rows(in_process)


def worker_pids(parent: int) -> set[int]:
    """The children of *parent* (its page-parsing workers), from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == parent and alive(int(entry.name)):
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether *pid* runs (a zombie does not: this VM's init may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def slow_crawl(servers: Any, tmp_path: Path) -> tuple[subprocess.Popen[str], MockServer]:
    server = servers("crawl-delay")  # Crawl-delay 1 s: slow enough to interrupt
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "crawler.cli", "crawl", server.url("/")),
            *("--out", str(tmp_path), "-s", "SITEMAP_PARSE_LOCAL_BELOW=0"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives it
        env=dict(os.environ, **{"SCRAPY_SETTINGS_MODULE": "settings"}),
    )
    server.clear_log()
    # Scrapy's own requests, after the two of the start URL's pre-flight
    # (crawler.fetch.origin: robots.txt and the start URL) and the workers' fork.
    wait_for(lambda: len(server.requests()) >= 4 and worker_pids(proc.pid))
    return proc, server


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_ctrl_c_at_the_terminal_stops_crawl_and_workers(servers: Any, tmp_path: Path) -> None:
    proc, _ = slow_crawl(servers, tmp_path / "public")
    workers = worker_pids(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)  # the whole group, as Ctrl-C at a terminal
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr  # the workers ignore SIGINT: no KeyboardInterrupt
    # The workers and multiprocessing's resource tracker, which ends just after.
    wait_for(lambda: not any(alive(pid) for pid in workers), timeout=60)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_killed_crawl_leaves_no_worker(servers: Any, tmp_path: Path) -> None:
    proc, _ = slow_crawl(servers, tmp_path / "public")
    workers = worker_pids(proc.pid)
    assert workers
    proc.kill()
    proc.communicate(timeout=60)  # ends: no orphan holds its stdout and stderr
    wait_for(lambda: not any(alive(pid) for pid in workers), timeout=60)
