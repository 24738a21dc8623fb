"""The distributed crawl's scheduler: scrapy-redis's, with claims.

:class:`RedisScheduler` is scrapy-redis's ``Scheduler`` with its queue and seen-set
under the crawl's keys (:mod:`crawler.distributed.crawl`), and three changes:

* **Claims.** Taking a request off the shared queue (:class:`ClaimQueue`) records it
  in this process's in-flight hash, in one Lua script; the page's report ends the
  claim. A request that has a claim already (a retry, a render) stays in a local
  queue and is fetched here.
* **Breadth-first everywhere.** The queue's score is the request's link depth, so
  every process takes the shallowest pages first (as ``DEPTH_PRIORITY`` in one
  process); requests queued again after a process was lost score -1 and go first.
* **Heartbeats** every quarter of ``SITEMAP_REDIS_WORKER_TIMEOUT``; closing gives
  back what the process holds (a worker stopped with Ctrl-C loses nothing) or, on
  the coordinator, ends the crawl.

:class:`KeyDupeFilter` is scrapy-redis's ``RFPDupeFilter`` keyed on the crawl's own
dedup key, so a URL is queued at most once crawl-wide.

Meta keys: ``sitemap_claim`` (the in-flight field of a claimed request).
Stats: ``scheduler/enqueued/redis``, ``scheduler/dequeued/redis``,
``scheduler/enqueued/local``.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any, cast

from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.request import request_from_dict
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from crawler.core.seen import fingerprint
from crawler.core.urls import url_key
from crawler.distributed.crawl import COORDINATOR, RedisCrawl, claim_id
from crawler.distributed.sharing import RedisSharing

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.core.engine import ExecutionEngine
    from scrapy.crawler import Crawler
    from scrapy.utils.request import RequestFingerprinterProtocol
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

CLAIM = "sitemap_claim"
#: The meta key of a request fetched by the process that made it (crawler.crawl.restapi).
LOCAL = "sitemap_local"


def redis_sharing(crawler: Crawler) -> RedisSharing:
    """The distributed crawl's extension: the crawl's Redis handle and settings."""
    sharing = crawler.get_extension(RedisSharing)
    if sharing is None:
        raise ValueError(
            "RedisScheduler runs a distributed crawl only "
            "(sitemap-crawler crawl --redis URL, sitemap-crawler worker --redis URL)"
        )
    return sharing


class ClaimQueue(PriorityQueue):
    """scrapy-redis's priority queue, scored by link depth; popping claims. A request
    is stored as Scrapy's own dict of it (``Request.to_dict``, ``request_from_dict``),
    through the queue's serializer (``SCHEDULER_SERIALIZER``)."""

    def __init__(self, server: Any, spider: Spider, key: str, serializer: Any = None) -> None:
        super().__init__(server, spider, key, serializer)
        self.crawl: RedisCrawl = redis_sharing(spider.crawler).redis

    def push(self, request: Request, fingerprint: str | None = None) -> bool:
        """Queue *request* unless *fingerprint* is in the seen-set (scrapy-redis's
        ``RFPDupeFilter.request_seen`` then ``push``, in one round trip)."""
        depth = request.meta.get("sitemap_depth", 0)
        return self.crawl.enqueue(fingerprint, self.encode(request), depth)

    def pop(self, timeout: int = 0) -> Request | None:
        member = self.crawl.claim()
        if member is None:
            return None
        request = self.decode(member)
        request.meta[CLAIM] = claim_id(member)
        return request

    def encode(self, request: Request) -> bytes:
        """*request* as the queue stores it."""
        return cast(bytes, self.serializer.dumps(request.to_dict(spider=self.spider)))

    def decode(self, member: bytes) -> Request:
        """The request the queue stored as *member*."""
        return request_from_dict(self.serializer.loads(member), spider=self.spider)


class KeyDupeFilter(RFPDupeFilter):
    """scrapy-redis's Redis seen-set, keyed on the crawl's dedup key."""

    # Set by from_spider (scrapy-redis's RFPDupeFilter has no fingerprinter).
    fingerprinter: RequestFingerprinterProtocol

    @classmethod
    def from_spider(cls, spider: Spider) -> Self:
        crawl = redis_sharing(spider.crawler).redis
        dupefilter = cls(
            crawl.server, key=crawl.seen, debug=spider.settings.getbool("DUPEFILTER_DEBUG")
        )
        dupefilter.fingerprinter = spider.crawler.request_fingerprinter
        return dupefilter

    def request_fingerprint(self, request: Request) -> str:
        url = request.meta.get("sitemap_url")
        if url is None:  # not a page request of the site spider: Scrapy's own
            return self.fingerprinter.fingerprint(request).hex()
        # Not scrapy-redis's own fingerprint (it drifted from Scrapy's): the key the
        # coordinator's seen-set holds (crawler/core/seen.py).
        return format(fingerprint(url_key(url)), "016x")


