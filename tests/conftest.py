"""Shared fixtures: real test servers on 127.0.0.1 and in-process crawls.

Servers are subprocesses (``tests/mockserver.py``), as in Scrapy's own suite; crawls
run in the test process on the asyncio reactor through pytest-twisted, so a test can
read the crawl's stats and ledger directly. Every crawl is watched with a Python
audit hook: a connection or DNS lookup for anything but the test server fails the
test (issue #2: the crawl talks to the crawled host and nothing else).

Every test has a time limit (pytest-timeout, ``timeout`` in pyproject.toml): a hang
fails that test with its stacks and the suite goes on. A test waiting on the reactor
is failed without stopping the reactor (see :func:`pytest_timeout_set_timer`).
"""

from __future__ import annotations

import asyncio
import compileall
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest
from twisted.internet.defer import CancelledError, Deferred

from tests.served import ROOT, ServedSite, serve_directory

if TYPE_CHECKING:
    from crawler.core.summary import RunSummary

__all__ = ["ROOT"]  # imported from here by the test modules

# -- network audit -------------------------------------------------------------------

_audit_lock = threading.Lock()
_audit_log: list[tuple[str, Any]] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _audit_log is None:
        return
    if event == "socket.connect":
        address = args[1]
        if isinstance(address, tuple):
            with _audit_lock:
                _audit_log.append(("connect", address[:2]))
    elif event == "socket.getaddrinfo":
        with _audit_lock:
            _audit_log.append(("getaddrinfo", (args[0], args[1])))


sys.addaudithook(_audit)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The checkout's bytecode, written once for the hundreds of Python processes the
    tests start: with PYTHONDONTWRITEBYTECODE set, each would compile every module of
    the checkout again, 0.1-0.2 s of CPU (bench/README.md, "Fixed costs of a run")."""
    for package in ("crawler", "pipelines", "settings", "tests"):
        compileall.compile_dir(ROOT / package, quiet=2)


class NetworkWatch:
    """Records every socket connect and DNS lookup made by this process."""

    def __enter__(self) -> list[tuple[str, Any]]:
        global _audit_log
        _audit_log = []
        return _audit_log

    def __exit__(self, *exc: object) -> None:
        global _audit_log
        _audit_log = None


# -- time limits -----------------------------------------------------------------------
#
# pytest-timeout's signal method raises in whatever the main thread runs when the time
# is up. In a test that waits on the reactor (pytest-twisted), that is the reactor's
# loop, in pytest-twisted's greenlet: raised there, the exception stops the reactor
# and every later test that needs it fails. So when the alarm comes in the reactor,
# the stacks of the tasks the test started are written out, those tasks cancelled, and
# the Deferred the test waits on cancelled: the test fails, the reactor goes on.

TIMED_OUT = pytest.StashKey[float]()


def _reactor_greenlet() -> Any:
    import pytest_twisted

    return pytest_twisted._instances.gr_twisted


def _waited_on(greenlet: Any) -> Deferred[Any] | None:
    """The Deferred the test's greenlet is blocked on (pytest-twisted's blockon)."""
    import pytest_twisted

    frame = greenlet.gr_frame
    while frame is not None and frame.f_code is not pytest_twisted.blockon_default.__code__:
        frame = frame.f_back
    return None if frame is None else frame.f_locals.get("d")


def _in_test(frame: Any, item: pytest.Item) -> bool:
    """Whether *frame* runs the test's own code, which an exception raised here ends:
    a plain test (pytest-twisted calls every test in its greenlet, from ``in_reactor``)
    or an asynchronous one between two awaits. Not the reactor's loop waiting."""
    own = getattr(getattr(item, "obj", None), "__code__", None)
    while frame is not None:
        code = frame.f_code
        if code is own or (code.co_name == "in_reactor" and "pytest_twisted" in code.co_filename):
            return True
        frame = frame.f_back
    return False


def _awaiting(coro: Any) -> list[str]:
    """The stack of a suspended coroutine, down to what it waits on (a task's own
    print_stack shows its outermost frame only)."""
    frames = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        frame = frame or getattr(coro, "gi_frame", None)
        if frame is not None:
            frames.append((frame, frame.f_lineno))
        coro = (
            getattr(coro, "cr_await", None)
            or getattr(coro, "ag_await", None)
            or getattr(coro, "gi_yieldfrom", None)
        )
    lines = traceback.StackSummary.extract(frames).format()
    return [*lines, "  waiting\n"] if lines else []


