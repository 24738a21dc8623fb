"""The site spider, distributed: every process fetches and judges, one decides.

:class:`DistributedSiteSpider` is the ``site`` spider's rooms put together for two
roles (``SITEMAP_REDIS_ROLE``):

* In **every process** (the coordinator included) the callbacks fetch, parse and
  judge a page with the same page judge (:class:`crawler.judge.PageJudge`) as the
  site spider, and yield one :class:`~crawler.distributed.messages.PageReport`,
  which the report pipeline sends through Redis. In a worker the judge's leads are
  a :class:`Reporter`: what the page leads to goes into the report as
  :class:`~crawler.distributed.messages.Found` events instead of into a frontier
  (which needs the crawl-wide seen-set, scope counters and caps), and a 304 becomes
  a :class:`~crawler.distributed.messages.Replay` (the previous run's ledger is the
  coordinator's). On the coordinator the leads are its frontier itself, so the
  report of its own page holds the decisions and requests already.
* The **coordinator** (``sitemap-crawler crawl URL --redis ...``) alone decides. Its
  ``start()`` keeps running for the whole crawl (Scrapy 2.13's long-running start,
  the way to feed a spider from an outside source): it discovers the start URL and
  keeps that request for itself (so robots.txt and an unreachable start URL are
  found here, as in one process), then pops reports from Redis in batches, calls
  the frontier's ``discover`` for every ``Found`` and the judge's ``replay`` (with
  the frontier as its leads) for every ``Replay``, and yields
  what they return. Scrapy sends the records and aliases through the item pipelines
  (ledger) and the requests through the scheduler into the shared queue. Every
  second it queues again what lost processes held. When nothing is queued, in
  flight or reported, ``start()`` returns; the engine goes idle and closes the
  spider ("finished"), and the publisher publishes as in one process.
* A **worker**'s ``start()`` only watches: for the end of the crawl (or the
  coordinator's heartbeat going away), and for work when its engine is idle. An idle
  Scrapy engine asks its scheduler for requests only every 5 s (its heartbeat), so
  when the engine has room the poll takes one request from the shared queue and
  yields it: Scrapy schedules it (it is claimed already, so it stays local) and then
  fills its free slots from the queue itself.

Settings: those of the site spider, plus ``SITEMAP_REDIS_*``.
Stats: ``sitemap/distributed/pages_from_workers``, ``sitemap/distributed/workers``,
``sitemap/distributed/lost``, ``sitemap/distributed/requeued``,
``sitemap/distributed/end``, ``sitemap/distributed/callback_errors``; the
coordinator adds the pages the workers fetched to ``response_received_count``.
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
from scrapy.utils.asyncio import run_in_thread, sleep

from crawler import decisions as d
from crawler.distributed.crawl import COORDINATOR, RedisCrawl
from crawler.distributed.messages import Found, PageReport, Replay
from crawler.extensions.runstate import RunState
from crawler.frontier import Frontier
from crawler.items import FOUND_LINK, UrlRecord
from crawler.judge import Leads, PageJudge
from crawler.parsepool import PageAnalyser, page_analyser
from crawler.urls import start_url

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from crawler.distributed.scheduler import RedisScheduler
    from crawler.links import Resolved

logger = logging.getLogger(__name__)

# Seconds between two looks for lost processes (coordinator) or for the end of the
# crawl (workers).
SWEEP_INTERVAL = 1.0
# Links a process remembers having reported (about 100 bytes each).
REPORTED_MAX = 200_000


class Reporter:
    """The page judge's leads in a distributed crawl: each becomes a
    :class:`~crawler.distributed.messages.Found` in the page's report, for the
    coordinator's frontier to decide about."""

    def __init__(self) -> None:
        # Plain links this process has reported, with the shallowest depth.
        self.reported: dict[str, int] = {}

    def link(self, found: Resolved, depth: int, referrer: str) -> Iterable[Found]:
        return self.target(found.raw, depth=depth, referrer=referrer, normal=found.url)

    def target(
        self,
        raw: str,
        *,
        depth: int,
        referrer: str | None,
        hops: int = 0,
        encoding: str = "utf-8",
        normal: str | None = None,
        found_by: str = FOUND_LINK,
    ) -> Iterable[Found]:
        if normal is not None and raw == normal and not hops:
            # A plain link (most are): once this process has reported it from a page
            # as shallow, the coordinator knows it, and reporting it again would only
            # cost both sides time (navigation links repeat on every page). Without
            # this memory the outcome is the same, so it is bounded, not exact.
            known = self.reported.get(normal)
            if known is not None and known <= depth:
                return ()
            if len(self.reported) >= REPORTED_MAX:
                self.reported.clear()
            self.reported[normal] = depth
        return (Found(raw, depth, referrer, hops, encoding, normal, found_by),)


