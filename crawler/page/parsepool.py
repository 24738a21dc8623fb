"""The page-parsing pool: worker processes that run :func:`crawler.page.analysis.analyse`
while the crawl's process fetches, judges and records, and send back a small
:class:`~crawler.page.analysis.PageAnalysis`. Parsing a page costs about as much CPU as
everything else the crawl does with it, and threads do not help (only libxml2 runs
without the GIL): bench/README.md, "The page-parsing workers", measures every rule here.

One pool per process, shared by its crawls: forked before the crawl
(:func:`fork_workers`), else spawned when a crawl first has a page to send. Each
worker's socket is read by the reactor's asyncio loop, with no thread. With no pool (none
configured, another reactor, a broken pool), workers behind, or a small body, the page is
parsed here, with the same result. Workers ignore SIGINT and exit when their socket ends.

Settings: ``SITEMAP_PARSE_PROCESSES``, ``SITEMAP_PARSE_LOCAL_BELOW``,
``SITEMAP_PARSE_BACKLOG``. Stats: ``sitemap/parse/remote``, ``sitemap/parse/local``,
``sitemap/parse/backlog``, ``sitemap/parse/broken_pool``."""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import pickle
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from scrapy.http import HtmlResponse
from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

from crawler.core.agent import robots_agents
from crawler.core.cores import usable_cores
from crawler.core.urls import Stripping
from crawler.page.analysis import NO_RICH, PageAnalysis, Rich, analyse, analyse_response
from crawler.page.links import LinkResolver

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# How the pool's workers start: forked by fork_workers, else spawned.
StartMethod = Literal["fork", "spawn"]

# The crawl's process spends about as much CPU on a page as a worker parsing it: more
# than two workers would only wait (an estimate; a 2-core machine cannot measure it).
MAX_AUTO_PROCESSES = 2
# A page this large always goes to a worker, backlog or not: its tree (hundreds of
# megabytes for a multi-megabyte page) would stall this process and swell its memory.
BACKLOG_MAX_BYTES = 1024 * 1024


def default_processes() -> int:
    """Workers for the cores the crawl's process leaves free (none on one core)."""
    return max(0, min(MAX_AUTO_PROCESSES, usable_cores() - 1))


def processes_from(settings: BaseSettings) -> int:
    """The crawl's worker count: ``SITEMAP_PARSE_PROCESSES``, or by default
    :func:`default_processes`."""
    if settings.get("SITEMAP_PARSE_PROCESSES") is None:
        return default_processes()
    return settings.getint("SITEMAP_PARSE_PROCESSES")


def fork_workers(processes: int, timeout: float = 10) -> bool:
    """Fork the shared pool of *processes* workers now if this process still can safely:
    no reactor, no other thread (so no lock held), nothing open a child must not share
    (the caller's word: the command line, before the crawl). Whether it was forked."""
    if (
        processes <= 0
        or processes in _pools
        or sys.platform == "darwin"  # fork is unsafe under macOS's system libraries
        or "fork" not in multiprocessing.get_all_start_methods()
        or threading.active_count() > 1
        or is_reactor_installed()
    ):
        return False
    # A child flushes the standard streams when it ends: nothing may be pending.
    sys.stdout.flush()
    sys.stderr.flush()
    _shared_pool(processes, "fork").wait_ready(timeout)  # milliseconds
    return True


# -- the workers --------------------------------------------------------------------
#
# Requests (the page's parts) and answers are pickles framed by their length; a worker
# answers in order, so answers match requests by order alone. The crawl's end is an
# asyncio transport of the reactor's loop, not concurrent.futures' pool, whose two
# threads made the main thread wait for the GIL (bench/README.md).

_FRAME = struct.Struct("!Q")  # the length of the pickle that follows
_READY = _FRAME.pack(0)  # the first thing a worker sends, once it is up


class WorkerGone(Exception):
    """A worker's socket closed: the worker died (killed, or out of memory)."""


def _serve(sock: socket.socket, others: list[socket.socket]) -> None:
    """A worker's life: answer requests until the crawl's process closes its end
    (or dies: the kernel closes it then), and exit."""
    for other in others:
        other.close()  # forked: the crawl's ends, which must close with the crawl
    reader = sock.makefile("rb")
    sock.sendall(_READY)
    while True:
        head = reader.read(_FRAME.size)
        if len(head) < _FRAME.size:
            return
        (size,) = _FRAME.unpack(head)
        data = reader.read(size)
        if len(data) < size:
            return
        try:
            answer = pickle.dumps((True, analyse(*pickle.loads(data))), protocol=5)
        except Exception as exc:  # the crawl's process raises it where it awaits
            try:
                answer = pickle.dumps((False, exc), protocol=5)
            except Exception:
                answer = pickle.dumps((False, RuntimeError(repr(exc))), protocol=5)
        sock.sendall(_FRAME.pack(len(answer)) + answer)


