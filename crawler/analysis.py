"""What the spider needs from an HTML page's body, worked out in worker processes.

Parsing a page and reading it (links, robots directives, canonicals, lastmod
metadata, the content hashes behind lastmod) is most of a crawl's CPU on pages of
real size: on python3-doc (95 KB pages) 3.9 ms of the 8 ms a page costs. One
process has one core; so the body goes to a pool of worker processes and the
spider gets back a small :class:`PageAnalysis`, while Scrapy's engine, the
decisions and the ledger carry on in the crawl's process. (Threads do not help:
libxml2 parses without the GIL, but the rest of the work holds it.)

The work is one function, :func:`analyse_response` (which also resolves the
page's links: :class:`~crawler.links.LinkResolver`, with a cache in each
process), run in a worker or, with no
pool (``SITEMAP_PARSE_PROCESSES = 0``, a reactor that is not asyncio's, or a
pool that broke), in the crawl's process: the result is the same either way, and
the tests check that it is.

The pool is one per process and shut down when the process exits, so that the
crawls of one process (a test session, say) share its start-up cost. The command
line forks it before the crawl starts (:func:`fork_workers`), while the process is
only its imports: a forked worker is up in milliseconds, where a spawned one
imports Scrapy again (0.3-0.7 s, with the crawl's first pages parsed in the crawl's
process meanwhile: 14% of a python3-doc crawl's wall time in one A/B). The price:
on a site of small pages the worker idles, at about 43 MB RSS (35 MB PSS).
Elsewhere (a crawl started inside a running reactor) the pool is spawned when a
crawl first has a page to send to it (never, on a site of small pages); until its
workers are up, pages are parsed in the crawl's process. Workers ignore SIGINT:
Ctrl-C belongs to the crawl's process, which finishes what it has in flight and
then stops. A worker whose crawl process is gone exits within half a second.

Settings: ``SITEMAP_PARSE_PROCESSES``, ``SITEMAP_PARSE_LOCAL_BELOW`` (bodies
smaller than this are parsed in the crawl's process: a small page costs less to
parse than to send).
Stats: ``sitemap/parse/remote`` (pages analysed in a worker),
``sitemap/parse/local``, ``sitemap/parse/broken_pool``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse
from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

from crawler.content import main_content_hash
from crawler.links import LinkResolver, PageFacts, Resolved, page_facts, parse_html

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# The crawl's process spends about as much CPU on a python3-doc page (fetching,
# judging, recording) as a worker spends parsing it, so it is the slower side as
# soon as there is one worker: more than two would only wait (an estimate; this
# 2-core machine cannot measure it).
MAX_AUTO_PROCESSES = 2
# Bodies smaller than this are analysed in the crawl's process: the round trip to a
# worker (pickling, the pipe, the executor's threads) costs more than parsing them.
# rust-doc (median page 5 KB, a tenth over 17 KB), whole crawls: everything in the
# worker 96 s, below 8 KiB here 82 s, below 16 KiB 73-75 s, below 64 KiB 90 s;
# python3-doc (95 KB pages) the same either way; the synthetic site (1.2 KB pages)
# no longer pays for the worker.
DEFAULT_LOCAL_BELOW = 16 * 1024


@dataclass(slots=True)
class PageAnalysis:
    facts: PageFacts
    # facts.hrefs resolved (LinkResolver.resolve_all): absolute, normalised, keyed
    # and fingerprinted, None for a link that is not http(s); each once, in page
    # order (every None kept), and facts.hrefs left empty. Joining and normalising
    # was the largest part of the crawl process's own work on a page.
    links: list[Resolved | None]
    encoding: str  # the response's encoding (declared, or detected from the body)
    content_hash: str  # of the whole body
    main_hash: str | None  # of the main content (crawler.content)


def analyse_response(
    response: HtmlResponse,
    agents: Iterable[str],
    volatile: Iterable[str],
    resolver: LinkResolver,
) -> PageAnalysis:
    root = parse_html(response)
    facts = page_facts(response, agents, root)
    encoding = response.encoding
    links = _distinct(resolver.resolve_all(facts.base, facts.hrefs, encoding))
    # Resolved, the raw hrefs are spent: not sent back (half the result's size).
    facts.hrefs = []
    return PageAnalysis(
        facts=facts,
        links=links,
        encoding=encoding,
        content_hash=hashlib.blake2b(response.body, digest_size=16).hexdigest(),
        # Last: it strips scripts and styles from the tree.
        main_hash=main_content_hash(root, volatile),
    )


def _distinct(links: list[Resolved | None]) -> list[Resolved | None]:
    """*links* without repeats, in order, but every None kept (each is a link the
    crawl counts as not http(s)): the spider judges a link once per page, and the
    result crosses the process boundary smaller (a third of python3-doc's links
    are distinct on their page)."""
    seen: set[Resolved] = set()
    out: list[Resolved | None] = []
    for link in links:
        if link is None:
            out.append(link)
        elif link not in seen:
            seen.add(link)
            out.append(link)
    return out


# A worker's resolvers, one per crawl configuration (their caches are what counts).
_resolvers: dict[tuple[bool, tuple[str, ...]], LinkResolver] = {}


def analyse(
    url: str,
    status: int,
    headers: dict[bytes, list[bytes]],
    body: bytes,
    agents: tuple[str, ...],
    volatile: tuple[str, ...],
    strip: tuple[bool, tuple[str, ...]],
) -> PageAnalysis:
    """:func:`analyse_response` of the response made of these parts (in a worker);
    *strip*: the crawl's (``SITEMAP_STRIP_PARAMS``, ``SITEMAP_STRIP_EXTRA``)."""
    resolver = _resolvers.get(strip)
    if resolver is None:
        resolver = _resolvers[strip] = LinkResolver(strip_params=strip[0], extra_strip=strip[1])
    response = HtmlResponse(url=url, status=status, headers=headers, body=body)
    return analyse_response(response, agents, volatile, resolver)


