"""Read a site's existing sitemaps for the ``audit`` command, safely, and say what is wrong.

One bad entry costs that entry and nothing more, and every fault is a
:class:`~crawler.sitemaps.model.Problem` value, never an exception (Scrapy's
``Sitemap`` drops the rest of a file at the first entry lxml cannot read). Formats,
found from the content: ``<urlset>`` and ``<sitemapindex>`` (0.9 namespace, or with a
problem none or another), plain text, RSS 2.0/1.0 and Atom 1.0/0.3 feeds; anything
else (an HTML page above all) is ``not-a-sitemap``. gzip is inflated in bounded steps;
a ``<!DOCTYPE>`` is reported and replaced, and lxml never expands or fetches anything;
the document is parsed as a stream; a strict parse first, then, from lxml's first
error on, a tolerant reading entry by entry.

:mod:`.parse` is the entry point (:func:`~.parse.parse_sitemap`); docs/architecture.md
names the other modules. Nothing is imported here, so that importing one module does
not load the others.
"""
