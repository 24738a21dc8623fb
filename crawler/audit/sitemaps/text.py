"""Plain-text sitemaps: one URL a line.

A file that does not start with ``<`` is taken as text when one of its first ten
non-blank lines starts with ``http://`` or ``https://``; otherwise it is
``not-a-sitemap``. Blank lines are skipped, a line that is not a URL is
``not-a-url``, and every URL gets the same checks as a ``<loc>``.
"""

from __future__ import annotations

import itertools
import re

from crawler.audit.sitemaps.model import Entry, Kind, quote
from crawler.audit.sitemaps.reading import Reading, Sink

_HTTP_LINE = re.compile(r"https?://", re.IGNORECASE)
# A text line with something on it: group 1 is the line from its first
# non-blank character. Blank runs are skipped by the regex engine, not by a
# Python loop, so a file of 50 MiB of newlines costs no time.
_TEXT_LINE = re.compile(r"[^\S\n]*(\S[^\n]*)")


def read_text(reading: Reading, doc: bytes, stopped: bool) -> None:
    """Read ``doc`` as a list of URLs into ``reading`` (or find it is none)."""
    if b"\0" in doc[:4096]:
        reading.not_a_sitemap("binary data, not XML or a list of URLs")
        return
    text = reading.decode(doc)
    lines = _TEXT_LINE.finditer(text)
    head = list(itertools.islice(lines, 10))
    if not any(_HTTP_LINE.match(match.group(1)) for match in head):
        reading.not_a_sitemap("neither XML nor a list of URLs")
        return
    reading.kind = Kind.TEXT
    # Lines are not elements: a plain Sink, fed through add().
    sink = reading.sink = Sink(Kind.TEXT, "line", "text", reading.now, reading.scope)
    position, line = 0, 1
    # A file cut by the byte cap ends in part of a URL: not an entry.
    cut_at = len(text) if stopped and not text.endswith("\n") else None
    for match in itertools.chain(head, lines):
        line += text.count("\n", position, match.start())
        position = match.start()
        if match.end() == cut_at:
            break
        value = match.group(1).rstrip()
        if not _HTTP_LINE.match(value):
            sink.problems.new("not-a-url", f"not a URL: {quote(value)}", line)
            continue
        sink.count_block(line)
        sink.add(Entry(loc=value, lastmod=None, changefreq=None, priority=None, line=line))
