"""One reading of a document: what it collects, whatever the format.

:class:`Reading` is the state of one :func:`~crawler.audit.sitemaps.parse.parse_sitemap`
call: the file-level problems, the format found, the encoding, whether the data was
read to its end, and the :class:`Sink` of entries. :class:`Sink` takes each entry
as a format's reader finds it and applies what holds for every format: the count
caps (50,000 URLs, 50,000 sitemaps), :class:`~crawler.audit.sitemaps.checks.Checker`,
the location rule, duplicate locs, the namespace of the root. How an entry is read
out of its element is the format's: :mod:`.urlset` and :mod:`.feeds` subclass
:class:`Sink`; plain text (:mod:`.text`) adds its lines to a :class:`Sink` itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from crawler.audit.sitemaps.checks import LOC_FAULTS, Checker, Scope
from crawler.audit.sitemaps.model import Entry, Kind, ParsedSitemap, Problems, quote
from crawler.limits import MAX_SITEMAPS_PER_INDEX, MAX_URLS_PER_FILE


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
    """Entries and entry-level problems of one reading of the document.

    The XML readers (:mod:`.strict`, :mod:`.tolerant`) call :meth:`on_root` once,
    then :meth:`on_block` for each entry element and :meth:`unknown` for anything
    else under the root; a subclass per format says what namespace the root needs
    and how a block becomes an :class:`Entry`.
    """

    kind: Kind
    block: str
    root_local: str
    now: datetime
    scope: Scope | None
    namespace: str | None = None
    entries: list[Entry] = field(default_factory=list)
    problems: Problems = field(default_factory=Problems)
    seen: dict[str, int] = field(default_factory=dict)
    blocks: int = 0
    # Set by the tolerant reading while it reads a block that was never closed:
    # such a block without a loc is counted in its "not closed" problem instead.
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
        self.namespace = namespace
        expected = self.expected_namespace(namespace)
        if expected is None:
            return
        if namespace is None:
            self.problems.new(
                "no-namespace",
                f"<{self.root_local}> has no namespace; expected {expected}",
                line,
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
        entry = self.read_block(element, offset)
        if entry is not None:
            self.add(entry)

    def count_block(self, line: int | None) -> None:
        self.blocks += 1
        limit = MAX_SITEMAPS_PER_INDEX if self.kind is Kind.INDEX else MAX_URLS_PER_FILE
        if self.blocks == limit + 1:
            code, what = (
                ("too-many-sitemaps", "sitemaps")
                if self.kind is Kind.INDEX
                else ("too-many-urls", "URLs")
            )
            # Reported once, at the first one over; reading goes on, since the
            # audit must still see them.
            self.problems.new(code, f"more than {limit:,} {what} in one file", line)

    def add(self, entry: Entry) -> None:
        checked = self.checker.check(entry, pubdate=self.kind is Kind.RSS)
        for problem in checked:
            self.problems.add(problem)
        loc_fault = any(problem.code in LOC_FAULTS for problem in checked)
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
            )
        first = self.seen.get(entry.loc)
        if first is None:
            self.seen[entry.loc] = entry.line or 0
        else:
            self.problems.new(
                "duplicate-loc",
                f"{quote(entry.loc)} is listed again (first at line {first})",
                entry.line,
            )
        self.entries.append(entry)

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
            # xsd:anyURI collapses whitespace, so this is valid, but it is a
            # template bug, and readers that do not strip get a wrong URL.
            self.problems.new(
                "whitespace-around-loc", f"whitespace around the URL {quote(loc)}", line
            )
        return loc


@dataclass(slots=True)
class Reading:
    """One call of :func:`~crawler.audit.sitemaps.parse.parse_sitemap`."""

    now: datetime
    scope: Scope | None
    problems: Problems = field(default_factory=Problems)
    kind: Kind = Kind.UNKNOWN
    sink: Sink | None = None
    complete: bool = True
    encoding: str = "utf-8"

    def not_a_sitemap(self, message: str) -> None:
        self.kind = Kind.UNKNOWN
        self.problems.new("not-a-sitemap", message)

    def decode(self, doc: bytes) -> str:
        """The document as text, in the encoding found; bad bytes become U+FFFD."""
        try:
            return doc.decode(self.encoding)
        except UnicodeDecodeError as exc:
            self.problems.new(
                "encoding-error",
                f"bytes that are not {self.encoding}; replaced by U+FFFD",
                doc.count(b"\n", 0, exc.start) + 1,
            )
            return doc.decode(self.encoding, "replace")

    def result(self, layers: int, size: int) -> ParsedSitemap:
        entries: list[Entry] = []
        namespace = None
        collectors = [self.problems]
        if self.sink is not None:
            entries = self.sink.entries
            namespace = self.sink.namespace
            collectors.append(self.sink.problems)
        # Document order; problems about the whole file (no line) first.
        problems = sorted(
            itertools.chain.from_iterable(collector.items for collector in collectors),
            key=lambda problem: (problem.line is not None, problem.line or 0),
        )
        for collector in collectors:
            problems.extend(collector.summaries())
        return ParsedSitemap(
            kind=self.kind,
            entries=entries,
            problems=problems,
            namespace=namespace,
            compressed_layers=layers,
            size=size,
            complete=self.complete,
        )
