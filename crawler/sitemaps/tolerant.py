"""The tolerant reading: a document that is not well-formed, one entry block at a time.

After the strict parse's first error (an ``xml-error``), a scan cuts the document into
``<url>`` (``<sitemap>``, ``<item>``, ``<entry>``) blocks, skips those the strict
reading has read (same sink: no entry is read twice) and parses the others inside a
copy of the root's start tag, 256 at a time (one by one where a batch fails; each
batch decoded alone, so memory follows a batch). A block that still fails is repaired:
a raw ``&`` (``unescaped-ampersand``) or an undefined entity (``undefined-entity``) is
taken as literal text, as search engines do (entities the ``<!DOCTYPE>`` declares are
declared again, as in :mod:`.dtd`); failing even then, its ``<loc>`` is taken by regex,
with an ``xml-error``. Unclosed blocks are one ``xml-error`` however many there are. A
file cut off mid-entry gives every complete entry, ``truncated`` and
``complete=False`` (unless our byte cap cut it: ``too-large`` says why it ends).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from crawler.sitemaps.checks import entry_url
from crawler.sitemaps.dtd import entities
from crawler.sitemaps.limits import IMAGE_NS, SITEMAP_NS, XHTML_NS
from crawler.sitemaps.model import Entry, Kind, Problem
from crawler.sitemaps.reading import Reading, Sink, split_tag
from crawler.sitemaps.strict import Read, lxml_failure, safe_parser

# The tolerant scan parses this many blocks as one small document, and falls
# back to one at a time only for a batch that fails.
_BATCH = 256
# The lines of unclosed blocks quoted in their one problem.
_LINES_SHOWN = 5
_ROOT_START = re.compile(rb"<[^\s/>]+(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*/?>|<[^<>]*>")
_XMLNS = re.compile(rb"\sxmlns(?::[\w.-]+)?\s*=\s*(?:\"[^\"]*\"|'[^']*')")
# Raw "&" and references to entities XML does not predefine, outside CDATA
# sections and comments (where "&" is just text).
_AMPERSAND = re.compile(
    r"<!\[CDATA\[.*?(?:\]\]>|\Z)|<!--.*?(?:-->|\Z)"
    r"|&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)(?P<entity>[A-Za-z_][\w.-]*;)?",
    re.DOTALL,
)
_PREDEFINED = {"&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&amp;": "&"}
_REFERENCE = re.compile(r"&(?:lt|gt|quot|apos|amp);|&#([0-9]+);|&#x([0-9a-fA-F]+);")


def _flatten(tag: str) -> str:
    # The wrapper goes before every block on the block's first line: it must
    # not add lines of its own.
    return tag.replace("\r", " ").replace("\n", " ")


def _unescape(text: str) -> str:
    """XML text as its characters: CDATA unwrapped, character and predefined
    references decoded (the last resort's ``<loc>``, read without lxml)."""

    def one(match: re.Match[str]) -> str:
        try:
            if match.group(1):
                return chr(int(match.group(1)))
            if match.group(2):
                return chr(int(match.group(2), 16))
        except (ValueError, OverflowError):
            return match.group()
        return _PREDEFINED[match.group()]

    text = re.sub(r"<!\[CDATA\[(.*?)\]\]>", lambda m: m.group(1).replace("&", "&amp;"), text)
    return _REFERENCE.sub(one, text)


@dataclass(slots=True)
class _Block:
    """One entry block: where it is in the text, its first line, whether it closed."""

    start: int
    end: int
    line: int
    closed: bool


@dataclass
class Tolerant:
    """Read a document that is not well-formed, one entry block at a time: ``text``
    from ``start`` (bytes: each batch is decoded alone), its root at ``root_at``; the
    entries go to ``sink``, what concerns the whole file to ``reading``."""

    reading: Reading
    sink: Sink
    text: bytes
    start: int
    root_at: int
    prefix: str
    line_offset: int
    # The entities the document's <!DOCTYPE> declares: each block is parsed after the
    # same one-line declaration as the strict reading's (.dtd), so that a reference to
    # one is read as its literal text, not repaired.
    declared: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        prefix, local, block = self.prefix, self.sink.root_local, self.sink.block
        self.local, self.block = local, block
        self.parser = safe_parser()
        self.prelude = entities(self.declared)
        self.ampersand = _AMPERSAND
        if self.declared:
            names = "|".join(re.escape(name) for name in self.declared)
            self.ampersand = re.compile(
                _AMPERSAND.pattern.replace("#x[0-9a-fA-F]+);", f"#x[0-9a-fA-F]+|{names});", 1),
                re.DOTALL,
            )
        self.qualified = qualified = f"{prefix}:{local}" if prefix else local
        self.close_root = f"</{qualified}>"
        self.block_qname = f"{prefix}:{block}" if prefix else block
        # Block tags in the root's prefix or in none (RSS 1.0 has <rdf:RDF>
        # around unprefixed <item>s).
        prefix_pattern = f"(?:{re.escape(prefix)}:)?" if prefix else ""
        self.tokens = re.compile(
            (
                r"<!--.*?(?:-->|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)"
                rf"|<(?P<close>/?){prefix_pattern}{re.escape(block)}(?=[\s/>]|\Z)"
                r"(?P<attrs>[^<>]*)(?P<end>>)?"
            ).encode(),
            re.DOTALL,
        )
        self.root_close = re.compile(rf"</{re.escape(qualified)}\s*>".encode())
        self._line, self._position = 1, self.start
        # Blocks never closed: how many, and the first lines (one problem at the end).
        self.unclosed = 0
        self.unclosed_lines: list[int] = []

    def line_at(self, position: int) -> int:
        # Positions only move forward, so lines are counted once overall.
        self._line += self.text.count(b"\n", self._position, position)
        self._position = position
        return self._line + self.line_offset

    def run(self, stopped: bool, read: Read) -> Iterator[None]:
        """Read every block into the sink, a batch at a time as the scan finds
        them (yielding after each), but those the strict reading has read
        (``read``); report a document cut short."""
        self.wrapper_text, body_start = self.wrapper()
        closed_root = self.last_root_close(body_start)
        region_end = len(self.text) if closed_root is None else closed_root.start()
        batch: list[_Block] = []
        last: _Block | None = None  # held back: a cut-off last block is not read
        for number, block in enumerate(self.blocks(body_start, region_end)):
            # A batch is parsed with the text between its blocks: one that was read
            # must not be inside it. Read what comes before.
            skip = number in read
            if last is not None:
                batch.append(self.count_unclosed(last))
            last = None if skip else block
            if batch and (skip or len(batch) == _BATCH):
                self.read_batch(batch)
                yield
                batch = []
        truncated_line = None
        if last is not None:
            if not last.closed and closed_root is None:
                truncated_line = last.line
            else:
                batch.append(self.count_unclosed(last))
        if batch:
            self.read_batch(batch)
        self.report_unclosed()
        if not stopped:
            if truncated_line is not None:
                self.reading.problems.new(
                    "truncated",
                    f"the document ends inside the <{self.block}> opened here;"
                    " that entry is not read",
                    truncated_line,
                )
            elif closed_root is None:
                self.reading.problems.new(
                    "truncated",
                    f"the document ends before </{self.local}>",
                    self.line_at(len(self.text)),
                )
        if truncated_line is not None or closed_root is None:
            self.reading.complete = False

    def last_root_close(self, start: int) -> re.Match[bytes] | None:
        # The last one: two sitemaps pasted into one file are both read.
        end = len(self.text)
        close = self.close_root[:-1].encode()
        while (found := self.text.rfind(close, start, end)) >= 0:
            match = self.root_close.match(self.text, found)
            if match is not None:
                return match
            end = found
        return None

    # -- the root, as a wrapper for each block

    def wrapper(self) -> tuple[str, int]:
        """A start tag to put each block in (the root's own, for its namespaces)."""
        found = _ROOT_START.match(self.text, self.root_at)
        body_start = found.end() if found else self.root_at + 1
        tag = found.group().decode(errors="replace") if found else ""
        candidates = []
        if found and not tag.endswith("/>"):
            candidates.append(_flatten(tag))
        declarations = " ".join(x.decode() for x in _XMLNS.findall(tag.encode()))
        qualified = self.qualified
        candidates.append(_flatten(f"<{qualified} {declarations}>"))
        candidates.append(
            f'<{qualified} xmlns="{SITEMAP_NS}" xmlns:xhtml="{XHTML_NS}" xmlns:image="{IMAGE_NS}">'
        )
        if self.prelude:
            doctype = f"<!DOCTYPE {qualified} [{self.prelude}]>"
            candidates = [doctype + candidate for candidate in candidates]
        line = self.line_at(self.root_at)
        for candidate in candidates:
            try:
                root = etree.fromstring(candidate + self.close_root, self.parser)
            except etree.LxmlError:
                continue
            if not self.sink.rooted:  # the strict reading may have seen the root
                self.sink.on_root(split_tag(root.tag)[0], line)
            return candidate, body_start
        if not self.sink.rooted:
            self.sink.on_root(None, line)
        return f"<{self.local}>", body_start

    # -- cutting the document into blocks

    def blocks(self, start: int, end: int) -> Iterator[_Block]:
        open_at: int | None = None
        for token in self.tokens.finditer(self.text, start, end):
            if token.group("attrs") is None:
                continue  # a comment or CDATA section
            if token.group("close"):
                if token.group("end") is None:
                    continue  # "</url" cut before its ">": the entry is not complete
                if open_at is not None:
                    yield _Block(open_at, token.end(), self.line_at(open_at), True)
                    open_at = None
                continue
            if open_at is not None:
                # A new block before the old one closed.
                yield _Block(open_at, token.start(), self.line_at(open_at), False)
                open_at = None
            if token.group("end") is None:
                open_at = token.start()  # cut mid-tag, or a broken tag
            elif token.group("attrs").rstrip().endswith(b"/"):
                yield _Block(token.start(), token.end(), self.line_at(token.start()), True)
            else:
                open_at = token.start()
        if open_at is not None:
            yield _Block(open_at, end, self.line_at(open_at), False)

    # -- reading blocks

    def count_unclosed(self, block: _Block) -> _Block:
        if not block.closed:
            self.unclosed += 1
            lines = self.unclosed_lines
            if len(lines) <= _LINES_SHOWN and (not lines or lines[-1] != block.line):
                lines.append(block.line)
        return block

    def report_unclosed(self) -> None:
        """One problem for every block that was never closed, at the first: a file
        of 10,000 nested ``<url>`` has one cause, not 10,000."""
        count, lines = self.unclosed, self.unclosed_lines
        if not count:
            return
        sink, what = self.sink, f"<{self.block}>"
        without = sink.unclosed_without_loc
        if count == 1:
            message = f"{what} is not closed" + (
                "; it has no URL, so nothing was read from it" if without else ""
            )
        else:
            shown = ", ".join(str(line) for line in lines[:_LINES_SHOWN])
            more = ", ..." if len(lines) > _LINES_SHOWN else ""
            where = f"line{'s' if len(lines) > 1 else ''} {shown}{more}"
            message = f"{count:,} {what} elements are not closed ({where})" + (
                f"; {without:,} of them have no URL, so nothing was read from those"
                if without
                else ""
            )
        sink.problems.new("xml-error", message, lines[0])

    def parse(self, fragment: str) -> Any:
        return etree.fromstring(self.wrapper_text + fragment + self.close_root, self.parser)

    def fragment(self, batch: list[_Block]) -> tuple[str, list[int]]:
        """The text from the batch's first block to its last, each unclosed block
        closed, and where each block starts in it. Only a close tag is ever
        inserted, never a newline, so lines in the fragment stay true. Each block
        is decoded alone (cut at a "<", it holds whole characters)."""
        pieces: list[str] = []
        starts: list[int] = []
        size = 0
        for index, block in enumerate(batch):
            starts.append(size)
            end = batch[index + 1].start if index + 1 < len(batch) else block.end
            piece = self.reading.decode(self.text[block.start : block.end], block.line)
            if not block.closed:
                piece += f"</{self.block_qname}>"
            if end > block.end:
                piece += self.reading.decode(self.text[block.end : end], block.line)
            pieces.append(piece)
            size += len(piece)
        return "".join(pieces), starts

    def read_batch(self, batch: list[_Block]) -> None:
        """Parse blocks as one small document; repair, or split, where that fails."""
        fragment, starts = self.fragment(batch)
        offset = batch[0].line - 1
        try:
            self.take(self.parse(fragment), offset, batch)
            return
        except etree.LxmlError as exc:
            failure = exc
        repaired, fixes = self.repair(fragment, batch[0].line, starts)
        if fixes:
            try:
                root = self.parse(repaired)
            except etree.LxmlError as exc:
                failure = exc
            else:
                self.take(root, offset, batch, fixes)
                return
        if len(batch) > 1:
            for block in batch:
                self.read_batch([block])
            return
        self.last_resort(fragment, batch[0].line, lxml_failure(failure)[0])

    def take(
        self, root: Any, offset: int, batch: list[_Block], fixes: Sequence[tuple[int, Problem]] = ()
    ) -> None:
        """Read the blocks of a parsed batch; *fixes* are the repairs made in them,
        (index of the block, problem): each block carries its own, so that they
        name its entry's URL."""
        # The batch's blocks are the root's block children, in order: each was cut
        # at the next block's start tag, so none holds another.
        closed = iter([block.closed for block in batch])
        index = 0
        for child in root:
            if isinstance(child.tag, str) and split_tag(child.tag)[1] == self.block:
                self.sink.carried = [fix for at, fix in fixes if at == index]
                index += 1
                self.sink.unclosed = not next(closed, True)
                self.sink.on_block(child, offset)
                self.sink.unclosed = False
            else:
                self.sink.unknown(child, offset)
        for at, fix in fixes:
            if at >= index:  # no block took it (one inside an unknown element): kept, not lost
                self.sink.problems.add(fix)

    def repair(
        self, fragment: str, line: int, starts: list[int]
    ) -> tuple[str, list[tuple[int, Problem]]]:
        """Take raw "&" and undefined entities as literal text; one problem of
        each kind per block, at its first occurrence."""
        found: dict[tuple[int, str], int] = {}
        counted = [0, line]  # position and line reached: lines counted once

        def fix(match: re.Match[str]) -> str:
            if match.group().startswith("<"):
                return match.group()
            entity = match.group("entity")
            code = "undefined-entity" if entity else "unescaped-ampersand"
            key = (bisect.bisect_right(starts, match.start()) - 1, code)
            if key not in found:
                counted[1] += fragment.count("\n", counted[0], match.start())
                counted[0] = match.start()
                found[key] = counted[1]
            return "&amp;" + (entity or "")

        repaired = self.ampersand.sub(fix, fragment)
        messages = {
            "unescaped-ampersand": "a raw '&' (must be written &amp;); read as a literal '&'",
            "undefined-entity": "a reference to an entity the document does not declare"
            " (such as &nbsp;, which only HTML defines); read as literal text, not expanded",
        }
        return repaired, [
            (block, Problem(code, messages[code], at)) for (block, code), at in found.items()
        ]

    def last_resort(self, fragment: str, line: int, message: str) -> None:
        sink = self.sink
        if self.reading.kind in (Kind.URLSET, Kind.INDEX):
            prefix = f"(?:{re.escape(self.prefix)}:)?" if self.prefix else ""
            # The <loc> text up to the next tag, whatever that tag is.
            loc = re.search(
                rf"<{prefix}loc(?:\s[^>]*)?>([^<]*(?:<!\[CDATA\[.*?\]\]>[^<]*)*)",
                fragment,
                re.DOTALL,
            )
            if loc is not None:
                loc_line = line + fragment.count("\n", 0, loc.start())
                sink.count_block(line)
                value = sink.loc_value(_unescape(loc.group(1)), loc_line, line)
                sink.problems.new(
                    "xml-error",
                    f"entry is not well-formed XML ({message}); only its <loc> was read",
                    line,
                    None if value is None else entry_url(value, sink.base),
                )
                if value is not None:
                    sink.add(Entry(value, None, None, None, loc_line))
                return
        sink.count_block(line)
        sink.problems.new("xml-error", f"entry is not well-formed XML ({message}); not read", line)
