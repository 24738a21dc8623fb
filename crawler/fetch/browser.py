"""The headless Chromium that renders pages: scrapy-playwright's download handler,
made polite and bounded for a crawl. What goes out and what is blocked, the document
answered from the raw response, the per-crawl cache, when a page is done and how
contexts are renewed: docs/rendering.md, "In the browser".

Imported only when a page is first rendered (:mod:`crawler.fetch.renderhandler`).
Settings: ``SITEMAP_RENDER_*`` and any ``PLAYWRIGHT_*`` setting of scrapy-playwright
(``PLAYWRIGHT_LAUNCH_OPTIONS`` is merged over ours); meta keys set on a rendered
response and stats: docs/rendering.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from scrapy.http import HtmlResponse
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from crawler.core.cores import usable_cores
from crawler.core.urls import site_of
from crawler.fetch.rendering import HOP_HEADERS, LAUNCH_ARGS, find_browser
from crawler.fetch.robots import robots_allows

if TYPE_CHECKING:
    from playwright.async_api import Request as BrowserRequest
    from playwright.async_api import Route
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

#: How often the page looks whether its own fetches are done (in the page: no
#: round trip to it).
POLL_MS = 10
#: Not loaded: a page's links and metadata do not depend on them (nor on its layout).
ABORTED_TYPES = frozenset(
    {
        "image",
        "font",
        "media",
        "stylesheet",
        "texttrack",
        "ping",
        "beacon",
        "manifest",
        "eventsource",
        "websocket",
    }
)
#: Analytics and tags on the crawled host itself (other hosts are blocked anyway).
ANALYTICS = re.compile(
    r"/(?:gtag/js|gtm\.js|analytics\.js|ga\.js|matomo\.(?:js|php)|piwik\.(?:js|php)"
    r"|plausible(?:\.[\w.]+)?\.js|collect|g/collect|beacon|_vercel/insights|cdn-cgi/rum)(?:$|[/?])"
)
#: What the per-crawl cache keeps: the bundles and data an application fetches again
#: and again; at most :data:`CACHE_BYTES` in all, :data:`CACHE_ENTRY_BYTES` an entry.
CACHED_TYPES = frozenset({"script", "fetch", "xhr"})
CACHE_BYTES = 64 * 1024 * 1024
CACHE_ENTRY_BYTES = 4 * 1024 * 1024
#: Node.js options of Playwright's driver: a young generation of 1 MB a semi-space
#: (16 MB by default), collected more often: less memory for the same CPU
#: (docs/rendering.md).
DRIVER_NODE_OPTIONS = "--max-semi-space-size=1"

# Run in every page before its own scripts: counts the page's own fetches and XHRs
# until their answers are read (and the callbacks that read them have run), and
# notes the URLs a client-side router pushes.
INIT_SCRIPT = """
(() => {
  const w = window;
  w.__sitemapPending = 0;
  w.__sitemapPushed = [];
  const done = () => { setTimeout(() => { w.__sitemapPending -= 1; }, 0); };
  for (const name of ["pushState", "replaceState"]) {
    const original = history[name];
    history[name] = function (state, title, url) {
      if (url !== undefined && url !== null) {
        try { w.__sitemapPushed.push(new URL(String(url), location.href).href); } catch (e) {}
      }
      return original.apply(this, arguments);
    };
  }
  const fetch0 = w.fetch;
  if (fetch0) {
    w.fetch = function () {
      w.__sitemapPending += 1;
      let answer;
      try { answer = fetch0.apply(this, arguments); } catch (e) { done(); throw e; }
      return answer.then((response) => {
        for (const m of ["json", "text", "arrayBuffer", "blob", "formData"]) {
          const read = response[m];
          if (typeof read !== "function") continue;
          response[m] = function () {
            w.__sitemapPending += 1;
            return read.apply(this, arguments).finally(done);
          };
        }
        done();
        return response;
      }, (error) => { done(); throw error; });
    };
  }
  const XHR = w.XMLHttpRequest;
  if (XHR) {
    const send = XHR.prototype.send;
    XHR.prototype.send = function () {
      w.__sitemapPending += 1;
      this.addEventListener("loadend", done);
      return send.apply(this, arguments);
    };
  }
})();
"""

# Resolves once the page has nothing of its own pending (two looks in a row, a
# macrotask apart), or at the cap (ms): whether it settled, the router's URLs, and the
# DOM read as HTML with those URLs the DOM does not link to added as ``<a href>``.
# One call a look: every call is a round trip through Playwright's driver.
_SETTLE = """(cap) => new Promise((resolve) => {
  const w = window, d = document, end = Date.now() + cap;
  let idle = 0;
  const read = (quiet) => {
    const urls = w.__sitemapPushed || [];
    const have = new Set(Array.from(d.querySelectorAll("a[href]"), a => a.href));
    const holder = d.createElement("nav");
    holder.setAttribute("data-sitemap-crawler", "history");
    for (const url of urls) {
      if (have.has(url)) continue;
      have.add(url);
      const a = d.createElement("a");
      a.href = url;
      holder.appendChild(a);
    }
    if (holder.childNodes.length) (d.body || d.documentElement).appendChild(holder);
    const doctype = d.doctype ? new XMLSerializer().serializeToString(d.doctype) : "";
    resolve([quiet, urls, doctype + (d.documentElement ? d.documentElement.outerHTML : "")]);
  };
  const look = () => {
    idle = (w.__sitemapPending || 0) <= 0 ? idle + 1 : 0;
    if (idle >= 2) return read(true);
    if (Date.now() >= end) return read(false);
    setTimeout(look, idle ? 0 : POLL_MS);
  };
  look();
})""".replace("POLL_MS", str(POLL_MS))


class RenderTimeout(Exception):
    """A page's scripts kept it busy past ``SITEMAP_RENDER_TIMEOUT``."""


