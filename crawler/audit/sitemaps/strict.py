"""The strict reading: lxml's pull parser over a well-formed document.

A strict parse comes first: fast, and exact when the file is well-formed. The
document is parsed as a stream (``XMLPullParser``), and each entry is cleared once
read, so memory follows the entries, not a DOM of the file. lxml runs with
``resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False``
(:data:`SAFE_PARSER_OPTIONS`, for the tolerant reading and the ``<!DOCTYPE>`` check
too) and a resolver that answers every request for an external resource with
nothing (:func:`safe_parser`): nothing is ever expanded or fetched, and an XXE
reference or a billion-laughs entity stays the literal text ``&name;``. At the first
XML error the parse stops with :class:`Failed`, and :mod:`.tolerant` reads the
document again.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from crawler.audit.sitemaps.reading import Sink, split_tag

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
# lxml is fed this much at a time.
_FEED_STEP = 1024 * 1024


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


class Failed(Exception):
    """The strict parse met an XML error: read the file again, tolerantly."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def lxml_failure(exc: Exception) -> tuple[str, int | None]:
    """lxml's error message and line.

    With resolve_entities=False the feed parser can raise a bare "no element
    found" at line 0 for an undefined entity; the real error is then the last
    one in its error log (which may also hold older, unrelated entries).
    """
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
    sink: Sink, doc: bytes, local: str, block: str, line_offset: int, stopped: bool
) -> None:
    """Read a document into ``sink`` as a stream, one ``block`` element at a time.

    ``local`` is the root's local name; ``line_offset`` is added to every line.
    Raises :class:`Failed` at the first XML error (the caller then reads the
    document again, tolerantly); when ``stopped`` (the data was cut by our cap)
    the end of the data is not an error.
    """
    parser = etree.XMLPullParser(
        events=("start", "end"), tag=[f"{{*}}{local}", f"{{*}}{block}"], **SAFE_PARSER_OPTIONS
    )
    parser.resolvers.add(_Refuse())
    root: Any = None
    block_tags: set[str] = set()
    view = memoryview(doc)
    try:
        for start in range(0, len(doc), _FEED_STEP):
            parser.feed(bytes(view[start : start + _FEED_STEP]))
            root = _events(parser, sink, root, block, block_tags, line_offset)
        if not stopped:
            # close() raises on a document cut short. When we cut it (the
            # byte cap), every entry that ended has been read already.
            parser.close()
            root = _events(parser, sink, root, block, block_tags, line_offset)
    except etree.LxmlError as exc:
        message, line = lxml_failure(exc)
        raise Failed(message, None if line is None else line + line_offset) from None


def _events(
    parser: Any, sink: Sink, root: Any, block: str, block_tags: set[str], offset: int
) -> Any:
    """Hand the parser's pending events to ``sink``, freeing each entry once read;
    returns the root element (None until it has started)."""
    for action, element in parser.read_events():
        if action == "start":
            if root is None:
                root = element
                sink.on_root(split_tag(element.tag)[0], (element.sourceline or 1) + offset)
            continue
        if element is root:
            for child in root:
                sink.unknown(child, offset)
            continue
        tag = element.tag
        if tag not in block_tags:
            if split_tag(tag)[1] != block:
                continue
            block_tags.add(tag)
        sink.on_block(element, offset)
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
    return root
