"""The base of the pipelines: each takes one record at a time, lone or in a batch.

The spider yields the records and aliases of one response as one
:class:`~crawler.core.items.PageRecords` item (Scrapy's per-item machinery cost more than
the recording); a pipeline built on :class:`RecordPipeline` writes ``_process`` for
one record and gets both kinds of item.
"""

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
