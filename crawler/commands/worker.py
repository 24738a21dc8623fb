"""``sitemap-crawler worker --redis URL`` (or ``scrapy worker``): fetch pages for a
distributed crawl until the coordinator ends it. The crawl's start URL, options and
``-s`` come from Redis; the worker's own options apply to it alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from crawler.commands import distributed
from crawler.commands.declarations import WORKER as OPTIONS
from crawler.commands.declarations import given_settings
from crawler.commands.options import (
    EXIT_CRAWL_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    attempt,
    checked_settings,
    error,
    scrapy_command,
)
from crawler.commands.process import run_spider
from crawler.core.outcome import SpiderRun

if TYPE_CHECKING:
    from scrapy.settings import Settings

NAME = "worker"
HELP = "join a distributed crawl (crawl --redis) and fetch pages for it"
DESCRIPTION = (
    "Join the crawl running on the Redis database at --redis (started by "
    "'sitemap-crawler crawl URL --redis URL'): take pages from its queue, fetch and "
    "judge them, decide about their links (queueing the new ones), and report to the "
    "coordinator, until the crawl ends. "
    "The start URL and the crawl's options come from Redis."
)
EPILOG = (
    "Exit status: 0 the crawl is over; 2 usage error (malformed Redis URL); 3 no crawl to "
    "join, Redis unreachable, or the coordinator gone; 130 interrupted (what this worker "
    "held goes back to the queue)."
)


def run(
    parser: argparse.ArgumentParser, args: argparse.Namespace, base: Settings | None = None
) -> int:
    """Join the crawl on ``--redis`` and work for it until it ends."""
    from crawler.distributed import worker_settings

    local = {**given_settings(args, OPTIONS), **dict(args.settings)}

    def work() -> tuple[str, str, SpiderRun]:
        crawl_id, config = distributed.join(args.redis)
        merged = checked_settings({**config["settings"], **local}, base, dict(args.settings))
        settings = worker_settings(config, args.redis, crawl_id, local, merged)
        return crawl_id, config["start_url"], run_spider(config["start_url"], settings)

    done = attempt(work, what="worker", interrupted="worker interrupted")
    if isinstance(done, int):
        return done
    crawl_id, start_url, run = done
    stats = run.stats  # figures for the line below, not decisions
    fetched = stats.get("sitemap/distributed/pages", 0)
    where = f"crawl {crawl_id} of {start_url}"
    if run.interrupted:
        error(
            f"worker interrupted after {fetched} pages of {where}; what it held went back "
            "to the queue"
        )
        return EXIT_INTERRUPTED
    if run.fatal:
        error(f"{run.fatal} ({where})")
        return EXIT_CRAWL_FAILED
    if not os.environ.get(distributed.STARTED_BY_CRAWL):
        # Not for a worker of crawl --processes: the crawl's summary says this.
        name = stats.get("sitemap/distributed/process", "?")
        end = stats.get("sitemap/distributed/end") or "over"
        error(f"worker {name} done: {fetched} pages for {where}; the crawl ended ({end})")
    return EXIT_OK


Command = scrapy_command(sys.modules[__name__])
