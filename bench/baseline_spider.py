"""A bare Scrapy crawl of one site: the baseline that bench/speed.py compares with.

    python bench/baseline_spider.py URL --stats stats.json [--fetch-only FILE] [-s NAME=VALUE ...]

A ``CrawlSpider`` with one ``Rule(LinkExtractor(allow_domains=[host:port]),
follow=True)`` from URL; CONCURRENT_REQUESTS=32, ROBOTSTXT_OBEY=True, AutoThrottle
off, LOG_LEVEL=WARNING. It runs with these settings only (a ``CrawlerProcess``
built from a plain dict, never the project's settings module), so run it from
outside the project too. On close it writes Scrapy's stats plus ``bench/html_pages``
(200 HTML responses seen by the callbacks) to the JSON file.

With ``--fetch-only FILE`` it fetches the URLs listed in FILE (one a line: the
site's reachable pages, as bench/speed.py counts them) with the same settings and
a callback that only counts: no parsing, no links: what Scrapy's fetching costs
on its own, in one process (the issue's "a Scrapy spider that only fetches").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

SETTINGS: dict[str, Any] = {
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
    "LOG_LEVEL": "WARNING",
    "ROBOTSTXT_OBEY": True,
    "TELNETCONSOLE_ENABLED": False,
}


class BaselineSpider(CrawlSpider):
    name = "baseline"

    def __init__(self, url: str, stats_file: str, *args: Any, **kwargs: Any) -> None:
        parts = urlsplit(url)
        self.start_urls = [url]
        self.allowed_domains = [parts.hostname or ""]
        self.stats_file = stats_file
        self.html_pages = 0
        # The link extractor compares netlocs, so the port restricts it to the start host:port.
        self.rules = (
            Rule(LinkExtractor(allow_domains=[parts.netloc]), callback="parse_page", follow=True),
        )
        super().__init__(*args, **kwargs)

    def parse_start_url(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        return self.parse_page(response)

    def parse_page(self, response: Response) -> Iterator[Any]:
        if response.status == 200 and isinstance(response, HtmlResponse):
            self.html_pages += 1
        return iter(())

    def closed(self, reason: str) -> None:
        stats = dict(self.crawler.stats.get_stats())
        stats["bench/html_pages"] = self.html_pages
        stats["finish_reason"] = reason
        Path(self.stats_file).write_text(
            json.dumps(
                stats,
                default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v),
                indent=1,
            )
        )


class FetchOnlySpider(BaselineSpider):
    name = "fetch-only"
    rules = ()

    def __init__(self, url: str, stats_file: str, urls_file: str, **kwargs: Any) -> None:
        super().__init__(url, stats_file, **kwargs)
        self.rules = ()
        self._compile_rules()
        self.start_urls = Path(urls_file).read_text().split()

    async def start(self) -> Any:
        for url in self.start_urls:
            yield Request(url, callback=self.parse_page, dont_filter=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--stats", required=True, help="JSON file for the final stats")
    parser.add_argument("--fetch-only", metavar="FILE", help="fetch these URLs, one a line")
    parser.add_argument("-s", dest="settings", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    settings = dict(SETTINGS)
    for pair in args.settings:
        name, _, value = pair.partition("=")
        settings[name] = value
    process = CrawlerProcess(settings)
    if args.fetch_only:
        process.crawl(
            FetchOnlySpider, url=args.url, stats_file=args.stats, urls_file=args.fetch_only
        )
    else:
        process.crawl(BaselineSpider, url=args.url, stats_file=args.stats)
    process.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
