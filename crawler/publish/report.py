"""What a run tells people: the end-of-run summary, ``report.json`` and, from the same
:class:`RunModel`, ``report.html`` (:mod:`crawler.publish.runhtml`).

All come from the run's summary (:class:`crawler.core.summary.RunSummary`: the closed
books, the set published and what the crawl counted), never from the stats. The fields
of ``report.json``: docs/nightly.md, "The report". ``added``, ``removed`` and
``lastmod_changes`` say what the run changed: null for a run that neither published nor
finished its crawl (interrupted, failed: its ledger is no set to compare); for a refused
run, what the refused set would have changed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from crawler.core import clock
from crawler.core.decisions import FACET, LISTED, OFF_HOST
from crawler.core.summary import RichCounts

if TYPE_CHECKING:
    from crawler.core.summary import RunSummary
    from crawler.ledger.ledger import Ledger

#: How the summary and report.json name the default section (no rule matched).
DEFAULT_SECTION = "(default)"
SCHEMA = "sitemap-crawler/run/1"
#: Outcomes whose set can be compared with the previous one.
COMPARABLE = frozenset({"published", "crawled", "refused"})
#: Paths with learned parameters named in the summary line; report.json has all.
SUMMARY_PATHS = 3
#: Pages in the report's slowest and largest lists.
TOP_PAGES = 20


class Stream(functools.partial[Iterator[Any]]):
    """A list field of the report, streamed from the ledger each time it is called
    (report.json reads it whole, the HTML page its first few)."""


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
        kept = ("started", "finished", "outcome", "published", "pages_fetched", "listed")
        return {
            **{name: self.fields[name] for name in kept},
            "excluded": self.fields["excluded_total"],
            "queued": self.fields["queued"],
        }


def run_model(summary: RunSummary, ledger: Ledger, previous: Path | None) -> RunModel:
    """The report of the run *summary* tells, whose books *ledger* holds (see the module
    docstring); ``history`` is empty until the caller adds the runs kept in the state."""
    books, crawl, out = summary.books, summary.crawl, summary.published
    comparable = summary.outcome in COMPARABLE

    def change(i: int) -> Stream | None:
        if not comparable:
            return None
        return Stream(lambda: ledger.changes_since(previous)[i])

    excluded = {k: v for k, v in sorted(books.decisions.items()) if k != LISTED}
    rich = books.rich or RichCounts()
    fields: dict[str, Any] = {
        "schema": SCHEMA,
        "start_url": ledger.get_meta("start_url"),
        "tls_verified": crawl.tls_verified,
        "started": crawl.started.isoformat() if crawl.started else None,
        "finished": clock.now().isoformat(),
        "duration_seconds": crawl.duration,
        "outcome": summary.outcome,
        "message": summary.message,
        "published": summary.outcome == "published",
        "first_run": previous is None,
        "pages_fetched": crawl.pages_fetched,
        "conditional_requests": crawl.conditional,
        "not_modified": crawl.not_modified,
        "listed": books.listed,
        "excluded": excluded,
        "queued": books.queued,
        "added": change(0),
        "removed": change(1),
        "lastmod_changes": change(2),
        "files_written": out.files_written if out else 0,
        "files_unchanged": out.files_unchanged if out else 0,
        "published_since": out.published_since if out else None,
        "set_unchanged": bool(out and out.set_unchanged),
        "index": str(out.index_path) if out else None,
        "robots": {
            "token": crawl.robots_token,
            "group": crawl.robots_group,
            "state": crawl.robots_state,
            "why": crawl.robots_why,
        },
        "sections": out.sections if out else {},
        "rich": {
            "alternates": rich.alternates,
            "images": rich.images,
            "videos": rich.videos,
            "news": out.news if out else 0,
            "problems": rich.problems,
        },
        # Pages rendered in the headless browser (docs/rendering.md).
        "render": {
            "rendered": crawl.rendered - crawl.render_failed,
            "failed": crawl.render_failed,
            "unavailable": crawl.render_unavailable,
            "blocked": crawl.blocked_other_host + crawl.blocked_robots,
            "concurrency": crawl.render_concurrency,
        },
        "budget": (
            {"stopped": books.budget, "unfetched": books.unfetched} if books.budget else None
        ),
        "seeds": {
            "start": crawl.seeds_start,
            "url_file": crawl.seeds_url_file,
            "sitemap": crawl.seeds_sitemap,
            "sitemaps_read": crawl.sitemaps_read,
            "listed_unlinked": books.listed_unlinked or 0,
        },
        "schedule": schedule_counts(summary),
        "learned": {
            "parameters": books.parameters,
            "calendars": books.calendars,
            "soft404": {
                "probes": crawl.soft404_probes,
                "probe_status": crawl.soft404_status,
                "detected": bool(crawl.soft404_detected),
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


def learned_line(summary: RunSummary) -> str | None:
    """What the crawl learned (docs/crawling.md#traps-learned), in one line: "learned:
    3 parameters ignored on /shop/, 2 calendars cut, soft-404 page detected"; None when
    nothing."""
    parts = []
    books = summary.books
    params = books.parameters
    for path, names in sorted(params.items())[:SUMMARY_PATHS]:
        where = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else path
        n = len(names)
        parts.append(f"{n} parameter{'s' if n != 1 else ''} ignored on {where}")
    if len(params) > SUMMARY_PATHS:
        parts.append(f"and on {len(params) - SUMMARY_PATHS} more paths (report.json)")
    if calendars := books.calendars:
        parts.append(f"{calendars} calendar{'s' if calendars != 1 else ''} cut")
    if facets := books.learned.get(FACET, 0):
        parts.append(f"{facets} facet combination{'s' if facets != 1 else ''} left out")
    if summary.crawl.soft404_detected:
        parts.append("soft-404 page detected")
    return "learned: " + ", ".join(parts) if parts else None


def schedule_counts(summary: RunSummary) -> dict[str, Any] | None:
    """The revisit schedule of the night, report.json's ``schedule`` (its fields:
    docs/nightly.md#the-report-reportjson); None for a run that keeps none."""
    books, crawl = summary.books, summary.crawl
    if not (books.verified or books.kept):
        return None
    return {
        "full_night": summary.full_night,
        "verified": books.verified,
        "changed": books.changed,
        "kept": books.kept,
        "requests_saved": books.kept,
        "signalled": crawl.signalled,
        "rechecked": crawl.rechecked,
        "carried": books.carried,
        "api_requests": crawl.api_requests,
    }


def schedule_line(summary: RunSummary) -> str | None:
    """The summary's line about the revisit schedule."""
    counts = schedule_counts(summary)
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


def format_summary(summary: RunSummary) -> str:
    """The end-of-run summary: a few lines for a terminal or a cron mail."""
    books, crawl, out = summary.books, summary.crawl, summary.published
    counts = dict(books.decisions)
    listed = counts.pop(LISTED, 0)
    line = f"pages fetched: {crawl.pages_fetched}"
    if conditional := crawl.conditional:
        line += f" ({conditional} conditional, {crawl.not_modified} not modified)"
    lines = [line]
    if revisit := schedule_line(summary):
        lines.append(revisit)
    robots, why, group = crawl.robots_state, crawl.robots_why, crawl.robots_group
    if robots == "unavailable":
        lines.append(f"robots.txt: not there ({why}), so everything is allowed")
    elif robots == "unreachable":
        lines.append(
            f"robots.txt: unreachable ({why}), so nothing may be fetched until it can be"
            " read (RFC 9309)"
        )
    elif group is not None:
        token = crawl.robots_token
        lines.append(
            f"robots.txt: no group for {token} or for every agent (everything allowed)"
            if group == "none"
            else f"robots.txt: the group for {'every agent (*)' if group == '*' else group}"
            f" applied to {token}"
        )
    # TLS and the site's credentials (crawler.fetch.tls, crawler.fetch.access).
    if crawl.tls_verified is False:
        lines.append("TLS: certificates NOT verified (--insecure)")
    if crawl.withheld:
        lines.append(
            "credentials: not sent, certificates unverified (--insecure-credentials sends them)"
        )
    if plain := crawl.plain_http:
        lines.append(f"warning: credentials sent over plain http ({plain} requests)")
    lines.append(f"listed: {listed}")
    other_hosts = counts.pop(OFF_HOST, 0)
    if any(counts.values()):
        by_count = sorted(sorted(counts.items()), key=lambda kv: -kv[1])
        lines.append("excluded: " + ", ".join(f"{name} {n}" for name, n in by_count if n))
    if other_hosts:
        lines.append(f"links to other hosts: {other_hosts} (not crawled)")
    if learned := learned_line(summary):
        lines.append(learned)
    if templates := crawl.template_dates:
        lines.append(
            "lastmod: not believed, a date that many pages declare alike (a template): "
            + ", ".join(f"{value} ({n} pages)" for value, n in templates.items())
        )
    if wanted := crawl.rendered:
        failed = crawl.render_failed
        line = f"rendered in Chromium: {wanted - failed} pages"
        if failed:
            line += f", {failed} failed (judged on their raw HTML)"
        if blocked := crawl.blocked_other_host + crawl.blocked_robots:
            line += f"; {blocked} requests of theirs blocked (other hosts, robots.txt)"
        lines.append(line)
    if unavailable := crawl.render_unavailable:
        lines.append(
            f"warning: {unavailable} pages look built by JavaScript but were judged on "
            f"their raw HTML ({crawl.render_problem})"
        )
    if "added" in (lengths := summary.lengths):
        changed = (
            f"{lengths['added']} added, {lengths['removed']} removed, "
            f"{lengths['lastmod_changes']} lastmod changes"
        )
        what = "since the last run"
        if summary.outcome == "refused":
            what = "the refused set would have made"
        lines.append(f"{what}: {changed}")
    rich, news = books.rich or RichCounts(), out.news if out else 0
    if rich.alternates or rich.images or rich.videos or rich.problems or news:
        line = (
            f"rich entries: {rich.alternates} hreflang alternates, {rich.images} images, "
            f"{rich.videos} videos, {news} news articles"
        )
        if rich.problems:
            line += f"; {rich.problems} left out (rich_problems in report.json)"
        lines.append(line)
    if crawl.seeds_start > 1 or crawl.seeds_url_file or crawl.sitemaps_read or crawl.seeds_sitemap:
        line = f"seeds: {crawl.seeds_start} start URLs"
        if crawl.seeds_url_file:
            line += f", {crawl.seeds_url_file} from --urls"
        if crawl.sitemaps_read or crawl.seeds_sitemap:
            line += (
                f", {crawl.seeds_sitemap} from {crawl.sitemaps_read} sitemaps"
                f" ({books.listed_unlinked or 0} listed that no link leads to)"
            )
        lines.append(line)
    if too_large := crawl.too_large:
        lines.append(
            f"too large: {too_large} pages over the download size cap (DOWNLOAD_MAXSIZE);"
            " not failures"
        )
    if crawl.duration is not None:
        lines.append(f"duration: {crawl.duration:.1f} s")
    if books.budget:
        lines.append(
            f"stopped early: {books.budget}; {books.unfetched or 0} URLs found"
            " but not fetched (cap-reached)"
        )
    if out is not None and out.sections:
        lines.append("sections: " + ", ".join(f"{n} {c}" for n, c in out.sections.items()))
    if out is not None:
        lines.append(
            f"files: {out.files_written} written, {out.files_unchanged} unchanged "
            f"({out.urls_written} URLs) + index {out.index_path}"
        )
        lines += ["add to robots.txt:", f"Sitemap: {out.index_url}"]
        if out.feed_url:
            lines.append(f"Sitemap: {out.feed_url}")
    else:
        # Why is the command's last line (and the report's message): said once.
        lines.append(f"not published ({summary.outcome})")
    if summary.report_path is not None:
        lines.append(f"report: {summary.report_path}")
    if summary.report_html_path is not None:
        lines.append(f"html report: {summary.report_html_path}")
    return "\n".join(lines)
