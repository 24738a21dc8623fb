"""The site's answer to its start URL, asked once before a crawl.

A domain as people type it (``example.com``) usually answers with a redirect to the
real origin (``https://www.example.com/``). :func:`resolve_origin` follows those
redirects within the registrable domain, so every later check (scope, robots.txt,
credentials, published URLs) reads the final origin; which redirects, and http or
https: docs/crawling.md, "The start URL". The crawl, the audit and a distributed
crawl's coordinator call it through :func:`crawler.commands.options.resolve_start`.

Settings: ``SITEMAP_MAX_REDIRECTS``, ``SITEMAP_TLS_VERIFY``, ``SITEMAP_CA_FILE``,
``SITEMAP_TEST_HOSTS``, ``USER_AGENT``, ``DOWNLOAD_TIMEOUT``.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from crawler.core.agent import product_token
from crawler.core.urls import bare_host, host_port, normalize_url, origin_of
from crawler.fetch.robotsrules import RobotsRules
from crawler.fetch.testhosts import address_of, test_hosts
from crawler.fetch.tls import INSECURE_HINT, TlsPolicy, certificate_problem

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings
    from tldextract import TLDExtract

#: The statuses followed as the site's answer.
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Seconds the pre-flight waits for an answer at most (a site that does not answer in
#: time is left to the crawl, which says why).
_TIMEOUT = 10.0
#: Bytes of an HTML answer read for a meta refresh, and of a robots.txt (RFC 9309 2.5).
_HEAD_BYTES = 64 * 1024
_ROBOTS_BYTES = 500 * 1024
#: OpenSSL's reasons when a plain-HTTP server answered the TLS handshake.
_PLAIN_HTTP = frozenset(
    {"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"}
)


class OriginError(Exception):
    """The start URL cannot be crawled as it answers (one line)."""


class _Unreachable(Exception):
    """Nothing answered (refused, timed out, no such host)."""


class _NotAsked(Exception):
    """robots.txt does not let the pre-flight ask (a disallow, or no robots.txt to read):
    the crawl starts there and reports it."""


@dataclass(frozen=True)
class Hop:
    """One redirect followed: from *url*, how (``301``, ``meta refresh``)."""

    url: str
    how: str


@dataclass(frozen=True)
class Origin:
    """Where a crawl starts: *url*, reached from what was *typed* through *hops*."""

    typed: str
    url: str
    hops: tuple[Hop, ...] = ()
    #: The scheme was chosen here: *typed* had none.
    guessed: bool = False

    def line(self) -> str | None:
        """The summary's line saying where the crawl went, or None when it went where
        it was told."""
        if self.hops:
            how = ", ".join(hop.how for hop in self.hops)
            first = self.hops[0].url
            said = f"{self.typed}: " if self.guessed else ""
            return f"{said}{first} redirects to {self.url} ({how}): crawling {self.url}"
        if self.guessed:
            return f"{self.typed}: crawling {self.url}"
        return None

    def rebase(self, url: str) -> str:
        """*url* on the final origin when it was on the first one asked (another start
        URL of the site as typed); else unchanged."""
        first = self.hops[0].url if self.hops else self.url
        normal = normalize_url(url)
        if normal is None or origin_of(normal) != origin_of(first) or first == self.url:
            return url
        old, new = urlsplit(normal), urlsplit(self.url)
        return old._replace(scheme=new.scheme, netloc=new.netloc).geturl()


def registrable_domain(host: str) -> str:
    """The registrable domain of *host* (``www.example.co.uk`` -> ``example.co.uk``) by
    the public suffix list; an address is its own; an unknown suffix (``.test``,
    ``.internal``) counts as one label."""
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return host
    found = public_suffix_list()(host)
    if found.suffix and found.domain:
        return f"{found.domain}.{found.suffix}"
    return ".".join(host.split(".")[-2:])


@functools.cache
def public_suffix_list() -> TLDExtract:
    """tldextract with the list bundled with the package: no network fetch (the crawl
    talks to the crawled host alone), no cache written. Its private part too: two
    github.io sites are two owners, as browsers see them."""
    import tldextract

    return tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
    )


def followed(start: str, source: str, target: str) -> bool:
    """Whether a redirect from *source* to *target* is the site's own answer to a crawl
    of *start*: within *start*'s registrable domain, or http to https of one host."""
    a, b, s = origin_of(source), origin_of(target), origin_of(start)
    if a is None or b is None or s is None:
        return False
    if a[1] == b[1] and a[0] == "http" and b[0] == "https":
        return True
    return registrable_domain(b[1]) == registrable_domain(s[1])


