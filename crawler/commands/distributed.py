"""What ``crawl --redis`` and ``worker`` share: reaching Redis, registering a
distributed crawl (:mod:`crawler.distributed`) and joining one. A malformed Redis URL
is a usage error (exit status 2), an unreachable server or a busy database a crawl
failure (3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from crawler.commands.options import CrawlFailure, UsageError, project_settings

if TYPE_CHECKING:
    from crawler.distributed.crawl import RedisCrawl
    from crawler.distributed.server import PrivateRedis


@contextmanager
def _redis() -> Iterator[ModuleType]:
    """:mod:`crawler.distributed.crawl`, its errors as the command line's."""
    try:
        import crawler.distributed.crawl as redis_crawl
    except ImportError as e:
        raise UsageError(
            f"--redis needs scrapy-redis ({e}): pip install 'sitemap-crawler[redis]'"
        ) from None
    try:
        yield redis_crawl
    except redis_crawl.BadRedisUrl as e:
        raise UsageError(str(e)) from None
    except redis_crawl.DistributedError as e:
        raise CrawlFailure(str(e)) from None


def begin(
    redis_url: str, start_url: str, overrides: dict[str, Any]
) -> tuple[RedisCrawl, dict[str, Any]]:
    """Register a crawl of *start_url* in Redis: its handle, the coordinator's settings."""
    from crawler.distributed import coordinator_settings, shared_settings

    project = project_settings(overrides)
    shared = shared_settings(overrides)
    try:
        json.dumps(shared)
    except TypeError as e:
        raise UsageError(f"a setting cannot be sent to the workers: {e}") from None
    timeout = project.getfloat("SITEMAP_REDIS_WORKER_TIMEOUT")
    with _redis() as redis_crawl:
        server = redis_crawl.connect(redis_url, socket_connect_timeout=10)
        crawl: RedisCrawl = redis_crawl.RedisCrawl.begin(
            server, redis_url, start_url, shared, timeout
        )
    return crawl, coordinator_settings(overrides, redis_url, crawl.id, project)


def private_server(state: Path, binary: str | None) -> tuple[PrivateRedis, str]:
    """Start a private Redis server on a Unix socket in *state*: it and its URL."""
    with _redis():  # it needs scrapy-redis too
        from crawler.distributed.server import NoRedisServer, PrivateRedis

    server = PrivateRedis(state, binary)
    try:
        url = server.start()
    except NoRedisServer as e:
        raise CrawlFailure(str(e)) from None
    return server, url


#: Set in the environment of the workers ``crawl --processes`` starts: the crawl's
#: summary says what each fetched, so a worker's own line would be a stray one
#: before it (its errors still go to the crawl's stderr).
STARTED_BY_CRAWL = "SITEMAP_CRAWLER_WORKER_OF_CRAWL"


def start_workers(redis_url: str, count: int, log_level: str) -> list[subprocess.Popen[bytes]]:
    """*count* ``worker --redis`` processes on this machine for the crawl just begun."""
    command = [sys.executable, "-m", "crawler.cli", "worker", "--redis", redis_url]
    env = {**os.environ, STARTED_BY_CRAWL: "1"}
    return [
        subprocess.Popen([*command, "--log-level", log_level], stdin=subprocess.DEVNULL, env=env)
        for _ in range(count)
    ]


def stop_workers(workers: list[subprocess.Popen[bytes]], timeout: float = 60) -> None:
    """Wait for the workers to exit (within a second of the end); stop any that does not."""
    for worker in workers:
        try:
            worker.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            worker.terminate()
            worker.wait(timeout=10)


def join(redis_url: str) -> tuple[str, dict[str, Any]]:
    """The id and configuration of the crawl running on *redis_url*."""
    with _redis() as redis_crawl:
        server = redis_crawl.connect(redis_url, socket_connect_timeout=10)
        joined: tuple[str, dict[str, Any]] = redis_crawl.RedisCrawl.join(server, redis_url)
    return joined


def summary_line(stats: Mapping[str, Any]) -> str | None:
    """The line about the processes that fetched; None for a crawl without workers."""
    if not stats.get("sitemap/distributed/workers") and not stats.get("sitemap/distributed/lost"):
        return None
    prefix = "sitemap/distributed/pages/"
    # The one count: each worker's own summary says the same number.
    counts = sorted((k[len(prefix) :], v) for k, v in stats.items() if k.startswith(prefix) and v)
    pages = stats.get("response_received_count") or 0
    line = f"processes that fetched: {len(counts)}"
    if counts:
        line += " (" + ", ".join(f"{name} {n}" for name, n in counts) + ")"
    line += (
        f", the workers {stats.get('sitemap/distributed/pages_from_workers', 0)} of the"
        f" {sum(n for _, n in counts)} pages"
    )
    if stats.get("sitemap/distributed/cpu_seconds") is not None and pages:
        ms = stats["sitemap/distributed/cpu_seconds"] * 1000 / pages
        line += f"; the coordinator's CPU while crawling: {ms:.3f} ms a page"
    if stats.get("sitemap/distributed/lost"):
        line += (
            f"; {stats['sitemap/distributed/lost']} lost, "
            f"{stats.get('sitemap/distributed/requeued', 0)} of their requests queued again"
        )
    return line
