"""Running the site spider in this process, for the commands that crawl. A process runs
one reactor once: the Python API (:mod:`crawler.api`) runs each command in a child.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler, CrawlerProcess

from crawler.commands.options import (
    EXIT_CRAWL_FAILED,
    EXIT_INTERRUPTED,
    OUTCOME_EXIT,
    project_settings,
)
from crawler.core.outcome import RunOutcome, SpiderRun


class _Process(CrawlerProcess):
    """Scrapy's CrawlerProcess, which remembers that a second signal stopped it at
    once (Scrapy's own ``_signal_kill``: the reactor stops, nothing closes)."""

    killed = False

    def _signal_kill(self, signum: int, _: Any) -> None:
        self.killed = True
        super()._signal_kill(signum, _)


def closed_reasons(crawler: Crawler) -> list[str]:
    """The list that will hold the reason *crawler*'s spider closed for."""
    closed: list[str] = []

    def spider_closed(reason: str) -> None:
        closed.append(reason)

    crawler.signals.connect(spider_closed, signal=signals.spider_closed, weak=False)
    return closed


def run_spider(url: str, overrides: Mapping[str, Any]) -> SpiderRun:
    """Run the site spider in this process; return how it ended, with the stats."""
    from scrapy.settings import default_settings

    from crawler.crawl.spider import SiteSpider
    from crawler.ledger.runstate import RunState
    from crawler.page.parsepool import fork_workers, processes_from

    settings = project_settings(overrides)
    if settings.get("TWISTED_REACTOR") == default_settings.TWISTED_REACTOR:
        # Before the reactor, the ledger and any thread: the page-parsing workers
        # are forked from a process that is still only its imports (up in
        # milliseconds, not the seconds a spawned worker takes to import Scrapy).
        fork_workers(processes_from(settings))
    process = _Process(settings)
    crawler = process.create_crawler(SiteSpider)
    closed = closed_reasons(crawler)
    process.crawl(crawler, url=url)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    state = RunState.existing(crawler)
    reason = closed[0] if closed else None
    fatal = state.fatal if state is not None else None
    if process.killed:
        # A second Ctrl-C or SIGTERM stopped the reactor at once: no spider_closed,
        # no publisher. Nothing was published; the run's files are put away here.
        if state is not None:
            state.abandon()
        message = "stopped at once by a second interrupt; nothing was published"
        return SpiderRun(EXIT_INTERRUPTED, RunOutcome("interrupted", message), reason, fatal, stats)
    outcome = state.outcome if state is not None else None
    # None: the spider never got as far as the publisher (bad settings, say), or this
    # process publishes nothing (a fetching worker).
    code = EXIT_CRAWL_FAILED if outcome is None else OUTCOME_EXIT[outcome.outcome]
    return SpiderRun(code, outcome, reason, fatal, stats)
