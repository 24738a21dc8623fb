"""One reading of a document: what it collects, whatever the format.

:class:`Reading` is the state of one :func:`~crawler.sitemaps.parse.parse_sitemap`
call (file-level problems, format, whether the data was read to its end);
its :class:`Sink` takes each entry as a format's reader finds it and applies what
holds for every format: the count caps, :class:`~crawler.sitemaps.checks.Checker`,
the location rule, duplicate locs, the root's namespace. :mod:`.urlset` and
:mod:`.feeds` subclass :class:`Sink`; :mod:`.text` adds its lines to one itself.

The readers are generators that yield after each step (a chunk fed to lxml, a batch
of blocks, a line), so that :mod:`.parse` hands the sink's entries over in batches of
:data:`ENTRY_BATCH` as they are read: a reading holds a batch, the problems (capped
per code) and, to find duplicate locs, :class:`SeenLocs`.
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from crawler.sitemaps.checks import LOC_FAULTS, Checker, Scope, entry_url
from crawler.sitemaps.limits import MAX_SITEMAPS_PER_INDEX, MAX_URLS_PER_FILE
from crawler.sitemaps.model import Entry, Kind, ParsedSitemap, Problem, Problems, quote

#: Entries handed to a consumer at a time.
ENTRY_BATCH: Final = 1000

# Lines are kept in 32 bits (a 50 MiB file has at most 52 million).
_MAX_LINE: Final = 2**31 - 1


class SeenLocs:
    """The locs a file has listed, with the line of each one's first listing: an
    open-addressing table of 64-bit hashes and lines in two arrays, at most two thirds
    full (about 6 MB for the 336,000 entries of a dense 50 MiB file, where a dict of the
    locs took 60 MB). A false duplicate needs two locs with one 64-bit hash: about one
    chance in 10^8 for 336,000 locs."""

    __slots__ = ("hashes", "lines", "mask", "used")

    def __init__(self, slots: int = 1024) -> None:
        self.hashes = array("q", bytes(8 * slots))
        self.lines = array("i", bytes(4 * slots))
        self.mask = slots - 1
        self.used = 0

    def first(self, loc: str, line: int) -> int | None:
        """None the first time ``loc`` is seen (and ``line`` is kept); after
        that, the line kept the first time."""
        key = hash(loc) or 1  # 0 marks a free slot
        slot = self._slot(key)
        if self.hashes[slot] == key:
            return self.lines[slot]
        self.hashes[slot], self.lines[slot] = key, min(line, _MAX_LINE)
        self.used += 1
        if self.used * 3 > (self.mask + 1) * 2:  # grow
            old = zip(self.hashes, self.lines, strict=True)
            size = 2 * (self.mask + 1)
            self.hashes, self.lines = array("q", bytes(8 * size)), array("i", bytes(4 * size))
            self.mask = size - 1
            for key, line in old:
                if key:
                    slot = self._slot(key)
                    self.hashes[slot], self.lines[slot] = key, line
        return None

    def _slot(self, key: int) -> int:
        """Where ``key`` is, or the free slot where it goes."""
        hashes, mask = self.hashes, self.mask
        slot = key & mask
        while hashes[slot] not in (0, key):
            slot = (slot + 1) & mask
        return slot


def split_tag(tag: str) -> tuple[str | None, str]:
    """An lxml tag, ``{namespace}local``, as (namespace or None, local name)."""
    if tag[:1] == "{":
        namespace, _, local = tag[1:].partition("}")
        return namespace, local
    return None, tag


def element_text(element: Any) -> str:
    """All the text in an element, its children's included."""
    if len(element) == 0:
        return element.text or ""
    return "".join(element.itertext())


