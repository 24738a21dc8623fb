"""robots.txt with RFC 9309 semantics, replacing Scrapy's allow-all fallback.

Scrapy's ``RobotsTxtMiddleware`` treats any failure to fetch robots.txt as "allow
all"; RFC 9309 (2.3.1) does not. What each answer means, the redirects (the only
requests that may leave the host, marked :data:`crawler.fetch.hostguard.ROBOTS_TXT`),
the size limit and the re-fetch: docs/crawling.md, "robots.txt, RFC 9309". The
download stops once past the size limit (``bytes_received`` and
``StopDownload(fail=False)``), so a file larger than any download cap is read. The
parser is :class:`crawler.fetch.robotsrules.RobotsTxtParser` (``ROBOTSTXT_PARSER``).

Settings: ``ROBOTSTXT_OBEY``, ``ROBOTSTXT_PARSER``, ``ROBOTSTXT_USER_AGENT``,
``SITEMAP_ROBOTS_MAX_AGE``, ``SITEMAP_ROBOTS_MAX_BYTES``.
Meta keys: ``dont_obey_robotstxt``; robots.txt requests carry
:data:`~crawler.fetch.hostguard.ROBOTS_TXT`.
Stats: ``robotstxt/*`` as Scrapy's, and ``sitemap/robots/*`` (docs/reference.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from scrapy import exceptions as download
from scrapy import signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest, NotConfigured, StopDownload
from scrapy.http import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import Deferred

from crawler.core.agent import token_of
from crawler.core.decisions import ERROR, ROBOTS
from crawler.fetch.hostguard import ROBOTS_TXT, OffHostRequest
from crawler.fetch.robotsrules import (
    NO_GROUP,
    URL_AUTHORITY,
    UTF8_BOM,
    RobotsTxtParser,
    robots_refusal,
)
from crawler.ledger.runstate import RunState

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# Decompressed bytes of a robots.txt at most (Scrapy's download_maxsize, read by its
# decompression), for a server that compresses it although we ask it not to: more is
# refused (a gzip bomb), and robots.txt is then "unavailable".
DECOMPRESSED_MAX_BYTES = 10 * 1024 * 1024
# Meta key: the bytes of a robots.txt response received so far.
_RECEIVED = "sitemap_robots_received"
# Why a download got no HTTP answer, in a few words, by its error's kind.
_WHY: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (download.DownloadConnectionRefusedError, "connection refused"),
    (download.CannotResolveHostError, "host name not found"),
    ((download.DownloadTimeoutError, TimeoutError), "no answer in time"),
    (
        (download.DownloadFailedError, download.ResponseDataLossError),
        "the connection failed before an answer",
    ),
)


# -- the middleware ------------------------------------------------------------------------


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


class _Nothing:
    """No rules fetched yet for an origin."""


_NOTHING = _Nothing()


class StrictRobotsTxtMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        s = crawler.settings
        self._max_bytes = s.getint("SITEMAP_ROBOTS_MAX_BYTES")
        self._max_age = s.getfloat("SITEMAP_ROBOTS_MAX_AGE")
        # Match groups on the product token, not the whole User-Agent string.
        self._robotstxt_useragent = token_of(self._default_useragent, self._robotstxt_useragent)
        self._fetched_at: dict[str, float] = {}
        # Watched only while a robots.txt is being fetched: the signal comes with every
        # chunk of every page, and a receiver costs each of them a call.
        self._fetching = 0

    async def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get(ROBOTS_TXT):
            # Every hop of a robots.txt fetch: no download cap on the announced size
            # (the download is stopped after SITEMAP_ROBOTS_MAX_BYTES instead).
            request.meta["download_maxsize"] = 0
            request.meta[_RECEIVED] = 0
        if request.meta.get("dont_obey_robotstxt"):
            return
        rp = await self.robot_parser(request)
        if isinstance(rp, _DisallowAll):
            self._stats.inc_value("robotstxt/forbidden")
            raise RobotsDisallowed(f"robots.txt unreachable: {rp.reason}")
        if robots_refusal(rp, request.url, self._robotstxt_useragent or "") is not None:
            self._stats.inc_value("robotstxt/forbidden")
            raise RobotsDisallowed("Forbidden by robots.txt")

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        origin = f"{url.scheme}://{url.netloc}"
        # One fetch per origin (RFC 9309 scopes robots.txt to scheme, host and port)
        # and per SITEMAP_ROBOTS_MAX_AGE; requests that arrive meanwhile wait for it,
        # each on a Deferred of its own (see _waiting).
        cached = self._parsers.get(origin, _NOTHING)
        if isinstance(cached, Deferred):
            return await maybe_deferred_to_future(_waiting(cached))
        if not isinstance(cached, _Nothing) and not self._stale(origin):
            return cached
        waiter: Deferred[RobotParser | None] = Deferred()
        self._parsers[origin] = waiter
        try:
            fetched = await self._fetch(origin, request, cached)
        except Exception as e:  # a bug of ours must not leave the waiters hanging
            logger.exception("robots.txt of %s could not be read", origin)
            fetched = self._unreachable(origin, f"{type(e).__name__}: {e}".rstrip(": "))
        self._parsers[origin] = fetched
        self._fetched_at[origin] = time.monotonic()
        waiter.callback(fetched)
        return fetched

    def allows(self, url: str) -> bool:
        """Whether the rules already fetched for *url*'s origin let us fetch it
        (rules not fetched yet, or no robots.txt: allowed). For what the crawl lists
        without fetching it, such as a page's images (docs/rich.md, "Images")."""
        authority = URL_AUTHORITY.match(url)
        if authority is None:
            return True  # no origin: nothing of ours can be fetched from it
        scheme, _, netloc = authority.group().partition("://")
        rp = self._parsers.get(f"{scheme.lower()}://{netloc}")  # as urlsplit has them
        if isinstance(rp, _DisallowAll):
            return False
        if rp is None or isinstance(rp, Deferred):
            return True
        return bool(rp.allowed(url, self._robotstxt_useragent or ""))

    def _stale(self, origin: str) -> bool:
        if self._max_age <= 0:
            return False
        return time.monotonic() - self._fetched_at.get(origin, 0.0) >= self._max_age

    async def _fetch(
        self, origin: str, request: Request, previous: RobotParser | None | _Nothing
    ) -> RobotParser | None:
        if not isinstance(previous, _Nothing):
            self._stats.inc_value("sitemap/robots/refetched")
            logger.info("robots.txt of %s is older than %s s: fetched again", origin, self._max_age)
        robotsreq = Request(
            f"{origin}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            meta={
                "dont_obey_robotstxt": True,
                ROBOTS_TXT: True,
                "download_maxsize": 0,
                "download_warnsize": 0,
            },
            # Uncompressed, so that the download can stop after the bytes we read.
            headers={"Accept-Encoding": "identity"},
            callback=NO_CALLBACK,
        )
        self._stats.inc_value("robotstxt/request_count")
        try:
            response = await self._download(robotsreq)
        except OffHostRequest as e:
            self._unavailable(origin, f"redirected to another host ({e})")
            return None
        except IgnoreRequest as e:
            # Scrapy's redirect middleware gives up after REDIRECT_MAX_TIMES hops.
            self._unavailable(origin, str(e))
            return None
        except Exception as e:  # timeouts, DNS and connection errors
            return self._unreachable(origin, _why(e), previous, site_down=True)
        self._stats.inc_value("robotstxt/response_count")
        self._stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        status = response.status
        if 200 <= status < 300:
            if response.url != robotsreq.url:
                logger.info("robots.txt of %s read from %s", origin, response.url)
            return await self._parse(origin, response, request)
        if status == 429 or status >= 500:
            return self._unreachable(origin, f"HTTP {status}", previous)
        # 4xx; or a 3xx that was not followed (no Location), or a 1xx.
        self._unavailable(origin, f"HTTP {status}")
        return None

    async def _download(self, request: Request) -> Response:
        if not self._fetching:
            self.crawler.signals.connect(self._bytes_received, signal=signals.bytes_received)
        self._fetching += 1
        try:
            return await self.crawler.engine.download_async(request)
        finally:
            self._fetching -= 1
            if not self._fetching:
                self.crawler.signals.disconnect(self._bytes_received, signal=signals.bytes_received)

    def _bytes_received(self, data: bytes, request: Request) -> None:
        if not request.meta.get(ROBOTS_TXT):
            return
        # The decompression of what came is capped (a gzip bomb is refused).
        request.meta["download_maxsize"] = DECOMPRESSED_MAX_BYTES
        received = request.meta.get(_RECEIVED, 0) + len(data)
        request.meta[_RECEIVED] = received
        if received > self._max_bytes:
            raise StopDownload(fail=False)

    async def _parse(self, origin: str, response: Response, request: Request) -> RobotParser:
        body = response.body
        if len(body) > self._max_bytes or "download_stopped" in response.flags:
            body = whole_lines(body, self._max_bytes)
            self._stats.inc_value("sitemap/robots/truncated")
            logger.info(
                "robots.txt of %s is larger than %s bytes: the lines within them are read",
                origin,
                self._max_bytes,
            )
        if body.startswith(UTF8_BOM):
            body = body[len(UTF8_BOM) :]
        rp = build_from_crawler(self._parserimpl, self.crawler, body)
        self._record(origin, rp, body)
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=rp, request=request
        )
        return rp

    def _unavailable(self, origin: str, reason: str) -> None:
        logger.info("robots.txt of %s unavailable (%s): everything allowed", origin, reason)
        self._stats.inc_value("sitemap/robots/unavailable")
        self._record(origin, None)
        if origin == self._start_origin():
            self._stats.set_value("sitemap/robots/why", reason)

    def _unreachable(
        self,
        origin: str,
        reason: str,
        previous: RobotParser | None | _Nothing = _NOTHING,
        site_down: bool = False,
    ) -> RobotParser | None:
        """*site_down*: no HTTP answer at all (the host cannot be reached), rather
        than a robots.txt answered with a 5xx or 429."""
        self._stats.inc_value("sitemap/robots/unreachable")
        if not isinstance(previous, (_Nothing, _DisallowAll)):
            logger.warning(
                "robots.txt of %s is unreachable (%s): the rules fetched before still apply",
                origin,
                reason,
            )
            return previous
        if origin != self._start_origin():
            logger.warning(
                "robots.txt of %s is unreachable (%s): everything there is disallowed",
                origin,
                reason,
            )
            return _DisallowAll(reason)
        # What the URLs this run did not fetch are: the site cannot be reached, or
        # RFC 9309 (2.3.1.4) disallows everything while its robots.txt cannot be read.
        if site_down:
            message = f"cannot reach {origin} ({reason}); nothing was crawled"
            unfetched = (ERROR, f"not fetched: cannot reach {origin} ({reason})")
        else:  # the summary's robots.txt line; the error says the rest
            self._stats.set_value("sitemap/robots/state", "unreachable")
            self._stats.set_value("sitemap/robots/why", reason)
            message = f"robots.txt of {origin} is unreachable ({reason}); nothing is crawled"
            unfetched = (
                ROBOTS,
                f"not fetched: robots.txt is unreachable ({reason}), which disallows"
                " everything until it can be read (RFC 9309)",
            )
        RunState.of(self.crawler).fail(message, unfetched=unfetched)
        call_later(0, self._close, "robots_unreachable")
        return _DisallowAll(reason)

    def _record(self, origin: str, rp: RobotParser | None, body: bytes | None = None) -> None:
        """The token, and the group that applies, for the start URL's origin; and in
        the ledger's ``meta`` (``robots``), the rules read, so that ``explain`` can
        tell whether a URL the crawl never saw would have been allowed."""
        if origin != self._start_origin():
            return
        token = self._robotstxt_useragent or ""
        group = NO_GROUP
        if isinstance(rp, RobotsTxtParser):
            group = rp.group_name(token)
            if dropped := rp.dropped(token):
                self._stats.set_value("sitemap/robots/rules_dropped", dropped)
        text = None if body is None else body.decode("utf-8", errors="ignore")
        state = "unavailable" if rp is None else "parsed"
        RunState.of(self.crawler).read_robots(
            {"origin": origin, "token": token, "group": group, "state": state, "text": text}
        )

    def _start_origin(self) -> str | None:
        try:
            parts = urlsplit(RunState.of(self.crawler).start_url)
        except NotConfigured:  # a spider without a start URL: no origin is the start
            return None
        return f"{parts.scheme}://{parts.netloc}"

    def _close(self, reason: str) -> None:
        assert self.crawler.engine is not None
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=reason))


