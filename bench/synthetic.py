"""A deterministic synthetic static site of N HTML pages, for speed and scale runs.

    python bench/synthetic.py --pages 20000 --out /tmp/site

Page ``i`` is node ``i`` of a complete 10-ary tree in breadth-first order (the
parent of ``i`` is ``(i - 1) // 10``). A node with children is a directory with an
``index.html`` and is linked as ``dir/``; a leaf is ``parent/pI.html`` (``/p3/p34/p345.html``:
no path segment repeats, which a crawler's trap heuristics could take for a loop). Every page
links (about 20 links) to the home page, the first top-level sections, its parent,
its children, its two neighbours on each side in BFS order and two pseudo-random
pages, all as root-relative URLs, so every page is reachable from ``/index.html``
(through its parent) within about ``log10(N)`` links; the neighbour links also make
long chains, which a depth-first crawl follows first. Every seventh page carries a
``rel=canonical`` to itself; no page is ``noindex``. Serve it with nginx
``root DIR; index index.html;``.

The pages are written one at a time, in BFS order (a parent's directory exists
before its children are written), so memory stays flat for 1,000,000 pages.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

FANOUT = 10
SECTIONS = 5  # top-level sections in every page's nav
FILLER = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. "
)


def has_children(i: int, n: int) -> bool:
    return FANOUT * i + 1 < n


def url_of(i: int, n: int) -> str:
    """Root-relative URL of page *i* (``/`` for the home page)."""
    parts = []
    node = i
    while node > 0:
        parts.append(f"p{node}")
        node = (node - 1) // FANOUT
    path = "/" + "/".join(reversed(parts))
    if i == 0:
        return "/"
    return path + "/" if has_children(i, n) else path + ".html"


def file_of(i: int, n: int) -> str:
    """Path of page *i* relative to the site root."""
    url = url_of(i, n)
    return (url + "index.html" if url.endswith("/") else url).lstrip("/")


def links_of(i: int, n: int) -> list[int]:
    targets = [0, *range(1, min(SECTIONS + 1, n))]
    if i > 0:
        targets.append((i - 1) // FANOUT)
    targets.extend(range(FANOUT * i + 1, min(FANOUT * i + FANOUT + 1, n)))
    targets.extend(j for j in (i - 2, i - 1, i + 1, i + 2) if 0 <= j < n)
    targets.append((i * 7919 + 13) % n)
    targets.append((i * 104729 + 101) % n)
    return targets


def page(i: int, n: int) -> str:
    url = url_of(i, n)
    canonical = f'<link rel="canonical" href="{url}">\n' if i % 7 == 0 else ""
    items = "".join(f'<li><a href="{url_of(j, n)}">Page {j}</a></li>\n' for j in links_of(i, n))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f"<title>Page {i}</title>\n{canonical}</head>\n<body>\n"
        f"<h1>Page {i}</h1>\n<p>{FILLER * (1 + i % 3)}</p>\n<ul>\n{items}</ul>\n"
        "</body></html>\n"
    )


def write_site(out: Path, n: int) -> None:
    """Write the *n* pages under *out* (created; existing pages are overwritten)."""
    out.mkdir(parents=True, exist_ok=True)
    root = str(out)
    for i in range(n):
        rel = file_of(i, n)
        if has_children(i, n) and i > 0:
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(page(i, n))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20000, help="number of pages (default 20000)")
    parser.add_argument("--out", type=Path, required=True, help="site root to write")
    args = parser.parse_args()
    if args.pages < 1:
        parser.error("--pages must be at least 1")
    started = time.perf_counter()
    write_site(args.out, args.pages)
    print(
        f"{args.pages} pages in {args.out} ({time.perf_counter() - started:.1f} s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
