"""What the processes of a distributed crawl share, for the one site spider.

A distributed crawl swaps into the ``site`` spider, by settings, what scrapy-redis
swaps: the scheduler (:mod:`.scheduler`), where the items go (:mod:`.pipeline`), and
this extension, :class:`RedisSharing`, which stands for the spider's
:class:`~crawler.crawl.spider.Sharing`. What flows where is docs/distributed.md's: here
the coordinator's ``start()`` drains the reports in batches (one :class:`Settled` item
each) and queues again what lost processes held; a worker's ``start()`` watches for the
end and takes a request when its idle engine has room (an idle Scrapy engine asks its
scheduler only every 5 s).

Settings: ``SITEMAP_REDIS_*`` (off without ``SITEMAP_REDIS_URL``).
Stats: ``sitemap/distributed/process``, ``sitemap/distributed/pages_from_workers``,
``sitemap/distributed/workers``, ``sitemap/distributed/pages/<process>`` (reports of
fetched pages received), ``sitemap/distributed/lost``, ``sitemap/distributed/requeued``,
``sitemap/distributed/end``, ``sitemap/distributed/cpu_seconds`` (the coordinator's
CPU while crawling); the coordinator adds what the workers counted of
:data:`SHARED_STATS` (their responses among them) and :data:`SHARED_PREFIXES`.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol, cast

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import sleep
from scrapy.utils.defer import deferred_from_coro

from crawler.core.decisions import LISTED, QUEUED
from crawler.core.items import Alias, Linked, PageRecords, UrlRecord
from crawler.crawl.spider import PROBED, Sharing
from crawler.distributed.crawl import COORDINATOR, DONE_TTL, RedisCrawl, outcomes_of
from crawler.distributed.frontier import Candidate, Settler, SharedFrontier
from crawler.distributed.messages import PageReport
from crawler.distributed.previous import RedisPrevious, records
from crawler.ledger.runstate import RunState

if TYPE_CHECKING:
    from typing import Self

    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler

    from crawler.crawl.frontier import Frontier
    from crawler.crawl.spider import SiteSpider
    from crawler.page.softnotfound import PagePrint


class ClaimingScheduler(Protocol):
    """What this extension uses of :class:`crawler.distributed.scheduler.RedisScheduler`
    (which reaches Redis through it, so is not imported here)."""

    local: deque[Request]
    claiming: bool
    queue: Any  # crawler.distributed.scheduler.ClaimQueue: its encode

    def claim_if_idle(self, engine: ExecutionEngine) -> Request | None: ...
    def stop(self) -> None: ...


logger = logging.getLogger(__name__)

# Seconds between two looks for lost processes (coordinator) or for the end of the
# crawl (workers).
SWEEP_INTERVAL = 1.0
# Seconds between two reads of the reports by the coordinator, when it has read them all.
DRAIN_INTERVAL = 0.1
# Statistics counted where a page is handled that the coordinator's summary shows for
# the whole crawl, each report carrying what its process counted since the last one:
# the responses, so that "pages fetched" counts as one process would, and everything
# of rendering and of the schedule (a render concurrency, set once a process, sums).
SHARED_STATS = (
    "sitemap/ignored/scheme",
    "sitemap/conditional/not_modified",
    "response_received_count",
    "robotstxt/response_count",
)
SHARED_PREFIXES = ("sitemap/render/", "sitemap/schedule/")


def alive(pid: int) -> bool:
    """Whether process *pid* runs (an exited child not yet waited for does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: whether a signal could reach it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


@dataclass(slots=True)
class Settled(PageRecords):
    """Records the coordinator settled from the reports: for its item pipelines."""


class SharedEntries(dict[str, set[date]]):
    """The calendar rule's entries (template -> dates), kept in Redis so that every
    process measures steps from the same entries: one is added where its link was
    found, before that page's report queues the calendar pages it leads to."""

    def __init__(self, redis: RedisCrawl) -> None:
        super().__init__()
        self.redis = redis

    def get(self, template: str, default: Any = None) -> set[date] | None:  # type: ignore[override]
        entries = super().get(template)
        if entries is None:
            entries = self[template] = SharedDates(self.redis, template)
        entries.update(self.redis.calendar_entries(template))
        return entries


class SharedDates(set[date]):
    def __init__(self, redis: RedisCrawl, template: str) -> None:
        super().__init__()
        self.redis, self.template = redis, template

    def add(self, day: date) -> None:
        if day not in self:
            super().add(day)
            self.redis.add_calendar_entry(self.template, day)


class RedisSharing(Sharing):
    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.redis = RedisCrawl.from_settings(s)
        self.coordinator = self.leading = self.redis.process == COORDINATOR
        self.fetching = not (self.coordinator and s.getbool("SITEMAP_REDIS_NO_FETCH"))
        # The workers this process started (crawl --processes), to notice them all gone.
        self.local_workers = [int(pid) for pid in s.getlist("SITEMAP_REDIS_LOCAL_WORKERS")]
        self.poll_interval = s.getfloat("SITEMAP_REDIS_POLL_INTERVAL")
        self.report_batch = s.getint("SITEMAP_REDIS_REPORT_BATCH")
        self.workers_seen: set[str] = set()
        # The coordinator's reports on its own pages (see the report pipeline).
        self.own_reports: deque[PageReport] = deque()
        assert crawler.stats is not None
        self.settler = Settler(crawler.stats)
        self.counted: dict[str, int] = {}
        # The coordinator's "queued" records, by key, until the URL's final record comes.
        self.waiting: dict[str, UrlRecord] = {}
        self.fatal: str | None = None
        self.fatal_sent = False
        self.robots_sent = False
        self.api_links_sent = False
        self.started = False  # the start URLs were sent: the crawl may end
        self.probe_heard = False  # the coordinator read the report that ends the probe
        self.learning = False  # the coordinator learned a parameter since it shared them
        self.learned_read: bytes | None = None  # what a worker last read of them
        self.frontier_: SharedFrontier | None = None
        # A worker's reason to stop the whole crawl, heard by the coordinator.
        self.stopping: str | None = None
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._tell_coordinator_of_stop, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.get("SITEMAP_REDIS_URL"):
            raise NotConfigured("SITEMAP_REDIS_URL is not set")
        return cls(crawler)

    @property
    def run_state(self) -> RunState | None:
        return RunState.existing(self.crawler)

    def _opened(self) -> None:
        self.crawler.stats.set_value("sitemap/distributed/process", self.redis.process)

    def _tell_coordinator_of_stop(self, reason: str) -> None:
        """A worker that stops the crawl (the run failed) tells the coordinator."""
        state = self.run_state
        if self.coordinator or state is None or state.fatal is None or reason == "finished":
            return
        report = PageReport(self.redis.process, None, False, stop=reason)
        report.fatal, report.unfetched = state.fatal, state.unfetched
        self.redis.report(None, pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL))

    # -- the spider's rooms, as a distributed crawl has them -----------------------------

    def previous_run(self, state: RunState) -> Any:
        """The coordinator reads the previous run's ledger, and puts the records every
        process needs into Redis (before the start URLs go); a worker reads those."""
        if not self.coordinator:
            return RedisPrevious(self.redis)
        if state.previous is not None:
            full = state.policy is None or state.policy.full
            count = self.redis.load_previous(records(state.previous, full))
            logger.info("%s records of the previous run put into Redis", count)
        return state.previous

    def make_frontier(self, *args: Any) -> Frontier:
        frontier = SharedFrontier.from_crawler(*args)
        frontier.encode = self._scheduler().queue.encode
        self.frontier_ = frontier
        # Where the crawl entered each date sequence: crawl-wide, in Redis.
        frontier.calendars.entries = SharedEntries(self.redis)
        if self.coordinator:
            # What the crawl learns (the coordinator learns from every page) goes to
            # Redis after each batch of reports, for every process to use.
            learner = frontier.params
            keep = learner.on_learn

            def learned(path: str, name: str, on: bool) -> None:
                if keep is not None:
                    keep(path, name, on)
                self.learning = True

            learner.on_learn = learned
        return frontier

    def _share_learned(self) -> None:
        if self.learning and self.frontier_ is not None:
            self.learning = False
            self.redis.share_learned(self.frontier_.params.summary())

    def _use_learned(self) -> None:
        """A worker takes what the crawl learned (the coordinator saw every page)."""
        raw = self.redis.learned_params()
        if raw is None or raw == self.learned_read or self.frontier_ is None:
            return
        self.learned_read = raw
        learner = self.frontier_.params
        learned: dict[str, set[str]] = {p: set(n) for p, n in learner.inherited.items()}
        for path, names in json.loads(raw).items():
            learned.setdefault(path, set()).update(names)
        learner.learned = learned

    def fail_run(self, state: RunState) -> Callable[[str], None]:
        return state.fail if self.coordinator else self._worker_fail

    def add_to_item(self, records: list[Any]) -> None:
        if self.frontier_ is not None:
            records.extend(self.frontier_.take())

    def tell_leader_probe_is_over(self, spider: SiteSpider, meta: dict[str, Any]) -> Iterator[Any]:
        """The report of the probe's last request: the coordinator seeds when it reads it."""
        yield spider._item({**meta, PROBED: True}, [], fetched=True)

    def keep_not_found_print(self, url: str, found: PagePrint) -> None:
        self.redis.add_print(url, found)

    def not_found_prints(self) -> list[tuple[str, PagePrint]]:
        """Every probe's findings, in Redis before the start URLs were queued."""
        return self.redis.prints()

    def _scheduler(self) -> ClaimingScheduler:
        assert self.crawler.engine is not None
        return cast("ClaimingScheduler", self.crawler.engine.scheduler)  # SCHEDULER is ours

    def _worker_fail(self, message: str) -> None:
        """A worker found the run cannot do its job: the coordinator hears it with the report."""
        if self.fatal is None:
            self.fatal = message
            logger.error("%s (told the coordinator)", message)

    # -- every process: the report of one item --------------------------------------------

    def report_of(self, item: PageRecords) -> PageReport:
        """What this process hands the coordinator for *item* (see the report pipeline)."""
        events: list[Any] = []
        candidates: list[Candidate] = []
        for rec in item.records:
            (candidates if isinstance(rec, Candidate) else events).append(rec)
        meta = item.meta
        report = PageReport(
            self.redis.process, meta.get("sitemap_claim"), item.fetched, events, candidates
        )
        report.probed = bool(meta.get(PROBED))
        if not self.coordinator:
            report.counts = self._counts()
            state = self.run_state
            fatal = self.fatal or (state.fatal if state is not None else None)
            if fatal is not None and not self.fatal_sent:
                report.fatal, self.fatal_sent = fatal, True
                if state is not None and self.fatal is None:  # robots.txt unreachable, say
                    report.unfetched = state.unfetched
            robots = state.robots if state is not None else None
            if robots is not None and not self.robots_sent:
                report.robots, self.robots_sent = robots, True
            links = state.api_links if state is not None else None
            if links is not None and not self.api_links_sent:
                report.api_links, self.api_links_sent = links, True
        return report

    def _counts(self) -> dict[str, int]:
        """What this process counted of SHARED_STATS and SHARED_PREFIXES since its last
        report."""
        stats, counted, counts = self.crawler.stats, self.counted, {}
        names = [*SHARED_STATS, *(n for n in stats.get_stats() if n.startswith(SHARED_PREFIXES))]
        for name in names:
            value = stats.get_value(name, 0)
            if value != counted.get(name, 0):
                counts[name] = value - counted.get(name, 0)
                counted[name] = value
        return counts

    # -- start: the coordinator's writing, a worker's watch -------------------------------

    async def follow_crawl(self, spider: SiteSpider) -> AsyncIterator[Any]:
        """A worker watches; the coordinator drains the reports, counting the CPU it
        spends on the crawl itself (start-up and publishing aside): what sets its
        ceiling in pages per second."""
        scheduler, stats, cpu = self._scheduler(), self.crawler.stats, time.process_time()
        following = self._drain(scheduler, spider) if self.coordinator else self._watch(scheduler)
        try:
            async for out in following:
                yield out
        finally:
            if self.coordinator:
                stats.set_value("sitemap/distributed/cpu_seconds", time.process_time() - cpu)

    async def _drain(self, scheduler: ClaimingScheduler, spider: SiteSpider) -> AsyncIterator[Any]:
        redis, engine, stats = self.redis, self.crawler.engine, self.crawler.stats
        assert engine is not None and stats is not None
        next_sweep = 0.0
        while True:
            payloads = redis.pop_reports(self.report_batch)
            if payloads:
                # One item for the whole batch: Scrapy's per-item machinery (a task,
                # three pipeline calls, a signal) would cost more than the writing.
                # Through the pipelines here, not yielded: Scrapy 2.19 never finishes
                # closing if the time budget runs out while an item from start() is in
                # them (scrapy/scrapy#7029), and this loop runs on while closing.
                records: list[UrlRecord | Alias | Linked] = []
                for payload in payloads:
                    self._apply(payload, records)
                if records:
                    await engine.scraper.itemproc.process_item_async(Settled(records))
                self._share_learned()
                if self.probe_heard:
                    self.probe_heard = False
                    for out in spider.seed_crawl():
                        yield out
            now = time.monotonic()
            if now >= next_sweep:
                next_sweep = now + SWEEP_INTERVAL
                self._nobody_fetches()
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
            # Not before the start URLs went (the soft-404 probe comes first), nor
            # while this process has requests of its own (the probe, the sitemaps); a
            # worker that stopped the crawl leaves the rest queued, unfetched.
            if (
                self.started
                and not payloads
                and self._idle_here(scheduler)
                and (self.stopping is not None or redis.finished())
            ):
                # What is still waiting goes to the ledger in end_crawl(), when the crawl closes.
                if self.stopping is not None:
                    deferred_from_coro(engine.close_spider_async(reason=self.stopping))
                return
            if self.fetching and self.stopping is None:
                request = scheduler.claim_if_idle(engine)
                if request is not None:
                    yield request
            # Nobody waits for the coordinator: the processes queue what their pages
            # found themselves. Reading the reports a batch at a time, every
            # DRAIN_INTERVAL, costs one round trip for many pages.
            await sleep(DRAIN_INTERVAL)

    async def end_crawl(self, reason: str) -> None:
        """The coordinator ends the crawl: no process reports after this; the reports
        not read yet and the URLs queued and never answered (a crawl cut short by its
        time budget, say) go to the ledger, as one process has them; then every key goes."""
        redis, records = self.redis, cast("list[UrlRecord | Alias | Linked]", [])
        redis.server.set(redis.done_key, reason, ex=DONE_TTL, nx=True)
        while payloads := redis.pop_reports(self.report_batch):
            for payload in payloads:
                self._apply(payload, records)
        records.extend(self.waiting.values())
        assert self.crawler.engine is not None
        await self.crawler.engine.scraper.itemproc.process_item_async(Settled(records))
        redis.finish(reason)

    def _nobody_fetches(self) -> None:
        """A coordinator that fetches nothing, whose workers (crawl --processes) have all
        exited with pages left to fetch, would wait for ever: the crawl fails."""
        if self.fetching or not self.local_workers or self.stopping is not None:
            return
        if any(map(alive, self.local_workers)) or self.redis.finished():
            return
        message = (
            "every worker of --processes exited with pages left to fetch, and with "
            "--no-fetch this process fetches none"
        )
        if self.run_state is not None:
            self.run_state.fail(message, ("fetch-error", "no process was left to fetch it"))
        self.stopping = "failed"

    def _idle_here(self, scheduler: ClaimingScheduler) -> bool:
        engine = self.crawler.engine
        assert engine is not None and engine.scraper.slot is not None
        return (
            not scheduler.local and not engine.downloader.active and engine.scraper.slot.is_idle()
        )

    def _apply(self, payload: bytes, records: list[UrlRecord | Alias | Linked]) -> None:
        """Add the records of one report to *records*. *payload*: the outcomes of its
        candidates, then the pickled report (nothing for one of this process's own)."""
        outcomes, body = outcomes_of(payload)
        report: PageReport = self.own_reports.popleft() if not body else pickle.loads(body)
        stats = self.crawler.stats
        if report.fetched:
            stats.inc_value(f"sitemap/distributed/pages/{report.process}")
        if report.process != self.redis.process:
            if report.fetched:
                stats.inc_value("sitemap/distributed/pages_from_workers")
            if report.process not in self.workers_seen:
                self.workers_seen.add(report.process)
                stats.set_value("sitemap/distributed/workers", len(self.workers_seen))
            for name, value in report.counts.items():
                stats.inc_value(name, value)
            if report.fatal is not None and self.run_state is not None:
                self.run_state.fail(report.fatal, report.unfetched)
            if report.robots is not None and self.run_state and self.run_state.robots is None:
                self.run_state.read_robots(report.robots)  # --no-fetch reads none itself
            if report.api_links is not None and self.run_state is not None:
                self.run_state.keep_api_links(report.api_links)
            self.stopping = self.stopping or report.stop
        if report.probed:
            self.probe_heard = True
        settled = list(self.settler.settle(report.candidates, outcomes))
        if report.process != self.redis.process and self.frontier_ is not None:
            # What the workers' pages teach, learned here too, as one process learns
            # (crawler.crawl.params): the URLs a page led to, then the page itself. Into
            # the ledger, for the books' closing; and for every process to use.
            self._learn(report.events, settled)
        waiting = self.waiting
        for rec in (*report.events, *settled) if settled else report.events:
            if type(rec) is UrlRecord and rec.key is not None:
                if rec.decision == QUEUED:
                    # Held until the URL's final record comes, which replaces it
                    # (written now, it would be written twice; bench/README.md).
                    waiting[rec.key] = rec
                    continue
                queued = waiting.pop(rec.key, None)
                if queued is not None:
                    # How the URL was found: the ledger keeps it from the queued record,
                    # which is never written here.
                    rec.found_by = rec.found_by or queued.found_by
                    rec.found_from = rec.found_from or queued.found_from
                if queued is not None and queued.raw_url:
                    records.append(Alias(alias=queued.raw_url, url=queued.url))
            records.append(rec)

    def _learn(self, events: list[Any], settled: list[UrlRecord | Alias]) -> None:
        assert self.frontier_ is not None
        params = self.frontier_.params
        for rec in settled:
            if type(rec) is UrlRecord and "?" in rec.url:
                params.check(rec.url)
                if rec.decision == QUEUED:
                    params.admit(rec.url)
        for rec in events:
            if type(rec) is UrlRecord and rec.decision == LISTED:
                self.frontier_.observe(rec.url, rec.main_hash, rec.bag_hash)

    async def _watch(self, scheduler: ClaimingScheduler) -> AsyncIterator[Any]:
        redis, engine, stats = self.redis, self.crawler.engine, self.crawler.stats
        assert engine is not None and stats is not None
        next_look = 0.0
        ended = None
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
                    break
                self._use_learned()
                if not alive:
                    message = (
                        f"the coordinator of crawl {redis.id} sent no heartbeat for "
                        f"{redis.timeout} s; this worker stops"
                    )
                    RunState.of(self.crawler).fail(message)  # the worker's answer, and the stat
                    break
            request = scheduler.claim_if_idle(engine)
            if request is not None:
                yield request
                continue
            await sleep(self.poll_interval)
        scheduler.stop()
        stats.set_value("sitemap/distributed/end", ended if ended is not None else redis.done())
