"""The audit (``sitemap-crawler audit``): compare a site's sitemaps with what a crawl
finds. Nothing is imported here, so that importing one module does not load the others.
"""
