"""What a run tells people: the end-of-run summary and ``report.json``.

Both come from the same figures: Scrapy's stats (the crawl's contract), which the
publisher sets from the ledger's closed books (decision counts) and from
``report.json`` as it is written (the counts of its lists). The summary is a few
lines for a terminal or a cron mail; ``report.json`` (schema ``sitemap-crawler/run/1``,
its fields in docs/nightly.md, "The report") has the full lists, and ``report.html``
(:mod:`crawler.publish.runhtml`) is written from the same :class:`RunModel`.

``added``, ``removed`` and ``lastmod_changes`` say what the run changed: they are
null for a run that neither published nor finished its crawl (interrupted,
failed), whose ledger is no set to compare; for a refused run they are what the
refused set would have changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from crawler.core import clock
from crawler.core.decisions import OFF_HOST
from crawler.crawl.progress import pages_fetched

if TYPE_CHECKING:
    from crawler.ledger.ledger import Ledger

PREFIX = "sitemap/decision/"
SECTION_PREFIX = "sitemap/section/"
#: How the summary and report.json name the default section (no rule matched).
DEFAULT_SECTION = "(default)"
SCHEMA = "sitemap-crawler/run/1"
#: Outcomes whose set can be compared with the previous one.
COMPARABLE = frozenset({"published", "crawled", "refused"})
#: Paths with learned parameters named in the summary line; report.json has all.
SUMMARY_PATHS = 3


def decision_counts(stats: dict[str, Any], prefix: str = PREFIX) -> dict[str, int]:
    """URLs per decision; with *prefix* SECTION_PREFIX, URLs written per section."""
    return {k[len(prefix) :]: int(v) for k, v in sorted(stats.items()) if k.startswith(prefix)}


def seed_counts(stats: dict[str, Any]) -> dict[str, int]:
    """What the seeds brought (docs/crawling.md#seeds-beyond-links): URLs new to the
    crawl from the start URLs, the --urls file and the sitemaps, the sitemaps read,
    and the listed pages that only a sitemap led to."""
    names = ("start", "url_file", "sitemap", "sitemaps_read", "listed_unlinked")
    # The stat of the --urls file is "url-file".
    return {n: stats.get(f"sitemap/seeds/{n.replace('_file', '-file')}", 0) for n in names}


def duration(stats: dict[str, Any]) -> float | None:
    started = stats.get("start_time")
    finished = stats.get("finish_time") or clock.now()
    if not isinstance(started, datetime):
        return None
    return round((finished - started).total_seconds(), 1)


#: Pages in the report's slowest and largest lists.
TOP_PAGES = 20


@dataclass(frozen=True, slots=True)
class Stream:
    """A list field of the report, streamed from the ledger each time it is read
    (report.json reads it whole, the HTML page its first few)."""

    factory: Callable[[], Iterator[Any]]

    def __call__(self) -> Iterator[Any]:
        return self.factory()


@dataclass
class RunModel:
    """One run's report (docs/nightly.md, docs/reports.md): ``report.json`` and
    ``report.html`` are both written from it, so their figures agree. *fields* are
    report.json's, in order; a :class:`Stream` field is a list read from the ledger when
    written. *lengths*: each streamed list's length, known once report.json is
    written."""

    fields: dict[str, Any]
    lengths: dict[str, int] = field(default_factory=dict)

    def history_entry(self) -> dict[str, Any]:
        """This run's line in ``runs.json`` (:mod:`crawler.publish.reporthistory`)."""
        f = self.fields
        return {
            "started": f["started"],
            "finished": f["finished"],
            "outcome": f["outcome"],
            "published": f["published"],
            "pages_fetched": f["pages_fetched"],
            "listed": f["listed"],
            "excluded": f["excluded_total"],
            "queued": f["queued"],
        }


def run_model(
    stats: dict[str, Any],
    ledger: Ledger,
    previous: Path | None,
    outcome: str,
    message: str,
) -> RunModel:
    """The report of the run whose books *ledger* holds (see the module docstring);
    ``history`` is empty until the caller adds the runs kept in the state."""
    counts = ledger.counts()
    queued = counts.pop("queued", 0)
    comparable = outcome in COMPARABLE

    def change(i: int) -> Stream | None:
        if not comparable:
            return None
        return Stream(lambda: ledger.changes_since(previous)[i])

    started = stats.get("start_time")
    excluded = {k: v for k, v in sorted(counts.items()) if k != "listed"}
    fields: dict[str, Any] = {
        "schema": SCHEMA,
        "start_url": ledger.get_meta("start_url"),
        "tls_verified": stats.get("sitemap/tls/verified", True),
        "started": started.isoformat() if isinstance(started, datetime) else None,
        "finished": clock.now().isoformat(),
        "duration_seconds": duration(stats),
        "outcome": outcome,
        "message": message,
        "published": outcome == "published",
        "first_run": previous is None,
        "pages_fetched": pages_fetched(stats),
        "conditional_requests": stats.get("sitemap/conditional/requests", 0),
        "not_modified": stats.get("sitemap/conditional/not_modified", 0),
        "listed": counts.get("listed", 0),
        "excluded": excluded,
        "queued": queued,
        "added": change(0),
        "removed": change(1),
        "lastmod_changes": change(2),
        "files_written": stats.get("sitemap/files_written", 0),
        "files_unchanged": stats.get("sitemap/files_unchanged", 0),
        "published_since": stats.get("sitemap/published_since"),
        "set_unchanged": bool(stats.get("sitemap/set_unchanged")),
        "index": stats.get("sitemap/index_path"),
        "robots": {k: stats.get(f"sitemap/robots/{k}") for k in ("token", "group", "state", "why")},
        "sections": decision_counts(stats, SECTION_PREFIX),
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
            "concurrency": stats.get("sitemap/render/concurrency", 0),
        },
        "budget": (
            {"stopped": stats["sitemap/budget"], "unfetched": stats.get("sitemap/budget/unfetched")}
            if stats.get("sitemap/budget")
            else None
        ),
        "seeds": seed_counts(stats),
        "schedule": schedule_counts(stats),
        "learned": {
            "parameters": stats.get("sitemap/learned/parameters", {}),
            "calendars": stats.get("sitemap/learned/calendars", 0),
            "soft404": {
                "probes": stats.get("sitemap/soft404/probes", 0),
                "probe_status": stats.get("sitemap/soft404/probe_status"),
                "detected": bool(stats.get("sitemap/soft404/detected")),
            },
        },
        "rich_problems": Stream(
            lambda: ({"url": url, "problems": p} for url, p in ledger.rich_problems())
        ),
        # The site's URLs left out; links to other hosts are apart (not the site's).
        "excluded_total": sum(n for k, n in excluded.items() if k != OFF_HOST),
        "other_hosts": excluded.get(OFF_HOST, 0),
        "status_codes": {str(k): v for k, v in ledger.status_counts().items()},
        "depths": {
            str(depth): {"urls": n, "listed": listed}
            for depth, (n, listed) in ledger.depth_counts().items()
        },
        "slowest": [
            {"url": url, "decision": decision, "seconds": value}
            for url, decision, value in ledger.top("elapsed", TOP_PAGES)
        ],
        "largest": [
            {"url": url, "decision": decision, "bytes": value}
            for url, decision, value in ledger.top("size", TOP_PAGES)
        ],
        "history": [],
    }
    return RunModel(fields)


