"""``report.html``: a run's report for people, beside ``report.json`` (docs/reports.md).

Rendered from the same :class:`crawler.publish.report.RunModel` as ``report.json``, after
it: the lengths of the streamed lists are known then.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from crawler.core.decisions import OFF_HOST, STATUS
from crawler.core.defaults import setting_default
from crawler.publish.htmlpage import (
    DEFAULT_CAP,
    bar_chart,
    esc,
    figure,
    group,
    history_chart,
    inline_figure,
    link,
    page,
    span,
    table,
    when,
)
from crawler.publish.report import DEFAULT_SECTION, Stream

if TYPE_CHECKING:
    from crawler.ledger.ledger import Ledger
    from crawler.publish.report import RunModel

#: How each outcome reads, and its colour.
OUTCOMES = {
    "published": ("good", "The new sitemap set was published."),
    "crawled": ("good", "The crawl finished; publishing is off."),
    "refused": ("bad", "Nothing was published: the run looks broken; the previous set is kept."),
    "interrupted": ("warn", "The run was interrupted; nothing was published."),
    "failed": ("bad", "The run failed; nothing was published."),
    "output-error": ("bad", "The set could not be written; nothing was published."),
}

#: The figure tiles: (field, label); the changes are their lists' lengths, shown when known.
_FIGURES = (
    ("pages_fetched", "pages fetched"),
    ("conditional_requests", "asked conditionally"),
    ("not_modified", "not modified (304)"),
    ("listed", "listed"),
    ("excluded_total", "excluded"),
    ("other_hosts", "links to other hosts"),
    ("queued", "not fetched yet"),
    ("added", "added"),
    ("removed", "removed"),
    ("lastmod_changes", "lastmod changes"),
    ("files_written", "files written"),
    ("files_unchanged", "files unchanged"),
)
_CHANGES = ("added", "removed", "lastmod_changes")
_RICH = (
    ("alternates", "hreflang alternates"),
    ("images", "images"),
    ("videos", "videos"),
    ("news", "news articles"),
    ("problems", "left out"),
)

_NO_PAGE = "No page was fetched this run."

#: Where the full lists are, for a capped group.
IN_JSON = "report.json"
IN_LEDGER = (
    "the ledger (ledger.sqlite, or ledger.failed.sqlite after a run that did not publish;"
    " sitemap-crawler export writes it as JSON lines)"
)
IN_LEDGER_LISTED = (
    "the ledger (ledger.sqlite, or sitemap-crawler export: the rows whose decision is listed)"
)


def render_run(model: RunModel, ledger: Ledger, cap: int = DEFAULT_CAP) -> str:
    """The page of the run *model* describes; *ledger* gives the listed and excluded
    URLs."""
    f = model.fields
    parts = [_head(f), _figures(model), _schedule(f), _changes(model, cap)]
    parts += [_listed(f, ledger, cap)]
    parts += [_excluded(f, ledger, cap), _other_hosts(f, ledger, cap)]
    parts += [_statuses(f), _depths(f), _costly(f), _rich(model, cap), _history(f), _footer()]
    data = {k: v for k, v in f.items() if not isinstance(v, Stream)}
    data["lengths"] = dict(model.lengths)
    return page(f"Crawl report: {f['start_url'] or ''}", "\n".join(parts), data)


def _head(f: dict[str, Any]) -> str:
    tone, sentence = OUTCOMES.get(f["outcome"], ("warn", ""))
    if f["published"] and f.get("set_unchanged"):
        sentence = (
            "The sitemap set is unchanged since the last run: no file was rewritten"
            f" (first published {when(f.get('published_since'))})."
        )
    started, finished = when(f["started"]), when(f["finished"])
    if started[:10] == finished[:10]:
        finished = finished[11:]  # the same day: the time says it
    seconds = f["duration_seconds"]
    took = inline_figure("duration_seconds", seconds) + " s"
    if seconds is not None and seconds >= 60:
        took = f"{span(seconds)} ({took})"
    return (
        f"<h1>Crawl report: {esc(f['start_url'])}</h1>"
        f'<p class="muted">Started {esc(started)}, finished {esc(finished)}, after {took}.</p>'
        f'<div class="decision {tone}" data-outcome="{esc(f["outcome"])}">'
        f"<strong>{esc(f['outcome'])}</strong> {esc(sentence)}<br>"
        f"<span>Why: {esc(f['message'])}</span>"
        + (f"<br><span>Index: <code>{esc(f['index'])}</code></span>" if f["index"] else "")
        + "</div>"
        + (
            ""
            if f.get("tls_verified", True)
            else '<p class="decision warn">TLS certificates were NOT verified (--insecure).</p>'
        )
    )


def _figures(model: RunModel) -> str:
    f, n = model.fields, model.lengths
    tiles = [
        figure(name, n.get(name, 0) if name in _CHANGES else f[name], label)
        for name, label in _FIGURES
        if name not in _CHANGES or f[name] is not None
    ]
    return (
        '<h2>Figures</h2><div class="figures">'
        + "".join(tiles)
        + '</div><div class="filters"><input type="search" data-filter '
        'placeholder="Filter every URL list below (words in URL, reason or target)" '
        'aria-label="filter the URL lists"></div>'
    )


#: The revisit schedule's figures (report.json ``schedule``): (field, label).
_SCHEDULE = (
    ("verified", "verified tonight"),
    ("changed", "found changed"),
    ("kept", "not due (kept)"),
    ("requests_saved", "requests saved"),
    ("signalled", "named by change signals"),
    ("carried", "due, left for the next night"),
)


def _schedule(f: dict[str, Any]) -> str:
    """What the revisit schedule verified tonight, and what it saved (docs/nightly.md)."""
    counts = f.get("schedule")
    if not counts:
        return ""
    if counts["full_night"]:
        note = f"A full night, every known URL verified: {counts['full_night']}."
    else:
        note = (
            "URLs are verified when due (at least once every "
            f"{setting_default('SITEMAP_REVISIT_MAX'):g} days by default) or when a change "
            "signal names them; the others keep their previous record, without a request."
        )
    tiles = [figure(f"schedule.{name}", counts[name], label) for name, label in _SCHEDULE]
    return (
        '<h2>Revisit schedule</h2><div class="figures">'
        + "".join(tiles)
        + f'</div><p class="muted">{esc(note)}</p>'
    )


def _changes(model: RunModel, cap: int) -> str:
    f, n = model.fields, model.lengths
    title = "Since the last run"
    if f["outcome"] == "refused":
        title = "What the refused set would have changed"
    out = [f"<h2>{esc(title)}</h2>"]
    if f["added"] is None:
        return out[0] + (
            '<p class="muted">Nothing to compare: the run neither published nor finished '
            "its crawl.</p>"
        )
    if f["first_run"]:
        out.append('<p class="muted">The first run: every listed URL is new.</p>')
    for name, label in (("added", "Added"), ("removed", "Removed")):
        total = n.get(name, 0)
        rows = [[link(url)] for url in islice(f[name](), cap)]
        body = table(["URL"], rows, empty="None.")
        summary = f"{label}: {inline_figure(name, total)} URLs"
        out.append(group(name, summary, len(rows), body, total, IN_JSON, opened=0 < total <= 50))
    total = n.get("lastmod_changes", 0)
    rows = [
        [link(c["url"]), esc(c["old"] or "-"), esc(c["new"] or "-")]
        for c in islice(f["lastmod_changes"](), cap)
    ]
    body = table(["URL", "old lastmod", "new lastmod"], rows, empty="None.")
    summary = f"Lastmod changes: {inline_figure('lastmod_changes', total)}"
    out.append(group("lastmod", summary, len(rows), body, total, IN_JSON, opened=0 < total <= 50))
    return "".join(out)


def _listed(f: dict[str, Any], ledger: Ledger, cap: int) -> str:
    """What is in the sitemap: the listed URLs, by section when there are sections,
    each group capped, the rest in the ledger."""
    sections: dict[str, int] = f["sections"]
    groups = (
        [(name, count, f"sections.{name}") for name, count in sections.items()]
        if sections
        else [(DEFAULT_SECTION, f["listed"], "listed")]
    )
    out = ["<h2>Listed URLs</h2>"]
    if not f["listed"]:
        return out[0] + '<p class="muted">None.</p>'
    for name, count, path in groups:
        rows = [
            [link(loc), esc(lastmod or "-")]
            for loc, lastmod in ledger.listed_in_section(
                None if name == DEFAULT_SECTION else name, cap
            )
        ]
        label = f"Section {name}" if sections else "Listed"
        if sections and name == DEFAULT_SECTION:
            label = "The default section"
        body = table(["URL", "lastmod"], rows, empty="None.")
        summary = f"{esc(label)}: {inline_figure(path, count)} URLs"
        opened = 0 < count <= 50
        out.append(
            group("listed", summary, len(rows), body, count, IN_LEDGER_LISTED, opened=opened)
        )
    return "".join(out)


def _other_hosts(f: dict[str, Any], ledger: Ledger, cap: int) -> str:
    """The links to other hosts: not the site's pages, so apart from its exclusions."""
    count = f["other_hosts"]
    out = "<h2>Links to other hosts</h2>"
    if not count:
        return out + '<p class="muted">None.</p>'
    rows = [
        [link(r["url"]), link(r["referrer"]) if r["referrer"] else ""]
        for r in ledger.decided(OFF_HOST, cap)
    ]
    summary = f"Links to other hosts: {inline_figure('other_hosts', count)}"
    body = table(["URL", "found on"], rows, url_columns=(0, 1))
    return (
        out
        + '<p class="muted">Not crawled: the crawl stays on the site\'s host.</p>'
        + group(OFF_HOST, summary, len(rows), body, count, IN_LEDGER)
    )


