"""The values the sitemap parser hands back, and the list that caps its problems.

:class:`Kind`, :class:`Problem` (one fault, with its stable code), :class:`Entry` (one
listed URL, as the file wrote it), :class:`ParsedSitemap` (all of it); every reader
collects problems in :class:`Problems`: in order, at most
:data:`MAX_PROBLEMS_PER_CODE` of each code, the rest counted.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Final, overload

__all__ = ["MAX_PROBLEMS_PER_CODE", "Entry", "Kind", "ParsedSitemap", "Problem", "Rereading"]

# Past this many problems of one code the rest are counted ("problems-suppressed").
MAX_PROBLEMS_PER_CODE: Final = 1000
# How much of a value a message quotes (a 10 MB <loc> is no 10 MB message).
_QUOTE = 100


class Kind(str, Enum):  # noqa: UP042 (callers expect a str and an Enum)
    """What a fetched sitemap turned out to be."""

    URLSET = "urlset"
    INDEX = "sitemapindex"
    TEXT = "text"
    RSS = "rss"
    ATOM = "atom"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Problem:
    """One fault: a stable machine ``code``, one human line, and where, when known
    (``line``, of the decompressed document, from 1). The codes:

    * the file: ``not-a-sitemap``, ``too-large``, ``gzip-bomb``, ``double-gzip``,
      ``too-many-gzip-layers``, ``gzip-error``, ``gzip-truncated``, ``gzip-trailing-data``,
      ``not-utf8``, ``encoding-error``, ``whitespace-before-declaration``, ``dtd``,
      ``entity-declaration``, ``xml-error``, ``truncated``, ``no-namespace``,
      ``wrong-namespace``, ``too-many-urls``, ``too-many-sitemaps``,
      ``problems-suppressed``, ``parser-error`` (a bug of ours, logged);
    * an entry: ``missing-loc``, ``empty-loc``, ``whitespace-around-loc``,
      ``whitespace-in-loc``, ``relative-loc``, ``invalid-loc``, ``loc-too-long``,
      ``invalid-lastmod``, ``lastmod-no-timezone``, ``lastmod-future``,
      ``invalid-changefreq``, ``invalid-priority``, ``too-many-images``,
      ``invalid-alternate``, ``unknown-element``, ``duplicate-element``, ``duplicate-loc``,
      ``out-of-scope``, ``namespace-mismatch``, ``unescaped-ampersand``,
      ``undefined-entity``, ``not-a-url`` (text).

    ``url``: the URL of the entry a problem is about (its ``loc``, resolved against the
    sitemap's address); None for the whole file, or an entry without a URL.
    """

    code: str
    message: str
    line: int | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One listed URL (for an index, one listed sitemap), as the file wrote it.

    ``loc`` is stripped, its entities decoded; ``lastmod`` (RSS: the ``pubDate``, Atom:
    ``<updated>``), ``changefreq`` and ``priority`` are the raw text, stripped, not
    checked (:class:`crawler.sitemaps.checks.Checker`). ``line`` is the ``<loc>``'s.
    ``alternates``: the ``xhtml:link rel=alternate`` (hreflang, href) pairs;
    ``media_alternates``: the (media, href) pairs of those with a ``media`` query and
    no hreflang (Google's annotation of a separate mobile URL).
    """

    loc: str
    lastmod: str | None
    changefreq: str | None
    priority: str | None
    line: int | None
    alternates: tuple[tuple[str, str], ...] = ()
    images: int = 0
    media_alternates: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class ParsedSitemap:
    """What :func:`crawler.sitemaps.parse.parse_sitemap` read.

    ``size``: decompressed bytes read; ``complete`` is ``False`` when reading stopped
    before the end of the data (the byte cap, a broken gzip stream, a document that
    ends mid-entry or before its root is closed). ``entry_count``: how many entries
    were read (``entries`` is empty when they were handed to ``on_entries``).
    ``entries`` is a list, or for a file of many, a :class:`Rereading` of the data.
    """

    kind: Kind
    entries: Sequence[Entry]
    problems: list[Problem]
    namespace: str | None
    compressed_layers: int
    size: int
    complete: bool
    entry_count: int = 0


@dataclass(slots=True)
class Problems:
    """Problems in order, at most MAX_PROBLEMS_PER_CODE of each code."""

    items: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # The problems of the entry being read, before its URL is known.
    held: list[Problem] | None = None

    def add(self, problem: Problem) -> None:
        if self.held is not None:
            self.held.append(problem)
            return
        count = self.counts.get(problem.code, 0) + 1
        self.counts[problem.code] = count
        if count <= MAX_PROBLEMS_PER_CODE:
            self.items.append(problem)

    def new(self, code: str, message: str, line: int | None = None, url: str | None = None) -> None:
        self.add(Problem(code, message, line, url))

    def hold(self) -> None:
        """Keep the problems found from now on, until :meth:`release`."""
        self.held = []

    def release(self, url: str | None) -> None:
        """Add the held problems, each naming *url* (the entry's) unless it names one."""
        held, self.held = self.held or [], None
        for problem in held:
            named = problem.url is not None or url is None
            self.add(problem if named else replace(problem, url=url))

    def has(self, code: str) -> bool:
        return code in self.counts

    def summaries(self) -> list[Problem]:
        return [
            Problem(
                "problems-suppressed",
                f"{count - MAX_PROBLEMS_PER_CODE:,} more {code!r} problems not listed",
            )
            for code, count in self.counts.items()
            if count > MAX_PROBLEMS_PER_CODE
        ]


def quote(value: str, most: int = _QUOTE) -> str:
    """``value`` for a message: repr'd, and cut after *most* characters."""
    return repr(value[:most]) + ("..." if len(value) > most else "")


class Rereading(Sequence[Entry]):
    """The entries of a document, read again from its data (``reread()``, a generator
    of batches) whenever they are iterated, so that none is held. ``len()`` is free;
    iterating costs a parse, as far as the reader reads; an index or a slice reads up
    to it. Equal to a list of the same entries."""

    def __init__(self, count: int, reread: Callable[[], Iterator[list[Entry]]]) -> None:
        self._count = count
        self._reread = reread

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Entry]:
        return itertools.chain.from_iterable(self._reread())

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if step < 0:
                return list(self)[index]
            return list(itertools.islice(self, start, stop, step))
        position = index + self._count if index < 0 else index
        if not 0 <= position < self._count:
            raise IndexError("entry index out of range")
        return next(itertools.islice(self, position, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, Rereading)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Rereading of {self._count:,} entries>"
