"""sitemap-crawler: crawl a site politely with Scrapy and publish correct sitemaps.

A Scrapy project's layout: ``crawler`` holds the spider, its parts and the command
line, ``pipelines`` the item pipelines, ``settings`` the Scrapy settings module.
"""

__version__ = "0.1.0"
