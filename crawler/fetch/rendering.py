"""Which pages are rendered in a headless Chromium, and the request that renders one.

Sites built by JavaScript send an *application shell*: raw HTML with no content and
no links, which a script fills in; a crawl that reads raw HTML only finds their home
page. Every page is fetched raw first; ``SITEMAP_RENDER`` picks those asked again
through the browser (:meth:`RenderPolicy.request`), which are judged on their DOM with
the raw response's status and headers. Without scrapy-playwright or a Chromium
(:func:`unavailable`), every page is judged raw. The rule, settings, meta keys and
stats: docs/rendering.md.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shutil
from typing import TYPE_CHECKING, Any

from crawler.core.items import PageRequest
from crawler.core.urls import site_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

    from crawler.page.analysis import PageAnalysis

MODES = ("never", "auto", "always")
#: Headers of a raw answer not passed on with its (decoded) body.
HOP_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection"})

#: The switches Chromium needs here: headless on a machine with no screen, no
#: network but the crawled site's, maybe as root (--no-sandbox); without the
#: background-networking ones Chromium keeps trying to reach Google's hosts.
LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
    # Nothing a crawl looks at: extensions, audio, translation, crash reports...
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--disable-breakpad",
    # (No spare renderer started ahead of a navigation: a process, ~40 MB, each time.)
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,"
    "SpareRendererForSitePerProcess",
    "--no-default-browser-check",
    "--hide-scrollbars",
    # ... and a small window: less to lay out and paint.
    "--window-size=800,600",
    # Fewer processes and less memory: no GPU process, and V8 without its
    # optimising compilers (a page lives briefly). Pages keep a renderer each: one
    # shared (--process-per-site) stalls every page behind a script that never ends.
    "--in-process-gpu",
    "--js-flags=--lite-mode",
    # Pages rendering in the background keep their timers at full speed.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
)

#: What to install, in one line each.
INSTALL_EXTRA = 'rendering needs scrapy-playwright: pip install -e ".[render]"'
#: The Chromiums looked for on PATH, in order. The headless shell first: Chromium's
#: headless build, about half the CPU and memory a page (docs/rendering.md).
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
INSTALL_BROWSER = (
    "rendering needs a Chromium: apt-get install chromium-headless-shell (or --browser PATH)"
)


def find_browser(settings: BaseSettings) -> str | None:
    """The Chromium to drive: ``SITEMAP_RENDER_BROWSER`` when it names an executable
    file, else :data:`BROWSERS`' first on PATH; None when there is none."""
    named = settings.get("SITEMAP_RENDER_BROWSER")
    if named:
        return str(named) if os.path.isfile(named) and os.access(named, os.X_OK) else None
    return next(filter(None, map(shutil.which, BROWSERS)), None)


def unavailable(settings: BaseSettings) -> str | None:
    """What to install before pages can be rendered (one line), or None when the
    extra and a browser are there (or nothing is ever rendered)."""
    if settings.get("SITEMAP_RENDER") == "never":
        return None
    for module in ("scrapy_playwright", "playwright"):
        try:
            if importlib.util.find_spec(module) is None:
                return INSTALL_EXTRA
        except (ImportError, ValueError):  # a broken install, or one blocked
            return INSTALL_EXTRA
    if find_browser(settings) is None:
        named = settings.get("SITEMAP_RENDER_BROWSER")
        if named:
            return f"rendering needs a Chromium: {named} is not an executable file"
        return INSTALL_BROWSER
    return None


class RenderPolicy:
    """Decides which raw pages of a crawl of *start_url* are rendered (see the module
    docstring); *problem*: what is missing to render (None: nothing)."""

    def __init__(
        self,
        start_url: str,
        *,
        mode: str,
        include: list[str],
        shell_links: int,
        problem: str | None,
        stats: StatsCollector,
    ) -> None:
        self.site = site_of(start_url)
        self.mode = mode
        self.include = [re.compile(p) for p in include]
        self.shell_links = shell_links
        self.problem = problem
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler, start_url: str) -> RenderPolicy:
        s = crawler.settings
        assert crawler.stats is not None
        return cls(
            start_url,
            mode=s.get("SITEMAP_RENDER") or "never",
            include=s.getlist("SITEMAP_RENDER_INCLUDE"),
            shell_links=s.getint("SITEMAP_RENDER_SHELL_LINKS"),
            problem=unavailable(s),
            stats=crawler.stats,
        )

    def why(self, url: str, analysis: PageAnalysis) -> str | None:
        """Why the raw page of *url* (a 200 HTML page, analysed) must be rendered, or
        None. (When it must but :attr:`problem` says it cannot, the caller judges it
        raw and notes why.)"""
        if self.mode == "never":
            return None
        reason = None
        if self.mode == "always":
            reason, kind = "always", "always"
        elif any(p.search(url) for p in self.include):
            reason, kind = "matches --render-include", "include"
        elif analysis.shell is not None:
            mine = (link for link in analysis.links if link and site_of(link.url) == self.site)
            ours = sum(1 for _ in itertools.islice(mine, self.shell_links))  # enough to decide
            if ours < self.shell_links:
                reason, kind = f"{analysis.shell}, {ours} links to the site", "shell"
        if reason is None:
            return None
        facts = analysis.facts
        if facts.refresh is not None and facts.refresh[0] <= 0:
            return None  # an instant refresh: a redirect
        if facts.robots.noindex:
            self.stats.inc_value("sitemap/render/skipped/noindex")
            return None
        self.stats.inc_value(f"sitemap/render/reason/{kind}")
        return reason

    def request(
        self,
        response: Response,
        reason: str,
        *,
        callback: Callable[..., Any],
        errback: Callable[..., Any],
    ) -> PageRequest:
        """The raw *response*'s page asked again, through the browser: same URL and
        crawl meta, not conditional (the raw answer was a 200), past the dupe filter."""
        self.stats.inc_value("sitemap/render/wanted")
        meta = {
            k: v
            for k, v in response.meta.items()
            if k.startswith("sitemap_") or k in ("handle_httpstatus_all", "dont_redirect")
        }
        meta.update(
            playwright=True,
            sitemap_render=reason,
            # A render's latency is the browser's work, not the server's answer: it
            # must not move AutoThrottle's delay for the host's other requests.
            autothrottle_dont_adjust_delay=True,
            # Service workers would fetch past the route handler's checks.
            playwright_context_kwargs={"service_workers": "block"},
            # The raw answer serves the browser's request for the document: a
            # rendered page costs one request to the site, not two.
            sitemap_render_document=(
                response.status,
                {
                    k.decode("latin-1").lower(): b", ".join(v).decode("latin-1")
                    for k, v in response.headers.items()
                    if k.decode("latin-1").lower() not in HOP_HEADERS
                },
                response.body,
            ),
        )
        return PageRequest(
            response.url,
            callback=callback,
            errback=errback,
            meta=meta,
            dont_filter=True,
            priority=response.request.priority if response.request is not None else 0,
        )
