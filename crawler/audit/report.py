"""The audit report: compare what the sitemaps list with what the crawl found.

Every listed URL lands in one class (issue #3):

``indexable``
    listed and indexable (good); a byte-identical copy of a page counts too, when
    the sitemaps do not list that page as well.
``orphan``
    listed and indexable when fetched, but not found by following links.
``excluded``
    listed, and met by the crawl, which left it out by its rules (``--exclude`` or
    ``--include``, the length of a loc, a cap, a trap, a learned query parameter:
    :data:`crawler.decisions.RULED_OUT`); the reason is the ledger's. Never fetched
    by the audit, never an orphan.
``duplicate``
    listed, and a byte-identical copy of another URL the sitemaps list too (the
    target): two entries for one page.
``redirect``, ``4xx``, ``5xx``, ``noindex``, ``canonicalised``, ``robots-blocked``,
``off-host``, ``not-html``, ``error``, ``not-crawled``
    listed but not indexable, by reason (with the redirect or canonical target).
    ``off-host`` includes other schemes and URLs outside the sitemap file's
    directory, which are never fetched.
``invalid-loc``
    an entry whose ``loc`` is not an absolute http(s) URL.
``missing``
    indexable, found by the crawl, listed in no sitemap.

Flags on top of the class: ``duplicate-listing`` (listed in more than one sitemap
file) and ``dead-orphan`` (listed, not indexable, and not found by the crawl:
``found_by_crawl`` is false; not for ``off-host``, ``invalid-loc`` and ``excluded``).
Each flag's count is the number of URLs that carry it, and each has its CSV.
Protocol problems (file and entry faults reported by the parser, an index of
indexes, cycles, lastmod drift) are listed separately, each with its sitemap and
line. Coverage is the share of the indexable pages found by the crawl that the
sitemaps list.

Only the first 50,000 entries of a file (the protocol's limit) are audited; the
rest are fetched, judged and counted for coverage by nobody, as search engines
ignore them: such an entry takes a class only when its URL alone decides it
(``invalid-loc``, or ``off-host`` by the location rule), and a page listed only
there is ``missing``, saying so. Each file says how many it had (``not_audited``,
and a ``not-audited`` problem), and so does the summary.

When no sitemap could be read at all (nothing found at the places tried, or only
error pages), ``no_sitemap`` is true and the summary's first line says so, with
every place tried.

``audit.json`` (schema ``sitemap-crawler/audit/1``)::

    {"schema", "site", "generated", "no_sitemap", "not_audited", "sitemaps_read",
     "coverage": {"percent", "covered", "indexable_found"},
     "counts": {class or flag: n}, "sitemaps": [{"url", "via", "parent", "depth",
     "status", "kind", "entries", "compressed_layers", "size", "complete", "fetched",
     "problems", "not_audited", "hreflang_alternates", "media_alternates", "images"}],
     "urls": [{"url", "class", "reason", "target", "found_by_crawl", "sitemaps",
     "flags"}], "problems": [{"code", "message", "sitemap", "line", "url"}],
     "history": [{"generated", "site", "coverage", "covered", "indexable_found",
     "listed", "problems", "counts"}]}

``no_sitemap`` (bool), ``not_audited`` (the entries, over all files, past the
50,000 a file may list) and ``sitemaps_read`` (the files read; ``sitemaps`` also
holds the places tried with nothing there) were added to schema 1 without a new
version, and so were the classes ``excluded`` and ``duplicate`` and the flag
``dead-orphan`` on its URLs (its count was there before): readers of the older form
find every field they knew. ``media_alternates`` counts Google's
mobile annotation (``xhtml:link rel="alternate" media=...`` without hreflang).

``history`` (issue #17, added to schema 1 the same way): the past audits of the site
kept by the audit command, oldest first, this one last; empty when none is kept.
``index.html`` is the same report for people (:mod:`crawler.audit.html`), written
from the same dict.

and one CSV per class and flag (``<name>.csv``: url, class, reason, target,
found_by_crawl, sitemaps) plus ``problems.csv``.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler import decisions as d
from crawler.audit.html import render_audit
from crawler.audit.rules import CrawlRules
from crawler.audit.store import AuditStore
from crawler.htmlpage import DEFAULT_CAP, write_html
from crawler.items import FOUND_SITEMAP
from crawler.lastmod import http_date_to_w3c, lastmod_datetime, w3c_datetime
from crawler.ledger import Ledger
from crawler.limits import MAX_URLS_PER_FILE

SCHEMA = "sitemap-crawler/audit/1"
# A child file of a set we published, with its section (issue #15).
_SECTION_FILE = re.compile(
    r"^sitemap-(?:(?P<section>[a-z][a-z0-9-]*)-)?\d{5}-[0-9a-f]{10}\.(?:xml|txt)(?:\.gz)?$"
)
CLASSES = (
    "indexable",
    "orphan",
    "redirect",
    "4xx",
    "5xx",
    "noindex",
    "canonicalised",
    "duplicate",
    "robots-blocked",
    "off-host",
    "not-html",
    "error",
    "not-crawled",
    "excluded",
    "invalid-loc",
    "missing",
)
FLAGS = ("duplicate-listing", "dead-orphan")
#: Classes whose URLs are never dead orphans: never fetched (off-host, invalid-loc),
#: indexable (orphan), or met by the crawl and left out by its rules (excluded).
_NOT_DEAD = frozenset({"orphan", "invalid-loc", "off-host", "excluded"})
#: Names --fail-on accepts: classes, flags, and "protocol" (any protocol problem).
FAILABLE = frozenset(CLASSES) | frozenset(FLAGS) | {"protocol"}

_BY_DECISION = {
    d.LISTED: "indexable",
    d.DUPLICATE: "indexable",
    d.REDIRECT: "redirect",
    d.CANONICAL: "canonicalised",
    d.NOINDEX: "noindex",
    d.NON_HTML: "not-html",
    d.ROBOTS: "robots-blocked",
    d.OFF_HOST: "off-host",
    d.NON_PUBLIC: "off-host",
    d.OTHER_SCHEME: "off-host",
    d.ERROR: "error",
    d.TOO_LARGE: "error",  # over the download size cap: not judged, reason says why
    d.INVALID: "invalid-loc",
    # The site's "not found" page served with 200: a 404 as search engines see it.
    d.SOFT_404: "4xx",
}


def _seeded(row: dict[str, Any] | None) -> bool:
    """Whether the crawl found this URL only in a sitemap (``--seed-sitemaps``): no
    crawled page links to it (a seed a page links to has that page as referrer)."""
    return row is not None and row.get("found_by") == FOUND_SITEMAP and not row["referrer"]


def classify(decision: str, status: int | None) -> str:
    if decision == d.STATUS:
        if status is not None and 400 <= status < 500:
            return "4xx"
        if status is not None and status >= 500:
            return "5xx"
        return "error"
    return _BY_DECISION.get(decision, "not-crawled")


@dataclass
class AuditReport:
    site: str
    coverage: float | None
    covered: int
    indexable_found: int
    sitemaps: list[dict[str, Any]]
    urls: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    #: The past audits of the site, oldest first, this one last (issue #17):
    #: filled by the audit command from the kept history (crawler.reporthistory).
    history: list[dict[str, Any]] = field(default_factory=list)
    generated: str = field(
        default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    )

    def history_entry(self) -> dict[str, Any]:
        """This audit's line in the kept history."""
        return {
            "generated": self.generated,
            "site": self.site,
            "coverage": None if self.coverage is None else round(self.coverage, 2),
            "covered": self.covered,
            "indexable_found": self.indexable_found,
            "listed": len(self.urls),
            "problems": len(self.problems),
            "counts": {k: v for k, v in self.counts.items() if v},
        }

    @property
    def no_sitemap(self) -> bool:
        """True when no place tried gave a sitemap that could be read."""
        return not any(_is_read(sm) for sm in self.sitemaps)

    @property
    def not_audited(self) -> int:
        """Entries past the first 50,000 of their file, over all files."""
        return sum(
            sm.get("not_audited") or 0 for sm in self.sitemaps if sm["kind"] != "sitemapindex"
        )

    @property
    def counts(self) -> dict[str, int]:
        counts: Counter[str] = Counter(u["class"] for u in self.urls)
        for u in self.urls:
            counts.update(u["flags"])
        counts["protocol"] = len(self.problems)
        return {name: counts.get(name, 0) for name in (*CLASSES, *FLAGS, "protocol")}

    @property
    def sitemaps_read(self) -> int:
        """The sitemap files read (fetched, or read from disk, and sitemaps): the
        places tried with nothing there (a 404 at /sitemap.xml) are not files."""
        return sum(1 for sm in self.sitemaps if _is_read(sm))

    @property
    def sections(self) -> dict[str, int]:
        """Entries per section of a set sitemap-crawler published (its file names:
        ``sitemap-NAME-00001-<hash>``; the default section's have no NAME); empty for
        a set without sections."""
        found: dict[str, int] = {}
        for sm in self.sitemaps:
            name = sm["url"].rsplit("/", 1)[-1]
            match = _SECTION_FILE.match(name)
            if match and sm["kind"] != "sitemapindex":
                key = match["section"] or "(default)"
                found[key] = found.get(key, 0) + (sm["entries"] or 0)
        return found if set(found) - {"(default)"} else {}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "site": self.site,
            "generated": self.generated,
            "no_sitemap": self.no_sitemap,
            "not_audited": self.not_audited,
            "sitemaps_read": self.sitemaps_read,
            "coverage": {
                "percent": None if self.coverage is None else round(self.coverage, 2),
                "covered": self.covered,
                "indexable_found": self.indexable_found,
            },
            "counts": self.counts,
            "sections": self.sections,
            "sitemaps": self.sitemaps,
            "urls": self.urls,
            "problems": self.problems,
            "history": self.history,
        }


