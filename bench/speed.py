"""Speed and scale: our crawl against a bare Scrapy crawl and wget, on local sites.

    python bench/speed.py [--sites python3-doc,rust-doc,synthetic] [--synthetic N]
                          [--tools ours,baseline,wget] [--repeat N] [--timeout S]
                          [--keep DIR]

Installs what it needs with apt-get when missing (as root): ``nginx-light``,
``wget`` and the documentation packages of the sites asked for. Serves each site
with nginx on a free 127.0.0.1 port (gzip on for text/html): Debian's documentation
as real sites (python3-doc: 526 pages of about 95 KB; openjdk-17-doc: 10,000 pages;
rust-doc: 32,000 files, a third of them meta-refresh stubs) and a synthetic site of
N pages (bench/synthetic.py, default 20,000) written to a temporary directory. For
each site, in one invocation, it runs in turn, each as a subprocess measured for
wall time, CPU time (``/usr/bin/time -v``, else ``getrusage`` in a wrapper; both
count the command's child processes) and peak RSS (the larger of that and the
peak of the RSS summed over the command's process group, sampled every 50 ms, so
that our page-parsing workers count):

1. ours: ``python -m crawler.cli crawl URL --out TMP/public`` (default options);
2. baseline: bench/baseline_spider.py, a bare Scrapy ``CrawlSpider`` (32 concurrent
   requests, robots.txt obeyed, no AutoThrottle), outside the project's settings;
3. wget: ``wget --spider -r -l inf -nd -np -e robots=on`` (one connection);
4. fetch (not by default): the baseline's settings, fetching the reachable pages
   from a list with no parsing at all: what Scrapy's fetching costs on its own;
5. fetch-plain (not by default): fetch with ``COMPRESSION_ENABLED=False``, so nginx
   sends the pages uncompressed and nothing is decompressed: the fastest a crawl
   that keeps Scrapy's engine, downloader and HTTP client can fetch on this machine.

With ``--repeat N`` the tools take turns N times and each tool's row is its run
of median wall time (this VM's load moves a single run by 10-15%).

Prints one table per site: pages fetched, wall and CPU seconds, pages/s, peak RSS,
the pages/s ratio to the baseline and to wget, and for ours the listed count,
recall and precision against a file-based count (bench/reachability.py for the
real sites; every page, by construction, for the synthetic one). Every run is
bounded by ``--timeout`` seconds. Nothing leaves 127.0.0.1.

The memory run: ``--sites synthetic --synthetic 1000000 --tools ours``.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import python3_doc  # noqa: E402
from pagecost import profile_ours  # noqa: E402
from python3_doc import DOCS  # noqa: E402
from reachability import file_for, reachable  # noqa: E402
from synthetic import file_of, url_of, write_site  # noqa: E402

PYTHON = ROOT / ".venv" / "bin" / "python"
TIME = Path("/usr/bin/time")
PACKAGES = (
    ("nginx-light", Path("/usr/sbin/nginx")),
    ("wget", Path("/usr/bin/wget")),
)
# Real documentation sites from Debian's packages: (package, the site's root).
DOC_SITES = {
    "python3-doc": ("python3-doc", DOCS),  # 526 pages of about 95 KB
    "openjdk-17-doc": ("openjdk-17-doc", Path("/usr/share/doc/openjdk-17-doc/api")),  # 10,000
    "rust-doc": ("rust-doc", Path("/usr/share/doc/rust-doc/html")),  # 32,000 files
    "postgresql-doc": ("postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html")),  # 1,169
}
# Without Debian's rust-doc, rustup's copy of the same book and API docs, when present.
RUSTUP_DOCS = sorted(Path.home().glob(".rustup/toolchains/stable-*/share/doc/rust/html"))
if not DOC_SITES["rust-doc"][1].exists() and RUSTUP_DOCS:
    DOC_SITES["rust-doc"] = ("", RUSTUP_DOCS[0])
# c4software/python-sitemap (threads, regular expressions), from a checkout outside the repo.
PYTHON_SITEMAP = Path(os.environ.get("PYTHON_SITEMAP", "/work/peers/python-sitemap"))
TOOLS = ("ours", "before", "python-sitemap", "baseline", "wget", "fetch", "fetch-plain")
DEFAULT_TOOLS = ("ours", "baseline", "wget")
# Used when /usr/bin/time is missing: run the command, then report the children's peak RSS.
RUSAGE_WRAPPER = """\
import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as f:
    f.write(f"Maximum resident set size (kbytes): {peak}\\n")