def _replay_there(rec: UrlRecord, etag: str | None) -> Iterable[Replay]:
    """A 304 is replayed by the coordinator, which has the previous run's ledger."""
    return (Replay(rec, etag),)


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
        spider.poll_interval = s.getfloat("SITEMAP_REDIS_POLL_INTERVAL")
        spider.report_batch = s.getint("SITEMAP_REDIS_REPORT_BATCH")
        spider.workers_seen = set()
        # The coordinator's reports on its own pages (see the report pipeline).
        spider.own_reports = deque()
        crawler.signals.connect(spider._opened, signal=signals.spider_opened)
        return spider

    # Set by from_crawler.
    redis: RedisCrawl
    coordinator: bool
    poll_interval: float
    report_batch: int
    workers_seen: set[str]
    own_reports: deque[PageReport]

    # The rooms are built when first needed: Scrapy makes the spider before the
    # crawler's stats and extensions (the run state among them) exist.

    @cached_property
    def run_state(self) -> RunState:
        return RunState.of(self.crawler, self.start_url)

    @cached_property
    def frontier(self) -> Frontier | None:
        """Only the coordinator decides where the crawl goes."""
        if not self.coordinator:
            return None
        state = self.run_state
        return Frontier.from_crawler(
            self.crawler,
            self.start_url,
            public=state.public,
            previous=state.previous,
            callback=self.parse,
            errback=self.failed,
        )

    @cached_property
    def analyser(self) -> PageAnalyser:
        return page_analyser(self.crawler.settings)

    @cached_property
    def judge(self) -> PageJudge:
        """The coordinator's own pages lead straight into its frontier; a worker's
        lead into their reports, and its 304s go to the coordinator to replay."""
        state = self.run_state
        leads: Leads = self.frontier or Reporter()
        return PageJudge.from_crawler(
            self.crawler,
            self.start_url,
            public=state.public,
            analyser=self.analyser,
            previous=state.previous,
            leads=leads,
            fail=state.fail,
            not_modified=None if self.frontier else _replay_there,
        )

    def _opened(self) -> None:
        self.analyser.open(self.crawler.stats)

    # -- every process: judge, and report instead of deciding ---------------------------

    async def parse(self, response: Response) -> AsyncIterator[PageReport]:
        analysis = None
        if isinstance(response, HtmlResponse) and self.judge.is_html_page(response):
            analysis = await self.analyser.analyse(response)
        yield self._report(response.meta, self.judge.judge(response, analysis), fetched=True)

    def failed(self, failure: Failure) -> Iterator[PageReport]:
        request: Request = failure.request  # type: ignore[attr-defined]  # set by Scrapy
        yield self._report(request.meta, [self.judge.failed(failure)], fetched=False)

    def _report(self, meta: dict[str, Any], outputs: Iterable[object], fetched: bool) -> PageReport:
        try:
            events = list(outputs)
        except Exception:
            # The request must still leave flight, or the crawl would never end; its
            # URL stays "queued" and is finished as unfetched, as in one process.
            logger.exception("Spider error processing %s", meta.get("sitemap_url"))
            self.crawler.stats.inc_value("sitemap/distributed/callback_errors")
            events = []
        return PageReport(self.redis.process, meta.get("sitemap_claim"), fetched, events)

    # -- start: the coordinator's decisions, a worker's watch -----------------------------

    async def start(self) -> AsyncIterator[Any]:
        if self.run_state.locked_out:
            return  # another run owns the state directory
        assert self.crawler.engine is not None
        scheduler = cast("RedisScheduler", self.crawler.engine.scheduler)  # SCHEDULER is ours
        if self.frontier is not None:
            for out in self.frontier.start():
                if isinstance(out, Request):
                    scheduler.keep(out)
                yield out
            async for out in self._coordinate(scheduler):
                yield out
        else:
            async for out in self._watch(scheduler):
                yield out

    async def _coordinate(self, scheduler: RedisScheduler) -> AsyncIterator[Any]:
        redis, engine, stats = self.redis, self.crawler.engine, self.crawler.stats
        assert engine is not None
        next_sweep = 0.0
        payloads: list[bytes] = []
        while True:
            for payload in payloads:
                report: PageReport = (
                    self.own_reports.popleft() if not payload else pickle.loads(payload)
                )
                for out in self._apply(report):
                    yield out
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
            payloads = redis.pop_reports(self.report_batch)
            if payloads:
                continue
            if redis.finished():
                return
            request = scheduler.take(engine)
            if request is not None:
                yield request
            # Wait for the next report in a thread (BLPOP): the reactor goes on, and
            # a report is read the moment it arrives; a chain of pages one link apart
            # is crawled at the speed of the site, not of a polling interval.
            waited = await run_in_thread(redis.wait_report, self.poll_interval * 5)
            payloads = [waited] if waited is not None else []

    def _apply(self, report: PageReport) -> Iterator[object]:
        """Decide about what one page's report found, as the site spider would have
        in the callback."""
        stats, frontier = self.crawler.stats, self.frontier
        assert frontier is not None
        if report.process != self.redis.process:
            if report.fetched:
                # Pages fetched by the workers count as pages fetched by the crawl.
                stats.inc_value("response_received_count")
                stats.inc_value("sitemap/distributed/pages_from_workers")
            if report.process not in self.workers_seen:
                self.workers_seen.add(report.process)
                stats.set_value("sitemap/distributed/workers", len(self.workers_seen))
        for event in report.events:
            if type(event) is Found:
                yield from frontier.discover(
                    event.raw,
                    depth=event.depth,
                    referrer=event.referrer,
                    hops=event.hops,
                    encoding=event.encoding,
                    normal=event.normal,
                    found_by=event.found_by,
                )
            elif type(event) is Replay:
                yield from self.judge.replay(event.record, event.etag, leads=frontier)
            else:
                if isinstance(event, UrlRecord) and event.decision == d.LISTED:
                    frontier.observe(event.url, event.main_hash, event.bag_hash)  # crawler.params
                yield event

    async def _watch(self, scheduler: RedisScheduler) -> AsyncIterator[Request]:
        redis, engine, stats = self.redis, self.crawler.engine, self.crawler.stats
        assert engine is not None
        next_look = 0.0
        while scheduler.claiming:
            now = time.monotonic()
            if now >= next_look:
                next_look = now + SWEEP_INTERVAL
                ended = redis.done()
                if ended is not None:
                    stats.set_value("sitemap/distributed/end", ended)
                    break
                if not redis.coordinator_alive():
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
