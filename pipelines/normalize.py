"""Normalisation pipeline: give each decision its normalised URL and dedup key.

The frontier normalises and keys every URL it discovers, and the page judge keys the
URL of every response, so a record that comes with its ``key`` is taken as it is
(normalising the frontier's records again was a measurable share of a large crawl,
bench/README.md); any other is normalised here, so that the ledger never holds a URL
in any other form. ``key`` is the dedup key (:func:`crawler.core.urls.url_key`); an
alias gets the key of the URL it is a form of.

Settings: ``SITEMAP_STRIP_PARAMS``, ``SITEMAP_STRIP_EXTRA``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.core.items import Alias, UrlRecord
from crawler.core.urls import Stripping, normalize_url, url_key
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class NormalizePipeline(RecordPipeline):
    def __init__(self, strip_params: bool, extra_strip: tuple[str, ...]) -> None:
        self.strip_params = strip_params
        self.extra_strip = extra_strip

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        strip = Stripping.from_settings(crawler.settings)
        return cls(strip.params, strip.extra)

    def _process(self, item: Any) -> Any:
        if isinstance(item, Alias):
            item.key = url_key(item.url)
            return item
        if isinstance(item, UrlRecord) and item.key is None:
            item.url = (
                normalize_url(
                    item.url, strip_params=self.strip_params, extra_strip=self.extra_strip
                )
                or item.url
            )
            item.key = url_key(item.url)
        return item