def build_report(
    site: str, ledger_path: Path, store_path: Path, now: datetime | None = None
) -> AuditReport:
    now = now or datetime.now(UTC)
    ledger = Ledger(ledger_path)
    store = AuditStore(store_path)
    try:
        crawl = {row["key"]: row for row in ledger.rows()}
        start = ledger.get_meta("start_url")
        rules = CrawlRules(
            ledger.get_meta("scope", {}) or {}, start if isinstance(start, str) else None
        )
        sitemaps = store.sitemaps()
        listings = list(store.query("SELECT * FROM listings ORDER BY sitemap, line, id"))
        extensions = {
            row["sitemap"]: row
            for row in store.query(
                "SELECT sitemap, sum(alternates) AS alternates, sum(images) AS images, "
                "sum(media_alternates) AS media_alternates FROM listings GROUP BY sitemap"
            )
        }
        for sm in sitemaps:
            totals = extensions.get(sm["url"], {})
            sm["hreflang_alternates"] = totals.get("alternates") or 0
            sm["media_alternates"] = totals.get("media_alternates") or 0
            sm["images"] = totals.get("images") or 0
        fetched = {row["key"]: row for row in store.query("SELECT * FROM fetched")}
    finally:
        ledger.close()
        store.close()

    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    urls: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    for row in listings:
        if row["key"] is None:
            urls.append(
                _url(row["loc"], "invalid-loc", row["scope"], None, False, [row["sitemap"]])
            )
        else:
            by_key[row["key"]].append(row)

    covered_keys: set[str] = set()
    # Keys the audit judges: listed in scope in an audited entry.
    listed_keys = {
        key
        for key, rows in by_key.items()
        if any(r["audited"] and r["scope"] is None for r in rows)
    }
    # Keys listed in scope only past the 50,000th entry of a file: key -> files.
    unaudited: dict[str, list[str]] = {}
    for key, rows in sorted(by_key.items(), key=lambda kv: kv[1][0]["url"]):
        # An entry past a file's first 50,000 is not audited at all (issue #13): the
        # protocol stops there, and so does the audit; the file says how many.
        skipped = [r for r in rows if not r["audited"]]
        if skipped:
            rows = [r for r in rows if r["audited"]]
            if not rows:
                if any(r["scope"] is None for r in skipped):
                    unaudited[key] = sorted({r["sitemap"] for r in skipped})
                continue
        files = sorted({r["sitemap"] for r in rows})
        in_scope = [r for r in rows if r["scope"] is None]
        for r in rows:
            if r["scope"] is not None and in_scope:
                problems.append(_problem("loc-out-of-scope", f"{r['scope']}: not fetched", r))
        if not in_scope:
            # Never fetched: another host or scheme, or outside the file's directory.
            urls.append(_url(rows[0]["url"], "off-host", rows[0]["scope"], None, False, files))
            continue
        found = crawl.get(key)
        judged_by_crawl = found is not None and found["decision"] in d.JUDGED
        # A crawl with --seed-sitemaps judged the sitemaps' entries too: one that
        # no link led to is still an orphan (issue #19).
        found_by_crawl = judged_by_crawl and not _seeded(found)
        judged = found if judged_by_crawl else fetched.get(key)
        if found is not None and found["decision"] in d.RULED_OUT:
            # Met by the crawl, left out by its rules: neither fetched nor an orphan.
            cls, target = "excluded", None
            reason = (
                f"{found['decision']}: {found['reason']}" if found["reason"] else found["decision"]
            )
        elif found is None and (rule := rules.excludes(in_scope[0]["url"])) is not None:
            # Never met (linked only from pages the rules left out): the rules
            # would leave it out too.
            cls, target = "excluded", None
            reason = f"never met by the crawl, whose rules exclude it: it {rule}"
        elif judged is None:
            cls, reason, target = "not-crawled", (found or {}).get("reason") or "not fetched", None
        else:
            cls = classify(judged["decision"], judged["status"])
            reason, target = judged["reason"], judged["target"]
            copy_of = found["target_key"] if found is not None else None
            if (
                cls == "indexable"
                and found_by_crawl
                and judged["decision"] == d.DUPLICATE
                and copy_of in listed_keys
            ):
                # Both URLs of one page listed: the copy is a second entry, not a
                # second indexable page (the covered count counts the page once).
                cls = "duplicate"
                reason = f"a byte-identical copy of {target}, which the sitemaps list too"
            elif cls == "indexable":
                covered_keys.add(key)
                if judged["decision"] == d.DUPLICATE and copy_of is not None:
                    covered_keys.add(copy_of)
                if not found_by_crawl:
                    cls = "orphan"
                    reason = "not linked from the crawled pages"
        url = _url(in_scope[0]["url"], cls, reason, target, found_by_crawl, files)
        if len({r["sitemap"] for r in in_scope}) > 1:
            url["flags"].append("duplicate-listing")
        if not found_by_crawl and cls not in _NOT_DEAD:
            url["flags"].append("dead-orphan")
        urls.append(url)

    indexable_found = [
        row for row in crawl.values() if row["decision"] == d.LISTED and not _seeded(row)
    ]
    for row in indexable_found:
        if row["key"] not in covered_keys:
            reason = "listed in no sitemap"
            if row["key"] in unaudited:
                reason = (
                    f"listed only past the first {MAX_URLS_PER_FILE:,} entries of"
                    f" {', '.join(unaudited[row['key']])}: not audited"
                )
            urls.append(_url(row["url"], "missing", reason, None, True, []))
    covered = sum(1 for row in indexable_found if row["key"] in covered_keys)
    coverage = 100.0 * covered / len(indexable_found) if indexable_found else None

    for sm in sitemaps:
        for p in sm["problems"]:
            # An entry's problem names its URL (issue 17); a file's names none.
            problems.append({**p, "sitemap": sm["url"], "url": p.get("url")})
    problems += _lastmod_problems([row for row in listings if row["audited"]], crawl, now)
    problems.sort(key=lambda p: (p["sitemap"], p["line"] or 0, p["code"]))
    return AuditReport(site, coverage, covered, len(indexable_found), sitemaps, urls, problems)


