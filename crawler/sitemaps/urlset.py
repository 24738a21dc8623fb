"""Urlsets and sitemap indexes: reading one ``<url>`` or ``<sitemap>`` element.

:class:`SitemapSink` takes the first ``loc``, ``lastmod``, ``changefreq`` and
``priority`` child (a second is ``duplicate-element``), counts ``image:image``, keeps
``xhtml:link rel=alternate`` links (hreflang pairs, and Google's mobile annotation:
``media``, no ``hreflang``) and reports unknown elements of the sitemap namespace
(``unknown-element``; other namespaces are extensions). A field missing in its block's
namespace is taken from a child of that name in another one, as Scrapy reads it, with
a ``namespace-mismatch``. The root must be in the 0.9 namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from crawler.sitemaps.limits import IMAGE_NS, SITEMAP_NS, XHTML_NS
from crawler.sitemaps.model import Entry, Kind
from crawler.sitemaps.reading import Sink, element_text, split_tag

_IMAGE_TAG: Final = f"{{{IMAGE_NS}}}image"
_XHTML_LINK_TAG: Final = f"{{{XHTML_NS}}}link"
_SITEMAP_FIELDS: Final = {
    Kind.URLSET: ("loc", "lastmod", "changefreq", "priority"),
    Kind.INDEX: ("loc", "lastmod"),
}
_Pairs = list[tuple[str, str]]
_Fields = dict[str, Any]  # a field's name -> its element


@dataclass(slots=True)
class SitemapSink(Sink):
    """The entries of a ``<urlset>`` (``<url>`` blocks) or ``<sitemapindex>``
    (``<sitemap>`` blocks)."""

    field_tags: dict[str, tuple[str | None, dict[str, str]]] = field(default_factory=dict)

    def expected_namespace(self, namespace: str | None) -> str | None:
        return SITEMAP_NS

    def unknown(self, element: Any, offset: int) -> None:
        if not isinstance(element.tag, str):
            return
        _, local = split_tag(element.tag)
        if local == self.block:
            return
        self.problems.new(
            "unknown-element",
            f"unexpected <{local}> in <{self.root_local}>",
            (element.sourceline or 0) + offset,
        )

    def _field_tags(self, block_tag: str) -> tuple[str | None, dict[str, str]]:
        # The block's namespace, and qualified tag -> field name: one dict lookup a
        # child (the hot loop) instead of splitting its tag.
        found = self.field_tags.get(block_tag)
        if found is None:
            namespace, _ = split_tag(block_tag)
            prefix = "" if namespace is None else f"{{{namespace}}}"
            tags = {prefix + name: name for name in _SITEMAP_FIELDS[self.kind]}
            found = self.field_tags[block_tag] = (namespace, tags)
        return found

    def read_block(self, element: Any, offset: int) -> Entry | None:
        namespace, tags = self._field_tags(element.tag)
        fields = _SITEMAP_FIELDS[self.kind]
        values: _Fields = {}
        # Fields in another namespace than the block's: used where it has none.
        foreign: _Fields = {}
        alternates: _Pairs = []
        media: _Pairs = []
        images = 0
        for child in element:
            tag = child.tag
            name = tags.get(tag)
            if name is not None:
                if name in values:
                    self.problems.new(
                        "duplicate-element",
                        f"second <{name}> in <{self.block}>; the first is used",
                        (child.sourceline or 0) + offset,
                    )
                else:
                    values[name] = child
            elif tag == _IMAGE_TAG:
                images += 1
            elif tag == _XHTML_LINK_TAG:
                self._alternate(child, (child.sourceline or 0) + offset, alternates, media)
            elif isinstance(tag, str):
                child_namespace, local = split_tag(tag)
                # Other namespaces are extensions (news, video, ...): allowed.
                if local == self.block:
                    continue  # a block inside this one: an entry of its own
                if child_namespace == namespace:
                    self.problems.new(
                        "unknown-element",
                        f"unexpected <{local}> in <{self.block}>",
                        (child.sourceline or 0) + offset,
                    )
                elif local in fields and local not in foreign:
                    foreign[local] = child
        if foreign:
            self._take_foreign(element, offset, namespace, values, foreign)
        loc_element = values.pop("loc", None)
        if loc_element is None:
            self.missing_loc(f"<{self.block}> without <loc>", (element.sourceline or 0) + offset)
            return None
        loc_line = (loc_element.sourceline or 0) + offset
        loc = self.loc_value(element_text(loc_element), loc_line, loc_line)
        if loc is None:
            return None
        lastmod, changefreq, priority = (
            None if value is None else element_text(value).strip()
            for value in map(values.get, ("lastmod", "changefreq", "priority"))
        )
        return Entry(
            loc, lastmod, changefreq, priority, loc_line, tuple(alternates), images, tuple(media)
        )

    def _take_foreign(
        self, element: Any, offset: int, namespace: str | None, values: _Fields, foreign: _Fields
    ) -> None:
        """Use the fields found only in another namespace; one problem per block."""
        taken = [name for name in foreign if name not in values]
        if not taken:
            return
        for name in taken:
            values[name] = foreign[name]
        first = foreign[taken[0]]
        where = split_tag(first.tag)[0]
        names = ", ".join(f"<{name}>" for name in taken)
        self.problems.new(
            "namespace-mismatch",
            f"{names} in {_namespace_name(where)}, inside a <{self.block}> in"
            f" {_namespace_name(namespace)}; read anyway",
            (first.sourceline or element.sourceline or 0) + offset,
        )

    def _alternate(self, link: Any, line: int, alternates: _Pairs, media: _Pairs) -> None:
        """An ``xhtml:link rel=alternate``: an hreflang pair, or Google's mobile
        annotation (``media``, no ``hreflang``); with neither, or no href, invalid."""
        if (link.get("rel") or "").strip().lower() != "alternate":
            return
        hreflang, href, query = link.get("hreflang"), link.get("href"), link.get("media")
        if href is None or (hreflang is None and query is None):
            self.problems.new(
                "invalid-alternate",
                "xhtml:link rel=alternate without href, or without hreflang or media",
                line,
            )
        elif hreflang is not None:
            alternates.append((hreflang.strip(), href.strip()))
        else:
            media.append((query.strip(), href.strip()))


def _namespace_name(namespace: str | None) -> str:
    return "no namespace" if namespace is None else f"namespace {namespace}"
