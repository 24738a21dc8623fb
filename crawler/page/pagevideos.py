"""A page's videos (docs/rich.md), for video sitemaps
(https://developers.google.com/search/docs/crawling-indexing/sitemaps/video-sitemaps),
in this order: schema.org ``VideoObject`` in JSON-LD and in microdata (``itemref`` not
followed), Open Graph ``og:video`` (https://ogp.me/#structured), ``<video poster=...>``.
The same video found twice (the same content_loc or player_loc) is one, each field from
where it was found first. What breaks Google's rules is dropped with a problem;
``missing`` names what Google requires and the page did not give. Malformed data is
skipped, never raised."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any
from urllib.parse import urljoin, urlsplit

from crawler.core.lastmod import item_types, jsonld_blocks, jsonld_walk, page_metas, w3c_datetime
from crawler.core.urls import normalize_url
from crawler.page.links import clean_href
from crawler.page.pageread import (
    MAX_DEPTH,
    absolute,
    bool_value,
    first_text,
    html_title,
    text_value,
    url_value,
)
from crawler.sitemaps.entry import VideoFields
from crawler.sitemaps.limits import MAX_VIDEO_DURATION

__all__ = ["VideoFacts", "videos"]


@dataclass(frozen=True, slots=True)
class VideoFacts(VideoFields):
    """One video of a page, as a video sitemap's ``video:video`` carries it: URLs absolute,
    *duration* in seconds, W3C dates; *missing*: what Google requires and the page did
    not give; *problems*: what was left out, and why. JSON: these fields, tuples as lists."""

    missing: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "missing": list(self.missing), "problems": list(self.problems)}


_REQUIRED = ("thumbnail_loc", "title", "description")  # and content_loc or player_loc
_LOCS = ("content_loc", "player_loc")
_VIDEO_FIELDS = tuple(f.name for f in fields(VideoFields))
_DURATION = re.compile(
    r"P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?=\d|\.\d)(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?",
    re.I | re.A,
)
_UNITS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
# A URL without og:video:type is a file (content_loc) when its path ends so.
# fmt: off
_VIDEO_EXTENSIONS = (
    ".mp4", ".m4v", ".webm", ".ogv", ".ogg", ".mov", ".mpg", ".mpeg", ".avi", ".wmv", ".flv",
    ".mkv", ".3gp", ".m3u8", ".mpd", ".ts",
)
# fmt: on
_PLAYER_TYPES = frozenset({"text/html", "application/x-shockwave-flash"})


def _duration(value: Any, problems: list[str]) -> int | None:
    text = text_value(value)
    if text is None:
        return None
    m = _DURATION.fullmatch(text)
    if m is None or m.group(0) in ("P", "p") or not any(m.group(u) for u in _UNITS):
        problems.append(f"duration {text!r} is not an ISO 8601 duration: left out")
        return None
    total = sum(float(m.group(u).replace(",", ".")) * s for u, s in _UNITS.items() if m.group(u))
    seconds = int(total + 0.5)
    if seconds > MAX_VIDEO_DURATION:
        problems.append(f"duration {seconds} s is over Google's limit of 28,800 s: left out")
        return None
    if seconds < 1:
        problems.append(f"duration {seconds} s is under Google's minimum of 1 s: left out")
        return None
    return seconds


def _date(value: Any, what: str, problems: list[str]) -> str | None:
    text = text_value(value)
    if text is None:
        return None
    found = w3c_datetime(text)
    if found is None:
        problems.append(
            f"{what} {text!r} is not a W3C date or date-time with a time zone: left out"
        )
    return found


def _live(value: Any) -> bool | None:
    """From ``publication``: an event's ``isLiveBroadcast``, else a ``BroadcastEvent``."""
    events = value if isinstance(value, list) else [value]
    for event in events:
        if not isinstance(event, dict):
            continue
        flag = bool_value(event.get("isLiveBroadcast"))
        if flag is not None:
            return flag
        if "BroadcastEvent" in item_types(event):
            return True
    return None


def _from_schema(node: Mapping[str, Any], base: str) -> dict[str, Any]:
    """A draft video from a JSON-LD ``VideoObject`` or a microdata item (the same
    shape: property -> value or list of values)."""
    problems: list[str] = []
    return {
        "thumbnail_loc": url_value(base, node.get("thumbnailUrl"))
        or url_value(base, node.get("thumbnail")),
        "title": text_value(node.get("name")),
        "description": text_value(node.get("description")),
        "content_loc": url_value(base, node.get("contentUrl")),
        "player_loc": url_value(base, node.get("embedUrl")),
        "duration": _duration(node.get("duration"), problems),
        "publication_date": _date(node.get("uploadDate"), "uploadDate", problems),
        "expiration_date": _date(node.get("expires"), "expires", problems),
        "family_friendly": bool_value(node.get("isFamilyFriendly")),
        "live": _live(node.get("publication")),
        "problems": problems,
    }


def _video_object(node: dict[str, Any]) -> tuple[bool, Iterable[Any]]:
    """A ``VideoObject`` is anywhere in a JSON-LD value (not inside another)."""
    found = "VideoObject" in item_types(node)
    return found, () if found else node.values()


_URL_ELEMENTS = {
    **dict.fromkeys(("audio", "embed", "iframe", "img", "source", "track", "video"), "src"),
    **dict.fromkeys(("a", "area", "link"), "href"),
    "object": "data",
}


