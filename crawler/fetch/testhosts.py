"""The test-only host names of ``SITEMAP_TEST_HOSTS`` (docs/reference.md), as curl's
``--resolve``: read by the crawl's resolver (:mod:`crawler.fetch.resolver`) and by the
start URL's pre-flight (:mod:`crawler.fetch.origin`), which must not import aiohttp
(its 70 ms and 10 MB would then come before the parse workers fork, and twice)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def test_hosts(settings: BaseSettings) -> dict[str, str]:
    """``SITEMAP_TEST_HOSTS``, host names lowercased."""
    hosts: Mapping[str, Any] = settings.getdict("SITEMAP_TEST_HOSTS")
    return {str(name).lower().rstrip("."): str(address) for name, address in hosts.items()}


def address_of(host: str, hosts: Mapping[str, str]) -> str:
    """The address to connect to for *host*: its test address, or the host itself."""
    return hosts.get(host.lower().rstrip("."), host)
