"""The audit (``sitemap-crawler audit``): compare a site's sitemaps with what a crawl finds.

After a crawl (or on the ledger of an earlier one) the ``audit`` spider
(:mod:`crawler.audit.spider`) fetches and reads the site's sitemaps into a store
(:mod:`crawler.audit.store`) and judges the listed URLs the crawl did not; the report
(:mod:`crawler.audit.report`) puts every listed URL in a class, adds the indexable
pages no sitemap lists, and lists each file's protocol problems. The command is
:mod:`crawler.commands.audit`. Nothing is imported here, so that importing one module
does not load the others.
"""
