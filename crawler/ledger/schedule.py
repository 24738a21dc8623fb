"""The revisit schedule: when each known URL is next verified, by the evidence of its
changes (docs/nightly.md#the-revisit-schedule).

An unchanged page's interval grows by :data:`GROW`, a changed one's shrinks by
:data:`SHRINK` (Apache Nutch's adaptive schedule), between the minimum and the maximum
interval. A full night spreads the next verifications evenly over the nights up to
each URL's interval, so no later night carries the whole site.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from crawler.core.decisions import REPLAYABLE, STATUS, TOO_LARGE
from crawler.core.lastmod import lastmod_datetime

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: The interval's factor after a fetch that found the page unchanged, and changed.
GROW, SHRINK = 1.2, 0.8
DAY = 86400.0

#: The settings whose change since the last night changes what is crawled or listed:
#: then the night is a full one (every URL verified, the due dates spread again).
BASIS_SETTINGS = (
    "ROBOTSTXT_OBEY", "SITEMAP_ALTERNATE_HOSTS", "SITEMAP_BASE_URL", "SITEMAP_CALENDAR_WINDOW",
    "SITEMAP_EXCLUDE", "SITEMAP_HREFLANG", "SITEMAP_IMAGE_HOSTS", "SITEMAP_IMAGES",
    "SITEMAP_INCLUDE", "SITEMAP_LISTED_TYPES", "SITEMAP_MAX_DEPTH", "SITEMAP_MAX_PAGES",
    "SITEMAP_MAX_REDIRECTS", "SITEMAP_NEWS_PUBLICATION", "SITEMAP_RENDER",
    "SITEMAP_RENDER_INCLUDE", "SITEMAP_SOFT404_CONTENT", "SITEMAP_SOFT404_PROBE",
    "SITEMAP_START_URLS", "SITEMAP_STRIP_EXTRA", "SITEMAP_STRIP_PARAMS",
    "SITEMAP_TRAP_MAX_QUERY_VARIANTS", "SITEMAP_TRAP_MAX_REPEATS", "SITEMAP_TRAP_MAX_SEGMENTS",
    "SITEMAP_URL_FILE", "SITEMAP_VIDEOS", "SITEMAP_VOLATILE_SELECTORS", "USER_AGENT",
)  # fmt: skip

#: The ledger's schedule columns (crawler.ledger.ledger.SCHEMA), carried over as they
#: are for a URL not verified tonight.
COLUMNS = ("verified_at", "verified_date", "revisit_days", "due_at", "checks", "changes")


def basis(settings: BaseSettings, start_url: str) -> str:
    """A digest of what decides the crawled and listed set: the start URL and the
    :data:`BASIS_SETTINGS` (compared with the last night's, kept in the ledger)."""
    values = {name: settings.get(name) for name in BASIS_SETTINGS}
    text = json.dumps([start_url, values], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def keepable(row: dict[str, Any]) -> bool:
    """Whether a previous record can stand for tonight without a request: decided by a
    final answer of the site (not a failure, a 5xx or a 429), and scheduled."""
    if row.get("due_at") is None or row.get("status") is None:
        return False
    decision, status = row["decision"], int(row["status"])
    if decision in REPLAYABLE or decision == TOO_LARGE:
        return status < 500 and status != 429
    return decision == STATUS and 400 <= status < 500 and status != 429


@dataclass
class RevisitPolicy:
    """The schedule's rules (see the module docstring), in days; *now*: the run's
    start (crawler.core.clock), in seconds; *full*: tonight verifies every URL."""

    min_days: float
    max_days: float
    now: float
    full: bool = False
    _spread: Counter[int] = field(default_factory=Counter)

    @classmethod
    def from_settings(cls, settings: BaseSettings, now: float) -> RevisitPolicy:
        low = settings.getfloat("SITEMAP_REVISIT_MIN")
        high = max(low, settings.getfloat("SITEMAP_REVISIT_MAX"))
        return cls(low, high, now, settings.getbool("SITEMAP_REVISIT_FULL"))

    @property
    def slack(self) -> float:
        """Seconds: a URL due this much after the run's start is due tonight."""
        return self.min_days * DAY / 2

    def due(self, row: dict[str, Any]) -> bool:
        """Whether the previous *row* must be verified tonight."""
        return self.full or not keepable(row) or float(row["due_at"]) <= self.now + self.slack

    def overdue(self, row: dict[str, Any]) -> int:
        """Whole nights *row* is overdue by (0: due tonight, or unscheduled)."""
        due = row.get("due_at")
        if due is None or self.full:
            return 0
        return max(0, int((self.now + self.slack - float(due)) // (self.min_days * DAY)))

    def clamp(self, days: float) -> float:
        return min(self.max_days, max(self.min_days, days))

    def first_interval(self, dates: list[str]) -> float:
        """The interval of a URL never scheduled: the age of its latest own date
        (modified or published) when it has one (a page that has not changed for a
        year is verified at the maximum; one edited yesterday, soon); else the maximum
        on a full night (the whole site is new to the schedule), and the minimum for a
        URL found on a scheduled night (a page just published is the likeliest to be
        edited, and a date it gave too close to its fetch to be believed is read
        again the next night)."""
        ages = [
            age
            for value in dates
            if (moment := _moment(value)) is not None
            and (age := (self.now - moment.timestamp()) / DAY) >= 0  # not a date to come
        ]
        if ages:
            return self.clamp(min(ages))
        return self.max_days if self.full else self.min_days

    def verified(
        self, prev: dict[str, Any] | None, changed: bool | None, dates: list[str]
    ) -> dict[str, Any]:
        """The schedule columns of a URL fetched tonight: *prev*, its previous row
        (None: new); *changed*: whether its own content changed (None: nothing to
        compare); *dates*: its own dates (for a first interval)."""
        interval = prev.get("revisit_days") if prev is not None else None
        checks = int(prev.get("checks") or 0) if prev is not None else 0
        changes = int(prev.get("changes") or 0) if prev is not None else 0
        if interval is None:
            days = self.first_interval(dates)
        else:
            days = self.clamp(float(interval) * (SHRINK if changed else GROW))
        if prev is not None and prev.get("due_at") is not None and changed is not None:
            checks += 1
            changes += 1 if changed else 0
        if self.full:
            # A full night (or the first with a schedule): the next verifications
            # spread evenly over the nights up to the interval.
            nights = max(1, math.ceil(days / self.min_days - 1e-9))
            slot = 1 + self._spread[nights] % nights
            self._spread[nights] += 1
            due = self.now + slot * self.min_days * DAY
        else:
            due = self.now + days * DAY
        return {
            "verified_at": self.now,
            "revisit_days": round(days, 4),
            "due_at": due,
            "checks": checks,
            "changes": changes,
        }


def later(signal: str, known: str | None, *, same_second: bool = False) -> bool:
    """Whether a signal's modification time *signal* is later than *known*, the
    page's lastmod or the time it was verified (both the site's own times; an
    unreadable one is no evidence); *same_second*: or equal (a verification and an
    edit in the same second of the site's clock, which counts whole seconds). A day
    alone (``2024-05-01``) is later only on a later day."""
    moment = _moment(signal)
    if moment is None:
        return False
    if known is None:
        return True
    before = _moment(known)
    if before is None:
        return True
    if len(signal.strip()) <= 10 or len(known.strip()) <= 10:
        return moment.date() > before.date()
    return moment >= before if same_second else moment > before


def _moment(value: str) -> datetime | None:
    try:
        return lastmod_datetime(value)
    except (TypeError, ValueError):
        return None