def write_json(path: Path, model: RunModel) -> dict[str, int]:
    """Write *model* as ``report.json`` to *path* (atomically) and return each
    streamed list's length (also kept in ``model.lengths``). The lists are streamed
    from the ledger into the file: the first run of a million-URL site adds a
    million."""
    written: dict[str, int] = {}
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write("{")
        for i, (name, value) in enumerate(model.fields.items()):
            f.write(("\n " if i == 0 else ",\n ") + json.dumps(name) + ": ")
            if isinstance(value, Stream):
                written[name] = _write_list(f, value())
            else:
                f.write(json.dumps(value, ensure_ascii=False, default=str))
        f.write("\n}\n")
    tmp.replace(path)
    model.lengths = written
    return written


def _write_list(f: TextIO, values: Iterator[Any]) -> int:
    n = 0
    f.write("[")
    for n, value in enumerate(values, 1):
        f.write(("\n  " if n == 1 else ",\n  ") + json.dumps(value, ensure_ascii=False))
    f.write("\n ]" if n else "]")
    return n


def learned_line(stats: dict[str, Any]) -> str | None:
    """What the crawl learned (docs/crawling.md#traps-learned), in one line: "learned:
    3 parameters ignored on /shop/, 2 calendars cut, soft-404 page detected"; None when
    nothing."""
    parts = []
    params: dict[str, list[str]] = stats.get("sitemap/learned/parameters") or {}
    for path, names in sorted(params.items())[:SUMMARY_PATHS]:
        where = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else path
        n = len(names)
        parts.append(f"{n} parameter{'s' if n != 1 else ''} ignored on {where}")
    if len(params) > SUMMARY_PATHS:
        parts.append(f"and on {len(params) - SUMMARY_PATHS} more paths (report.json)")
    if calendars := stats.get("sitemap/learned/calendars", 0):
        parts.append(f"{calendars} calendar{'s' if calendars != 1 else ''} cut")
    if facets := stats.get("sitemap/excluded/facet-combination", 0):
        parts.append(f"{facets} facet combination{'s' if facets != 1 else ''} left out")
    if stats.get("sitemap/soft404/detected"):
        parts.append("soft-404 page detected")
    return "learned: " + ", ".join(parts) if parts else None


