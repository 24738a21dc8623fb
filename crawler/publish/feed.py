"""The delta feed: ``changes.atom``, an Atom 1.0 feed of the URLs that changed recently.

What it is for. The sitemap set lists every URL; search engines read it in full
now and then. The sitemaps protocol also takes syndication feeds (RSS 2.0, Atom
0.3 and 1.0) as sitemaps, and advises one "as a delta update (containing only
the newest content) to supplement a complete sitemap": a small file, fetched
often, that says which URLs changed and when. ``changes.atom`` sits beside the
sitemap index and is submitted as a sitemap too. A search engine takes an
entry's URL from its ``<link href>`` (``rel="alternate"``, the default) and its
date from ``<updated>``. Which URLs belong in it is decided elsewhere (from the
crawl's ledger); this module renders the feed and publishes it.

The document (RFC 4287, The Atom Syndication Format), byte for byte::

    <?xml version="1.0" encoding="UTF-8"?>
    <feed xmlns="http://www.w3.org/2005/Atom">
    <id>FEED_ID</id>
    <title>TITLE</title>
    <updated>NEWEST</updated>
    <link rel="self" href="SELF_URL"/>
    <link href="SITE_URL"/>
    <author><name>HOST</name><uri>SITE_URL</uri></author>
    <generator>sitemap-crawler</generator>
    <entry><id>URL</id><title>TITLE</title><link href="URL"/><updated>TIME</updated></entry>
    ...
    </feed>

The rules it follows:

* UTF-8 XML in the Atom namespace, ``http://www.w3.org/2005/Atom`` (sections 2
  and 1.2); the feed's metadata first, then its entries (Appendix B's grammar
  puts every ``atom:entry`` after them), in the order given: the caller lists
  them newest first.
* ``atom:feed`` (4.1.1) has exactly one ``atom:id``, ``atom:title`` and
  ``atom:updated``, a ``rel="self"`` link (a SHOULD) to where the feed is
  published and one alternate link (no ``rel``: "alternate", 4.2.7.2) to the
  site. It has an ``atom:author``, so that no entry needs one (4.1.1: "MUST
  contain one or more atom:author elements, unless all of the atom:feed
  element's child atom:entry elements contain at least one atom:author"): a
  Person construct (3.2) whose ``atom:name`` is the site's host and whose
  ``atom:uri`` the site's URL. ``atom:generator`` (4.2.4) names this crawler,
  without a version, so that an upgrade alone does not change the bytes.
* ``atom:entry`` (4.1.2) has exactly one ``atom:id``, ``atom:title`` and
  ``atom:updated``, and an alternate link, as it has no ``atom:content``. The
  id (4.2.6, an IRI) and the link are the page's URL: a page that changes
  again is the same entry, with a newer ``atom:updated``, so a URL is listed
  once (a second entry for it is refused). ``atom:title`` (4.2.14) is a Text
  construct of type "text" (3.1.1), required: the page's title, or its URL when
  it has none. No ``atom:published`` (4.2.9): when a page was first published
  is not known. No ``atom:summary``: 4.1.1.1 advises one for an entry without
  content, but "the absence of atom:summary is not an error", and all there is to
  say of a page is its title.
* ``atom:updated`` (4.2.15) is a Date construct (3.3): an RFC 3339 date-time
  (section 5.6) with upper-case "T" and "Z" and a time zone. An entry's is the
  page's lastmod, a W3C datetime as :func:`crawler.core.lastmod.lastmod_datetime`
  checks it: a date-time is written as given (``+00:00`` is RFC 3339's UTC as
  much as ``Z`` is); a date alone, which a Date construct does not allow, becomes
  that day's ``T00:00:00Z``, the instant ``lastmod_datetime`` reads it as. The
  feed's is its newest entry's, so that an unchanged site republishes the feed
  byte for byte. A feed with no entries still needs one: the caller passes it
  as ``empty_updated``, and should pass a value that stays the same while
  nothing changes (the newest lastmod it knows, say, not the time of the run).
* Everything is escaped: ``&``, ``<`` and ``>`` in text, and both quotes too in
  attribute values (XML 1.0, 2.4 and 3.1); a CR in a title as ``&#13;``, which
  a reader would otherwise read as a LF. The characters XML 1.0 cannot hold at
  all (most C0 controls, lone surrogates, U+FFFE, U+FFFF) are left out of a
  page's title, which comes from the page as it was (lxml hands them on): a
  title of nothing else is no title. The feed's own title, which is
  configuration, is refused with one.
* A feed read as a sitemap counts as one: at most 50,000 entries and 50 MiB
  (crawler.sitemaps.limits).

Publishing: :func:`write_feed` writes the bytes to ``.changes.atom.<pid>.tmp``
beside the final name and fsyncs them; :func:`publish_feed` renames that over
``changes.atom`` (one atomic rename on the same file system, then an fsync of
the directory) and the caller calls it right after the sitemap index is in
place; :func:`discard` removes the temporary file of a publication that was
given up. tests/test_feed.py validates feeds against RFC 4287's schema
(Appendix B, with its Schematron rules) and reads them back with
ultimate-sitemap-parser and feedparser.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from crawler.core.lastmod import lastmod_datetime
from crawler.publish.childfile import fsync_dir, write_synced
from crawler.sitemaps.entry import check_lastmod, check_loc
from crawler.sitemaps.limits import MAX_BYTES_PER_FILE, MAX_URLS_PER_FILE

__all__ = [
    "ATOM_NS",
    "FEED_NAME",
    "GENERATOR",
    "FeedEntry",
    "discard",
    "publish_feed",
    "render_feed",
    "write_feed",
]

#: The Atom 1.0 namespace (RFC 4287, 1.2).
ATOM_NS: Final = "http://www.w3.org/2005/Atom"
#: The feed's file name, beside the sitemap index.
FEED_NAME: Final = "changes.atom"
#: What ``<generator>`` says.
GENERATOR: Final = "sitemap-crawler"

_HEADER: Final = f'<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="{ATOM_NS}">\n'
_FOOTER: Final = "</feed>\n"
# What XML 1.0 cannot hold at all, even escaped (its production "Char"), as in
# crawler.sitemaps.entry: C0 controls other than tab, LF and CR, lone surrogates, U+FFFE
# and U+FFFF.
_NOT_XML_CHAR: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# A date without a time: lastmod allows it, RFC 3339's date-time does not.
_DATE_ONLY: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


def _check_text(value: object, what: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str, not {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    if _NOT_XML_CHAR.search(value):
        raise ValueError(f"{what} contains characters XML cannot hold: {value[:80]!r}")


def _check_url(value: object, what: str) -> None:
    try:
        check_loc(value)  # type: ignore[arg-type]  # check_loc() checks the type
    except ValueError as exc:
        raise ValueError(f"{what} is not a URL that may be published: {exc}") from None


def _check_updated(value: object, what: str) -> None:
    try:
        check_lastmod(value)  # type: ignore[arg-type]  # lastmod_datetime() checks the type
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a W3C datetime: {value!r} ({exc})") from None


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
        _check_updated(self.updated, "feed entry updated")
        if self.title is not None and not isinstance(self.title, str):
            raise ValueError(f"feed entry title must be a str, not {type(self.title).__name__}")


def _escape(text: str) -> str:
    # "&" first, or the "&" of "&lt;" would be escaped again.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_text(text: str) -> str:
    # A CR would be read back as a LF (XML 1.0, 2.11) unless it is a reference.
    return _escape(text).replace("\r", "&#13;")


def _escape_attribute(text: str) -> str:
    # Attribute values are written between double quotes; both quotes are
    # escaped all the same. URLs have passed check_loc(): no whitespace, which
    # attribute-value normalisation (XML 1.0, 3.3.3) would change.
    return _escape(text).replace('"', "&quot;").replace("'", "&apos;")


def _rfc3339(updated: str) -> str:
    """A checked W3C datetime as an RFC 3339 date-time: a date alone becomes
    midnight UTC, a date-time (seconds and zone required) stays as it is."""
    if _DATE_ONLY.fullmatch(updated):
        return f"{updated}T00:00:00Z"
    return updated


def _render_entry(entry: FeedEntry) -> str:
    url = entry.url
    title = entry.title
    if title is not None and _NOT_XML_CHAR.search(title):
        title = _NOT_XML_CHAR.sub("", title)
    if title is None or not title.strip():
        title = url
    return (
        f"<entry><id>{_escape(url)}</id><title>{_escape_text(title)}</title>"
        f'<link href="{_escape_attribute(url)}"/>'
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
    """The feed's bytes (UTF-8): the entries in the order given, after the
    feed's own elements; the same arguments give the same bytes.

    ``feed_id`` is the feed's permanent ``<id>`` (a URL; RFC 4287, 4.2.6),
    ``title`` its ``<title>``, ``self_url`` where it is published
    (``rel="self"``) and ``site_url`` the site's home page, which is also the
    author's ``<uri>`` (its host is the author's ``<name>``). The feed's
    ``<updated>`` is the newest entry's (by instant; the first such entry's text
    on a tie); ``empty_updated`` (a W3C datetime, checked always) is used when
    there are no entries and should not change while nothing changes.

    ``ValueError`` for a bad URL, date or text, a URL listed twice, or a feed
    over the sitemap limits (50,000 entries, 50 MiB).
    """
    for value, what in (
        (feed_id, "feed_id"),
        (self_url, "self_url"),
        (site_url, "site_url"),
    ):
        _check_url(value, what)
    _check_text(title, "feed title")
    _check_updated(empty_updated, "empty_updated")
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
        f"<id>{_escape(feed_id)}</id>\n",
        f"<title>{_escape_text(title)}</title>\n",
        f"<updated>{_rfc3339(updated)}</updated>\n",
        f'<link rel="self" href="{_escape_attribute(self_url)}"/>\n',
        f'<link href="{_escape_attribute(site_url)}"/>\n',
        f"<author><name>{_escape_text(host)}</name><uri>{_escape(site_url)}</uri></author>\n",
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
    its path, for :func:`publish_feed` or :func:`discard`. The temporary file
    is removed if the write fails."""
    temp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        # open(), not tempfile.mkstemp(): mkstemp makes the file 0600, and a
        # published feed must be readable by the web server (umask decides).
        with open(temp, "wb") as stream:
            stream.write(data)
            write_synced(stream)
    except BaseException:
        discard(temp)
        raise
    return temp


def publish_feed(temp: Path, final: Path) -> None:
    """Rename ``temp`` (from :func:`write_feed`) over ``final``: readers see the
    old feed or the new one, never part of one. Both must be in the same
    directory (a rename across file systems is not atomic)."""
    if temp.parent.resolve() != final.parent.resolve():
        raise ValueError(f"{temp} and {final} are not in the same directory")
    os.replace(temp, final)
    fsync_dir(final.parent)


def discard(temp: Path) -> None:
    """Remove a temporary file from :func:`write_feed` that will not be published
    (nothing happens if it is gone already)."""
    temp.unlink(missing_ok=True)
