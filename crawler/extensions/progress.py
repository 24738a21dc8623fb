"""Progress on stderr while crawling.

On a terminal, a live line rewritten every second (pages fetched, queued, listed,
rate). Elsewhere (cron, systemd, CI) a plain line every
``SITEMAP_PROGRESS_INTERVAL`` seconds, so a mailed log stays short. Off with
``SITEMAP_PROGRESS_INTERVAL = 0``.

Settings: ``SITEMAP_PROGRESS_INTERVAL``.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler


class Progress:
    def __init__(self, crawler: Crawler, interval: float, stream: TextIO) -> None:
        self.crawler = crawler
        self.stream = stream
        self.live = stream.isatty()
        self.interval = 1.0 if self.live else interval
        self.started = time.monotonic()
        self.task = create_looping_call(self.show)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = crawler.settings.getfloat("SITEMAP_PROGRESS_INTERVAL", 60.0)
        if interval <= 0:
            raise NotConfigured("SITEMAP_PROGRESS_INTERVAL is 0")
        ext = cls(crawler, interval, sys.stderr)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Spider) -> None:
        self.started = time.monotonic()
        self.task.start(self.interval, now=False)

    def line(self) -> str:
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        fetched = stats.get("response_received_count", 0)
        queued = max(0, getattr(self.crawler.spider, "scheduled", 0) - fetched)
        listed = stats.get("sitemap/decision/listed", 0)
        rate = fetched / max(time.monotonic() - self.started, 1e-6)
        return f"fetched {fetched}, queued {queued}, listed {listed}, {rate:.1f} pages/s"

    def show(self) -> None:
        if self.live:
            self.stream.write("\r\033[K" + self.line())
        else:
            self.stream.write("progress: " + self.line() + "\n")
        self.stream.flush()

    def spider_closed(self, spider: Spider) -> None:
        if self.task.running:
            self.task.stop()
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()
