"""The site spider, distributed: every process fetches and judges, one decides.

:class:`DistributedSiteSpider` is :class:`crawler.spiders.site.SiteSpider` with two
roles (``SITEMAP_REDIS_ROLE``):

* In **every process** (the coordinator included) the callbacks fetch, parse and
  judge a page exactly as the site spider does, but what the page leads to goes
  through the ``_found`` seam into the page's report instead of into ``discover``
  (which needs the crawl-wide seen-set, scope counters and caps); a 304 becomes a
  :class:`~crawler.distributed.messages.Replay` (the previous run's ledger is the
  coordinator's). Each callback yields one
  :class:`~crawler.distributed.messages.PageReport`, which the report pipeline
  sends through Redis.
* The **coordinator** (``sitemap-crawler crawl URL --redis ...``) alone decides. Its
  ``start()`` keeps running for the whole crawl (Scrapy 2.13's long-running start,
  the way to feed a spider from an outside source): it discovers the start URL and
  keeps that request for itself (so robots.txt and an unreachable start URL are
  found here, as in one process), then pops reports from Redis in batches, calls
  ``discover`` for every ``Found`` and ``_replay`` for every ``Replay``, and yields
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
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.asyncio import run_in_thread, sleep

from crawler.distributed.crawl import COORDINATOR, RedisCrawl
from crawler.distributed.messages import Found, PageReport, Replay
from crawler.items import Alias, UrlRecord
from crawler.spiders.site import SiteSpider

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from crawler.distributed.scheduler import RedisScheduler

logger = logging.getLogger(__name__)

# Seconds between two looks for lost processes (coordinator) or for the end of the
# crawl (workers).
SWEEP_INTERVAL = 1.0
# Links a process remembers having reported (about 100 bytes each).
REPORTED_MAX = 200_000


class DistributedSiteSpider(SiteSpider):
    name = "site"

    def _configure(self, crawler: Crawler) -> None:
        super()._configure(crawler)
        s = crawler.settings
        self.redis = RedisCrawl.from_settings(s)
        self.coordinator = self.redis.process == COORDINATOR
        self.poll_interval = s.getfloat("SITEMAP_REDIS_POLL_INTERVAL", 0.05)
        self.report_batch = s.getint("SITEMAP_REDIS_REPORT_BATCH", 200)
        self.workers_seen: set[str] = set()
        # Plain links this process has reported, with the shallowest depth.
        self.reported: dict[str, int] = {}
        # The coordinator's reports on its own pages (see the report pipeline).
        self.own_reports: deque[PageReport] = deque()

    # -- every process: judge, and report instead of deciding ---------------------------

    def _found(
        self,
        raw: str,
        *,
        depth: int,
        referrer: str | None,
        hops: int = 0,
        encoding: str = "utf-8",
        normal: str | None = None,
        key: str | None = None,  # the coordinator keys what it is told
        fp: int | None = None,
    ) -> Iterator[Found]:
        if normal is not None and raw == normal and not hops:
            # A plain link (most are): once this process has reported it from a page
            # as shallow, the coordinator knows it, and reporting it again would only
            # cost both sides time (navigation links repeat on every page). Without
            # this memory the outcome is the same, so it is bounded, not exact.
            known = self.reported.get(normal)
            if known is not None and known <= depth:
                return
            if len(self.reported) >= REPORTED_MAX:
                self.reported.clear()
            self.reported[normal] = depth
        yield Found(raw, depth, referrer, hops, encoding, normal)

    def _replay(self, rec: UrlRecord, response: Response) -> Iterator[Replay]:
        yield Replay(rec, _etag(response))

    async def parse(self, response: Response) -> AsyncIterator[PageReport]:  # type: ignore[override]
        analysis = None
        if self._is_html_page(response):
            analysis = await self.analyser.analyse(response)  # type: ignore[arg-type]
        yield self._report(response.meta, self.judge(response, analysis), fetched=True)

    def failed(self, failure: Failure) -> Iterator[PageReport]:  # type: ignore[override]
        request = failure.request  # type: ignore[attr-defined]
        yield self._report(request.meta, super().failed(failure), fetched=False)

    def _report(self, meta: dict[str, Any], outputs: Iterable[Any], fetched: bool) -> PageReport:
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
        if self.crawler.stats.get_value("sitemap/locked"):
            return  # another run owns the state directory
        scheduler: RedisScheduler = self.crawler.engine.scheduler  # type: ignore[union-attr,assignment]
        if self.coordinator:
            for out in self.discover(self.start_url, depth=0, referrer=None, hops=0):
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
                report = self.own_reports.popleft() if not payload else pickle.loads(payload)
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
            report = await run_in_thread(redis.wait_report, self.poll_interval * 5)
            payloads = [report] if report is not None else []

    def _apply(self, report: PageReport) -> Iterator[UrlRecord | Alias | Request]:
        """Decide about what one page's report found, as the site spider would have
        in the callback."""
        stats = self.crawler.stats
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
                yield from self.discover(
                    event.raw,
                    depth=event.depth,
                    referrer=event.referrer,
                    hops=event.hops,
                    encoding=event.encoding,
                    normal=event.normal,
                )
            elif type(event) is Replay:
                headers = {"ETag": event.etag} if event.etag else None
                response = Response(event.record.url, status=304, headers=headers)
                yield from SiteSpider._replay(self, event.record, response)
            else:
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


def _etag(response: Response) -> str | None:
    value = response.headers.get(b"ETag")
    return value.decode("latin-1") if value is not None else None