class RedisScheduler(Scheduler):
    def __init__(self, crawl: RedisCrawl, **kwargs: Any) -> None:
        super().__init__(server=crawl.server, persist=True, **kwargs)
        self.crawl = crawl
        self.local: deque[Request] = deque()
        self.claiming = True
        self.heartbeat_task: Any = None
        self.crawl_stats: Any = None
        self.poll_interval = 0.05
        self._empty_until = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        sharing = redis_sharing(crawler)
        crawl = sharing.redis
        serializer = crawler.settings.get("SCHEDULER_SERIALIZER")
        scheduler = cls(
            crawl,
            queue_key=crawl.queue,
            queue_cls=f"{ClaimQueue.__module__}.{ClaimQueue.__qualname__}",
            dupefilter_key=crawl.seen,
            dupefilter_cls=f"{KeyDupeFilter.__module__}.{KeyDupeFilter.__qualname__}",
            serializer=importlib.import_module(serializer) if serializer else None,
        )
        # Not scrapy-redis's stats attribute: it passes Scrapy a deprecated argument.
        scheduler.crawl_stats = crawler.stats
        scheduler.poll_interval = sharing.poll_interval
        if not sharing.fetching:
            scheduler.stop()  # --no-fetch: take nothing from the queue, from the start
        return scheduler

    def open(self, spider: Spider) -> None:
        super().open(spider)
        self.beat()
        self.heartbeat_task = create_looping_call(self.beat)
        self.heartbeat_task.start(max(self.crawl.timeout / 4, 0.1), now=False)

    def beat(self) -> None:
        from redis.exceptions import RedisError

        try:
            ended = self.crawl.heartbeat()
        except RedisError as e:
            logger.error("heartbeat to Redis failed: %s", e)
            return
        if ended is not None:
            self.stop()

    def stop(self) -> None:
        """Take nothing more from the shared queue (the crawl is over)."""
        self.claiming = False

    def close(self, reason: str) -> Deferred[None] | None:
        if self.heartbeat_task is not None and self.heartbeat_task.running:
            self.heartbeat_task.stop()
        super().close(reason)
        if self.crawl.process == COORDINATOR:
            sharing: RedisSharing = self.spider.crawler.get_extension(RedisSharing)
            return deferred_from_coro(sharing.end_crawl(reason))
        if moved := self.crawl.release():
            logger.info("gave %s unfinished requests back to the queue", moved)
        return None

    def enqueue_request(self, request: Request) -> bool:
        if CLAIM in request.meta or request.meta.get(LOCAL):
            # Claimed by this process already (a retry, a render, a request the
            # spider's poll took), or one whose answer this process alone can read (a
            # page of the REST API's lists): fetched here, never queued twice.
            self.local.append(request)
            self.crawl_stats.inc_value("scheduler/enqueued/local")
            return True
        # Crawl-wide, even a request past Scrapy's filter (the soft-404 probe, the
        # sitemaps read for seeds, which several processes' robots.txt may declare)
        # is queued once.
        fingerprint = self.df.request_fingerprint(request)
        if request.meta.get("sitemap_recheck"):
            # A page kept tonight that a change signal names: asked after all.
            fingerprint = ""
        if not self.queue.push(request, fingerprint):
            self.df.log(request, self.spider)
            return False
        self.crawl_stats.inc_value("scheduler/enqueued/redis")
        self._empty_until = 0.0
        return True

    def next_request(self) -> Request | None:
        if self.local:
            return self.local.popleft()
        return self._claim() if self.claiming else None

    def _claim(self) -> Request | None:
        # Scrapy asks for the next request after every response and every request
        # scheduled; once the queue was found empty, ask Redis again only after the
        # poll interval (or after this process queued something).
        if self._empty_until and time.monotonic() < self._empty_until:
            return None
        request: Request | None = super().next_request()
        if request is None:
            self._empty_until = time.monotonic() + self.poll_interval
        else:
            self._empty_until = 0.0
            self.crawl_stats.inc_value("scheduler/dequeued/redis")
        return request

    def claim_if_idle(self, engine: ExecutionEngine) -> Request | None:
        """A request from the shared queue when the engine has room for one and
        nothing of its own waiting (the spider's poll: see its ``start``)."""
        if self.local or not self.claiming or engine.needs_backout():
            return None
        return self._claim()

    def has_pending_requests(self) -> bool:
        return bool(self.local) or (self.claiming and self.crawl.queued() > 0)

    def __len__(self) -> int:
        return len(self.local) + (self.crawl.queued() if self.claiming else 0)
