"""Where a page's CPU time goes: our crawl under cProfile, split by part.

Used by ``speed.py --profile N``. The crawl runs with its pages parsed in its own
process (``-s SITEMAP_PARSE_PROCESSES=0``), so that one profile sees everything,
timed in process CPU time (``time.process_time``: waiting on the socket costs
nothing). Each function's own time goes to a part by its file:

| part | files |
| --- | --- |
| fetch | crawler/fetch/, Scrapy's download handlers and HTTP client, twisted.web |
| parse | crawler/page/ but for the link resolver: the tree, the page's facts, its hashes |
| links | crawler/page/links.py's ``LinkResolver`` and ``_directory``, crawler/core/urls.py |
| judge | crawler/crawl/ (judge, rulebook, frontier, traps, the spider's callbacks) |
| ledger | crawler/ledger/ |
| Scrapy | the rest of scrapy and twisted (engine, scheduler, middlewares, signals, reactor) |
| start-up | module bodies and the import machinery |
| other | the rest of crawler/ (publishing, reports, commands) |

A function in none of these files (the standard library, lxml, sqlite3, zlib, w3lib)
is charged to its callers, in proportion to the time each call edge took, so
``urlsplit`` called by the frontier counts as judge, by the resolver as links.
"""

from __future__ import annotations

import argparse
import pstats
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

PARTS = ("fetch", "parse", "links", "judge", "ledger", "Scrapy", "start-up", "other")
RUNNER = """\
import cProfile, runpy, sys, time
out, sys.argv = sys.argv[1], ["crawler.cli", *sys.argv[2:]]
profile = cProfile.Profile(time.process_time)
profile.enable()
try:
    runpy.run_module("crawler.cli", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
finally:
    profile.disable()
    profile.dump_stats(out)
"""
Key = tuple[str, int, str]


def own_part(key: Key) -> str | None:
    """The part a function's own time belongs to, or None to charge it to its callers."""
    file, _, name = key
    file = file.replace("\\", "/")
    if name == "<module>" or file.startswith("<frozen importlib"):
        return "start-up"
    if "/crawler/" in file:
        tail = file.rsplit("/crawler/", 1)[1]
        if tail == "page/links.py" and re.match(r"(LinkResolver|_directory|resolve)", name):
            return "links"
        if tail.startswith("core/urls.py"):
            return "links"
        for prefix, part in (
            ("fetch/", "fetch"),
            ("page/", "parse"),
            ("crawl/", "judge"),
            ("ledger/", "ledger"),
        ):
            if tail.startswith(prefix):
                return part
        return "other"
    if "/scrapy/core/downloader/handlers/" in file or "/twisted/web/" in file:
        return "fetch"
    if "/scrapy/" in file or "/twisted/" in file:
        return "Scrapy"
    return None


def split(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of CPU a part, over the whole profile."""
    raw = stats.stats  # type: ignore[attr-defined]
    memo: dict[Key, dict[str, float]] = {}

    def shares(key: Key, active: set[Key]) -> dict[str, float]:
        """The fractions of *key*'s own time by part (1.0 in all); a caller already
        on the chain (recursion) is left out."""
        if key in memo:
            return memo[key]
        part = own_part(key)
        if part is not None:
            memo[key] = {part: 1.0}
            return memo[key]
        active.add(key)
        callers = raw[key][4] if key in raw else {}
        edges = {c: v[2] + 1e-9 for c, v in callers.items() if c not in active}
        total = sum(edges.values())
        result: dict[str, float] = defaultdict(float)
        for caller, tt in edges.items():
            for p, f in shares(caller, active).items():
                result[p] += f * tt / total
        if not total:
            result["other"] = 1.0
        active.discard(key)
        memo[key] = result
        return result

    seconds: dict[str, float] = defaultdict(float)
    for key, (_cc, _nc, tt, _ct, _callers) in raw.items():
        for part, fraction in shares(key, set()).items():
            seconds[part] += tt * fraction
    return seconds


def profile_ours(url: str, work: Path, root: Path, args: argparse.Namespace, tool: str) -> str:
    """Profile *args.profile* pages of the crawl from checkout *root*; the table."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / "crawl.prof"
    python = root / ".venv" / "bin" / "python"
    python = python if python.exists() else Path(sys.executable)
    cmd = [str(python), "-c", RUNNER, str(out), "crawl", url, "--out", str(work / "public")]
    cmd += ["--max-pages", str(args.profile), "-s", "SITEMAP_PARSE_PROCESSES=0"]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=args.timeout)
    found = re.search(r"^pages fetched: (\d+)", done.stdout + done.stderr, re.M)
    if not out.exists() or not found:
        return f"profile ({tool}): failed, exit {done.returncode}: {done.stderr[-300:]}"
    return table(tool, int(found.group(1)), split(pstats.Stats(str(out))))


def table(tool: str, pages: int, seconds: dict[str, float]) -> str:
    total = sum(seconds.values())
    head = f"{'profile':<14} {'pages':>6} " + " ".join(f"{p:>8}" for p in PARTS)
    row = f"{tool + ' ms/page':<14} {pages:>6} " + " ".join(
        f"{1000 * seconds.get(p, 0.0) / pages:>8.2f}" for p in PARTS
    )
    return f"{head} {'total':>8}\n{row} {1000 * total / pages:>8.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description="split a saved crawl profile by part")
    parser.add_argument("profile", type=Path)
    parser.add_argument("--pages", type=int, required=True)
    args = parser.parse_args()
    print(table("profile", args.pages, split(pstats.Stats(str(args.profile)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
