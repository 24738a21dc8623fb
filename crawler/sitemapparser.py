"""Read a site's existing sitemaps for the ``audit`` command, safely, and say what is wrong.

Issue: "Audit: compare a site's existing sitemaps with what a crawl finds". The
audit must see every URL a sitemap lists, so one bad entry costs that entry and
nothing more, and every fault is returned as a :class:`Problem` value (as
ultimate-sitemap-parser returns ``InvalidSitemap(url, reason)``) instead of
being raised. Scrapy's ``scrapy.utils.sitemap.Sitemap`` is not used: it drops
the rest of a file at the first entry lxml cannot read.

Formats (detected from the content, never from the URL): ``<urlset>`` and
``<sitemapindex>`` XML, in the 0.9 namespace or, with a problem, in none or
another one (Google's old 0.84); plain text, one URL a line; RSS 2.0 (and 1.0)
and Atom 1.0 (and 0.3) feeds. Anything else, an HTML error page served at
``/sitemap.xml`` above all, is :attr:`Kind.UNKNOWN` with ``not-a-sitemap``.

Hostile input:

* gzip is recognised by its magic bytes, up to two layers, and inflated in
  bounded steps (``zlib.decompressobj`` with ``max_length``), so a gzip bomb
  stops at ``max_bytes`` having allocated about that much.
* A ``<!DOCTYPE>`` is reported (``dtd``, and ``entity-declaration`` when it
  declares entities) and blanked out before lxml sees the document; lxml also
  runs with ``resolve_entities=False, no_network=True, load_dtd=False,
  huge_tree=False``. Nothing is ever expanded or fetched: an XXE reference or a
  billion-laughs entity stays the literal text ``&name;``.
* The document is parsed as a stream (``XMLPullParser``), and each entry is
  cleared once read, so memory follows the entries, not a DOM of the file.

Recovery: a strict parse first (fast, and exact when the file is well-formed).
If lxml reports an error, that error becomes an ``xml-error`` problem and the
file is read again by a tolerant scan that cuts it into ``<url>`` (``<sitemap>``,
``<item>``, ``<entry>``) blocks with a tokenizer and parses each block on its own
(in batches, one by one only where a batch fails). A block that still fails is
repaired: a raw ``&`` (``unescaped-ampersand``) or an undefined entity such as
``&nbsp;`` (``undefined-entity``) is taken as literal text, because search
engines tolerate the raw ``&`` and the audit should compare the URL the site
meant. A block that fails even then gives its ``<loc>`` by regex, with an
``xml-error`` of its own. A file cut off mid-entry gives every complete entry
before the cut, a ``truncated`` problem and ``complete=False``. The file-level
``xml-error`` (lxml's message and line) is kept beside the per-entry diagnosis:
a search engine may reject a file that is not well-formed as a whole. A file
cut by our own byte cap is not "truncated": ``too-large`` says why it ends.
"""

from __future__ import annotations

import bisect
import codecs
import io
import itertools
import logging
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from email.utils import parsedate_to_datetime
from enum import Enum
from typing import Any, Final
from urllib.parse import urlsplit

from lxml import etree

from crawler.entry import ChangeFreq, check_loc
from crawler.lastmod import lastmod_datetime, w3c_datetime
from crawler.limits import (
    MAX_BYTES_PER_FILE,
    MAX_IMAGES_PER_URL,
    MAX_LOC_LENGTH,
    MAX_SITEMAPS_PER_INDEX,
    MAX_URLS_PER_FILE,
    MIN_LOC_LENGTH,
    SITEMAP_NS,
)

__all__ = [
    "Entry",
    "Kind",
    "ParsedSitemap",
    "Problem",
    "check_entry",
    "decompress",
    "parse_sitemap",
]

logger = logging.getLogger(__name__)

XHTML_NS: Final = "http://www.w3.org/1999/xhtml"
IMAGE_NS: Final = "http://www.google.com/schemas/sitemap-image/1.1"
ATOM_NS: Final = "http://www.w3.org/2005/Atom"
# Atom 0.3 predates the RFC; Google still lists it among the feeds it reads.
ATOM03_NS: Final = "http://purl.org/atom/ns#"
RSS1_NS: Final = "http://purl.org/rss/1.0/"
DC_NS: Final = "http://purl.org/dc/elements/1.1/"

# The default cap: one byte over the protocol's 50 MiB, so that a file that is
# over the limit can be told from one that is exactly at it.
DEFAULT_MAX_BYTES: Final = MAX_BYTES_PER_FILE + 1

_GZIP_MAGIC = b"\x1f\x8b"
# 16 + MAX_WBITS: a gzip header and trailer, nothing else (not raw zlib).
_GZIP_WBITS = 16 + zlib.MAX_WBITS
# Inflate at most this much per call: the unit of memory a bomb can cost us
# beyond max_bytes.
_INFLATE_STEP = 64 * 1024
_MAX_GZIP_LAYERS = 2
# Deflate cannot do better than about 1032:1 (zeros). Real sitemaps, even very
# repetitive ones, stay far below: measured at gzip -9, 60,000 pretty-printed
# <url>s with one lastmod, changefreq and priority 58:1, the same compact 47:1,
# 20 hreflang alternates a URL 32:1. A stream that reaches the cap at over 200:1
# is a bomb; either way reading stops, only the code differs.
_BOMB_RATIO = 200
# lxml is fed this much at a time.
_FEED_STEP = 1024 * 1024
# The tolerant scan parses this many blocks as one small document, and falls
# back to one at a time only for a batch that fails.
_BATCH = 256
# A hostile file can hold millions of bad entries; past this many problems of
# one code the rest are counted, not listed ("problems-suppressed").
MAX_PROBLEMS_PER_CODE: Final = 1000
# A future lastmod is only reported beyond this: time zones alone put a page
# written "today" up to 14 hours ahead of UTC.
_FUTURE_SLACK = timedelta(days=1)
# How much of a value a message quotes: a 10 MB <loc> must not become a 10 MB
# message.
_QUOTE = 100

