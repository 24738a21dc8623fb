"""Soft 404s: a site's "not found" page served with status 200
(docs/crawling.md). The soft-404 probe (crawler.crawl.notfoundprobe) leaves prints
(:func:`page_print`) that a page matches (:meth:`SoftNotFound.matches`): its main
text's words without its own address (a "not found" page echoes it), hashed, and their
simhash within :data:`MAX_DISTANCE` bits. :func:`says_not_found` reads a real address
that says it is not there and is thin (``SITEMAP_SOFT404_CONTENT``)."""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from lxml import etree

from crawler.page.content import CHROME

#: The most main text a fingerprinted page has (characters).
MAX_TEXT = 20_000
#: Simhashes this many bits apart, or fewer, are the same page.
MAX_DISTANCE = 3

PagePrint = tuple[str, int]
#: The pages' prints without their simhash (what a probe answered 404 needs).
EXACT = "exact"

_WORD = re.compile(r"\w+")


def page_print(text: str, url: str, similar: bool = True) -> PagePrint | None:
    """The fingerprint of a page whose main text is *text* at *url*, or None for a long
    page; without its simhash (-1, matching only an equal text) unless *similar*."""
    if len(text) > MAX_TEXT:
        return None
    parts = urlsplit(url)
    for echo in sorted(
        {url, parts.path + (f"?{parts.query}" if parts.query else ""), parts.path},
        key=len,
        reverse=True,
    ):
        for form in {echo, unquote(echo)}:
            if len(form) > 1:
                text = text.replace(form, " ")
    words = _WORD.findall(text.lower())
    exact = hashlib.blake2b(" ".join(words).encode("utf-8"), digest_size=16).hexdigest()
    return exact, simhash(words) if similar else -1


# Simhash counts each of the 64 bits over all word pairs. Rather than 64 steps a pair,
# each byte of a pair's hash is spread into 64 counters at once: counter i is the
# i-th lane of LANE bits of one big integer, and _SPREAD[p][v] adds byte value v at
# byte position p into its eight lanes (8 additions a pair).
_LANE = 24
_SPREAD = [
    [sum(1 << ((8 * p + j) * _LANE) for j in range(8) if v >> j & 1) for v in range(256)]
    for p in range(8)
]


def simhash(words: list[str]) -> int:
    """Charikar's simhash of the word pairs (a word alone for a one-word text): bit i
    is set when more than half of the pairs' hashes have it."""
    grams = [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)] or words
    total = 0
    for gram in grams:
        digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
        for p, v in enumerate(digest):
            total += _SPREAD[p][v]
    mask = (1 << _LANE) - 1
    half = len(grams)
    return sum(1 << i for i in range(64) if 2 * (total >> (i * _LANE) & mask) > half)


@dataclass(eq=False)
class SoftNotFound:
    """The fingerprints of the site's "not found" pages found by the probes."""

    prints: list[tuple[str, PagePrint]] = field(default_factory=list)  # (probe URL, its print)

    def add(self, url: str, found: PagePrint) -> None:
        self.prints.append((url, found))

    @property
    def answers_200(self) -> bool:
        """Whether a probe was answered 200 (its print has a simhash): the site
        serves its "not found" page as a page. A probe answered 404 leaves a print
        without one, which only an equal page matches."""
        return any(sim >= 0 for _, (_, sim) in self.prints)

    @property
    def wanted(self) -> bool | str:
        """What the pages' analysis computes (``analyse_response``'s *prints*):
        full prints, ``"exact"`` ones (only 404 probes left prints), or none."""
        if self.answers_200:
            return True
        return EXACT if self.prints else False

    def matches(self, found: PagePrint | None) -> str | None:
        """The probe URL whose page *found* is, or None."""
        if found is None:
            return None
        for url, (exact, sim) in self.prints:
            if found[0] == exact:
                return url
            if sim >= 0 and found[1] >= 0 and bin(found[1] ^ sim).count("1") <= MAX_DISTANCE:
                return url
        return None


# -- a page that says so ---------------------------------------------------------------

