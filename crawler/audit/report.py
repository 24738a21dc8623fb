"""The audit report: compare what the sitemaps list with what the crawl found.

Every listed URL lands in one class (:data:`crawler.audit.classes.CLASSES`) with flags
on top; protocol problems are listed separately, each with its sitemap and line. What
each class, flag and problem means, coverage, and the entries past the protocol's
50,000 a file: docs/audit.md.

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

Fields and classes added to schema 1 leave every older field as it was (``history``:
the site's kept past audits, oldest first; ``media_alternates``: Google's mobile
annotation). ``index.html`` (:mod:`crawler.audit.html`) is the same dict for people;
one CSV per class and flag plus ``problems.csv``.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawler.audit.classes import CLASSES, FLAGS, NOT_DEAD, classify, seeded
from crawler.audit.html import render_audit
from crawler.audit.rules import CrawlRules
from crawler.audit.store import AuditStore
from crawler.core import clock
from crawler.core import decisions as d
from crawler.core.lastmod import http_date_to_w3c, lastmod_datetime, w3c_datetime
from crawler.ledger.ledger import Ledger
from crawler.publish.htmlpage import DEFAULT_CAP, write_html
from crawler.sitemaps.limits import MAX_URLS_PER_FILE

# The classes are importable from here too.
__all__ = ["CLASSES", "FLAGS", "AuditReport", "build_report", "write_report"]

SCHEMA = "sitemap-crawler/audit/1"
# A child file of a set we published, with its section (docs/around.md, "Sections").
_SECTION_FILE = re.compile(
    r"^sitemap-(?:(?P<section>[a-z][a-z0-9-]*)-)?\d{5}-[0-9a-f]{10}\.(?:xml|txt)(?:\.gz)?$"
)


@dataclass
class AuditReport:
    site: str
    coverage: float | None
    covered: int
    indexable_found: int
    sitemaps: list[dict[str, Any]]
    urls: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    #: The past audits of the site, oldest first, this one last (filled by the command).
    history: list[dict[str, Any]] = field(default_factory=list)
    generated: str = field(default_factory=lambda: clock.now().isoformat(timespec="seconds"))

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
    def read_sitemaps(self) -> list[dict[str, Any]]:
        """The sitemap files read (not the places tried with nothing there)."""
        return [
            sm
            for sm in self.sitemaps
            if sm["fetched"] and sm["status"] in (200, None) and sm["kind"] not in (None, "unknown")
        ]

    @property
    def no_sitemap(self) -> bool:
        """True when no place tried gave a sitemap that could be read."""
        return not self.read_sitemaps

    @property
    def not_audited(self) -> int:
        """Entries past the first 50,000 of their file, over all files."""
        return sum(
            sm.get("not_audited") or 0 for sm in self.sitemaps if sm["kind"] != "sitemapindex"
        )

    @property
    def counts(self) -> dict[str, int]:
        counts = Counter(name for u in self.urls for name in (u["class"], *u["flags"]))
        counts["protocol"] = len(self.problems)
        return {name: counts.get(name, 0) for name in (*CLASSES, *FLAGS, "protocol")}

    @property
    def sitemaps_read(self) -> int:
        return len(self.read_sitemaps)

    @property
    def sections(self) -> dict[str, int]:
        """Entries per section of a set we published (by file name); empty without sections."""
        found: Counter[str] = Counter()
        for sm in self.sitemaps:
            match = _SECTION_FILE.match(sm["url"].rsplit("/", 1)[-1])
            if match and sm["kind"] != "sitemapindex":
                found[match["section"] or "(default)"] += sm["entries"] or 0
        return dict(found) if set(found) - {"(default)"} else {}

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


def build_report(site: str, ledger_path: Path, store_path: Path) -> AuditReport:
    ledger = Ledger(ledger_path)
    store = AuditStore(store_path)
    try:
        crawl = {row["key"]: row for row in ledger.rows()}
        rules = CrawlRules.of_ledger(ledger_path)
        sitemaps = store.sitemaps()
        listings = list(store.query("SELECT * FROM listings ORDER BY sitemap, line, id"))
        sums = "sum(alternates) hreflang_alternates, sum(media_alternates) media_alternates"
        sql = f"SELECT sitemap, {sums}, sum(images) images FROM listings GROUP BY sitemap"
        totals = {row["sitemap"]: row for row in store.query(sql)}
        for sm in sitemaps:
            for name in ("hreflang_alternates", "media_alternates", "images"):
                sm[name] = totals.get(sm["url"], {}).get(name) or 0
        fetched = {row["key"]: row for row in store.query("SELECT * FROM fetched")}
    finally:
        ledger.close()
        store.close()

    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    urls: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    for row in listings:
        if row["key"] is not None:
            by_key[row["key"]].append(row)
        else:
            urls.append(
                _url(row["loc"], "invalid-loc", row["scope"], None, False, [row["sitemap"]])
            )

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
        skipped = [r for r in rows if not r["audited"]]
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
        # no link led to is still an orphan.
        found_by_crawl = judged_by_crawl and not seeded(found)
        judged = found if judged_by_crawl else fetched.get(key)
        if found is not None and found["decision"] in d.RULED_OUT:
            # Met by the crawl, left out by its rules: neither fetched nor an orphan.
            cls, target = "excluded", None
            reason = ": ".join(filter(None, (found["decision"], found["reason"])))
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
        if not found_by_crawl and cls not in NOT_DEAD:
            url["flags"].append("dead-orphan")
        urls.append(url)

    indexable_found = [
        row for row in crawl.values() if row["decision"] == d.LISTED and not seeded(row)
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
            # An entry's problem names its URL; a file's names none.
            problems.append({**p, "sitemap": sm["url"], "url": p.get("url")})
    problems += _lastmod_problems([row for row in listings if row["audited"]], crawl)
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
    """A problem of *listing* (an entry; a file's has only ``sitemap``)."""
    return {
        "code": code,
        "message": message,
        "sitemap": listing["sitemap"],
        "line": listing.get("line"),
        "url": listing.get("url") or listing.get("loc"),
    }


def _lastmod_problems(
    listings: list[dict[str, Any]], crawl: dict[str, dict[str, Any]]
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
        at, header_at = lastmod_datetime(listed), lastmod_datetime(header)
        if len(listed) == 10:  # a date only: compared as dates
            stale, agrees = at.date() < header_at.date(), at.date() == header_at.date()
        else:
            stale, agrees = at < header_at, at == header_at
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
            message = f"all {len(values)} entries carry the same lastmod {values[0]}"
            problems.append(_problem("lastmod-uniform", message, {"sitemap": sitemap}))
    return problems


def write_report(
    report: AuditReport, directory: Path, html: bool = True, cap: int = DEFAULT_CAP
) -> list[Path]:
    """``audit.json``, ``index.html`` (with *html*) and the CSV files."""
    directory.mkdir(parents=True, exist_ok=True)
    data = report.to_json()
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    written = [write_html(directory / "audit.json", text)]  # atomically, as any text
    if html:
        written.append(write_html(directory / "index.html", render_audit(data, cap)))
    columns = ["url", "class", "reason", "target", "found_by_crawl", "sitemaps"]
    for name in (*CLASSES, *FLAGS):
        rows = [_csv_row(u) for u in report.urls if u["class"] == name or name in u["flags"]]
        written.append(_write_csv(directory / f"{name}.csv", columns, rows))
    problems = [
        [p["code"], p["message"], p["sitemap"], p["line"] or "", p["url"] or ""]
        for p in report.problems
    ]
    columns = ["code", "message", "sitemap", "line", "url"]
    written.append(_write_csv(directory / "problems.csv", columns, problems))
    return written


def _csv_row(u: dict[str, Any]) -> list[str]:
    found = "yes" if u["found_by_crawl"] else "no"
    return [u["url"], u["class"], u["reason"], u["target"] or "", found, " ".join(u["sitemaps"])]


def _write_csv(path: Path, columns: list[str], rows: list[list[Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(rows)
    return path
