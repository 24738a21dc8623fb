"""Downloader middleware that keeps the crawl on the crawled host.

The crawl talks to the crawled host and nothing else (issue #2): every request,
including robots.txt and whatever a redirect middleware builds, must go to the start
URL's site (:func:`crawler.urls.site_of`: its host and port, http or https).
Anything else is refused here, at the first downloader middleware, so no component
can reach another host by accident.

Settings: none; the spider's ``site`` attribute says which site is ours.
Stats: ``sitemap/hostguard/refused``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from crawler.urls import site_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request

logger = logging.getLogger(__name__)


class OffHostRequest(IgnoreRequest):
    """A request to a host other than the crawled one."""


class HostGuardMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        spider = self.crawler.spider
        allowed = getattr(spider, "site", None)
        if allowed is None:  # another spider: not ours to guard
            return None
        if site_of(request.url) != allowed:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("sitemap/hostguard/refused")
            logger.warning("Refused a request to another host: %s", request.url)
            raise OffHostRequest(f"off-host request refused: {request.url}")
        return None
