"""What changed lately: the delta feed's entries, from the ledger.

Which pages, with which change time (the first run is :mod:`pipelines.history`'s
baseline): docs/around.md, "The delta feed". Settings: ``SITEMAP_FEED``,
``SITEMAP_FEED_DAYS``, ``SITEMAP_FEED_MAX``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from crawler.core.lastmod import lastmod_datetime
from crawler.publish.feed import FeedEntry

if TYPE_CHECKING:
    from crawler.ledger.ledger import Ledger


def _when(value: str) -> datetime | None:
    try:
        return lastmod_datetime(value)
    except ValueError:
        return None


def feed_entries(ledger: Ledger, now: datetime, days: int, most: int) -> list[FeedEntry]:
    """The feed's entries as of *now* (see the module docstring)."""
    start = now - timedelta(days=days)
    since = (start - timedelta(days=1)).strftime("%Y-%m-%d")  # text compare: a day's slack
    found: list[tuple[datetime, str, str, str | None]] = []
    for loc, lastmod, listed_at, moved_at, title in ledger.changed_rows(since):
        times = [
            (t, text) for text in (lastmod, listed_at, moved_at) if text and (t := _when(text))
        ]
        if not times:
            continue
        when, text = max(times, key=lambda pair: pair[0])
        if start <= when <= now + timedelta(days=1):
            found.append((when, loc, text, title))
    found.sort(key=lambda item: (-item[0].timestamp(), item[1]))
    return [FeedEntry(loc, text, title) for _, loc, text, title in found[:most]]
