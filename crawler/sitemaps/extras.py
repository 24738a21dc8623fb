"""A sitemap entry's extensions as JSON: what the ledger keeps in its ``extras`` column.

:func:`extras_json` writes an entry's hreflang alternates, images, videos and news
publication as JSON text, :func:`entry_extras` reads them back as the keyword
arguments of a :class:`crawler.sitemaps.entry.SitemapEntry`: the one place that knows the
format (docs/ledger.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypedDict

from crawler.sitemaps.entry import Alternate, News, SitemapEntry, Video, _checked_extensions

__all__ = ["Extensions", "entry_extras", "extras_json"]


class Extensions(TypedDict, total=False):
    """An entry's extensions, as :class:`SitemapEntry` takes them by keyword:
    ``SitemapEntry(loc, lastmod, **entry_extras(text))``."""

    alternates: tuple[Alternate, ...]
    images: tuple[str, ...]
    videos: tuple[Video, ...]
    news: News


_EXTRAS_KEYS: frozenset[str] = frozenset({"alternates", "images", "videos", "news"})
_VIDEO_KEYS: tuple[str, ...] = tuple(Video.__dataclass_fields__)
_VIDEO_REQUIRED: tuple[str, ...] = ("thumbnail_loc", "title", "description")
_NEWS_KEYS: tuple[str, ...] = tuple(News.__dataclass_fields__)


def extras_json(entry: SitemapEntry) -> str | None:
    """The extensions of ``entry`` as JSON, or ``None`` without any (the fast path):
    ``{"alternates": [[hreflang, href], ...], "images": [loc, ...], "videos":
    [{field: value, ...}, ...], "news": {field: value, ...}}``, each key only when
    the entry has some, a video's ``None`` fields left out; compact and in a fixed
    order, so that an unchanged entry stores the same text."""
    if not entry.extended:
        return None
    extras: dict[str, Any] = {}
    if entry.alternates:
        extras["alternates"] = [[a.hreflang, a.href] for a in entry.alternates]
    if entry.images:
        extras["images"] = list(entry.images)
    if entry.videos:
        extras["videos"] = [
            {key: getattr(video, key) for key in _VIDEO_KEYS if getattr(video, key) is not None}
            for video in entry.videos
        ]
    if entry.news is not None:
        extras["news"] = {key: getattr(entry.news, key) for key in _NEWS_KEYS}
    return json.dumps(extras, ensure_ascii=False, separators=(",", ":"))


def _object(
    value: object, what: str, keys: Iterable[str], required: Iterable[str] = ()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object, not {value!r}"[:200])
    unknown = set(value) - set(keys)
    if unknown:
        raise ValueError(f"{what} has unknown keys: {', '.join(sorted(map(str, unknown)))}")
    if missing := [key for key in required if key not in value]:
        raise ValueError(f"{what} lacks {', '.join(missing)}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a JSON array, not {value!r}"[:200])
    return value


def entry_extras(extras: str | None) -> Extensions:
    """The extensions in ``extras`` (:func:`extras_json`'s format), checked, as
    keyword arguments of :class:`SitemapEntry` (``{}`` for ``None``); anything wrong
    raises ``ValueError`` saying what."""
    if extras is None:
        return {}
    if not isinstance(extras, str):
        raise ValueError(f"extras must be JSON text or None, not {type(extras).__name__}")
    try:
        data = json.loads(extras)
    except ValueError as exc:  # json.JSONDecodeError, RecursionError aside
        raise ValueError(f"extras is not JSON: {exc}") from None
    data = _object(data, "extras", _EXTRAS_KEYS)
    result: Extensions = {}
    if "alternates" in data:
        alternates = []
        for pair in _list(data["alternates"], "extras alternates"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError(f"an alternate must be [hreflang, href], not {pair!r}"[:200])
            alternates.append(Alternate(pair[0], pair[1]))
        result["alternates"] = tuple(alternates)
    if "images" in data:
        result["images"] = tuple(_list(data["images"], "extras images"))
    if "videos" in data:
        videos = []
        for video in _list(data["videos"], "extras videos"):
            videos.append(Video(**_object(video, "a video", _VIDEO_KEYS, _VIDEO_REQUIRED)))
        result["videos"] = tuple(videos)
    if "news" in data:
        result["news"] = News(**_object(data["news"], "extras news", _NEWS_KEYS, _NEWS_KEYS))
    # The image locs (plain strings) and their count, as SitemapEntry checks them.
    _checked_extensions((), result.get("images", ()), (), None)
    return result
