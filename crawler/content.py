"""The hash of a page's main content: what "the page changed" means for lastmod.

When a server sends no usable Last-Modified, lastmod comes from evidence: the time
a change of this hash was first seen (issue #4, "Honest lastmod"). The hash covers
the page's text and the targets of its links and images, and leaves out what
changes on every request without the page changing: scripts, styles, comments,
``<noscript>``, ``<template>``, and the volatile regions the user names with CSS
selectors (``SITEMAP_VOLATILE_SELECTORS``, e.g. ``.timestamp`` or ``#csrf``).
Whitespace is folded, so re-indented markup is no change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from cssselect import GenericTranslator
from lxml import etree
from scrapy.http import HtmlResponse

_DROPPED_TAGS = ("script", "style", "noscript", "template")
_TRANSLATOR = GenericTranslator()


def _remove(element: Any) -> None:
    """Remove *element* but keep its tail text in the document."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    if tail and tail.strip():
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def main_content_hash(response: HtmlResponse, volatile: Iterable[str] = ()) -> str | None:
    """A hex digest of the page's main content, or None for a page with no tree."""
    root = response.selector.root
    if root is None or not hasattr(root, "iter"):
        return None
    # Work on a copy: the response's tree is shared with the link extraction.
    tree = etree.fromstring(etree.tostring(root), parser=etree.HTMLParser())
    if tree is None:
        return None
    doomed = list(tree.iter(etree.Comment, *_DROPPED_TAGS))
    for selector in volatile:
        doomed.extend(tree.xpath(_TRANSLATOR.css_to_xpath(selector)))
    for el in doomed:
        _remove(el)
    digest = hashlib.blake2b(digest_size=16)
    text = " ".join(" ".join(tree.itertext()).split())
    digest.update(text.encode("utf-8"))
    for el in tree.iter("a", "img", "link"):
        for attr in ("href", "src"):
            value = el.get(attr)
            if value:
                digest.update(b"\0" + value.strip().encode("utf-8"))
    return digest.hexdigest()
