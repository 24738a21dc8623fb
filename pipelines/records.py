"""The base of the pipelines: a pipeline writes ``_process`` for one record and gets both
the lone ones and the :class:`~crawler.core.items.PageRecords` of one response (which
the spider yields as one item: Scrapy's per-item machinery cost more than recording)."""

from __future__ import annotations

from typing import Any

from crawler.core.items import PageRecords


class RecordPipeline:
    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageRecords):
            for record in item.records:
                self._process(record)
            return item
        return self._process(item)

    def _process(self, item: Any) -> Any:
        raise NotImplementedError