# lxml settings for everything read here: no DTD, no entity expansion, no
# network, libxml2's default size limits (huge_tree=False).
_SAFE_PARSER_OPTIONS: dict[str, Any] = {
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

_CHANGEFREQS = frozenset(value.value for value in ChangeFreq)
# xsd:decimal: no exponent, no "NaN" (Decimal() would take both).
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)
_PRIORITY_MAX = Decimal("1.0")
# The W3C Datetime note's forms that xsd:date / xsd:dateTime also accept, except
# that hh:mm without seconds is taken (the note allows it; search engines read
# it). Year-only and year-month are W3C but not xsd, and are invalid here.
_W3C_LASTMOD = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:[0-9]{2}))?",
    re.ASCII,
)
_LASTMOD_NO_ZONE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?", re.ASCII
)
# A subset of what check_loc() accepts (no %, brackets, userinfo, second "#"
# or non-ASCII): URLs like this need no closer look.
_PLAIN_HTTP_URL = re.compile(
    r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:[/?#][A-Za-z0-9._~!$&'()*+,;=:@/?-]*)?",
    re.ASCII,
)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_WHITESPACE = re.compile(r"\s")
_NON_SPACE = re.compile(rb"\S")
_HTTP_LINE = re.compile(r"https?://", re.IGNORECASE)
# A text line with something on it: group 1 is the line from its first
# non-blank character. Blank runs are skipped by the regex engine, not by a
# Python loop, so a file of 50 MiB of newlines costs no time.
_TEXT_LINE = re.compile(r"[^\S\n]*(\S[^\n]*)")
_XML_DECLARATION = re.compile(rb"<\?xml\s[^>]*?encoding\s*=\s*([\"'])([A-Za-z0-9._-]+)\1")
_ENCODING_IN_DECLARATION = re.compile(rb"(<\?xml\s[^>]*?encoding\s*=\s*)([\"'])[A-Za-z0-9._-]+\2")
_NAME = re.compile(rb"[^\s/>!?<]+")
_PROLOG_MISC = re.compile(rb"(?:\s+|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)
_DOCTYPE_NAME = re.compile(rb"\s*([^\s\[>]+)")
# Inside <!DOCTYPE ...>: quoted strings, comments (an unterminated one runs to
# the end, in one match, not one scan per "<!--") and the brackets and ">".
_DOCTYPE_TOKEN = re.compile(rb"\"[^\"]*\"|'[^']*'|<!--.*?(?:-->|\Z)|[\[\]>]", re.DOTALL)
_LXML_POSITION = re.compile(r",? line \d+, column \d+$")


class Kind(str, Enum):  # noqa: UP042 (the issue's API: str and Enum, as callers expect)
    """What a fetched sitemap turned out to be."""

    URLSET = "urlset"
    INDEX = "sitemapindex"
    TEXT = "text"
    RSS = "rss"
    ATOM = "atom"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Problem:
    """One fault: a stable machine ``code``, one human line, and where, when known.

    ``line`` counts lines of the decompressed document, from 1. The codes:

    * the file: ``not-a-sitemap``, ``too-large``, ``gzip-bomb``, ``double-gzip``,
      ``too-many-gzip-layers``, ``gzip-error``, ``gzip-truncated``,
      ``gzip-trailing-data``, ``not-utf8``, ``encoding-error``,
      ``whitespace-before-declaration``, ``dtd``, ``entity-declaration``,
      ``xml-error``, ``truncated``, ``no-namespace``, ``wrong-namespace``,
      ``too-many-urls``, ``too-many-sitemaps``, ``problems-suppressed``,
      ``parser-error`` (a bug of ours, logged);
    * an entry: ``missing-loc``, ``empty-loc``, ``whitespace-around-loc``,
      ``whitespace-in-loc``, ``relative-loc``, ``invalid-loc``,
      ``loc-too-long``, ``invalid-lastmod``, ``lastmod-no-timezone``,
      ``lastmod-future``, ``invalid-changefreq``, ``invalid-priority``,
      ``too-many-images``, ``invalid-alternate``, ``unknown-element``,
      ``duplicate-element``, ``duplicate-loc``, ``out-of-scope``,
      ``unescaped-ampersand``, ``undefined-entity``, ``not-a-url`` (text).

    ``index-lists-index`` is the caller's to report: only it follows the index.
    """

    code: str
    message: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One listed URL (for an index, one listed sitemap), as the file wrote it.

    ``loc`` has its surrounding whitespace stripped and its entities decoded
    (``&amp;`` is ``&``); ``lastmod``, ``changefreq`` and ``priority`` are the raw
    text, stripped, not checked (see :func:`check_entry`); for RSS ``lastmod`` is
    the ``pubDate`` and for Atom the ``<updated>``. ``line`` is the line of the
    ``<loc>`` (of the text line, of the ``<link>``).
    """

    loc: str
    lastmod: str | None
    changefreq: str | None
    priority: str | None
    line: int | None
    alternates: tuple[tuple[str, str], ...] = ()
    images: int = 0


@dataclass(slots=True)
class ParsedSitemap:
    """What :func:`parse_sitemap` read.

    ``size`` is the number of decompressed bytes read; ``complete`` is ``False``
    when reading stopped before the end of the data (the byte cap, a broken or
    cut-off gzip stream, a document that ends mid-entry or before its root is
    closed).
    """

    kind: Kind
    entries: list[Entry]
    problems: list[Problem]
    namespace: str | None
    compressed_layers: int
    size: int
    complete: bool


def _quote(value: str) -> str:
    if len(value) > _QUOTE:
        return repr(value[:_QUOTE]) + "..."
    return repr(value)


# -- decompression ---------------------------------------------------------------


@dataclass(slots=True)
class _GzipState:
    """What one gzip layer saw; filled in while its generator runs."""

    consumed: int = 0
    error: str | None = None
    trailing: bool = False
    finished: bool = False


def _slices(data: bytes) -> Iterator[memoryview]:
    view = memoryview(data)
    for start in range(0, len(data), _INFLATE_STEP):
        yield view[start : start + _INFLATE_STEP]


def _gunzip(source: Iterable[bytes | memoryview], state: _GzipState) -> Iterator[bytes]:
    """Inflate a gzip stream (any number of members) in steps of _INFLATE_STEP.

    Never raises: a corrupt stream sets ``state.error``, bytes after the last
    member that are not a gzip member set ``state.trailing``, and
    ``state.finished`` says whether the last member was complete.
    """
    inflater = zlib.decompressobj(_GZIP_WBITS)
    in_member = True  # inside a member that has produced or consumed something
    first_member = True
    for chunk in source:
        pending: bytes | memoryview = chunk
        while pending:
            if inflater.eof:
                # gzip(1) ignores zero padding after the last member.
                if not bytes(pending).strip(b"\0"):
                    break
                inflater = zlib.decompressobj(_GZIP_WBITS)
                first_member = False
                in_member = False
            while True:
                before = len(pending)
                try:
                    out = inflater.decompress(pending, _INFLATE_STEP)
                except zlib.error as exc:
                    if first_member or in_member:
                        state.error = str(exc)
                    else:
                        state.trailing = True
                    return
                pending = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
                state.consumed += before - len(pending)
                if out:
                    in_member = True
                    yield out
                if inflater.eof:
                    break
                # Input used up and the output step not filled: nothing is
                # left inside zlib. A full step may leave more to drain.
                if not pending and len(out) < _INFLATE_STEP:
                    break
    state.finished = inflater.eof


def _peek(stream: Iterator[bytes], size: int) -> tuple[bytes, Iterator[bytes]]:
    """The first ``size`` bytes of a stream, and the same stream, unconsumed."""
    head: list[bytes] = []
    got = 0
    for piece in stream:
        head.append(piece)
        got += len(piece)
        if got >= size:
            break
    return b"".join(head), itertools.chain(head, stream)


def _gzip_problems(state: _GzipState, layer: str, stopped: bool) -> list[Problem]:
    name = f"{layer} gzip stream".strip()
    problems = []
    if state.error is not None:
        problems.append(Problem("gzip-error", f"the {name} is corrupt: {state.error}"))
    elif state.trailing:
        problems.append(Problem("gzip-trailing-data", f"bytes after the end of the {name}"))
    elif not stopped and not state.finished:
        problems.append(Problem("gzip-truncated", f"the {name} ends early"))
    return problems


def decompress(data: bytes, max_bytes: int) -> tuple[bytes, int, list[Problem]]:
    """Undo gzip, found by its magic bytes (not a file name), up to two layers.

    Returns the document (at most ``max_bytes`` bytes), how many gzip layers
    were removed, and the problems: ``too-large`` when there was more than
    ``max_bytes`` (or ``gzip-bomb`` when that much came out of a stream that
    inflates by over 200:1), ``double-gzip``, ``too-many-gzip-layers``,
    ``gzip-error``, ``gzip-truncated``, ``gzip-trailing-data``. Data that is
    not gzip is returned as it is, capped the same way. Never raises, and never
    holds much more than ``max_bytes`` of output: each inflate step is bounded.
    """
    problems: list[Problem] = []
    if not data.startswith(_GZIP_MAGIC):
        if len(data) > max_bytes:
            problems.append(Problem("too-large", f"over {max_bytes:,} bytes; read stopped there"))
            return data[:max_bytes], 0, problems
        return data, 0, problems

    outer = _GzipState()
    stream: Iterator[bytes] = _gunzip(_slices(data), outer)
    layers = 1
    inner: _GzipState | None = None
    head, stream = _peek(stream, len(_GZIP_MAGIC))
    if head.startswith(_GZIP_MAGIC):
        # Typically a .xml.gz file served again with Content-Encoding: gzip.
        inner = _GzipState()
        stream = _gunzip(stream, inner)
        layers = 2
        problems.append(Problem("double-gzip", "gzip inside gzip: two layers were removed"))
        head, stream = _peek(stream, len(_GZIP_MAGIC))
        if head.startswith(_GZIP_MAGIC):
            problems.append(
                Problem(
                    "too-many-gzip-layers",
                    f"still gzip after {_MAX_GZIP_LAYERS} layers; not unpacked further",
                )
            )

    buffer = io.BytesIO()
    total = 0
    capped = False
    for piece in stream:
        if total + len(piece) > max_bytes:
            buffer.write(piece[: max_bytes - total])
            total = max_bytes
            capped = True
            break
        buffer.write(piece)
        total += len(piece)

    if capped:
        ratio = max_bytes / max(outer.consumed, 1)
        if ratio > _BOMB_RATIO:
            problems.append(
                Problem(
                    "gzip-bomb",
                    f"{outer.consumed:,} compressed bytes inflate to over {max_bytes:,}"
                    f" (over {ratio:,.0f}:1); read stopped there",
                )
            )
        else:
            problems.append(
                Problem("too-large", f"over {max_bytes:,} bytes uncompressed; read stopped there")
            )
    problems.extend(_gzip_problems(outer, "outer" if inner else "", capped))
    if inner is not None:
        problems.extend(_gzip_problems(inner, "inner", capped))
    # getvalue() hands over BytesIO's own buffer (shrunk in place), not a copy.
    return buffer.getvalue(), layers, problems


# -- checks on one entry ------------------------------------------------------------


def _check_url(value: str, line: int | None, what: str) -> Problem | None:
    """The first thing wrong with an absolute http(s) URL, or None."""
    if _PLAIN_HTTP_URL.fullmatch(value) and MIN_LOC_LENGTH <= len(value) <= MAX_LOC_LENGTH:
        return None  # the common case, decided by one regex
    if not value:
        return Problem("empty-loc", f"empty {what}", line)
    if len(value) > MAX_LOC_LENGTH:
        return Problem(
            "loc-too-long",
            f"{what} is {len(value):,} characters, over {MAX_LOC_LENGTH:,}: {_quote(value)}",
            line,
        )
    if _WHITESPACE.search(value):
        return Problem("whitespace-in-loc", f"whitespace inside {what}: {_quote(value)}", line)
    scheme = _SCHEME.match(value)
    if scheme is None:
        return Problem("relative-loc", f"{what} is not an absolute URL: {_quote(value)}", line)
    if scheme.group(1).lower() not in ("http", "https"):
        return Problem("invalid-loc", f"{what} is not an http or https URL: {_quote(value)}", line)
    try:
        # The writer's own test of a publishable <loc>: a host, 12+ characters,
        # no controls, valid %-escapes, brackets only around an IPv6 host.
        check_loc(value)
    except ValueError as exc:
        return Problem("invalid-loc", str(exc), line)
    return None


def _lastmod_fault(value: str, now: datetime) -> tuple[str, str] | None:
    text = value.strip()
    normalised = w3c_datetime(text) if _W3C_LASTMOD.fullmatch(text) else None
    if normalised is None:
        if _LASTMOD_NO_ZONE.fullmatch(text):
            return "lastmod-no-timezone", f"lastmod has a time but no time zone: {_quote(text)}"
        return "invalid-lastmod", f"lastmod is not a W3C datetime: {_quote(text)}"
    if lastmod_datetime(normalised) > now + _FUTURE_SLACK:
        return "lastmod-future", f"lastmod is in the future: {_quote(text)}"
    return None


def _pubdate_fault(value: str, now: datetime) -> tuple[str, str] | None:
    # RSS 2.0 dates are RFC 822 (RFC 2822 in practice), not W3C: kept raw, and
    # checked here as what they are.
    try:
        moment = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return "invalid-lastmod", f"pubDate is not an RFC 822 date: {_quote(value)}"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment > now + _FUTURE_SLACK:
        return "lastmod-future", f"pubDate is in the future: {_quote(value)}"
    return None


def _changefreq_fault(value: str) -> tuple[str, str] | None:
    # xsd:token collapses whitespace; the enumeration itself is case-sensitive.
    if value.strip() in _CHANGEFREQS:
        return None
    return (
        "invalid-changefreq",
        f"changefreq {_quote(value)} is not one of {', '.join(sorted(_CHANGEFREQS))}",
    )


def _priority_fault(value: str) -> tuple[str, str] | None:
    text = value.strip()
    if _DECIMAL.fullmatch(text):
        try:
            if Decimal(0) <= Decimal(text) <= _PRIORITY_MAX:
                return None
        except InvalidOperation:
            pass
    return "invalid-priority", f"priority {_quote(value)} is not a decimal from 0.0 to 1.0"


def _aware(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if now.tzinfo is None:
        return now.replace(tzinfo=UTC)
    return now


class _Checker:
    """check_entry() with memory: a file repeats a few lastmod, changefreq and
    priority values thousands of times, so each distinct value is judged once."""

    _CACHE_SIZE = 4096

    def __init__(self, now: datetime) -> None:
        self.now = _aware(now)
        self.lastmods: dict[str, tuple[str, str] | None] = {}
        self.pubdates: dict[str, tuple[str, str] | None] = {}
        self.changefreqs: dict[str, tuple[str, str] | None] = {}
        self.priorities: dict[str, tuple[str, str] | None] = {}

    def _judge(
        self, cache: dict[str, tuple[str, str] | None], value: str, judge: Any
    ) -> tuple[str, str] | None:
        try:
            return cache[value]
        except KeyError:
            pass
        if len(cache) >= self._CACHE_SIZE:
            cache.clear()  # a file of unique dates: memory stays bounded
        fault = cache[value] = judge(value)
        return fault

    def check(self, entry: Entry, *, pubdate: bool = False) -> list[Problem]:
        line = entry.line
        problems: list[Problem] = []
        loc_problem = _check_url(entry.loc, line, "loc")
        if loc_problem is not None:
            problems.append(loc_problem)
        faults = []
        if entry.lastmod is not None:
            if pubdate:
                faults.append(
                    self._judge(self.pubdates, entry.lastmod, lambda v: _pubdate_fault(v, self.now))
                )
            else:
                faults.append(
                    self._judge(self.lastmods, entry.lastmod, lambda v: _lastmod_fault(v, self.now))
                )
        if entry.changefreq is not None:
            faults.append(self._judge(self.changefreqs, entry.changefreq, _changefreq_fault))
        if entry.priority is not None:
            faults.append(self._judge(self.priorities, entry.priority, _priority_fault))
        for fault in faults:
            if fault is not None:
                problems.append(Problem(fault[0], fault[1], line))
        if entry.images > MAX_IMAGES_PER_URL:
            problems.append(
                Problem(
                    "too-many-images", f"{entry.images:,} images, over {MAX_IMAGES_PER_URL:,}", line
                )
            )
        for hreflang, href in entry.alternates:
            if _check_url(href, line, "href") is not None:
                problems.append(
                    Problem(
                        "invalid-alternate",
                        f"hreflang {_quote(hreflang)} alternate is not an absolute http(s)"
                        f" URL: {_quote(href)}",
                        line,
                    )
                )
        return problems


def check_entry(entry: Entry, *, now: datetime) -> list[Problem]:
    """The protocol's checks on one entry; problems carry ``entry.line``.

    ``loc``: an absolute http(s) URL (``relative-loc``, ``invalid-loc``), at most
    2,047 characters (``loc-too-long``), no whitespace (``whitespace-in-loc``);
    ``lastmod``: a W3C datetime (``invalid-lastmod``), with a time zone if it has
    a time (``lastmod-no-timezone``), not more than a day after ``now``
    (``lastmod-future``); ``changefreq``: one of the seven values
    (``invalid-changefreq``); ``priority``: a decimal from 0.0 to 1.0
    (``invalid-priority``); at most 1,000 images (``too-many-images``); each
    hreflang alternate an absolute http(s) URL (``invalid-alternate``). A naive
    ``now`` is taken as UTC. Never raises.
    """
    return _Checker(now).check(entry)


# -- the reader ---------------------------------------------------------------------


class _Failed(Exception):
    """The strict parse met an XML error: read the file again, tolerantly."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def _split_tag(tag: str) -> tuple[str | None, str]:
    if tag[:1] == "{":
        namespace, _, local = tag[1:].partition("}")
        return namespace, local
    return None, tag


def _element_text(element: Any) -> str:
    if len(element) == 0:
        return element.text or ""
    return "".join(element.itertext())


def _lxml_failure(exc: Exception) -> tuple[str, int | None]:
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


_IMAGE_TAG: Final = f"{{{IMAGE_NS}}}image"
_XHTML_LINK_TAG: Final = f"{{{XHTML_NS}}}link"
_ROOTS: Final = {
    "urlset": (Kind.URLSET, "url"),
    "sitemapindex": (Kind.INDEX, "sitemap"),
    "rss": (Kind.RSS, "item"),
    "RDF": (Kind.RSS, "item"),  # RSS 1.0: <rdf:RDF> with <item>s beside the <channel>
    "feed": (Kind.ATOM, "entry"),
}
_LOC_FAULTS: Final = frozenset(
    {"empty-loc", "loc-too-long", "whitespace-in-loc", "relative-loc", "invalid-loc"}
)
_SITEMAP_FIELDS: Final = {
    Kind.URLSET: ("loc", "lastmod", "changefreq", "priority"),
    Kind.INDEX: ("loc", "lastmod"),
}


class _Problems:
    """Problems in order, at most MAX_PROBLEMS_PER_CODE of each code."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.counts: dict[str, int] = {}

    def add(self, problem: Problem) -> None:
        count = self.counts.get(problem.code, 0) + 1
        self.counts[problem.code] = count
        if count <= MAX_PROBLEMS_PER_CODE:
            self.items.append(problem)

    def new(self, code: str, message: str, line: int | None = None) -> None:
        self.add(Problem(code, message, line))

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


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


@dataclass(slots=True)
class _Scope:
    """The URLs a sitemap at a given URL may list (protocol, "Sitemap file location")."""

    scheme: str
    host: str
    port: int
    directory: str

    @classmethod
    def of(cls, url: str | None) -> _Scope | None:
        if not url:
            return None
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return None
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            return None
        path = parts.path or "/"
        scheme = parts.scheme.lower()
        return cls(
            scheme, parts.hostname, port or _DEFAULT_PORTS[scheme], path[: path.rfind("/") + 1]
        )

    def allows(self, loc: str, same_directory: bool) -> bool:
        try:
            parts = urlsplit(loc)
            scheme = parts.scheme.lower()
            port = parts.port or _DEFAULT_PORTS.get(scheme)
        except ValueError:
            return True  # reported as invalid-loc already
        if (scheme, parts.hostname, port) != (self.scheme, self.host, self.port):
            return False
        return not same_directory or (parts.path or "/").startswith(self.directory)


@dataclass(slots=True)
class _Sink:
    """Entries and entry-level problems of one reading of the document."""

    kind: Kind
    block: str
    root_local: str
    now: datetime
    scope: _Scope | None
    namespace: str | None = None
    entries: list[Entry] = field(default_factory=list)
    problems: _Problems = field(default_factory=_Problems)
    seen: dict[str, int] = field(default_factory=dict)
    blocks: int = 0
    checker: _Checker = field(init=False)
    field_tags: dict[str, tuple[str | None, dict[str, str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.checker = _Checker(self.now)

    # -- root

    def on_root(self, namespace: str | None, line: int | None) -> None:
        self.namespace = namespace
        if self.kind in (Kind.URLSET, Kind.INDEX):
            expected = SITEMAP_NS
        elif self.kind is Kind.ATOM:
            if namespace == ATOM03_NS:
                return
            expected = ATOM_NS
        else:
            return  # RSS 2.0 has no namespace, RSS 1.0 its own
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

    def unknown(self, element: Any, offset: int) -> None:
        if self.kind not in (Kind.URLSET, Kind.INDEX) or not isinstance(element.tag, str):
            return
        _, local = _split_tag(element.tag)
        if local == self.block:
            return
        self.problems.new(
            "unknown-element",
            f"unexpected <{local}> in <{self.root_local}>",
            (element.sourceline or 0) + offset,
        )

    # -- blocks

    def on_block(self, element: Any, offset: int) -> None:
        self.count_block((element.sourceline or 0) + offset)
        if self.kind is Kind.RSS:
            entry = self._read_rss_item(element, offset)
        elif self.kind is Kind.ATOM:
            entry = self._read_atom_entry(element, offset)
        else:
            entry = self._read_sitemap_block(element, offset)
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
        loc_fault = any(problem.code in _LOC_FAULTS for problem in checked)
        if (
            self.scope is not None
            and not loc_fault
            and not self.scope.allows(entry.loc, same_directory=self.kind is not Kind.INDEX)
        ):
            self.problems.new(
                "out-of-scope",
                f"{_quote(entry.loc)} is outside what a sitemap at this URL may list"
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
                f"{_quote(entry.loc)} is listed again (first at line {first})",
                entry.line,
            )
        self.entries.append(entry)

    def _loc_value(self, raw: str, line: int | None, block_line: int | None) -> str | None:
        loc = raw.strip()
        if not loc:
            self.problems.new("empty-loc", f"empty <loc> in <{self.block}>", line or block_line)
            return None
        if loc != raw:
            # xsd:anyURI collapses whitespace, so this is valid, but it is a
            # template bug, and readers that do not strip get a wrong URL.
            self.problems.new(
                "whitespace-around-loc", f"whitespace around the URL {_quote(loc)}", line
            )
        return loc

    def _field_tags(self, block_tag: str) -> tuple[str | None, dict[str, str]]:
        # The block's namespace, and qualified tag -> field name, so that each
        # child costs one dict lookup instead of splitting its tag (the hot loop
        # of a 50,000-URL file).
        found = self.field_tags.get(block_tag)
        if found is None:
            namespace, _ = _split_tag(block_tag)
            prefix = "" if namespace is None else f"{{{namespace}}}"
            tags = {prefix + name: name for name in _SITEMAP_FIELDS[self.kind]}
            found = self.field_tags[block_tag] = (namespace, tags)
        return found

    def _read_sitemap_block(self, element: Any, offset: int) -> Entry | None:
        namespace, tags = self._field_tags(element.tag)
        values: dict[str, Any] = {}
        alternates: list[tuple[str, str]] = []
        images = 0
        for child in element:
            tag = child.tag
            name = tags.get(tag)
            if name is not None:
                if name in values:
                    self.problems.new(
                        "duplicate-element",
                        f"second <{name}> in <{self.block}>; the first is used",
                        (child.sourceline or 0) + offset,
                    )
                else:
                    values[name] = child
            elif tag == _IMAGE_TAG:
                images += 1
            elif tag == _XHTML_LINK_TAG:
                alternate = self._alternate(child, (child.sourceline or 0) + offset)
                if alternate is not None:
                    alternates.append(alternate)
            elif isinstance(tag, str):
                child_namespace, local = _split_tag(tag)
                # Other namespaces are extensions (news, video, ...): allowed.
                if child_namespace == namespace:
                    self.problems.new(
                        "unknown-element",
                        f"unexpected <{local}> in <{self.block}>",
                        (child.sourceline or 0) + offset,
                    )
        loc_element = values.pop("loc", None)
        if loc_element is None:
            self.problems.new(
                "missing-loc",
                f"<{self.block}> without <loc>",
                (element.sourceline or 0) + offset,
            )
            return None
        loc_line = (loc_element.sourceline or 0) + offset
        loc = self._loc_value(_element_text(loc_element), loc_line, loc_line)
        if loc is None:
            return None
        lastmod = values.get("lastmod")
        changefreq = values.get("changefreq")
        priority = values.get("priority")
        return Entry(
            loc,
            None if lastmod is None else _element_text(lastmod).strip(),
            None if changefreq is None else _element_text(changefreq).strip(),
            None if priority is None else _element_text(priority).strip(),
            loc_line,
            tuple(alternates),
            images,
        )

    def _alternate(self, link: Any, line: int) -> tuple[str, str] | None:
        if (link.get("rel") or "").strip().lower() != "alternate":
            return None
        hreflang, href = link.get("hreflang"), link.get("href")
        if hreflang is None or href is None:
            self.problems.new(
                "invalid-alternate",
                "xhtml:link rel=alternate without hreflang or href",
                line,
            )
            return None
        return hreflang.strip(), href.strip()

    def _read_rss_item(self, element: Any, offset: int) -> Entry | None:
        namespace, _ = _split_tag(element.tag)
        link: tuple[str, int] | None = None
        date: str | None = None
        for child in element:
            if not isinstance(child.tag, str):
                continue
            child_namespace, local = _split_tag(child.tag)
            if child_namespace == namespace and local == "link" and link is None:
                link = (_element_text(child), (child.sourceline or 0) + offset)
            elif date is None and (
                (child_namespace == namespace and local == "pubDate")
                or (child_namespace == DC_NS and local == "date")
            ):
                date = _element_text(child).strip()
        block_line = (element.sourceline or 0) + offset
        if link is None:
            self.problems.new("missing-loc", "<item> without <link>", block_line)
            return None
        loc = self._loc_value(link[0], link[1], block_line)
        if loc is None:
            return None
        return Entry(loc=loc, lastmod=date, changefreq=None, priority=None, line=link[1])

    def _read_atom_entry(self, element: Any, offset: int) -> Entry | None:
        namespace, _ = _split_tag(element.tag)
        link: tuple[str, int] | None = None
        updated: str | None = None
        for child in element:
            if not isinstance(child.tag, str):
                continue
            child_namespace, local = _split_tag(child.tag)
            if child_namespace != namespace:
                continue
            if local == "link" and link is None:
                # RFC 4287, 4.2.7.2: no rel means "alternate", the entry's page.
                rel = (child.get("rel") or "alternate").strip().lower()
                href = child.get("href")
                if rel == "alternate" and href is not None:
                    link = (href, (child.sourceline or 0) + offset)
            elif local in ("updated", "modified") and updated is None:
                updated = _element_text(child).strip()
        block_line = (element.sourceline or 0) + offset
        if link is None:
            self.problems.new(
                "missing-loc", "<entry> without <link href> (rel=alternate)", block_line
            )
            return None
        loc = self._loc_value(link[0], link[1], block_line)
        if loc is None:
            return None
        return Entry(loc=loc, lastmod=updated, changefreq=None, priority=None, line=link[1])


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


def _scan_prolog(doc: bytes, start: int) -> _Prolog:
    """Find the DOCTYPE and the root element's name, past whitespace, comments
    and processing instructions (skipped by one regex match per run, so that
    a file of a million "<?a?>" costs no Python loop)."""
    prolog = _Prolog()
    position = start
    while True:
        skipped = _PROLOG_MISC.match(doc, position)
        position = skipped.end() if skipped is not None else position
        if doc[position : position + 9].upper() == b"<!DOCTYPE":
            end = _doctype_end(doc, position)
            name = _DOCTYPE_NAME.match(doc, position + 9)
            prolog.doctype = (position, end)
            prolog.doctype_name = name.group(1).decode("ascii", "replace") if name else None
            position = end
            continue
        if doc.startswith(b"<", position) and not doc.startswith((b"<?", b"<!"), position):
            name = _NAME.match(doc, position + 1)
            if name is not None:
                prolog.root_position = position
                prolog.root_name = name.group().decode("utf-8", "replace")
        # Anything else (text, an unterminated comment, the end): no root here.
        return prolog


class _Reader:
    """One call of :func:`parse_sitemap`."""

    def __init__(self, *, url: str | None, now: datetime) -> None:
        self.now = now
        self.scope = _Scope.of(url)
        self.problems = _Problems()
        self.kind = Kind.UNKNOWN
        self.sink: _Sink | None = None
        self.complete = True
        self.encoding = "utf-8"
        self.block_tags: set[str] = set()

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

    def not_a_sitemap(self, message: str) -> None:
        self.kind = Kind.UNKNOWN
        self.problems.new("not-a-sitemap", message)

    # -- encoding

    def _to_utf8(self, doc: bytes) -> bytes:
        """Strip a UTF-8 BOM; transcode UTF-16; note a declared non-UTF-8 encoding."""
        if doc.startswith(codecs.BOM_UTF8):
            return doc[len(codecs.BOM_UTF8) :]
        utf16 = None
        if doc.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            utf16 = "utf-16"
        elif doc.startswith(b"<\0"):
            utf16 = "utf-16-le"
        elif doc.startswith(b"\0<"):
            utf16 = "utf-16-be"
        if utf16 is not None:
            self.problems.new("not-utf8", "the file is UTF-16; the protocol requires UTF-8")
            text = doc.decode(utf16, "replace")
            return _ENCODING_IN_DECLARATION.sub(rb"\1\2UTF-8\2", text.encode("utf-8"), count=1)
        first = _NON_SPACE.search(doc, 0, 1024)
        declared = _XML_DECLARATION.match(doc, first.start()) if first is not None else None
        if declared is None:
            return doc
        name = declared.group(2).decode("ascii")
        try:
            codec = codecs.lookup(name).name
        except LookupError:
            codec = ""
        if codec in ("utf-8", "ascii"):
            return doc
        if codec and not codec.startswith(("utf-16", "utf-32")):
            # ISO-8859-1, windows-1252...: lxml decodes these itself.
            self.problems.new(
                "not-utf8", f"declared encoding {name!r}; the protocol requires UTF-8", 1
            )
            self.encoding = codec
            return doc
        # Unknown, or "UTF-16" on a file whose bytes are ASCII-compatible (no
        # BOM, no NUL bytes): a wrong label. Read as UTF-8, and tell lxml so.
        self.problems.new("not-utf8", f"declared encoding {name!r} is wrong; read as UTF-8", 1)
        return _ENCODING_IN_DECLARATION.sub(rb"\1\2UTF-8\2", doc, count=1)

    def _decode(self, doc: bytes) -> str:
        try:
            return doc.decode(self.encoding)
        except UnicodeDecodeError as exc:
            self.problems.new(
                "encoding-error",
                f"bytes that are not {self.encoding}; replaced by U+FFFD",
                doc.count(b"\n", 0, exc.start) + 1,
            )
            return doc.decode(self.encoding, "replace")

    # -- dispatch

    def read(self, body: bytes, stopped: bool) -> None:
        doc = self._to_utf8(body)
        first = _NON_SPACE.search(doc)
        if first is None:
            self.not_a_sitemap("empty file")
            return
        if doc[first.start() : first.start() + 1] != b"<":
            self._read_text(doc, stopped)
            return
        line_offset = 0
        if first.start() > 0 and doc.startswith(b"<?xml", first.start()):
            # Often a blank line printed by a CMS plugin before the declaration;
            # XML allows nothing there.
            line_offset = doc.count(b"\n", 0, first.start())
            self.problems.new(
                "whitespace-before-declaration",
                "whitespace before <?xml ...?>, which must come first",
                1,
            )
            doc = doc[first.start() :]
        self._read_xml(doc, line_offset, stopped)

    def _read_text(self, doc: bytes, stopped: bool) -> None:
        if b"\0" in doc[:4096]:
            self.not_a_sitemap("binary data, not XML or a list of URLs")
            return
        text = self._decode(doc)
        lines = _TEXT_LINE.finditer(text)
        head = list(itertools.islice(lines, 10))
        if not any(_HTTP_LINE.match(match.group(1)) for match in head):
            self.not_a_sitemap("neither XML nor a list of URLs")
            return
        self.kind = Kind.TEXT
        sink = self.sink = _Sink(Kind.TEXT, "line", "text", self.now, self.scope)
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
                sink.problems.new("not-a-url", f"not a URL: {_quote(value)}", line)
                continue
            sink.count_block(line)
            sink.add(Entry(loc=value, lastmod=None, changefreq=None, priority=None, line=line))

    def _read_xml(self, doc: bytes, line_offset: int, stopped: bool) -> None:
        prolog = _scan_prolog(doc, 0)
        root_local = (prolog.root_name or "").rpartition(":")[2]
        if (prolog.doctype_name or "").lower() == "html" or root_local.lower() == "html":
            self.not_a_sitemap("an HTML page, not a sitemap")
            return
        if prolog.doctype is not None:
            start, end = prolog.doctype
            declaration = doc[start:end]
            self.problems.new(
                "dtd",
                "a <!DOCTYPE> declaration; ignored (no DTD is loaded)",
                doc.count(b"\n", 0, start) + 1 + line_offset,
            )
            if b"<!ENTITY" in declaration:
                self.problems.new(
                    "entity-declaration",
                    f"{declaration.count(b'<!ENTITY')} entity declaration(s); not expanded"
                    " (XXE and billion-laughs attacks use them)",
                    doc.count(b"\n", 0, start) + 1 + line_offset,
                )
            # Blank it (newlines kept, so lines still count right): lxml never
            # sees a DTD, whatever its settings.
            doc = doc[:start] + re.sub(rb"[^\n]", b" ", declaration) + doc[end:]
        if not self.problems.has("entity-declaration") and b"<!ENTITY" in doc:
            self.problems.new("entity-declaration", "an <!ENTITY> declaration; not expanded")
        if prolog.root_name is None or prolog.root_position is None:
            self.not_a_sitemap("XML without a root element")
            return
        prefix, _, local = prolog.root_name.rpartition(":")
        if local not in _ROOTS:
            self.not_a_sitemap(
                f"root element <{prolog.root_name}> is not urlset, sitemapindex, rss or feed"
            )
            return
        self.kind, block = _ROOTS[local]
        try:
            self.sink = self._strict(doc, local, block, line_offset, stopped)
        except _Failed as failure:
            self.problems.new("xml-error", f"not well-formed XML: {failure.message}", failure.line)
            text = self._decode(doc)
            root_at = len(doc[: prolog.root_position].decode(self.encoding, "replace"))
            self.sink = _Tolerant(self, text, root_at, prefix, local, block, line_offset).run(
                stopped
            )
        if stopped:
            self.complete = False

    def new_sink(self, local: str, block: str) -> _Sink:
        return _Sink(self.kind, block, local, self.now, self.scope)

    # -- strict

    def _strict(self, doc: bytes, local: str, block: str, line_offset: int, stopped: bool) -> _Sink:
        sink = self.new_sink(local, block)
        parser = etree.XMLPullParser(
            events=("start", "end"), tag=[f"{{*}}{local}", f"{{*}}{block}"], **_SAFE_PARSER_OPTIONS
        )
        root: Any = None
        view = memoryview(doc)
        try:
            for start in range(0, len(doc), _FEED_STEP):
                parser.feed(bytes(view[start : start + _FEED_STEP]))
                root = self._events(parser, sink, root, block, line_offset)
            if not stopped:
                # close() raises on a document cut short. When we cut it (the
                # byte cap), every entry that ended has been read already.
                parser.close()
                root = self._events(parser, sink, root, block, line_offset)
        except etree.LxmlError as exc:
            message, line = _lxml_failure(exc)
            raise _Failed(message, None if line is None else line + line_offset) from None
        return sink

    def _events(self, parser: Any, sink: _Sink, root: Any, block: str, offset: int) -> Any:
        block_tags = self.block_tags
        for action, element in parser.read_events():
            if action == "start":
                if root is None:
                    root = element
                    sink.on_root(_split_tag(element.tag)[0], (element.sourceline or 1) + offset)
                continue
            if element is root:
                for child in root:
                    sink.unknown(child, offset)
                continue
            tag = element.tag
            if tag not in block_tags:
                if _split_tag(tag)[1] != block:
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


def _flatten(tag: str) -> str:
    return tag.replace("\r", " ").replace("\n", " ")


_ROOT_START = re.compile(r"<[^\s/>]+(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*/?>|<[^<>]*>")
_XMLNS = re.compile(r"\sxmlns(?::[\w.-]+)?\s*=\s*(?:\"[^\"]*\"|'[^']*')")
# Raw "&" and references to entities XML does not predefine, outside CDATA
# sections and comments (where "&" is just text).
_AMPERSAND = re.compile(
    r"<!\[CDATA\[.*?(?:\]\]>|\Z)|<!--.*?(?:-->|\Z)"
    r"|&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)(?P<entity>[A-Za-z_][\w.-]*;)?",
    re.DOTALL,
)
_PREDEFINED = {"&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&amp;": "&"}
_REFERENCE = re.compile(r"&(?:lt|gt|quot|apos|amp);|&#([0-9]+);|&#x([0-9a-fA-F]+);")


def _unescape(text: str) -> str:
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
    start: int
    end: int
    line: int
    closed: bool


class _Tolerant:
    """Read a document that is not well-formed, one entry block at a time."""

    def __init__(
        self,
        reader: _Reader,
        text: str,
        root_at: int,
        prefix: str,
        local: str,
        block: str,
        line_offset: int,
    ) -> None:
        self.reader = reader
        self.text = text
        self.root_at = root_at
        self.prefix = prefix
        self.local = local
        self.block = block
        self.line_offset = line_offset
        self.sink = reader.new_sink(local, block)
        self.parser = etree.XMLParser(**_SAFE_PARSER_OPTIONS)
        qualified = f"{prefix}:{local}" if prefix else local
        self.close_root = f"</{qualified}>"
        self.block_qname = f"{prefix}:{block}" if prefix else block
        # Block tags in the root's prefix or in none (RSS 1.0 has <rdf:RDF>
        # around unprefixed <item>s).
        prefixes = "|".join(re.escape(p) for p in {prefix, ""} if p)
        prefix_pattern = f"(?:(?:{prefixes}):)?" if prefixes else ""
        self.tokens = re.compile(
            r"<!--.*?(?:-->|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)"
            rf"|<(?P<close>/?){prefix_pattern}{re.escape(block)}(?=[\s/>]|\Z)"
            r"(?P<attrs>[^<>]*)(?P<end>>)?",
            re.DOTALL,
        )
        self.root_close = re.compile(rf"</{re.escape(qualified)}\s*>")
        self.wrapper_text = f"<{local}>"
        self._line, self._position = 1, 0

    def line_at(self, position: int) -> int:
        # Positions only move forward, so lines are counted once overall.
        self._line += self.text.count("\n", self._position, position)
        self._position = position
        return self._line + self.line_offset

    def run(self, stopped: bool) -> _Sink:
        self._line, self._position = 1, 0
        wrapper, body_start = self.wrapper()
        self.wrapper_text = wrapper
        region_end = len(self.text)
        closed_root = self.last_root_close(body_start)
        if closed_root is not None:
            region_end = closed_root.start()
        blocks = list(self.blocks(body_start, region_end))
        truncated_line = None
        if blocks and not blocks[-1].closed and closed_root is None:
            truncated_line = blocks.pop().line
        self.read_blocks(blocks)
        if not stopped:
            if truncated_line is not None:
                self.reader.problems.new(
                    "truncated",
                    f"the document ends inside the <{self.block}> opened here;"
                    " that entry is not read",
                    truncated_line,
                )
            elif closed_root is None:
                self.reader.problems.new(
                    "truncated",
                    f"the document ends before </{self.local}>",
                    self.line_at(len(self.text)),
                )
        if truncated_line is not None or closed_root is None:
            self.reader.complete = False
        return self.sink

    def last_root_close(self, start: int) -> re.Match[str] | None:
        # The last one: two sitemaps pasted into one file are both read.
        end = len(self.text)
        while (found := self.text.rfind(self.close_root[:-1], start, end)) >= 0:
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
        candidates = []
        if found and not found.group().endswith("/>"):
            candidates.append(_flatten(found.group()))
        declarations = " ".join(_XMLNS.findall(found.group())) if found else ""
        qualified = f"{self.prefix}:{self.local}" if self.prefix else self.local
        candidates.append(_flatten(f"<{qualified} {declarations}>"))
        candidates.append(
            f'<{qualified} xmlns="{SITEMAP_NS}" xmlns:xhtml="{XHTML_NS}" xmlns:image="{IMAGE_NS}">'
        )
        for candidate in candidates:
            try:
                root = etree.fromstring(candidate + self.close_root, self.parser)
            except etree.LxmlError:
                continue
            self.sink.on_root(_split_tag(root.tag)[0], self.line_at(self.root_at))
            return candidate, body_start
        self.sink.on_root(None, self.line_at(self.root_at))
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
            elif token.group("attrs").rstrip().endswith("/"):
                yield _Block(token.start(), token.end(), self.line_at(token.start()), True)
            else:
                open_at = token.start()
        if open_at is not None:
            yield _Block(open_at, end, self.line_at(open_at), False)

    # -- reading blocks

    def read_blocks(self, blocks: list[_Block]) -> None:
        for block in blocks:
            if not block.closed:
                self.sink.problems.new("xml-error", f"<{self.block}> is not closed", block.line)
        for first in range(0, len(blocks), _BATCH):
            self.read_batch(blocks[first : first + _BATCH])

    def parse(self, fragment: str) -> Any:
        return etree.fromstring(self.wrapper_text + fragment + self.close_root, self.parser)

    def fragment(self, batch: list[_Block]) -> tuple[str, list[int]]:
        """The text from the batch's first block to its last, each unclosed block
        closed, and where each block starts in it. Only a close tag is ever
        inserted, never a newline, so lines in the fragment stay true."""
        pieces: list[str] = []
        starts: list[int] = []
        size = 0
        for index, block in enumerate(batch):
            starts.append(size)
            piece = self.text[block.start : block.end]
            if not block.closed:
                piece += f"</{self.block_qname}>"
            if index + 1 < len(batch):
                piece += self.text[block.end : batch[index + 1].start]
            pieces.append(piece)
            size += len(piece)
        return "".join(pieces), starts

    def read_batch(self, batch: list[_Block]) -> None:
        """Parse blocks as one small document; repair, or split, where that fails."""
        fragment, starts = self.fragment(batch)
        offset = batch[0].line - 1
        try:
            self.take(self.parse(fragment), offset)
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
                for fix in fixes:
                    self.sink.problems.add(fix)
                self.take(root, offset)
                return
        if len(batch) > 1:
            for block in batch:
                self.read_batch([block])
            return
        self.last_resort(fragment, batch[0].line, _lxml_failure(failure)[0])

    def take(self, root: Any, offset: int) -> None:
        for child in root:
            if isinstance(child.tag, str) and _split_tag(child.tag)[1] == self.block:
                self.sink.on_block(child, offset)
            else:
                self.sink.unknown(child, offset)

    def repair(self, fragment: str, line: int, starts: list[int]) -> tuple[str, list[Problem]]:
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

        repaired = _AMPERSAND.sub(fix, fragment)
        messages = {
            "unescaped-ampersand": "a raw '&' (must be written &amp;); read as a literal '&'",
            "undefined-entity": "an entity XML does not define (such as &nbsp;);"
            " read as literal text, not expanded",
        }
        return repaired, [Problem(code, messages[code], at) for (_, code), at in found.items()]

    def last_resort(self, fragment: str, line: int, message: str) -> None:
        sink = self.sink
        if self.reader.kind in (Kind.URLSET, Kind.INDEX):
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
                value = sink._loc_value(_unescape(loc.group(1)), loc_line, line)
                sink.problems.new(
                    "xml-error",
                    f"entry is not well-formed XML ({message}); only its <loc> was read",
                    line,
                )
                if value is not None:
                    sink.add(Entry(value, None, None, None, loc_line))
                return
        sink.count_block(line)
        sink.problems.new("xml-error", f"entry is not well-formed XML ({message}); not read", line)


def parse_sitemap(
    data: bytes,
    *,
    url: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    now: datetime | None = None,
) -> ParsedSitemap:
    """Read a sitemap, sitemap index, text list, RSS or Atom feed, gzipped or not.

    ``data`` is the body as fetched; ``url``, when given, is where it came from,
    for the protocol's location rule (``out-of-scope``: a sitemap lists only
    URLs of its own scheme and host, under its own directory). Reading stops
    after ``max_bytes`` decompressed bytes. ``now`` (default: the current time)
    decides which lastmod is in the future.

    Every listed URL that could be read is an :class:`Entry`; every fault is a
    :class:`Problem`, and :func:`check_entry` runs on every entry (for RSS the
    ``pubDate`` is checked as an RFC 822 date instead). Never raises: an
    unexpected failure is a ``parser-error`` problem (and is logged).
    """
    reader = _Reader(url=url, now=_aware(now))
    body, layers = b"", 0
    try:
        body, layers, problems = decompress(data, max_bytes)
        for problem in problems:
            reader.problems.add(problem)
        stopped = any(
            problem.code in ("too-large", "gzip-bomb", "gzip-error", "gzip-truncated")
            for problem in problems
        )
        if len(body) > MAX_BYTES_PER_FILE and not reader.problems.has("too-large"):
            reader.problems.new(
                "too-large",
                f"{len(body):,} bytes uncompressed, over the protocol's {MAX_BYTES_PER_FILE:,}",
            )
        if stopped:
            reader.complete = False
        reader.read(body, stopped)
    except Exception as exc:  # the contract is "a value, never an exception"
        logger.exception("sitemap parser failed on %s", url or "a document")
        reader.problems.new("parser-error", f"the parser failed: {type(exc).__name__}: {exc}")
        reader.complete = False
    return reader.result(layers, len(body))
