"""The crawl's HTTP(S) download handler: Scrapy's own, plus a headless Chromium for
the pages that must be rendered (docs/rendering.md).

A request without ``meta["playwright"]`` is downloaded by Scrapy's
``HTTP11DownloadHandler``; the first request with it starts
:class:`crawler.fetch.browser.Browser`, so a crawl that renders nothing never imports
Playwright nor starts its driver.

Settings: those of :mod:`crawler.fetch.browser`, and the TLS policy's
(:mod:`crawler.fetch.tls`). Stats: ``sitemap/tls/verified``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

from crawler.fetch.tls import TlsPolicy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

    from crawler.fetch.browser import Browser


class RenderDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # The crawl's TLS policy (crawler.fetch.tls): Scrapy's own policy checks
        # nothing, and its setting to change it is deprecated.
        policy = TlsPolicy.from_settings(crawler.settings)
        self._contextFactory = policy.twisted(self._contextFactory)
        if crawler.stats is not None:
            crawler.stats.set_value("sitemap/tls/verified", policy.verify)
        self.crawler = crawler
        self._browser: Browser | None = None
        self._starting = asyncio.Lock()

    async def download_request(self, request: Request) -> Response:
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        browser = self._browser or await self._start()
        return await browser.download_request(request)

    async def _start(self) -> Browser:
        async with self._starting:
            if self._browser is None:
                from crawler.fetch.browser import Browser

                browser = Browser(self.crawler)
                await browser.start()
                self._browser = browser
        return self._browser

    async def close(self) -> None:
        if self._browser is not None:
            await self._browser.close()
        await super().close()
