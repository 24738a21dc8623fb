"""Recall and precision of a crawl against a file-based reachability count.

For a static site served from a directory, the pages a sitemap should list can be
counted without HTTP: start at the start file, follow ``<a href>``, ``<area href>``
and ``<link rel=alternate hreflang>`` links (not ``rel=nofollow``) that resolve to
files in the tree, and keep the HTML files that are not ``noindex`` (a page whose
``<meta http-equiv=refresh>`` is instant is a redirect: its target is followed). ``file:``
canonicals (as in Debian's python3-doc) are invalid and so ignored, as the crawler
must ignore them. This is written independently of the crawler (plain lxml and
os.path), so the two can check each other.

    python bench/reachability.py --root /usr/share/doc/python3/html \\
        --url http://127.0.0.1:8931/ --ledger public.sitemap-state/ledger.sqlite \\
        [--base-url https://docs.python.org/3/]

Prints the expected count, the listed count, recall and precision, and the URLs
that differ. Exit status 0 when both are 100%, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from lxml import html as lxml_html


def file_for(url: str, site: str, root: Path) -> Path | None:
    """The file nginx would serve for *url* (``dir/`` -> ``dir/index.html``)."""
    if not url.startswith(site):
        return None
    path = unquote(urlsplit(url).path)
    candidate = root / path.lstrip("/")
    if path.endswith("/"):
        candidate = candidate / "index.html"
    try:
        candidate = candidate.resolve()
        candidate.relative_to(root)
    except (OSError, ValueError):
        return None
    return candidate if candidate.is_file() else None


def is_noindex(doc: lxml_html.HtmlElement) -> bool:
    for meta in doc.iter("meta"):
        if (meta.get("name") or "").lower() in {"robots", "googlebot"}:
            content = (meta.get("content") or "").lower()
            if "noindex" in content or "none" in content:
                return True
    return False


def instant_refresh(doc: lxml_html.HtmlElement) -> str | None:
    """The target of a ``<meta http-equiv=refresh content="0; url=...">``: a redirect
    to search engines, so the page is not indexable and its target is followed."""
    for meta in doc.iter("meta"):
        if (meta.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        delay, _, rest = (meta.get("content") or "").partition(";")
        try:
            if float(delay.strip() or "x") > 0:
                return None
        except ValueError:
            return None
        key, _, target = rest.strip().partition("=")
        if key.strip().lower() == "url" and target.strip().strip("'\""):
            return target.strip().strip("'\"")
    return None


def reachable(root: Path, start_url: str) -> dict[str, Path]:
    """Indexable HTML files reachable from *start_url*, by the URL first seen."""
    site = f"{urlsplit(start_url).scheme}://{urlsplit(start_url).netloc}/"
    root = root.resolve()
    seen_files: set[Path] = set()
    found: dict[str, Path] = {}
    queue = deque([start_url])
    while queue:
        url = queue.popleft()
        path = file_for(url, site, root)
        if path is None or path in seen_files or path.suffix not in {".html", ".htm"}:
            continue
        seen_files.add(path)
        doc = lxml_html.fromstring(path.read_bytes())
        refresh = instant_refresh(doc)
        if refresh is not None:
            queue.append(urljoin(url, refresh).split("#")[0])
            continue
        if not is_noindex(doc):
            found[url] = path
        base = url
        for b in doc.iter("base"):
            if b.get("href"):
                base = urljoin(url, b.get("href").strip())
                break
        for el in doc.iter("a", "area", "link"):
            href = el.get("href")
            if not href:
                continue
            rels = (el.get("rel") or "").lower().split()
            if el.tag == "link" and not ("alternate" in rels and el.get("hreflang")):
                continue
            if "nofollow" in rels:
                continue
            target = urljoin(base, href.strip()).split("#")[0]
            queue.append(target)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--url", required=True)
    parser.add_argument("--ledger", required=True, type=Path)
    parser.add_argument("--base-url")
    args = parser.parse_args()
    root = args.root.resolve()
    site = f"{urlsplit(args.url).scheme}://{urlsplit(args.url).netloc}/"
    expected_files = set(reachable(root, args.url).values())
    db = sqlite3.connect(f"file:{args.ledger}?mode=ro", uri=True)
    listed_files: dict[Path, list[str]] = {}
    unmapped = []
    for url, loc in db.execute("SELECT url, loc FROM urls WHERE decision = 'listed'"):
        if args.base_url and not loc.startswith(args.base_url):
            unmapped.append(loc)
        path = file_for(url, site, root)
        if path is None:
            unmapped.append(url)
            continue
        listed_files.setdefault(path, []).append(loc)
    listed = set(listed_files)
    hits = expected_files & listed
    recall = len(hits) / len(expected_files) if expected_files else 0.0
    precision = len(hits) / len(listed) if listed else 0.0
    dupes = {p: locs for p, locs in listed_files.items() if len(locs) > 1}
    print(f"expected (reachable, indexable HTML files): {len(expected_files)}")
    print(
        f"listed URLs: {sum(len(v) for v in listed_files.values()) + len(unmapped)}"
        f" ({len(listed)} distinct files)"
    )
    print(f"recall: {recall:.2%}  precision: {precision:.2%}")
    for path in sorted(expected_files - listed)[:20]:
        print(f"  missed: {os.path.relpath(path, root)}")
    for path in sorted(listed - expected_files)[:20]:
        print(f"  not expected: {os.path.relpath(path, root)}")
    for loc in unmapped[:20]:
        print(f"  listed URL with no file (or outside --base-url): {loc}")
    for _path, locs in sorted(dupes.items())[:10]:
        print(f"  one file under {len(locs)} URLs: {', '.join(locs)}")
    return 0 if recall == 1.0 and precision == 1.0 and not unmapped else 1


if __name__ == "__main__":
    sys.exit(main())
