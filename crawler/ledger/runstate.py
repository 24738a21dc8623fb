"""The state of one run: what belongs to the run, not to one component. One
:class:`RunState` per crawler (the first extension in ``EXTENSIONS``; components get it
with :meth:`RunState.of`; a process with no ``SITEMAP_OUT_DIR``, a distributed worker,
has none) holds:

- the lock, one run per state directory (two would interleave their ledgers and race
  to publish): a non-blocking ``flock`` on ``STATE/lock`` before any file is opened; a
  second run is *locked out* (touches no file, its spider closed at once). The kernel
  drops a dead process's lock: a crash leaves no stale one;
- the previous successful run (:class:`crawler.ledger.previous.PreviousRun`);
- the running ledger, continued by ``--resume``, filed by :meth:`RunState.end`;
  Scrapy's ``JOBDIR``, removed once the run cannot be resumed;
- the state paths, the public-URL mapping, and why the run cannot do its job
  (:meth:`RunState.fail`).

Stats: ``sitemap/locked``, ``sitemap/fatal``."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import weakref
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro

from crawler.core import clock
from crawler.core.outcome import RunOutcome
from crawler.core.paths import LEDGER_FAILED, LEDGER_JSONL, LOCK, CrawlPaths
from crawler.core.publicurl import PublicUrls
from crawler.ledger import schedule
from crawler.ledger.ledger import Ledger
from crawler.ledger.previous import API_LINKS, PreviousRun
from crawler.ledger.schedule import RevisitPolicy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

_states: weakref.WeakKeyDictionary[Crawler, RunState] = weakref.WeakKeyDictionary()


def holder(state: Path) -> str | None:
    """Who holds the lock of the state directory *state*, if anyone: the command
    line asks before it starts, so that a busy state costs one line, not a crawl."""
    path = state / LOCK
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _held(fd, state)
    finally:
        os.close(fd)  # also releases the lock if we got it
    return None


def _held(fd: int, state: Path) -> str:
    pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
    return f"another run (pid {pid}) is using the state directory {state}"


def _start_url(crawler: Crawler) -> str | None:
    try:
        spider = crawler.spider
    except RuntimeError:  # Scrapy's late attribute: no spider yet
        return None
    url = getattr(spider, "start_url", None)
    return url if isinstance(url, str) else None


@dataclass(eq=False)
class RunState:
    """The run's state. *paths*: None for a process that keeps none; *incremental*: start
    from the previous run; *resume*: continue its ledger; *job*: Scrapy's ``JOBDIR``."""

    start_url: str
    public: PublicUrls
    paths: CrawlPaths | None
    stats: StatsCollector
    _: KW_ONLY
    incremental: bool
    resume: bool
    job: Path | None
    started: datetime = field(init=False, default_factory=lambda: clock.now())
    previous: PreviousRun | None = field(init=False, default=None)
    #: The revisit schedule of tonight (crawler.ledger.schedule), and why tonight
    #: verifies every URL (None: it verifies what is due and what signals name).
    policy: RevisitPolicy | None = field(init=False, default=None)
    full_night: str | None = field(init=False, default=None)
    ledger: Ledger | None = field(init=False, default=None)
    locked_out: bool = field(init=False, default=False)
    fatal: str | None = field(init=False, default=None)
    unfetched: tuple[str, str] | None = field(init=False, default=None)  # see fail()
    robots: dict[str, Any] | None = field(init=False, default=None)  # see read_robots()
    api_links: list[str] | None = field(init=False, default=None)  # see keep_api_links()
    #: How the run ended, set by the publisher (None until then, or in a
    #: process that keeps no books): the command's answer, not the stats.
    outcome: RunOutcome | None = field(init=False, default=None)
    resumable: bool = field(init=False, default=False)
    _lock: int | None = field(init=False, default=None)
    _crawler: Crawler | None = field(init=False, default=None)  # set by from_crawler()

    @property
    def run_time(self) -> str:
        """When the run started, as a W3C datetime (the time of what it finds new)."""
        return self.started.strftime("%Y-%m-%dT%H:%M:%S+00:00")

    @classmethod
    def of(cls, crawler: Crawler) -> RunState:
        """The crawler's run state; ``NotConfigured`` where there is none (the extension is
        off, or the spider has no start URL): a component that needs it is not ours to run."""
        state = _states.get(crawler)
        if state is None:
            raise NotConfigured("no run state (a spider with a start URL, the RunState extension)")
        return state

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RunState:
        """As the first extension (the lock is taken before any other component opens a file),
        with the start URL of the spider Scrapy built before it."""
        start_url = _start_url(crawler)
        if start_url is None:
            raise NotConfigured("the run state needs a spider with a start URL")
        assert crawler.stats is not None
        s = crawler.settings
        out = s.get("SITEMAP_OUT_DIR")
        state = cls(
            start_url,
            PublicUrls.create(start_url, s.get("SITEMAP_BASE_URL")),
            CrawlPaths.create(out, s.get("SITEMAP_STATE_DIR")) if out else None,
            crawler.stats,
            incremental=s.getbool("SITEMAP_INCREMENTAL"),
            resume=s.getbool("SITEMAP_RESUME"),
            job=Path(s["JOBDIR"]) if s.get("JOBDIR") else None,
        )
        state.open()
        state.plan(s)
        _states[crawler] = state
        crawler.signals.connect(state._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(state._engine_stopped, signal=signals.engine_stopped)
        state._crawler = crawler
        return state

    # -- the run starts ------------------------------------------------------------------

    def open(self) -> None:
        """Take the lock, then open what the run reads and writes."""
        if self.paths is None or not self._acquire(self.paths):
            return
        if self.job is not None and not self.resume:
            # A new night starts clean, even after an interrupted run.
            shutil.rmtree(self.job, ignore_errors=True)
        if self.incremental:
            self.previous = PreviousRun.find(self.paths.ledger)
        path = self.paths.running_ledger
        if not (self.resume and self.job is not None and path.exists()):
            for suffix in ("", "-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
        self.ledger = Ledger(path)
        self.ledger.set_meta("start_url", self.start_url)
        self.ledger.set_meta("run_started", self.run_time)
        self.ledger.set_meta(
            "settings_base_url", self.public.public_prefix if self.public.rewrites else None
        )

    def plan(self, settings: BaseSettings) -> None:
        """Tonight's revisit schedule: a full night when there is no previous run to
        keep records from, when it kept no schedule, when the options that decide
        the set changed since, or when asked (``--full``); else what is due."""
        policy = RevisitPolicy.from_settings(settings, self.started.timestamp())
        if self.paths is None:
            # A worker: the records the coordinator shares say what is due (none on a
            # full night, nor without a previous run).
            self.policy = policy
            return
        if not self.incremental:
            return
        basis = schedule.basis(settings, self.start_url)
        previous, why = self.previous, None
        if policy.full:
            why = "asked for (--full)"
        elif previous is None:
            why = "no previous run"
        elif previous.get_meta("revisit_basis") is None:
            why = "the previous run kept no revisit schedule"
        elif previous.get_meta("revisit_basis") != basis:
            why = "options that change what is crawled or listed changed since the last run"
        self.full_night = why
        self.policy = replace(policy, full=why is not None)
        if self.ledger is not None:
            self.ledger.set_meta("revisit_basis", basis)
            self.ledger.set_meta("full_night", why)
        self.stats.set_value("sitemap/full_night", why)

    def _acquire(self, paths: CrawlPaths) -> bool:
        paths.state.mkdir(parents=True, exist_ok=True)
        path = paths.state / LOCK
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held = _held(fd, paths.state)
                os.close(fd)
                self.locked_out = True
                self.stats.set_value("sitemap/locked", True)
                self.fail(f"{held}; this one did nothing")
                return False
            # The run that held it removes the file before it lets go: if the name
            # is no longer this file, lock the one that is there now.
            try:
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock = fd
        return True

    def _spider_opened(self) -> None:
        if self.locked_out:
            assert self._crawler is not None  # of() sets it when it connects this
            engine = self._crawler.engine
            assert engine is not None
            deferred_from_coro(engine.close_spider_async(reason="state_locked"))

    # -- while it runs -------------------------------------------------------------------

    def fail(self, message: str, unfetched: tuple[str, str] | None = None) -> None:
        """The run cannot do its job (robots.txt or the start URL unreachable, say) and will
        publish nothing; the first reason stands. *unfetched*: the decision and reason of the
        URLs it leaves unfetched (``fetch-error``, say), rather than ``cap-reached``."""
        if self.fatal is None:
            self.fatal = message
            self.unfetched = unfetched
            self.stats.set_value("sitemap/fatal", message)
            logger.error(message)

    def read_robots(self, record: dict[str, Any]) -> None:
        """The start origin's robots.txt as read (origin, token, group, state, text):
        for the summary, and in the ledger's meta for explain. A worker's goes to the
        coordinator with its next report."""
        self.robots = record
        for name in ("token", "group", "state"):
            self.stats.set_value(f"sitemap/robots/{name}", record[name])
        if self.ledger is not None:
            self.ledger.set_meta("robots", record)

    def keep_api_links(self, links: list[str]) -> None:
        """The links the site's REST API listed tonight (crawler.crawl.restapi), kept in
        the ledger for the next night; a worker's go to the coordinator with its next
        report."""
        self.api_links = links
        if self.ledger is not None:
            self.ledger.set_meta(API_LINKS, links)

    # -- the run ends ---------------------------------------------------------------------

    def end(self, good: bool, resumable: bool) -> None:
        """Close the running ledger and file it: ``ledger.sqlite`` when the run did its job
        (*good*), else ``ledger.failed.sqlite``, or as it is to be continued (*resumable*)."""
        self.resumable = resumable
        self._close_files()
        if self.paths is None or resumable:
            return
        running = self.paths.running_ledger
        if running.exists():
            running.replace(self.paths.ledger if good else self.paths.state / LEDGER_FAILED)
            if good:  # a copy of the ledger just replaced (crawler.commands.export)
                (self.paths.state / LEDGER_JSONL).unlink(missing_ok=True)

    def _close_files(self) -> None:
        if self.ledger is not None:
            self.ledger.close()
            self.ledger = None
        if self.previous is not None:
            self.previous.close()
            self.previous = None

    def _engine_stopped(self) -> None:
        # After the scheduler and Scrapy's SpiderState wrote what they keep in JOBDIR.
        self._close_files()
        if self._lock is None:
            return  # locked out: the JOBDIR is the other run's
        if self.job is not None and not self.resumable:
            shutil.rmtree(self.job, ignore_errors=True)
        self._release()

    def abandon(self) -> None:
        """The run was stopped at once (a second Ctrl-C; no signal will come): file the running
        ledger as failed, drop the ``JOBDIR`` (nothing consistent to resume from), unlock."""
        self._close_files()
        if self._lock is not None:
            self.end(good=False, resumable=False)
            self._engine_stopped()

    def _release(self) -> None:
        assert self._lock is not None and self.paths is not None
        # Removed while held, so that no run locks a file that is going away.
        (self.paths.state / LOCK).unlink(missing_ok=True)
        os.close(self._lock)  # releases the lock
        self._lock = None

    @classmethod
    def existing(cls, crawler: Crawler) -> RunState | None:
        """The crawler's run state if one was built (None where :meth:`of` raises)."""
        return _states.get(crawler)
