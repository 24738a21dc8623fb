"""Read a site's existing sitemaps for the ``audit`` command, safely, and say what is wrong.

One bad entry costs that entry and nothing more, and every fault is a
:class:`~crawler.sitemaps.model.Problem` value, never an exception (Scrapy's
``Sitemap`` drops the rest of a file at the first entry lxml cannot read). The
formats, gzip, DTDs, streaming and recovery: docs/audit.md, "The sitemap parser".

:mod:`.parse` is the entry point (:func:`~.parse.parse_sitemap`); docs/architecture.md
names the other modules. Nothing is imported here, so that importing one module does
not load the others.
"""
