"""The headless Chromium that renders pages: scrapy-playwright's download handler,
made polite and bounded for a crawl (issue #16).

Imported only when a page is first rendered (:mod:`crawler.renderhandler`). It
drives the system's Chromium (``SITEMAP_RENDER_BROWSER``, else ``chromium`` on
PATH: :func:`crawler.rendering.find_browser`) through Playwright's
``executable_path``, with :data:`crawler.rendering.LAUNCH_ARGS`; no browser is
downloaded. Within it:

- **What goes out.** Every request the page makes passes a route handler
  (scrapy-playwright's ``abort_request``): images, fonts and media are not loaded;
  a request to another host than the crawled one is blocked; one to the crawled
  host goes out only if robots.txt, as the crawl read it, allows it. Service
  workers are blocked (they would fetch past the handler).
- **When a page is done.** After the load event, the page is read once the network
  has been quiet (no request in flight) and the DOM unchanged for
  :data:`QUIET_SECONDS`, or at ``SITEMAP_RENDER_TIMEOUT`` seconds, whichever comes
  first (an unsettled page is read as it is then). Navigation itself is capped by
  the same timeout; a page that fails to load fails its request, and the spider
  judges it on its raw HTML.
- **What is kept besides the DOM.** URLs a script passed to ``history.pushState``
  or ``replaceState`` (a client-side router's routes) are added to the DOM read as
  ``<a href>`` links; uncaught script errors are counted and noted.
- **Bounds.** At most ``SITEMAP_RENDER_CONCURRENCY`` pages at once; a browser
  context is closed and a fresh one opened after ``SITEMAP_RENDER_CONTEXT_PAGES``
  pages (its cache, storage and the memory of its pages go with it); a browser
  that dies is launched again on the next page (scrapy-playwright's
  ``PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER``).

Settings: ``SITEMAP_RENDER_BROWSER``, ``SITEMAP_RENDER_CONCURRENCY``,
``SITEMAP_RENDER_CONTEXT_PAGES``, ``SITEMAP_RENDER_TIMEOUT``; any ``PLAYWRIGHT_*``
setting of scrapy-playwright (``PLAYWRIGHT_LAUNCH_OPTIONS`` is merged over ours).
Meta keys set on a rendered response: ``sitemap_render_pushed`` (the router's
URLs), ``sitemap_render_errors`` (uncaught script errors),
``sitemap_render_settled``.
Stats: ``sitemap/render/pages``, ``sitemap/render/requests/<resource type>`` (let
out), ``sitemap/render/aborted/<image|font|media>``,
``sitemap/render/blocked/other_host``, ``sitemap/render/blocked/robots``,
``sitemap/render/unsettled``, ``sitemap/render/script_errors``,
``sitemap/render/contexts``; scrapy-playwright's own ``playwright/...``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from crawler.middlewares.robots import robots_allows
from crawler.rendering import LAUNCH_ARGS, find_browser
from crawler.urls import site_of

if TYPE_CHECKING:
    from playwright.async_api import Page
    from playwright.async_api import Request as BrowserRequest
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

#: A page is settled when the network and the DOM have been quiet this long.
QUIET_SECONDS = 0.3
#: How often a rendering page is looked at.
POLL_SECONDS = 0.05
#: Not loaded: a page's links and metadata do not depend on them.
ABORTED_TYPES = frozenset({"image", "font", "media"})

# Run in every page before its own scripts: notes when the DOM last changed and
# the URLs a client-side router pushes.
INIT_SCRIPT = """
(() => {
  const w = window;
  w.__sitemapChanged = Date.now();
  w.__sitemapPushed = [];
  for (const name of ["pushState", "replaceState"]) {
    const original = history[name];
    history[name] = function (state, title, url) {
      if (url !== undefined && url !== null) {
        try { w.__sitemapPushed.push(new URL(String(url), location.href).href); } catch (e) {}
      }
      return original.apply(this, arguments);
    };
  }
  new MutationObserver(() => { w.__sitemapChanged = Date.now(); }).observe(
    document, {subtree: true, childList: true, attributes: true, characterData: true});
})();
"""

# Returns how long ago the DOM last changed (ms) and the router's URLs.
_LOOK = "() => [Date.now() - (window.__sitemapChanged || 0), window.__sitemapPushed || []]"

# Adds the router's URLs that the DOM does not link to as links, before it is read.
_ADD_LINKS = """(urls) => {
  const have = new Set(Array.from(document.querySelectorAll("a[href]"), a => a.href));
  const holder = document.createElement("nav");
  holder.setAttribute("data-sitemap-crawler", "history");
  for (const url of urls) {
    if (have.has(url)) continue;
    have.add(url);
    const a = document.createElement("a");
    a.href = url;
    holder.appendChild(a);
  }
  if (holder.childNodes.length) (document.body || document.documentElement).appendChild(holder);
}"""


class RenderTimeout(Exception):
    """A page's scripts kept it busy past ``SITEMAP_RENDER_TIMEOUT``."""


class _Tracker:
    """The requests of one page in flight, and when the last one ended."""

    def __init__(self) -> None:
        self.inflight = 0
        self.changed = time.monotonic()

    def started(self, _: object) -> None:
        self.inflight += 1
        self.changed = time.monotonic()

    def ended(self, _: object) -> None:
        self.inflight = max(0, self.inflight - 1)
        self.changed = time.monotonic()


