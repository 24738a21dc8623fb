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
import json
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest
from twisted.internet.defer import CancelledError, Deferred

if TYPE_CHECKING:
    from crawler.core.summary import RunSummary

ROOT = Path(__file__).resolve().parents[1]

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


@dataclass
class MockServer:
    robots: str
    log_path: Path
    proc: subprocess.Popen[str] | None = None
    port: int = 0

    def start(self) -> MockServer:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.mockserver",
                "--robots",
                self.robots,
                "--log",
                str(self.log_path),
                "--gate",
                str(self.gate_path),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"mock server did not start: {line!r}")
        self.port = int(line)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def requests(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]

    def crawl_requests(self) -> list[dict[str, Any]]:
        """:meth:`requests`, less those of the start URL's pre-flight
        (crawler.fetch.origin), which alone sends no Accept header (Scrapy's
        DEFAULT_REQUEST_HEADERS have one)."""
        return [r for r in self.requests() if r.get("accept") is not None]

    def clear_log(self) -> None:
        self.log_path.write_text("")

    @property
    def gate_path(self) -> Path:
        return self.log_path.with_suffix(".gate")

    @contextmanager
    def gate(self) -> Iterator[None]:
        """Hold every request until the block ends (``tests/gate.py``)."""
        self.gate_path.touch()
        try:
            yield
        finally:
            self.gate_path.unlink()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``servers(mode)`` starts (once per module and mode) a test site whose
    robots.txt behaves as *mode*."""
    started: dict[str, MockServer] = {}
    tmp = tmp_path_factory.mktemp("servers")

    def get(mode: str = "rules") -> MockServer:
        if mode not in started:
            started[mode] = MockServer(mode, tmp / f"{mode}.log").start()
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
    root = tmp_path / "public"
    root.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = re.search(r"port (\d+)", proc.stdout.readline())
        assert match, "http.server did not start"
        yield root, f"http://127.0.0.1:{match[1]}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


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
