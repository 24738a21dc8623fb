"""Nights that cost what changed: many nightly runs under a shifted clock.

    python bench/nightly_schedule.py [--nights 14] [--posts 600] [--pages 20]
        [--sites wp,docs] [--edit-age SECONDS] [--timeout 1800] [--keep]

For each site, crawls night 0 and then ``--nights`` more nights into the same
``--out``, night N under a system clock N days ahead (libfaketime: Debian's
``faketime`` package), while the site's server keeps the real clock (its Date
headers and the times it stamps stay real). Sites:

* ``wp``: the WordPress-like site of ``tests/wpserver.py`` (``--posts`` posts,
  ``--pages`` pages). Nights 1-6 change nothing; on night 7 an editor publishes a post,
  edits an old one deep in the archive (the 400th most recent, or the oldest of a
  smaller site) and trashes another old one (the 300th most recent); nights 8-13 change
  nothing; night 14 publishes one more. The editor's times are the real clock's, now
  (or ``--edit-age`` seconds before now: a crawl that follows an edit within seconds
  sees its date within 5 s of the response's ``Date``, which the crawler takes for a
  theme stamping "now", docs/lastmod.md).
* ``docs``: Debian's python3-doc served by nginx (``bench/python3_doc.py``), unchanged.

Every night prints: the requests the site received (its own log), their ratio to night
0, the report's ``pages_fetched``, ``not_modified`` (304s), ``listed``,
``added``/``removed``/``lastmod_changes``, whether the published set equals that of a
fresh full crawl of the same site made the same night (another ``--out``, a new state;
its requests are not counted), the URLs whose published lastmod differs from the one
the fresh crawl gives (where it gives one: a date the page states), the listed
URLs not verified for more than 7 nights (when the ledger's ``urls`` has a
``verified_at`` column; otherwise n/a) and the report's ``schedule`` object, raw, when
there is one. Then: nights 1-6 over night 0, and what a 100,000-page site fetched at
1 request/s would cost a night at the mean ratio of the quiet nights (1-6 and 8-13).
Measurement only: every server listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from scrapy.utils.sitemap import Sitemap

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from tests import wpserver  # noqa: E402

# bench/python3_doc.py's nginx helpers (ensure_packages, start_nginx), imported by name
# so that the type check of this file stays within it.
PYTHON3_DOC: Any = importlib.import_module("python3_doc")

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
#: Nights whose site did not change, for the mean cost of a quiet night.
QUIET = (*range(1, 7), *range(8, 14))
#: The 100,000-page site of the estimate, at this many requests a second.
BIG_SITE, BIG_RATE = 100_000, 1.0
#: The posts the editor edits and trashes on night 7 (0: the most recent).
EDITED, TRASHED = 399, 299
#: A listed URL not verified for longer than this is reported.
VERIFY_NIGHTS = 7


@dataclass
class Night:
    number: int
    requests: int
    seconds: float
    report: dict[str, Any]
    published: dict[str, str | None]
    fresh: dict[str, str | None] | None
    unverified: int | None
    events: list[str] = field(default_factory=list)


# --- the shifted clock ------------------------------------------------------------


def clean_env() -> dict[str, str]:
    """This environment without libfaketime (for the servers, whose clock stays real)."""
    env = dict(os.environ)
    for name in ("LD_PRELOAD", "FAKETIME", "FAKETIME_NO_CACHE", "FAKETIME_DONT_RESET"):
        env.pop(name, None)
    return env


def shifted(days: int) -> tuple[list[str], dict[str, str]]:
    """The command prefix and environment that run a program *days* days ahead."""
    env = clean_env()
    if shutil.which("faketime"):
        return ["faketime", "-f", f"+{days}d"], env
    env.update(LD_PRELOAD=str(LIBFAKETIME), FAKETIME=f"+{days}d")
    return [], env


def check_faketime() -> None:
    """Exit with what to install when libfaketime is missing or does not move Python's
    clock here."""
    if not shutil.which("faketime") and not LIBFAKETIME.exists():
        raise SystemExit(
            "libfaketime is missing: apt-get install -y faketime (Debian's package; it "
            "provides /usr/bin/faketime and libfaketime.so.1)"
        )
    prefix, env = shifted(2)
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import time; print(time.time())"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    ahead = float(probe.stdout) - time.time()
    if abs(ahead - 2 * 86400) > 120:
        raise SystemExit(f"faketime did not shift Python's clock by 2 days (by {ahead:.0f} s)")


def check_real_clock(url: str) -> None:
    """The server's Date header is the real time (it does not run under faketime)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        date = parsedate_to_datetime(response.headers["Date"])
    skew = abs((date - datetime.now(UTC)).total_seconds())
    if skew > 60:
        raise SystemExit(f"the server's clock is {skew:.0f} s off the real clock")


# --- the crawls -------------------------------------------------------------------


