"""Normalisation pipeline: give each decision its normalised URL, dedup key and
published address.

The spider already normalised the URL to decide whether it was new; a record
that comes with its ``key`` (the spider's ``discover``, which normalised and keyed
it to check its seen-set) is taken as it is, and any other is normalised here, so
that the ledger never holds a URL in any other form. (Normalising the records of
``discover`` again was 4% of a rust-doc crawl.) ``key`` is the dedup key
(:func:`crawler.urls.url_key`); ``loc`` the published address of a listed page
(:class:`crawler.publicurl.PublicUrls`, which applies ``SITEMAP_BASE_URL``),
checked against the schema's rules for ``<loc>`` so that one bad URL is recorded as
``invalid-url`` rather than failing the whole publish.

Settings: ``SITEMAP_BASE_URL``, ``SITEMAP_STRIP_PARAMS``, ``SITEMAP_STRIP_EXTRA``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.entry import check_loc
from crawler.items import INVALID, LISTED, Alias, UrlRecord
from crawler.publicurl import PublicUrls
from crawler.urls import normalize_url, url_key
from pipelines.records import RecordPipeline

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class NormalizePipeline(RecordPipeline):
    def __init__(self, crawler: Crawler, strip_params: bool, extra_strip: tuple[str, ...]) -> None:
        self.crawler = crawler
        self.strip_params = strip_params
        self.extra_strip = extra_strip
        self.public: PublicUrls | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        return cls(
            crawler,
            s.getbool("SITEMAP_STRIP_PARAMS", True),
            tuple(s.getlist("SITEMAP_STRIP_EXTRA")),
        )

    def open_spider(self) -> None:
        start_url = self.crawler.spider.start_url  # type: ignore[union-attr]
        self.public = PublicUrls.from_settings(start_url, self.crawler.settings)

    def _process(self, item: Any) -> Any:
        if isinstance(item, Alias):
            item.key = url_key(item.url)
            return item
        if not isinstance(item, UrlRecord):
            return item
        assert self.public is not None
        if item.key is None:  # a record of discover() comes normalised and keyed
            item.url = (
                normalize_url(
                    item.url, strip_params=self.strip_params, extra_strip=self.extra_strip
                )
                or item.url
            )
            item.key = url_key(item.url)
        if item.decision == LISTED:
            item.loc = self.public.loc(item.url)
            try:
                check_loc(item.loc or "")
            except ValueError as e:
                item.decision, item.reason, item.loc = INVALID, f"not a valid <loc>: {e}", None
        return item
