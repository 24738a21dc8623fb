"""The strict reading: lxml's pull parser over a well-formed document.

Fast, and exact when the file is well-formed. ``XMLPullParser`` is fed 64 KiB at a
time from views of the data, and each entry is cleared once read: memory follows the
entry, not a DOM of the file. lxml never expands or fetches anything
(:data:`SAFE_PARSER_OPTIONS`, and a resolver that refuses every external resource:
:func:`safe_parser`), so an XXE or billion-laughs reference stays the text ``&name;``.
At the first XML error the parse stops with :class:`Failed`, which says which blocks
were read (:class:`Read`), and :mod:`.tolerant` reads the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from crawler.sitemaps.reading import Sink, split_tag

# lxml settings for everything read here: no DTD, no entity expansion, no
# network, libxml2's default size limits (huge_tree=False).
SAFE_PARSER_OPTIONS: dict[str, Any] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "attribute_defaults": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
    "strip_cdata": True,
    "collect_ids": False,
}
# lxml is fed this much at a time: libxml2's push parser buffers in proportion, and
# larger steps are no faster.
_FEED_STEP = 64 * 1024
# Fed this much with nothing reported, the parser is taken to be stalled (see
# _stalled): what it holds meanwhile stays under this, not the rest of the file.
_STALL = 4 * 1024 * 1024
# Blocks held inside another one, at most (see _Events).
_MAX_NESTED = 1000


class _Refuse(etree.Resolver):
    """Every external resource (a DTD, an entity, a relative or file: URL) is
    empty: with the options above libxml2 should ask for none, and would get
    nothing if it did."""

    # lxml calls resolve(url, public_id, context); lxml-stubs leave out the context.
    def resolve(self, system_url: str, public_id: str, context: Any) -> Any:  # type: ignore[override]
        return self.resolve_string("", context, base_url=None)


def safe_parser(encoding: str | None = None) -> etree.XMLParser:
    """An lxml parser with :data:`SAFE_PARSER_OPTIONS` and a resolver that refuses
    everything; ``encoding`` overrides the document's own declaration."""
    parser = etree.XMLParser(encoding=encoding, **SAFE_PARSER_OPTIONS)
    parser.resolvers.add(_Refuse())
    return parser


_LXML_POSITION = re.compile(r",? line \d+, column \d+$")


@dataclass(eq=False)
class Failed(Exception):
    """The strict parse met an XML error: the tolerant reading takes over, skipping
    the blocks already read (``read``)."""

    message: str
    line: int | None
    read: Read
    # False when the strict reading stopped without finding an error (it stalled,
    # or blocks nest too deep): the tolerant one goes on, with no xml-error.
    real: bool = True


@dataclass(slots=True)
class Read:
    """Which blocks a reading has handed over, by their number in the order their
    start tags appear (counting only those the tolerant scan sees too: in the
    root's prefix or in none): every number below ``below``, and those in
    ``above`` (a block inside another ends, and is read, before it)."""

    below: int = 0
    above: set[int] = field(default_factory=set)

    def add(self, number: int) -> None:
        if number != self.below:
            self.above.add(number)
            return
        self.below += 1
        while self.below in self.above:
            self.above.discard(self.below)
            self.below += 1

    def __contains__(self, number: object) -> bool:
        return isinstance(number, int) and (number < self.below or number in self.above)


def lxml_failure(exc: Exception) -> tuple[str, int | None]:
    """lxml's error message and line (for a bare "no element found" at line 0, the
    feed parser's answer to an undefined entity, the last error of its log)."""
    message = _LXML_POSITION.sub("", getattr(exc, "msg", None) or str(exc))
    line = getattr(exc, "lineno", None) or None
    if line is None:
        errors = [
            entry
            for entry in getattr(exc, "error_log", None) or ()
            if entry.level >= etree.ErrorLevels.ERROR
        ]
        if errors:
            return errors[-1].message.strip(), errors[-1].line or None
    return message, line