def _loop_tasks() -> set[asyncio.Task[Any]]:
    import pytest_twisted

    reactor = pytest_twisted._instances.reactor
    loop = getattr(reactor, "_asyncioEventloop", None)
    return set(asyncio.all_tasks(loop)) if loop is not None else set()


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout's signal method, safe for the reactor (see above)."""
    import greenlet
    import pytest_timeout

    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own
    before = _loop_tasks()

    def handler(signum: int, frame: Any) -> None:
        __tracebackhide__ = True
        reactor = _reactor_greenlet()
        waited = _waited_on(reactor.parent) if reactor is not None else None
        if greenlet.getcurrent() is not reactor or waited is None or _in_test(frame, item):
            pytest_timeout.timeout_sigalrm(item, settings)  # raises in the test
            return
        terminal = item.config.get_terminal_writer()
        terminal.sep("+", title=f"Timeout (>{settings.timeout:g} s) in the reactor")
        started = [t for t in _loop_tasks() - before if not t.done()]
        for task in started:
            terminal.sep("~", title=f"Stack of {task.get_name()} ({task.get_coro()!r})")
            terminal.write("".join(_awaiting(task.get_coro())))
        pytest_timeout.dump_stacks(terminal)
        terminal.sep("+", title="Timeout")
        item.stash[TIMED_OUT] = settings.timeout
        for task in started:
            task.cancel()
        waited.cancel()  # the test's blockon raises CancelledError, which becomes Failed

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's cancel hook
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """A test failed by the time limit while it waited on the reactor says so."""
    try:
        return (yield)
    except CancelledError:
        if TIMED_OUT not in pyfuncitem.stash:
            raise
    pytest.fail(
        f"Timeout (>{pyfuncitem.stash[TIMED_OUT]:g} s) from pytest-timeout, waiting on "
        "the reactor: the stacks of the test's tasks are above",
        pytrace=False,
    )


# Hypothesis: no deadline for one example and no "too slow" health check; on a busy
# machine an example is slower, which is no failure (a hang meets the time limit).
hypothesis.settings.register_profile(
    "suite", deadline=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)
hypothesis.settings.load_profile("suite")


# -- test servers ------------------------------------------------------------------------


class MockServer(ServedSite):
    """A ``tests.mockserver`` site whose robots.txt behaves as *robots*."""

    def __init__(self, robots: str, log: Path) -> None:
        self.robots = robots
        self.log = log
        super().__init__(
            "tests.mockserver", "--robots", robots, "--gate", str(self.gate_path), log=log
        )

    def crawl_requests(self) -> list[dict[str, Any]]:
        """:meth:`requests`, less those of the start URL's pre-flight
        (crawler.fetch.origin), which alone sends no Accept header (Scrapy's
        DEFAULT_REQUEST_HEADERS have one)."""
        return [r for r in self.requests() if r.get("accept") is not None]


class TrapServer(ServedSite):
    """A ``tests.trapserver`` site serving *mode*."""

    def __init__(self, mode: str, log: Path) -> None:
        super().__init__("tests.trapserver", "--mode", mode, log=log)

    def paths(self) -> list[str]:
        return [request["path"] for request in self.requests()]


@pytest.fixture(scope="module")
def traps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapServer]:
    """tests/trapserver.py's traps: calendars, archives, a shop's sort and filter links."""
    with TrapServer("traps", tmp_path_factory.mktemp("traps") / "log") as server:
        yield server


@pytest.fixture(scope="module")
def soft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrapServer]:
    """A site whose missing pages answer 200 (soft 404s)."""
    with TrapServer("soft404", tmp_path_factory.mktemp("soft") / "log") as server:
        yield server


@pytest.fixture
def nightly(tmp_path: Path) -> Iterator[Any]:
    """The site of ``tests/nightlyserver.py``, which a test edits between runs
    (``tests.test_nightly.NightlySite``)."""
    from tests.test_nightly import NightlySite

    with NightlySite(tmp_path) as site:
        yield site


