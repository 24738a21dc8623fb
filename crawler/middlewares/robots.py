"""robots.txt with RFC 9309 semantics, replacing Scrapy's allow-all fallback.

Scrapy's ``RobotsTxtMiddleware`` treats any failure to fetch robots.txt as "allow
all". RFC 9309 (section 2.3.1) says otherwise, and so does issue #2:

* 2xx: parsed, the first 500 KiB (``SITEMAP_ROBOTS_MAX_BYTES``) cut at a line
  boundary (a line that the limit cuts is dropped, not read as a shorter rule), a
  UTF-8 BOM tolerated. It is asked for uncompressed, and the download stops once
  more than that came (Scrapy's ``bytes_received`` signal and
  ``StopDownload(fail=False)``), so a file larger than any download cap is read,
  not refused;
* 3xx: followed up to 5 hops (``REDIRECT_MAX_TIMES`` of Scrapy's redirect middleware,
  which robots.txt requests go through), to another host too (RFC 9309 2.3.1.2:
  ``example.com/robots.txt`` -> ``www.example.com/robots.txt``): the rules found
  apply to the original host. Only ``/robots.txt`` may be fetched elsewhere
  (:data:`crawler.middlewares.hostguard.ROBOTS_TXT` marks the request); more hops, or
  a redirect to another path on another host, make it "unavailable";
* 4xx other than 429: "unavailable", so everything is allowed;
* 5xx, 429, timeouts and connection errors: "unreachable", so everything is
  disallowed. For the start URL's origin the crawl stops: the spider is closed with
  reason ``robots_unreachable`` and nothing is published.

The rules of an origin are fetched again once older than ``SITEMAP_ROBOTS_MAX_AGE``
(24 hours; RFC 9309 2.4), so a crawl that runs for days honours changes; requests
wait for the new rules. A re-fetch that finds robots.txt unreachable keeps the
rules it had (RFC 9309 2.4 allows the cached copy then) instead of stopping.

The parser (:class:`RobotsTxtParser`, ``ROBOTSTXT_PARSER``) *replaces* Protego's line
handling and group selection and *keeps* Protego for matching:

* lines end at CR, LF or CRLF; ``#`` starts a comment; a key is read before the
  first ``:`` (or, with no colon, as the first of two words); ``user-agent``,
  ``allow``, ``disallow`` (and the usual misspellings), ``sitemap`` and
  ``crawl-delay`` are known, any other line is an other record (RFC 9309 2.2.4)
  that is ignored and does not end a group (Protego let it split one: rules after
  it were lost);
* a group is one or more ``user-agent`` lines and the rules after them, ended by the
  next ``user-agent`` line after a rule (``crawl-delay`` counts as one here, as
  Protego and the crawlers that read it have it: a group of only ``Crawl-delay``
  for one bot is common); rules before any ``user-agent`` line belong to no group;
* a ``user-agent`` line names the agent spelled by its leading letters, digits,
  ``_`` and ``-`` (``*`` alone, or followed by a space, is every agent). The group
  that applies is the one whose name *equals* our product token, case-insensitively
  (RFC 9309 2.2.1; Protego matched a name found anywhere at a word start in ours, so
  ``User-agent: sitemap`` or ``User-agent: s`` applied to ``sitemap-crawler``);
  groups naming us are merged, and ``*`` groups (merged) apply when none does;
* the rules of the selected group are handed to Protego as one ``*`` group: its
  wildcards, ``$``, longest match (``allow`` winning a tie), percent-encoding and
  its speed are kept as they are. ``Crawl-delay`` is the largest the selected
  groups give.

Settings: ``ROBOTSTXT_OBEY``, ``ROBOTSTXT_PARSER``, ``ROBOTSTXT_USER_AGENT``,
``SITEMAP_ROBOTS_MAX_AGE``, ``SITEMAP_ROBOTS_MAX_BYTES``.
Meta keys: ``dont_obey_robotstxt``; robots.txt requests carry
:data:`~crawler.middlewares.hostguard.ROBOTS_TXT`.
Stats: ``robotstxt/*`` as Scrapy's, ``sitemap/robots/unreachable``,
``sitemap/robots/unavailable``, ``sitemap/robots/truncated``,
``sitemap/robots/refetched``, and for the start URL's origin
``sitemap/robots/token`` (our product token) and ``sitemap/robots/group`` (the group
that applied: our token, ``*``, or ``none``).
"""

from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote, urlsplit

from protego import Protego
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
from scrapy.utils.python import to_unicode
from twisted.internet.defer import Deferred

