"""The signs that a raw HTML page is an application shell a script fills in
(docs/rendering.md): an empty mount element, a ``<noscript>`` asking for JavaScript, or a body of
scripts with almost no text. Read by the page analysis (:mod:`crawler.page.analysis`)
before the main-content hash strips ``<noscript>``; the render policy
(:mod:`crawler.fetch.rendering`) decides from them which pages the browser renders.
"""

from __future__ import annotations

import re
from typing import Any

# The ids frameworks mount their application on (and Angular's <app-root>).
_MOUNT_IDS = ("root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app", "application")
# XPath's id() reads libxml2's table of ids: no walk over the tree (a walk with a
# predicate per element cost twice the parse of a 95 KB page).
_MOUNT_XPATH = f"id('{' '.join(_MOUNT_IDS)}')"
_MOUNT_TAGS = ("app-root",)
# A mount element (or a body) with no more text than a "Loading..." is empty.
_EMPTY_TEXT = 100
# Below this many links in all, a body of scripts with almost no text is a shell
# whatever its mount element is called (the policy counts the site's links again).
_FEW_LINKS = 10
_ASKS_FOR_JS = re.compile(r"javascript|\bjs\b", re.IGNORECASE)


def shell_signs(root: Any, links: int) -> str | None:
    """The sign, in words, that the raw page *root* (an lxml tree, with *links*
    ``<a>``/``<area>`` links in all) is an application shell a script fills in, or
    None. Links to the site are counted by the caller (they need the crawl's host);
    this is what the markup says, read without a walk over the whole tree."""
    if root is None or not hasattr(root, "xpath"):
        return None
    for element in [*root.xpath(_MOUNT_XPATH), *root.iter(*_MOUNT_TAGS)]:
        if element.find(".//a") is None and len(_text(element)) < _EMPTY_TEXT:
            name = element.get("id")
            return f"empty mount element {'#' + name if name else '<' + element.tag + '>'}"
    for noscript in root.iter("noscript"):
        if _ASKS_FOR_JS.search(_text(noscript)):
            return "<noscript> asks for JavaScript"
    if links < _FEW_LINKS:
        body = root.find(".//body")
        if body is not None and body.find(".//script") is not None:
            words = body.xpath(
                ".//text()[not(ancestor::script or ancestor::style or ancestor::noscript)]"
            )
            if len(" ".join("".join(words).split())) < _EMPTY_TEXT:
                return "scripts and almost no text"
    return None


def _text(element: Any) -> str:
    return " ".join("".join(element.itertext()).split())