def _url(
    url: str, cls: str, reason: str | None, target: str | None, found: bool, sitemaps: list[str]
) -> dict[str, Any]:
    return {
        "url": url,
        "class": cls,
        "reason": reason or "",
        "target": target,
        "found_by_crawl": found,
        "sitemaps": sitemaps,
        "flags": [],
    }


def _problem(code: str, message: str, listing: dict[str, Any]) -> dict[str, Any]:
    return {
        "code": code,
        "message": message,
        "sitemap": listing["sitemap"],
        "line": listing["line"],
        "url": listing["url"] or listing["loc"],
    }


def _lastmod_problems(
    listings: list[dict[str, Any]], crawl: dict[str, dict[str, Any]], now: datetime
) -> list[dict[str, Any]]:
    """Lastmod drift: a lastmod older than the page's Last-Modified, or one value
    for every entry of a file that the pages' own Last-Modified does not bear out
    (the mark of a generator stamping its run date)."""
    problems = []
    per_file: dict[str, list[str]] = defaultdict(list)
    # Per file: entries whose page has a Last-Modified, and how many of those agree.
    evidence: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in listings:
        if not row["lastmod"]:
            continue
        per_file[row["sitemap"]].append(row["lastmod"].strip())
        page = crawl.get(row["key"]) if row["key"] else None
        if page is None or not page["last_modified"]:
            continue
        header = http_date_to_w3c(page["last_modified"])
        listed = w3c_datetime(row["lastmod"].strip())
        if header is None or listed is None:
            continue
        date_only = len(listed) == 10
        listed_at, header_at = lastmod_datetime(listed), lastmod_datetime(header)
        if date_only:
            stale, agrees = (
                listed_at.date() < header_at.date(),
                listed_at.date() == header_at.date(),
            )
        else:
            stale, agrees = listed_at < header_at, listed_at == header_at
        evidence[row["sitemap"]][0] += 1
        evidence[row["sitemap"]][1] += agrees
        if stale:
            message = (
                f"lastmod {row['lastmod'].strip()} is older than the page's "
                f"Last-Modified {page['last_modified']}"
            )
            problems.append(_problem("lastmod-stale", message, row))
    for sitemap, values in per_file.items():
        checked, agreeing = evidence[sitemap]
        borne_out = checked > 0 and agreeing == checked
        if len(values) >= 3 and len(set(values)) == 1 and not borne_out:
            problems.append(
                {
                    "code": "lastmod-uniform",
                    "message": f"all {len(values)} entries carry the same lastmod {values[0]}",
                    "sitemap": sitemap,
                    "line": None,
                    "url": None,
                }
            )
    return problems


