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
``lastmod_changes`` (``{url, old, new}``), ``files_written`` (files of the set
written this run) and ``files_unchanged`` (files already published byte for byte,
left untouched), ``published_since`` (when the set now published was first
published: an unchanged night keeps the date), ``set_unchanged`` (the set is the
one published last time, byte for byte), ``index``,
``robots`` (``{token, group}``: the product token matched against the start URL's
robots.txt, the group that applied: the token, ``*`` or ``none``, its ``state``:
``parsed``, ``unavailable`` (a 404, say: everything allowed) or ``unreachable`` (a
5xx or no answer: nothing fetched), and ``why``: ``HTTP 404``...), ``learned``
(``{parameters, calendars, soft404}``: path -> the query parameters learned not to
change its pages, the calendar sequences cut, and the soft-404 probe's
``{probes, probe_status, detected}``; issue #19), ``rich``
(``{alternates, images, videos, news, problems}``: what the rich entries hold,
issue #14) and ``rich_problems`` (``{url, problems}``: the hreflang alternates and
videos left out of a page's entry, and why), ``budget`` (``{stopped, unfetched}``:
which budget stopped the crawl, ``--max-time`` say, and how many URLs it left found
but not fetched; null when none did), ``seeds`` (``{start, url_file, sitemap,
sitemaps_read, listed_unlinked}``: the URLs each kind of seed brought, the sitemaps
read for seeds, and the listed pages that only a sitemap led to: orphans).

``first_run``: no earlier run to compare with (every listed URL is added). For
the HTML report (issue #17, ``report.html`` beside it, :mod:`crawler.publish.runhtml`;
both are written from one :class:`RunModel`): ``excluded_total`` (the site's URLs
excluded: ``excluded`` less ``off-host``), ``other_hosts`` (the links to other
hosts, ``off-host``: not the site's, so apart), ``status_codes``
(HTTP status -> URLs), ``depths`` (link depth -> ``{urls, listed}``), ``slowest``
(``{url, decision, seconds}``) and ``largest`` (``{url, decision, bytes}``), the
:data:`TOP_PAGES` slowest fetches and largest bodies, and ``history``: the runs kept
in the state directory's ``runs.json``, oldest first, this one last
(:mod:`crawler.publish.reporthistory`).

``added``, ``removed`` and ``lastmod_changes`` say what the run changed: they are
null for a run that neither published nor finished its crawl (interrupted,
failed), whose ledger is no set to compare; for a refused run they are what the
refused set would have changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

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


def decision_counts(stats: dict[str, Any]) -> dict[str, int]:
    return {k[len(PREFIX) :]: int(v) for k, v in sorted(stats.items()) if k.startswith(PREFIX)}


def section_counts(stats: dict[str, Any]) -> dict[str, int]:
    """URLs written per section (none without --section rules)."""
    return {
        k[len(SECTION_PREFIX) :]: int(v)
        for k, v in sorted(stats.items())
        if k.startswith(SECTION_PREFIX)
    }


def seed_counts(stats: dict[str, Any]) -> dict[str, int]:
    """What the seeds brought (issue #19): URLs new to the crawl from the start URLs,
    the --urls file and the sitemaps, the sitemaps read, and the listed pages that
    only a sitemap led to."""
    return {
        "start": stats.get("sitemap/seeds/start", 0),
        "url_file": stats.get("sitemap/seeds/url-file", 0),
        "sitemap": stats.get("sitemap/seeds/sitemap", 0),
        "sitemaps_read": stats.get("sitemap/seeds/sitemaps_read", 0),
        "listed_unlinked": stats.get("sitemap/seeds/listed_unlinked", 0),
    }


def duration(stats: dict[str, Any]) -> float | None:
    started = stats.get("start_time")
    finished = stats.get("finish_time") or datetime.now(UTC)
    if not isinstance(started, datetime):
        return None
    return round((finished - started).total_seconds(), 1)


#: Pages in the report's slowest and largest lists.
TOP_PAGES = 20


class Stream:
    """A list field of the report, streamed from the ledger each time it is read
    (report.json reads it whole, the HTML page its first few)."""

    def __init__(self, factory: Callable[[], Iterator[Any]]) -> None:
        self.factory = factory

    def __call__(self) -> Iterator[Any]:
        return self.factory()


@dataclass
class RunModel:
    """One run's report (issue #17): ``report.json`` and ``report.html`` are both
    written from it, so their figures agree. *fields* are report.json's, in order;
    a :class:`Stream` field is a list read from the ledger when written. *lengths*:
    each streamed list's length, known once report.json is written."""

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
        "started": started.isoformat() if isinstance(started, datetime) else None,
        "finished": datetime.now(UTC).isoformat(),
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
        "robots": {
            "token": stats.get("sitemap/robots/token"),
            "group": stats.get("sitemap/robots/group"),
            "state": stats.get("sitemap/robots/state"),
            "why": stats.get("sitemap/robots/why"),
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
        "budget": (
            {"stopped": stats["sitemap/budget"], "unfetched": stats.get("sitemap/budget/unfetched")}
            if stats.get("sitemap/budget")
            else None
        ),
        "seeds": seed_counts(stats),
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
        # Added for the HTML report (issue #17).
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


def write_report(
    path: Path,
    stats: dict[str, Any],
    ledger: Ledger,
    previous: Path | None,
    outcome: str,
    message: str,
) -> dict[str, int]:
    """Write ``report.json`` to *path* (atomically) and return how many URLs were
    ``added``, ``removed`` and had ``lastmod_changes`` (and ``rich_problems``)."""
    return write_json(path, run_model(stats, ledger, previous, outcome, message))


def _write_list(f: TextIO, values: Iterator[Any]) -> int:
    n = 0
    f.write("[")
    for n, value in enumerate(values, 1):
        f.write(("\n  " if n == 1 else ",\n  ") + json.dumps(value, ensure_ascii=False))
    f.write("\n ]" if n else "]")
    return n


def learned_line(stats: dict[str, Any]) -> str | None:
    """What the crawl learned (issue #19), in one line: "learned: 3 parameters ignored
    on /shop/, 2 calendars cut, soft-404 page detected"; None when nothing."""
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


def format_summary(stats: dict[str, Any]) -> str:
    counts = decision_counts(stats)
    listed = counts.pop("listed", 0)
    fetched = pages_fetched(stats)
    line = f"pages fetched: {fetched}"
    conditional = stats.get("sitemap/conditional/requests", 0)
    if conditional:
        line += (
            f" ({conditional} conditional, "
            f"{stats.get('sitemap/conditional/not_modified', 0)} not modified)"
        )
    lines = [line]
    robots, why = stats.get("sitemap/robots/state"), stats.get("sitemap/robots/why")
    if robots == "unavailable":
        lines.append(f"robots.txt: not there ({why}), so everything is allowed")
    elif robots == "unreachable":
        lines.append(
            f"robots.txt: unreachable ({why}), so nothing may be fetched until it can be"
            " read (RFC 9309)"
        )
    elif (group := stats.get("sitemap/robots/group")) is not None:
        token = stats.get("sitemap/robots/token")
        lines.append(
            f"robots.txt: no group for {token} or for every agent (everything allowed)"
            if group == "none"
            else f"robots.txt: the group for {'every agent (*)' if group == '*' else group}"
            f" applied to {token}"
        )
    lines.append(f"listed: {listed}")
    other_hosts = counts.pop(OFF_HOST, 0)
    if any(counts.values()):
        lines.append(
            "excluded: "
            + ", ".join(
                f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n
            )
        )
    if other_hosts:
        lines.append(f"links to other hosts: {other_hosts} (not crawled)")
    if learned := learned_line(stats):
        lines.append(learned)
    if templates := stats.get("sitemap/lastmod/template_dates"):
        lines.append(
            "lastmod: not believed, a date that many pages declare alike (a template): "
            + ", ".join(f"{value} ({n} pages)" for value, n in templates.items())
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
    if too_large := stats.get("sitemap/too_large"):
        lines.append(
            f"too large: {too_large} pages over the download size cap (DOWNLOAD_MAXSIZE);"
            " not failures"
        )
    seconds = duration(stats)
    if seconds is not None:
        lines.append(f"duration: {seconds:.1f} s")
    if budget := stats.get("sitemap/budget"):
        lines.append(
            f"stopped early: {budget}; {stats.get('sitemap/budget/unfetched', 0)} URLs found"
            " but not fetched (cap-reached)"
        )
    sections = {
        k[len(SECTION_PREFIX) :]: v for k, v in stats.items() if k.startswith(SECTION_PREFIX)
    }
    if sections:
        lines.append("sections: " + ", ".join(f"{n} {c}" for n, c in sorted(sections.items())))
    outcome = stats.get("sitemap/outcome")
    if outcome == "published":
        lines.append(
            f"files: {stats.get('sitemap/files_written', 0)} written, "
            f"{stats.get('sitemap/files_unchanged', 0)} unchanged "
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
    if stats.get("sitemap/report_html_path"):
        lines.append(f"html report: {stats['sitemap/report_html_path']}")
    if stats.get("sitemap/indexnow"):
        lines.append(str(stats["sitemap/indexnow"]))
    return "\n".join(lines)
