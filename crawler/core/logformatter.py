"""Scrapy's log messages, without building the two per-page ones nobody will see.

Scrapy logs "Crawled (200) <GET ...>" for every response and "Scraped from ..." for
every item at DEBUG. Below the crawl's LOG_LEVEL the handler drops them, but only
after the formatter has built their arguments and ``logging`` a record for each:
about 2% of the crawl's process on a 20,000-page site. Scrapy skips a message whose
formatter method returns None, so this formatter does that when LOG_LEVEL is above
DEBUG; at DEBUG every message is Scrapy's own.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter, LogFormatterResult

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure


class QuietLogFormatter(LogFormatter):
    def __init__(self, debug: bool = True) -> None:
        self.debug = debug

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> QuietLogFormatter:
        level = crawler.settings.get("LOG_LEVEL", "DEBUG")
        if isinstance(level, str):
            level = logging.getLevelName(level.upper())
        # An unknown name comes back as a string: keep every message.
        return cls(debug=not isinstance(level, int) or level <= logging.DEBUG)

    # Scrapy's engine and scraper skip a message whose method returns None (as the
    # docs of LogFormatter say), but its annotations promise a LogFormatterResult.
    def crawled(  # type: ignore[override]
        self, request: Request, response: Response, spider: Spider
    ) -> LogFormatterResult | None:
        return super().crawled(request, response, spider) if self.debug else None

    def scraped(  # type: ignore[override]  # None: not logged (see crawled)
        self, item: Any, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult | None:
        return super().scraped(item, response, spider) if self.debug else None