def resolve_origin(text: str, settings: BaseSettings) -> Origin:
    """Where the crawl of *text* (a URL, or a host without its scheme) starts; raise
    OriginError with one line when it cannot (a certificate that fails, a redirect to
    another site, a loop, too many hops)."""
    user_agent = settings.get("USER_AGENT") or "sitemap-crawler"
    asker = _Asker(
        TlsPolicy.from_settings(settings),
        test_hosts(settings),
        user_agent,
        settings.get("ROBOTSTXT_USER_AGENT") or product_token(user_agent),
        min(settings.getfloat("DOWNLOAD_TIMEOUT", 30), _TIMEOUT),
    )
    normal = normalize_url(text)
    guessed = normal is None or host_port(normal) is None
    if guessed:
        bare = bare_host(text)
        url = normalize_url(f"https://{bare}") if bare else None
        if bare is None or url is None:
            raise OriginError(f"not an http(s) URL: {text!r}")
        try:
            answer = asker.ask(url, fallback=":" in (urlsplit(url).netloc or ""))
        except _NotAsked:
            return Origin(text, url, guessed=True)
        except _Unreachable:
            url = normalize_url(f"http://{bare}") or url
            try:
                answer = asker.ask(url)
            except (_Unreachable, _NotAsked):
                return Origin(text, url, guessed=True)
    else:
        assert normal is not None
        url = normal
        try:
            answer = asker.ask(url)
        except (_Unreachable, _NotAsked):
            return Origin(text, url)
    start, hops, seen = url, [], {url}
    limit = settings.getint("SITEMAP_MAX_REDIRECTS", 10)
    while answer is not None:
        how, target = answer
        if not followed(start, url, target):
            raise OriginError(
                f"{url} redirects to {target} ({how}), another site: not followed; to crawl "
                f"that site: sitemap-crawler crawl {target}"
            )
        hops.append(Hop(url, how))
        if target in seen:
            chain = " -> ".join([*(hop.url for hop in hops), target])
            raise OriginError(f"{text}: a redirect loop ({chain})")
        if len(hops) > limit:
            raise OriginError(
                f"{text}: more than {limit} redirects (SITEMAP_MAX_REDIRECTS), last to {target}"
            )
        seen.add(target)
        url = target
        try:
            answer = asker.ask(url)
        except (_Unreachable, _NotAsked):
            break
    return Origin(text, url, tuple(hops), guessed)


