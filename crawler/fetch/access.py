"""Downloader middleware: the credentials of a staging or private site, for it alone.

``--auth``, ``--cookie`` and ``--header`` go with every request to the crawled site's
origin (:func:`crawler.core.urls.origin_of`) and to no other; what is sent when, and
why: docs/crawling.md, "Staging and private sites". Scrapy's ``HttpAuthMiddleware``
takes spider attributes, not settings, and covers neither cookies nor headers: one
middleware for the three keeps the rule in one place. It sits between the cookie (700)
and proxy (750) middlewares, so the cookie joins the ``Cookie`` header after the jar's
cookies and never goes into the jar (which ignores ports, RFC 6265).

Settings: ``SITEMAP_AUTH``, ``SITEMAP_COOKIES``, ``SITEMAP_HEADERS``,
``SITEMAP_TLS_VERIFY``, ``SITEMAP_INSECURE_CREDENTIALS``.
Stats: ``sitemap/access/stripped``, ``sitemap/access/plain_http``,
``sitemap/access/withheld`` (docs/reference.md).
"""

from __future__ import annotations

import base64
import logging
import re
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from crawler.core.logonce import LogOnce
from crawler.core.urls import origin_of
from crawler.ledger.runstate import RunState

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# RFC 9110 5.1: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# RFC 6265 4.1.1: cookie-value characters (quotes around them allowed).
_COOKIE_VALUE = re.compile(r'"?[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*"?')
# Headers this middleware refuses to set: the crawl's own business.
_RESERVED = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` -> ``(name, value)``; ValueError (without the value) when it
    is not one header."""
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not _TOKEN.fullmatch(name):
        raise ValueError("expected 'Name: value' with a header name (letters, digits, -)")
    if name.lower() in _RESERVED:
        raise ValueError(f"the {name} header is the crawl's own")
    if any(c in value for c in "\r\n\0"):
        raise ValueError(f"the value of {name} holds a line break")
    return name, value


def parse_cookie(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` -> ``(name, value)``; ValueError (without the value)."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not _TOKEN.fullmatch(name):
        raise ValueError("expected NAME=VALUE with a cookie name (letters, digits, -, _)")
    if not _COOKIE_VALUE.fullmatch(value):
        raise ValueError(f"the value of cookie {name} holds a character cookies cannot carry")
    return name, value


def parse_auth(text: str) -> tuple[str, str]:
    """``USER:PASSWORD`` -> ``(user, password)``; ValueError (without them)."""
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise ValueError("expected USER:PASSWORD")
    if any(c in text for c in "\r\n\0"):
        raise ValueError("the credentials hold a line break")
    return user, password


class SiteAccessMiddleware:
    """Adds the credentials to requests for *start_url*'s site, and strips them from
    requests for any other (see the module docstring)."""

    def __init__(
        self,
        start_url: str,
        *,
        headers: list[tuple[str, str]],
        auth: tuple[str, str] | None,
        cookies: list[tuple[str, str]],
        stats: StatsCollector,
    ) -> None:
        self.site = origin_of(start_url)
        self.headers = headers
        self.cookies = cookies
        self.stats = stats
        self.authorization = (
            b"Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()) if auth else None
        )
        # What another host must never get: our headers, and Authorization (the
        # Cookie header loses only our cookies: the jar's for that host may stay).
        names = [name for name, _ in headers]
        if auth:
            names.append("Authorization")
        self.ours = [n.encode("latin-1") for n in names]
        self.cookie_names = {n for n, _ in cookies}
        self._warn_plain = LogOnce(logger)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        auth = s.get("SITEMAP_AUTH") or None
        headers = [parse_header(h) for h in s.getlist("SITEMAP_HEADERS")]
        cookies = [parse_cookie(c) for c in s.getlist("SITEMAP_COOKIES")]
        if not (auth or headers or cookies):
            raise NotConfigured("no credentials for the site (SITEMAP_AUTH, _COOKIES, _HEADERS)")
        assert crawler.stats is not None
        if not s.getbool("SITEMAP_TLS_VERIFY") and not s.getbool("SITEMAP_INSECURE_CREDENTIALS"):
            crawler.stats.set_value("sitemap/access/withheld", True)
            raise NotConfigured("certificates unverified: no credentials sent")
        return cls(
            RunState.of(crawler).start_url,  # NotConfigured: not our spider
            headers=headers,
            auth=parse_auth(auth) if auth else None,
            cookies=cookies,
            stats=crawler.stats,
        )

    def process_request(self, request: Request) -> None:
        if origin_of(request.url) == self.site:
            self._add(request)
            return
        # Another origin (http:// of the site, a robots.txt redirect): nothing of ours.
        stripped = False
        for name in self.ours:
            if name in request.headers:
                del request.headers[name]
                stripped = True
        if self.cookie_names and (present := request.headers.get(b"Cookie")):
            kept = self._others(request)
            stripped |= len(kept) != len(present.split(b";"))
            if kept:
                request.headers[b"Cookie"] = "; ".join(kept)
            else:
                del request.headers[b"Cookie"]
        if stripped:
            self.stats.inc_value("sitemap/access/stripped")

    def _others(self, request: Request) -> list[str]:
        """The pairs of the request's Cookie header that are not ours."""
        present = request.headers.get(b"Cookie") or b""
        return [
            c.strip()
            for c in present.decode("latin-1").split(";")
            if c.strip() and c.partition("=")[0].strip() not in self.cookie_names
        ]

    def _add(self, request: Request) -> None:
        for name, value in self.headers:
            request.headers[name] = value
        if self.authorization is not None:
            request.headers[b"Authorization"] = self.authorization
        if request.url.startswith("http:"):
            self.stats.inc_value("sitemap/access/plain_http")
            self._warn_plain("credentials are sent over plain http to %s", request.url)
        if self.cookies:
            mine = [f"{n}={v}" for n, v in self.cookies]
            request.headers[b"Cookie"] = "; ".join([*self._others(request), *mine])