def read_strict(
    sink: Sink, pieces: Sequence[bytes | memoryview], prefix: str, line_offset: int, stopped: bool
) -> Iterator[None]:
    """Read the document's ``pieces`` into ``sink`` as a stream, one ``sink.block``
    element at a time, yielding after each chunk fed. Raises :class:`Failed` at the first
    XML error; when ``stopped`` (cut by our cap) the end of the data is not one."""
    tags = [f"{{*}}{sink.root_local}", f"{{*}}{sink.block}"]
    parser = etree.XMLPullParser(events=("start", "end"), tag=tags, **SAFE_PARSER_OPTIONS)
    parser.resolvers.add(_Refuse())
    events = _Events(sink, prefix or None, line_offset)
    quiet = 0  # bytes fed since the parser last reported anything
    lines = 1  # the line the data fed so far ends on
    # The pieces are views of the data, not copies of it: fed a step at a time.
    views = [memoryview(piece) for piece in pieces]
    chunks = (bytes(v[i : i + _FEED_STEP]) for v in views for i in range(0, len(v), _FEED_STEP))
    try:
        for chunk in chunks:
            parser.feed(chunk)
            lines += chunk.count(b"\n")
            quiet = 0 if events.take(parser) else quiet + len(chunk)
            if quiet > _STALL:
                _stalled(parser, events, lines, line_offset)
                return
            yield
        if not stopped:
            # close() raises on a document cut short. When we cut it (the
            # byte cap), every entry that ended has been read already.
            parser.close()
            events.take(parser)
    except etree.LxmlError as exc:
        message, line = lxml_failure(exc)
        raise Failed(message, None if line is None else line + line_offset, events.read) from None


def _stalled(parser: Any, events: _Events, lines: int, line_offset: int) -> None:
    """Nothing reported for :data:`_STALL` bytes: most likely libxml2 waits for the
    ";" after a raw "&", holding all it is fed. Make it parse what it holds: its
    error is the document's; without one (a long stretch without an entry), the
    tolerant reading goes on all the same, with no ``xml-error``."""
    try:
        parser.close()
    except etree.LxmlError as exc:
        message, line = lxml_failure(exc)
        if line is not None and line < lines:
            raise Failed(message, line + line_offset, events.read) from None
        raise Failed("", None, events.read, real=False) from None
    events.take(parser)  # it was the end of the document after all


@dataclass
class _Events:
    """What the pull parser reports, handed to the sink; each entry freed once read.
    A block inside another (most often one whose ``</url>`` is missing) is read with
    the outermost, when that ends, in document order; past :data:`_MAX_NESTED` the
    tolerant reading takes over from the outer block."""

    sink: Sink
    prefix: str | None
    offset: int
    root: Any = None
    block_tags: set[str] = field(default_factory=set)
    started: int = 0  # blocks started, counted as Read counts them
    depth: int = 0  # blocks open now
    # The numbers of the outermost open block and of those it holds, in document
    # order (None for a block the tolerant scan does not count).
    numbers: list[int | None] = field(default_factory=list)
    read: Read = field(default_factory=Read)

    def is_block(self, tag: Any) -> bool:
        if tag in self.block_tags:
            return True
        if not isinstance(tag, str) or split_tag(tag)[1] != self.sink.block:
            return False
        self.block_tags.add(tag)
        return True

    def take(self, parser: Any) -> int:
        """Handle the pending events; returns how many there were."""
        sink, offset = self.sink, self.offset
        count = 0
        for action, element in parser.read_events():
            count += 1
            if action == "start":
                if self.root is None:
                    self.root = element
                    sink.on_root(split_tag(element.tag)[0], (element.sourceline or 1) + offset)
                elif self.is_block(element.tag):
                    number = None
                    if element.prefix in (self.prefix, None):
                        number = self.started
                        self.started += 1
                    if self.depth == 0:
                        self.numbers = []
                    self.numbers.append(number)
                    self.depth += 1
                continue
            root = self.root
            if element is root:
                for child in root:
                    sink.unknown(child, offset)
                continue
            tag = element.tag
            if not self.is_block(tag):
                continue
            self.depth -= 1
            if self.depth > 0:
                # Inside another block: read with it, when it ends.
                if len(self.numbers) > _MAX_NESTED:
                    raise Failed("", None, self.read, real=False)
                continue
            if len(self.numbers) == 1:
                sink.on_block(element, offset)
            else:
                for held in element.iter(*self.block_tags):
                    sink.on_block(held, offset)
            for number in self.numbers:
                if number is not None:
                    self.read.add(number)
            # Free what has been read: the entry's children, then everything
            # before it under its parent (lxml's documented iterparse idiom).
            element.clear()
            parent = element.getparent()
            if parent is not None:
                if parent is root:
                    # Usually just the previous entry; anything else is unknown.
                    for previous in element.itersiblings(preceding=True):
                        if previous.tag != tag:
                            sink.unknown(previous, offset)
                while element.getprevious() is not None:
                    del parent[0]
        return count
