"""Scrapy's DNS resolver (``DNS_RESOLVER``), with the test-only host names of
``SITEMAP_TEST_HOSTS`` (docs/reference.md), as curl's ``--resolve``: the test suite
crawls real HTTPS servers on 127.0.0.1 under the names their certificates carry.
Empty (the default), this is Scrapy's ``CachingThreadedResolver`` unchanged. The start
URL's pre-flight (:mod:`crawler.fetch.origin`) reads the same setting through
:func:`address_of`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.base import ReactorBase


def test_hosts(settings: BaseSettings) -> dict[str, str]:
    """``SITEMAP_TEST_HOSTS``, host names lowercased."""
    hosts: Mapping[str, Any] = settings.getdict("SITEMAP_TEST_HOSTS")
    return {str(name).lower().rstrip("."): str(address) for name, address in hosts.items()}


def address_of(host: str, hosts: Mapping[str, str]) -> str:
    """The address to connect to for *host*: its test address, or the host itself."""
    return hosts.get(host.lower().rstrip("."), host)


class TestHostsResolver(CachingThreadedResolver):
    """Scrapy's resolver; a host name of ``SITEMAP_TEST_HOSTS`` resolves to its address."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self, reactor: ReactorBase, cache_size: int, timeout: float, hosts: Mapping[str, str]
    ) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.hosts = dict(hosts)

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> Self:
        s = crawler.settings
        cache_size = s.getint("DNSCACHE_SIZE") if s.getbool("DNSCACHE_ENABLED") else 0
        return cls(reactor, cache_size, s.getfloat("DNS_TIMEOUT"), test_hosts(s))

    def getHostByName(  # noqa: N802 - Twisted's name
        self, name: str, timeout: Sequence[int] = ()
    ) -> defer.Deferred[str]:
        address = self.hosts.get(name.lower().rstrip("."))
        if address is not None:
            return defer.succeed(address)
        return super().getHostByName(name, timeout)
