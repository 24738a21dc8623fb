"""The soft-404 probe (docs/crawling.md): before the start URL, the leading process
asks for an address that cannot exist, and for a second of another shape when the
first answers 200; a redirect on the site is followed once. The page a site serves
for them with 200 (or its HTML 404) is its "not found" page, whose fingerprint
(crawler.page.softnotfound) the judge then recognises. The probes are never recorded.

Settings: ``SITEMAP_SOFT404_PROBE``, ``DOWNLOAD_TIMEOUT``.
Stats: ``sitemap/soft404/probes``, ``sitemap/soft404/probe_status``,
``sitemap/soft404/detected``, ``sitemap/soft404/shell`` (the probe got an app shell).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.settings import BaseSettings

from crawler.core.urls import site_of
from crawler.page.analysis import not_found_print

if TYPE_CHECKING:
    from crawler.crawl.judge import PageJudge
    from crawler.page.softnotfound import PagePrint

#: Seconds a probe may take (at most DOWNLOAD_TIMEOUT).
PROBE_TIMEOUT = 10.0
#: The meta key of a probe request: (its number, the redirects followed to it).
PROBE = "sitemap_probe"
#: Probe addresses start with this path.
PROBE_PREFIX = "/sitemap-crawler-probe-"


@dataclass
class NotFoundProbe:
    """The probe's requests, and what their answers found, for the *judge*:
    *keep_print* keeps a print where every process judging pages finds it,
    *shared_prints* are those kept; *callback* is the spider's, for answers and failures."""

    judge: PageJudge
    keep_print: Callable[[str, PagePrint], None]
    shared_prints: Callable[[], list[tuple[str, PagePrint]]]
    callback: Callable[..., Any]
    settings: BaseSettings
    asked: bool = False  # probed in this run, or its findings restored
    known: bool = False  # the findings were read here

    def first_request(self) -> Request | None:
        """The first probe, unless turned off: pages are analysed for prints until it is over."""
        if self.settings.getbool("SITEMAP_SOFT404_PROBE"):
            self.asked = self.judge.analyser.prints = True
            return self._request(self._address(), 1, 0)
        return None

    def restore(self, saved: dict[str, Any]) -> None:
        """A resumed run: the findings saved with the frontier (``soft_prints``)."""
        self.asked = True
        for url, found in saved.get("soft_prints", []):
            self.judge.soft_not_found.add(url, found)

    async def answered(self, response: Response) -> Request | None:
        """The next probe the answer to one leads to, or None: the probe is over."""
        number, hops = response.meta[PROBE]
        judge, analyser = self.judge, self.judge.analyser
        judge.stats.set_value("sitemap/soft404/probe_status", response.status)
        location = response.headers.get(b"Location")
        if 300 <= response.status < 400 and location is not None and hops < 1:
            target = response.urljoin(location.decode("latin-1"))
            if site_of(target) == judge.site:
                return self._request(target, number, hops + 1)
        if not isinstance(response, HtmlResponse):  # Scrapy's class for an HTML type
            return None
        if judge.is_html_page(response):  # answered 200
            analyser.prints = True  # whichever process fetched the probe
            analysis = await analyser.analyse(response)
            if analysis.shell is not None:
                # A single-page application answers every address with its shell: the
                # raw shell is no "not found" page, or every route would be one
                # (the rendered routes carry their own noindex, docs/rendering.md).
                judge.stats.set_value("sitemap/soft404/shell", True)
            elif analysis.soft_print is not None:
                self.keep_print(response.url, analysis.soft_print)
                if number == 1:
                    return self._request(self._address(second=True), 2, 0)
        elif response.status in (404, 410) and hops == 0:
            # The site's own "not found" page, answered as such: a page answered 200
            # with the same words is one too. Its words only (no parse in the pool,
            # which may not have started yet).
            printed = not_found_print(response, analyser.volatile)
            if printed is not None:
                self.keep_print(response.url, printed)
        return None

    def read_findings(self) -> None:
        """Once, before the first page is judged here (the probe is over): every
        probe's findings, and which prints the pages' analysis computes."""
        if self.known:
            return
        self.known, found = True, self.judge.soft_not_found
        for url, shared in self.shared_prints():
            found.add(url, shared)
        if self.asked:
            self.judge.stats.set_value("sitemap/soft404/detected", found.answers_200)
        self.judge.analyser.prints = found.wanted

    def _address(self, second: bool = False) -> str:  # on the site, that cannot exist
        parts, path = urlsplit(self.judge.start_url), PROBE_PREFIX + secrets.token_hex(8)
        path += f"/{secrets.token_hex(4)}.html" if second else ""
        return f"{parts.scheme}://{parts.netloc}{path}"

    def _request(self, url: str, number: int, hops: int) -> Request:
        self.judge.stats.inc_value("sitemap/soft404/probes")
        return Request(
            url,
            callback=self.callback,
            errback=self.callback,
            dont_filter=True,
            meta={
                PROBE: (number, hops),
                "handle_httpstatus_all": True,
                "dont_redirect": True,
                # The start URL waits for it: a probe that hangs is not worth a retry.
                "dont_retry": True,
                "download_timeout": min(PROBE_TIMEOUT, self.settings.getfloat("DOWNLOAD_TIMEOUT")),
            },
        )
