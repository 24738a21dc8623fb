"""What a run tells people: the end-of-run summary and ``report.json``.

Both are built from Scrapy stats (the crawl's contract) and the ledger. The summary
is a few lines for a terminal or a cron mail; ``report.json`` (schema
``sitemap-crawler/run/1``) has the full lists:

``start_url``, ``started``, ``finished``, ``duration_seconds``, ``outcome``,
``message``, ``published`` (bool), ``pages_fetched``, ``conditional_requests``,
``not_modified``, ``listed``, ``excluded`` (decision -> count), ``added`` and
``removed`` (published URLs since the previous run), ``lastmod_changes``
(``{url, old, new}``), ``files_written``, ``index``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crawler.ledger import Ledger

PREFIX = "sitemap/decision/"
SCHEMA = "sitemap-crawler/run/1"


def decision_counts(stats: dict[str, Any]) -> dict[str, int]:
    return {k[len(PREFIX) :]: int(v) for k, v in sorted(stats.items()) if k.startswith(PREFIX)}


def _duration(stats: dict[str, Any]) -> float | None:
    started = stats.get("start_time")
    finished = stats.get("finish_time") or datetime.now(UTC)
    if not isinstance(started, datetime):
        return None
    return round((finished - started).total_seconds(), 1)


def run_report(
    stats: dict[str, Any], ledger: Ledger, previous: Path | None, outcome: str, message: str
) -> dict[str, Any]:
    counts = ledger.counts()
    if previous is not None:
        added, removed, lastmod_changes = ledger.changes_since(previous)
    else:
        added = [e.loc for e in ledger.listed_entries()]
        removed, lastmod_changes = [], []
    started = stats.get("start_time")
    return {
        "schema": SCHEMA,
        "start_url": ledger.get_meta("start_url"),
        "started": started.isoformat() if isinstance(started, datetime) else None,
        "finished": datetime.now(UTC).isoformat(),
        "duration_seconds": _duration(stats),
        "outcome": outcome,
        "message": message,
        "published": outcome == "published",
        "pages_fetched": stats.get("response_received_count", 0),
        "conditional_requests": stats.get("sitemap/conditional/requests", 0),
        "not_modified": stats.get("sitemap/conditional/not_modified", 0),
        "listed": counts.get("listed", 0),
        "excluded": {k: v for k, v in sorted(counts.items()) if k != "listed"},
        "added": added,
        "removed": removed,
        "lastmod_changes": lastmod_changes,
        "files_written": stats.get("sitemap/files_written", 0),
        "index": stats.get("sitemap/index_path"),
    }


def format_summary(stats: dict[str, Any]) -> str:
    counts = decision_counts(stats)
    listed = counts.pop("listed", 0)
    fetched = stats.get("response_received_count", 0)
    line = f"pages fetched: {fetched}"
    conditional = stats.get("sitemap/conditional/requests", 0)
    if conditional:
        line += (
            f" ({conditional} conditional, "
            f"{stats.get('sitemap/conditional/not_modified', 0)} not modified)"
        )
    lines = [line, f"listed: {listed}"]
    if counts:
        lines.append(
            "excluded: "
            + ", ".join(
                f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n
            )
        )
    if "sitemap/added" in stats:
        lines.append(
            f"since the last run: {stats['sitemap/added']} added, {stats['sitemap/removed']} "
            f"removed, {stats['sitemap/lastmod_changes']} lastmod changes"
        )
    duration = _duration(stats)
    if duration is not None:
        lines.append(f"duration: {duration:.1f} s")
    outcome = stats.get("sitemap/outcome")
    if outcome == "published":
        lines.append(
            f"files written: {stats.get('sitemap/files_written', 0)} "
            f"({stats.get('sitemap/urls_written', 0)} URLs) + index {stats.get('sitemap/index_path')}"
        )
        lines.append("add to robots.txt:")
        lines.append(f"Sitemap: {stats.get('sitemap/index_url')}")
    elif outcome:
        lines.append(f"not published: {stats.get('sitemap/message', outcome)}")
    if stats.get("sitemap/report_path"):
        lines.append(f"report: {stats['sitemap/report_path']}")
    return "\n".join(lines)
