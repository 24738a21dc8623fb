"""A run's summary, as a value: what the reports read.

The publisher builds one :class:`RunSummary` a run (crawler.publish.publisher) from the
closed books (:class:`Books`, crawler.publish.books), the set it published
(:class:`SetFigures`) and what the crawl counted (:class:`CrawlFigures`); the terminal
summary, ``report.json``, ``report.html`` (crawler.publish.report), IndexNow and the
Python API read it, never the stats. The stats are set from it for Scrapy's users
(:meth:`RunSummary.stats`; their names in docs/reference.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from crawler.core import clock
from crawler.core.decisions import LEARNED, LISTED


def pages_fetched(stats: Mapping[str, Any]) -> int:
    """The pages the crawl fetched: the responses less those of robots.txt (a run
    stopped by its robots.txt fetched no page) and those of the pages the revisit
    schedule kept, answered without a request (crawler.fetch.kept)."""
    fetched = int(stats.get("response_received_count", 0))
    others = int(stats.get("robotstxt/response_count", 0))
    return max(0, fetched - others - int(stats.get("sitemap/schedule/kept_responses", 0)))


@dataclass
class RichCounts:
    """What the set's rich entries hold (docs/rich.md)."""

    alternates: int = 0
    images: int = 0
    videos: int = 0
    news: int = 0
    problems: int = 0

    @property
    def extensions(self) -> frozenset[str]:
        """The extensions the urlset files use (the namespaces they declare)."""
        used = {"xhtml": self.alternates, "image": self.images, "video": self.videos}
        return frozenset(name for name, n in used.items() if n)


@dataclass(frozen=True, slots=True)
class Books:
    """What the closed books say: URLs per final *decisions* (queued apart), the query
    *parameters* learned per path and the *calendars* cut, the listed pages no link
    leads to, the *budget* that stopped the crawl (in words) and the URLs it left
    *unfetched*, the rich entries (None: not settled), and the revisit schedule's URLs
    verified tonight, of which *changed*, *kept* from the previous run and due but
    *carried* to the next night by a budget (docs/nightly.md)."""

    decisions: dict[str, int]
    queued: int = 0
    parameters: dict[str, list[str]] = field(default_factory=dict)
    calendars: int = 0
    listed_unlinked: int | None = None
    budget: str | None = None
    unfetched: int | None = None
    rich: RichCounts | None = None
    verified: int = 0
    kept: int = 0
    changed: int = 0
    carried: int = 0

    @property
    def listed(self) -> int:
        return self.decisions.get(LISTED, 0)

    @property
    def learned(self) -> dict[str, int]:
        """URLs per decision the crawl learned its way to (docs/crawling.md#traps-learned)."""
        return {d: n for d in LEARNED if (n := self.decisions.get(d, 0))}


@dataclass(frozen=True, slots=True)
class SetFigures:
    """The set a run published (the stats of the same names): files written and left
    unchanged, byte for byte; the URLs in them; the index; when this very set was first
    published and whether it is last run's; its feed (None: none); URLs per section
    (empty: no sections) and the news articles."""

    files_written: int
    files_unchanged: int
    urls_written: int
    index_path: Path
    index_url: str
    published_since: str
    set_unchanged: bool
    feed_url: str | None
    sections: dict[str, int]
    news: int


def _stat(name: str, default: Any = 0) -> Any:
    return field(default=default, metadata={"stat": name})


