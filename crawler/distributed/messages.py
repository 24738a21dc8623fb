"""What a process that fetched a page tells the coordinator about it.

One :class:`PageReport` per fetched (or failed) request, pickled onto the crawl's
report list by :class:`crawler.distributed.pipeline.ReportPipeline` (as scrapy-redis
pickles its queue: the Redis server must be trusted, docs/distributed.md). The
coordinator's reports on its own pages never leave its memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class PageReport:
    """What became of one request. ``claim`` ends its stay in flight; ``fetched``
    says a response reached the spider; ``events``: the page's own decision and
    aliases; ``candidates``: the URLs new to this process
    (:class:`crawler.distributed.frontier.Candidate`), which the report script claims;
    ``counts``: the crawl-wide statistics counted since the last report; ``fatal``:
    why the run cannot do its job, sent once, with ``unfetched``, the decision and
    reason of what it leaves unfetched; ``stop``: why this process stopped the crawl
    (``robots_unreachable``), for the coordinator to stop it too."""

    process: str
    claim: str | None
    fetched: bool
    events: list[Any] = field(default_factory=list)
    candidates: list[Any] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    fatal: str | None = None
    unfetched: tuple[str, str] | None = None
    stop: str | None = None
    probed: bool = False  # it ends the soft-404 probe
    robots: dict[str, Any] | None = None
    api_links: list[str] | None = None  # the REST API's links tonight, sent once
