"""Running a spider in this process, for the commands that crawl.

:func:`run_spider` builds the project's settings, forks the page-parsing workers
before the reactor starts (:mod:`crawler.parsepool`), runs one crawl with Scrapy's
``CrawlerProcess`` and returns its exit status and stats. What the run keeps (its
lock, ledgers and ``JOBDIR``) is the run state's business
(:mod:`crawler.extensions.runstate`), so ``scrapy crawl site`` behaves the same. A process runs one
reactor once: the Python API (:mod:`crawler.api`) runs each command in a child
process for that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy.crawler import CrawlerProcess

from crawler.commands.options import (
    EXIT_CRAWL_FAILED,
    EXIT_INTERRUPTED,
    OUTCOME_EXIT,
    project_settings,
)


class _Process(CrawlerProcess):
    """Scrapy's CrawlerProcess, which remembers that a second signal stopped it at
    once (Scrapy's own ``_signal_kill``: the reactor stops, nothing closes)."""

    killed = False

    def _signal_kill(self, signum: int, _: Any) -> None:
        self.killed = True
        super()._signal_kill(signum, _)


def run_spider(url: str, overrides: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """Run the site spider in this process (in every mode: a distributed crawl's parts
    are in *overrides*); return the exit status and the stats."""
    from scrapy.settings import default_settings

    from crawler.parsepool import fork_workers, processes_from
    from crawler.spiders.site import SiteSpider

    settings = project_settings(overrides)
    if settings.get("TWISTED_REACTOR") == default_settings.TWISTED_REACTOR:
        # Before the reactor, the ledger and any thread: the page-parsing workers
        # are forked from a process that is still only its imports (up in
        # milliseconds, not the seconds a spawned worker takes to import Scrapy).
        fork_workers(processes_from(settings))
    process = _Process(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, url=url)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    if process.killed:
        # A second Ctrl-C or SIGTERM stopped the reactor at once: no spider_closed,
        # no publisher. Nothing was published; the run's files are put away here.
        from crawler.extensions.runstate import RunState

        if (state := RunState.existing(crawler)) is not None:
            state.abandon()
        message = "stopped at once by a second interrupt; nothing was published"
        return EXIT_INTERRUPTED, {
            **stats,
            "sitemap/outcome": "interrupted",
            "sitemap/message": message,
        }
    outcome = stats.get("sitemap/outcome")
    if outcome is None:
        # The spider never got as far as the publisher (bad settings, say).
        return EXIT_CRAWL_FAILED, stats
    return OUTCOME_EXIT.get(outcome, EXIT_CRAWL_FAILED), stats
