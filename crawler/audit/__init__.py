"""The audit (``sitemap-crawler audit``): compare a site's sitemaps with what a crawl finds.

The ``audit`` spider (:mod:`~crawler.audit.spider`) reads the site's sitemaps into a
store (:mod:`~crawler.audit.store`) and judges the listed URLs the crawl did not; the
report (:mod:`~crawler.audit.report`) classes every listed URL. Nothing is imported
here, so that importing one module does not load the others.
"""