from crawler.agent import is_product_token, product_token, token_of
from crawler.extensions.runstate import RunState
from crawler.middlewares.hostguard import ROBOTS_TXT, OffHostRequest

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"
# Decompressed bytes of a robots.txt at most (Scrapy's download_maxsize, read by its
# decompression), for a server that compresses it although we ask it not to: more is
# refused (a gzip bomb), and robots.txt is then "unavailable".
DECOMPRESSED_MAX_BYTES = 10 * 1024 * 1024
# Meta key: the bytes of a robots.txt response received so far.
_RECEIVED = "sitemap_robots_received"

# Group names of the start URL's robots.txt, as recorded in sitemap/robots/group.
EVERY_AGENT = "*"
NO_GROUP = "none"


# -- the parser: line handling and group selection (RFC 9309), matching by Protego ------

_EOL = re.compile(r"\r\n|\r|\n")
_AGENT = re.compile(r"[A-Za-z0-9_-]*")
# Characters that end a line for Protego (str.splitlines) but not for RFC 9309: escaped
# in the rules handed to it, as its own percent-encoding would write them.
_PROTEGO_EOL = {ord(c): quote(c) for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}

_USER_AGENT, _ALLOW, _DISALLOW, _SITEMAP, _CRAWL_DELAY = range(5)
_KEYS = {
    "user-agent": _USER_AGENT,
    "useragent": _USER_AGENT,
    "user agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "dissallow": _DISALLOW,
    "dissalow": _DISALLOW,
    "disalow": _DISALLOW,
    "diasllow": _DISALLOW,
    "disallaw": _DISALLOW,
    "sitemap": _SITEMAP,
    "site-map": _SITEMAP,
    "crawl-delay": _CRAWL_DELAY,
    "crawl delay": _CRAWL_DELAY,
}


@dataclass(eq=False)
class _Group:
    agents: list[str] = field(default_factory=list)
    rules: list[tuple[bool, str]] = field(default_factory=list)  # (allow, pattern)
    delays: list[str] = field(default_factory=list)


def _key_value(line: str) -> tuple[int | None, str] | None:
    """(key, value) of one line (None: a known key; the value stripped), or None for
    a blank or unreadable line."""
    line = line.split("#", 1)[0].strip()
    if not line:
        return None
    key, colon, value = line.partition(":")
    key = " ".join(key.split()).lower()
    if colon and (key in _KEYS or " " not in key):
        return _KEYS.get(key), value.strip()
    # No colon, or one inside the value ("Sitemap https://..."): "<key> <value>".
    words = line.split()
    for n in (1, 2):
        known = _KEYS.get(" ".join(words[:n]).lower())
        if known is not None and len(words) > n:
            return known, " ".join(words[n:])
    return (None, value.strip()) if colon else None


def _agent_name(value: str) -> str:
    """The agent a ``user-agent`` line names (lowercase; "" for none)."""
    if value.startswith("*") and (len(value) == 1 or value[1].isspace()):
        return EVERY_AGENT
    match = _AGENT.match(value)
    return match.group(0).lower() if match else ""


def _delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class RobotsRules:
    """A parsed robots.txt: its groups and ``Sitemap:`` lines (see the module
    docstring), and, per product token, the group that applies."""

    def __init__(self, text: str) -> None:
        self.groups: list[_Group] = []
        self.sitemaps: list[str] = []
        self._selected: dict[str, tuple[str, Protego | None, float | None]] = {}
        current: _Group | None = None
        in_rules = False
        for line in _EOL.split(text):
            found = _key_value(line)
            if found is None:
                continue
            key, value = found
            if key == _USER_AGENT:
                if current is None or in_rules:
                    current = _Group()
                    self.groups.append(current)
                    in_rules = False
                name = _agent_name(value)
                if name:
                    current.agents.append(name)
            elif key in (_ALLOW, _DISALLOW):
                if current is None:
                    continue  # a rule outside any group
                in_rules = True
                if value:
                    current.rules.append((key == _ALLOW, value))
            elif key == _CRAWL_DELAY and current is not None:
                # Not RFC 9309's, but written as a line of a group like a rule (a
                # "Crawl-delay"-only group for one bot must not reach the next one).
                in_rules = True
                current.delays.append(value)
            elif key == _SITEMAP and value:
                self.sitemaps.append(value)
            # Anything else is another record: ignored, and the group goes on.

    @classmethod
    def parse(cls, body: bytes) -> Self:
        """Parse a robots.txt body (UTF-8; undecodable bytes are dropped)."""
        return cls(body.decode("utf-8-sig", errors="ignore"))

    def group_name(self, token: str) -> str:
        """The group that applies to *token*: the token itself (a group naming it,
        in any case), ``*`` or ``none``."""
        return self._select(token)[0]

    def allowed(self, url: str, token: str) -> bool:
        matcher = self._select(token)[1]
        return matcher is None or matcher.can_fetch(url, EVERY_AGENT)

    def crawl_delay(self, token: str) -> float | None:
        return self._select(token)[2]

    def _select(self, token: str) -> tuple[str, Protego | None, float | None]:
        key = token.lower()
        selected = self._selected.get(key)
        if selected is None:
            name = token
            groups = [g for g in self.groups if key in g.agents] if key else []
            if not groups:
                name = EVERY_AGENT
                groups = [g for g in self.groups if EVERY_AGENT in g.agents]
            if not groups:
                selected = (NO_GROUP, None, None)
            else:
                lines = [f"User-agent: {EVERY_AGENT}"]
                for group in groups:
                    for allow, pattern in group.rules:
                        pattern = pattern.translate(_PROTEGO_EOL)
                        lines.append(f"{'Allow' if allow else 'Disallow'}: {pattern}")
                delays = [d for g in groups for v in g.delays if (d := _delay(v)) is not None]
                selected = (
                    name,
                    Protego.parse("\n".join(lines) + "\n"),
                    max(delays) if delays else None,
                )
            self._selected[key] = selected
        return selected


