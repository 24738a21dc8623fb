"""What a process that fetched a page tells the coordinator about it.

One :class:`PageReport` per fetched (or failed) request, pickled onto the crawl's
report list in Redis by :class:`crawler.distributed.pipeline.ReportPipeline`:

* ``events``: the page's own decision and aliases (:class:`crawler.core.items.UrlRecord`,
  :class:`crawler.core.items.Alias`), and the aliases of URLs this process knew already,
  recorded as they are;
* ``candidates``: the URLs the page led to that were new to this process
  (:class:`crawler.distributed.frontier.Candidate`), each with its record as decided
  here; the report script claims them in Redis and pushes one code each with the
  report, from which the coordinator completes the records
  (:class:`crawler.distributed.frontier.Settler`);
* ``counts``: what this process counted since its last report of the crawl-wide
  statistics the coordinator's summary shows (URLs ignored, 304s replayed);
* ``fatal``: the first reason this process found the run cannot do its job (the
  start URL or robots.txt unreachable), sent once, with ``unfetched``: the decision
  and reason of the URLs the run leaves unfetched (:meth:`crawler.ledger.runstate.RunState.fail`);
* ``stop``: why this process stopped the crawl (``robots_unreachable``), for the
  coordinator to stop it too.

The coordinator's reports on its own pages never leave its memory.

Pickled, as scrapy-redis pickles the requests in its queue: the Redis server must be
trusted by every process (see docs/distributed.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class PageReport:
    """What became of one request. ``claim`` ends its stay in flight; ``fetched``
    says a response reached the spider (not an error); ``process`` sent it."""

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