def schedule_counts(stats: dict[str, Any]) -> dict[str, Any] | None:
    """The revisit schedule of the night (docs/nightly.md): None for a run that keeps
    none. ``verified``: URLs fetched (or answered 304) and judged tonight, of which
    ``changed``; ``kept``: not due, their previous record kept without a request (the
    requests saved); ``signalled``: named by a change signal (a page that stopped
    linking them, a sitemap's, feed's or API's date), ``rechecked``: of those, kept
    already and asked after all; ``carried``: due, left by a budget for the next night."""
    verified = stats.get("sitemap/schedule/verified", 0)
    kept = stats.get("sitemap/schedule/kept", 0)
    if not verified and not kept:
        return None
    return {
        "full_night": stats.get("sitemap/full_night"),
        "verified": verified,
        "changed": stats.get("sitemap/schedule/changed", 0),
        "kept": kept,
        "requests_saved": kept,
        "signalled": stats.get("sitemap/schedule/signalled", 0),
        "rechecked": stats.get("sitemap/schedule/rechecked", 0),
        "carried": stats.get("sitemap/schedule/carried", 0),
        "api_requests": stats.get("sitemap/signals/api_requests", 0),
    }


def schedule_line(stats: dict[str, Any]) -> str | None:
    """The summary's line about the revisit schedule."""
    counts = schedule_counts(stats)
    if counts is None:
        return None
    line = f"revisit: {counts['verified']} verified ({counts['changed']} changed)"
    if counts["full_night"]:
        return line + f"; a full night: {counts['full_night']}"
    line += f", {counts['kept']} not due (kept, {counts['requests_saved']} requests saved)"
    if counts["signalled"]:
        line += f", {counts['signalled']} named by change signals"
    if counts["carried"]:
        line += f", {counts['carried']} due left for the next night"
    return line


def _access_lines(stats: dict[str, Any]) -> list[str]:
    """What the summary says of TLS and the site's credentials (crawler.fetch.tls,
    crawler.fetch.access)."""
    lines = []
    if stats.get("sitemap/tls/verified") is False:
        lines.append("TLS: certificates NOT verified (--insecure)")
    if stats.get("sitemap/access/withheld"):
        lines.append(
            "credentials: not sent, certificates unverified (--insecure-credentials sends them)"
        )
    if plain := stats.get("sitemap/access/plain_http", 0):
        lines.append(f"warning: credentials sent over plain http ({plain} requests)")
    return lines


