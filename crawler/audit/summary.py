"""The audit's summary for the terminal, and the bar it may be asked to pass
(``--fail-under``, ``--fail-on``)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from crawler.audit.classes import CLASSES, FLAGS
from crawler.sitemaps.limits import MAX_URLS_PER_FILE

if TYPE_CHECKING:
    from crawler.audit.report import AuditReport


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


#: The extensions the sitemaps' entries carry, as the summary names them.
_EXTENSIONS = [
    ("hreflang alternates", "hreflang_alternates"),
    ("mobile alternates", "media_alternates"),
    ("images", "images"),
]


def format_summary(report: AuditReport, examples: int = 3) -> str:
    counts = report.counts
    fetched = report.read_sitemaps
    lines = []
    if report.no_sitemap:
        lines.append(f"no sitemap found; tried: {_tried(report.sitemaps)}")
    line = (
        f"sitemaps read: {report.sitemaps_read} "
        f"({sum(1 for s in report.sitemaps if s['problems'])} with problems), "
        f"entries: {sum(s['entries'] for s in fetched)}"
    )
    if not_audited := report.not_audited:
        line += f" ({not_audited:,} not audited: past the first {MAX_URLS_PER_FILE:,} of their"
        line += " file, the protocol's limit)"
    for label, key in _EXTENSIONS:
        if n := sum(s.get(key, 0) for s in fetched):
            line += f", {label}: {n}"
    lines.append(line)
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
        note = "  (listed, not found by the crawl, not indexable)" if name == "dead-orphan" else ""
        lines.append(f"{name:<18} {counts[name]:>6}{note}")
        for u in sample:
            detail = f" ({u['reason']})" if u["reason"] and name != "indexable" else ""
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
    return reasons + [f"{counts[name]} {name}" for name in fail_on if counts.get(name, 0)]