def render_concurrency(settings: BaseSettings) -> int:
    """Pages rendered at once: ``SITEMAP_RENDER_CONCURRENCY``, or for ``"auto"`` two
    per core the crawl may use (this process's share of them, with
    ``SITEMAP_REDIS_PROCESSES_HERE`` fetching processes on the machine), within the
    site's politeness budget (``CONCURRENT_REQUESTS_PER_DOMAIN``), at most 8."""
    value = settings.get("SITEMAP_RENDER_CONCURRENCY")
    if value != "auto":
        return max(1, int(value))
    share = 2 * usable_cores() / max(1, settings.getint("SITEMAP_REDIS_PROCESSES_HERE", 1))
    polite = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or settings.getint(
        "CONCURRENT_REQUESTS"
    )
    return max(1, min(round(share), polite or 1, 8))


def renderers_mb(root: int) -> float:
    """The mean memory (PSS, MB) of the Chromium renderers under process *root*, read
    from Linux's /proc (0 without it): what grows as a context's pages are used."""
    total, count, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        with contextlib.suppress(OSError, ValueError):
            for task in os.listdir(f"/proc/{pid}/task"):  # a process's children, by thread
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += map(int, f.read().split())
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"--type=renderer" not in f.read():
                    continue
            with open(f"/proc/{pid}/smaps_rollup") as f:
                if found := re.search(r"^Pss:\s+(\d+)", f.read(), re.M):
                    total += int(found[1])
                    count += 1
    return total / 1024 / max(count, 1)


class _PageState:
    """One open page's requests in flight and script errors, for its current URL."""

    def __init__(self) -> None:
        self.inflight: set[BrowserRequest] = set()
        self.started = 0
        self.idle = asyncio.Event()
        self.reset("", None)

    def reset(self, url: str, document: tuple[int, dict[str, str], bytes] | None) -> None:
        self.inflight.clear()
        self.idle.set()
        self.errors: list[str] = []
        # The URL being rendered, and the raw answer that serves its document request.
        self.url, self.document = url, document

    def began(self, preq: BrowserRequest) -> None:
        self.inflight.add(preq)
        self.started += 1
        self.idle.clear()

    def ended(self, preq: BrowserRequest) -> None:
        self.inflight.discard(preq)
        if not self.inflight:
            self.idle.set()


class _Entry:
    __slots__ = ("status", "headers", "body", "expires")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, expires: float) -> None:
        self.status, self.headers, self.body, self.expires = status, headers, body, expires


def freshness(headers: dict[str, str], now: float) -> float | None:
    """Until when (a time.time()) a 200 answer with *headers* may be reused within the
    crawl, or None when it may not be stored: ``no-store``, ``no-cache``, ``max-age=0``,
    ``Vary: *`` or an ``Expires`` in the past say not; ``max-age`` (else ``Expires``)
    says how long; without either, for the rest of the crawl (one snapshot of the site)."""
    control = headers.get("cache-control", "").lower()
    directives = {
        d.strip().partition("=")[0]: d.strip().partition("=")[2] for d in control.split(",")
    }
    if {"no-store", "no-cache"} & directives.keys() or headers.get("vary", "").strip() == "*":
        return None
    if "max-age" in directives:
        try:
            age = int(directives["max-age"].strip('"'))
        except ValueError:
            return None
        return now + age if age > 0 else None
    if "expires" in headers:
        parsed = email.utils.parsedate_tz(headers["expires"])
        if parsed is None:
            return None
        expires = float(email.utils.mktime_tz(parsed))
        if "date" in headers and (date := email.utils.parsedate_tz(headers["date"])):
            expires = now + expires - email.utils.mktime_tz(date)
        return expires if expires > now else None
    return float("inf")


