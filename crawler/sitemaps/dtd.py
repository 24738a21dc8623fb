"""The ``<!DOCTYPE>``: reported, checked, and never loaded or expanded.

A sitemap has no use for a DTD, and a DTD is how XXE and billion-laughs attacks work,
so lxml never reads the document's own. :func:`read_doctype` reports it (``dtd``) and
each entity it declares (``entity-declaration``, external or internal, with its value),
checks it alone with a safe parser (:func:`~.strict.safe_parser`; malformed:
``xml-error``), and writes the declaration lxml reads instead
(as many lines): the same general entity names, each an
internal entity whose text is its own reference, so that ``&xxe;`` is read as the
literal text ``&xxe;``, as the tolerant reading repairs an undefined one.
"""

from __future__ import annotations

import re
from typing import Final

from lxml import etree

from crawler.sitemaps.model import Problems, quote
from crawler.sitemaps.strict import lxml_failure, safe_parser

__all__ = ["read_doctype"]

# Quoted literals and comments inside the declaration, to skip (a comment may
# hold anything, a literal a ">").
_LITERAL = rb"\"[^\"]*\"|'[^']*'"
_COMMENT = re.compile(rb"<!--.*?(?:-->|\Z)", re.DOTALL)
_EXTERNAL_ID = re.compile(
    rb"\s*(?P<kind>SYSTEM|PUBLIC)\s*(?P<first>%s)(?:\s*(?P<second>%s))?" % (_LITERAL, _LITERAL)
)
_DOCTYPE_HEAD = re.compile(rb"<!DOCTYPE\s+(?P<name>[^\s\[>]+)", re.IGNORECASE)
_ENTITY = re.compile(
    rb"<!ENTITY\s+(?P<parameter>%\s+)?(?P<name>[^\s\"'>%]+)"
    rb"(?:\s*(?P<value>" + _LITERAL + rb")|(?P<external>" + _EXTERNAL_ID.pattern + rb"))?"
)
# Entity names we declare again for lxml: a plain XML name, and not one of the
# five XML predefines (which may only be declared with their own values).
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_PREDEFINED: Final = frozenset({"amp", "lt", "gt", "quot", "apos"})


def _text(literal: bytes | None) -> str:
    return "" if literal is None else literal[1:-1].decode("utf-8", "replace")


def _external(match: re.Match[bytes]) -> str:
    kind = match.group("kind").decode("ascii")
    first, second = _text(match.group("first")), match.group("second")
    if kind == "SYSTEM":
        return f"SYSTEM {quote(first)}"
    return f"PUBLIC {quote(first)}" + (f" {quote(_text(second))}" if second is not None else "")


def read_doctype(
    problems: Problems, declaration: bytes, line: int, root: str
) -> tuple[list[str], bytes]:
    """Report ``declaration`` (the whole ``<!DOCTYPE ...>``, starting at ``line``) and
    its entities into ``problems``, and check it; the general entities it declares, and
    the declaration lxml reads instead (named ``root``)."""
    head = _DOCTYPE_HEAD.match(declaration)
    name = head.group("name").decode("utf-8", "replace") if head else root
    external = _EXTERNAL_ID.match(declaration, head.end()) if head else None
    what = (
        f" with an external DTD ({_external(external)}): not loaded"
        if external is not None
        else "; ignored (no DTD is loaded)"
    )
    problems.new("dtd", f"a <!DOCTYPE {name}> declaration{what}", line)
    general: list[str] = []
    # Comments are blanked (their newlines kept) so that what they hold is no
    # declaration, and lines still count right.
    text = _COMMENT.sub(lambda m: re.sub(rb"[^\n]", b" ", m.group()), declaration)
    seen: set[str] = set()
    # Lines counted on from the declaration before (from the start, 80,000 took minutes).
    at, counted = line, 0
    for found in _ENTITY.finditer(text):
        entity = found.group("name").decode("utf-8", "replace")
        parameter = found.group("parameter") is not None
        at += text.count(b"\n", counted, found.start())
        counted = found.start()
        what = "parameter entity" if parameter else "entity"
        if found.group("external") is not None:
            ids = _EXTERNAL_ID.match(found.group("external"))
            assert ids is not None  # the same pattern matched it
            message = f"declares an external {what} {entity!r} ({_external(ids)}): not loaded"
        elif found.group("value") is not None:
            value = _text(found.group("value"))
            message = f"declares the {what} {entity!r} as {quote(value)}: not expanded"
        else:
            message = f"declares the {what} {entity!r} (not well-formed): not expanded"
        if not parameter:
            message += f"; &{entity}; is read as that text"
            if entity not in seen and _PLAIN_NAME.fullmatch(entity) and entity not in _PREDEFINED:
                seen.add(entity)
                general.append(entity)
        problems.new("entity-declaration", message, at)
    _check(problems, declaration, line)
    return general, _replacement(root, general, declaration.count(b"\n"))


def _check(problems: Problems, declaration: bytes, line: int) -> None:
    """The declaration as a document of its own (and an empty root): an
    ``xml-error`` when lxml finds it malformed. Nothing is expanded or loaded."""
    parser = safe_parser(encoding="utf-8")
    try:
        etree.fromstring(declaration + b"<x/>", parser)
    except etree.LxmlError as exc:
        message, at = lxml_failure(exc)
        problems.new(
            "xml-error",
            f"the <!DOCTYPE> is not well-formed: {message}",
            line if at is None else line + at - 1,
        )


def _replacement(root: str, general: list[str], newlines: int) -> bytes:
    """A declaration of ``general`` entities, each one's text its own reference
    (``&#38;#38;`` is ``&#38;`` once declared, ``&`` once read), on one line, then
    the original's newlines; nothing at all when there are no entities."""
    declaration = f"<!DOCTYPE {root} [{entities(general)}]>".encode() if general else b""
    return declaration + b"\n" * newlines


def entities(general: list[str]) -> str:
    """Declarations of ``general`` entities, each one's text its own reference."""
    return "".join(f'<!ENTITY {name} "&#38;#38;{name};">' for name in general)
