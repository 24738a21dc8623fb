"""The crawl's DNS resolver (aiohttp's, for :mod:`crawler.fetch.renderhandler`), with
the test-only host names of ``SITEMAP_TEST_HOSTS`` (docs/reference.md), as curl's
``--resolve``: the test suite crawls real HTTPS servers on 127.0.0.1 under the names
their certificates carry. Empty (the default), this is aiohttp's resolver, each
lookup bounded by ``DNS_TIMEOUT``. The start URL's pre-flight
(:mod:`crawler.fetch.origin`) reads the same setting through
:mod:`crawler.fetch.testhosts`, without importing aiohttp.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aiohttp import DefaultResolver
from aiohttp.abc import AbstractResolver, ResolveResult

from crawler.fetch.testhosts import address_of, test_hosts

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class TestHostsResolver(AbstractResolver):
    """aiohttp's resolver; a host name of ``SITEMAP_TEST_HOSTS`` resolves to its address."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, hosts: Mapping[str, str], timeout: float) -> None:
        self.hosts = dict(hosts)
        self.timeout = timeout
        self.inner = DefaultResolver()

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> TestHostsResolver:
        return cls(test_hosts(settings), settings.getfloat("DNS_TIMEOUT"))

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = self.inner.resolve(address_of(host, self.hosts), port, family)
        results = await asyncio.wait_for(found, self.timeout or None)
        # The name asked for: TLS checks the certificate against it.
        return [
            ResolveResult(
                hostname=host,
                host=r["host"],
                port=r["port"],
                family=r["family"],
                proto=r["proto"],
                flags=r["flags"],
            )
            for r in results
        ]

    async def close(self) -> None:
        await self.inner.close()
