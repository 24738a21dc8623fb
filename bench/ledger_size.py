"""The ledger's disk and write time on the synthetic site (bench/synthetic.py).

    python bench/ledger_size.py [--pages N] [--export] [--keep DIR]

Writes the ledger a crawl of the N-page synthetic site leaves (default 200,000), through
:meth:`crawler.ledger.ledger.Ledger.record` as the ledger pipeline does, in the crawl's
order: breadth first, every newly found link first recorded ``queued`` (depth,
referrer, how it was found), then the page's final record (status, hashes, title,
dates, the revisit schedule's columns, its ~20 links as absolute URLs, every seventh
page a canonical to itself). Then the ledger is closed as a run files it, and with
``--export`` (what the publisher did on every run before ``export``) ``ledger.jsonl``
is written beside it.

It prints the pages, the CPU seconds spent in ``record`` and in closing (the crawl's
cost of its writes; CPU time, as the machine is shared), every file of the state
directory with its size, and the bytes a page.
The figures are in bench/README.md ("The ledger's disk").
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from synthetic import links_of, url_of  # noqa: E402

from crawler.commands.export import write_rows  # noqa: E402
from crawler.core.decisions import LISTED, QUEUED  # noqa: E402
from crawler.core.items import UrlRecord  # noqa: E402
from crawler.core.urls import url_key  # noqa: E402
from crawler.ledger.ledger import Ledger  # noqa: E402

SITE = "http://127.0.0.1:8000"
NOW = 1_790_000_000.0


def page_record(i: int, n: int, depth: int, referrer: str | None) -> UrlRecord:
    url = SITE + url_of(i, n)
    day = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"
    return UrlRecord(
        url=url,
        key=url_key(url),
        decision=LISTED,
        reason="canonical to itself" if i % 7 == 0 else "",
        status=200,
        depth=depth,
        referrer=referrer,
        found_by="link" if i else "start",
        content_type="text/html",
        last_modified=f"{day}T10:00:00Z",
        title=f"Page {i}",
        content_hash=f"c1{i:030x}",
        main_hash=f"m1{i:030x}",
        own_hash=f"o1{i:030x}",
        etag=f'"{i:x}-5f3"',
        links=[SITE + url_of(j, n) for j in dict.fromkeys(links_of(i, n))],
        loc=url,
        lastmod=f"{day}T10:00:00+00:00",
        lastmod_source="header",
        lastmod_from="last-modified",
        changed_at=f"{day}T10:00:00+00:00",
        listed_at=f"{day}T10:00:00+00:00",
        robots="index, follow",
        elapsed=0.012,
        size=1200 + 160 * (i % 3),
        verified_at=NOW,
        verified_date=f"{day}T10:00:00+00:00",
        revisit_days=7.0,
        due_at=NOW + 7 * 86400,
        checks=1,
        changes=0,
    )


def write(state: Path, n: int, export: bool) -> tuple[float, float]:
    """Record the crawl of the *n* pages into ``state/ledger.sqlite``; the seconds in
    ``record`` and in closing (and exporting)."""
    ledger = Ledger(state / "ledger.sqlite")
    seen = {0}
    depth = {0: 0}
    referrer: dict[int, str | None] = {0: None}
    spent = 0.0
    for i in range(n):  # breadth first: the tree's order is the crawl's
        rec = page_record(i, n, depth[i], referrer[i])
        found = []
        for j in links_of(i, n):
            if j not in seen:
                seen.add(j)
                depth[j], referrer[j] = depth[i] + 1, rec.url
                target = SITE + url_of(j, n)
                found.append(
                    UrlRecord(
                        url=target,
                        key=url_key(target),
                        decision=QUEUED,
                        depth=depth[j],
                        referrer=rec.url,
                        found_by="link",
                    )
                )
        started = time.process_time()
        for queued in found:
            ledger.record(queued)
        ledger.record(rec)
        spent += time.process_time() - started
    started = time.process_time()
    ledger.commit()
    if export:
        with (state / "ledger.jsonl").open("w", encoding="utf-8") as out:
            write_rows(ledger, out)
    ledger.close()
    return spent, time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--export", action="store_true", help="write ledger.jsonl too")
    parser.add_argument("--keep", type=Path, help="the state directory (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = args.keep or Path(tmp)
        state.mkdir(parents=True, exist_ok=True)
        recorded, closed = write(state, args.pages, args.export)
        files = sorted(p for p in state.iterdir() if p.is_file())
        total = sum(p.stat().st_size for p in files)
        print(f"pages: {args.pages}  record cpu s: {recorded:.2f}  close cpu s: {closed:.2f}")
        for p in files:
            print(f"  {p.name}: {p.stat().st_size / 1e6:.1f} MB")
        print(f"state directory: {total / 1e6:.1f} MB = {total / args.pages:.0f} bytes a page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