class _Channel(asyncio.Protocol):
    """The crawl's end of one worker's socket, in the reactor's event loop."""

    def __init__(self, up: list[bool], index: int) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiting: deque[asyncio.Future[bytes]] = deque()
        # The pool's record of which workers are up: their first message is read
        # here or by _Pool.wait_ready, whichever comes first.
        self.up, self.index = up, index
        self.lost = False

    @property
    def ready(self) -> bool:
        return self.up[self.index]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a socket's, read and written
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        start = 0
        while len(buffer) - start >= _FRAME.size:
            (size,) = _FRAME.unpack_from(buffer, start)
            end = start + _FRAME.size + size
            if len(buffer) < end:
                break
            if not self.ready:
                self.up[self.index] = True
            else:
                future = self.waiting.popleft()
                if not future.done():
                    future.set_result(bytes(buffer[start + _FRAME.size : end]))
            start = end
        del buffer[:start]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(WorkerGone())

    def ask(self, payload: bytes) -> asyncio.Future[bytes]:
        assert self.transport is not None
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        # One write, so one send: a second would cost a system call a page.
        self.transport.write(_FRAME.pack(len(payload)) + payload)
        return future


class _Pool:
    """Worker processes, each with its socket; shared by the crawls of a process."""

    def __init__(self, processes: int, method: StartMethod) -> None:
        # Spelled out for the type checker: get_context(str) is a BaseContext, with
        # no Process.
        context = (
            multiprocessing.get_context("fork")
            if method == "fork"
            else multiprocessing.get_context("spawn")
        )
        self.socks: list[socket.socket] = []
        self.up: list[bool] = []  # whether each worker's first message was read
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.channels: list[_Channel] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        # Workers ignore SIGINT from the start (an initializer would leave a window in
        # which Ctrl-C at a terminal gives each a KeyboardInterrupt traceback): Ctrl-C
        # belongs to the crawl's process, which then closes their sockets.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            for _ in range(processes):
                ours, theirs = socket.socketpair()
                # A forked worker closes the crawl's ends it inherits (its own and the
                # earlier workers'), so that each socket ends when the crawl does.
                # A spawned one inherits only its own end.
                others = [*self.socks, ours] if method == "fork" else []
                # daemon: ended with this process, which must not wait for them.
                proc = context.Process(target=_serve, args=(theirs, others), daemon=True)
                proc.start()
                theirs.close()
                self.socks.append(ours)
                self.up.append(False)
                self.procs.append(proc)
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)

    def wait_ready(self, timeout: float) -> bool:
        """Block until every worker is up (at most *timeout* seconds; 0: look only),
        reading its first message; return whether all are. Until a worker is up
        nothing else is sent or read on its socket, so this may read it even once
        the loop watches it."""
        deadline = time.monotonic() + timeout
        while pending := [i for i, up in enumerate(self.up) if not up]:
            left = max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self.socks[i] for i in pending], [], [], left)
            if not readable:
                return False
            for i in pending:
                if self.socks[i] in readable:
                    # The first message, or the end of a worker that died at once
                    # (which its channel then finds too: the end stays readable).
                    self.socks[i].recv(_FRAME.size, socket.MSG_WAITALL)
                    self.up[i] = True
        return True

    async def connect(self) -> list[_Channel]:
        """The channels to the workers, made in the running loop the first time."""
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = loop
            self.wait_ready(0)  # those up already take pages from the first one on
            for i, sock in enumerate(self.socks):
                _, channel = await loop.connect_accepted_socket(
                    functools.partial(_Channel, self.up, i), sock
                )
                self.channels.append(channel)
        if self.loop is not loop:
            raise WorkerGone("the pool belongs to another event loop")
        return self.channels

    def close(self) -> None:
        for channel in self.channels:
            if channel.transport is not None:
                channel.transport.abort()
        for sock in self.socks:
            sock.close()  # a worker reads the end of its socket, and exits
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()


_pools: dict[int, _Pool] = {}


def _shared_pool(processes: int, method: StartMethod = "spawn") -> _Pool:
    """The process's pool of *processes* workers, started now if there is none: spawned
    unless :func:`fork_workers` knows better (a running crawl's process must not fork)."""
    pool = _pools.get(processes)
    if pool is None:
        pool = _pools[processes] = _Pool(processes, method)
    return pool


