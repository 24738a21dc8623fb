"""Downloader middleware that keeps the crawl on the crawled host.

Every request, including whatever a redirect middleware builds, must go to the start
URL's site (:func:`crawler.core.urls.site_of`: its host and port, http or https); anything
else is refused here, at the first downloader middleware, so no component can reach
another host by accident (docs/crawling.md, "Same site only"). Only the redirect hops
of a robots.txt fetch (marked :data:`ROBOTS_TXT` by :mod:`crawler.fetch.robots`) may
leave (RFC 9309 2.3.1.2).

Settings: none; the run's start URL (:class:`crawler.ledger.runstate.RunState`)
says which site is ours (a spider without one is not ours to guard).
Stats: ``sitemap/hostguard/refused``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import IgnoreRequest

from crawler.core.urls import other_forms, site_of
from crawler.ledger.runstate import RunState

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: Meta key of a robots.txt request: it may fetch ``/robots.txt`` from another host.
ROBOTS_TXT = "sitemap_robots_txt"


class OffHostRequest(IgnoreRequest):
    """A request to a host other than the crawled one."""


class HostGuardMiddleware:
    """Refuses every request to another site than *site* (``(host, port)``)."""

    def __init__(self, site: tuple[str, int | None], stats: StatsCollector) -> None:
        self.site = site
        # Another form of the host (www. or not): asked, as the redirect it usually is;
        # the judge lists nothing of it.
        self.sites = {site, *other_forms(site)}
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        site = site_of(RunState.of(crawler).start_url)  # NotConfigured: not our spider
        assert site is not None and crawler.stats is not None  # a checked start URL
        return cls(site, crawler.stats)

    def process_request(self, request: Request) -> None:
        if site_of(request.url) not in self.sites and not _robots_txt(request):
            self.stats.inc_value("sitemap/hostguard/refused")
            logger.warning("Refused a request to another host: %s", request.url)
            raise OffHostRequest(f"off-host request refused: {request.url}")


def _robots_txt(request: Request) -> bool:
    """A hop of a robots.txt fetch: ``/robots.txt``, or a redirect of it (which Scrapy's
    redirect middleware records in ``redirect_urls``), to any host and path."""
    if request.meta.get(ROBOTS_TXT) is not True:
        return False
    first = (request.meta.get("redirect_urls") or [request.url])[0]
    return bool(urlsplit(first).path == "/robots.txt")