@dataclass
class _Asker:
    """Plain GETs, one connection each, to the address the test hosts give; each URL
    only once its origin's robots.txt allows it."""

    policy: TlsPolicy
    hosts: Mapping[str, str]
    user_agent: str
    token: str
    timeout: float
    robots: dict[tuple[str, str, int], RobotsRules | None] = field(default_factory=dict)

    @functools.cached_property
    def context(self) -> ssl.SSLContext:  # on the first https request: 20 ms of CPU
        return self.policy.ssl_context()

    def ask(self, url: str, *, fallback: bool = False) -> tuple[str, str] | None:
        """*url*'s redirect as ``(how, target)``, or None when it answers otherwise.
        _Unreachable when nothing answers (*fallback*: a plain-HTTP answer to the TLS
        handshake too), _NotAsked when robots.txt does not let it be asked."""
        rules = self._robots(url, fallback)
        if rules is None or not rules.allowed(url, self.token):
            raise _NotAsked(url)
        status, headers, body = self._get(url, _HEAD_BYTES)
        if status in REDIRECTS:
            location = headers.get("location")
            target = normalize_url(urljoin(url, location.strip())) if location else None
            return (str(status), target) if target else None
        kind = headers.get("content-type", "").lower()
        if status != 200 or "html" not in kind:
            return None
        from scrapy.http import HtmlResponse
        from scrapy.utils.response import get_meta_refresh

        page = HtmlResponse(url, body=body, headers={"Content-Type": kind})
        interval, refresh = get_meta_refresh(page, ignore_tags=["noscript"])
        target = normalize_url(refresh) if refresh and interval == 0 else None
        return ("meta refresh", target) if target else None

    def _robots(self, url: str, fallback: bool) -> RobotsRules | None:
        """The robots.txt rules of *url*'s origin (RFC 9309 2.3.1: 4xx allows
        everything; 5xx or no answer, nothing: None), its redirects followed (5 hops)."""
        origin = origin_of(url)
        assert origin is not None
        if origin in self.robots:
            return self.robots[origin]
        where, rules = urljoin(url, "/robots.txt"), None
        first = True
        try:
            for _ in range(6):
                status, headers, body = self._get(where, _ROBOTS_BYTES, fallback=fallback)
                first = fallback = False
                location = headers.get("location")
                if status in REDIRECTS and location:
                    where = normalize_url(urljoin(where, location.strip())) or where
                    continue
                if status == 200:
                    rules = RobotsRules.parse(body)
                elif 400 <= status < 500:
                    rules = RobotsRules("")
                break
            else:  # more than 5 redirects: unavailable, as a 4xx (RFC 9309 2.3.1.2)
                rules = RobotsRules("")
        except _Unreachable:
            if first:  # nothing answers at this origin at all
                raise
        self.robots[origin] = rules
        return rules

    def _get(
        self, url: str, most: int, *, fallback: bool = False
    ) -> tuple[int, dict[str, str], bytes]:
        """GET *url*: its status, headers (names lowercased) and at most *most* bytes."""
        parts = urlsplit(url)
        found = origin_of(url)
        assert found is not None
        scheme, host, port = found
        try:
            sock = socket.create_connection((address_of(host, self.hosts), port), self.timeout)
        except (OSError, UnicodeError) as e:
            raise _Unreachable(str(e)) from None
        try:
            if scheme == "https":
                sock = self._handshake(sock, url, host, fallback)
            connection = http.client.HTTPConnection(host, port, timeout=self.timeout)
            connection.sock = sock
            connection.putrequest(
                "GET",
                (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                skip_host=True,
                skip_accept_encoding=True,
            )
            connection.putheader("Host", parts.netloc)
            connection.putheader("User-Agent", self.user_agent)
            connection.putheader("Accept-Encoding", "identity")
            connection.endheaders()
            response = connection.getresponse()
            headers = {name.lower(): value for name, value in response.getheaders()}
            return response.status, headers, response.read(most)
        except (OSError, http.client.HTTPException) as e:
            raise _Unreachable(str(e)) from None
        finally:
            sock.close()

    def _handshake(self, sock: socket.socket, url: str, host: str, fallback: bool) -> ssl.SSLSocket:
        try:
            return self.context.wrap_socket(sock, server_hostname=host)
        except ssl.SSLError as e:
            problem = certificate_problem(e)
            if problem is not None:
                raise OriginError(
                    f"{url}: TLS certificate refused ({problem}); {INSECURE_HINT}"
                ) from None
            if fallback and e.reason in _PLAIN_HTTP:
                raise _Unreachable("plain HTTP on that port") from None
            raise OriginError(f"{url}: TLS failed ({e.reason or e}); {INSECURE_HINT}") from None