def default_processes() -> int:
    """Workers for the cores the crawl's process leaves free (none on one core)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(0, min(MAX_AUTO_PROCESSES, cores - 1))


def processes_from(settings: BaseSettings) -> int:
    """The crawl's worker count: ``SITEMAP_PARSE_PROCESSES``, or by default
    :func:`default_processes`."""
    if settings.get("SITEMAP_PARSE_PROCESSES") is None:
        return default_processes()
    return settings.getint("SITEMAP_PARSE_PROCESSES")


def fork_workers(processes: int, timeout: float = 10) -> bool:
    """Start the shared pool of *processes* workers now, by fork, if this process
    can still fork safely: no reactor yet, no other thread (so no lock held), and
    nothing open that a child must not share (the caller's word). The command line
    calls it before the crawl; returns whether the pool was forked."""
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
    _, starting = _shared_pool(processes, "fork")
    wait(starting, timeout=timeout)  # milliseconds: then every page can go to a worker
    return True


def _start_worker(parent: int) -> None:
    threading.Thread(target=_exit_with, args=(parent,), name="parent-watch", daemon=True).start()


def _exit_with(parent: int) -> None:
    """End this worker when the crawl's process is gone (killed with SIGKILL, say).
    Its queue would never tell it: the worker holds a writing end of that pipe too."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


_pools: dict[int, ProcessPoolExecutor] = {}
# Per pool: a first job per worker, done once the worker is up.
_started: dict[int, list[Future[Any]]] = {}


def _shared_pool(
    processes: int, method: str = "spawn"
) -> tuple[ProcessPoolExecutor, list[Future[Any]]]:
    pool = _pools.get(processes)
    if pool is None:
        # spawn, unless fork_workers knows better: a crawl's process has a running
        # reactor, open sockets, SQLite connections and threads that a forked child
        # must not inherit.
        pool = ProcessPoolExecutor(
            processes,
            mp_context=multiprocessing.get_context(method),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )
        _pools[processes] = pool
        # Start the workers now, while robots.txt is fetched; with SIGINT ignored,
        # which they inherit from the start (an initializer would leave a window in
        # which Ctrl-C at a terminal gives each a KeyboardInterrupt traceback).
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            # Each spawns one worker (they are spawned lazily otherwise).
            _started[id(pool)] = [pool.submit(int) for _ in range(processes)]
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
    return pool, _started[id(pool)]


def _drop_pool(pool: ProcessPoolExecutor) -> None:
    for n, known in list(_pools.items()):
        if known is pool:
            del _pools[n]
    _started.pop(id(pool), None)
    pool.shutdown(wait=False, cancel_futures=True)


class PageAnalyser:
    """Analyses HTML responses in the shared worker pool (or in this process)."""

    def __init__(
        self,
        processes: int,
        agents: Iterable[str],
        volatile: Iterable[str],
        resolver: LinkResolver | None = None,
        local_below: int = DEFAULT_LOCAL_BELOW,
    ) -> None:
        self.processes = processes
        self.local_below = local_below
        self.agents = tuple(agents)
        self.volatile = tuple(volatile)
        # In this process; a worker keeps one of its own with the same settings.
        self.resolver = resolver or LinkResolver()
        self.strip = (self.resolver.strip_params, self.resolver.extra_strip)
        self.stats: StatsCollector | None = None
        self.pool: ProcessPoolExecutor | None = None
        self.enabled = False
        self.starting: list[Future[Any]] = []

    def open(self, stats: StatsCollector | None = None) -> None:
        """When the crawl starts, with its reactor and stats."""
        self.stats = stats
        # The result is awaited as an asyncio future: no pool on another reactor.
        self.enabled = self.processes > 0 and is_asyncio_reactor_installed()

    def local(self, response: HtmlResponse) -> PageAnalysis:
        if self.stats is not None:
            self.stats.inc_value("sitemap/parse/local")
        return analyse_response(response, self.agents, self.volatile, self.resolver)

    async def analyse(self, response: HtmlResponse) -> PageAnalysis:
        if not self.enabled or len(response.body) < self.local_below:
            return self.local(response)
        pool = self.pool
        if pool is None:
            # Started (or joined) with the first page worth sending: a site of small
            # pages never pays for a worker's memory (60-75 MB).
            pool, self.starting = _shared_pool(self.processes)
            self.pool = pool
        if self.starting:
            if not all(f.done() for f in self.starting):
                # A worker takes about half a second to start; the first pages (the
                # start page, which every other page waits for) are parsed here.
                return self.local(response)
            self.starting = []
        try:
            future = pool.submit(
                analyse,
                response.url,
                response.status,
                dict(response.headers),
                response.body,
                self.agents,
                self.volatile,
                self.strip,
            )
            result: PageAnalysis = await asyncio.wrap_future(future)
        except BrokenProcessPool:
            # A worker died (killed, or out of memory on a huge page): the rest of
            # the crawl parses here, and this page is parsed again.
            if self.pool is pool:
                self.pool, self.enabled = None, False
                _drop_pool(pool)
                logger.warning("A page-parsing worker process died; parsing in this process")
                if self.stats is not None:
                    self.stats.inc_value("sitemap/parse/broken_pool")
            return self.local(response)
        except RuntimeError:  # shut down: the interpreter is exiting
            return self.local(response)
        if self.stats is not None:
            self.stats.inc_value("sitemap/parse/remote")
        return result