def format_summary(stats: dict[str, Any]) -> str:
    get = stats.get
    counts = decision_counts(stats)
    listed = counts.pop("listed", 0)
    line = f"pages fetched: {pages_fetched(stats)}"
    if conditional := get("sitemap/conditional/requests", 0):
        not_modified = get("sitemap/conditional/not_modified", 0)
        line += f" ({conditional} conditional, {not_modified} not modified)"
    lines = [line]
    if revisit := schedule_line(stats):
        lines.append(revisit)
    robots, why = get("sitemap/robots/state"), get("sitemap/robots/why")
    if robots == "unavailable":
        lines.append(f"robots.txt: not there ({why}), so everything is allowed")
    elif robots == "unreachable":
        lines.append(
            f"robots.txt: unreachable ({why}), so nothing may be fetched until it can be"
            " read (RFC 9309)"
        )
    elif (group := get("sitemap/robots/group")) is not None:
        token = get("sitemap/robots/token")
        lines.append(
            f"robots.txt: no group for {token} or for every agent (everything allowed)"
            if group == "none"
            else f"robots.txt: the group for {'every agent (*)' if group == '*' else group}"
            f" applied to {token}"
        )
    lines.extend(_access_lines(stats))
    lines.append(f"listed: {listed}")
    other_hosts = counts.pop(OFF_HOST, 0)
    if any(counts.values()):
        by_count = sorted(counts.items(), key=lambda kv: -kv[1])
        lines.append("excluded: " + ", ".join(f"{name} {n}" for name, n in by_count if n))
    if other_hosts:
        lines.append(f"links to other hosts: {other_hosts} (not crawled)")
    if learned := learned_line(stats):
        lines.append(learned)
    if templates := get("sitemap/lastmod/template_dates"):
        lines.append(
            "lastmod: not believed, a date that many pages declare alike (a template): "
            + ", ".join(f"{value} ({n} pages)" for value, n in templates.items())
        )
    if wanted := get("sitemap/render/wanted", 0):
        failed = get("sitemap/render/failed", 0)
        line = f"rendered in Chromium: {wanted - failed} pages"
        if failed:
            line += f", {failed} failed (judged on their raw HTML)"
        blocked = sum(get(f"sitemap/render/blocked/{k}", 0) for k in ("other_host", "robots"))
        if blocked:
            line += f"; {blocked} requests of theirs blocked (other hosts, robots.txt)"
        lines.append(line)
    if unavailable := get("sitemap/render/unavailable", 0):
        lines.append(
            f"warning: {unavailable} pages look built by JavaScript but were judged on "
            f"their raw HTML ({get('sitemap/render/problem')})"
        )
    if "sitemap/added" in stats:
        changed = (
            f"{stats['sitemap/added']} added, {stats['sitemap/removed']} removed, "
            f"{stats['sitemap/lastmod_changes']} lastmod changes"
        )
        what = "since the last run"
        if get("sitemap/outcome") == "refused":
            what = "the refused set would have made"
        lines.append(f"{what}: {changed}")
    rich = {n: get(f"sitemap/rich/{n}", 0) for n in ("alternates", "images", "videos", "news")}
    if any(rich.values()) or get("sitemap/rich/problems"):
        line = (
            f"rich entries: {rich['alternates']} hreflang alternates, {rich['images']} images, "
            f"{rich['videos']} videos, {rich['news']} news articles"
        )
        if problems := get("sitemap/rich/problems", 0):
            line += f"; {problems} left out (rich_problems in report.json)"
        lines.append(line)
    seeds = seed_counts(stats)
    if seeds["start"] > 1 or seeds["url_file"] or seeds["sitemaps_read"] or seeds["sitemap"]:
        line = f"seeds: {seeds['start']} start URLs"
        if seeds["url_file"]:
            line += f", {seeds['url_file']} from --urls"
        if seeds["sitemaps_read"] or seeds["sitemap"]:
            line += (
                f", {seeds['sitemap']} from {seeds['sitemaps_read']} sitemaps"
                f" ({seeds['listed_unlinked']} listed that no link leads to)"
            )
        lines.append(line)
    if too_large := get("sitemap/too_large"):
        lines.append(
            f"too large: {too_large} pages over the download size cap (DOWNLOAD_MAXSIZE);"
            " not failures"
        )
    if (seconds := duration(stats)) is not None:
        lines.append(f"duration: {seconds:.1f} s")
    if budget := get("sitemap/budget"):
        lines.append(
            f"stopped early: {budget}; {get('sitemap/budget/unfetched', 0)} URLs found"
            " but not fetched (cap-reached)"
        )
    if sections := decision_counts(stats, SECTION_PREFIX):
        lines.append("sections: " + ", ".join(f"{n} {c}" for n, c in sections.items()))
    outcome = get("sitemap/outcome")
    if outcome == "published":
        lines.append(
            f"files: {get('sitemap/files_written', 0)} written, "
            f"{get('sitemap/files_unchanged', 0)} unchanged "
            f"({get('sitemap/urls_written', 0)} URLs) + index {get('sitemap/index_path')}"
        )
        lines += ["add to robots.txt:", f"Sitemap: {get('sitemap/index_url')}"]
        if get("sitemap/feed_url"):
            lines.append(f"Sitemap: {stats['sitemap/feed_url']}")
    elif outcome:
        # Why is the command's last line (and the report's message): said once.
        lines.append(f"not published ({outcome})")
    for key, label in (("report_path", "report"), ("report_html_path", "html report")):
        if get(f"sitemap/{key}"):
            lines.append(f"{label}: {stats[f'sitemap/{key}']}")
    if get("sitemap/indexnow"):
        lines.append(str(stats["sitemap/indexnow"]))
    return "\n".join(lines)
