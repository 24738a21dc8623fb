"""Downloader middleware: HTTP Strict Transport Security (RFC 6797), as browsers keep it
(docs/crawling.md, "HTTPS").

A request for ``http://`` on a host known for HSTS never goes out: it is answered here
with the ``307`` to ``https://`` a browser makes internally (RFC 6797 8.3), which the
judge records as a redirect and the frontier follows. It sits before robots.txt (100),
so not even robots.txt is asked over http. A header over an unverified connection is
ignored (RFC 6797 8.1).

Settings: ``SITEMAP_TLS_VERIFY``.
Stats: ``sitemap/hsts/upgraded`` (http:// requests answered here).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.http import Response

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

_MAX_AGE = re.compile(r'(?:^|;)\s*max-age\s*=\s*"?(\d+)"?\s*(?:;|$)', re.IGNORECASE)
_SUBDOMAINS = re.compile(r"(?:^|;)\s*includesubdomains\s*(?:;|$)", re.IGNORECASE)


class StrictTransportMiddleware:
    """Known HSTS hosts (host -> whether its subdomains are included)."""

    def __init__(self, stats: StatsCollector, *, verified: bool = True) -> None:
        self.stats = stats
        self.verified = verified
        self.hosts: dict[str, bool] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        return cls(crawler.stats, verified=crawler.settings.getbool("SITEMAP_TLS_VERIFY"))

    def process_request(self, request: Request) -> Response | None:
        parts = urlsplit(request.url)
        if parts.scheme != "http" or not self._known(parts.hostname or ""):
            return None
        netloc = parts.netloc if parts.port not in (80, None) else parts.hostname or ""
        # A port given stays (RFC 6797 8.3 keeps only a non-default one; 80 goes).
        target = parts._replace(scheme="https", netloc=netloc).geturl()
        self.stats.inc_value("sitemap/hsts/upgraded")
        headers = {"Location": target, "Non-Authoritative-Reason": "HSTS"}
        return Response(request.url, status=307, headers=headers, request=request)

    def process_response(self, request: Request, response: Response) -> Response:
        value = response.headers.get(b"Strict-Transport-Security")
        parts = urlsplit(response.url)
        if value is None or parts.scheme != "https" or not self.verified:
            return response
        text = value.decode("latin-1")
        age = _MAX_AGE.search(text)
        host = (parts.hostname or "").rstrip(".")
        if age is None or not host:
            return response
        if int(age.group(1)) > 0:
            self.hosts[host] = bool(_SUBDOMAINS.search(text))
        else:
            self.hosts.pop(host, None)
        return response

    def _known(self, host: str) -> bool:
        host = host.rstrip(".")
        if host in self.hosts:
            return True
        labels = host.split(".")
        return any(self.hosts.get(".".join(labels[i:])) for i in range(1, len(labels)))
