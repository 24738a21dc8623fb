"""One run per state directory at a time.

Two nightly runs on the same state would interleave their ledgers and race to
publish. This extension takes an exclusive, non-blocking ``flock`` on
``STATE/lock`` when the crawler is built, before any pipeline opens a file; the
second run finds it taken, marks itself (``sitemap/locked``, ``sitemap/fatal``) so
the pipelines and the publisher leave every file alone, and closes its spider at
once. The lock is released when the engine stops, after the publisher is done. The
kernel drops it if the process dies, so a crash never leaves a stale lock.

Settings: ``SITEMAP_OUT_DIR``, ``SITEMAP_STATE_DIR``.
Stats: ``sitemap/locked``, ``sitemap/fatal``.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro

from crawler.paths import LOCK, CrawlPaths

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def holder(state: Path) -> str | None:
    """Who holds the lock of the state directory *state*, if anyone: the command
    line asks before it starts, so that a busy state costs one line, not a crawl."""
    path = state / LOCK
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        return f"another run (pid {pid}) is using the state directory {state}"
    finally:
        os.close(fd)  # also releases the lock if we got it
    return None


class StateLock:
    def __init__(self, crawler: Crawler, paths: CrawlPaths) -> None:
        self.crawler = crawler
        self.path = paths.state / LOCK
        paths.state.mkdir(parents=True, exist_ok=True)
        self.fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(self.fd)
            self.fd = None
            message = (
                f"another run (pid {holder}) is using the state directory {paths.state}; "
                "this one did nothing"
            )
            assert crawler.stats is not None
            crawler.stats.set_value("sitemap/locked", True)
            crawler.stats.set_value("sitemap/fatal", message)
            logger.error(message)
            return
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.get("SITEMAP_OUT_DIR"):
            raise NotConfigured("no SITEMAP_OUT_DIR: no state directory to lock")
        ext = cls(crawler, CrawlPaths.from_settings(crawler.settings))
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    @property
    def locked_out(self) -> bool:
        return self.fd is None

    def spider_opened(self, spider: Spider) -> None:
        if self.locked_out:
            assert self.crawler.engine is not None
            deferred_from_coro(self.crawler.engine.close_spider_async(reason="state_locked"))

    def engine_stopped(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None