def _waiting(shared: Deferred[RobotParser | None]) -> Deferred[RobotParser | None]:
    """A Deferred of one request's own that fires with *shared*'s result. Awaiting
    *shared* itself would consume its result: the first waiter would get the rules
    and every later one None, "no robots.txt", so everything allowed (the requests a
    process takes together before its robots.txt came)."""
    own: Deferred[RobotParser | None] = Deferred()

    def passing(result: RobotParser | None) -> RobotParser | None:
        own.callback(result)
        return result

    shared.addCallback(passing)
    return own


def whole_lines(body: bytes, limit: int) -> bytes:
    """The first *limit* bytes of *body*, less a last line that the limit cuts (a
    body shorter than the limit is an incomplete download: its last line too)."""
    head = body[:limit]
    if len(body) > limit and body[limit : limit + 1] in (b"\n", b"\r"):
        return head  # the last line ends right at the limit
    end = max(head.rfind(b"\n"), head.rfind(b"\r"))
    return head[: end + 1]


def _why(error: Exception) -> str:
    """Why a request got no HTTP answer, in a few words (the download errors' own
    messages repeat themselves: "Connection was refused by other side: 111:
    Connection refused.")."""
    for kinds, why in _WHY:
        if isinstance(error, kinds):
            return why
    text = str(error).strip().rstrip(".")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def robots_allows(crawler: Crawler) -> Callable[[str], bool]:
    """robots.txt's answer for a URL of ours, from the rules the crawl fetched."""

    def allows(url: str) -> bool:
        try:
            robots = crawler.get_downloader_middleware(StrictRobotsTxtMiddleware)
        except RuntimeError:  # no engine yet
            return True
        return robots is None or robots.allows(url)

    return allows
