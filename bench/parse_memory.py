"""Memory and time of the audit's sitemap parser on a 50 MiB sitemap.

    python bench/parse_memory.py [--shapes dense,hreflang,broken,gzip] [--modes list,audit]
                                 [--files N] [--src DIR] [--keep DIR]

Writes the sitemaps into a temporary directory (nothing is fetched), then parses each
one in a fresh child Python, one child per (shape, mode), and prints a table: the
entries read, the child's peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``)
before the parse (the interpreter, lxml and the input bytes) and after it, the
difference (what the parse cost), and the parse's wall time.

Shapes, each 50 MiB (the protocol's largest file) uncompressed:

``dense``
    about 336,000 small ``<url>`` entries (``loc``, ``lastmod``, ``changefreq``,
    ``priority``): over the protocol's 50,000, as an over-long file is;
``hreflang``
    50,000 entries with nine hreflang ``xhtml:link`` alternates each: a file within
    every limit of the protocol;
``broken``
    ``dense`` with a raw ``&`` in its second entry, so that the whole file goes
    through the tolerant reading;
``gzip``
    ``dense`` gzipped (about 2 MiB on the wire).

Modes:

``list``
    :func:`crawler.sitemaps.parse.parse_sitemap` called without a consumer, and
    its entries read through (a list of them all before; past 10,000 entries, now, a
    sequence that reads them again from the data);
``stream``
    the parse alone, its entries handed to a consumer that only counts them
    (``parse_sitemap(..., on_entries=...)``; an older parser without it returns the
    list, which is what its parse costs);
``audit``
    what the audit spider does with one file: every entry becomes a row of an SQLite
    table like the audit store's ``listings`` (normalised and keyed as the spider
    does), in batches of 1,000. When the parser can hand entries over as it reads
    them (``parse_sitemap(..., on_entries=...)``) they are taken that way; an older
    parser without it returns the list, which is then stored. (The table is the
    bench's own, so that one script measures the code before and after a change.)

``--files N`` parses the file N times in the same child (an audit of many large
files): the peak must not grow with N. ``--src DIR`` runs the children on another
copy of the code (``git archive HEAD crawler | tar -x -C DIR``), to measure before
and after a change with the same script.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
MiB = 1024 * 1024
SIZE = 50 * MiB
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XHTML = "http://www.w3.org/1999/xhtml"
LANGS = ("de", "fr", "es", "it", "nl", "pl", "pt", "sv", "x-default")


def write_dense(path: Path, broken: bool = False) -> None:
    with path.open("wb") as f:
        f.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n'.encode())
        size, i = 0, 0
        while size < SIZE - 200:
            query = "?a=1&b=2" if broken and i == 1 else ""
            block = (
                f"<url><loc>https://www.example.com/products/item-{i:07d}.html{query}</loc>"
                "<lastmod>2024-01-01</lastmod><changefreq>daily</changefreq>"
                "<priority>0.8</priority></url>\n"
            ).encode()
            f.write(block)
            size += len(block)
            i += 1
        f.write(b"</urlset>\n")


def write_hreflang(path: Path) -> None:
    count = 50_000
    with path.open("wb") as f:
        f.write(
            f'<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="{NS}" xmlns:xhtml="{XHTML}">\n'.encode()
        )
        per = (SIZE - 200) // count
        for i in range(count):
            head = f"<url><loc>https://www.example.com/en/docs/page-{i:06d}.html</loc>\n"
            links = "".join(
                f'<xhtml:link rel="alternate" hreflang="{lang}"'
                f' href="https://www.example.com/{lang}/docs/page-{i:06d}.html"/>\n'
                for lang in LANGS
            )
            block = head + links + "<lastmod>2024-01-01T10:00:00+00:00</lastmod></url>\n"
            pad = per - len(block.encode())
            if pad > 8:
                block = block.replace("</url>", f"<!--{'p' * (pad - 7)}--></url>")
            f.write(block.encode())
        f.write(b"</urlset>\n")


SHAPES: dict[str, Callable[[Path], None]] = {
    "dense": write_dense,
    "hreflang": write_hreflang,
    "broken": lambda path: write_dense(path, broken=True),
}


def make(directory: Path, shape: str) -> Path:
    if shape == "gzip":
        plain = make(directory, "dense")
        path = directory / "dense.xml.gz"
        if not path.exists():
            path.write_bytes(gzip.compress(plain.read_bytes(), 6))
        return path
    path = directory / f"{shape}.xml"
    if not path.exists():
        SHAPES[shape](path)
    return path


# -- the child ---------------------------------------------------------------------------


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(path: Path, mode: str, files: int, work: Path) -> dict[str, Any]:
    import sqlite3

    from crawler.core.urls import normalize_url, url_key
    from crawler.sitemaps.parse import parse_sitemap

    streaming = "on_entries" in inspect.signature(parse_sitemap).parameters
    data = path.read_bytes()
    before = peak_mb()
    started = time.perf_counter()
    entries = 0
    for n in range(files):
        if mode == "list":
            result = parse_sitemap(data, url="https://www.example.com/sitemap.xml")
            # Read through, as a caller of the plain call does.
            entries = sum(1 for _ in result.entries)
            del result
            continue
        if mode == "stream":
            counted = [0]

            def count(batch: list[Any], counted: list[int] = counted) -> None:
                counted[0] += len(batch)

            if streaming:
                parse_sitemap(data, on_entries=count)
            else:
                count(parse_sitemap(data).entries)
            entries = counted[0]
            continue
        store = sqlite3.connect(work / f"audit-{n}.sqlite")
        store.execute(
            "CREATE TABLE listings (id INTEGER PRIMARY KEY, loc TEXT NOT NULL, key TEXT,"
            " url TEXT, sitemap TEXT NOT NULL, line INTEGER, lastmod TEXT, changefreq TEXT,"
            " priority TEXT, alternates INTEGER, images INTEGER, scope TEXT)"
        )
        name = f"https://www.example.com/{path.name}"
        stored = [0]

        def keep(
            batch: list[Any],
            store: sqlite3.Connection = store,
            name: str = name,
            stored: list[int] = stored,
        ) -> None:
            rows = []
            for entry in batch:
                normal = normalize_url(entry.loc, strip_params=False)
                rows.append(
                    (
                        entry.loc,
                        None if normal is None else url_key(normal),
                        normal,
                        name,
                        entry.line,
                        entry.lastmod,
                        entry.changefreq,
                        entry.priority,
                        len(entry.alternates),
                        entry.images,
                        None,
                    )
                )
            store.executemany(
                "INSERT INTO listings (loc, key, url, sitemap, line, lastmod, changefreq,"
                " priority, alternates, images, scope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            stored[0] += len(rows)

        if streaming:
            parse_sitemap(data, on_entries=keep)
        else:
            listed = parse_sitemap(data).entries
            for start in range(0, len(listed), 1000):
                keep(listed[start : start + 1000])
            del listed
        store.commit()
        store.close()
        entries = stored[0]
    elapsed = time.perf_counter() - started
    after = peak_mb()
    return {
        "entries": entries,
        "before": before,
        "peak": after,
        "seconds": elapsed / files,
        "streaming": streaming,
    }


# -- the parent ---------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="dense,hreflang,broken,gzip")
    parser.add_argument("--modes", default="list,stream,audit")
    parser.add_argument("--files", type=int, default=1)
    parser.add_argument("--src", type=Path, default=ROOT, help="the code to measure")
    parser.add_argument("--keep", type=Path, help="write the sitemaps here and keep them")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        path, mode, files, work = args.child
        sys.path.insert(0, str(args.src))
        print(json.dumps(child(Path(path), mode, int(files), Path(work))))
        return 0

    directory = args.keep or Path(tempfile.mkdtemp(prefix="parse-memory-"))
    directory.mkdir(parents=True, exist_ok=True)
    print(f"code: {args.src.resolve()}; files parsed per child: {args.files}")
    print(
        "| shape | mode | entries | RSS before parse | peak RSS | parse cost | seconds |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    )
    for shape in args.shapes.split(","):
        path = make(directory, shape)
        for mode in args.modes.split(","):
            with tempfile.TemporaryDirectory(prefix="parse-memory-work-") as work:
                proc = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--src",
                        str(args.src.resolve()),
                        "--child",
                        str(path),
                        mode,
                        str(args.files),
                        work,
                    ],
                    capture_output=True,
                    text=True,
                    cwd=directory,
                    env={**os.environ, "PYTHONHASHSEED": "0"},
                )
            if proc.returncode != 0:
                print(f"| {shape} | {mode} | failed: {proc.stderr.strip()[-300:]} |")
                continue
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            label = mode + ("" if got["streaming"] or mode == "list" else " (as a list)")
            print(
                f"| {shape} | {label} | {got['entries']:,} | {got['before']:.0f} MB"
                f" | {got['peak']:.0f} MB | {got['peak'] - got['before']:.0f} MB"
                f" | {got['seconds']:.1f} |"
            )
    if args.keep is None:
        for path in directory.iterdir():
            path.unlink()
        directory.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