#: A page whose main content has at most this many words is thin.
THIN_WORDS = 50
#: A page with more text than this (characters, navigation included) is not read
#: for "not found" words: its main content is hardly thin, and reading it costs.
MAX_NOT_FOUND_TEXT = 30_000
# "The thing is not there", as words (not inside other words: ErrorKind::NotFound is
# no match), in the common languages.
_NOT_THERE = (
    r"(?:cannot|can['’]t|could\s+not|couldn['’]t)\s+be\s+found|no\s+longer\s+available"
    r"|(?:does\s+not|doesn['’]t|no\s+longer)\s+exists?"
    r"|nicht\s+gefunden|existiert\s+nicht|nicht\s+mehr\s+verf[üu]gbar"
    r"|introuvable|n['’]existe\s+pas|n['’]est\s+plus\s+disponible|non\s+trouv[ée]e?"
    r"|no\s+encontrad[oa]|no\s+existe|ya\s+no\s+est[áa]\s+disponible"
    r"|non\s+trovat[oa]|non\s+esiste|n[ãa]o\s+encontrad[oa]|n[ãa]o\s+existe"
    r"|niet\s+gevonden|bestaat\s+niet|nie\s+znaleziono|nie\s+istnieje"
    r"|не\s+найден[аоы]?|не\s+существует|bulunamad[ıi]|hittades\s+inte|ikke\s+fundet"
)
# A number is no evidence (a page numbered 404, "Route 404"): 404 counts as the status
# it names, with the word "error" or "HTTP" beside it ("Error 404", "404 error",
# "HTTP 404"), or alone ("404": a title or heading with nothing else).
_STATUS_404 = (
    r"(?:error|erreur|fehler|errore|erro|http)(?:\s+code)?[\s:#-]*404"
    r"|404[\s:-]*(?:error|erreur|fehler|errore|erro)"
)
# Scripts written without spaces between words: the phrase itself.
_NOT_THERE_UNSPACED = r"見つかりません|找不到|页面不存在|頁面不存在|찾을\s*수\s*없습니다"
_SAYS_NOT_FOUND = re.compile(
    rf"(?<!\w)(?:not\s+found|{_NOT_THERE}|{_STATUS_404})(?!\w)|{_NOT_THERE_UNSPACED}",
    re.IGNORECASE,
)
_ONLY_404 = re.compile(r"\W*404\W*")
# In the main text, where "not found" and "404" are common words of real pages (an
# error reference: "an entity was not found"), they count only as a page's words:
# "page not found", "error 404", "the page you requested was not found".
_TEXT_SAYS_NOT_FOUND = re.compile(
    rf"(?<!\w)(?:{_NOT_THERE}"
    r"|(?:page|seite|página|pagina|site)\s+not\s+found|404\s+not\s+found"
    r"|error\s+404|fehler\s+404|erreur\s+404"
    r"|you(?:['’]re|\s+are|\s+were)?\s+(?:looking\s+for|requested|trying\s+to\s+reach)"
    rf"[^.!?]{{0,60}}?\s+(?:was|is|could)\s+(?:not|n['’]t)\s+(?:be\s+)?found)(?!\w)"
    rf"|{_NOT_THERE_UNSPACED}",
    re.IGNORECASE,
)


def _says(said: str) -> bool:
    """Whether a title or heading says the page is not there."""
    return bool(_SAYS_NOT_FOUND.search(said) or _ONLY_404.fullmatch(said))


# How much of the main text's start is read for the words.
_START = 200


def _text(element: Any) -> str:
    return " ".join(etree.tostring(element, method="text", encoding="unicode").split())


class _Enough(Exception):
    pass


def _start(region: Any, chrome: bool) -> str:
    """The first :data:`_START` characters of *region*'s text, whitespace collapsed,
    without navigation, header, footer and asides when *chrome* is False: a walk that
    stops there (serialising a long page's text to read its start cost more)."""
    pieces: list[str] = []
    size = 0

    def add(text: str | None) -> None:
        nonlocal size
        if text and not text.isspace():
            pieces.append(text)
            size += len(text)
            if size >= _START:
                raise _Enough

    def walk(element: Any) -> None:
        if not isinstance(element.tag, str) or (not chrome and element.tag in CHROME):
            return
        add(element.text)
        for child in element:
            walk(child)
            add(child.tail)

    with contextlib.suppress(_Enough, RecursionError):
        walk(region)
    return " ".join(" ".join(pieces).split())[:_START]


def says_not_found(root: Any, title: str | None, text_length: int = 0) -> str | None:
    """Why the page is a "not found" page answered 200 (``title says 'Product not found';
    19 words``), or None: its title, first heading or main text's start says so, and its
    ``<main>``, else ``<article>``, else body without chrome is thin. Call it last: it may
    strip the tree. Not read past :data:`MAX_NOT_FOUND_TEXT` (*text_length*)."""
    if root is None or not hasattr(root, "iter") or text_length > MAX_NOT_FOUND_TEXT:
        return None
    # One walk (libxml2's, filtered by tag) finds the first of each.
    first: dict[str, Any] = {}
    for element in root.iter("h1", "h2", "main", "article", "body"):
        first.setdefault(element.tag, element)
    heading = first.get("h1", first.get("h2"))
    heading = _text(heading) if heading is not None else None
    region = first.get("main", first.get("article"))
    whole = region is None
    if region is None:
        region = first.get("body", root)
    said_by = (("title", title), ("heading", heading))
    found = next(((w, t) for w, t in said_by if t and _says(t)), None)
    if found is None:
        found = "text", _start(region, chrome=not whole)
        if not _TEXT_SAYS_NOT_FOUND.search(found[1]):
            return None
    where, said = found
    if whole:
        etree.strip_elements(region, *CHROME, with_tail=False)
    words = len(_WORD.findall(_text(region)))
    if words > THIN_WORDS:
        return None
    if len(said) > 80:
        said = said[:77].rstrip() + "..."
    return f"{where} says {said!r}; {words} words"
