"""Normalisation pipeline: each decision's normalised URL and dedup key
(:func:`crawler.core.urls.url_key`; an alias gets the key of the URL it is a form of).
A record that comes keyed (the frontier's, the judge's) is taken as it is: normalising
them again was a measurable share of a large crawl (bench/README.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crawler.core.items import Alias, UrlRecord
from crawler.core.urls import Stripping, url_key
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


@dataclass(eq=False)
class NormalizePipeline(RecordPipeline):
    strip: Stripping

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(Stripping.from_settings(crawler.settings))

    def _process(self, item: Any) -> Any:
        if isinstance(item, Alias):
            item.key = url_key(item.url)
            return item
        if isinstance(item, UrlRecord) and item.key is None:
            item.url = self.strip.normalize(item.url) or item.url
            item.key = url_key(item.url)
        return item