def crawl(url: str, out: Path, days: int, timeout: float) -> float:
    """Crawl *url* into *out* under a clock *days* days ahead; return the seconds."""
    prefix, env = shifted(days)
    started = time.perf_counter()
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "crawler.cli", "crawl", url, "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"night {days}: crawl exited {proc.returncode}\n{proc.stdout[-3000:]}"
            f"{proc.stderr[-3000:]}"
        )
    return time.perf_counter() - started


def state_dir(out: Path) -> Path:
    return out.with_name(out.name + ".sitemap-state")


def published(out: Path) -> dict[str, str | None]:
    """loc -> lastmod of the published set."""
    index = out / "sitemap_index.xml"
    if not index.exists():
        return {}
    entries: dict[str, str | None] = {}
    for child in Sitemap(index.read_bytes()):
        data = (out / child["loc"].rsplit("/", 1)[1]).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        entries.update({entry["loc"]: entry.get("lastmod") for entry in Sitemap(data)})
    return entries


def lastmod_behind(night: Night) -> list[str]:
    """The published URLs whose lastmod is not the fresh crawl's, where it has one."""
    if night.fresh is None:
        return []
    return sorted(
        loc
        for loc, lastmod in night.fresh.items()
        if lastmod is not None and loc in night.published and night.published[loc] != lastmod
    )


def unverified(out: Path, now: datetime) -> int | None:
    """Listed URLs not verified for more than VERIFY_NIGHTS nights at *now*; None when
    the ledger keeps no ``verified_at``."""
    ledger = state_dir(out) / "ledger.sqlite"
    if not ledger.exists():
        return None
    db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=30)
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(urls)")}
        if "verified_at" not in columns:
            return None
        limit = now - timedelta(days=VERIFY_NIGHTS)
        count = 0
        rows = db.execute("SELECT verified_at FROM urls WHERE decision = 'listed'")
        for (value,) in rows:
            when = to_datetime(value)
            count += when is None or when < limit
        return count
    finally:
        db.close()


def to_datetime(value: object) -> datetime | None:
    """A ``verified_at``: seconds since the epoch or ISO 8601."""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            try:
                return datetime.fromtimestamp(float(value), UTC)
            except ValueError:
                return None
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    return None


def count(items: object) -> int | None:
    return len(items) if isinstance(items, list | dict) else None


# --- the sites --------------------------------------------------------------------


@contextmanager
def wp_site(work: Path, posts: int, pages: int) -> Iterator[tuple[str, Path, Path]]:
    """The WordPress-like server on its state file: (URL, state file, request log)."""
    site, log = work / "site.json", work / "requests.log"
    wpserver.save(wpserver.make_site(posts, pages), site)
    log.write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.wpserver", "--site", str(site), "--log", str(log)],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            raise SystemExit("tests/wpserver.py did not print its port within 30 s")
        yield f"http://127.0.0.1:{int(line)}/", site, log
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def wp_edits(site: Path, night: int, age: float) -> list[str]:
    """The editor's work before *night*, at the real time less *age* seconds; what was
    done."""
    state = json.loads(site.read_text(encoding="utf-8"))
    now = (datetime.now(UTC) - timedelta(seconds=age)).isoformat(timespec="seconds")
    done: list[str] = []
    live = len(wpserver.recent(state))
    if night in (7, 14):
        done.append(f"published {wpserver.publish_post(state, now)}")
    if night == 7 and live > 1:
        edited = min(EDITED, live - 1)
        done.append(f"edited #{edited + 1} {wpserver.edit_post(state, edited, now)}")
        trashed = min(TRASHED, live - 2)
        done.append(f"trashed #{trashed + 1} {wpserver.trash_post(state, trashed)}")
    if done:
        wpserver.save(state, site)
    return done


def lines(log: Path) -> int:
    with log.open("rb") as f:
        return sum(1 for _ in f)


def settled_lines(log: Path) -> int:
    """The log's line count once it stops growing (nginx writes its line after the
    response): two equal counts 50 ms apart, at most 2 s."""
    last = lines(log)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = lines(log)
        if now == last:
            break
        last = now
    return last


def run_nights(
    name: str,
    url: str,
    log: Path,
    work: Path,
    nights: int,
    timeout: float,
    before: Callable[[int], list[str]],
) -> list[Night]:
    out = work / "public"
    results: list[Night] = []
    for n in range(nights + 1):
        events = before(n)
        start = settled_lines(log)
        seconds = crawl(url, out, n, timeout)
        requests = settled_lines(log) - start
        report = json.loads((state_dir(out) / "report.json").read_text())
        fresh_out = work / f"fresh-{n}" / "public"
        crawl(url, fresh_out, n, timeout)
        fresh = published(fresh_out)
        shutil.rmtree(fresh_out.parent, ignore_errors=True)
        now = datetime.now(UTC) + timedelta(days=n)
        night = Night(
            n, requests, seconds, report, published(out), fresh, unverified(out, now), events
        )
        results.append(night)
        print_night(name, night, results[0])
    return results


# --- the figures ------------------------------------------------------------------

