"""Calendars and date sequences: endless by construction, cut by a window
(docs/crawling.md#traps-learned).

:func:`date_of` recognises the dates in a URL; its *template* is its address with the
date taken out, whatever the date's unit. Only date-sequence navigation (a link from a
page of the same template) is cut: within ``SITEMAP_CALENDAR_WINDOW`` of today, and at
most :data:`STEPS` dates from where the crawl entered the sequence from another page,
so the cut depends on the links, not on the order pages were fetched in.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta
from urllib.parse import parse_qsl, urlsplit

from crawler.core import clock
from crawler.core import decisions as d
from crawler.core.decisions import Refusal

_SEGMENT = r"(?:19|20|21)\d\d"
# A date in the path: whole segments, year[/-]month[/-]day, month and day optional.
_PATH_DATE = re.compile(
    rf"(?<=/)(?P<y>{_SEGMENT})(?:(?P<sep>[/-])(?P<m>0?[1-9]|1[0-2])"
    r"(?:(?P=sep)(?P<d>0?[1-9]|[12]\d|3[01]))?)?(?=/|$|\.html?$)"
)
_VALUE_DATE = re.compile(rf"({_SEGMENT})-?(0[1-9]|1[0-2])(?:-?(0[1-9]|[12]\d|3[01]))?\Z")
_YEAR = ("year", "y", "yr")
_MONTH = ("month", "m", "mon", "mo")
_DAY = ("day", "d")
_DATE = ("date", "day", "dt", "when", "month", "ym")

#: Sequences whose entries are remembered at most (bounds memory: every dated blog
#: post is a sequence of its own); beyond it, a new sequence's first step counts
#: from the page it came from.
MAX_SEQUENCES = 100_000

#: How far date-sequence navigation is followed from where the sequence was
#: entered, each way (days, months or years).
STEPS = 2

_DURATION = re.compile(r"(\d+)\s*([dwmy]?)\Z", re.I)
_DAYS = {"": 1, "d": 1, "w": 7, "m": 30, "y": 365}


def parse_window(text: str | int | float) -> timedelta:
    """``365d``, ``52w``, ``12m``, ``1y`` or a number of days; 0 turns the rule off."""
    match = _DURATION.match(str(text).strip())
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 365d, 52w, 12m, 1y)")
    return timedelta(days=int(match.group(1)) * _DAYS[match.group(2).lower()])


@dataclass(frozen=True, slots=True)
class Dated:
    """The date a URL stands for, as the days it covers, and its template."""

    template: str
    first: date
    last: date
    label: str


def _span(y: int, m: int | None, d: int | None) -> tuple[date, date, str] | None:
    try:
        if m is None:
            return date(y, 1, 1), date(y, 12, 31), f"{y}"
        if d is None:
            return date(y, m, 1), date(y, m, calendar.monthrange(y, m)[1]), f"{y}-{m:02}"
        return date(y, m, d), date(y, m, d), f"{y}-{m:02}-{d:02}"
    except ValueError:
        return None


def date_of(url: str) -> Dated | None:
    """The date of *url* (the forms docs/crawling.md#traps-learned lists), or None."""
    parts = urlsplit(url)
    path = parts.path
    # The last date in the path is the sequence's.
    found = next(reversed(list(_PATH_DATE.finditer(path))), None)
    if found is not None:
        m, d = found.group("m"), found.group("d")
        span = _span(int(found.group("y")), int(m) if m else None, int(d) if d else None)
        if span is not None:
            template = path[: found.start()] + "{date}" + path[found.end() :]
            if parts.query:
                template += "?" + "&".join(sorted(n for n, _ in parse_qsl(parts.query, True)))
            return Dated(f"{parts.netloc}{template}", *span)
    if not parts.query:
        return None
    params = parse_qsl(parts.query, keep_blank_values=True)
    lower = {n.lower(): v for n, v in params}
    span = None
    used: set[str] = set()
    for name in _DATE:
        if valued := _VALUE_DATE.match(lower.get(name, "")):
            y, m, d = valued.groups()
            span, used = _span(int(y), int(m), int(d) if d else None), {name}
            break
    if span is None:
        year = next((n for n in _YEAR if re.fullmatch(_SEGMENT, lower.get(n, ""))), None)
        if year is None:
            return None
        month = next((n for n in _MONTH if lower.get(n, "").isdigit()), None)
        day = next((n for n in _DAY if lower.get(n, "").isdigit()), None) if month else None
        span = _span(
            int(lower[year]),
            int(lower[month]) if month else None,
            int(lower[day]) if day else None,
        )
        used = {n for n in (year, month, day) if n}
    if span is None:
        return None
    # One sequence whatever its unit: a month links its days in the same calendar.
    names = sorted({n for n, _ in params if n.lower() not in used}) + ["{date}"]
    return Dated(f"{parts.netloc}{path}?" + "&".join(names), *span)


class CalendarRule:
    """Cuts date-sequence navigation beyond *window* of *today* (None: the day the
    run started), and further than *steps* dates (days, months or years, as the
    sequence counts) from where the crawl entered the sequence (0: no limit)."""

    def __init__(self, window: timedelta, steps: int = STEPS, today: date | None = None) -> None:
        self.window, self.steps = window, steps
        self.today = today or clock.now().date()
        # Template -> the dates where the crawl entered it (linked from elsewhere).
        self.entries: dict[str, set[date]] = {}

    def check(self, url: str, referrer: str | None) -> Refusal | None:
        """Why *url*, found on *referrer*, is not followed, or None."""
        if not self.window or referrer is None:
            return None
        dated = date_of(url)
        if dated is None:
            return None
        came_from = date_of(referrer)
        entries = self.entries.get(dated.template)
        if entries is None:
            entries = set()
            if len(self.entries) < MAX_SEQUENCES:
                self.entries[dated.template] = entries
        if came_from is None or came_from.template != dated.template:
            entries.add(dated.first)  # entered from another page: not navigation
            return None
        if not entries:
            entries.add(came_from.first)
        days = self.window.days
        if dated.last < self.today - self.window or dated.first > self.today + self.window:
            return Refusal(
                d.CALENDAR, d.RULE_CALENDAR, "calendar-window", {"label": dated.label, "days": days}
            )
        if self.steps and min(_distance(dated, e) for e in entries) > self.steps:
            return Refusal(d.CALENDAR, d.RULE_CALENDAR, "calendar-steps", {"limit": self.steps})
        return None


def _distance(dated: Dated, entry: date) -> int:
    """How many of the sequence's units (days, months, years) *dated* is from *entry*."""
    first = dated.first
    if dated.first == dated.last:
        return abs((first - entry).days)
    if first.month == 1 and dated.last.month == 12:
        return abs(first.year - entry.year)
    return abs((first.year - entry.year) * 12 + first.month - entry.month)
