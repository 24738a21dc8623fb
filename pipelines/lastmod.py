"""Lastmod pipeline: the ``<lastmod>`` of a listed page, from evidence only.

The rule (issues #2 and #4, "Honest lastmod"), in order:

1. **Last-Modified.** The final response's ``Last-Modified`` (all three HTTP date
   formats), in UTC, clamped to the ``Date`` header when later; dropped when
   malformed or in the future. It is not used when it looks *volatile*: equal to
   the response's own ``Date`` (stamped at request time; within
   :data:`VOLATILE_SECONDS`, as a server stamps the two a moment apart), or
   different from the previous run's while the page's main content is the same.
2. **Page metadata.** ``article:modified_time``, ``og:updated_time`` or JSON-LD
   ``dateModified`` (``SITEMAP_LASTMOD_FROM_PAGE``).
3. **Content evidence.** The time a change of the page's main-content hash
   (:mod:`crawler.content`: scripts, styles, comments and
   ``SITEMAP_VOLATILE_SELECTORS`` regions left out) was first detected. A page
   seen for the first time has no evidence yet and gets no lastmod; a later run
   that finds the hash changed publishes that run's start time; a run that finds
   it unchanged keeps the previous lastmod byte for byte, whichever rule gave it
   (so a Last-Modified that moves while the content does not keeps the date of the
   last real change).

Never "now" for a page that did not change: a search engine ignores a lastmod that
is not accurate. A 304 replays the previous record, lastmod included.

The previous run comes from the run's state
(:class:`crawler.extensions.runstate.RunState`), and so does "this run's start time".

Settings: ``SITEMAP_LASTMOD_FROM_PAGE``.
Stats: ``sitemap/lastmod/header``, ``sitemap/lastmod/page``, ``sitemap/lastmod/content``,
``sitemap/lastmod/none``, ``sitemap/lastmod/malformed``, ``sitemap/lastmod/volatile``,
``sitemap/lastmod/changed``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from crawler.content import same_content
from crawler.decisions import LISTED
from crawler.extensions.runstate import RunState
from crawler.items import UrlRecord
from crawler.lastmod import http_date_to_w3c, lastmod_datetime
from pipelines.records import RecordPipeline

#: A Last-Modified this close to the response's Date is "now", stamped per request:
#: a server that sets both from the clock may cross a second boundary between them
#: (the nightly test site did, once in a few hundred runs).
VOLATILE_SECONDS = 2

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.previous import PreviousRun

HEADER, PAGE, CONTENT = "header", "page", "content"


class LastmodPipeline(RecordPipeline):
    """*from_page*: fall back to page metadata; *previous*: the previous run, the
    evidence; *run_time*: when this run started (a change detected now is dated so)."""

    def __init__(
        self,
        stats: StatsCollector,
        from_page: bool,
        previous: PreviousRun | None,
        run_time: datetime,
    ) -> None:
        self.stats = stats
        self.from_page = from_page
        self.previous = previous
        self.run_time = run_time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        state = RunState.of(crawler)
        return cls(
            crawler.stats,
            crawler.settings.getbool("SITEMAP_LASTMOD_FROM_PAGE"),
            state.previous,
            state.started,
        )

    def _process(self, item: Any) -> Any:
        if not isinstance(item, UrlRecord) or item.decision != LISTED or item.replayed:
            return item
        prev = self.previous.get(item.key) if self.previous and item.key else None
        item.lastmod, item.lastmod_source = self._header(item, prev), HEADER
        if item.lastmod is None and self.from_page and item.page_lastmod:
            item.lastmod, item.lastmod_source = item.page_lastmod, PAGE
        if item.lastmod is None and item.main_hash is not None:
            item.lastmod_source = CONTENT
            item.lastmod, item.changed_at = self._evidence(item, prev)
        if item.lastmod is None:
            item.lastmod_source = None
        self.stats.inc_value(f"sitemap/lastmod/{item.lastmod_source or 'none'}")
        return item

    def _header(self, item: UrlRecord, prev: dict[str, Any] | None) -> str | None:
        if not item.last_modified:
            return None
        lastmod = http_date_to_w3c(item.last_modified, item.date)
        if lastmod is None:
            self.stats.inc_value("sitemap/lastmod/malformed")
            item.warnings.append(f"ignored malformed Last-Modified {item.last_modified[:100]!r}")
            return None
        if lastmod_datetime(lastmod) > datetime.now(UTC):
            # Clamping to Date needs a Date header; without one a future date is wrong.
            self.stats.inc_value("sitemap/lastmod/malformed")
            item.warnings.append(f"ignored Last-Modified in the future {item.last_modified!r}")
            return None
        # Compared before clamping: a Last-Modified far in the future is clamped to
        # Date, and is then the Date, not a volatile stamp.
        date = http_date_to_w3c(item.date) if item.date else None
        stamped = http_date_to_w3c(item.last_modified)
        if (
            date is not None
            and stamped is not None
            and abs((lastmod_datetime(date) - lastmod_datetime(stamped)).total_seconds())
            <= VOLATILE_SECONDS
        ):
            volatile = "equal to the response's Date"
        elif (
            prev is not None
            and prev["last_modified"]
            and prev["last_modified"] != item.last_modified
            and same_content(
                prev["main_hash"], item.main_hash, prev["content_hash"], item.content_hash
            )
        ):
            volatile = "changed while the content did not"
        else:
            return lastmod
        self.stats.inc_value("sitemap/lastmod/volatile")
        item.warnings.append(f"ignored volatile Last-Modified ({volatile})")
        return None

    def _evidence(
        self, item: UrlRecord, prev: dict[str, Any] | None
    ) -> tuple[str | None, str | None]:
        """(lastmod, changed_at) from the main-content hash and the previous run."""
        # None: a first observation, no evidence of when it changed.
        if prev is None or prev["main_hash"] is None:
            return None, None
        same = same_content(
            prev["main_hash"], item.main_hash, prev["content_hash"], item.content_hash
        )
        if same is None:
            return None, None
        if not same:
            self.stats.inc_value("sitemap/lastmod/changed")
            return self.run_time, self.run_time
        # Unchanged: keep what was published, byte for byte, whatever it came from. A
        # Last-Modified that moved while the content did not (ignored as volatile) must
        # not take away the date of the last real change.
        if prev["lastmod"]:
            return prev["lastmod"], prev["changed_at"] or prev["lastmod"]
        return prev["changed_at"], prev["changed_at"]
