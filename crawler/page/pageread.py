"""Reading a parsed page's title and schema.org values (texts, URLs, booleans) as the
rich-data readers (:mod:`crawler.page.pagemedia`, :mod:`crawler.page.pagevideos`) take
them. Malformed data gives ``None``, never an exception."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin

from crawler.page.links import clean_href

MAX_DEPTH = 32  # nesting of JSON-LD and microdata items read
HTTP = frozenset({"http", "https"})


def absolute(base: str, value: Any) -> str | None:
    """*value* (an attribute, a JSON-LD string) as an absolute http(s) URL, or None."""
    if not isinstance(value, str):
        return None
    href = clean_href(value)
    if not href:
        return None
    url = urljoin(base, href)
    return url if url.partition(":")[0].lower() in HTTP else None


def first_text(values: list[str] | None) -> str | None:
    for value in values or ():
        text = " ".join(value.split())
        if text:
            return text
    return None


def html_title(root: Any) -> str | None:
    return first_text(["".join(t.itertext()) for t in root.xpath("//title[not(ancestor::svg)]")])


def text_value(value: Any) -> str | None:
    """A property's text: a string (whitespace collapsed), a number, a
    ``{"@value": ...}``, or the first of a list that is one."""
    if isinstance(value, list):
        return next((t for t in map(text_value, value) if t is not None), None)
    if isinstance(value, dict):
        return text_value(value.get("@value"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return " ".join(value.split()) or None
    return None


def url_value(base: str, value: Any) -> str | None:
    """A property's URL: a string, an object's ``url``/``contentUrl``/``@id``, or
    the first of a list that gives one."""
    if isinstance(value, dict):
        value = [value.get(key) for key in ("url", "contentUrl", "@id")]
    if isinstance(value, list):
        return next((u for u in (url_value(base, item) for item in value) if u), None)
    return absolute(base, value)


def bool_value(value: Any) -> bool | None:
    if isinstance(value, list):
        return bool_value(value[0]) if value else None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = re.split(r"[/#:]", value.strip())[-1].lower()
        if word in ("true", "yes"):
            return True
        if word in ("false", "no"):
            return False
    return None