#: How a decision's group is called in the report, where its name says too little.
_LABELS = {STATUS: "broken links"}
_NOTES = {STATUS: "404s and other errors, each with a page that links to it "}


def _excluded(f: dict[str, Any], ledger: Ledger, cap: int) -> str:
    excluded: dict[str, int] = f["excluded"]
    bars = [
        (_LABELS.get(name, name), count, f"excluded.{name}")
        for name, count in sorted(excluded.items(), key=lambda kv: (-kv[1], kv[0]))
        if count and name != OFF_HOST
    ]
    out = [
        "<h2>Excluded, by decision</h2>",
        bar_chart(bars, title="Excluded URLs by decision"),
    ]
    for label, count, key in bars:
        name = key.removeprefix("excluded.")
        rows = [
            [
                link(r["url"]),
                esc(r["reason"]),
                link(r["target"]) if r["target"] else "",
                esc(r["status"] if r["status"] is not None else ""),
                link(r["referrer"]) if r["referrer"] else "",
            ]
            for r in ledger.decided(name, cap)
        ]
        body = table(["URL", "reason", "target", "status", "found on"], rows, url_columns=(0, 2, 4))
        summary = f"{esc(label)}: {inline_figure(key, count)}"
        note = _NOTES.get(name, "")
        out.append(group(name, summary, len(rows), body, count, IN_LEDGER, note=note))
    return "".join(out)