@pytest.fixture
def endpoint() -> Iterator[Any]:
    """An IndexNow endpoint that records what it is sent (``tests/indexnowserver.py``)."""
    from tests.indexnowserver import IndexNowServer

    server = IndexNowServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``servers(mode)`` starts (once per module and mode) a test site whose
    robots.txt behaves as *mode*."""
    started: dict[str, MockServer] = {}
    tmp = tmp_path_factory.mktemp("servers")

    def get(mode: str = "rules") -> MockServer:
        if mode not in started:
            started[mode] = MockServer(mode, tmp / f"{mode}.log")
        return started[mode]

    yield get
    for srv in started.values():
        srv.stop()


@pytest.fixture(scope="module")
def site(servers: Any) -> MockServer:
    return servers("rules")


# -- crawls -------------------------------------------------------------------------------


@dataclass
class CrawlResult:
    stats: dict[str, Any]
    out: Path
    state: Path
    network: list[tuple[str, Any]] = field(default_factory=list)
    #: The run's summary, as the publisher built it (None: it never ran).
    summary: RunSummary | None = None

    @property
    def outcome(self) -> str | None:
        return self.stats.get("sitemap/outcome")

    def summary_text(self) -> str:
        """The end-of-run summary the command prints."""
        from crawler.publish.report import format_summary

        assert self.summary is not None
        return format_summary(self.summary)

    def ledger_rows(self) -> dict[str, dict[str, Any]]:
        from crawler.ledger.ledger import Ledger

        path = self.state / "ledger.sqlite"
        if not path.exists():
            path = self.state / "ledger.failed.sqlite"
        ledger = Ledger(path)
        try:
            return {row["url"]: row for row in ledger.rows()}
        finally:
            ledger.close()

    def decisions(self) -> dict[str, tuple[str, str]]:
        return {url: (row["decision"], row["reason"]) for url, row in self.ledger_rows().items()}

    def listed(self) -> set[str]:
        return {row["loc"] for row in self.ledger_rows().values() if row["decision"] == "listed"}


def crawl_settings(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    settings = {
        "SITEMAP_OUT_DIR": str(tmp_path / "public"),
        "SITEMAP_STATE_DIR": str(tmp_path / "state"),
        "LOG_LEVEL": "INFO",
        # Local test servers answer at once; no need to ramp up.
        "AUTOTHROTTLE_START_DELAY": 0.0,
        "RETRY_TIMES": 1,
        # Runs one after the other within seconds verify every known page (--full), as
        # the tests of conditional requests, lastmod and changes between runs expect;
        # the revisit schedule's own tests (tests/test_revisit.py) move the clock
        # instead, with the default.
        "SITEMAP_REVISIT_FULL": True,
    }
    settings.update(overrides)
    return settings


async def run_crawl(url: str, tmp_path: Path, setup: Any = None, **overrides: Any) -> CrawlResult:
    """Crawl *url* in this process with the project's settings plus *overrides*;
    *setup*, when given, is called with the crawler before it starts."""
    from scrapy.crawler import AsyncCrawlerRunner
    from scrapy.settings import Settings

    from crawler.crawl.spider import SiteSpider
    from crawler.ledger.runstate import RunState

    settings = Settings()
    settings.setmodule("settings", priority="project")
    chosen = crawl_settings(tmp_path, **overrides)
    settings.setdict(chosen, priority="cmdline")
    runner = AsyncCrawlerRunner(settings)
    crawler = runner.create_crawler(SiteSpider)
    if setup is not None:
        setup(crawler)
    with NetworkWatch() as network:
        # pytest-twisted drives this coroutine with Deferreds; wrap the asyncio task.
        await Deferred.fromFuture(asyncio.ensure_future(runner.crawl(crawler, url=url)))
        seen = list(network)
    assert crawler.stats is not None
    state = RunState.existing(crawler)
    return CrawlResult(
        crawler.stats.get_stats(),
        Path(chosen["SITEMAP_OUT_DIR"]),
        Path(chosen["SITEMAP_STATE_DIR"]),
        seen,
        state.outcome.summary if state is not None and state.outcome is not None else None,
    )


def start_cli(*args: str, cwd: Path = ROOT, **options: Any) -> subprocess.Popen[str]:
    """``sitemap-crawler ARGS`` started (from the project root), its output piped;
    *options* as subprocess.Popen's (``env``, say)."""
    return subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def cli(*args: str, timeout: float = 240, **options: Any) -> subprocess.CompletedProcess[str]:
    """``sitemap-crawler ARGS`` run to its end (:func:`start_cli`), killed after
    *timeout* seconds."""
    with start_cli(*args, **options) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def scrapy(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGS`` run from the project root (crawler/commands is Scrapy's
    COMMANDS_MODULE there)."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 that refuses connections: the OS gave it to a socket that
    holds it for the test without listening, so no other test's server can take it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is *pid* (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def wait_for(predicate: Any, timeout: float = 120) -> None:
    """Poll *predicate* until it is true; fail the test after *timeout* seconds, a
    limit for a hang, not for a busy machine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {predicate!r}")


# -- a directory served over HTTP, and an independent sitemap reader ----------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A directory served by Python's http.server on 127.0.0.1, and its base URL."""
    with serve_directory(tmp_path / "public") as directory:
        yield directory.root, directory.url("/")


def usp_tree(url: str) -> Any:
    """The sitemap (index, urlset or feed) at *url* as ultimate-sitemap-parser reads
    it: an independent reader of images, news, alternates and Atom feeds."""
    import requests
    from usp.fetch_parse import SitemapFetcher
    from usp.web_client.requests_client import RequestsWebClient

    session = requests.Session()
    session.trust_env = False  # no proxy from the environment for 127.0.0.1
    client = RequestsWebClient(session=session)
    return SitemapFetcher(url=url, recursion_level=0, web_client=client).sitemap()


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of a real Chromium (tests/browser.py); fails, not skips, without one."""
    from tests.browser import chromium_path

    path = chromium_path()
    if path is None:
        pytest.fail(
            "no Chromium found: install Debian's chromium-headless-shell package (apt-get "
            "install chromium-headless-shell), "
            "or set TEST_CHROMIUM to a Chromium binary",
            pytrace=False,
        )
    return path