HEADER = (
    f"{'site':<5} {'night':>5} {'requests':>8} {'/n0':>6} {'fetched':>7} {'304':>5} {'listed':>6} "
    f"{'=fresh':>12} {'lm!=fr':>6} {'added':>5} {'remov':>5} {'lastmod':>7} {'unver>7':>7} "
    f"{'secs':>6}"
)


def print_night(name: str, night: Night, first: Night) -> None:
    if night.number == 0:
        print(HEADER, flush=True)
    rep = night.report
    ratio = night.requests / first.requests if first.requests else 0.0
    same = "n/a"
    missing: set[str] = set()
    extra: set[str] = set()
    behind = lastmod_behind(night)
    fresh = night.fresh or {}
    if night.fresh is not None:
        missing = set(night.fresh) - set(night.published)
        extra = set(night.published) - set(night.fresh)
        same = "yes" if not missing and not extra else f"NO -{len(missing)} +{len(extra)}"
    changes = [count(rep.get(k)) for k in ("added", "removed", "lastmod_changes")]
    shown = ["-" if c is None else str(c) for c in changes]
    unver = "n/a" if night.unverified is None else str(night.unverified)
    print(
        f"{name:<5} {night.number:>5} {night.requests:>8} {ratio:>6.2f} "
        f"{rep.get('pages_fetched', '-')!s:>7} {rep.get('not_modified', '-')!s:>5} "
        f"{rep.get('listed', '-')!s:>6} {same:>12} {len(behind):>6} "
        f"{shown[0]:>5} {shown[1]:>5} {shown[2]:>7} {unver:>7} {night.seconds:>6.1f}",
        flush=True,
    )
    for event in night.events:
        print(f"      before night {night.number}: {event}")
    if "schedule" in rep:
        print(f"      schedule: {json.dumps(rep['schedule'], sort_keys=True)}")
    for loc in sorted(missing)[:5]:
        print(f"      missing (a fresh crawl lists it): {loc}")
    for loc in sorted(extra)[:5]:
        print(f"      extra (a fresh crawl does not list it): {loc}")
    for loc in behind[:5]:
        print(f"      lastmod {night.published[loc]}, a fresh crawl's {fresh[loc]}: {loc}")


def summary(name: str, results: list[Night]) -> None:
    first = results[0].requests
    if not first:
        return
    week = [r.requests for r in results if 1 <= r.number <= 6]
    quiet = [r.requests / first for r in results if r.number in QUIET]
    line = f"{name}: night 0 {first} requests"
    if week:
        line += f"; nights 1-{len(week)} sum / night 0: {sum(week) / first:.2f}"
    if quiet:
        mean = sum(quiet) / len(quiet)
        hours = BIG_SITE * mean / BIG_RATE / 3600
        line += (
            f"; quiet nights ({len(quiet)}) mean {mean:.3f} of night 0 -> a {BIG_SITE:,}-page "
            f"site at {BIG_RATE:g} request/s: {hours:.1f} h a night"
        )
    print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=14, help="nights after night 0")
    parser.add_argument("--posts", type=int, default=600)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--sites", default="wp,docs", help="comma list of wp, docs")
    parser.add_argument(
        "--edit-age",
        type=float,
        default=0,
        metavar="SECONDS",
        help="date the wp editor's changes this long before the real now (default 0)",
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a crawl may take")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    sites = [s.strip() for s in args.sites.split(",") if s.strip()]
    if unknown := set(sites) - {"wp", "docs"}:
        parser.error(f"unknown sites: {', '.join(sorted(unknown))}")
    check_faketime()
    work = Path(tempfile.mkdtemp(prefix="nightly-schedule-"))
    results: dict[str, list[Night]] = {}
    try:
        if "wp" in sites:
            wp_work = work / "wp"
            wp_work.mkdir()
            with wp_site(wp_work, args.posts, args.pages) as (url, site, log):
                check_real_clock(url + "robots.txt")
                print(f"wp: {url} ({args.posts} posts, {args.pages} pages)", flush=True)
                results["wp"] = run_nights(
                    "wp",
                    url,
                    log,
                    wp_work,
                    args.nights,
                    args.timeout,
                    lambda n: wp_edits(site, n, args.edit_age),
                )
        if "docs" in sites:
            PYTHON3_DOC.ensure_packages()
            docs_work = work / "docs"
            docs_work.mkdir()
            port, pid_file = PYTHON3_DOC.start_nginx(docs_work)
            try:
                url = f"http://127.0.0.1:{port}/"
                check_real_clock(url)
                print(f"docs: {url} (python3-doc, nginx)", flush=True)
                results["docs"] = run_nights(
                    "docs",
                    url,
                    docs_work / "access.log",
                    docs_work,
                    args.nights,
                    args.timeout,
                    lambda n: [],
                )
            finally:
                subprocess.run(["kill", pid_file.read_text().strip()], check=False)
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    for name, nights in results.items():
        summary(name, nights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
