"""Many sitemap entries at once: the ledger's rows, checked in batches, with sections.

:class:`EntryBatch` holds consecutive entries as two lists (locs, lastmods) and checks
them together: publishing a million URLs, a Python object and a few calls per URL cost
more than compressing the files at gzip level 6. :class:`EntryRows` turns database rows
into either form (:meth:`crawler.ledger.ledger.Ledger.listed_entries` returns one).

A row is ``(loc, lastmod, extras, section, changefreq, priority)`` (:data:`ROW_COLUMNS`)
or any prefix of two columns or more. ``extras`` is ``None`` (a plain entry, which takes
the batch path) or the JSON of the entry's extensions (:mod:`crawler.sitemaps.extras`),
checked and rendered one by one. ``section`` names the section of the set the entry is
written in (:func:`check_section`; ``None``: the default one); rows come ordered by
section, the default first (``ORDER BY section, loc``), and the writer starts a
section's files when it changes. ``changefreq`` and ``priority`` are the row's own
(``"daily"``, ``"0.8"``; a bad one refuses the set, naming the loc), or ``None`` for
the set-wide values :class:`EntryRows` is given.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from itertools import groupby, islice
from typing import Any, TypeVar

from crawler.sitemaps.entry import (
    COMMON_LASTMODS,
    COMMON_LOCS,
    ChangeFreq,
    SitemapEntry,
    check_lastmod,
    check_loc,
)
from crawler.sitemaps.extras import entry_extras
from crawler.sitemaps.limits import MAX_LOC_LENGTH, MIN_LOC_LENGTH

__all__ = [
    "EntryBatch",
    "EntryRow",
    "EntryRows",
    "MAX_SECTION_LENGTH",
    "NEWS_SECTION",
    "ROW_COLUMNS",
    "check_section",
]

#: The longest section name (:func:`check_section`).
MAX_SECTION_LENGTH = 40
#: The news sitemaps' section name (``sitemap-news-NNNNN-<h>``), reserved.
NEWS_SECTION = "news"
# Starts with a letter: a name of digits would make "sitemap-NAME-NNNNN-<h>"
# look like the start of a default section's "sitemap-NNNNN-<h>".
_SECTION_NAME = re.compile(rf"[a-z][a-z0-9-]{{0,{MAX_SECTION_LENGTH - 1}}}", re.ASCII)


def check_section(section: str) -> None:
    """Raise ``ValueError`` unless ``section`` may name a section of a sitemap set: 1
    to 40 characters of ``a-z``, ``0-9`` and ``-``, the first a letter, not ``news``. A
    narrow alphabet: the name is part of file names (``sitemap-NAME-NNNNN-<h>.xml.gz``).
    """
    if not isinstance(section, str) or _SECTION_NAME.fullmatch(section) is None:
        raise ValueError(
            f"a section name must be 1 to {MAX_SECTION_LENGTH} characters of a-z, 0-9 and '-',"
            f" the first a letter, not {section!r:.80}"
        )
    if section == NEWS_SECTION:
        raise ValueError(f"the section name {NEWS_SECTION!r} is reserved for the news sitemaps")


# A ledger's rows carry few distinct values (a rule's), each checked once. typed:
# else True, 1 and 1.0 would share an entry, and a bool priority is refused.
_cached_changefreq = functools.lru_cache(maxsize=256, typed=True)(SitemapEntry._checked_changefreq)
_cached_priority = functools.lru_cache(maxsize=256, typed=True)(SitemapEntry._checked_priority)

_T = TypeVar("_T")


def _row_value(
    value: object,
    loc: object,
    what: str,
    cached: Callable[[object], _T],
    check: Callable[[object], _T],
) -> _T:
    """A row's own changefreq or priority, checked; ``ValueError`` naming the loc."""
    try:
        try:
            return cached(value)
        except TypeError:  # unhashable: checked without the cache
            return check(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad {what} of {str(loc)[:80]!r}: {exc}") from None


def _row_changefreq(value: object, loc: object) -> ChangeFreq:
    return _row_value(
        value, loc, "changefreq", _cached_changefreq, SitemapEntry._checked_changefreq
    )


def _row_priority(value: object, loc: object) -> Decimal:
    return _row_value(value, loc, "priority", _cached_priority, SitemapEntry._checked_priority)


@dataclass(frozen=True, slots=True)
class EntryBatch:
    """Consecutive sitemap entries of one section, checked together: the same rules,
    and the same ``ValueError`` for the first bad entry, as a :class:`SitemapEntry` of
    each in turn. The common case is checked a list at a time (one regex match over
    the values joined with ``"\n"``, ``datetime.fromisoformat`` through ``map()``);
    a batch with anything else is checked entry by entry. ``utc``: every lastmod is a
    date or a ``+00:00`` date-time without a fraction (the writer compares them as text).

    ``extras``: each entry's extensions as JSON text or ``None``; the entries that have
    some are checked :class:`SitemapEntry` objects in ``extended``, by position.
    ``changefreq`` and ``priority`` are every entry's unless ``row_changefreqs`` or
    ``row_priorities`` give one its own (``None``: the batch's); the values written are
    then in ``changefreqs`` and ``priorities``, one per entry (``None``: the batch's
    for all). A bad value raises ``ValueError`` naming the loc.
    """

    locs: list[str]
    lastmods: list[str | None]
    changefreq: ChangeFreq | None = None
    priority: Decimal | None = None
    extras: list[str | None] | None = None
    section: str | None = None
    row_changefreqs: Sequence[object] | None = field(default=None, repr=False)
    row_priorities: Sequence[object] | None = field(default=None, repr=False)
    utc: bool = field(init=False, default=False, repr=False, compare=False)
    extended: dict[int, SitemapEntry] = field(
        init=False, default_factory=dict, repr=False, compare=False
    )
    changefreqs: list[ChangeFreq | None] | None = field(
        init=False, default=None, repr=False, compare=False
    )
    priorities: list[Decimal | None] | None = field(
        init=False, default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        count = len(self.locs)
        for name in ("lastmods", "extras", "row_changefreqs", "row_priorities"):
            values = getattr(self, name)
            if values is not None and len(values) != count:
                raise ValueError(f"an EntryBatch needs as many {name} as locs")
        extras = self.extras
        row_changefreqs, row_priorities = self.row_changefreqs, self.row_priorities
        if self.changefreq is not None:
            object.__setattr__(
                self, "changefreq", SitemapEntry._checked_changefreq(self.changefreq)
            )
        if self.priority is not None:
            object.__setattr__(self, "priority", SitemapEntry._checked_priority(self.priority))
        if self.section is not None and count:
            try:
                check_section(self.section)
            except ValueError as exc:
                raise ValueError(f"bad section of {str(self.locs[0])[:80]!r}: {exc}") from None
        own = row_changefreqs is not None or row_priorities is not None
        locs = self.locs
        present = [lastmod for lastmod in self.lastmods if lastmod is not None]
        try:
            locs_text, lastmods_text = "\n".join(locs), "\n".join(present)
            fast = (
                min(map(len, locs), default=MIN_LOC_LENGTH) >= MIN_LOC_LENGTH
                and max(map(len, locs), default=0) <= MAX_LOC_LENGTH
                # A "\n" inside a value would pass for a separator.
                and locs_text.count("\n") == len(locs) - 1
                and COMMON_LOCS.fullmatch(locs_text) is not None
            )
            utc = not present or (
                lastmods_text.count("\n") == len(present) - 1
                and COMMON_LASTMODS.fullmatch(lastmods_text) is not None
            )
            # maxlen=0: run fromisoformat over them (it raises for "2025-02-30"), keep nothing.
            deque(map(datetime.fromisoformat, present), maxlen=0)
            if own and fast and utc:
                # Every loc and lastmod is good: the rows' own values, in one go.
                object.__setattr__(
                    self,
                    "changefreqs",
                    _own_values(row_changefreqs, self.changefreq, _cached_changefreq),
                )
                object.__setattr__(
                    self, "priorities", _own_values(row_priorities, self.priority, _cached_priority)
                )
        except (TypeError, ValueError):
            # Not a str, a date that does not exist, a bad changefreq or priority:
            # the entry-by-entry check below raises the error for the first such entry.
            fast = utc = False
        if not (fast and utc):
            self._check_rows()
        elif extras is not None:
            # Every loc, lastmod and value is good: the extras are all that can fail.
            changefreqs, priorities = self.changefreqs, self.priorities
            for i, text in enumerate(extras):
                if text is not None:
                    self._extend(
                        i,
                        text,
                        self.changefreq if changefreqs is None else changefreqs[i],
                        self.priority if priorities is None else priorities[i],
                    )
        object.__setattr__(self, "utc", utc)

    def _check_rows(self) -> None:
        # Row by row, in order, so that the first bad row raises, whatever is bad in it
        # (loc, lastmod, changefreq, priority, extras), as SitemapEntry would: without
        # making the entry (its extension fields cost a third more than the check).
        extras, row_changefreqs = self.extras, self.row_changefreqs
        row_priorities = self.row_priorities
        count = len(self.locs)
        changefreqs = None if row_changefreqs is None else [self.changefreq] * count
        priorities = None if row_priorities is None else [self.priority] * count
        for i, (loc, lastmod) in enumerate(zip(self.locs, self.lastmods, strict=True)):
            check_loc(loc)
            if lastmod is not None:
                check_lastmod(lastmod)
            changefreq, priority = self.changefreq, self.priority
            # (In the loop the lists are not empty: truth is "not None".)
            if changefreqs and row_changefreqs and (value := row_changefreqs[i]) is not None:
                changefreq = changefreqs[i] = _row_changefreq(value, loc)
            if priorities and row_priorities and (value := row_priorities[i]) is not None:
                priority = priorities[i] = _row_priority(value, loc)
            text = None if extras is None else extras[i]
            if text is not None:
                self._extend(i, text, changefreq, priority)
        object.__setattr__(self, "changefreqs", changefreqs)
        object.__setattr__(self, "priorities", priorities)

    def _extend(
        self, i: int, text: str, changefreq: ChangeFreq | None, priority: Decimal | None
    ) -> None:
        # The entry of row i, kept when it has extensions. Its other values are
        # checked already: an error here is its extras' (*text*), naming the loc.
        loc = self.locs[i]
        try:
            entry = SitemapEntry(loc, self.lastmods[i], changefreq, priority, **entry_extras(text))
        except ValueError as exc:
            raise ValueError(f"bad extras of {loc[:80]!r}: {exc}") from None
        if entry.extended:
            self.extended[i] = entry

    def __len__(self) -> int:
        return len(self.locs)

    def __iter__(self) -> Iterator[SitemapEntry]:
        count, extended = len(self.locs), self.extended
        changefreqs = self.changefreqs or [self.changefreq] * count
        priorities = self.priorities or [self.priority] * count
        for i, (loc, lastmod, changefreq, priority) in enumerate(
            zip(self.locs, self.lastmods, changefreqs, priorities, strict=True)
        ):
            if i in extended:
                yield extended[i]
            else:
                yield SitemapEntry(loc, lastmod, changefreq, priority)


def _own_values(
    values: Sequence[object] | None, default: _T | None, check: Callable[[object], _T]
) -> list[_T | None] | None:
    # The values entries are written with: a row's own (checked), else the default.
    return None if values is None else [default if v is None else check(v) for v in values]


#: A row of :class:`EntryRows` (see the module's docstring), or its first 2 to 5 columns.
EntryRow = (
    tuple[str, str | None]
    | tuple[str, str | None, str | None]
    | tuple[str, str | None, str | None, str | None]
    | tuple[str, str | None, str | None, str | None, str | None]
    | tuple[str, str | None, str | None, str | None, str | None, str | None]
)
#: The columns of an :data:`EntryRow`, in their order.
ROW_COLUMNS = ("loc", "lastmod", "extras", "section", "changefreq", "priority")
_ROW_SHAPE = (
    "entry rows must be (loc, lastmod, extras, section, changefreq, priority) tuples,"
    " or their first 2 to 5 columns, all rows alike"
)


class EntryRows:
    """Sitemap entries from database rows (:data:`EntryRow`), in one pass (a cursor).

    Iterating gives one :class:`SitemapEntry` a row (the section checked, not kept);
    :meth:`batches` gives :class:`EntryBatch` objects of one section each, as
    :class:`crawler.publish.writer.SitemapSetWriter` reads them (it refuses a section
    that comes back)."""

    def __init__(
        self,
        rows: Iterable[EntryRow],
        changefreq: ChangeFreq | None = None,
        priority: Decimal | None = None,
    ) -> None:
        self._rows = iter(rows)
        # Checked now, once, rather than with every entry.
        self.changefreq = (
            None if changefreq is None else SitemapEntry._checked_changefreq(changefreq)
        )
        self.priority = None if priority is None else SitemapEntry._checked_priority(priority)

    def __iter__(self) -> Iterator[SitemapEntry]:
        # A batch a row: each row is checked, with the same errors, as it comes.
        for batch in self.batches(1):
            yield from batch

    def batches(self, size: int = 4096) -> Iterator[EntryBatch]:
        """The rows, up to ``size`` at a time, as checked batches; a batch ends
        where the section changes."""
        while rows := list(islice(self._rows, size)):
            try:
                columns = list(zip(*rows, strict=True))
            except ValueError:  # rows of different lengths
                raise ValueError(_ROW_SHAPE) from None
            if not 2 <= len(columns) <= 6:
                raise ValueError(_ROW_SHAPE)
            # Where the section changes, a batch ends (a whole tuple's slice is itself).
            start = 0
            for _, run in groupby(columns[3] if len(columns) > 3 else (None,) * len(rows)):
                stop = start + sum(1 for _ in run)
                yield self._batch([column[start:stop] for column in columns])
                start = stop

    def _batch(self, columns: list[tuple[Any, ...]]) -> EntryBatch:
        # A column that is missing or all None is none at all: a batch of plain
        # rows takes the path it always did.
        count = len(columns[0])

        def column(i: int) -> list[Any] | None:
            if len(columns) <= i or columns[i].count(None) == count:
                return None
            return list(columns[i])

        return EntryBatch(
            list(columns[0]),
            list(columns[1]),
            self.changefreq,
            self.priority,
            column(2),
            columns[3][0] if len(columns) > 3 else None,
            column(4),
            column(5),
        )
