"""The parser's entry point: :func:`parse_sitemap` finds the format and dispatches.

Undo gzip (:mod:`.decompress`); find the encoding (a UTF-8 BOM is dropped; UTF-16 and
a declared encoding Python knows are transcoded to UTF-8 and reported, so lxml never
reads an encoding by a name it may spell otherwise; a label that cannot be right is
reported and read as UTF-8); then the format, from the content, never from the URL:
text that does not start with ``<`` goes to :mod:`.text`, XML to the reader its root
names (:mod:`.urlset`, :mod:`.feeds`), anything else (an HTML page above all) is
``not-a-sitemap``. XML is read by :mod:`.strict` and, from its first error on, by
:mod:`.tolerant`. A ``<!DOCTYPE>`` is reported, checked and replaced first (:mod:`.dtd`).
The document is never copied whole (but when transcoded, or for a tolerant reading
around a ``<!DOCTYPE>``): lxml is fed from views of it.
"""

from __future__ import annotations

import codecs
import itertools
import logging
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from crawler.sitemaps.checks import Scope, aware
from crawler.sitemaps.decompress import decompress
from crawler.sitemaps.dtd import read_doctype
from crawler.sitemaps.feeds import AtomSink, RssSink
from crawler.sitemaps.limits import MAX_BYTES_PER_FILE
from crawler.sitemaps.model import Entry, Kind, ParsedSitemap, Rereading
from crawler.sitemaps.reading import ENTRY_BATCH, Reading, Sink
from crawler.sitemaps.strict import Failed, read_strict
from crawler.sitemaps.text import read_text
from crawler.sitemaps.tolerant import Tolerant
from crawler.sitemaps.urlset import SitemapSink

__all__ = ["DEFAULT_MAX_BYTES", "KEPT_ENTRIES", "parse_sitemap"]

logger = logging.getLogger(__name__)

# The default cap: one byte over the protocol's 50 MiB, so that a file that is
# over the limit can be told from one that is exactly at it.
DEFAULT_MAX_BYTES: Final = MAX_BYTES_PER_FILE + 1

#: Entries that a call without ``on_entries`` keeps in a list (about 8 MB); a file of
#: more gets a :class:`~.model.Rereading` instead, which holds none.
KEPT_ENTRIES: Final = 10_000

_ROOTS: Final[dict[str, tuple[Kind, str, type[Sink]]]] = {
    "urlset": (Kind.URLSET, "url", SitemapSink),
    "sitemapindex": (Kind.INDEX, "sitemap", SitemapSink),
    "rss": (Kind.RSS, "item", RssSink),
    "RDF": (Kind.RSS, "item", RssSink),  # RSS 1.0: <rdf:RDF> with <item>s beside the <channel>
    "feed": (Kind.ATOM, "entry", AtomSink),
}
_UTF16: Final = (
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
    (b"<\0", "utf-16-le"),
    (b"\0<", "utf-16-be"),
)
_NON_SPACE = re.compile(rb"\S")
_XML_DECLARATION = re.compile(rb"<\?xml\s[^>]*?encoding\s*=\s*([\"'])([A-Za-z0-9._-]+)\1")
_ENCODING_IN_DECLARATION = re.compile(rb"(<\?xml\s[^>]*?encoding\s*=\s*)([\"'])[A-Za-z0-9._-]+\2")
_NAME = re.compile(rb"[^\s/>!?<]+")
_PROLOG_MISC = re.compile(rb"(?:\s+|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)
_DOCTYPE_NAME = re.compile(rb"\s*([^\s\[>]+)")
# Inside <!DOCTYPE ...>: quoted strings, comments (an unterminated one runs to
# the end, in one match, not one scan per "<!--") and the brackets and ">".
_DOCTYPE_TOKEN = re.compile(rb"\"[^\"]*\"|'[^']*'|<!--.*?(?:-->|\Z)|[\[\]>]", re.DOTALL)
# The start tag of a root this parser reads, for a <!DOCTYPE> that never ends.
_KNOWN_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(?:urlset|sitemapindex|rss|RDF|feed)[\s>/]")


def parse_sitemap(
    data: bytes,
    *,
    url: str | None = None,
    base_url: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    now: datetime | None = None,
    on_entries: Callable[[list[Entry]], None] | None = None,
) -> ParsedSitemap:
    """Read a sitemap, sitemap index, text list, RSS or Atom feed, gzipped or not.

    ``url``: where ``data`` came from, for the location rule (``out-of-scope``) and to
    resolve a relative ``loc`` for its problems; ``base_url``: that address without the
    location rule. Reading stops after ``max_bytes`` decompressed bytes. ``now``
    (default: the current time) decides which lastmod is in the future. Every URL that
    could be read is an :class:`~.model.Entry`, every fault a :class:`~.model.Problem`.
    Never raises: an unexpected failure is a logged ``parser-error`` problem.

    ``on_entries``, when given, is called with the entries in document order, in lists
    of up to 1,000, as they are read, and none is kept (``entries`` is empty,
    ``entry_count`` says how many): memory follows a batch, not the file. Its
    exceptions are raised again here. Without it, ``entries`` is a list when there are
    at most :data:`KEPT_ENTRIES`, else a :class:`~.model.Rereading` that reads them
    again from ``data`` each time it is iterated.
    """
    args = (data, url, base_url, max_bytes, aware(now))
    if on_entries is not None:
        return _handed(_parse(*args), on_entries)
    # Without a consumer: the entries kept while few, read again when many.
    kept: list[Entry] = []
    read = 0

    def keep(batch: list[Entry]) -> None:
        nonlocal read
        read += len(batch)
        if read <= KEPT_ENTRIES:
            kept.extend(batch)
        else:
            kept.clear()

    result = _handed(_parse(*args), keep)
    many = result.entry_count > KEPT_ENTRIES
    result.entries = Rereading(result.entry_count, lambda: _parse(*args)) if many else kept
    return result


def _handed(
    batches: Generator[list[Entry], None, ParsedSitemap], consumer: Callable[[list[Entry]], None]
) -> ParsedSitemap:
    """Hand each batch of a reading to *consumer*; the reading's result."""
    while True:
        try:
            batch = next(batches)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]  # the generator's return value
        consumer(batch)


