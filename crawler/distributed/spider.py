"""The site spider, distributed: every process fetches, judges and discovers; one writes.

:class:`DistributedSiteSpider` is the ``site`` spider's rooms put together for two
roles (``SITEMAP_REDIS_ROLE``):

* In **every fetching process** (the coordinator too, unless ``--no-fetch``) the
  callbacks fetch, parse and judge a page with the same page judge
  (:class:`crawler.judge.PageJudge`) as the site spider, and its leads are a
  :class:`~crawler.distributed.frontier.SharedFrontier`: the page's links are
  resolved, normalised, scoped and trap-checked here, and the URLs new to this
  process go, as candidates, into the page's one
  :class:`~crawler.distributed.messages.PageReport`. The report pipeline sends it
  with a Lua script that claims the candidates in the crawl's seen-set and queues
  the new ones (issue 18). A 304 is replayed here, from the previous run's records
  the coordinator put in Redis (:mod:`crawler.distributed.previous`).
* The **coordinator** (``sitemap-crawler crawl URL --redis ...``) keeps the single
  writer's job. Its ``start()`` keeps running for the whole crawl (Scrapy 2.13's
  long-running start): it puts the previous run's records into Redis, discovers
  the start URL and queues it, then pops reports from Redis in batches, completes
  the candidates' records from their claim codes
  (:class:`~crawler.distributed.frontier.Settler`) and yields each batch's records
  as one :class:`~crawler.items.PageRecords` item, which its item pipelines write
  into the one ledger. Every second it queues again what lost processes held. When
  nothing is queued, in flight or reported, ``start()`` returns; the engine goes
  idle and closes the spider ("finished"), and the publisher publishes as in one
  process. Fetching too, it takes from the queue like any worker.
* A **worker**'s ``start()`` only watches: for the end of the crawl (or the
  coordinator's heartbeat going away), and for work when its engine is idle. An idle
  Scrapy engine asks its scheduler for requests only every 5 s (its heartbeat), so
  when the engine has room the poll takes one request from the shared queue and
  yields it: Scrapy schedules it (it is claimed already, so it stays local) and then
  fills its free slots from the queue itself.

One count of pages: a process counts a page when the report of a fetched page was
sent (``sitemap/distributed/pages``), and the coordinator counts, for each process,
the reports of fetched pages it receives (``sitemap/distributed/pages/<process>``):
the same reports, so the same numbers.

Settings: those of the site spider, plus ``SITEMAP_REDIS_*``.
Stats: ``sitemap/distributed/pages_from_workers``, ``sitemap/distributed/workers``,
``sitemap/distributed/pages/<process>``, ``sitemap/distributed/lost``,
``sitemap/distributed/requeued``, ``sitemap/distributed/end``,
``sitemap/distributed/cpu_seconds`` (the coordinator's CPU from the start URL to the
end of the crawl: the pages' records written, start-up and publishing aside),
``sitemap/distributed/callback_errors``; the coordinator adds the pages the workers
fetched to ``response_received_count``.
"""

from __future__ import annotations

import logging
import pickle
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from scrapy import Request, Spider, signals
from scrapy.http import HtmlResponse, Response
from scrapy.utils.asyncio import sleep

from crawler.decisions import LISTED, QUEUED
from crawler.distributed.crawl import COORDINATOR, RedisCrawl
from crawler.distributed.frontier import Settler, SharedFrontier
from crawler.distributed.messages import PageReport
from crawler.distributed.previous import RedisPrevious, load
from crawler.extensions.runstate import RunState
from crawler.items import Alias, Linked, PageRecords, UrlRecord
from crawler.judge import PageJudge
from crawler.parsepool import PageAnalyser, page_analyser
from crawler.urls import start_url

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from crawler.distributed.scheduler import RedisScheduler

logger = logging.getLogger(__name__)

# Seconds between two looks for lost processes (coordinator) or for the end of the
# crawl (workers).
SWEEP_INTERVAL = 1.0
# Seconds between two reads of the reports by the coordinator, when it has read them all.
DRAIN_INTERVAL = 0.1
# Statistics counted where a page is handled that the coordinator's summary shows for
# the whole crawl: each report carries what its process counted since the last one.
SHARED_STATS = ("sitemap/ignored/scheme", "sitemap/conditional/not_modified")