@dataclass(slots=True)
class Sink:
    """Entries and entry-level problems of one reading of the document. The XML
    readers call :meth:`on_root` once, then :meth:`on_block` for each entry element and
    :meth:`unknown` for anything else under the root; a subclass per format says what
    namespace the root needs and how a block becomes an :class:`Entry`."""

    kind: Kind
    block: str
    root_local: str
    now: datetime
    scope: Scope | None
    base: str | None = None  # the sitemap's address, to resolve a relative loc
    namespace: str | None = None
    # Problems found in the next block before it was read (a repaired raw "&").
    carried: list[Problem] = field(default_factory=list)
    # The entries not handed over yet.
    entries: list[Entry] = field(default_factory=list)
    count: int = 0
    problems: Problems = field(default_factory=Problems)
    seen: SeenLocs = field(default_factory=SeenLocs)
    blocks: int = 0
    rooted: bool = False  # on_root was called
    # While the tolerant reading reads an unclosed block (no loc: counted, not reported).
    unclosed: bool = False
    unclosed_without_loc: int = 0
    checker: Checker = field(init=False)

    def __post_init__(self) -> None:
        self.checker = Checker(self.now)

    # -- what a format decides

    def expected_namespace(self, namespace: str | None) -> str | None:
        """The namespace the root must be in (None: any, or none); the format's."""
        return None

    def read_block(self, element: Any, offset: int) -> Entry | None:
        """One entry element as an :class:`Entry` (None: a problem says why)."""
        raise NotImplementedError(f"no block reader for {self.kind.value}")

    def unknown(self, element: Any, offset: int) -> None:
        """Something under the root that is not an entry; only sitemaps object."""

    # -- root

    def on_root(self, namespace: str | None, line: int | None) -> None:
        self.rooted = True
        self.namespace = namespace
        expected = self.expected_namespace(namespace)
        if expected is None:
            return
        if namespace is None:
            self.problems.new(
                "no-namespace", f"<{self.root_local}> has no namespace; expected {expected}", line
            )
        elif namespace != expected:
            self.problems.new(
                "wrong-namespace",
                f"<{self.root_local}> is in namespace {namespace}; expected {expected}",
                line,
            )

    # -- blocks

    def on_block(self, element: Any, offset: int) -> None:
        self.count_block((element.sourceline or 0) + offset)
        # Problems inside the element are held until its URL is read, to name it.
        self.problems.hold()
        carried, self.carried = self.carried, []
        for problem in carried:
            self.problems.add(problem)
        entry = None
        try:
            entry = self.read_block(element, offset)
        finally:
            self.problems.release(None if entry is None else entry_url(entry.loc, self.base))
        if entry is not None:
            self.add(entry)

    def count_block(self, line: int | None) -> None:
        self.blocks += 1
        limit, code, what = (
            (MAX_SITEMAPS_PER_INDEX, "too-many-sitemaps", "sitemaps")
            if self.kind is Kind.INDEX
            else (MAX_URLS_PER_FILE, "too-many-urls", "URLs")
        )
        if self.blocks == limit + 1:
            # Once, at the first one over; reading goes on: the audit must see them.
            self.problems.new(code, f"more than {limit:,} {what} in one file", line)

    def add(self, entry: Entry) -> None:
        checked = self.checker.check(entry, pubdate=self.kind is Kind.RSS, base=self.base)
        for problem in checked:
            self.problems.add(problem)
        loc_fault = any(problem.code in LOC_FAULTS for problem in checked)
        url = entry_url(entry.loc, self.base)
        if (
            self.scope is not None
            and not loc_fault
            and not self.scope.allows(entry.loc, same_directory=self.kind is not Kind.INDEX)
        ):
            self.problems.new(
                "out-of-scope",
                f"{quote(entry.loc)} is outside what a sitemap at this URL may list"
                " (same scheme and host, under its directory), unless robots.txt"
                " submits it for that host",
                entry.line,
                url,
            )
        first = self.seen.first(entry.loc, entry.line or 0)
        if first is not None:
            self.problems.new(
                "duplicate-loc",
                f"{quote(entry.loc)} is listed again (first at line {first})",
                entry.line,
                url,
            )
        self.entries.append(entry)
        self.count += 1

    def missing_loc(self, message: str, line: int | None) -> None:
        """An entry element without its URL (``missing-loc``)."""
        if self.unclosed:
            self.unclosed_without_loc += 1
        else:
            self.problems.new("missing-loc", message, line)

    def loc_value(self, raw: str, line: int | None, block_line: int | None) -> str | None:
        """The URL of a ``<loc>`` (``<link>``) as written, stripped; None if empty."""
        loc = raw.strip()
        if not loc:
            self.problems.new("empty-loc", f"empty <loc> in <{self.block}>", line or block_line)
            return None
        if loc != raw:
            # Valid xsd:anyURI, but a template bug: readers that do not strip misread it.
            self.problems.new(
                "whitespace-around-loc",
                f"whitespace around the URL {quote(loc)}",
                line,
                entry_url(loc, self.base),
            )
        return loc


@dataclass(slots=True)
class Reading:
    """One call of :func:`~crawler.sitemaps.parse.parse_sitemap`."""

    now: datetime
    scope: Scope | None
    problems: Problems = field(default_factory=Problems)
    base: str | None = None
    kind: Kind = Kind.UNKNOWN
    sink: Sink | None = None
    complete: bool = True
    layers: int = 0  # gzip layers removed
    size: int = 0  # decompressed bytes

    def new_sink(self, sink_class: type[Sink], block: str, root_local: str) -> Sink:
        self.sink = sink_class(self.kind, block, root_local, self.now, self.scope, self.base)
        return self.sink

    def not_a_sitemap(self, message: str) -> None:
        self.kind = Kind.UNKNOWN
        self.problems.new("not-a-sitemap", message)

    def decode(self, part: bytes, line: int = 1) -> str:
        """A part of the (UTF-8) document, starting at ``line``, as text; bad bytes
        become U+FFFD, and the first part with any is reported."""
        try:
            return part.decode()
        except UnicodeDecodeError as exc:
            if not self.problems.has("encoding-error"):
                self.problems.new(
                    "encoding-error",
                    "bytes that are not utf-8; replaced by U+FFFD",
                    line + part.count(b"\n", 0, exc.start),
                )
            return part.decode(errors="replace")

    def result(self) -> ParsedSitemap:
        sink = self.sink
        collectors = [self.problems] if sink is None else [self.problems, sink.problems]
        # Document order; problems about the whole file (no line) first.
        problems = sorted(
            itertools.chain.from_iterable(collector.items for collector in collectors),
            key=lambda problem: (problem.line is not None, problem.line or 0),
        )
        for collector in collectors:
            problems.extend(collector.summaries())
        return ParsedSitemap(
            kind=self.kind,
            entries=[] if sink is None else sink.entries,
            problems=problems,
            namespace=None if sink is None else sink.namespace,
            compressed_layers=self.layers,
            size=self.size,
            complete=self.complete,
            entry_count=0 if sink is None else sink.count,
        )
