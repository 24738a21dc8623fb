"""Lastmod pipeline: the ``<lastmod>`` of a listed page, from evidence only (the
rules are docs/lastmod.md's). The first that gives a date wins: the
``Last-Modified`` header unless malformed, in the future or volatile (``_header``); the
page's first declaration that passes the guards (``_guard``; template dates are found
as the crawl goes, and the pages that took one are decided again in ``close_spider``);
the content's evidence (``_evidence``). Never "now" for a page that did not change.

Stats: ``sitemap/lastmod/*``."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import InitVar, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from crawler.core import clock
from crawler.core.decisions import LISTED
from crawler.core.items import UrlRecord
from crawler.core.lastmod import http_date_to_w3c, lastmod_datetime
from crawler.ledger.runstate import RunState
from crawler.page.content import same_page
from pipelines.records import RecordPipeline

#: A Last-Modified this close to the response's Date is "now", stamped per request:
#: a server that sets both from the clock may cross a second boundary between them
#: (the nightly test site did, once in a few hundred runs).
VOLATILE_SECONDS = 2
#: A date-time a page declares this close to the response's Date is "now" too: a
#: theme stamps it while it builds the page, before the server sends it.
PAGE_VOLATILE_SECONDS = 5
#: A page's date later than the response's Date by more than this is in the future
#: (a date without a time: later than the day after Date's, whatever the zone).
FUTURE_TOLERANCE = timedelta(minutes=5)
#: A page's date before this is a placeholder (1970-01-01, 0001-01-01), not evidence.
EARLIEST = datetime(1995, 1, 1, tzinfo=UTC)
#: A date that at least this many pages, and more than half of the pages dated by
#: their metadata, declare alike is a template date (a site-wide one), not evidence.
TEMPLATE_PAGES = 5

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.ledger.ledger import Ledger
    from crawler.ledger.previous import PreviousRun

HEADER, PAGE, CONTENT = "header", "page", "content"
#: The verdict of a template date, in a page's page_dates.
TEMPLATE_WHY = "a template date: many pages of the site declare it alike"


@dataclass(eq=False)
class LastmodPipeline(RecordPipeline):
    """*from_page*: fall back to page metadata; *previous*: the previous run, the
    evidence; *started*: when this run started (a change detected now is dated so);
    *ledger*: the running ledger, where the pages that took a template date before it
    was known are decided again when the crawl is over."""

    stats: StatsCollector
    from_page: bool
    previous: PreviousRun | None
    started: InitVar[datetime]
    ledger: Ledger | None = None
    run_time: str = field(init=False)
    # How many pages took each date from their metadata (before the template rule),
    # of how many pages so dated; the dates found to be templates.
    declared: Counter[str] = field(init=False, default_factory=Counter)
    dated: int = field(init=False, default=0)
    templates: set[str] = field(init=False, default_factory=set)

    def __post_init__(self, started: datetime) -> None:
        self.run_time = started.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        state = RunState.of(crawler)
        return cls(
            crawler.stats,
            crawler.settings.getbool("SITEMAP_LASTMOD_FROM_PAGE"),
            state.previous,
            state.started,
            state.ledger,
        )

    def _process(self, item: Any) -> Any:
        if not isinstance(item, UrlRecord) or item.decision != LISTED or item.replayed:
            return item
        prev = self.previous.get(item.key) if self.previous and item.key else None
        item.lastmod, item.lastmod_source = self._header(item, prev), HEADER
        if item.lastmod is None and self.from_page and item.page_dates:
            item.lastmod, item.lastmod_from = self._page(item, prev)
            item.lastmod_source = PAGE
        if item.lastmod is None and item.main_hash is not None:
            item.lastmod_source = CONTENT
            hashes = (item.own_hash, item.main_hash, item.content_hash)
            item.lastmod, item.changed_at = self._evidence(hashes, prev)
        if item.lastmod is None:
            item.lastmod_source = None
        self.stats.inc_value(f"sitemap/lastmod/{item.lastmod_source or 'none'}")
        return item

    # -- the page's own word ----------------------------------------------------------

    def _page(self, item: UrlRecord, prev: dict[str, Any] | None) -> tuple[str | None, str | None]:
        """The first date the page declares that passes the guards, and where it was
        declared; every declaration's verdict goes into ``item.page_verdicts``."""
        date = http_date_to_w3c(item.date) if item.date else None
        sent = lastmod_datetime(date) if date is not None else None
        verdicts: list[list[str | None]] = []
        for declared in item.page_dates:
            why = declared.why
            if why is None and declared.value is not None:
                kind, why = self._guard(declared.label, declared.value, sent, item, prev)
                if kind is not None:
                    self.stats.inc_value(f"sitemap/lastmod/page_ignored/{kind}")
            verdicts.append([declared.label, declared.value or declared.raw, why])
        # The first that passes (template aside) counts towards the template rule.
        if (first := next((v for v in verdicts if v[2] is None), None)) is not None:
            value = str(first[1])
            self.dated += 1
            self.declared[value] += 1
            count = self.declared[value]
            if value not in self.templates and count >= TEMPLATE_PAGES and 2 * count > self.dated:
                self.templates.add(value)
                logger.info(
                    "%s pages declare the date %s alike: a template date, not believed "
                    "(logged once)",
                    count,
                    value,
                )
        chosen = self._choose(verdicts)
        item.page_verdicts = json.dumps(verdicts) if verdicts else None
        return chosen

    def _choose(self, verdicts: list[list[str | None]]) -> tuple[str | None, str | None]:
        """The first acceptable declaration that is no template date (marked so)."""
        for verdict in verdicts:
            if verdict[2] is None and verdict[1] in self.templates:
                verdict[2] = TEMPLATE_WHY
                self.stats.inc_value("sitemap/lastmod/page_ignored/template")
            elif verdict[2] is None:
                return verdict[1], verdict[0]
        return None, None

    def _guard(
        self,
        label: str,
        value: str,
        sent: datetime | None,
        item: UrlRecord,
        prev: dict[str, Any] | None,
    ) -> tuple[str | None, str | None]:
        """Why the date *value* the page declares (at *label*) is not believed, as
        (stat, words), or (None, None); *sent*: the response's Date."""
        moment = lastmod_datetime(value)
        if moment < EARLIEST:
            return "early", "before 1995: a placeholder, not evidence"
        reference = sent or clock.now()
        if len(value) == 10:  # a date: it may be a day ahead in the site's zone
            future = moment.date() > (reference + timedelta(days=1)).date()
        else:
            future = moment > reference + FUTURE_TOLERANCE
        if future:
            return "future", "in the future (after the response's Date)"
        # The previous run believed the page's date at this label: a date that moved
        # while the content did not is a stamp; one next to the response's Date, on
        # a page whose own content changed since, is a real edit made just before.
        old: dict[str, Any] = prev or {}
        believed = old.get("lastmod_source") == PAGE and old.get("lastmod_from") == label
        same = (
            same_page(old, item.own_hash, item.main_hash, item.content_hash) if believed else None
        )
        if (
            sent is not None
            and len(value) > 10
            and abs((moment - sent).total_seconds()) <= PAGE_VOLATILE_SECONDS
            and not (believed and same is False)
        ):
            return "volatile", (
                f"volatile: within {PAGE_VOLATILE_SECONDS} seconds of the response's Date "
                "(stamped when the page was built)"
            )
        if believed and old["lastmod"] not in (None, "", value) and same:
            return "volatile", "volatile: changed since the last run while the content did not"
        return None, None

    def close_spider(self) -> None:
        """The pages that took a template date before it was found to be one are
        decided again: the next declaration that passes, or the content's evidence."""
        if not self.templates:
            return
        self.stats.set_value(
            "sitemap/lastmod/template_dates", {v: self.declared[v] for v in sorted(self.templates)}
        )
        if self.ledger is None:
            return
        for value in sorted(self.templates):
            for row in list(self.ledger.page_dated(value)):
                verdicts = json.loads(row["page_dates"] or "[]")
                lastmod, lastmod_from = self._choose(verdicts)
                source: str | None = PAGE
                changed_at: str | None = None
                if lastmod is None:
                    prev = self.previous.get(row["key"]) if self.previous else None
                    hashes = (row.get("own_hash"), row["main_hash"], row["content_hash"])
                    lastmod, changed_at = self._evidence(hashes, prev)
                    source = CONTENT if lastmod is not None and hashes[1] is not None else None
                self.stats.inc_value("sitemap/lastmod/page", -1)
                self.stats.inc_value(f"sitemap/lastmod/{source or 'none'}")
                self.ledger.set_lastmod(
                    row["key"], lastmod, source, lastmod_from, changed_at, json.dumps(verdicts)
                )
        self.ledger.commit()

    def _header(self, item: UrlRecord, prev: dict[str, Any] | None) -> str | None:
        raw = item.last_modified
        if not raw:
            return None
        lastmod = http_date_to_w3c(raw, item.date)
        # Compared before clamping: a Last-Modified far in the future is clamped to
        # Date, and is then the Date, not a volatile stamp.
        date = http_date_to_w3c(item.date) if item.date else None
        stamped = http_date_to_w3c(raw)
        if lastmod is None:
            stat, why = "malformed", f"malformed Last-Modified {raw[:100]!r}"
        elif lastmod_datetime(lastmod) > clock.now():
            # Clamping to Date needs a Date header; without one a future date is wrong.
            stat, why = "malformed", f"Last-Modified in the future {raw!r}"
        elif (
            date is not None
            and stamped is not None
            and abs((lastmod_datetime(date) - lastmod_datetime(stamped)).total_seconds())
            <= VOLATILE_SECONDS
        ):
            stat, why = "volatile", "volatile Last-Modified (equal to the response's Date)"
        elif (
            prev is not None
            and prev["last_modified"]
            and prev["last_modified"] != raw
            and same_page(prev, item.own_hash, item.main_hash, item.content_hash)
        ):
            stat, why = "volatile", "volatile Last-Modified (changed while the content did not)"
        else:
            return lastmod
        self.stats.inc_value(f"sitemap/lastmod/{stat}")
        item.warnings.append(f"ignored {why}")
        return None

    def _evidence(
        self, hashes: tuple[str | None, str | None, str | None], prev: dict[str, Any] | None
    ) -> tuple[str | None, str | None]:
        """(lastmod, changed_at) from the page's content hashes (own, main, whole body)
        and the previous run."""
        # None: a first observation, no evidence of when it changed.
        if prev is None or prev["main_hash"] is None:
            return None, None
        same = same_page(prev, *hashes)
        if same is None:
            return None, None
        if not same:
            self.stats.inc_value("sitemap/lastmod/changed")
            return self.run_time, self.run_time
        # Unchanged: keep what was published, byte for byte, whatever it came from. A
        # Last-Modified that moved while the content did not (ignored as volatile) must
        # not take away the date of the last real change.
        if prev["lastmod"] and prev["lastmod"] not in self.templates:
            return prev["lastmod"], prev["changed_at"] or prev["lastmod"]
        if prev["changed_at"] in self.templates:
            return None, None
        return prev["changed_at"], prev["changed_at"]