def _microdata_value(el: Any, base: str) -> Any:
    """An ``itemprop``'s value, as the microdata standard reads it."""
    tag = el.tag
    if tag == "meta":
        return el.get("content")
    if tag in _URL_ELEMENTS:
        value = el.get(_URL_ELEMENTS[tag])
        return urljoin(base, clean_href(value)) if value else None
    if tag in ("data", "meter"):
        return el.get("value")
    if tag == "time" and el.get("datetime") is not None:
        return el.get("datetime")
    return "".join(el.itertext())


def _microdata_item(scope: Any, base: str, depth: int = 0) -> dict[str, Any]:
    """A microdata item as a JSON-LD-like object: ``@type`` and property -> list
    of values (a nested item an object of its own)."""
    item: dict[str, Any] = {"@type": (scope.get("itemtype") or "").split()}
    stack = list(reversed(scope))
    while stack:
        el = stack.pop()
        if not isinstance(el.tag, str):
            continue  # a comment
        scoped = el.get("itemscope") is not None
        names = (el.get("itemprop") or "").split()
        if names:
            if scoped:
                value = _microdata_item(el, base, depth + 1) if depth < MAX_DEPTH else None
            else:
                value = _microdata_value(el, base)
            for name in names:
                item.setdefault(name, []).append(value)
        if not scoped:
            stack.extend(reversed(el))
    return item


def _og_videos(metas: Mapping[str, list[str]], root: Any, base: str) -> list[dict[str, Any]]:
    """Open Graph videos: each ``og:video``/``og:video:url`` starts one (unless the
    current one has no URL yet), ``:secure_url`` and ``:type`` belong to the
    current one."""
    groups: list[dict[str, str]] = []
    for meta in root.iter("meta"):
        key = (meta.get("property") or meta.get("name") or "").strip().lower()
        content = meta.get("content")
        if content is None or not key.startswith("og:video"):
            continue
        part = "url" if key == "og:video" else key.removeprefix("og:video:")
        if part in ("url", "secure_url", "type"):
            if not groups or part in groups[-1]:
                groups.append({})
            groups[-1][part] = content
    out: list[dict[str, Any]] = []
    thumbnail = next((u for u in (absolute(base, v) for v in metas.get("og:image", ())) if u), None)
    for group in groups:
        url = absolute(base, group.get("secure_url")) or absolute(base, group.get("url"))
        if url is None:
            continue
        kind = group.get("type", "").strip().lower()
        a_file = urlsplit(url).path.lower().endswith(_VIDEO_EXTENSIONS)
        player = kind in _PLAYER_TYPES if kind else not a_file
        out.append(
            {
                "thumbnail_loc": thumbnail,
                "title": first_text(metas.get("og:title")),
                "description": first_text(metas.get("og:description")),
                "player_loc" if player else "content_loc": url,
                "problems": [],
            }
        )
    return out


def _video_elements(root: Any, metas: Mapping[str, list[str]], base: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    page_title: str | None = None
    for video in root.iter("video"):
        poster = absolute(base, video.get("poster"))
        if poster is None:
            continue
        sources = (absolute(base, s.get("src")) for s in video.iter("source"))
        src = absolute(base, video.get("src")) or next((u for u in sources if u), None)
        title = text_value(video.get("title"))
        if title is None:
            title = page_title = page_title or html_title(root)
        out.append(
            {
                "thumbnail_loc": poster,
                "title": title,
                "description": first_text(metas.get("description")),
                "content_loc": src,
                "problems": [],
            }
        )
    return out


def videos(root: Any, base: str, page_url: str) -> tuple[VideoFacts, ...]:
    """The page's videos, URLs absolute against *base*; *page_url*: the page's own URL,
    which Google forbids as a video's content_loc or player_loc."""
    if root is None or not hasattr(root, "iter"):
        return ()
    metas = page_metas(root)
    drafts: list[dict[str, Any]] = []
    for block in jsonld_blocks(root):
        drafts.extend(
            _from_schema(node, base) for node in jsonld_walk(block, _video_object, MAX_DEPTH)
        )
    for scope in root.xpath("//*[@itemscope][@itemtype]"):
        if "VideoObject" in item_types({"@type": scope.get("itemtype").split()}):
            drafts.append(_from_schema(_microdata_item(scope, base), base))
    drafts.extend(_og_videos(metas, root, base))
    drafts.extend(_video_elements(root, metas, base))

    page = normalize_url(page_url) or page_url
    merged: list[dict[str, Any]] = []
    for draft in drafts:
        for key in _LOCS:
            if (url := draft.get(key)) is not None and (normalize_url(url) or url) == page:
                draft["problems"].append(
                    f"{key} {draft[key]} is the page itself (Google: it must not be): left out"
                )
                draft[key] = None
        same = next((kept for kept in merged if _same_video(draft, kept)), None)
        if same is None:
            merged.append(draft)
            continue
        for name in _VIDEO_FIELDS:
            if same.get(name) is None:
                same[name] = draft.get(name)
        same["problems"].extend(p for p in draft["problems"] if p not in same["problems"])
    return tuple(_facts(draft) for draft in merged)


def _same_video(draft: Mapping[str, Any], kept: Mapping[str, Any]) -> bool:
    return any(draft.get(k) is not None and draft.get(k) == kept.get(k) for k in _LOCS)


def _facts(draft: Mapping[str, Any]) -> VideoFacts:
    missing = [name for name in _REQUIRED if draft.get(name) is None]
    if draft.get("content_loc") is None and draft.get("player_loc") is None:
        missing.append("content_loc or player_loc")
    values: dict[str, Any] = {name: draft.get(name) for name in _VIDEO_FIELDS}
    problems = tuple(dict.fromkeys(draft["problems"]))
    return VideoFacts(**values, missing=tuple(missing), problems=problems)