class ResourceCache:
    """Scripts and data the pages of one crawl fetch again and again (Playwright turns
    the browser's own HTTP cache off while requests are routed), least recently used
    first out past :data:`CACHE_BYTES`."""

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self.budget = budget
        self.size = 0
        self.entries: OrderedDict[str, _Entry] = OrderedDict()
        self.seen: set[str] = set()

    def get(self, url: str) -> _Entry | None:
        entry = self.entries.get(url)
        if entry is None or entry.expires <= time.time():
            self._drop(url)
            return None
        self.entries.move_to_end(url)
        return entry

    def put(self, url: str, status: int, headers: dict[str, str], body: bytes) -> bool:
        if status != 200 or len(body) > CACHE_ENTRY_BYTES:
            return False
        expires = freshness(headers, time.time())
        if expires is None:
            return False
        self._drop(url)
        kept = {k: v for k, v in headers.items() if k not in HOP_HEADERS}
        self.entries[url] = _Entry(status, kept, body, expires)
        self.size += len(body)
        while self.size > self.budget and self.entries:
            self._drop(next(iter(self.entries)))
        return url in self.entries

    def _drop(self, url: str) -> None:
        entry = self.entries.pop(url, None)
        if entry is not None:
            self.size -= len(entry.body)


class Browser(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's handler with the crawl's rules (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        s = crawler.settings
        self.crawler = crawler
        self.timeout = s.getfloat("SITEMAP_RENDER_TIMEOUT")
        self.context_pages = s.getint("SITEMAP_RENDER_CONTEXT_PAGES")
        self.context_mb = s.getint("SITEMAP_RENDER_CONTEXT_MB")
        concurrency = render_concurrency(s)
        self.slots = asyncio.Semaphore(concurrency)
        self.stats.set_value("sitemap/render/concurrency", concurrency)
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
        self.allows: Callable[[str], bool] = robots_allows(crawler)
        self.site: tuple[str, int | None] | None = None
        # Context recycling: the context new pages open in, and its pages so far.
        self.generation = 0
        self.served = 0
        self.open_pages: dict[str, int] = {}
        # Pages kept open between URLs, by context; what each open page is doing.
        self.idle_pages: dict[str, list[Page]] = {}
        self.states: dict[int, _PageState] = {}
        self.cache = ResourceCache()

    async def start(self) -> None:
        """Start Playwright's driver (the browser is launched with the first page),
        with :data:`DRIVER_NODE_OPTIONS` added to the ``NODE_OPTIONS`` it inherits."""
        given = os.environ.get("NODE_OPTIONS")
        if "--max-semi-space-size" not in (given or ""):
            os.environ["NODE_OPTIONS"] = f"{given or ''} {DRIVER_NODE_OPTIONS}".strip()
        try:
            await self._launch()
        finally:
            if given is None:
                os.environ.pop("NODE_OPTIONS", None)
            else:
                os.environ["NODE_OPTIONS"] = given

    async def download_request(self, request: Request) -> Response:
        start = getattr(self.crawler.spider, "start_url", "") or request.url
        self.site = self.site or site_of(start)
        async with self.slots:
            name = f"render-{self.generation}"
            request.meta["playwright_context"] = name
            request.meta["playwright_include_page"] = True
            idle = self.idle_pages.get(name)
            while idle:
                page = idle.pop()
                if not page.is_closed():
                    request.meta["playwright_page"] = page
                    self.stats.inc_value("sitemap/render/pages_reused")
                    break
            self.served += 1
            if self.served >= self.context_pages or (
                # (A context of 20 pages at least: a site whose fresh renderers are over
                # the budget is not given a new context every 10 pages.)
                self.served >= 20
                and self.served % 10 == 0
                and renderers_mb(os.getpid()) > self.context_mb
            ):
                self.generation, self.served = self.generation + 1, 0
                # Its other pages are not used again: their renderers go now, not
                # with its last render (the memory of both contexts at once).
                for page in self.idle_pages.pop(name, []):
                    await self._close_page(page)
            self.open_pages[name] = self.open_pages.get(name, 0) + 1
            keep = False
            try:
                response: Response = await super().download_request(request)
                keep = bool(request.meta.get("sitemap_render_settled"))
            finally:
                request.meta.pop("sitemap_render_document", None)
                request.meta.pop("playwright_include_page", None)
                page = request.meta.pop("playwright_page", None)
                self.open_pages[name] -= 1
                current = name == f"render-{self.generation}"
                retire = self.open_pages[name] == 0 and not current
                if page is not None and not page.is_closed():
                    if keep and current:
                        self.idle_pages.setdefault(name, []).append(page)
                    else:
                        # A page that did not settle may still be busy: not reused.
                        await self._close_page(page)
                if retire:
                    await self._retire(name)
        self.stats.inc_value("sitemap/render/pages")
        return response

    async def _close_page(self, page: Page) -> None:
        self.states.pop(id(page), None)
        with contextlib.suppress(PlaywrightError):
            await page.close()

    async def _retire(self, name: str) -> None:
        """Close the context *name*, done with its pages."""
        del self.open_pages[name]
        for page in self.idle_pages.pop(name, []):
            self.states.pop(id(page), None)
        wrapper = self.context_wrappers.get(name)
        if wrapper is not None:
            self.stats.inc_value("sitemap/render/contexts")
            try:
                await wrapper.context.close()
            except PlaywrightError:  # the browser went first
                self.context_wrappers.pop(name, None)

    async def _create_browser_context(
        self, name: str, context_kwargs: dict[str, Any] | None, spider: Spider | None = None
    ) -> Any:
        # The crawl's User-Agent on every request the browser makes, and a small window.
        # The page's document is the crawl's verified answer; its scripts and data go
        # through Chromium, which ignores certificate errors only under --insecure.
        kwargs = {
            "user_agent": self.crawler.settings.get("USER_AGENT"),
            "viewport": {"width": 800, "height": 600},
            "ignore_https_errors": not self.crawler.settings.getbool("SITEMAP_TLS_VERIFY"),
            **(context_kwargs or {}),
        }
        return await super()._create_browser_context(name, kwargs, spider)

    async def _create_page(self, request: Request, spider: Spider) -> Page:
        try:
            page: Page = await asyncio.wait_for(super()._create_page(request, spider), self.timeout)
        except TimeoutError:
            # In a context whose browser died, new_page waits without a limit: the
            # context is dropped (the next page opens a new one) and this page is judged raw.
            name = request.meta.get("playwright_context", "default")
            self.context_wrappers.pop(name, None)
            raise PlaywrightError(f"the browser opened no page in {self.timeout:g} s") from None
        # scrapy-playwright's request and response counts: two events a request more
        # through the driver (the route handler counts what goes out).
        page.remove_listener("request", self._increment_request_stats)
        page.remove_listener("response", self._increment_response_stats)
        await page.add_init_script(INIT_SCRIPT)
        state = self.states[id(page)] = _PageState()
        page.on("request", state.began)
        page.on("requestfinished", state.ended)
        page.on("requestfailed", state.ended)
        page.on("pageerror", lambda error: state.errors.append(str(error)[:300]))
        page.on("close", self._forget)

        async def handle(route: Route, preq: BrowserRequest) -> None:
            try:
                await self._route(route, preq, state)
            except PlaywrightError as error:  # the page went meanwhile
                logger.debug("render: %s: %s", preq.url, error)

        # Routed once for the page's life (its URLs change, the handler reads them
        # from its state), not again for every URL.
        await page.route("**", handle)
        return page

    def _forget(self, page: Page) -> None:
        self.states.pop(id(page), None)

    async def _download_request_with_retry(self, request: Request, spider: Spider) -> Response:
        """scrapy-playwright's, replaced: the page (opened and routed once,
        :meth:`_create_page`) loads the URL, settles (:meth:`_settle`) and its DOM is
        read, with the raw answer's status and headers (the browser's, without one)."""
        page = request.meta.get("playwright_page")
        reused = isinstance(page, Page) and not page.is_closed()
        document = request.meta.pop("sitemap_render_document", None)
        started = time.time()
        while True:
            if not isinstance(page, Page) or page.is_closed():
                page = await self._create_page(request=request, spider=spider)
                request.meta["playwright_page"] = page
            state = self.states.get(id(page)) or _PageState()
            state.reset(request.url, document)
            request.meta["sitemap_render_errors"] = state.errors
            try:
                answer = await page.goto(request.url)
                html = await self._settle(page, request, state)
                status, headers = document[:2] if document else (200, {})
                if document is None and answer is not None:
                    status, headers = answer.status, await answer.all_headers()
                break
            except Exception:
                # A kept page still busy in its last document's script cannot take
                # the next URL: once more, in a fresh page.
                stuck = reused and page.url != request.url
                await self._close_page(page)
                if not stuck:
                    raise
                self.stats.inc_value("sitemap/render/stuck_pages")
                reused = False
        request.meta["download_latency"] = time.time() - started
        return HtmlResponse(
            page.url,
            status=status,
            headers={k: v for k, v in headers.items() if k.lower() != "content-encoding"},
            body=html.encode("utf-8"),
            encoding="utf-8",
            request=request,
            flags=["playwright"],
        )

    async def _settle(self, page: Page, request: Request, state: _PageState) -> str:
        """Wait until neither the network (the page's requests, counted by their
        events) nor the page's own fetches have anything pending, at most the
        timeout; the DOM then, the router's URLs added to it as links."""
        deadline = time.monotonic() + self.timeout
        pushed: list[str] = []
        html: str | None = None
        settled = False
        while (left := deadline - time.monotonic()) > 0:
            try:
                await asyncio.wait_for(state.idle.wait(), left)
            except TimeoutError:
                break
            mark = state.started
            left = max(0.1, deadline - time.monotonic())
            try:
                # A page stuck in a script never answers: bounded by the deadline.
                quiet, pushed, html = await asyncio.wait_for(
                    page.evaluate(_SETTLE, int(left * 1000)), left + 0.5
                )
            except PlaywrightError:  # navigating (a script's redirect): look again
                await asyncio.sleep(0.05)
                continue
            except TimeoutError:
                raise RenderTimeout(f"the page did not answer in {self.timeout:g} s") from None
            settled = quiet and state.idle.is_set() and state.started == mark
            if settled or not quiet:
                break
        if html is None:  # out of time before a look: read the page as it is
            _, pushed, html = await page.evaluate(_SETTLE, 0)
        if not settled:
            self.stats.inc_value("sitemap/render/unsettled")
        if request.meta.get("sitemap_render_errors"):
            self.stats.inc_value("sitemap/render/script_errors")
        request.meta["sitemap_render_settled"] = settled
        request.meta["sitemap_render_pushed"] = pushed
        return html

    async def _route(self, route: Route, preq: BrowserRequest, state: _PageState) -> None:
        if self._blocked(preq):
            await route.abort()
            return
        kind = preq.resource_type
        target = preq.url
        if state.document is not None and target == state.url and preq.is_navigation_request():
            status, headers, body = state.document
            state.document = None  # the first request for it only
            if preq.method == "GET":
                self.stats.inc_value("sitemap/render/document_from_raw")
                await route.fulfill(status=status, headers=headers, body=body)
                return
        self.stats.inc_value(f"sitemap/render/requests/{kind}")
        if kind in CACHED_TYPES and preq.method == "GET":
            entry = self.cache.get(target)
            if entry is not None:
                self.stats.inc_value("sitemap/render/cache/hits")
                await route.fulfill(status=entry.status, headers=entry.headers, body=entry.body)
                return
            # A script is fetched to be kept at once (bundles are shared by the
            # routes); data once seen twice.
            if kind == "script" or target in self.cache.seen:
                answer = await route.fetch()
                data = await answer.body()
                if self.cache.put(target, answer.status, answer.headers, data):
                    self.stats.inc_value("sitemap/render/cache/stored")
                await route.fulfill(response=answer, body=data)
                return
            if len(self.cache.seen) < 100_000:
                self.cache.seen.add(target)
        await route.continue_()

    def _blocked(self, preq: BrowserRequest) -> bool:
        """Whether the page's request *preq* is stopped (see the module docstring)."""
        kind = preq.resource_type
        if kind in ABORTED_TYPES:
            self.stats.inc_value(f"sitemap/render/aborted/{kind}")
            return True
        url = preq.url
        if not url.startswith(("http://", "https://")):
            return False  # data: and blob: are the page's own
        if site_of(url) != self.site:
            self.stats.inc_value("sitemap/render/blocked/other_host")
            logger.debug("render: blocked %s (another host)", url)
            return True
        if not self.allows(url):
            self.stats.inc_value("sitemap/render/blocked/robots")
            logger.debug("render: blocked %s (robots.txt)", url)
            return True
        if kind != "document" and ANALYTICS.search(url.split("#")[0]):
            self.stats.inc_value("sitemap/render/aborted/analytics")
            return True
        return False