def _parse(
    data: bytes, url: str | None, base_url: str | None, max_bytes: int, now: datetime
) -> Generator[list[Entry], None, ParsedSitemap]:
    """The entries, :data:`~.reading.ENTRY_BATCH` at a time (the last batch shorter) as
    they are read; returns the result (its ``entries`` empty)."""
    reading = Reading(now=now, scope=Scope.of(url), base=base_url or url)
    for end in itertools.chain(_steps(reading, data, max_bytes, url), [True]):
        entries = [] if reading.sink is None else reading.sink.entries
        while len(entries) >= ENTRY_BATCH or (end and entries):
            yield entries[:ENTRY_BATCH]
            del entries[:ENTRY_BATCH]
    return reading.result()


def _steps(reading: Reading, data: bytes, max_bytes: int, url: str | None) -> Iterator[None]:
    """The reading, a step at a time (see :mod:`.reading`)."""
    try:
        body, reading.layers, problems = decompress(data, max_bytes)
        reading.size = len(body)
        for problem in problems:
            reading.problems.add(problem)
        stopped = any(
            problem.code in ("too-large", "gzip-bomb", "gzip-error", "gzip-truncated")
            for problem in problems
        )
        if len(body) > MAX_BYTES_PER_FILE and not reading.problems.has("too-large"):
            reading.problems.new(
                "too-large",
                f"{len(body):,} bytes uncompressed, over the protocol's {MAX_BYTES_PER_FILE:,}",
            )
        reading.complete = not stopped
        yield from _read(reading, body, stopped)
    except Exception as exc:  # the contract is "a value, never an exception"
        logger.exception("sitemap parser failed on %s", url or "a document")
        reading.problems.new("parser-error", f"the parser failed: {type(exc).__name__}: {exc}")
        reading.complete = False


def _read(reading: Reading, body: bytes, stopped: bool) -> Iterator[None]:
    """Find the format of a decompressed document and hand it to its reader (what is
    skipped at its start is an offset, not a slice: no copy)."""
    doc, start = _to_utf8(reading, body)
    first = _NON_SPACE.search(doc, start)
    if first is None:
        reading.not_a_sitemap("empty file")
        return
    if doc[first.start() : first.start() + 1] != b"<":
        yield from read_text(reading, doc, stopped, start)
        return
    line_offset = 0
    if first.start() > start and doc.startswith(b"<?xml", first.start()):
        # Often a blank line printed by a CMS plugin before the declaration;
        # XML allows nothing there.
        line_offset = doc.count(b"\n", start, first.start())
        reading.problems.new(
            "whitespace-before-declaration",
            "whitespace before <?xml ...?>, which must come first",
            1,
        )
        start = first.start()
    yield from _read_xml(reading, doc, start, line_offset, stopped)


