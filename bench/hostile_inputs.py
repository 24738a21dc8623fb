"""Time of the parsers on hostile input that fuzzing found (no network, no files).

    python bench/hostile_inputs.py [--cases dtd,robots] [--src DIR]

``dtd``
    the audit's sitemap parser on a ``<urlset>`` whose ``<!DOCTYPE>`` declares 40,000
    and then 80,000 entities (about 1 and 2 MB, well inside the 50 MiB cap): linear
    time doubles from the first to the second, quadratic time quadruples;
``robots``
    one ``allowed()`` question to a robots.txt of 20,000 wildcard rules (about 480 KiB,
    under the 500 KiB cap), on a URL of 2,048 and of 8,192 characters (the longest the
    crawl fetches), after a first question that selects and compiles the group.

``--src DIR`` times another copy of the code (``git archive COMMIT crawler | tar -x -C
DIR``), to measure before and after a change with the same script.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def dtd() -> None:
    from crawler.sitemaps.parse import parse_sitemap

    for count in (40_000, 80_000):
        entities = "".join(f'<!ENTITY e{i} "v{i}">\n' for i in range(count))
        data = (
            f'<?xml version="1.0"?>\n<!DOCTYPE urlset [\n{entities}]>\n'
            f'<urlset xmlns="{NS}"><url><loc>https://example.com/</loc></url></urlset>'
        ).encode()
        started = time.perf_counter()
        result = parse_sitemap(data)
        elapsed = time.perf_counter() - started
        print(
            f"| dtd | {count:,} <!ENTITY> ({len(data) / 1e6:.1f} MB) | {elapsed:.2f} s"
            f" | {len(result.entries)} entry |"
        )


def robots() -> None:
    from crawler.fetch.robotsrules import RobotsRules

    logging.disable(logging.WARNING)  # the rules dropped, once
    lines = ["User-agent: *"] + [f"Disallow: /*{i:05d}x*q{i % 97}*z" for i in range(20_000)]
    text = "\n".join(lines) + "\n"
    rules = RobotsRules(text)
    rng = random.Random(1)
    for length in (2048, 8192):
        url = "http://h.test/" + "".join(
            rng.choice("abcdefghij0123456789/") for _ in range(length - 14)
        )
        rules.allowed(url, "sitemap-crawler")
        rounds = 20
        started = time.perf_counter()
        for _ in range(rounds):
            rules.allowed(url, "sitemap-crawler")
        elapsed = (time.perf_counter() - started) / rounds
        print(
            f"| robots | 20,000 wildcard rules ({len(text.encode()) / 1024:.0f} KiB),"
            f" a {length:,}-character URL | {elapsed * 1000:.1f} ms a question | |"
        )


CASES = {"dtd": dtd, "robots": robots}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="dtd,robots")
    parser.add_argument("--src", type=Path, default=ROOT, help="the code to measure")
    args = parser.parse_args()
    sys.path.insert(0, str(args.src.resolve()))
    print(f"code: {args.src.resolve()}")
    print("| case | input | time | |\n| --- | --- | ---: | --- |")
    for case in args.cases.split(","):
        CASES[case]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