def _statuses(f: dict[str, Any]) -> str:
    codes: dict[str, int] = f["status_codes"]
    bars = [(code, count, f"status_codes.{code}") for code, count in codes.items()]
    return "<h2>Status codes</h2>" + bar_chart(bars, title="URLs by HTTP status")


def _depths(f: dict[str, Any]) -> str:
    depths: dict[str, dict[str, int]] = f["depths"]
    rows = [
        [
            esc(depth),
            inline_figure(f"depths.{depth}.urls", d["urls"]),
            inline_figure(f"depths.{depth}.listed", d["listed"]),
        ]
        for depth, d in depths.items()
    ]
    bars = [(f"depth {depth}", d["urls"], f"depths.{depth}.urls") for depth, d in depths.items()]
    return (
        "<h2>Depth</h2>"
        + bar_chart(bars, title="URLs found at each link depth")
        + table(["depth", "URLs", "listed"], rows, numeric=(0, 1, 2), url_columns=())
    )


def _costly(f: dict[str, Any]) -> str:
    out = []
    for key, unit, title in (("slowest", "seconds", "Slowest"), ("largest", "bytes", "Largest")):
        rows = [
            [link(p["url"]), esc(p["decision"]), inline_figure(f"{key}.{i}.{unit}", p[unit])]
            for i, p in enumerate(f[key])
        ]
        out.append(f"<h2>{title} pages</h2>")
        out.append(table(["URL", "decision", unit], rows, numeric=(2,), empty=_NO_PAGE))
    return "".join(out)


def _rich(model: RunModel, cap: int) -> str:
    f = model.fields
    out = []
    sections: dict[str, int] = f["sections"]
    if sections:
        out.append("<h2>Sections</h2>")
        out.append(
            bar_chart(
                [(name, n, f"sections.{name}") for name, n in sections.items()],
                title="Listed URLs per section",
            )
        )
    rich: dict[str, int] = f["rich"]
    if any(rich.values()):
        out.append('<h2>Rich entries</h2><div class="figures">')
        out += [figure(f"rich.{name}", rich[name], label) for name, label in _RICH]
        out.append("</div>")
        if total := model.lengths.get("rich_problems", 0):
            rows = [
                [link(p["url"]), "<br>".join(esc(x) for x in p["problems"])]
                for p in islice(f["rich_problems"](), cap)
            ]
            summary = f"Pages with rich data left out: {inline_figure('rich_problems', total)}"
            body = table(["URL", "left out"], rows)
            out.append(group("rich", summary, len(rows), body, total, IN_JSON))
    return "".join(out)


def _history(f: dict[str, Any]) -> str:
    runs: list[dict[str, Any]] = f["history"]
    last = "the last run" if len(runs) == 1 else f"the last {len(runs)} runs"
    return f"<h2>History: {last}</h2>" + history_chart(
        runs,
        "started",
        [("listed", "listed"), ("excluded", "excluded")],
        [
            ("outcome", "outcome", False),
            ("listed", "listed", True),
            ("excluded", "excluded", True),
            ("fetched", "pages_fetched", True),
        ],
        title="Listed and excluded URLs over the runs",
        summary="The runs, newest first",
    )


def _footer() -> str:
    return (
        '<p class="muted">Written by sitemap-crawler beside report.json, from the same '
        "figures. Every URL's decision is in the ledger (ledger.sqlite) of the state "
        "directory; sitemap-crawler export writes it as JSON lines.</p>"
    )
