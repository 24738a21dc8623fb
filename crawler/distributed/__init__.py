"""Scaling a crawl out over several processes and machines with scrapy-redis.

``crawl URL --redis URL`` starts the *coordinator*, the single writer; ``worker --redis
URL`` joins it; ``crawl URL --processes N`` runs both here through a private Redis
server (:mod:`.server`). docs/distributed.md, "What flows where", walks through the
modules. :func:`coordinator_settings` and :func:`worker_settings` give each role's
settings.
"""

from __future__ import annotations

from typing import Any

#: Settings of the coordinator that workers do not take: they publish nothing and
#: keep no state, and choose their own log level.
LOCAL_ONLY = frozenset(
    {
        "JOBDIR",
        "LOG_LEVEL",
        "SITEMAP_FORCE",
        "SITEMAP_FORMAT",
        "SITEMAP_GZIP",
        "SITEMAP_MAX_BYTES_PER_FILE",
        "SITEMAP_MAX_URLS_PER_FILE",
        "SITEMAP_OUT_DIR",
        "SITEMAP_PUBLISH",
        "SITEMAP_REDIS_NO_FETCH",
        "SITEMAP_REDIS_SERVER",
        "SITEMAP_RESUME",
        "SITEMAP_STATE_DIR",
        # Seeds: the coordinator's frontier starts from them (a --urls file is a
        # path on the coordinator's machine).
        "SITEMAP_START_URLS",
        "SITEMAP_URL_FILE",
    }
)

SCHEDULER = "crawler.distributed.scheduler.RedisScheduler"
SHARING = "crawler.distributed.sharing.RedisSharing"
REPORT_PIPELINE = "crawler.distributed.pipeline.ReportPipeline"


def shared_settings(overrides: dict[str, Any]) -> dict[str, Any]:
    """The coordinator's settings that every worker takes too (scope, URL
    normalisation, politeness, user agent, any ``-s``)."""
    return {k: v for k, v in overrides.items() if k not in LOCAL_ONLY}


def _common(url: str, crawl_id: str, role: str, project: Any) -> dict[str, Any]:
    return {
        "SITEMAP_REDIS_URL": url,
        "SITEMAP_REDIS_CRAWL": crawl_id,
        "SITEMAP_REDIS_ROLE": role,
        "SCHEDULER": SCHEDULER,
        # The sharing extension after the run state, before anything else.
        "EXTENSIONS": {**project.getdict("EXTENSIONS"), SHARING: -50},
        # One host only: no slot for another host to use the global concurrency, so
        # a process takes from the shared queue only what its one slot can start.
        "CONCURRENT_REQUESTS": project.getint("CONCURRENT_REQUESTS_PER_DOMAIN"),
    }


def coordinator_settings(
    overrides: dict[str, Any], url: str, crawl_id: str, project: Any
) -> dict[str, Any]:
    """The settings of ``crawl --redis`` on top of the crawl's *overrides*;
    *project* is the settings object built so far (for the pipelines' dict)."""
    settings = {**overrides, **_common(url, crawl_id, "coordinator", project)}
    # The queue and the seen-set are in Redis; there is nothing to resume locally.
    settings["JOBDIR"] = None
    settings["ITEM_PIPELINES"] = {**project.getdict("ITEM_PIPELINES"), REPORT_PIPELINE: 50}
    return settings


def worker_settings(
    config: dict[str, Any], url: str, crawl_id: str, local: dict[str, Any], project: Any
) -> dict[str, Any]:
    """The settings of ``worker --redis``: the crawl's shared settings from Redis,
    then the worker's own (*local*: its ``-s``, ``--concurrency``, ``--log-level``)."""
    settings = {**config["settings"], **local}
    settings.update(_common(url, crawl_id, "worker", project))
    if "CONCURRENT_REQUESTS_PER_DOMAIN" in local:
        settings["CONCURRENT_REQUESTS"] = local["CONCURRENT_REQUESTS_PER_DOMAIN"]
    settings["SITEMAP_REDIS_WORKER_TIMEOUT"] = config["timeout"]
    # No ledger, no previous run, no state directory: the coordinator keeps those.
    settings["SITEMAP_INCREMENTAL"] = False
    settings["SITEMAP_OUT_DIR"] = None
    # With no SITEMAP_OUT_DIR the run state keeps nothing (no lock, no ledger).
    settings["EXTENSIONS"]["crawler.publish.publisher.SitemapPublisher"] = None
    settings["ITEM_PIPELINES"] = {REPORT_PIPELINE: 50}
    return settings