def _drop_pool(pool: _Pool) -> None:
    for n, known in list(_pools.items()):
        if known is pool:
            del _pools[n]
    pool.close()


def page_analyser(settings: BaseSettings) -> PageAnalyser:
    """The analyser of a crawl with these settings."""
    strip = Stripping.from_settings(settings)
    return PageAnalyser(
        processes_from(settings),
        robots_agents(settings["USER_AGENT"], settings.get("ROBOTSTXT_USER_AGENT")),
        settings.getlist("SITEMAP_VOLATILE_SELECTORS"),
        LinkResolver(strip_params=strip.params, extra_strip=strip.extra),
        settings.getint("SITEMAP_PARSE_LOCAL_BELOW"),
        settings.getint("SITEMAP_PARSE_BACKLOG"),
        Rich.from_settings(settings),
    )


@dataclass(eq=False)
class PageAnalyser:
    """Analyses HTML responses in the shared worker pool (or in this process). *processes*:
    workers (0: none); *resolver*: this process's (a worker keeps its own); *local_below*,
    *backlog*: ``SITEMAP_PARSE_LOCAL_BELOW``, ``SITEMAP_PARSE_BACKLOG``."""

    processes: int
    agents: Iterable[str]
    volatile: Iterable[str]
    resolver: LinkResolver = field(default_factory=LinkResolver)
    local_below: int = 0
    backlog: int = 0
    rich: Rich = NO_RICH
    stats: StatsCollector | None = field(init=False, default=None)
    pool: _Pool | None = field(init=False, default=None)
    channels: list[_Channel] = field(init=False, default_factory=list)
    enabled: bool = field(init=False, default=False)
    # Soft-404 fingerprints wanted (crawler.page.softnotfound): set by the spider when
    # a probe left a print ("exact": only a probe answered 404 did).
    prints: bool | str = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.agents, self.volatile = tuple(self.agents), tuple(self.volatile)
        self.strip = (self.resolver.strip_params, self.resolver.extra_strip)

    def open(self, stats: StatsCollector | None = None) -> None:
        """When the crawl starts, with its reactor and stats."""
        self.stats = stats
        # Answers are read by the asyncio loop: no pool on another reactor.
        self.enabled = self.processes > 0 and is_asyncio_reactor_installed()

    def local(self, response: HtmlResponse) -> PageAnalysis:
        if self.stats is not None:
            self.stats.inc_value("sitemap/parse/local")
        return analyse_response(
            response, self.agents, self.volatile, self.resolver, self.rich, self.prints
        )

    async def analyse(self, response: HtmlResponse) -> PageAnalysis:
        if not self.enabled or len(response.body) < self.local_below:
            return self.local(response)
        pool = self.pool
        try:
            if pool is None:
                # Started (or joined) with the first page worth sending: a site of
                # small pages never pays for a worker's memory.
                pool = self.pool = _shared_pool(self.processes)
                self.channels = await pool.connect()
            # A spawned worker takes a while to start (it imports Scrapy); the
            # first pages (the start page, which every other page waits for) are
            # parsed here meanwhile.
            ready = [c for c in self.channels if c.ready and not c.lost]
            if not ready:
                if any(c.lost for c in self.channels):
                    raise WorkerGone()
                return self.local(response)
            channel = min(ready, key=lambda c: len(c.waiting))
            if (
                self.backlog
                and len(channel.waiting) >= self.backlog
                and len(response.body) < BACKLOG_MAX_BYTES
            ):
                # The workers are behind (a run of large pages): this process would
                # only wait for them, so it parses this page itself.
                if self.stats is not None:
                    self.stats.inc_value("sitemap/parse/backlog")
                return self.local(response)
            page = (response.url, response.status, dict(response.headers), response.body)
            crawl = (self.agents, self.volatile, self.strip, self.rich, self.prints)
            payload = pickle.dumps((*page, *crawl), protocol=5)
            ok, result = pickle.loads(await channel.ask(payload))
        except WorkerGone:
            # A worker died (killed, or out of memory on a huge page): the rest of
            # the crawl parses here, and this page is parsed again.
            if self.pool is pool and pool is not None:
                self.pool, self.channels, self.enabled = None, [], False
                _drop_pool(pool)
                logger.warning("A page-parsing worker process died; parsing in this process")
                if self.stats is not None:
                    self.stats.inc_value("sitemap/parse/broken_pool")
            return self.local(response)
        if not ok:
            raise result
        assert isinstance(result, PageAnalysis)  # what _serve answers with ok
        if self.stats is not None:
            self.stats.inc_value("sitemap/parse/remote")
        return result
