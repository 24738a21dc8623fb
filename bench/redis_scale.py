"""Scaling out: one process against a distributed crawl (crawl --redis + workers).

    python bench/redis_scale.py [--workers 0,1] [--repeat N] [--synthetic N] [--keep DIR]

Serves Debian's python3-doc (and with ``--synthetic N`` a synthetic site of N pages,
bench/synthetic.py) with nginx on 127.0.0.1, starts a redis-server on a free
loopback port, and crawls each site in turn through the real command line:

1. ``crawl URL`` in one process;
2. for each K in ``--workers``: ``crawl URL --redis redis://127.0.0.1:PORT/0`` plus K
   ``worker --redis ...`` processes started as soon as the crawl is registered
   (K = 1: two processes, one per core of the 2-core machine the figures in
   docs/distributed.md come from).

For each run it prints the pages fetched, the wall time (from the coordinator's
start to its exit, workers' start-up included), pages per second and the ratio to
the single process, the CPU seconds of all the run's crawler processes, the URLs listed,
and whether the published set (read back from the sitemap files) equals the
single-process one. Installs python3-doc, nginx-light and redis-server with apt-get
when missing (as root); needs the ``redis`` extra (redis-py). Nothing leaves
127.0.0.1.
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from scrapy.utils.sitemap import Sitemap

sys.path.insert(0, str(Path(__file__).resolve().parent))

import python3_doc  # noqa: E402
from python3_doc import DOCS  # noqa: E402
from synthetic import write_site  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"


@dataclass
class Run:
    name: str
    processes: int
    rc: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    pages: int | None = None
    listed: int | None = None
    from_workers: int | None = None
    locs: frozenset[str] = frozenset()
    note: str = ""


def ensure_packages() -> None:
    wanted = [
        ("python3-doc", DOCS / "index.html"),
        ("nginx-light", Path("/usr/sbin/nginx")),
        ("redis-server", Path("/usr/bin/redis-server")),
    ]
    missing = [p for p, probe in wanted if not probe.exists() and not shutil.which(probe.name)]
    if missing:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True)


def start_redis(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = python3_doc.free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        + ["--appendonly", "no", "--dir", str(tmp)],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if redis.Redis(port=port).ping():
                return proc, port
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def cli(*args: str) -> list[str]:
    python = PYTHON if PYTHON.exists() else Path(sys.executable)
    return [str(python), "-m", "crawler.cli", *args]


def published(out: Path) -> frozenset[str]:
    locs: set[str] = set()
    index = out / "sitemap_index.xml"
    if not index.exists():
        return frozenset()
    for entry in Sitemap(index.read_bytes()):
        body = (out / entry["loc"].rsplit("/", 1)[1]).read_bytes()
        locs.update(e["loc"] for e in Sitemap(gzip.decompress(body)))
    return frozenset(locs)


def parse_summary(run: Run, stderr: str) -> None:
    for line in stderr.splitlines():
        if line.startswith("pages fetched: "):
            run.pages = int(line.split()[2])
        elif line.startswith("listed: "):
            run.listed = int(line.split()[1])
        elif line.startswith("workers: "):
            run.from_workers = int(line.split("fetched ")[1].split()[0])
    if run.rc != 0:
        run.note = f"exit {run.rc}: " + (stderr.strip().splitlines() or [""])[-1][:80]


def crawl(url: str, tmp: Path, name: str, workers: int | None, redis_port: int) -> Run:
    """One run: a single process (*workers* None) or coordinator + *workers*."""
    out = tmp / name.replace(" ", "-") / "public"
    run = Run(name, 1 if workers is None else workers + 1)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    args = ["crawl", url, "--out", str(out)]
    helpers: list[subprocess.Popen[str]] = []
    if workers is not None:
        # A database per run: each coordinator registers its crawl there.
        redis_url = f"redis://127.0.0.1:{redis_port}/{workers + 1}"
        args += ["--redis", redis_url]
    coordinator = subprocess.Popen(cli(*args), cwd=ROOT, stderr=subprocess.PIPE, text=True)
    if workers:
        client = redis.Redis(port=redis_port, db=workers + 1)
        deadline = time.time() + 60
        while not client.exists("sitemap-crawler:crawl"):
            if time.time() > deadline or coordinator.poll() is not None:
                break
            time.sleep(0.02)
        for _ in range(workers):
            helpers.append(
                subprocess.Popen(
                    cli("worker", "--redis", redis_url),
                    cwd=ROOT,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
    _, stderr = coordinator.communicate(timeout=3600)
    run.wall = time.perf_counter() - started
    for helper in helpers:
        _, werr = helper.communicate(timeout=120)
        if helper.returncode != 0:
            run.note += f" worker exit {helper.returncode}: {werr.strip()[-80:]}"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run.rc = coordinator.returncode
    parse_summary(run, stderr)
    run.locs = published(out)
    return run


def median(runs: list[Run]) -> Run:
    """The run of median wall time (its other figures come with it)."""
    return sorted(runs, key=lambda r: r.wall)[len(runs) // 2]


def table(site: str, runs: list[Run], repeat: int) -> str:
    base = runs[0]
    lines = [
        f"{site} (median of {repeat} runs)" if repeat > 1 else site,
        f"{'run':<22} {'procs':>5} {'pages':>6} {'wall s':>7} {'pages/s':>8} {'ratio':>6} "
        f"{'cpu s':>6} {'listed':>6} {'by workers':>10}  same set",
    ]
    for r in runs:
        rate = r.pages / r.wall if r.pages and r.wall else None
        base_rate = base.pages / base.wall if base.pages and base.wall else None
        ratio = f"{rate / base_rate:.2f}" if rate and base_rate else "-"
        same = "yes" if r.locs and r.locs == base.locs else "no"
        lines.append(
            f"{r.name:<22} {r.processes:>5} {r.pages or '-':>6} {r.wall:>7.1f} "
            f"{(f'{rate:.1f}' if rate else '-'):>8} {ratio:>6} {r.cpu:>6.1f} "
            f"{r.listed or '-':>6} {(r.from_workers if r.from_workers is not None else '-'):>10}"
            f"  {same}{'  ' + r.note.strip() if r.note else ''}"
        )
    return "\n".join(lines)


def bench_site(
    name: str, root: Path, tmp: Path, workers: list[int], redis_port: int, repeat: int
) -> str:
    work = tmp / name.replace(" ", "-")
    work.mkdir(parents=True)
    extra = "autoindex off; index index.html;" if root != DOCS else ""
    port, pid_file = python3_doc.start_nginx(work, extra, root=root)
    url = f"http://127.0.0.1:{port}/"
    configs: list[tuple[str, int | None]] = [("single process", None)]
    configs += [(f"redis + {k} worker{'s' if k != 1 else ''}", k) for k in workers]
    results: dict[str, list[Run]] = {label: [] for label, _ in configs}
    try:
        # Interleaved rounds, so that a burst of load elsewhere hits every setup alike.
        for round_ in range(repeat):
            for label, k in configs:
                print(f"[{name}] {label} (round {round_ + 1}) ...", file=sys.stderr)
                results[label].append(crawl(url, work / str(round_), label, k, redis_port))
        return table(name, [median(results[label]) for label, _ in configs], repeat)
    finally:
        if pid_file.exists():
            subprocess.run(["kill", pid_file.read_text().strip()], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workers",
        default="1",
        help="comma-separated worker counts beside the coordinator (default: 1)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each setup (median)")
    parser.add_argument("--synthetic", type=int, help="also a synthetic site of N pages")
    parser.add_argument("--no-docs", action="store_true", help="skip python3-doc")
    parser.add_argument("--keep", type=Path, help="keep the outputs in this directory")
    args = parser.parse_args()
    workers = [int(k) for k in args.workers.split(",")]
    ensure_packages()
    load_before = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="redis-scale-"))
    tmp.chmod(0o755)  # nginx's workers read the synthetic site under it
    server, redis_port = start_redis(tmp)
    tables = []
    try:
        if not args.no_docs:
            tables.append(bench_site("python3-doc", DOCS, tmp, workers, redis_port, args.repeat))
        if args.synthetic:
            site = tmp / "synthetic-site"
            write_site(site, args.synthetic)
            tables.append(
                bench_site(
                    f"synthetic {args.synthetic}", site, tmp, workers, redis_port, args.repeat
                )
            )
    finally:
        server.terminate()
        server.wait(timeout=10)
        if args.keep:
            shutil.copytree(tmp, args.keep / tmp.name, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
    # Other work on the machine shares the cores: say how busy it was.
    print(
        f"{time.strftime('%Y-%m-%d')}, {len(os.sched_getaffinity(0))} cores, load average "
        f"{load_before:.1f} before and {os.getloadavg()[0]:.1f} after"
    )
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
