"""An item pipeline for tests: the first batch of settled reports of a distributed
crawl's coordinator that lists a page closes the crawl as its time budget would, and
stays in the pipelines until Scrapy's scraper has begun closing."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_from_coro

from crawler.core.decisions import LISTED
from crawler.distributed.sharing import Settled

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class CloseOnSettled:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.closed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        engine = self.crawler.engine
        if self.closed or not isinstance(item, Settled) or engine is None:
            return item
        if not any(getattr(rec, "decision", None) == LISTED for rec in item.records):
            return item
        self.closed = True
        slot = engine.scraper.slot
        deferred_from_coro(engine.close_spider_async(reason="closespider_timeout"))
        while slot is not None and slot.closing is None:
            await asyncio.sleep(0.01)
        return item
