"""The audit (``sitemap-crawler audit``): compare a site's sitemaps with what a crawl finds.

After a crawl (or on the ledger of an earlier one) the ``audit`` spider fetches the
site's sitemaps, reads them, and records what they list; the report then puts every
listed URL in a class (indexable, orphan, redirect, 4xx, noindex, ...), adds the
indexable pages no sitemap lists, and lists the protocol problems of each file.

Which module to open for what:

:mod:`crawler.audit.report`
    the report: the classes and flags, ``build_report`` (store + ledger -> report),
    ``audit.json`` and the CSV files, the printed summary, the ``--fail-on`` and
    ``--fail-under`` bars.
:mod:`crawler.audit.store`
    the SQLite store the spider fills: sitemap files, their entries, the listed URLs
    the audit fetched itself.
:mod:`crawler.audit.spider`
    the ``audit`` spider: finds the sitemaps, fetches and parses them, and judges the
    listed URLs the crawl did not, with the ``site`` spider's page judge
    (:mod:`crawler.crawl.judge`) and none of its frontier.
:mod:`crawler.sitemaps`
    the sitemap parser: any sitemap, index, text list or feed, gzipped or not, read
    safely, every fault a value; :func:`crawler.sitemaps.parse.parse_sitemap`
    is its entry point, and its package docstring maps its modules.

The command is :mod:`crawler.commands.audit`.

Nothing is imported here, so that importing one module does not load the others.
"""