sys.exit(rc)
"""


@dataclass
class Run:
    tool: str
    rc: int | None = None
    wall: float = 0.0
    cpu: float | None = None
    rss_kb: int | None = None
    pages: int | None = None
    listed: int | None = None
    recall: float | None = None
    precision: float | None = None
    note: str = ""
    output: str = field(default="", repr=False)

    @property
    def rate(self) -> float | None:
        return self.pages / self.wall if self.pages and self.wall else None

    @property
    def cpu_ms(self) -> float | None:
        """CPU milliseconds a page, every process of the command counted."""
        return 1000 * self.cpu / self.pages if self.pages and self.cpu else None

    def exactness(
        self, urls: list[str], site: str, site_root: Path, expected: frozenset[Path] | set[Path]
    ) -> None:
        """Recall and precision of the URLs found as pages against the file-based set;
        a URL that maps to no file, or a second URL for one file, counts against precision."""
        found = {file_for(u, site, site_root) for u in urls}
        found.discard(None)
        hits = len(expected & found)
        self.recall = hits / len(expected) if expected else None
        self.precision = hits / len(urls) if urls else None


class TreeRss(threading.Thread):
    """Samples the summed RSS of every process in the group *pgid* (the measured
    command and its children) every 50 ms; ``peak_kb`` is the largest sum seen."""

    def __init__(self, pgid: int) -> None:
        super().__init__(daemon=True)
        self.pgid = pgid
        self.peak_kb = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
        while not self._stop_event.wait(0.05):
            total = 0
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    fields = (entry / "stat").read_text().rpartition(")")[2].split()
                except OSError:
                    continue
                if int(fields[2]) == self.pgid:  # the process group
                    total += int(fields[21]) * page_kb  # rss, in pages
            self.peak_kb = max(self.peak_kb, total)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def ensure_packages(sites: list[str], tools: list[str]) -> None:
    wanted = [(p, probe) for p, probe in PACKAGES if p != "wget" or "wget" in tools]
    wanted += [(pkg, root) for name, (pkg, root) in DOC_SITES.items() if name in sites and pkg]
    missing = [p for p, probe in wanted if not probe.exists()]
    if missing:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True)


def start_nginx(tmp: Path, root: Path) -> tuple[int, Path]:
    """nginx serving *root* on a free loopback port (the python3_doc.py configuration)."""
    return python3_doc.start_nginx(tmp, "autoindex off; index index.html;", root=root)


def measure(
    run: Run,
    cmd: list[str],
    cwd: Path,
    tmp: Path,
    timeout: float,
    env: dict[str, str] | None = None,
) -> None:
    """Run *cmd*, filling wall time, CPU time, peak RSS, exit status and output of *run*."""
    report = tmp / f"{run.tool}.time"
    if TIME.exists():
        full = [str(TIME), "-v", "-o", str(report), *cmd]
    else:
        full = [sys.executable, "-c", RUSAGE_WRAPPER, str(report), *cmd]
    log = tmp / f"{run.tool}.out"
    started = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            full, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        watch = TreeRss(proc.pid)
        watch.start()
        try:
            run.rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            run.note = f"timed out after {timeout:.0f} s"
    run.wall = time.perf_counter() - started
    watch.stop()
    run.output = log.read_text(errors="replace")
    text = report.read_text(errors="replace") if report.exists() else ""
    if m := re.search(r"Maximum resident set size \(kbytes\): (\d+)", text):
        run.rss_kb = int(m.group(1))
    # time -v gives the peak of the largest process; with worker processes the sum
    # over the process group, sampled, is the honest figure (shared pages count twice).
    if watch.peak_kb > (run.rss_kb or 0):
        run.rss_kb = watch.peak_kb
    user = re.search(r"User time \(seconds\): ([\d.]+)", text)
    system = re.search(r"System time \(seconds\): ([\d.]+)", text)
    if user and system:
        run.cpu = float(user.group(1)) + float(system.group(1))


def run_ours(
    url: str,
    tmp: Path,
    site_root: Path,
    expected: set[Path],
    timeout: float,
    extra: list[str],
    root: Path = ROOT,
    tool: str = "ours",
) -> Run:
    """Our crawl, run from the checkout *root* (``--before`` names another one)."""
    run = Run(tool)
    out = tmp / tool / "public"
    python = PYTHON if PYTHON.exists() else Path(sys.executable)
    measure(
        run,
        [str(python), "-m", "crawler.cli", "crawl", url, "--out", str(out), *extra],
        root,
        tmp,
        timeout,
    )
    if m := re.search(r"^pages fetched: (\d+)", run.output, re.M):
        run.pages = int(m.group(1))
    if m := re.search(r"^listed: (\d+)", run.output, re.M):
        run.listed = int(m.group(1))
    ledger = out.with_name("public.sitemap-state") / "ledger.sqlite"
    if ledger.exists():
        site = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}/"
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
        try:
            urls = [u for (u,) in db.execute("SELECT url FROM urls WHERE decision = 'listed'")]
        finally:
            db.close()
        run.exactness(urls, site, site_root, expected)
    if run.rc != 0 and not run.note:
        run.note = (
            f"exit {run.rc}: " + run.output.strip().splitlines()[-1][:80]
            if run.output.strip()
            else f"exit {run.rc}"
        )
    return run


def run_baseline(
    url: str, tmp: Path, timeout: float, urls: list[str] | None = None, plain: bool = False
) -> Run:
    import json

    run = Run(("fetch-plain" if plain else "fetch") if urls is not None else "baseline")
    stats_file = tmp / f"{run.tool}-stats.json"
    # Outside the project (no scrapy.cfg above cwd) and without its settings module.
    cwd = tmp / run.tool
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    python = PYTHON if PYTHON.exists() else Path(sys.executable)
    cmd = [str(python), str(BENCH / "baseline_spider.py"), url, "--stats", str(stats_file)]
    if urls is not None:
        (tmp / "urls.txt").write_text("\n".join(urls) + "\n")
        cmd += ["--fetch-only", str(tmp / "urls.txt")]
    if plain:
        cmd += ["-s", "COMPRESSION_ENABLED=False"]
    measure(run, cmd, cwd, tmp, timeout, env)
    if stats_file.exists():
        stats = json.loads(stats_file.read_text())
        run.pages = stats.get("bench/html_pages")
        run.note = (
            f"{stats.get('downloader/response_count', 0)} responses, {stats.get('finish_reason')}"
        )
    elif run.rc != 0 and not run.note:
        run.note = f"exit {run.rc}"
    return run


WGET_URL = re.compile(r"^--\d{4}-\d\d-\d\d \d\d:\d\d:\d\d--\s+(\S+)")
WGET_STATUS = re.compile(r"awaiting response\.\.\. (\d{3})")
WGET_TYPE = re.compile(r"^Length: .*\[([^\]]+)\]")


def count_wget(log: str) -> tuple[set[str], int]:
    """(distinct URLs answered 200 with text/html, requests) from a wget log."""
    pages: set[str] = set()
    requests = 0
    url = status = None
    for line in log.splitlines():
        if m := WGET_URL.match(line):
            url, status = m.group(1), None
            requests += 1
        elif m := WGET_STATUS.search(line):
            status = m.group(1)
        elif (
            (m := WGET_TYPE.match(line))
            and url
            and status == "200"
            and m.group(1).startswith("text/html")
        ):
            pages.add(url)
    return pages, requests


def run_python_sitemap(
    url: str, tmp: Path, site_root: Path, expected: set[Path], timeout: float
) -> Run:
    """python-sitemap with 8 threads (our concurrency), robots.txt obeyed; "pages"
    counts the distinct <loc> of its sitemap, the note its duplicates."""
    run = Run("python-sitemap")
    cwd = tmp / run.tool
    cwd.mkdir()
    out = cwd / "sitemap.xml"
    main = PYTHON_SITEMAP / "main.py"
    cmd = [sys.executable, str(main), "--domain", url, "--output", str(out), "-n", "8"]
    measure(run, [*cmd, "--parserobots"], PYTHON_SITEMAP, tmp, timeout)
    if out.exists():
        locs = re.findall(r"<loc>([^<]*)</loc>", out.read_text(errors="replace"))
        urls = sorted({html.unescape(u) for u in locs})
        run.pages = len(urls)
        run.exactness(urls, url, site_root, expected)
        run.note = f"{len(locs) - len(urls)} listed twice, exit {run.rc}"
    elif not run.note:
        run.note = f"no sitemap ({main}), exit {run.rc}"
    return run


def run_wget(
    url: str,
    tmp: Path,
    timeout: float,
    site_root: Path | None = None,
    expected: frozenset[Path] | set[Path] = frozenset(),
) -> Run:
    run = Run("wget")
    cwd = tmp / "wget"
    cwd.mkdir()
    log = tmp / "wget.log"
    cmd = [
        "wget",
        "--spider",
        "-r",
        "-l",
        "inf",
        "-nd",
        "-np",
        "-e",
        "robots=on",
        "-o",
        str(log),
        url,
    ]
    measure(run, cmd, cwd, tmp, timeout)
    if log.exists():
        pages, requests = count_wget(log.read_text(errors="replace"))
        run.pages = len(pages)
        if site_root is not None:
            run.exactness(sorted(pages), url, site_root, expected)
        run.note = f"{requests} requests, exit {run.rc}" + (f"; {run.note}" if run.note else "")
    return run


def median_run(runs: list[Run]) -> Run:
    """The run of median wall time (the lower of the middle two for an even count),
    its note saying how far the others were."""
    if len(runs) == 1:
        return runs[0]
    ordered = sorted(runs, key=lambda r: r.wall)
    run = ordered[(len(ordered) - 1) // 2]
    spread = f"median of {len(runs)}, wall {ordered[0].wall:.1f}-{ordered[-1].wall:.1f} s"
    run.note = f"{spread}; {run.note}" if run.note else spread
    return run


def table(site: str, expected: int, runs: list[Run]) -> str:
    base = next((r.rate for r in runs if r.tool == "baseline"), None)
    wget = next((r.rate for r in runs if r.tool == "wget"), None)

    def fmt(value: float | int | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    lines = [
        f"site: {site}  (expected: {expected} reachable indexable HTML files)",
        f"{'tool':<11} {'pages':>6} {'listed':>6} {'wall s':>7} {'cpu s':>7} "
        f"{'pages/s':>8} {'cpu ms/p':>8} {'RSS MB':>7} "
        f"{'/base':>6} {'/wget':>6} {'recall':>7} {'precis.':>7}  note",
    ]
    for r in runs:
        lines.append(
            f"{r.tool:<11} {fmt(r.pages, 'd'):>6} {fmt(r.listed, 'd'):>6} {r.wall:>7.1f} "
            f"{fmt(r.cpu, '.1f'):>7} "
            f"{fmt(r.rate, '.1f'):>8} {fmt(r.cpu_ms, '.2f'):>8} "
            f"{fmt(r.rss_kb and r.rss_kb / 1024, '.0f'):>7} "
            f"{fmt(r.rate / base if r.rate and base else None, '.2f'):>6} "
            f"{fmt(r.rate / wget if r.rate and wget else None, '.2f'):>6} "
            f"{fmt(r.recall and 100 * r.recall, '.2f'):>7} "
            f"{fmt(r.precision and 100 * r.precision, '.2f'):>7}  {r.note}"
        )
    return "\n".join(lines)


def readable_by_others(root: Path) -> bool:
    """Whether a user other than the owner (nginx's workers) can enter *root*'s path."""
    return all(p.stat().st_mode & 0o005 == 0o005 for p in (root, *root.parents))


def bench_site(name: str, args: argparse.Namespace, keep: Path | None) -> str:
    tmp = Path(tempfile.mkdtemp(prefix=f"speed-{name}-"))
    tmp.chmod(0o755)  # nginx's workers (www-data) read the synthetic site under it
    pid_file = None
    try:
        if name in DOC_SITES:
            site_root = DOC_SITES[name][1].resolve()
            if not readable_by_others(site_root):
                # rustup's copy under a home directory nginx's workers cannot enter
                # (782 MB: a few seconds).
                shutil.copytree(site_root, tmp / "site")
                site_root = tmp / "site"
        else:
            site_root = tmp / "site"
            started = time.perf_counter()
            write_site(site_root, args.synthetic)
            print(
                f"[{name}] wrote {args.synthetic} pages in {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
            name = f"synthetic {args.synthetic}"
        port, pid_file = start_nginx(tmp, site_root)
        url = f"http://127.0.0.1:{port}/"
        pages: list[str]
        if name in DOC_SITES:
            found = reachable(site_root, url)
            expected, pages = set(found.values()), list(found)
        else:
            # Every page of the synthetic site is reachable by construction (its
            # docstring); parsing a million files to confirm it took longer than the crawl.
            expected = {site_root / file_of(i, args.synthetic) for i in range(args.synthetic)}
            pages = [url + url_of(i, args.synthetic).lstrip("/") for i in range(args.synthetic)]
        rounds: dict[str, list[Run]] = {tool: [] for tool in args.tools}
        # With --repeat, the tools take turns, so that a spell of load on the VM
        # falls on all of them rather than on one tool's runs.
        for i in range(args.repeat):
            work = tmp / f"round-{i + 1}" if args.repeat > 1 else tmp
            work.mkdir(exist_ok=True)
            for tool in args.tools:
                turn = f" ({i + 1}/{args.repeat})" if args.repeat > 1 else ""
                print(f"[{name}] {tool}{turn} ...", file=sys.stderr)
                if tool == "ours":
                    run = run_ours(url, work, site_root, expected, args.timeout, args.ours_arg)
                elif tool == "before":
                    run = run_ours(
                        url, work, site_root, expected, args.timeout, [], args.before, "before"
                    )
                elif tool == "python-sitemap":
                    run = run_python_sitemap(url, work, site_root, expected, args.timeout)
                elif tool == "baseline":
                    run = run_baseline(url, work, args.timeout)
                elif tool == "wget":
                    run = run_wget(url, work, args.timeout, site_root, expected)
                else:
                    run = run_baseline(url, work, args.timeout, pages, tool == "fetch-plain")
                rounds[tool].append(run)
        result = table(name, len(expected), [median_run(runs) for runs in rounds.values()])
        for tool, root in (("ours", ROOT), ("before", args.before)):
            if args.profile and tool in args.tools and root is not None:
                print(f"[{name}] {tool}: profile of {args.profile} pages ...", file=sys.stderr)
                result += "\n\n" + profile_ours(url, tmp / f"profile-{tool}", root, args, tool)
        return result
    finally:
        if pid_file and pid_file.exists():
            subprocess.run(["kill", pid_file.read_text().strip()], check=False)
        if keep:
            try:
                shutil.copytree(
                    tmp,
                    keep / tmp.name,
                    ignore=shutil.ignore_patterns("site", "nginx.pid"),
                    dirs_exist_ok=True,
                )
            except shutil.Error as exc:
                print(f"[{name}] --keep: {exc}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--synthetic",
        type=int,
        default=20000,
        metavar="N",
        help="pages of the synthetic site (default 20000)",
    )
    parser.add_argument(
        "--sites",
        default="python3-doc,rust-doc,synthetic",
        help=f"comma-separated, of: {', '.join(DOC_SITES)}, synthetic "
        "(default python3-doc,rust-doc,synthetic)",
    )
    parser.add_argument(
        "--tools",
        default=",".join(DEFAULT_TOOLS),
        help=f"comma-separated, in order, of: {', '.join(TOOLS)} "
        f"(default {','.join(DEFAULT_TOOLS)})",
    )
    parser.add_argument("--skip-wget", action="store_true", help="do not run wget")
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800,
        help="seconds allowed per tool and site (default 1800)",
    )
    parser.add_argument(
        "--ours-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for our crawl (repeatable)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the tools N times each, taking turns, and report each tool's run of "
        "median wall time (default 1)",
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="DIR",
        help="another checkout of the project (e.g. a worktree of main) whose crawl runs as "
        "the tool 'before', with this checkout's .venv",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="after the tools, profile N pages of ours (and before) with the pages parsed "
        "in the crawl's process, and print the time a page by part (default 0: no profile)",
    )
    parser.add_argument("--keep", type=Path, help="copy logs, ledgers and outputs here")
    args = parser.parse_args()
    sites = [s.strip() for s in args.sites.split(",") if s.strip()]
    unknown = set(sites) - {*DOC_SITES, "synthetic"}
    if unknown:
        parser.error(f"unknown site(s): {', '.join(sorted(unknown))}")
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.skip_wget and "wget" in args.tools:
        args.tools.remove("wget")
    if not args.tools or set(args.tools) - set(TOOLS):
        parser.error(f"--tools: choose from {', '.join(TOOLS)}")
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    if "before" in args.tools and args.before is None:
        parser.error("--tools before: name the checkout with --before DIR")
    ensure_packages(sites, args.tools)
    print(
        f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  cores: {os.cpu_count()}  "
        f"command: {' '.join(sys.argv)}"
    )
    for site in sites:
        print()
        print(bench_site(site, args, args.keep), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