def write_report(
    report: AuditReport, directory: Path, html: bool = True, cap: int = DEFAULT_CAP
) -> list[Path]:
    """``audit.json`` and (with *html*) ``index.html``, both from one dict (issue
    #17), plus one CSV per class and flag, and ``problems.csv``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    data = report.to_json()
    path = directory / "audit.json"
    tmp = directory / ".audit.json.tmp"
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(path)
    written.append(path)
    if html:
        written.append(write_html(directory / "index.html", render_audit(data, cap)))
    columns = ["url", "class", "reason", "target", "found_by_crawl", "sitemaps"]
    for name in (*CLASSES, *FLAGS):
        rows = [u for u in report.urls if u["class"] == name or name in u["flags"]]
        path = directory / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            for u in rows:
                writer.writerow(
                    [
                        u["url"],
                        u["class"],
                        u["reason"],
                        u["target"] or "",
                        "yes" if u["found_by_crawl"] else "no",
                        " ".join(u["sitemaps"]),
                    ]
                )
        written.append(path)
    path = directory / "problems.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["code", "message", "sitemap", "line", "url"])
        for p in report.problems:
            writer.writerow(
                [p["code"], p["message"], p["sitemap"], p["line"] or "", p["url"] or ""]
            )
    written.append(path)
    return written


def _is_read(sitemap: dict[str, Any]) -> bool:
    """A sitemap file that was fetched (or read from disk) and is one."""
    return bool(
        sitemap["fetched"]
        and sitemap["status"] in (200, None)
        and sitemap["kind"] not in (None, "unknown")
    )


def _tried(sitemaps: list[dict[str, Any]]) -> str:
    """Every place a sitemap was looked for, and what was there."""
    places = []
    if not any(sm["via"] == "robots" for sm in sitemaps):
        places.append("robots.txt (no Sitemap: line)")
    for sm in sitemaps:
        codes = [p["code"] for p in sm["problems"]]
        if sm["status"] not in (200, None):
            outcome = f"HTTP {sm['status']}"
        elif not sm["fetched"]:
            outcome = codes[-1] if codes else "not fetched"
        elif sm["kind"] in (None, "unknown"):
            outcome = "not a sitemap"
        else:
            outcome = sm["kind"]
        places.append(f"{sm['url']} ({outcome})")
    return ", ".join(places)


def format_summary(report: AuditReport, examples: int = 3) -> str:
    counts = report.counts
    fetched = [s for s in report.sitemaps if _is_read(s)]
    lines = []
    if report.no_sitemap:
        lines.append(f"no sitemap found; tried: {_tried(report.sitemaps)}")
    not_audited = report.not_audited
    lines.append(
        f"sitemaps read: {report.sitemaps_read} "
        f"({sum(1 for s in report.sitemaps if s['problems'])} with problems), "
        f"entries: {sum(s['entries'] for s in fetched)}"
        + (
            f" ({not_audited:,} not audited: past the first {MAX_URLS_PER_FILE:,} of their"
            " file, the protocol's limit)"
            if not_audited
            else ""
        )
        + "".join(
            f", {label}: {n}"
            for label, n in (
                ("hreflang alternates", sum(s.get("hreflang_alternates", 0) for s in fetched)),
                ("mobile alternates", sum(s.get("media_alternates", 0) for s in fetched)),
                ("images", sum(s.get("images", 0) for s in fetched)),
            )
            if n
        )
    )
    if report.coverage is None:
        lines.append("coverage: n/a (the crawl found no indexable page)")
    else:
        lines.append(
            f"coverage: {report.coverage:.1f}% ({report.covered} of {report.indexable_found} "
            "indexable pages found by the crawl are listed)"
        )
    if sections := report.sections:
        lines.append("sections: " + ", ".join(f"{n} {c}" for n, c in sorted(sections.items())))
    for name in (*CLASSES, *FLAGS):
        if not counts[name]:
            continue
        sample = [u for u in report.urls if u["class"] == name or name in u["flags"]][:examples]
        lines.append(
            f"{name:<18} {counts[name]:>6}"
            + ("  (listed, not found by the crawl, not indexable)" if name == "dead-orphan" else "")
        )
        for u in sample:
            detail = f" ({u['reason']})" if u["reason"] and name not in ("indexable",) else ""
            lines.append(f"    {u['url']}{detail}")
    if report.problems:
        by_code = Counter(p["code"] for p in report.problems)
        lines.append(
            f"{'protocol problems':<18} {len(report.problems):>6}  "
            + ", ".join(f"{code} {n}" for code, n in by_code.most_common())
        )
    return "\n".join(lines)


def failures(report: AuditReport, fail_under: float | None, fail_on: list[str]) -> list[str]:
    """Why the audit breaks the bar (empty: it passes)."""
    reasons = []
    if fail_under is not None and (report.coverage is None or report.coverage < fail_under):
        shown = "n/a" if report.coverage is None else f"{report.coverage:.1f}%"
        reasons.append(f"coverage {shown} is under {fail_under:g}%")
    counts = report.counts
    for name in fail_on:
        if counts.get(name, 0):
            reasons.append(f"{counts[name]} {name}")
    return reasons
