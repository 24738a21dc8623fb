"""The small histories the HTML reports chart: ``runs.json`` and ``audit-history.json``.

Where each is kept, and how many entries: docs/reports.md. A JSON list, oldest first;
each report appends its own entry and carries the whole list, so the chart and the JSON
say the same. A missing or unreadable file is an empty history (a report never fails for
its chart); the file is rewritten atomically.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from crawler.publish.htmlpage import write_html

#: Runs kept in a crawl's runs.json (two months of nightly runs).
RUNS_KEPT = 60
#: Audits of a site kept in audit-history.json.
AUDITS_KEPT = 30


def read_history(path: Path) -> list[dict[str, Any]]:
    """The entries of *path*, oldest first; empty when missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [entry for entry in data if isinstance(entry, dict)] if isinstance(data, list) else []


def append_history(
    path: Path,
    entry: dict[str, Any],
    keep: int,
    group: str | None = None,
    key: str = "started",
) -> list[dict[str, Any]]:
    """Append *entry* to the history in *path*, keep the last *keep* entries of each
    *group* (the entries with the same value of that field: an audit's ``site``;
    None: one group), write it back atomically, and return *entry*'s group, oldest
    first, *entry* last. An entry of the group with the same *key* (time: a resumed
    run's start) is replaced."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for old in read_history(path):
        groups.setdefault(old.get(group) if group else None, []).append(old)
    mine_id = entry.get(group) if group else None
    mine = [e for e in groups.get(mine_id, []) if e.get(key) != entry.get(key)]
    groups[mine_id] = mine = [*mine, entry][-keep:]
    entries = sorted(
        (e for members in groups.values() for e in members[-keep:]),
        key=lambda e: str(e.get(key) or ""),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # the history is a convenience: the report goes on
        write_html(path, json.dumps(entries, ensure_ascii=False, indent=1) + "\n")
    return mine
