"""sitemap-crawler: crawl a site politely with Scrapy and publish correct sitemaps.

The packages follow the layout of a Scrapy project: ``crawler`` holds the spider, link
discovery, middlewares, extensions and the command line; ``pipelines`` the item
pipelines; ``settings`` the Scrapy settings module.
"""

__version__ = "0.1.0"
