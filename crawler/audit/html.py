"""``index.html``: the audit report for people, beside ``audit.json`` (docs/reports.md).

Rendered from the same dict ``audit.json`` is written from
(:meth:`crawler.audit.report.AuditReport.to_json`), so every figure is the JSON's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from crawler.audit.classes import MEANINGS
from crawler.publish import htmlpage as h

#: The table of the past audits: (heading, key, is a figure) per column.
_HISTORY_COLUMNS = (
    ("coverage %", "coverage", True),
    ("listed indexable", "covered", True),
    ("indexable found", "indexable_found", True),
    ("URLs", "listed", True),
    ("problems", "problems", True),
)


def render_audit(data: dict[str, Any], cap: int = h.DEFAULT_CAP) -> str:
    """The page of the audit whose ``audit.json`` is *data*."""
    parts = [_head(data), _coverage(data), _classes(data, cap), _problems(data, cap)]
    parts += [_sitemaps(data), _footer()]
    summary = {k: v for k, v in data.items() if k not in ("urls", "problems")}
    return h.page(f"Sitemap audit: {data['site']}", "\n".join(parts), summary)


def _head(data: dict[str, Any]) -> str:
    out = [
        f"<h1>Sitemap audit: {h.esc(data['site'])}</h1>",
        f'<p class="muted">Generated {h.esc(h.when(data["generated"]))}.</p>',
    ]
    if data["no_sitemap"]:
        out.append(
            '<div class="decision bad"><strong>no sitemap</strong> No place tried gave a '
            "sitemap that could be read (the sitemap files below say what was there).</div>"
        )
    if data["not_audited"]:
        out.append(
            '<div class="decision warn">'
            f"{h.inline_figure('not_audited', data['not_audited'])} entries were not audited: "
            "past the first 50,000 of their file, the protocol's limit.</div>"
        )
    return "".join(out)


def _coverage(data: dict[str, Any]) -> str:
    cov = data["coverage"]
    counts: dict[str, int] = data["counts"]
    tiles = [
        h.figure("coverage.percent", cov["percent"], "coverage, %"),
        h.figure("coverage.covered", cov["covered"], "indexable pages listed"),
        h.figure("coverage.indexable_found", cov["indexable_found"], "indexable pages found"),
        h.figure("counts.missing", counts["missing"], "missing from the sitemaps"),
        h.figure(
            "counts.dead-orphan",
            counts["dead-orphan"],
            "dead orphans (flag dead-orphan, dead-orphan.csv)",
        ),
        h.figure("counts.duplicate-listing", counts["duplicate-listing"], "listed twice"),
        h.figure("counts.protocol", counts["protocol"], "protocol problems"),
    ]
    history: list[dict[str, Any]] = data.get("history") or []
    last = "the last audit" if len(history) == 1 else f"the last {len(history)} audits"
    return (
        '<h2>Coverage</h2><p class="muted">The share of the indexable pages the crawl '
        "found that the sitemaps list.</p>"
        f'<div class="figures">{"".join(tiles)}</div>'
        f"<h2>Coverage over {last}</h2>"
        + h.history_chart(
            history,
            "generated",
            [("coverage %", "coverage")],
            _HISTORY_COLUMNS,
            title="Coverage over the audits of this site",
            summary="The audits, newest first",
            percent=True,
        )
    )


def _classes(data: dict[str, Any], cap: int) -> str:
    counts: dict[str, int] = data["counts"]
    urls: list[dict[str, Any]] = data["urls"]
    names = [name for name in MEANINGS if counts.get(name)]
    bars = [(name, counts[name], f"counts.{name}") for name in names]
    boxes = "".join(
        f'<label><input type="checkbox" data-class-toggle="{h.esc(name)}" checked> '
        f"{h.esc(name)} ({counts[name]})</label>"
        for name in [*names, *(["protocol"] if counts.get("protocol") else [])]
    )
    out = [
        "<h2>Classes</h2>",
        h.bar_chart(bars, title="Listed URLs by class"),
        '<div class="filters"><input type="search" data-filter placeholder="Filter: words in '
        'URL, reason, target or sitemap" aria-label="filter the URLs">' + boxes + "</div>",
    ]
    by_class: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for u in urls:
        members = by_class.get(u["class"])
        if members is not None and len(members) < cap:
            members.append(u)
    for name in names:
        rows = [
            [
                h.link(u["url"]),
                h.esc(u["reason"]),
                h.link(u["target"]) if u["target"] else "",
                "yes" if u["found_by_crawl"] else "no",
                "<br>".join(h.link(s) for s in u["sitemaps"]),
                h.esc(", ".join(u["flags"])),
            ]
            for u in by_class[name]
        ]
        body = h.table(
            ["URL", "reason", "target", "found by crawl", "sitemaps", "flags"],
            rows,
            url_columns=(0, 2, 4),
            row_class=[name] * len(rows),
        )
        count = counts[name]
        summary = f"{h.esc(name)}: {h.inline_figure(f'counts.{name}', count)}"
        where, note = f"audit.json and {name}.csv", f"{h.esc(MEANINGS[name])} "
        opened = name != "indexable" and count <= 200
        out.append(h.group(name, summary, len(rows), body, count, where, opened=opened, note=note))
    if not names:
        out.append('<p class="muted">No URL to classify.</p>')
    return "".join(out)


def _problems(data: dict[str, Any], cap: int) -> str:
    problems: list[dict[str, Any]] = data["problems"]
    rows = [
        [
            h.esc(p["code"]),
            h.esc(p["message"]),
            h.link(p["sitemap"]),
            h.esc(p["line"] if p["line"] is not None else ""),
            h.link(p["url"]) if p["url"] else "",
        ]
        for p in problems[:cap]
    ]
    codes = Counter(p["code"] for p in problems)
    out = f"<h2>Protocol problems: {h.inline_figure('problems', len(problems))}</h2>"
    if not problems:
        return out + '<p class="muted">None.</p>'
    body = h.table(
        ["code", "message", "sitemap", "line", "entry URL"],
        rows,
        numeric=(3,),
        url_columns=(2, 4),
        row_class=["protocol"] * len(rows),
    )
    where = "audit.json and problems.csv"
    return (
        out
        + h.bar_chart(
            [(c, n, None) for c, n in codes.most_common()], title="Protocol problems by code"
        )
        + h.group("protocol", "Problems", len(rows), body, len(problems), where, opened=True)
    )


def _sitemaps(data: dict[str, Any]) -> str:
    sitemaps: list[dict[str, Any]] = data["sitemaps"]
    rows = [
        [
            h.link(sm["url"]),
            h.esc(sm["via"]),
            h.esc(sm["kind"] or "-"),
            h.esc(sm["status"] if sm["status"] is not None else "-"),
            h.inline_figure(f"sitemaps.{i}.entries", sm["entries"]),
            h.esc(len(sm["problems"])),
            h.esc(sm.get("not_audited") or 0),
        ]
        for i, sm in enumerate(sitemaps)
    ]
    sections: dict[str, int] = data.get("sections") or {}
    # The files read, as the command line counts them; the places tried with
    # nothing there (a 404 at /sitemap.xml) are rows of the table, not files.
    read = data.get("sitemaps_read", len(sitemaps))
    tried = len(sitemaps) - read
    return (
        f"<h2>Sitemap files: {h.inline_figure('sitemaps_read', read)}</h2>"
        + (
            f'<p class="muted">Read {h.number(read)}; {h.number(tried)} other '
            f"{'place' if tried == 1 else 'places'} tried gave none (the status or the "
            "problems say why).</p>"
            if tried
            else ""
        )
        + '<div data-group data-class="sitemaps">'
        + h.table(
            ["sitemap", "found via", "kind", "status", "entries", "problems", "not audited"],
            rows,
            numeric=(3, 4, 5, 6),
        )
        + "</div>"
        + (
            "<h2>Sections</h2>"
            + h.bar_chart(
                [(n, c, f"sections.{n}") for n, c in sections.items()],
                title="Entries per section",
            )
            if sections
            else ""
        )
    )


def _footer() -> str:
    return (
        '<p class="muted">Written by sitemap-crawler audit beside audit.json, from the same '
        "figures; each class's full list is also in its CSV file.</p>"
    )
