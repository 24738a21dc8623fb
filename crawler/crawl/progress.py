"""Progress on stderr while crawling.

On a terminal, a live line rewritten every second (pages fetched, queued, listed,
rate). Elsewhere (cron, systemd, CI) a plain line every
``SITEMAP_PROGRESS_INTERVAL`` seconds, so a mailed log stays short. Off with
``SITEMAP_PROGRESS_INTERVAL = 0``. Everything it shows comes from the stats:
the pages fetched (:func:`crawler.core.summary.pages_fetched`), Scrapy's scheduler counts (queued is
enqueued less dequeued) and ``sitemap/decision/listed``.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from crawler.core.summary import pages_fetched

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector


class Progress:
    """Writes the progress line to *stream*: live on a terminal, else every
    *interval* seconds."""

    def __init__(self, stats: StatsCollector, interval: float, stream: TextIO) -> None:
        self.stats = stats
        self.stream = stream
        self.live = stream.isatty()
        self.interval = 1.0 if self.live else interval
        self.started = time.monotonic()
        self.task = create_looping_call(self.show)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = crawler.settings.getfloat("SITEMAP_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured("SITEMAP_PROGRESS_INTERVAL is 0")
        assert crawler.stats is not None
        ext = cls(crawler.stats, interval, sys.stderr)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self) -> None:
        self.started = time.monotonic()
        self.task.start(self.interval, now=False)

    def line(self) -> str:
        stats = self.stats.get_stats()
        fetched = pages_fetched(stats)
        queued = max(0, stats.get("scheduler/enqueued", 0) - stats.get("scheduler/dequeued", 0))
        listed = stats.get("sitemap/decision/listed", 0)
        rate = fetched / max(time.monotonic() - self.started, 1e-6)
        return f"fetched {fetched}, queued {queued}, listed {listed}, {rate:.1f} pages/s"

    def show(self) -> None:
        if self.live:
            self.stream.write("\r\033[K" + self.line())
        else:
            self.stream.write("progress: " + self.line() + "\n")
        self.stream.flush()

    def spider_closed(self) -> None:
        if self.task.running:
            self.task.stop()
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()
