"""Plain-text sitemaps: one URL a line.

A file that does not start with ``<`` is taken as text when one of its first ten
non-blank lines starts with ``http://`` or ``https://``; otherwise it is
``not-a-sitemap``. Blank lines are skipped, a line that is not a URL is
``not-a-url``, and every URL gets the same checks as a ``<loc>``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from crawler.sitemaps.model import Entry, Kind, quote
from crawler.sitemaps.reading import Reading, Sink

_HTTP_TEXT = re.compile(r"https?://", re.IGNORECASE)
# A line with something on it (group 1: from its first non-blank character). Blank
# runs are skipped by the regex engine, not a Python loop; each line is decoded alone.
_TEXT_LINE = re.compile(rb"[^\S\n]*(\S[^\n]*)")


def read_text(reading: Reading, doc: bytes, stopped: bool, start: int = 0) -> Iterator[None]:
    """Read ``doc`` from ``start`` as a list of URLs into ``reading`` (or find it is
    none), yielding after each line."""
    if b"\0" in doc[start : start + 4096]:
        reading.not_a_sitemap("binary data, not XML or a list of URLs")
        return
    lines = _TEXT_LINE.finditer(doc, start)
    head = list(itertools.islice(lines, 10))
    if not any(_HTTP_TEXT.match(match.group(1).decode(errors="replace").strip()) for match in head):
        reading.not_a_sitemap("neither XML nor a list of URLs")
        return
    reading.kind = Kind.TEXT
    # Lines are not elements: a plain Sink, fed through add().
    sink = reading.new_sink(Sink, "line", "text")
    position, line = start, 1
    # A file cut by the byte cap ends in part of a URL: not an entry.
    cut_at = len(doc) if stopped and not doc.endswith(b"\n") else None
    for match in itertools.chain(head, lines):
        line += doc.count(b"\n", position, match.start())
        position = match.start()
        if match.end() == cut_at:
            break
        # Decoded, a line may still start or end with blanks that are not ASCII.
        value = reading.decode(match.group(1), line).strip()
        if not value:
            continue
        if not _HTTP_TEXT.match(value):
            sink.problems.new("not-a-url", f"not a URL: {quote(value)}", line)
            continue
        sink.count_block(line)
        sink.add(Entry(loc=value, lastmod=None, changefreq=None, priority=None, line=line))
        yield
