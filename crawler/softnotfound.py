"""Soft 404s: a site's "not found" page served with status 200 (issue #19).

Some sites answer every unknown address with their "not found" page and status 200.
Such pages are not pages of the site, and search engines leave them out ("soft
404"). At the start of a crawl the spider asks for one address that cannot exist
(:func:`probe_url`: ``/sitemap-crawler-probe-<random hex>``, through Scrapy, so
robots.txt is obeyed), and a second of another shape when the first answers 200. A
probe answered with 200 leaves its fingerprint (:func:`page_print`); a page of the
crawl whose fingerprint matches one (:meth:`SoftNotFound.matches`) is ``soft-404``.
Probes are never listed nor recorded in the ledger; their stats are
``sitemap/soft404/probes``, ``sitemap/soft404/probe_status`` and
``sitemap/soft404/detected``.

The fingerprint is made of the page's main text (:func:`crawler.content.main_content`)
with the page's own address taken out, since a "not found" page often echoes it: a
hash of its words (equal: the same page), and a 64-bit simhash of its word pairs,
which tolerates a word or two more (a time, a counter): within
:data:`MAX_DISTANCE` bits it is the same page. Pages with more text than
:data:`MAX_TEXT` characters get no fingerprint (a "not found" page is short).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from urllib.parse import unquote, urlsplit

#: Probe addresses start with this path.
PROBE_PREFIX = "/sitemap-crawler-probe-"
#: The most main text a fingerprinted page has (characters).
MAX_TEXT = 20_000
#: Simhashes this many bits apart, or fewer, are the same page.
MAX_DISTANCE = 3

PagePrint = tuple[str, int]

_WORD = re.compile(r"\w+")


def probe_url(start_url: str, second: bool = False) -> str:
    """An address on *start_url*'s site that cannot exist."""
    parts = urlsplit(start_url)
    token = secrets.token_hex(8)
    path = f"{PROBE_PREFIX}{token}" + (f"/{secrets.token_hex(4)}.html" if second else "")
    return f"{parts.scheme}://{parts.netloc}{path}"


def page_print(text: str, url: str) -> PagePrint | None:
    """The fingerprint of a page whose main text is *text* at *url* (see the module
    docstring), or None for a long page."""
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
    return exact, simhash(words)


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


class SoftNotFound:
    """The fingerprints of the site's "not found" pages found by the probes."""

    def __init__(self) -> None:
        self.prints: list[tuple[str, PagePrint]] = []  # (probe URL, its print)

    def add(self, url: str, found: PagePrint) -> None:
        self.prints.append((url, found))

    def matches(self, found: PagePrint | None) -> str | None:
        """The probe URL whose page *found* is, or None."""
        if found is None:
            return None
        for url, (exact, sim) in self.prints:
            if found[0] == exact or bin(found[1] ^ sim).count("1") <= MAX_DISTANCE:
                return url
        return None