@dataclass(frozen=True, slots=True)
class CrawlFigures:
    """What the crawl counted as it went, each figure the stat ``sitemap/<name>`` that
    counts it (docs/reference.md), read once when the run ends."""

    pages_fetched: int = 0
    started: datetime | None = None
    duration: float | None = None  # seconds
    conditional: int = _stat("conditional/requests")
    not_modified: int = _stat("conditional/not_modified")
    robots_token: str | None = _stat("robots/token", None)
    robots_group: str | None = _stat("robots/group", None)
    robots_state: str | None = _stat("robots/state", None)
    robots_why: str | None = _stat("robots/why", None)
    tls_verified: bool = _stat("tls/verified", True)
    withheld: bool = _stat("access/withheld", False)
    plain_http: int = _stat("access/plain_http")
    rendered: int = _stat("render/wanted")
    render_failed: int = _stat("render/failed")
    render_unavailable: int = _stat("render/unavailable")
    render_problem: str | None = _stat("render/problem", None)
    render_concurrency: int = _stat("render/concurrency")
    blocked_other_host: int = _stat("render/blocked/other_host")
    blocked_robots: int = _stat("render/blocked/robots")
    seeds_start: int = _stat("seeds/start")
    seeds_url_file: int = _stat("seeds/url-file")
    seeds_sitemap: int = _stat("seeds/sitemap")
    sitemaps_read: int = _stat("seeds/sitemaps_read")
    soft404_probes: int = _stat("soft404/probes")
    soft404_status: int | None = _stat("soft404/probe_status", None)
    soft404_detected: bool = _stat("soft404/detected", False)
    template_dates: dict[str, int] | None = _stat("lastmod/template_dates", None)
    too_large: int = _stat("too_large")
    signalled: int = _stat("schedule/signalled")
    rechecked: int = _stat("schedule/rechecked")
    api_requests: int = _stat("signals/api_requests")

    @classmethod
    def from_stats(cls, stats: Mapping[str, Any]) -> CrawlFigures:
        started = stats.get("start_time")
        started = started if isinstance(started, datetime) else None
        finished = stats.get("finish_time") or clock.now()
        return cls(
            pages_fetched(stats),
            started,
            round((finished - started).total_seconds(), 1) if started else None,
            **{
                f.name: stats.get(f"sitemap/{f.metadata['stat']}", f.default)
                for f in fields(cls)
                if "stat" in f.metadata
            },
        )


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run, as the reports tell it: its *outcome* and why (*message*), whether it
    is the state's first, its closed *books*, what the *crawl* counted, the set
    *published* (None: none), why it began a full night (None: a scheduled one), and
    once ``report.json`` is written, the reports' paths and the *lengths* of its lists
    (``added``, ``removed`` and ``lastmod_changes`` only for a set that can be compared
    with the last one; ``rich_problems``)."""

    outcome: str
    message: str
    first_run: bool
    books: Books
    crawl: CrawlFigures
    published: SetFigures | None = None
    full_night: str | None = None
    lengths: dict[str, int] = field(default_factory=dict)
    report_path: Path | None = None
    report_html_path: Path | None = None

    def stats(self) -> dict[str, Any]:
        """The ``sitemap/*`` stats the summary gives Scrapy's users (docs/reference.md)."""
        books, out = self.books, self.published
        named: dict[str, Any] = {
            "outcome": self.outcome,
            "message": self.message,
            "budget": books.budget,
            "budget/unfetched": books.unfetched,
            "seeds/listed_unlinked": books.listed_unlinked,
            "learned/parameters": books.parameters or None,
            "learned/calendars": books.calendars or None,
            "report_path": self.report_path,
            "report_html_path": self.report_html_path,
            **{f"decision/{k}": v for k, v in books.decisions.items()},
            **{f"excluded/{k}": v for k, v in books.learned.items()},
            **{f"schedule/{k}": getattr(books, k) for k in ("verified", "kept", "changed")},
            "schedule/carried": books.carried or None,
            **{f"rich/{k}": v for k, v in asdict(books.rich or RichCounts()).items() if v},
            **self.lengths,
        }
        if out is not None:
            named |= {k: v for k, v in asdict(out).items() if k not in ("sections", "news")}
            named |= {f"section/{k}": v for k, v in out.sections.items()}
            named |= {"first_run": self.first_run, "rich/news": out.news or None}
        return {
            f"sitemap/{k}": str(v) if isinstance(v, Path) else v
            for k, v in named.items()
            if v is not None
        }