class Browser(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's handler with the crawl's rules (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        s = crawler.settings
        self.crawler = crawler
        self.timeout = s.getfloat("SITEMAP_RENDER_TIMEOUT")
        self.context_pages = s.getint("SITEMAP_RENDER_CONTEXT_PAGES")
        concurrency = s.getint("SITEMAP_RENDER_CONCURRENCY")
        self.slots = asyncio.Semaphore(concurrency)
        self.config.browser_type_name = "chromium"
        self.config.launch_options = {
            "headless": True,
            "executable_path": find_browser(s),
            "args": list(LAUNCH_ARGS),
            "timeout": self.timeout * 1000 * 2,
            **self.config.launch_options,
        }
        self.config.max_pages_per_context = concurrency
        self.config.navigation_timeout_ms = self.timeout * 1000
        self.abort_request = self._abort
        self.allows: Callable[[str], bool] = robots_allows(crawler)
        self.site: tuple[str, int | None] | None = None
        # Context recycling: the context new pages open in, and its pages so far.
        self.generation = 0
        self.served = 0
        self.open_pages: dict[str, int] = {}

    async def start(self) -> None:
        """Start Playwright's driver (the browser is launched with the first page)."""
        await self._launch()

    async def download_request(self, request: Request) -> Response:
        if self.site is None:
            spider = self.crawler.spider
            start = getattr(spider, "start_url", None) or request.url
            self.site = site_of(start)
        async with self.slots:
            name = f"render-{self.generation}"
            self.served += 1
            if self.served >= self.context_pages:
                self.generation, self.served = self.generation + 1, 0
            request.meta["playwright_context"] = name
            self.open_pages[name] = self.open_pages.get(name, 0) + 1
            try:
                response: Response = await super().download_request(request)
            finally:
                self.open_pages[name] -= 1
                if self.open_pages[name] == 0 and name != f"render-{self.generation}":
                    await self._retire(name)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("sitemap/render/pages")
        return response

    async def _retire(self, name: str) -> None:
        """Close the context *name*, done with its pages."""
        del self.open_pages[name]
        wrapper = self.context_wrappers.get(name)
        if wrapper is not None:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("sitemap/render/contexts")
            try:
                await wrapper.context.close()
            except PlaywrightError:  # the browser went first
                self.context_wrappers.pop(name, None)

    async def _create_page(self, request: Request, spider: Spider) -> Page:
        page: Page = await super()._create_page(request, spider)
        await page.add_init_script(INIT_SCRIPT)
        tracker = request.meta["sitemap_render_tracker"] = _Tracker()
        page.on("request", tracker.started)
        page.on("requestfinished", tracker.ended)
        page.on("requestfailed", tracker.ended)
        errors: list[str] = request.meta.setdefault("sitemap_render_errors", [])
        page.on("pageerror", lambda error: errors.append(str(error)[:300]))
        return page

    async def _apply_page_methods(self, page: Page, request: Request, spider: Spider) -> None:
        await super()._apply_page_methods(page, request, spider)
        await self._settle(page, request)

    async def _settle(self, page: Page, request: Request) -> None:
        """Wait for a quiet network and DOM (at most the timeout), then add the
        router's URLs to the DOM as links."""
        stats = self.crawler.stats
        assert stats is not None
        tracker: _Tracker | None = request.meta.pop("sitemap_render_tracker", None)
        deadline = time.monotonic() + self.timeout
        quiet_ms = QUIET_SECONDS * 1000
        pushed: list[str] = []
        settled = False
        while True:
            try:
                # A page stuck in a script never answers: bounded by the deadline.
                left = max(0.1, deadline - time.monotonic())
                since_dom, pushed = await asyncio.wait_for(page.evaluate(_LOOK), left)
            except PlaywrightError:  # navigating (a script's redirect): look again
                since_dom = 0
            except TimeoutError:
                raise RenderTimeout(f"the page did not answer in {self.timeout:g} s") from None
            now = time.monotonic()
            network_quiet = tracker is None or (
                tracker.inflight == 0 and now - tracker.changed >= QUIET_SECONDS
            )
            if network_quiet and since_dom >= quiet_ms:
                settled = True
                break
            if now >= deadline:
                break
            await asyncio.sleep(POLL_SECONDS)
        if not settled:
            stats.inc_value("sitemap/render/unsettled")
        if request.meta.get("sitemap_render_errors"):
            stats.inc_value("sitemap/render/script_errors")
        request.meta["sitemap_render_settled"] = settled
        request.meta["sitemap_render_pushed"] = pushed
        if pushed:
            try:
                await page.evaluate(_ADD_LINKS, pushed)
            except PlaywrightError:
                pass

    async def _abort(self, preq: BrowserRequest) -> bool:
        """Whether the page's request *preq* is stopped (see the module docstring)."""
        stats = self.crawler.stats
        assert stats is not None
        kind = preq.resource_type
        if kind in ABORTED_TYPES:
            stats.inc_value(f"sitemap/render/aborted/{kind}")
            return True
        url = preq.url
        if not url.startswith(("http://", "https://")):
            return False  # data: and blob: are the page's own
        if site_of(url) != self.site:
            stats.inc_value("sitemap/render/blocked/other_host")
            logger.debug("render: blocked %s (another host)", url)
            return True
        if not self.allows(url):
            stats.inc_value("sitemap/render/blocked/robots")
            logger.debug("render: blocked %s (robots.txt)", url)
            return True
        stats.inc_value(f"sitemap/render/requests/{kind}")
        return False
