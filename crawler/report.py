"""What a run tells people: the end-of-run summary and ``report.json``.

Both come from the same figures: Scrapy's stats (the crawl's contract), which the
publisher sets from the ledger's closed books (decision counts) and from
``report.json`` as it is written (the counts of its lists). The summary is a few
lines for a terminal or a cron mail; ``report.json`` (schema
``sitemap-crawler/run/1``) has the full lists:

``start_url``, ``started``, ``finished``, ``duration_seconds``, ``outcome``,
``message``, ``published`` (bool), ``pages_fetched``, ``conditional_requests``
(asked conditionally and answered), ``not_modified``, ``listed``, ``excluded``
(decision -> count), ``queued`` (URLs an interrupted run had not fetched yet),
``added`` and ``removed`` (published URLs since the previous run),
``lastmod_changes`` (``{url, old, new}``), ``files_written``, ``index``,
``robots`` (``{token, group}``: the product token matched against the start URL's
robots.txt, and the group that applied: the token, ``*`` or ``none``), ``rich``
(``{alternates, images, videos, news, problems}``: what the rich entries hold,
issue #14) and ``rich_problems`` (``{url, problems}``: the hreflang alternates and
videos left out of a page's entry, and why).

``added``, ``removed`` and ``lastmod_changes`` say what the run changed: they are
null for a run that neither published nor finished its crawl (interrupted,
failed), whose ledger is no set to compare; for a refused run they are what the
refused set would have changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from crawler.ledger import Ledger

PREFIX = "sitemap/decision/"
SECTION_PREFIX = "sitemap/section/"
SCHEMA = "sitemap-crawler/run/1"
#: Outcomes whose set can be compared with the previous one.
COMPARABLE = frozenset({"published", "crawled", "refused"})


def decision_counts(stats: dict[str, Any]) -> dict[str, int]:
    return {k[len(PREFIX) :]: int(v) for k, v in sorted(stats.items()) if k.startswith(PREFIX)}


def section_counts(stats: dict[str, Any]) -> dict[str, int]:
    """URLs written per section (none without --section rules)."""
    return {
        k[len(SECTION_PREFIX) :]: int(v)
        for k, v in sorted(stats.items())
        if k.startswith(SECTION_PREFIX)
    }


def duration(stats: dict[str, Any]) -> float | None:
    started = stats.get("start_time")
    finished = stats.get("finish_time") or datetime.now(UTC)
    if not isinstance(started, datetime):
        return None
    return round((finished - started).total_seconds(), 1)


def write_report(
    path: Path,
    stats: dict[str, Any],
    ledger: Ledger,
    previous: Path | None,
    outcome: str,
    message: str,
) -> dict[str, int]:
    """Write ``report.json`` to *path* (atomically) and return how many URLs were
    ``added``, ``removed`` and had ``lastmod_changes``. The lists are streamed from
    the ledger into the file: the first run of a million-URL site adds a million."""
    counts = ledger.counts()
    queued = counts.pop("queued", 0)
    changes: tuple[Any, Any, Any] = (None, None, None)
    if outcome in COMPARABLE:
        changes = ledger.changes_since(previous)
    added, removed, lastmod_changes = changes
    started = stats.get("start_time")
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "start_url": ledger.get_meta("start_url"),
        "started": started.isoformat() if isinstance(started, datetime) else None,
        "finished": datetime.now(UTC).isoformat(),
        "duration_seconds": duration(stats),
        "outcome": outcome,
        "message": message,
        "published": outcome == "published",
        "pages_fetched": stats.get("response_received_count", 0),
        "conditional_requests": stats.get("sitemap/conditional/requests", 0),
        "not_modified": stats.get("sitemap/conditional/not_modified", 0),
        "listed": counts.get("listed", 0),
        "excluded": {k: v for k, v in sorted(counts.items()) if k != "listed"},
        "queued": queued,
        "added": added,
        "removed": removed,
        "lastmod_changes": lastmod_changes,
        "files_written": stats.get("sitemap/files_written", 0),
        "index": stats.get("sitemap/index_path"),
        "robots": {
            "token": stats.get("sitemap/robots/token"),
            "group": stats.get("sitemap/robots/group"),
        },
        "sections": section_counts(stats),
        "rich": {
            name: stats.get(f"sitemap/rich/{name}", 0)
            for name in ("alternates", "images", "videos", "news", "problems")
        },
        # Pages rendered in the headless browser (docs/rendering.md).
        "render": {
            "rendered": stats.get("sitemap/render/wanted", 0)
            - stats.get("sitemap/render/failed", 0),
            "failed": stats.get("sitemap/render/failed", 0),
            "unavailable": stats.get("sitemap/render/unavailable", 0),
            "blocked": stats.get("sitemap/render/blocked/other_host", 0)
            + stats.get("sitemap/render/blocked/robots", 0),
        },
        "rich_problems": (
            {"url": url, "problems": problems} for url, problems in ledger.rich_problems()
        ),
    }
    written: dict[str, int] = {}
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write("{")
        for i, (name, value) in enumerate(report.items()):
            f.write(("\n " if i == 0 else ",\n ") + json.dumps(name) + ": ")
            if isinstance(value, Iterator):
                written[name] = _write_list(f, value)
            else:
                f.write(json.dumps(value, ensure_ascii=False, default=str))
        f.write("\n}\n")
    tmp.replace(path)
    return written


def _write_list(f: TextIO, values: Iterator[Any]) -> int:
    n = 0
    f.write("[")
    for n, value in enumerate(values, 1):
        f.write(("\n  " if n == 1 else ",\n  ") + json.dumps(value, ensure_ascii=False))
    f.write("\n ]" if n else "]")
    return n


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
    lines = [line]
    if (group := stats.get("sitemap/robots/group")) is not None:
        token = stats.get("sitemap/robots/token")
        lines.append(
            f"robots.txt: no group for {token} or for every agent (everything allowed)"
            if group == "none"
            else f"robots.txt: the group for {'every agent (*)' if group == '*' else group}"
            f" applied to {token}"
        )
    lines.append(f"listed: {listed}")
    if counts:
        lines.append(
            "excluded: "
            + ", ".join(
                f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n
            )
        )
    if wanted := stats.get("sitemap/render/wanted", 0):
        failed = stats.get("sitemap/render/failed", 0)
        line = f"rendered in Chromium: {wanted - failed} pages"
        if failed:
            line += f", {failed} failed (judged on their raw HTML)"
        blocked = stats.get("sitemap/render/blocked/other_host", 0) + stats.get(
            "sitemap/render/blocked/robots", 0
        )
        if blocked:
            line += f"; {blocked} requests of theirs blocked (other hosts, robots.txt)"
        lines.append(line)
    if unavailable := stats.get("sitemap/render/unavailable", 0):
        lines.append(
            f"warning: {unavailable} pages look built by JavaScript but were judged on "
            f"their raw HTML ({stats.get('sitemap/render/problem')})"
        )
    if "sitemap/added" in stats:
        changed = (
            f"{stats['sitemap/added']} added, {stats['sitemap/removed']} removed, "
            f"{stats['sitemap/lastmod_changes']} lastmod changes"
        )
        if stats.get("sitemap/outcome") == "refused":
            lines.append(f"the refused set would have made: {changed}")
        else:
            lines.append(f"since the last run: {changed}")
    rich = {
        n: stats.get(f"sitemap/rich/{n}", 0) for n in ("alternates", "images", "videos", "news")
    }
    if any(rich.values()) or stats.get("sitemap/rich/problems"):
        line = (
            f"rich entries: {rich['alternates']} hreflang alternates, {rich['images']} images, "
            f"{rich['videos']} videos, {rich['news']} news articles"
        )
        if problems := stats.get("sitemap/rich/problems", 0):
            line += f"; {problems} left out (rich_problems in report.json)"
        lines.append(line)
    seconds = duration(stats)
    if seconds is not None:
        lines.append(f"duration: {seconds:.1f} s")
    sections = {
        k[len(SECTION_PREFIX) :]: v for k, v in stats.items() if k.startswith(SECTION_PREFIX)
    }
    if sections:
        lines.append("sections: " + ", ".join(f"{n} {c}" for n, c in sorted(sections.items())))
    outcome = stats.get("sitemap/outcome")
    if outcome == "published":
        lines.append(
            f"files written: {stats.get('sitemap/files_written', 0)} "
            f"({stats.get('sitemap/urls_written', 0)} URLs) "
            f"+ index {stats.get('sitemap/index_path')}"
        )
        lines.append("add to robots.txt:")
        lines.append(f"Sitemap: {stats.get('sitemap/index_url')}")
        if stats.get("sitemap/feed_url"):
            lines.append(f"Sitemap: {stats['sitemap/feed_url']}")
    elif outcome:
        # Why is the command's last line (and the report's message): said once.
        lines.append(f"not published ({outcome})")
    if stats.get("sitemap/report_path"):
        lines.append(f"report: {stats['sitemap/report_path']}")
    if stats.get("sitemap/indexnow"):
        lines.append(str(stats["sitemap/indexnow"]))
    return "\n".join(lines)