class DistributedSiteSpider(Spider):
    name = "site"

    def __init__(self, url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_url = start_url(url)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        s = crawler.settings
        spider.redis = RedisCrawl.from_settings(s)
        spider.coordinator = spider.redis.process == COORDINATOR
        spider.fetching = not (spider.coordinator and s.getbool("SITEMAP_REDIS_NO_FETCH"))
        spider.poll_interval = s.getfloat("SITEMAP_REDIS_POLL_INTERVAL")
        spider.report_batch = s.getint("SITEMAP_REDIS_REPORT_BATCH")
        spider.workers_seen = set()
        # The coordinator's reports on its own pages (see the report pipeline).
        spider.own_reports = deque()
        spider.counted = {}
        spider.waiting = {}
        spider.fatal = None
        spider.fatal_sent = False
        crawler.signals.connect(spider._opened, signal=signals.spider_opened)
        return spider

    def _named(self) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.set_value("sitemap/distributed/process", self.redis.process)

    # Set by from_crawler.
    redis: RedisCrawl
    coordinator: bool
    fetching: bool
    poll_interval: float
    report_batch: int
    workers_seen: set[str]
    own_reports: deque[PageReport]
    counted: dict[str, int]
    # The coordinator's "queued" records, by key, until the URL's final record comes.
    waiting: dict[str, UrlRecord]
    fatal: str | None
    fatal_sent: bool

    # The rooms are built when first needed: Scrapy makes the spider before the
    # crawler's stats and extensions (the run state among them) exist.

    @cached_property
    def run_state(self) -> RunState:
        return RunState.of(self.crawler, self.start_url)

    @cached_property
    def previous(self) -> Any:
        """The coordinator reads the previous run's ledger; a worker, the records the
        coordinator put into Redis."""
        if self.coordinator:
            return self.run_state.previous
        return RedisPrevious(self.redis)

    @cached_property
    def frontier(self) -> SharedFrontier:
        """Every process decides about the links of the pages it fetched."""
        frontier = SharedFrontier.from_crawler(
            self.crawler,
            self.start_url,
            public=self.run_state.public,
            previous=self.previous,
            callback=self.parse,
            errback=self.failed,
        )
        frontier.encode = self._scheduler().queue._encode_request
        return frontier

    @cached_property
    def limits(self) -> tuple[int, int]:
        """Most query variants of a path, most pages: for the report script."""
        return self.frontier.limits()

    @cached_property
    def settler(self) -> Settler:
        s = self.crawler.settings
        assert self.crawler.stats is not None
        return Settler(
            self.crawler.stats,
            s.getint("SITEMAP_TRAP_MAX_QUERY_VARIANTS"),
            s.getint("SITEMAP_MAX_DEPTH"),
            s.getint("SITEMAP_MAX_PAGES"),
        )

    @cached_property
    def analyser(self) -> PageAnalyser:
        return page_analyser(self.crawler.settings)

    @cached_property
    def judge(self) -> PageJudge:
        return PageJudge.from_crawler(
            self.crawler,
            self.start_url,
            public=self.run_state.public,
            analyser=self.analyser,
            previous=self.previous,
            leads=self.frontier,
            fail=self.run_state.fail if self.coordinator else self._worker_fail,
        )

    def _scheduler(self) -> RedisScheduler:
        assert self.crawler.engine is not None
        return cast("RedisScheduler", self.crawler.engine.scheduler)  # SCHEDULER is ours

    def _worker_fail(self, message: str) -> None:
        """A worker found the run cannot do its job (the start URL unreachable, say):
        the coordinator, which decides about the run, hears it with the report."""
        if self.fatal is None:
            self.fatal = message
            logger.error("%s (told the coordinator)", message)

    def _opened(self) -> None:
        self._named()
        if self.fetching:
            self.analyser.open(self.crawler.stats)

    # -- every process: judge and discover, then report -----------------------------------

    async def parse(self, response: Response) -> AsyncIterator[PageReport]:
        outputs: Iterable[object] = ()
        try:
            analysis = None
            if isinstance(response, HtmlResponse) and self.judge.is_html_page(response):
                analysis = await self.analyser.analyse(response)
            outputs = self.judge.judge(response, analysis)
        except Exception:
            self._callback_error(response.meta)
        yield self._report(response.meta, outputs, fetched=True)

    def failed(self, failure: Failure) -> Iterator[PageReport]:
        request: Request = failure.request  # type: ignore[attr-defined]  # set by Scrapy
        outputs: Iterable[object] = ()
        try:
            outputs = [self.judge.failed(failure)]
        except Exception:
            self._callback_error(request.meta)
        yield self._report(request.meta, outputs, fetched=False)

    def _callback_error(self, meta: dict[str, Any]) -> None:
        """A page whose handling failed here (the judge and the frontier are built at
        the first page, and can fail there too): logged and counted. Its report still
        goes, or its request would stay in flight and the crawl would never end; its
        URL stays "queued" and is finished as unfetched, as in one process."""
        logger.exception("Spider error processing %s", meta.get("sitemap_url"))
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("sitemap/distributed/callback_errors")

    def _report(self, meta: dict[str, Any], outputs: Iterable[object], fetched: bool) -> PageReport:
        events: list[UrlRecord | Alias] = []
        candidates: list[Any] = []
        try:
            events = [e for e in outputs if isinstance(e, (UrlRecord, Alias))]
            for event in events:
                if type(event) is UrlRecord and event.decision == LISTED:
                    # What this process learns from its pages (crawler.params).
                    self.frontier.observe(event.url, event.main_hash, event.bag_hash)
            candidates = self.frontier.take()
        except Exception:
            self._callback_error(meta)
            events = []
        report = PageReport(
            self.redis.process, meta.get("sitemap_claim"), fetched, events, candidates
        )
        if not self.coordinator:
            report.counts = self._counts()
            fatal = self.fatal or self.run_state.fatal  # robots.txt unreachable, say
            if fatal is not None and not self.fatal_sent:
                report.fatal, self.fatal_sent = fatal, True
        return report

    def _counts(self) -> dict[str, int]:
        """What this process counted of SHARED_STATS since its last report."""
        stats, counted, counts = self.crawler.stats, self.counted, {}
        assert stats is not None
        for name in SHARED_STATS:
            value = stats.get_value(name, 0)
            if value != counted.get(name, 0):
                counts[name] = value - counted.get(name, 0)
                counted[name] = value
        return counts

    # -- start: the coordinator's writing, a worker's watch -------------------------------

    async def start(self) -> AsyncIterator[Any]:
        if self.run_state.locked_out:
            return  # another run owns the state directory
        scheduler = self._scheduler()
        if self.coordinator:
            if not self.fetching:
                scheduler.stop()  # --no-fetch: take nothing from the queue
            self._begin()
            async for out in self._coordinate(scheduler):
                yield out
        else:
            async for out in self._watch(scheduler):
                yield out

    def _begin(self) -> None:
        """Put the previous run where every process reads it, then discover the start
        URL and queue it (its record comes back as a report of the coordinator's)."""
        if self.run_state.previous is not None:
            count = load(self.redis, self.run_state.previous)
            logger.info("%s records of the previous run put into Redis", count)
        records = list(self.frontier.start())
        report = PageReport(self.redis.process, None, False, records, self.frontier.take())
        self.own_reports.append(report)
        self.redis.report(None, b"", [c.args() for c in report.candidates], self.limits)

    async def _coordinate(self, scheduler: RedisScheduler) -> AsyncIterator[Any]:
        stats = self.crawler.stats
        assert stats is not None
        # The CPU this process spends on the crawl itself (start-up and publishing
        # aside): what sets the coordinator's ceiling in pages per second.
        cpu = time.process_time()
        try:
            async for out in self._drain(scheduler):
                yield out
        finally:
            stats.set_value("sitemap/distributed/cpu_seconds", time.process_time() - cpu)

    async def _drain(self, scheduler: RedisScheduler) -> AsyncIterator[Any]:
        redis, engine, stats = self.redis, self.crawler.engine, self.crawler.stats
        assert engine is not None
        next_sweep = 0.0
        while True:
            payloads = redis.pop_reports(self.report_batch)
            if payloads:
                # One item for the whole batch: Scrapy's per-item machinery (a task,
                # three pipeline calls, a signal) would cost more than the writing.
                records: list[UrlRecord | Alias | Linked] = []
                for payload in payloads:
                    self._apply(payload, records)
                if records:
                    yield PageRecords(records)
            now = time.monotonic()
            if now >= next_sweep:
                next_sweep = now + SWEEP_INTERVAL
                lost, moved = redis.requeue_lost()
                if lost:
                    stats.inc_value("sitemap/distributed/lost", lost)
                    stats.inc_value("sitemap/distributed/requeued", moved)
                    logger.warning(
                        "%s worker(s) sent no heartbeat for %s s: %s of their requests "
                        "queued again",
                        lost,
                        redis.timeout,
                        moved,
                    )
            if len(payloads) == self.report_batch:
                continue  # more are waiting
            if not payloads and redis.finished():
                if self.waiting:
                    # URLs queued and never answered (a page whose callback failed):
                    # "queued" in the ledger, finished as unfetched, as in one process.
                    yield PageRecords(list(self.waiting.values()))
                    self.waiting.clear()
                return
            if self.fetching:
                request = scheduler.take(engine)
                if request is not None:
                    yield request
            # Nobody waits for the coordinator: the processes queue what their pages
            # found themselves. Reading the reports a batch at a time, every
            # DRAIN_INTERVAL, costs one round trip for many pages.
            await sleep(DRAIN_INTERVAL)

    def _apply(self, payload: bytes, records: list[UrlRecord | Alias | Linked]) -> None:
        """Add the records of one report (*payload*: the claim codes of its candidates,
        then the pickled report, or nothing for one of this process's own) to
        *records*."""
        n = int(payload[:8])
        codes = payload[8 : 8 + n].decode("ascii")
        body = payload[8 + n :]
        report: PageReport = self.own_reports.popleft() if not body else pickle.loads(body)
        stats = self.crawler.stats
        assert stats is not None
        if report.fetched:
            stats.inc_value(f"sitemap/distributed/pages/{report.process}")
        if report.process != self.redis.process:
            if report.fetched:
                # Pages fetched by the workers count as pages fetched by the crawl.
                stats.inc_value("response_received_count")
                stats.inc_value("sitemap/distributed/pages_from_workers")
            if report.process not in self.workers_seen:
                self.workers_seen.add(report.process)
                stats.set_value("sitemap/distributed/workers", len(self.workers_seen))
            for name, value in report.counts.items():
                stats.inc_value(name, value)
            if report.fatal is not None:
                self.run_state.fail(report.fatal)
        waiting = self.waiting
        for rec in (
            report.events
            if not report.candidates
            else (
                *report.events,
                *self.settler.settle(report.candidates, codes),
            )
        ):
            if type(rec) is UrlRecord and rec.key is not None:
                if rec.decision == QUEUED:
                    # Held until the URL's final record comes, which replaces it
                    # (written now, it would be written twice; bench/README.md).
                    waiting[rec.key] = rec
                    continue
                queued = waiting.pop(rec.key, None)
                if queued is not None and queued.raw_url:
                    records.append(Alias(alias=queued.raw_url, url=queued.url))
            records.append(rec)

    async def _watch(self, scheduler: RedisScheduler) -> AsyncIterator[Request]:
        redis, engine, stats = self.redis, self.crawler.engine, self.crawler.stats
        assert engine is not None
        next_look = 0.0
        while scheduler.claiming:
            now = time.monotonic()
            if now >= next_look:
                next_look = now + SWEEP_INTERVAL
                # The heartbeat first: the coordinator ends the crawl and then its
                # heartbeat goes, so a crawl ending between the two looks is seen
                # ended, not taken for a coordinator gone silent.
                alive = redis.coordinator_alive()
                ended = redis.done()
                if ended is not None:
                    stats.set_value("sitemap/distributed/end", ended)
                    break
                if not alive:
                    message = (
                        f"the coordinator of crawl {redis.id} sent no heartbeat for "
                        f"{redis.timeout} s; this worker stops"
                    )
                    logger.error(message)
                    stats.set_value("sitemap/fatal", message)
                    break
            request = scheduler.take(engine)
            if request is not None:
                yield request
                continue
            await sleep(self.poll_interval)
        scheduler.stop()
        if stats.get_value("sitemap/distributed/end") is None:
            stats.set_value("sitemap/distributed/end", redis.done())
