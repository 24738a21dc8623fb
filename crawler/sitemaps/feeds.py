"""RSS and Atom feeds: one ``<item>`` or ``<entry>`` element as an entry.

Google reads feeds as sitemaps: an RSS 2.0 (or 1.0) ``<item>``'s URL is its ``<link>``,
its date the ``pubDate`` (or ``dc:date``), an RFC 822 date; an Atom 1.0 (or 0.3)
``<entry>``'s URL is its ``<link href>`` with ``rel="alternate"`` (or none), its date
the ``<updated>`` (0.3: ``<modified>``, else ``<issued>``). No changefreq or priority.
The Atom root must be in the Atom namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from crawler.sitemaps.model import Entry
from crawler.sitemaps.reading import Sink, element_text, split_tag

ATOM_NS: Final = "http://www.w3.org/2005/Atom"
# Atom 0.3 predates the RFC; Google still lists it among the feeds it reads.
ATOM03_NS: Final = "http://purl.org/atom/ns#"
DC_NS: Final = "http://purl.org/dc/elements/1.1/"


def _children(element: Any) -> Iterator[tuple[Any, str | None, str]]:
    """The child elements (not comments), with their namespace and local name."""
    for child in element:
        if isinstance(child.tag, str):
            yield child, *split_tag(child.tag)


def _entry(
    sink: Sink,
    element: Any,
    offset: int,
    link: tuple[str, int] | None,
    lastmod: str | None,
    missing: str,
) -> Entry | None:
    """A feed item's entry: its link (URL, line) and date; ``missing`` says what a
    block without a link lacks (``missing-loc``)."""
    block_line = (element.sourceline or 0) + offset
    if link is None:
        sink.missing_loc(missing, block_line)
        return None
    loc = sink.loc_value(link[0], link[1], block_line)
    if loc is None:
        return None
    return Entry(loc=loc, lastmod=lastmod, changefreq=None, priority=None, line=link[1])


@dataclass(slots=True)
class RssSink(Sink):
    """The ``<item>`` entries of an RSS 2.0 ``<rss>`` or RSS 1.0 ``<rdf:RDF>``."""

    def read_block(self, element: Any, offset: int) -> Entry | None:
        namespace, _ = split_tag(element.tag)
        link: tuple[str, int] | None = None
        date: str | None = None
        for child, child_namespace, local in _children(element):
            if child_namespace == namespace and local == "link" and link is None:
                link = (element_text(child), (child.sourceline or 0) + offset)
            elif date is None and (
                (child_namespace == namespace and local == "pubDate")
                or (child_namespace == DC_NS and local == "date")
            ):
                date = element_text(child).strip()
        return _entry(self, element, offset, link, date, "<item> without <link>")


@dataclass(slots=True)
class AtomSink(Sink):
    """The ``<entry>`` entries of an Atom ``<feed>``."""

    def expected_namespace(self, namespace: str | None) -> str | None:
        return None if namespace == ATOM03_NS else ATOM_NS

    def read_block(self, element: Any, offset: int) -> Entry | None:
        namespace, _ = split_tag(element.tag)
        link: tuple[str, int] | None = None
        updated: str | None = None
        issued: str | None = None
        for child, child_namespace, local in _children(element):
            if child_namespace != namespace:
                continue
            if local == "link" and link is None:
                # RFC 4287, 4.2.7.2: no rel means "alternate", the entry's page.
                rel = (child.get("rel") or "alternate").strip().lower()
                href = child.get("href")
                if rel == "alternate" and href is not None:
                    link = (href, (child.sourceline or 0) + offset)
            elif local in ("updated", "modified") and updated is None:
                updated = element_text(child).strip()
            elif local == "issued" and issued is None and namespace == ATOM03_NS:
                # Atom 0.3's publication date: the date when no <modified> says more.
                issued = element_text(child).strip()
        if updated is None:
            updated = issued
        return _entry(
            self, element, offset, link, updated, "<entry> without <link href> (rel=alternate)"
        )
