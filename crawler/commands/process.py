"""Running a spider in this process, for the commands that crawl.

:func:`run_spider` builds the project's settings, forks the page-parsing workers
before the reactor starts (:mod:`crawler.parsepool`), runs one crawl with Scrapy's
``CrawlerProcess`` and returns its exit status and stats. A process runs one
reactor once: the Python API (:mod:`crawler.api`) runs each command in a child
process for that reason.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crawler.commands.options import EXIT_CRAWL_FAILED, OUTCOME_EXIT, project_settings


def run_spider(
    url: str, overrides: Mapping[str, Any], spider: str | None = None
) -> tuple[int, dict[str, Any]]:
    """Run the spider (the site spider, or the class named *spider*) in this process;
    return the exit status and the stats."""
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import default_settings
    from scrapy.utils.misc import load_object

    from crawler.analysis import fork_workers, processes_from
    from crawler.spiders.site import SiteSpider

    job = Path(overrides["JOBDIR"]) if overrides.get("JOBDIR") else None
    if job is not None and not overrides.get("SITEMAP_RESUME"):
        # A new night starts clean, even after an interrupted run.
        shutil.rmtree(job, ignore_errors=True)
    settings = project_settings(overrides)
    if settings.get("TWISTED_REACTOR") == default_settings.TWISTED_REACTOR:
        # Before the reactor, the ledger and any thread: the page-parsing workers
        # are forked from a process that is still only its imports (up in
        # milliseconds, not the seconds a spawned worker takes to import Scrapy).
        fork_workers(processes_from(settings))
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(load_object(spider) if spider else SiteSpider)
    process.crawl(crawler, url=url)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    outcome = stats.get("sitemap/outcome")
    if stats.get("sitemap/locked"):
        return EXIT_CRAWL_FAILED, {**stats, "sitemap/message": stats.get("sitemap/fatal")}
    if job is not None and outcome != "interrupted":
        shutil.rmtree(job, ignore_errors=True)
    if outcome is None:
        # The spider never got as far as the publisher (bad settings, say).
        return EXIT_CRAWL_FAILED, stats
    return OUTCOME_EXIT.get(outcome, EXIT_CRAWL_FAILED), stats
