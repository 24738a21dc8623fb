"""The HTML reports' common parts: one self-contained page, its charts and tables.

What the pages promise (no network, every string from the site escaped as hostile input,
each figure marked with ``data-figure`` and ``data-value`` as the JSON has it, long lists
capped): docs/reports.md. Both pages (:mod:`crawler.publish.runhtml`,
:mod:`crawler.audit.html`) are built from these parts; the embedded JSON writes ``<``,
``>`` and ``&`` as ``\\u003c`` etc., so that no ``</script>`` can end its block early.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawler.core.defaults import setting_default

#: URLs shown per group by default (SITEMAP_REPORT_HTML_URLS).
DEFAULT_CAP: int = setting_default("SITEMAP_REPORT_HTML_URLS")

CSS = """
:root{--fg:#1d2327;--muted:#5f6b73;--bg:#fff;--panel:#f4f6f8;--line:#d9dee3;
--good:#1a7f37;--bad:#b42318;--warn:#9a6700;--a:#0b5cad;--b:#c2410c;--c:#6d28d9}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ec;--muted:#9aa5ad;--bg:#15191c;
--panel:#1f2529;--line:#333d44;--good:#4ac26b;--bad:#ff7b72;--warn:#d29922;--a:#58a6ff;
--b:#ffa657;--c:#bc8cff}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
main{max-width:1120px;margin:0 auto;padding:16px}
h1{font-size:1.45em;margin:.2em 0 .1em;overflow-wrap:anywhere}
h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.2em}
p,li{overflow-wrap:anywhere}
.muted{color:var(--muted)}
.decision{padding:10px 14px;border-radius:8px;background:var(--panel);
border-left:6px solid var(--muted);margin:12px 0;overflow-wrap:anywhere}
.decision.good{border-color:var(--good)}.decision.bad{border-color:var(--bad)}
.decision.warn{border-color:var(--warn)}
.decision strong{text-transform:uppercase;letter-spacing:.03em}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));gap:10px}
.figure{background:var(--panel);border-radius:8px;padding:10px 12px}
.figure .n{display:block;font-size:1.6em;font-weight:650;font-variant-numeric:tabular-nums}
.figure .l{color:var(--muted);font-size:.85em}
.table{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--panel);position:sticky;top:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.url{overflow-wrap:anywhere;word-break:break-all;min-width:14em}
details{margin:6px 0;border:1px solid var(--line);border-radius:8px;padding:4px 10px}
summary{cursor:pointer;padding:4px 0;font-weight:600}
.more{color:var(--muted);font-size:.9em;margin:6px 0}
svg.chart{width:100%;height:auto;max-width:600px;display:block;margin:6px 0}
svg.chart text{fill:var(--fg);font-size:13px}
svg.chart .axis{stroke:var(--line)}
svg.chart .bar{fill:var(--a)}svg.chart .bar2{fill:var(--b)}
.legend span{display:inline-block;margin-right:14px;font-size:.9em}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;
vertical-align:-1px}
.filters{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:center;margin:8px 0;
position:sticky;top:0;background:var(--bg);padding:6px 0;z-index:2}
.filters input[type=search]{flex:1 1 100%;padding:6px 8px;font-size:1em;border:1px solid
var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
.filters label{white-space:nowrap;font-size:.9em}
code{font-size:.9em;overflow-wrap:anywhere}
@media (max-width:600px){main{padding:10px}body{font-size:14px}
.figure .n{font-size:1.3em}th,td{padding:3px 5px}}
"""

#: The filter: a search box (``input[data-filter]``) hides the rows
#: (``tr[data-row]``) whose text lacks the words; a class box
#: (``input[data-class-toggle=NAME]``) hides the rows and groups with
#: ``data-class=NAME``. Each group's ``[data-shown]`` counts its visible rows.
SCRIPT = """
(function(){
var search=document.querySelector('input[data-filter]');
var boxes=Array.prototype.slice.call(document.querySelectorAll('input[data-class-toggle]'));
function apply(){
var words=search?search.value.toLowerCase().split(/\\s+/).filter(Boolean):[];
var off={};boxes.forEach(function(b){if(!b.checked)off[b.getAttribute('data-class-toggle')]=1;});
document.querySelectorAll('[data-group]').forEach(function(g){
var cls=g.getAttribute('data-class');var hidden=cls&&off[cls];var shown=0;
g.querySelectorAll('tr[data-row]').forEach(function(r){
var t=r.textContent.toLowerCase();
var ok=!hidden&&words.every(function(w){return t.indexOf(w)>=0;});
r.hidden=!ok;if(ok)shown++;});
g.hidden=!!hidden||(words.length>0&&shown===0);
var c=g.querySelector('[data-shown]');if(c)c.textContent=String(shown);
if(words.length&&shown&&g.tagName==='DETAILS')g.open=true;});}
if(search)search.addEventListener('input',apply);
boxes.forEach(function(b){b.addEventListener('change',apply);});
})();
"""


def esc(value: object) -> str:
    """*value* as HTML text or attribute value (None: empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def page(title: str, body: str, data: Any = None) -> str:
    """The whole document: *body* is trusted HTML built with :func:`esc`; *data*
    (JSON-able) is embedded as ``<script type="application/json" id="report-data">``,
    its ``<``, ``>`` and ``&`` escaped (see the module's docstring)."""
    embedded = ""
    if data is not None:
        text = json.dumps(data, ensure_ascii=False, default=str)
        text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        embedded = f'<script type="application/json" id="report-data">{text}</script>\n'
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        # No network at all: the page may load nothing from anywhere.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        f"{body}\n</main>\n{embedded}<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def write_html(path: Path, text: str) -> Path:
    """Write *text* to *path* atomically (a temporary name, then ``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def number(value: object) -> str:
    """A figure's text: the number as the JSON has it; an empty value is n/a."""
    return "n/a" if value is None else str(value)


def figure(path: str, value: object, label: str) -> str:
    """A figure tile: *value* (the number at *path* in the JSON) and its *label*."""
    return (
        f'<div class="figure"><span class="n"{_figure_attrs(path, value)}>{esc(number(value))}'
        f'</span><span class="l">{esc(label)}</span></div>'
    )


def inline_figure(path: str, value: object) -> str:
    """A figure inside a sentence or a table cell."""
    return f"<span{_figure_attrs(path, value)}>{esc(number(value))}</span>"


def _figure_attrs(path: str | None, value: object) -> str:
    return "" if path is None else f' data-figure="{esc(path)}" data-value="{esc(_raw(value))}"'


def _raw(value: object) -> str:
    return "null" if value is None else str(value)


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: Sequence[int] = (),
    url_columns: Sequence[int] = (0,),
    row_class: Sequence[str | None] | None = None,
    empty: str = "",
) -> str:
    """A table of pre-escaped cells (build them with :func:`esc`); with no row and an
    *empty* text, that text instead."""
    if empty and not rows:
        return f'<p class="muted">{esc(empty)}</p>'
    head = "".join(
        f"<th{' class=num' if i in numeric else ''}>{esc(h)}</th>" for i, h in enumerate(headers)
    )
    out = [f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>']
    for n, row in enumerate(rows):
        cls = row_class[n] if row_class is not None else None
        attr = f' data-class="{esc(cls)}"' if cls else ""
        cells = "".join(
            f'<td class="{"num" if i in numeric else "url" if i in url_columns else ""}">'
            f"{cell}</td>"
            for i, cell in enumerate(row)
        )
        out.append(f"<tr data-row{attr}>{cells}</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def group(
    cls: str,
    summary: str,
    shown: int,
    body: str,
    total: int,
    where: str,
    *,
    opened: bool = False,
    note: str = "",
) -> str:
    """A capped list in a ``<details>`` the filter knows (``data-group``): *summary*
    (trusted HTML), then *note* and how many rows are shown; *body*, and where the rest
    of the *total* is."""
    more = ""
    if total > shown:
        rest = "the other one is" if total - shown == 1 else f"the other {total - shown} are"
        more = f'<p class="more">{shown} of {total} shown; {rest} in {esc(where)}.</p>'
    return (
        f'<details data-group data-class="{esc(cls)}"{" open" if opened else ""}>'
        f'<summary>{summary} <span class="muted">{note}(<span data-shown>{shown}</span>'
        " shown)</span></summary>" + body + more + "</details>"
    )


def history_chart(
    history: Sequence[dict[str, Any]],
    time_key: str,
    lines: Sequence[tuple[str, str]],
    columns: Sequence[tuple[str, str, bool]],
    *,
    title: str,
    summary: str,
    percent: bool = False,
) -> str:
    """The kept runs (or audits), oldest first, as a line chart *title*d, one line per
    ``(name, key)`` of *lines*; then newest first in a ``<details>`` opened by *summary*:
    each row's *time_key*, then per column ``(heading, key, is a figure)`` its value, a
    figure marked ``history.{i}.{key}``."""
    chart = line_chart(
        [when(h.get(time_key)) for h in history],
        [
            (name, [h.get(key) for h in history], "abc"[n], f"history.{{i}}.{key}")
            for n, (name, key) in enumerate(lines)
        ],
        title=title,
        percent=percent,
    )
    rows = [
        [esc(when(h.get(time_key)))]
        + [
            inline_figure(f"history.{i}.{key}", h.get(key)) if figure else esc(h.get(key))
            for _, key, figure in columns
        ]
        for i, h in reversed(list(enumerate(history)))
    ]
    return (
        chart
        + f"<details><summary>{summary}</summary>"
        + table(
            [time_key, *(heading for heading, _, _ in columns)],
            rows,
            numeric=tuple(n for n, (_, _, figure) in enumerate(columns, 1) if figure),
            url_columns=(),
        )
        + "</details>"
    )


def when(iso: object) -> str:
    """An ISO 8601 time as a person reads it, in UTC, to the second:
    "2026-11-25 22:56:44 UTC" (None: n/a; text that is no time: as it is)."""
    if not iso:
        return "n/a"
    try:
        moment = datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def span(seconds: float) -> str:
    """A duration as a person reads it: "26.0 s", "4 min 12 s", "2 h 5 min"."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def bar_chart(bars: Sequence[tuple[str, float, str | None]], *, title: str, unit: str = "") -> str:
    """A horizontal bar chart: ``(label, value, figure path or None)`` per bar."""
    if not bars:
        return '<p class="muted">Nothing to chart.</p>'
    row, label_w, width = 24, 150, 480
    top = max(max(v for _, v, _ in bars), 1)
    height = row * len(bars) + 8
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{esc(title)}</title>'
    ]
    span = width - label_w - 70
    for i, (label, value, path) in enumerate(bars):
        y = 4 + i * row
        w = max(1.0, span * value / top) if value else 0
        short = label if len(label) <= 20 else label[:19] + "\u2026"
        parts.append(
            f'<g data-bar="{esc(label)}">'
            f"<title>{esc(label)}: {esc(number(value))}{esc(unit)}</title>"
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">'
            f"{esc(short)}</text>"
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{w:.1f}" '
            f'height="{row - 8}" rx="2"/>'
            f'<text x="{label_w + w + 5:.1f}" y="{y + 15}"{_figure_attrs(path, value)}>'
            f"{esc(number(value))}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None], str, str]],
    *,
    title: str,
    percent: bool = False,
) -> str:
    """A line chart over *labels* (the runs, oldest first): ``(name, values, colour
    a, b or c, path)`` per series; each point is marked ``data-point`` with *path*
    (``{i}``: its index) and ``data-value``, as a figure is (its text is a tooltip,
    so the figures themselves are in the table beside the chart)."""
    if not labels:
        return '<p class="muted">No history yet.</p>'
    width, height, left, right, top_pad, bottom = 480, 170, 44, 14, 12, 32
    values = [v for _, vs, _, _ in series for v in vs if v is not None]
    top = 100.0 if percent else max(max(values, default=1), 1)
    n = len(labels)
    span_x = width - left - right
    span_y = height - top_pad - bottom

    def x(i: int) -> float:
        return left + (span_x * i / (n - 1) if n > 1 else span_x / 2)

    def y(v: float) -> float:
        return top_pad + span_y * (1 - v / top)

    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{esc(title)}</title>'
        f'<line class="axis" x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}"/>'
        f'<line class="axis" x1="{left}" y1="{top_pad}" x2="{left}" y2="{y(0):.1f}"/>'
        f'<text x="{left - 4}" y="{top_pad + 4}" text-anchor="end">'
        f"{'100%' if percent else esc(number(top))}</text>"
        f'<text x="{left - 4}" y="{y(0) + 4:.1f}" text-anchor="end">0</text>'
    ]
    for i in sorted({0, n - 1}):
        anchor = "start" if i == 0 and n > 1 else "end" if n > 1 else "middle"
        parts.append(
            f'<text x="{x(i):.1f}" y="{height - bottom + 18}" text-anchor="{anchor}">'
            f"{esc(labels[i][:16].replace('T', ' '))}</text>"
        )
    for name, vals, css, path in series:
        color = f"var(--{css})"
        points = [(x(i), y(v)) for i, v in enumerate(vals) if v is not None]
        if len(points) > 1:
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                + " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
                + '"/>'
            )
        for i, v in enumerate(vals):
            if v is None:
                continue
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.5" fill="{color}" '
                f'data-point="{esc(path.format(i=i))}" data-value="{esc(_raw(v))}">'
                f"<title>{esc(labels[i])}: {esc(name)} {esc(number(v))}</title></circle>"
            )
    parts.append("</svg>")
    legend = "".join(
        f'<span><i style="background:var(--{css})"></i>{esc(name)}</span>'
        for name, _, css, _ in series
    )
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def link(url: str | None) -> str:
    """A URL as a link when it is http(s) (a ``javascript:`` address from a hostile
    site stays text), escaped either way."""
    if not url:
        return '<span class="muted">-</span>'
    if url.lower().startswith(("http://", "https://")):
        return f'<a href="{esc(url)}" rel="noopener noreferrer nofollow">{esc(url)}</a>'
    return f"<code>{esc(url)}</code>"