class RobotsTxtParser(RobotParser):
    """Scrapy's parser interface over :class:`RobotsRules` (``ROBOTSTXT_PARSER``).
    ``rp`` is the parsed file, as for Scrapy's Protego parser (``rp.sitemaps``)."""

    def __init__(self, body: bytes) -> None:
        self.rp = RobotsRules.parse(body)

    @classmethod
    def from_crawler(cls, crawler: Crawler, robotstxt_body: bytes) -> Self:
        return cls(robotstxt_body)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return self.rp.allowed(to_unicode(url), _token(user_agent))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self.rp.crawl_delay(_token(user_agent))

    def group_name(self, user_agent: str | bytes) -> str:
        return self.rp.group_name(_token(user_agent))


def _token(user_agent: str | bytes) -> str:
    text = to_unicode(user_agent)
    return text if is_product_token(text) else product_token(text)


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
        crawler.signals.connect(self._bytes_received, signal=signals.bytes_received)

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
        try:
            self.process_request_2(rp, request)
        except IgnoreRequest as e:
            raise RobotsDisallowed(str(e)) from None

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
        without fetching it, such as a page's images (issue #14)."""
        parts = urlsplit(url)
        rp = self._parsers.get(f"{parts.scheme}://{parts.netloc}")
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
            response = await self.crawler.engine.download_async(robotsreq)
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
        if origin == self._start_origin():
            state = RunState.of(self.crawler)
            state.fail(
                f"cannot reach {origin} ({reason}); nothing was crawled"
                if site_down
                else f"robots.txt of {origin} is unreachable ({reason}); nothing is crawled"
            )
            call_later(0, self._close, "robots_unreachable")
        else:
            logger.warning(
                "robots.txt of %s is unreachable (%s): everything there is disallowed",
                origin,
                reason,
            )
        return _DisallowAll(reason)

    def _record(self, origin: str, rp: RobotParser | None, body: bytes | None = None) -> None:
        """The token, and the group that applies, for the start URL's origin; and in
        the ledger's ``meta`` (``robots``), the rules read, so that ``explain`` can
        tell whether a URL the crawl never saw would have been allowed."""
        if origin != self._start_origin():
            return
        token = self._robotstxt_useragent or ""
        self._stats.set_value("sitemap/robots/token", token)
        group = NO_GROUP
        if isinstance(rp, RobotsTxtParser):
            group = rp.group_name(token)
        self._stats.set_value("sitemap/robots/group", group)
        ledger = RunState.of(self.crawler).ledger
        if ledger is not None:
            ledger.set_meta(
                "robots",
                {
                    "origin": origin,
                    "token": token,
                    "group": group,
                    "state": "unavailable" if rp is None else "parsed",
                    "text": None if body is None else body.decode("utf-8", errors="ignore"),
                },
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
    process takes together before its robots.txt came: issue 23)."""
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
    from scrapy import exceptions as download

    if isinstance(error, download.DownloadConnectionRefusedError):
        return "connection refused"
    if isinstance(error, download.CannotResolveHostError):
        return "host name not found"
    if isinstance(error, (download.DownloadTimeoutError, TimeoutError)):
        return "no answer in time"
    if isinstance(error, (download.DownloadFailedError, download.ResponseDataLossError)):
        return "the connection failed before an answer"
    text = str(error).strip().rstrip(".")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
