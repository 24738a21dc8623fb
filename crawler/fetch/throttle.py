"""AutoThrottle that honours robots.txt ``Crawl-delay`` and backs off on 429/503.

Scrapy's AutoThrottle adapts the delay between requests to the server's latency but
may lower it below what the site asked for, and does not slow down when the server
says it is overloaded. This subclass adds two floors, ``Crawl-delay`` and a back-off
of at least ``Retry-After``, which neither Scrapy's randomised delay nor AutoThrottle's
adaptation lowers, also with ``AUTOTHROTTLE_ENABLED = False`` (docs/crawling.md, "Safe
defaults").

Settings: ``AUTOTHROTTLE_*``, ``ROBOTSTXT_USER_AGENT``, ``SITEMAP_MAX_CRAWL_DELAY``.
Stats: ``sitemap/throttle/crawl_delay``, ``sitemap/throttle/backoff``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.extensions.throttle import AutoThrottle

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

from crawler.core.agent import token_of

logger = logging.getLogger(__name__)

BACKOFF_STATUSES = frozenset({429, 503})


@dataclass(slots=True)
class _Wait:
    """A server's wait on a slot: no request before *until* (``time.monotonic``, the
    clock of Scrapy's slots); *jitter* is the slot's own, put back after."""

    until: float
    jitter: float


class PoliteThrottle(AutoThrottle):
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.adaptive = settings.getbool("AUTOTHROTTLE_ENABLED")
        if self.adaptive:
            super().__init__(crawler)
        else:
            self.crawler = crawler
            self.debug = False
            crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
            crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)
        self.max_crawl_delay = settings.getfloat("SITEMAP_MAX_CRAWL_DELAY")
        self.token = token_of(settings.get("USER_AGENT", ""), settings.get("ROBOTSTXT_USER_AGENT"))
        self.floors: dict[str, float] = {}
        self.waits: dict[str, _Wait] = {}
        crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)

    def _spider_opened(self, spider: Spider) -> None:
        if self.adaptive:
            super()._spider_opened(spider)
        else:
            self.mindelay = self._min_delay()
            self.maxdelay = self._max_delay()

    def _robots_parsed(self, robotparser: Any, request: Request) -> None:
        delay = robotparser.crawl_delay(self.token)
        if not delay or delay <= 0:
            return
        delay = min(float(delay), self.max_crawl_delay)
        downloader = self.crawler.engine.downloader
        key = downloader.get_slot_key(request)
        self.floors[key] = delay
        # New slots for this key (after Scrapy's idle-slot clean-up) start right too.
        downloader.per_slot_settings[key] = {"delay": delay, "concurrency": 1, "jitter": 0}
        if (slot := downloader.slots.get(key)) is not None:
            self._apply_floor(key, slot)
        self.crawler.stats.set_value("sitemap/throttle/crawl_delay", delay)
        logger.info("Crawl-delay of %s s for %s (robots.txt)", delay, key)

    def _apply_floor(self, key: str, slot: Slot) -> None:
        floor = self.floors.get(key)
        if floor is not None:
            slot.delay = max(slot.delay, floor)
            slot.concurrency = 1
            slot.jitter = 0
        wait = self.waits.get(key)
        if wait is not None:
            if slot.lastseen < wait.until and time.monotonic() < wait.until:
                # No request has left since the server's answer, and its wait is
                # not over: it holds.
                slot.delay = max(slot.delay, wait.until - slot.lastseen)
                slot.jitter = 0
            else:
                del self.waits[key]
                if floor is None:
                    slot.jitter = wait.jitter

    def _adjust_delay(self, slot: Slot, latency: float, response: Response) -> None:
        # Scrapy's AutoThrottle never lowers the delay on a non-200 response (error
        # pages are fast and would speed it up). A 304 is a healthy answer, and a
        # nightly run is mostly 304s: treat it as a 200, or the delay stays at its
        # start value all night.
        if response.status == 304:
            response = response.replace(status=200)
        super()._adjust_delay(slot, latency, response)

    def _response_downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        if self.adaptive:
            super()._response_downloaded(response, request, spider)
        key, slot = self._get_slot(request, spider)
        if key is None or slot is None:
            return
        if response.status in BACKOFF_STATUSES:
            retry_after = _retry_after(response)
            slot.delay = min(self.maxdelay, max(slot.delay * 2, retry_after or 0.0, 1.0))
            # Counted from this answer, not from when the request left; and no
            # random part below it.
            now = time.monotonic()
            previous = self.waits.get(key)
            jitter = previous.jitter if previous is not None else slot.jitter
            self.waits[key] = _Wait(now + slot.delay, jitter)
            slot.lastseen = max(slot.lastseen, now)
            self.crawler.stats.inc_value("sitemap/throttle/backoff")
            logger.info("HTTP %s from %s: delay raised to %.1f s", response.status, key, slot.delay)
        self._apply_floor(key, slot)


def _retry_after(response: Response) -> float | None:
    """Seconds to wait that ``Retry-After`` asks for: a number of seconds, or an HTTP
    date (counted from the response's ``Date``, or from now without one)."""
    value = response.headers.get(b"Retry-After")
    if not value:
        return None
    text = value.decode("latin-1").strip()
    try:
        seconds = float(text)
    except ValueError:
        until = _http_date(text)
        if until is None:
            return None  # unreadable: the doubling alone applies
        date = response.headers.get(b"Date")
        sent = _http_date(date.decode("latin-1")) if date else None
        seconds = until - (sent if sent is not None else time.time())
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def _http_date(text: str) -> float | None:
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
