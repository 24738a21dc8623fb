"""The hash of a page's main content: what "the page changed" means for lastmod
(docs/lastmod.md, rule 3). It covers the text (whitespace left out: re-indented or
minified markup is no change) and the targets of links and images, not what changes
on every request: scripts, styles, comments, ``<noscript>``, ``<template>``, and the
regions named by ``SITEMAP_VOLATILE_SELECTORS``."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from cssselect import GenericTranslator
from lxml import etree

_DROPPED_TAGS = ("script", "style", "noscript", "template")
_TRANSLATOR = GenericTranslator()


# Stored hashes carry their version: a hash of another version (an earlier release
# of sitemap-crawler) is not compared with this one (see :func:`same_content`).
VERSION = "m2-"


def main_content_hash(root: Any, volatile: Iterable[str] = ()) -> str | None:
    """A hex digest of the main content of the lxml tree *root* (None: no tree). It strips
    the tree: call it last."""
    return main_content(root, volatile)[0]


def main_content(root: Any, volatile: Iterable[str] = ()) -> tuple[str | None, str]:
    """:func:`main_content_hash` and the text it hashed (empty for no tree), for the
    soft-404 print (:mod:`crawler.page.softnotfound`). :func:`bag_hash` may follow it."""
    if root is None or not hasattr(root, "iter"):
        return None, ""
    for selector in volatile:
        for el in root.xpath(_TRANSLATOR.css_to_xpath(selector)):
            el.clear(keep_tail=True)  # its text and attributes go; its tail stays
    # In libxml2 (C): a copy of the tree and a walk over it in Python took several
    # times longer than fetching the page.
    etree.strip_elements(root, etree.Comment, *_DROPPED_TAGS, with_tail=False)
    text = etree.tostring(root, method="text", encoding="unicode")
    # One update of the joined targets is the digest of one update each (a page has hundreds).
    digest = hashlib.blake2b("".join(text.split()).encode("utf-8"), digest_size=16)
    digest.update("".join(_targets(root)).encode("utf-8"))
    return VERSION + digest.hexdigest(), text


def _targets(root: Any) -> Iterator[str]:
    """The targets of the page's links and images, each after a NUL."""
    for el in root.iter("a", "img", "link"):
        for attr in ("href", "src"):
            if value := el.get(attr):
                yield "\0" + value.strip()


#: What a page repeats around its own content ("chrome"): left out of :func:`own_hash`,
#: and of the text a soft 404 is read from (crawler.page.softnotfound).
CHROME = ("aside", "nav", "header", "footer")
#: :func:`own_hash`'s version: a hash of another version is not compared with it.
OWN_VERSION = "o1-"


def own_hash(root: Any) -> str | None:
    """A hex digest of the page's own content: its ``<main>`` (or ``role="main"``, or
    its one ``<article>``; else the body), without the asides, navigation, headers and
    footers that a CMS repeats on every page (a "recent posts" widget, an archive
    list): its text (whitespace left out) and the targets of its links and images.
    The revisit schedule's evidence of a change (docs/nightly.md). Call it last, after
    :func:`main_content` (scripts and volatile regions stripped): it strips the tree
    of its chrome (libxml2's strip: a copy, or a walk in Python, cost more)."""
    if root is None or not hasattr(root, "iter"):
        return None
    own = next(root.iter("main"), None)
    if own is None:
        own = root.find(".//*[@role='main']")
    if own is None:
        articles = list(itertools.islice(root.iter("article"), 2))
        own = articles[0] if len(articles) == 1 else next(root.iter("body"), root)
    etree.strip_elements(own, *CHROME, with_tail=False)
    text = str(etree.tostring(own, method="text", encoding="unicode"))
    digest = hashlib.blake2b("".join(text.split()).encode("utf-8"), digest_size=16)
    digest.update("".join(_targets(own)).encode("utf-8"))
    return OWN_VERSION + digest.hexdigest()


def bag_hash(root: Any) -> str | None:
    """A hash of what the main content holds, whatever its order: its text pieces
    and link targets, sorted. A list sorted another way (``?sort=price``) has the
    bag of the unsorted one (crawler.crawl.params compares it). Call it after
    :func:`main_content`, which strips the tree."""
    if root is None or not hasattr(root, "iter"):
        return None
    pieces = ["".join(t.split()) for t in root.itertext()] + list(_targets(root))
    digest = hashlib.blake2b(digest_size=16)
    for piece in sorted(p for p in pieces if p):
        digest.update(piece.encode("utf-8") + b"\n")
    return VERSION + digest.hexdigest()


def same_page(
    prev: Mapping[str, Any], own: str | None, main: str | None, body: str | None
) -> bool | None:
    """Whether a page is unchanged since its previous record *prev* (a ledger row):
    by its own content (:func:`own_hash`) when both runs have it, else as
    :func:`same_content` compares. None when there is nothing to compare. What a
    lastmod from evidence, the change history and the revisit schedule all ask."""
    prev_own = prev.get("own_hash")
    if prev_own is not None and own is not None and prev_own[:3] == own[:3]:
        return bool(prev_own == own)
    return same_content(prev["main_hash"], main, prev["content_hash"], body)


def same_content(
    prev_main: str | None, main: str | None, prev_body: str | None, body: str | None
) -> bool | None:
    """Whether a page's main content is unchanged since the previous run: compared
    by main-content hash when both are of this version, else by the hash of the
    whole body (equal bytes: unchanged; else counted as changed). None when there is
    nothing to compare."""
    if prev_main is not None and main is not None and prev_main[:3] == main[:3]:
        return prev_main == main
    if prev_body is not None and body is not None:
        return prev_body == body
    return None
