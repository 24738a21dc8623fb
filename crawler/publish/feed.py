"""The delta feed: ``changes.atom``, an Atom 1.0 feed (RFC 4287) of the URLs that changed lately.

What it lists, and why it is renamed into place only after the index: docs/around.md, "The
delta feed"; which URLs: :mod:`crawler.publish.changes`. The sitemaps protocol takes a feed
"as a delta update (containing only the newest content) to supplement a complete sitemap",
so it keeps a sitemap's limits (50,000 entries, 50 MiB). The RFC's rules, beyond the docs
page: an ``atom:author`` on the feed (4.1.1), so that no entry needs one; ``atom:generator``
without a version, so that an upgrade alone changes no byte; no ``atom:content`` (hence the
alternate link), ``atom:published`` (not known) or ``atom:summary`` (4.1.1.1) in an entry; a
date alone is that day's ``T00:00:00Z`` (3.3); a CR in a title is written ``&#13;`` (a
reader would read it as a LF), and what XML 1.0 cannot hold is left out of a page's title
and refused in the feed's own.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from crawler.core.lastmod import lastmod_datetime
from crawler.publish.childfile import fsync_dir, place, write_synced
from crawler.publish.sitemapxml import escape, escape_attribute, escape_text
from crawler.sitemaps.entry import NOT_XML_CHAR, _check_date, _check_text, _check_url
from crawler.sitemaps.feeds import ATOM_NS
from crawler.sitemaps.limits import MAX_BYTES_PER_FILE, MAX_URLS_PER_FILE

__all__ = [
    "ATOM_NS",
    "FEED_NAME",
    "GENERATOR",
    "FeedEntry",
    "publish_feed",
    "render_feed",
    "write_feed",
]

#: The feed's file name, beside the sitemap index.
FEED_NAME: Final = "changes.atom"
#: What ``<generator>`` says.
GENERATOR: Final = "sitemap-crawler"

_HEADER: Final = f'<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="{ATOM_NS}">\n'
_FOOTER: Final = "</feed>\n"


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One changed page: its ``url`` (an absolute http(s) URL, as a ``<loc>``
    is), ``updated`` (when it changed: a W3C datetime, as a lastmod is) and
    ``title`` (the page's title, as the page had it; ``None``, or one that is
    blank once what XML cannot hold is left out, puts the URL in ``<title>``).
    ``ValueError`` when made for a URL or date the feed could not carry."""

    url: str
    updated: str
    title: str | None = None

    def __post_init__(self) -> None:
        _check_url(self.url, "feed entry url")
        _check_date(self.updated, "feed entry updated")
        if self.title is not None and not isinstance(self.title, str):
            raise ValueError(f"feed entry title must be a str, not {type(self.title).__name__}")


def _rfc3339(updated: str) -> str:
    """A checked W3C datetime as an RFC 3339 date-time: a date alone (10 characters;
    lastmod allows it, RFC 3339 does not) is midnight UTC, a date-time (seconds and zone
    required) stays as it is."""
    return f"{updated}T00:00:00Z" if len(updated) == 10 else updated


def _render_entry(entry: FeedEntry) -> str:
    url = entry.url
    title = entry.title
    if title is not None and NOT_XML_CHAR.search(title):
        title = NOT_XML_CHAR.sub("", title)
    if title is None or not title.strip():
        title = url
    return (
        f"<entry><id>{escape(url)}</id><title>{escape_text(title)}</title>"
        f'<link href="{escape_attribute(url)}"/>'
        f"<updated>{_rfc3339(entry.updated)}</updated></entry>\n"
    )


def render_feed(
    entries: Sequence[FeedEntry],
    *,
    feed_id: str,
    title: str,
    self_url: str,
    site_url: str,
    empty_updated: str,
) -> bytes:
    """The feed's bytes (UTF-8): the entries in the order given, after the feed's own
    elements; the same arguments give the same bytes. ``feed_id`` is its permanent
    ``<id>`` (a URL; RFC 4287, 4.2.6), ``title`` its ``<title>``, ``self_url`` where it
    is published (``rel="self"``) and ``site_url`` the site's home page, also the
    author's ``<uri>`` (its host is the author's ``<name>``). ``<updated>`` is the newest
    entry's (by instant; the first on a tie), else ``empty_updated`` (a W3C datetime,
    checked always), which should not change while nothing changes. ``ValueError`` for a
    bad URL, date or text, a URL listed twice, or a feed over a sitemap's limits."""
    # The feed's own URLs are Atom's, which sets no shortest length: only the
    # entries are read as a sitemap's <loc> (a home page like http://a.b/ is 11).
    for value, what in ((feed_id, "feed_id"), (self_url, "self_url"), (site_url, "site_url")):
        _check_url(value, what, shortest=1)
    _check_text(title, "feed title")
    _check_date(empty_updated, "empty_updated")
    if len(entries) > MAX_URLS_PER_FILE:
        raise ValueError(
            f"a feed read as a sitemap holds at most {MAX_URLS_PER_FILE} entries,"
            f" not {len(entries)}"
        )
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(entry, FeedEntry):
            raise ValueError(f"feed entries must be FeedEntry objects, not {type(entry).__name__}")
        if entry.url in seen:
            raise ValueError(f"URL listed twice in the feed: {entry.url[:80]!r}")
        seen.add(entry.url)

    if entries:
        # max() keeps the first of equal instants: the given order decides.
        updated = max(entries, key=lambda entry: lastmod_datetime(entry.updated)).updated
    else:
        updated = empty_updated
    host = urlsplit(site_url).netloc.rpartition("@")[2]
    parts = [
        _HEADER,
        f"<id>{escape(feed_id)}</id>\n",
        f"<title>{escape_text(title)}</title>\n",
        f"<updated>{_rfc3339(updated)}</updated>\n",
        f'<link rel="self" href="{escape_attribute(self_url)}"/>\n',
        f'<link href="{escape_attribute(site_url)}"/>\n',
        f"<author><name>{escape_text(host)}</name><uri>{escape(site_url)}</uri></author>\n",
        f"<generator>{GENERATOR}</generator>\n",
    ]
    parts.extend(map(_render_entry, entries))
    parts.append(_FOOTER)
    data = "".join(parts).encode("utf-8")
    if len(data) > MAX_BYTES_PER_FILE:
        raise ValueError(
            f"a feed read as a sitemap is at most {MAX_BYTES_PER_FILE} bytes, not {len(data)}"
        )
    return data


def write_feed(path: Path, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path``
    (``.<name>.<pid>.tmp``: ``.changes.atom.<pid>.tmp``), fsync it and return
    its path, for :func:`publish_feed` (or to be removed). The temporary file
    is removed if the write fails."""
    temp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        # open(), not tempfile.mkstemp(): readable by the web server (see ChildFile).
        with open(temp, "wb") as stream:
            stream.write(data)
            write_synced(stream)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def publish_feed(temp: Path, final: Path) -> None:
    """Rename ``temp`` (from :func:`write_feed`) over ``final``: readers see the
    old feed or the new one, never part of one; the same bytes leave ``final``
    untouched. Both must be in the same directory (a rename across file systems
    is not atomic)."""
    if temp.parent.resolve() != final.parent.resolve():
        raise ValueError(f"{temp} and {final} are not in the same directory")
    place(temp, final)
    fsync_dir(final.parent)
