"""Render sitemap entries as the text of a ``<urlset>`` (or a text sitemap's lines).

What :mod:`crawler.publish.writer` writes into its child files, an entry or a batch of
:class:`~crawler.sitemaps.entryrows.EntryBatch` rows at a time: the sitemaps.org elements,
then Google's extensions (``<xhtml:link>``, ``<image:image>``, ``<video:video>``,
``<news:news>``) in the order their schemas require, escaped for XML; the
``<urlset>`` and ``<sitemapindex>`` headers and footers.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from decimal import Decimal
from typing import Final

from crawler.sitemaps.entry import ChangeFreq, News, SitemapEntry, Video
from crawler.sitemaps.entryrows import EntryBatch
from crawler.sitemaps.limits import IMAGE_NS, NEWS_NS, SITEMAP_NS, VIDEO_NS, XHTML_NS

_XML_DECLARATION: Final = '<?xml version="1.0" encoding="UTF-8"?>\n'
# ASCII: as many bytes as characters.
_URLSET_HEADER: Final = f'{_XML_DECLARATION}<urlset xmlns="{SITEMAP_NS}">\n'
#: The extensions a writer may be told a set uses, by the prefix it writes them with.
EXTENSIONS: Final = frozenset({"xhtml", "image", "video", "news"})
# Their namespaces, declared in this order (the order of the elements in a <url>).
_EXTENSION_NS: Final = (
    ("xhtml", XHTML_NS),
    ("image", IMAGE_NS),
    ("video", VIDEO_NS),
    ("news", NEWS_NS),
)
URLSET_FOOTER: Final = "</urlset>\n"
INDEX_HEADER: Final = f'{_XML_DECLARATION}<sitemapindex xmlns="{SITEMAP_NS}">\n'.encode()
INDEX_FOOTER: Final = b"</sitemapindex>\n"


def urlset_header(extensions: frozenset[str]) -> str:
    if not extensions:
        return _URLSET_HEADER  # a plain set keeps its bytes
    declarations = "".join(
        f' xmlns:{prefix}="{namespace}"'
        for prefix, namespace in _EXTENSION_NS
        if prefix in extensions
    )
    return f'{_XML_DECLARATION}<urlset xmlns="{SITEMAP_NS}"{declarations}>\n'


def escape(text: str) -> str:
    # Character data needs only &, < and > escaped, "&" first (quotes: see
    # escape_attribute()). Most URLs have none of the three, and a scan for a
    # character is cheaper than a replace() that finds nothing.
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


# Few distinct priorities per set (usually one, SITEMAP_PRIORITY), each formatted
# once. Equal Decimals ("0.5", "0.50") format alike, so sharing a result is safe.
@functools.lru_cache(maxsize=64)
def _format_priority(priority: Decimal) -> str:
    # "0.5", "1.0", "0.0". format "f", not str(): str(Decimal("0E-7")) is an
    # exponent form that xsd:decimal rejects. normalize() drops trailing zeros;
    # copy_abs() turns a "-0" into "0".
    value = priority.normalize()
    if not value:
        value = value.copy_abs()
    text = format(value, "f")
    return text if "." in text else f"{text}.0"


# Few distinct pairs per set (the set-wide one, a few rules' own), each made once.
@functools.lru_cache(maxsize=256)
def _optional_tags(changefreq: ChangeFreq | None, priority: Decimal | None) -> str:
    optional = "" if changefreq is None else f"<changefreq>{changefreq.value}</changefreq>"
    if priority is not None:
        optional += f"<priority>{_format_priority(priority)}</priority>"
    return optional


def escape_text(text: str) -> str:
    # The extensions' texts (titles, descriptions, names) come from pages and
    # may hold a CR, which a reader would turn into LF unless it is a reference.
    text = escape(text)
    return text.replace("\r", "&#13;") if "\r" in text else text


def escape_attribute(text: str) -> str:
    # Attribute values are written between double quotes; both quotes are
    # escaped all the same. (An href has passed check_loc: no whitespace, which
    # attribute-value normalisation would otherwise change.)
    return escape(text).replace('"', "&quot;").replace("'", "&apos;")


# A video's optional elements, in the order sitemap-video.xsd's <xsd:sequence> requires
# (after thumbnail_loc, title and description; rating, tag, platform... are not written).
_VIDEO_OPTIONAL: Final = (
    "content_loc",
    "player_loc",
    "duration",
    "expiration_date",
    "publication_date",
    "family_friendly",
    "live",
)


def _render_video(video: Video) -> str:
    parts = [
        "<video:video>",
        f"<video:thumbnail_loc>{escape(video.thumbnail_loc)}</video:thumbnail_loc>",
        f"<video:title>{escape_text(video.title)}</video:title>",
        f"<video:description>{escape_text(video.description)}</video:description>",
    ]
    for name in _VIDEO_OPTIONAL:
        value = getattr(video, name)
        if isinstance(value, bool):  # family_friendly, live
            value = "yes" if value else "no"
        elif name.endswith("_loc") and value is not None:
            value = escape(value)
        if value is not None:
            parts.append(f"<video:{name}>{value}</video:{name}>")
    parts.append("</video:video>")
    return "".join(parts)


def _render_news_element(news: News) -> str:
    # sitemap-news.xsd's order: publication (name, language), publication_date, title.
    return (
        f"<news:news><news:publication><news:name>{escape_text(news.publication_name)}"
        f"</news:name><news:language>{news.language}</news:language></news:publication>"
        f"<news:publication_date>{news.publication_date}</news:publication_date>"
        f"<news:title>{escape_text(news.title)}</news:title></news:news>"
    )


def _render_extensions(entry: SitemapEntry, extensions: frozenset[str]) -> str:
    """The extension elements of ``entry``, in the order the schemas want;
    ``ValueError`` for one that is not among ``extensions`` (not declared)."""
    used: list[str] = []
    parts: list[str] = []
    if entry.alternates:
        used.append("xhtml")
        parts.extend(
            # hreflang has matched Alternate's pattern: letters, digits, "-".
            f'<xhtml:link rel="alternate" hreflang="{alternate.hreflang}"'
            f' href="{escape_attribute(alternate.href)}"/>'
            for alternate in entry.alternates
        )
    if entry.images:
        used.append("image")
        parts.extend(
            f"<image:image><image:loc>{escape(image)}</image:loc></image:image>"
            for image in entry.images
        )
    if entry.videos:
        used.append("video")
        parts.extend(map(_render_video, entry.videos))
    if entry.news is not None:
        used.append("news")
        parts.append(_render_news_element(entry.news))
    undeclared = [name for name in used if name not in extensions]
    if undeclared:
        raise ValueError(
            f"entry {entry.loc[:80]!r} uses the {', '.join(undeclared)} extension(s), which"
            f" the writer does not declare (extensions={sorted(extensions)})"
        )
    return "".join(parts)


def render_xml(entry: SitemapEntry, extensions: frozenset[str] = frozenset()) -> str:
    # SitemapEntry has checked loc (no control characters), lastmod (digits and
    # separators only) and the rest, so escaping loc is all that is left.
    optional = _optional_tags(entry.changefreq, entry.priority)
    if entry.lastmod is not None:
        optional = f"<lastmod>{entry.lastmod}</lastmod>{optional}"
    if entry.alternates or entry.images or entry.videos or entry.news is not None:
        optional += _render_extensions(entry, extensions)
    return f"<url><loc>{escape(entry.loc)}</loc>{optional}</url>\n"


def render_txt(entry: SitemapEntry, extensions: frozenset[str] = frozenset()) -> str:
    # (extensions: the signature of render_xml(); a text sitemap declares none.)
    if entry.extended:
        raise ValueError(f"a text sitemap cannot hold extensions: {entry.loc[:80]!r}")
    return f"{entry.loc}\n"


def render_news(entry: SitemapEntry) -> str:
    # A news sitemap's <url>: the loc and the news, nothing else (Google's
    # example has neither lastmod nor the other extensions).
    if entry.news is None:
        raise ValueError(f"a news sitemap entry needs news: {entry.loc[:80]!r}")
    return f"<url><loc>{escape(entry.loc)}</loc>{_render_news_element(entry.news)}</url>\n"


def render_xml_batch(batch: EntryBatch, extensions: frozenset[str]) -> list[str]:
    # What render_xml() makes of each entry of the batch, a list at a time;
    # the few with extensions, one by one.
    locs = batch.locs
    joined = "\n".join(locs)
    if "&" in joined or "<" in joined or ">" in joined:
        # No loc holds a "\n" (check_loc): escape them all in one go.
        locs = escape(joined).split("\n")
    changefreqs, priorities = batch.changefreqs, batch.priorities
    optionals: Iterable[str]
    if changefreqs is None and priorities is None:
        optionals = itertools.repeat(_optional_tags(batch.changefreq, batch.priority))
    else:  # rows with their own changefreq or priority (the batch's, where theirs is None)
        count = len(locs)
        optionals = map(
            _optional_tags,
            [batch.changefreq] * count if changefreqs is None else changefreqs,
            [batch.priority] * count if priorities is None else priorities,
        )
    texts = [
        f"<url><loc>{loc}</loc>{optional}</url>\n"
        if lastmod is None
        else f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod>{optional}</url>\n"
        for loc, lastmod, optional in zip(locs, batch.lastmods, optionals, strict=False)
    ]
    for i, entry in batch.extended.items():
        texts[i] = render_xml(entry, extensions)
    return texts


def render_txt_batch(batch: EntryBatch, extensions: frozenset[str]) -> list[str]:
    for entry in batch.extended.values():
        render_txt(entry)  # raises ValueError
    return [f"{loc}\n" for loc in batch.locs]