def _relabelled(doc: bytes) -> bytes:
    """*doc* with its XML declaration saying UTF-8."""
    return _ENCODING_IN_DECLARATION.sub(rb"\1\2UTF-8\2", doc, count=1)


def _to_utf8(reading: Reading, doc: bytes) -> tuple[bytes, int]:
    """Skip a UTF-8 BOM; transcode UTF-16; note a declared non-UTF-8 encoding.
    Returns the document and where it starts."""
    if doc.startswith(codecs.BOM_UTF8):
        return doc, len(codecs.BOM_UTF8)
    for start, utf16 in _UTF16:
        if doc.startswith(start):
            reading.problems.new("not-utf8", "the file is UTF-16; the protocol requires UTF-8")
            return _relabelled(doc.decode(utf16, "replace").encode()), 0
    first = _NON_SPACE.search(doc, 0, 1024)
    declared = _XML_DECLARATION.match(doc, first.start()) if first is not None else None
    if declared is None:
        return doc, 0
    name = declared.group(2).decode("ascii")
    try:
        info = codecs.lookup(name)
    except LookupError:
        info = None
    codec = info.name if info is not None else ""
    if codec in ("utf-8", "ascii"):
        return doc, 0
    if info is not None and not getattr(info, "_is_text_encoding", True):
        # hex, base64, rot13, zlib...: Python's codecs, but not of text.
        reading.problems.new(
            "not-utf8", f"declared encoding {name!r} is not a text encoding; read as UTF-8", 1
        )
        return _relabelled(doc), 0
    if codec and not codec.startswith(("utf-16", "utf-32", "utf-8")):
        decoded = _decoded(reading, doc, codec, declared.end())
        if decoded is not None:
            # EUC-KR, Shift_JIS, windows-1252...: transcoded (a copy, for this rare
            # case), so that lxml never has to know Python's name for the encoding.
            reading.problems.new(
                "not-utf8", f"declared encoding {name!r}; the protocol requires UTF-8", 1
            )
            return _relabelled(decoded.encode("utf-8", "replace")), 0
    # Unknown, "UTF-16" on ASCII-compatible bytes, or an encoding the declaration
    # itself cannot be in (EBCDIC's cp037): a wrong label. Read as UTF-8.
    reading.problems.new("not-utf8", f"declared encoding {name!r} is wrong; read as UTF-8", 1)
    return _relabelled(doc), 0


def _decoded(reading: Reading, doc: bytes, codec: str, declaration_end: int) -> str | None:
    """*doc* decoded from *codec* (bytes not in it replaced by U+FFFD, with an
    ``encoding-error``), or None when its XML declaration, read as ASCII, does not
    read the same in *codec*: the label cannot be right."""
    head = doc[:declaration_end]
    try:
        if head.decode(codec) != head.decode("ascii"):
            return None
        try:
            return doc.decode(codec)
        except UnicodeDecodeError:
            reading.problems.new(
                "encoding-error", f"bytes that are not {codec}; replaced by U+FFFD"
            )
            return doc.decode(codec, "replace")
    except (UnicodeError, LookupError, ValueError, TypeError):
        # A codec that cannot decode at all ("undefined", "idna" on a document).
        return None


@dataclass(slots=True)
class _Prolog:
    """What comes before the root element."""

    root_position: int | None = None
    root_name: str | None = None
    doctype: tuple[int, int] | None = None
    doctype_name: str | None = None


def _doctype_end(doc: bytes, start: int) -> int:
    # The end of <!DOCTYPE ... [ internal subset ]>: the first ">" outside
    # quotes, comments and the [ ] subset. Unterminated: the end of the data.
    depth = 0
    for token in _DOCTYPE_TOKEN.finditer(doc, start + len(b"<!DOCTYPE")):
        text = token.group()
        if text == b"[":
            depth += 1
        elif text == b"]":
            depth = max(depth - 1, 0)
        elif text == b">" and depth == 0:
            return token.end()
    return len(doc)


