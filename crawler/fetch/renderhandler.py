"""The crawl's HTTP(S) download handler: Scrapy's aiohttp client, plus a headless
Chromium for the pages that must be rendered (docs/rendering.md).

A request without ``meta["playwright"]`` is downloaded by Scrapy's
``AiohttpDownloadHandler``: aiohttp reads HTTP in C (llhttp), where Twisted's client
splits lines and headers in Python. On the same crawl of 10,000 javadoc pages it took
7% less CPU and 8% less time (bench/README.md). Scrapy calls it experimental; it is
Scrapy's own handler when no Twisted reactor runs, and the tests here hold it to what
the crawl needs (TLS, size caps, stopped downloads, timeouts, redirects, long header
lines, the URL as made). Made on the first request (``lazy``), in the running event
loop that aiohttp's connector needs. The first request with ``meta["playwright"]``
starts :class:`crawler.fetch.browser.Browser`, so a crawl that renders nothing never
imports Playwright nor starts its driver.

Settings: those of :mod:`crawler.fetch.browser`, the TLS policy's
(:mod:`crawler.fetch.tls`) and the resolver's (:mod:`crawler.fetch.resolver`). Stats:
``sitemap/tls/verified``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, ClassVar

import aiohttp
from scrapy.core.downloader.handlers._aiohttp import AiohttpDownloadHandler, _ClientResponse
from scrapy.core.downloader.handlers._base_streaming import BaseStreamingDownloadHandler

from crawler.fetch.resolver import TestHostsResolver
from crawler.fetch.tls import TlsPolicy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

    from crawler.fetch.browser import Browser

#: The longest status or header line read, in bytes.
MAX_HEADER_LINE = 64 * 1024


class RenderDownloadHandler(AiohttpDownloadHandler):
    lazy = True
    # Chosen and tested here (see above): Scrapy's warning would be noise to a user.
    experimental: ClassVar[bool] = False

    def __init__(self, crawler: Crawler) -> None:
        # Scrapy's streaming handler, with a session of our own: aiohttp's, as Scrapy
        # makes it, but resolving SITEMAP_TEST_HOSTS (crawler.fetch.resolver).
        BaseStreamingDownloadHandler.__init__(self, crawler)
        connector = aiohttp.TCPConnector(
            local_addr=self._bind_address,
            limit=self._pool_size_total,
            limit_per_host=self._pool_size_per_host,
            resolver=TestHostsResolver.from_settings(crawler.settings),
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),  # cookies are the middleware's
            auto_decompress=False,  # and decompression too (size caps)
            response_class=_ClientResponse,
            skip_auto_headers=("Accept", "Accept-Encoding", "Content-Type", "User-Agent"),
            # A header line as long as Twisted's client took and more (aiohttp's own
            # limit, 8 KiB, refuses the long Link and CSP headers some sites send).
            max_line_size=MAX_HEADER_LINE,
            max_field_size=MAX_HEADER_LINE,
        )
        # The crawl's TLS policy (crawler.fetch.tls): Scrapy's own context checks nothing.
        policy = TlsPolicy.from_settings(crawler.settings)
        self._ssl_context = policy.ssl_context()
        if crawler.stats is not None:
            crawler.stats.set_value("sitemap/tls/verified", policy.verify)
        self.crawler = crawler
        self._browser: Browser | None = None
        self._starting = asyncio.Lock()

    async def download_request(self, request: Request) -> Response:
        if not request.meta.get("playwright"):
            # The URL as the crawl made it (Scrapy's Request has made it safe): yarl
            # would otherwise write it again, and ask for another address.
            request.meta.setdefault("verbatim_url", True)
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
