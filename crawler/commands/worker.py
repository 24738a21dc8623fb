"""``sitemap-crawler worker --redis URL``: fetch pages for a distributed crawl.

A worker needs nothing but the Redis URL: the start URL, the scope, normalisation
and politeness options and any ``-s`` of the crawl come from Redis; its own
``--concurrency``, ``--log-level`` and ``-s`` apply to it alone. It runs the
site spider, with the distributed crawl's parts (:mod:`crawler.distributed`), until the coordinator
ends the crawl. ``scrapy worker --redis URL`` from the project root is the same
command.

Exit status: 0 the crawl is over (whoever ended it); 2 usage error (a malformed Redis
URL); 3 no crawl to join, Redis unreachable, or the coordinator gone; 130
interrupted (what it held goes back to the queue).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from crawler.commands import distributed
from crawler.commands.options import (
    EXIT_CRAWL_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CrawlFailure,
    UsageError,
    add_log_and_settings,
    checked_settings,
    error,
    positive_int,
    scrapy_command,
)
from crawler.commands.process import run_spider

if TYPE_CHECKING:
    from scrapy.settings import Settings

logger = logging.getLogger(__name__)

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


def add_arguments(p: argparse.ArgumentParser, *, scrapy: bool = False) -> None:
    p.add_argument(
        "--redis",
        required=True,
        metavar="URL",
        help="the crawl's Redis database, as given to crawl --redis",
    )
    p.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="N",
        help="concurrent requests of this worker (default: the crawl's)",
    )
    if not scrapy:
        add_log_and_settings(
            p,
            "Scrapy's log on stderr (default: %(default)s)",
            "set any Scrapy or SITEMAP_* setting for this worker (repeatable)",
        )


def run(
    parser: argparse.ArgumentParser, args: argparse.Namespace, base: Settings | None = None
) -> int:
    """Join the crawl on ``--redis`` and work for it until it ends. *base*: the
    settings ``scrapy worker`` built (its ``-s`` applied already)."""
    from crawler.distributed import worker_settings

    try:
        crawl_id, config = distributed.join(args.redis)
    except UsageError as e:
        error(f"error: {e}")
        return EXIT_USAGE
    except CrawlFailure as e:
        error(str(e))
        return EXIT_CRAWL_FAILED
    local: dict[str, Any] = {"LOG_LEVEL": args.log_level}
    if args.concurrency is not None:
        local["CONCURRENT_REQUESTS_PER_DOMAIN"] = args.concurrency
    local.update(dict(args.settings))
    start_url = config["start_url"]
    try:
        settings = worker_settings(
            config,
            args.redis,
            crawl_id,
            local,
            checked_settings({**config["settings"], **local}, base),
        )
        run = run_spider(start_url, settings)
    except UsageError as e:
        error(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        error("worker interrupted")
        return EXIT_INTERRUPTED
    except Exception as e:  # a bad -s value, say: one line, not a traceback
        logger.debug("worker failed", exc_info=True)
        error(f"error: {type(e).__name__}: {e}")
        return EXIT_USAGE
    stats = run.stats  # figures for the line below, not decisions
    fetched = stats.get("sitemap/distributed/pages", 0)
    name = stats.get("sitemap/distributed/process", "?")
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
    end = stats.get("sitemap/distributed/end") or "over"
    if not os.environ.get(distributed.STARTED_BY_CRAWL):
        # Not for a worker of crawl --processes: the crawl's summary says this.
        error(f"worker {name} done: {fetched} pages for {where}; the crawl ended ({end})")
    return EXIT_OK


Command = scrapy_command(sys.modules[__name__])