def _past_misc(doc: bytes, position: int) -> int:
    skipped = _PROLOG_MISC.match(doc, position)
    return position if skipped is None else skipped.end()


def _is_element(doc: bytes, position: int) -> bool:
    return doc.startswith(b"<", position) and not doc.startswith((b"<?", b"<!"), position)


def _scan_prolog(doc: bytes, start: int) -> _Prolog:
    """Find the DOCTYPE and the root element's name, past whitespace, comments
    and processing instructions (skipped by one regex match per run, so that
    a file of a million "<?a?>" costs no Python loop)."""
    prolog = _Prolog()
    position = start
    while True:
        position = _past_misc(doc, position)
        if doc[position : position + 9].upper() == b"<!DOCTYPE":
            end = _doctype_end(doc, position)
            if end == len(doc) or not _is_element(doc, _past_misc(doc, end)):
                # A quote or bracket left open ran the declaration into the
                # document: it ends where a sitemap's root starts (the
                # declaration's own check reports what is wrong with it).
                root = _KNOWN_ROOT.search(doc, position + 9)
                if root is not None and root.start() < end:
                    end = root.start()
            name = _DOCTYPE_NAME.match(doc, position + 9)
            prolog.doctype = (position, end)
            prolog.doctype_name = name.group(1).decode("ascii", "replace") if name else None
            position = end
            continue
        if _is_element(doc, position):
            name = _NAME.match(doc, position + 1)
            if name is not None:
                prolog.root_position = position
                prolog.root_name = name.group().decode("utf-8", "replace")
        # Anything else (text, an unterminated comment, the end): no root here.
        return prolog


def _read_xml(
    reading: Reading, doc: bytes, start: int, line_offset: int, stopped: bool
) -> Iterator[None]:
    """Read an XML document (``doc`` from ``start``): its root says the format; the
    strict reader reads its entries if it is well-formed, the tolerant one if not."""
    prolog = _scan_prolog(doc, start)
    root_local = (prolog.root_name or "").rpartition(":")[2]
    if (prolog.doctype_name or "").lower() == "html" or root_local.lower() == "html":
        reading.not_a_sitemap("an HTML page, not a sitemap")
        return
    view = memoryview(doc)
    # What lxml reads: the document, without a copy, or, around a <!DOCTYPE>, the
    # parts before and after it and our declaration between them.
    pieces: list[bytes | memoryview] = [view[start:]]
    general: list[str] = []
    if prolog.doctype is not None:
        begin, end = prolog.doctype
        general, replacement = read_doctype(
            reading.problems,
            doc[begin:end],
            doc.count(b"\n", start, begin) + 1 + line_offset,
            prolog.root_name or "x",
        )
        # lxml reads our declaration (same lines), never the document's own.
        pieces = [view[start:begin], replacement, view[end:]]
        if prolog.root_position is not None:
            prolog.root_position += len(replacement) - (end - begin)
    elif doc.find(b"<!ENTITY", start) >= 0:
        reading.problems.new("entity-declaration", "an <!ENTITY> declaration; not expanded")
    if prolog.root_name is None or prolog.root_position is None:
        reading.not_a_sitemap("XML without a root element")
        return
    prefix, _, local = prolog.root_name.rpartition(":")
    if local not in _ROOTS:
        reading.not_a_sitemap(
            f"root element <{prolog.root_name}> is not urlset, sitemapindex, rss or feed"
        )
        return
    reading.kind, block, sink_class = _ROOTS[local]
    sink = reading.new_sink(sink_class, block, local)
    try:
        yield from read_strict(sink, pieces, prefix, line_offset, stopped)
    except Failed as failure:
        if failure.real:
            reading.problems.new(
                "xml-error", f"not well-formed XML: {failure.message}", failure.line
            )
        # The tolerant reading goes on with the same sink, past the entries
        # the strict one read (they may have been handed over already).
        if len(pieces) == 1:
            text, text_start = doc, start
        else:
            # Around a <!DOCTYPE>: one copy, for the tolerant reading's scan.
            text, text_start = b"".join(pieces), 0
        root_at = prolog.root_position - start + text_start
        tolerant = Tolerant(reading, sink, text, text_start, root_at, prefix, line_offset, general)
        yield from tolerant.run(stopped, failure.read)
    if stopped:
        reading.complete = False
