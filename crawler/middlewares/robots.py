"""robots.txt with RFC 9309 semantics, replacing Scrapy's allow-all fallback.

Scrapy's ``RobotsTxtMiddleware`` treats any failure to fetch robots.txt as "allow
all". RFC 9309 (section 2.3.1) says otherwise, and so does issue #2:

* 2xx: parsed, only the first 500 KiB (``SITEMAP_ROBOTS_MAX_BYTES``), a UTF-8 BOM
  tolerated;
* 3xx: followed up to 5 hops (``REDIRECT_MAX_TIMES`` of Scrapy's redirect middleware,
  which robots.txt requests go through); more hops, or a redirect to another host
  (which :mod:`crawler.middlewares.hostguard` refuses), make it "unavailable";
* 4xx other than 429: "unavailable", so everything is allowed;
* 5xx, 429, timeouts and connection errors: "unreachable", so everything is
  disallowed. For the start URL's origin the crawl stops: the spider is closed with
  reason ``robots_unreachable`` and nothing is published.

The parser is Scrapy's ``ROBOTSTXT_PARSER`` (Protego by default), matched against
``ROBOTSTXT_USER_AGENT`` (our product token). Scrapy's ``robots_parsed`` signal is
sent for every parsed file, so the throttle can apply ``Crawl-delay`` and the ledger
can record ``Sitemap:`` lines.

Settings: ``ROBOTSTXT_OBEY``, ``ROBOTSTXT_PARSER``, ``ROBOTSTXT_USER_AGENT``,
``SITEMAP_ROBOTS_MAX_BYTES``.
Meta keys: ``dont_obey_robotstxt``.
Stats: ``robotstxt/*`` as Scrapy's, ``sitemap/robots/unreachable``,
``sitemap/robots/unavailable``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import Deferred

from crawler.agent import product_token
from crawler.extensions.runstate import RunState
from crawler.middlewares.hostguard import OffHostRequest

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"


class RobotsDisallowed(IgnoreRequest):
    """A request that robots.txt does not allow."""


class _DisallowAll(RobotParser):
    """The parser used when robots.txt is unreachable (RFC 9309, 2.3.1.4)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    @classmethod
    def from_crawler(cls, crawler: Crawler, robotstxt_body: bytes) -> Self:
        # A RobotParser, to stand where Scrapy keeps parsers, but never built from a
        # robots.txt body: it stands for one that could not be fetched.
        raise NotImplementedError

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return False

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return None


class StrictRobotsTxtMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._max_bytes = crawler.settings.getint("SITEMAP_ROBOTS_MAX_BYTES")
        if not self._robotstxt_useragent:
            # Match groups on the product token, not the whole User-Agent string.
            self._robotstxt_useragent = product_token(self._default_useragent)

    async def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get("dont_obey_robotstxt"):
            return
        rp = await self.robot_parser(request)
        if isinstance(rp, _DisallowAll):
            self._stats.inc_value("robotstxt/forbidden")
            raise RobotsDisallowed(f"robots.txt unreachable: {rp.reason}")
        try:
            self.process_request_2(rp, request)
        except IgnoreRequest as e:
            raise RobotsDisallowed(str(e)) from None

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        origin = f"{url.scheme}://{url.netloc}"
        # One fetch per origin (RFC 9309 scopes robots.txt to scheme, host and port);
        # requests that arrive meanwhile wait on the same Deferred.
        if origin not in self._parsers:
            waiter: Deferred[RobotParser | None] = Deferred()
            self._parsers[origin] = waiter
            fetched = await self._fetch(origin, request)
            self._parsers[origin] = fetched
            waiter.callback(fetched)
            return fetched
        parser = self._parsers[origin]
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser

    async def _fetch(self, origin: str, request: Request) -> RobotParser | None:
        robotsreq = Request(
            f"{origin}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            meta={"dont_obey_robotstxt": True, "download_maxsize": 10 * 1024 * 1024},
            callback=NO_CALLBACK,
        )
        self._stats.inc_value("robotstxt/request_count")
        try:
            response = await self.crawler.engine.download_async(robotsreq)
        except OffHostRequest as e:
            self._unavailable(origin, f"redirected to another host ({e})")
            return None
        except IgnoreRequest as e:
            # Scrapy's redirect middleware gives up after REDIRECT_MAX_TIMES hops.
            self._unavailable(origin, str(e))
            return None
        except Exception as e:  # timeouts, DNS and connection errors
            return self._unreachable(origin, f"{type(e).__name__}: {e}".rstrip(": "))
        self._stats.inc_value("robotstxt/response_count")
        self._stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        status = response.status
        if 200 <= status < 300:
            return await self._parse(response, request)
        if status == 429 or status >= 500:
            return self._unreachable(origin, f"HTTP {status}")
        if 400 <= status < 500:
            self._unavailable(origin, f"HTTP {status}")
            return None
        # A 3xx that was not followed (no Location) or a 1xx: treat as unavailable.
        self._unavailable(origin, f"HTTP {status}")
        return None

    async def _parse(self, response: Response, request: Request) -> RobotParser:
        body = response.body[: self._max_bytes]
        if body.startswith(UTF8_BOM):
            body = body[len(UTF8_BOM) :]
        rp = build_from_crawler(self._parserimpl, self.crawler, body)
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=rp, request=request
        )
        return rp

    def _unavailable(self, origin: str, reason: str) -> None:
        logger.info("robots.txt of %s unavailable (%s): everything allowed", origin, reason)
        self._stats.inc_value("sitemap/robots/unavailable")
        return None

    def _unreachable(self, origin: str, reason: str) -> _DisallowAll:
        self._stats.inc_value("sitemap/robots/unreachable")
        state = RunState.of(self.crawler)
        parts = urlsplit(state.start_url)
        if origin == f"{parts.scheme}://{parts.netloc}":
            state.fail(f"robots.txt of {origin} is unreachable ({reason}); nothing is crawled")
            call_later(0, self._close, "robots_unreachable")
        else:
            logger.warning(
                "robots.txt of %s is unreachable (%s): everything there is disallowed",
                origin,
                reason,
            )
        return _DisallowAll(reason)

    def _close(self, reason: str) -> None:
        assert self.crawler.engine is not None
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=reason))
