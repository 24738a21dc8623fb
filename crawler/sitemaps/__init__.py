"""Read a site's existing sitemaps for the ``audit`` command, safely, and say what is wrong.

Issue: "Audit: compare a site's existing sitemaps with what a crawl finds". The
audit must see every URL a sitemap lists, so one bad entry costs that entry and
nothing more, and every fault is returned as a
:class:`~crawler.sitemaps.model.Problem` value (as ultimate-sitemap-parser
returns ``InvalidSitemap(url, reason)``) instead of being raised. Scrapy's
``scrapy.utils.sitemap.Sitemap`` is not used: it drops the rest of a file at the
first entry lxml cannot read.

Formats (detected from the content, never from the URL): ``<urlset>`` and
``<sitemapindex>`` XML, in the 0.9 namespace or, with a problem, in none or
another one (Google's old 0.84); plain text, one URL a line; RSS 2.0 (and 1.0)
and Atom 1.0 (and 0.3) feeds. Anything else, an HTML error page served at
``/sitemap.xml`` above all, is ``Kind.UNKNOWN`` with ``not-a-sitemap``.

Hostile input: gzip is inflated in bounded steps, so a gzip bomb stops at the byte
cap; a ``<!DOCTYPE>`` is reported with every entity it declares, checked on its own,
and replaced before lxml reads the document by one that declares the same entity
names as their own literal text; lxml runs with entities, DTDs and the network off
and a resolver that refuses every external resource, so nothing is ever expanded or
fetched. Memory: the document is parsed as a stream, never copied whole, and with
``on_entries`` the entries are handed over in batches as they are read and not
kept, so a 50 MiB file costs a few MB beyond its own bytes (``bench/parse_memory.py``).
Recovery: a strict parse first; from lxml's first error on, a tolerant reading that
parses each entry on its own, repairs what search engines tolerate, and keeps every
complete entry of a file cut short.

Which module to open for what (only the first four are used from outside):

:mod:`.parse`
    :func:`~.parse.parse_sitemap`, the entry point: decompress, find the encoding
    and the format, hand the document to its reader, assemble the result.
:mod:`.model`
    the values returned: ``Kind``, ``Problem`` (and every code), ``Entry``,
    ``ParsedSitemap``; the per-code cap on problems.
:mod:`.checks`
    the protocol's checks on one entry (``loc``, ``lastmod``, ``changefreq``,
    ``priority``, RSS ``pubDate``, images, hreflang and mobile alternates):
    :func:`~.checks.check_entry`; the location rule (``out-of-scope``).
:mod:`.decompress`
    gzip layers and the bomb cap: :func:`~.decompress.decompress`.
:mod:`.dtd`
    the ``<!DOCTYPE>``: its declarations reported, its syntax checked, nothing in it
    loaded or expanded.
:mod:`.reading`
    the state of one reading and the ``Sink`` every format's entries go through
    (count caps, checks, scope, duplicates, the root's namespace).
:mod:`.urlset`, :mod:`.feeds`, :mod:`.text`
    the formats: ``<url>``/``<sitemap>`` elements, RSS ``<item>`` and Atom
    ``<entry>``, plain-text lines.
:mod:`.strict`, :mod:`.tolerant`
    reading XML: lxml's pull parser on a well-formed file; block by block, with
    repair, on one that is not.

Nothing is imported here, so that importing one module does not load the others.
"""
