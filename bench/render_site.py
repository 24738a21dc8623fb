"""Rendering JavaScript-built pages: a generated single-page application of N pages
against its server-rendered twin, crawled with ``--render never``, ``auto`` and
``always`` (issue #16).

    python bench/render_site.py [--pages 1000] [--timeout 3600] [--modes ...] [--keep DIR]

Writes two sites of the same N pages (a complete 10-ary tree, as bench/synthetic.py:
page ``i`` links to the home page, its parent, its children and its two neighbours
on each side), each served by Debian's nginx on a free 127.0.0.1 port:

- **js**: a single-page application. Every route answers the same application shell
  (``<div id="root"></div>`` and ``/app.js``, nginx's ``try_files $uri /index.html``);
  the client-side router fetches the page's data from a JSON API (``/api/I.json``)
  and renders its title, text and links as ``<a href>``; an unknown route renders
  an in-app "not found" with a script-added noindex;
- **static**: the same pages, server-rendered as plain HTML: the raw-HTML crawl of
  the same site.

Each crawl is ``python -m crawler.cli crawl URL --out TMP --render MODE`` in a
subprocess under ``/usr/bin/time -v`` (wall, user+system CPU of the whole tree,
Chromium included: each parent waits for its children), with the memory of the
process tree (the crawl, its parsing worker, Playwright's driver, Chromium's
processes) sampled every 100 ms: the peak of the summed PSS (shared pages counted
once, by share) and of the summed RSS (shared pages counted in every process).
Prints one table: pages fetched, pages rendered, listed, recall and precision
against the N pages, wall and CPU seconds, listed pages per second, peak PSS/RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from python3_doc import start_nginx  # noqa: E402

PYTHON = ROOT / ".venv" / "bin" / "python"
TIME = Path("/usr/bin/time")
FANOUT = 10
TEXT = "A page of the generated application, with some text to hash. " * 4

SHELL = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>App</title>
<link rel="stylesheet" href="/app.css"></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div><script src="/app.js"></script></body></html>
"""

APP_JS = r"""
const root = document.getElementById("root");
const path = location.pathname;
const m = path === "/" ? ["", "0"] : /^\/p(\d+)$/.exec(path);
function notFound() {
  document.title = "Not found";
  const meta = document.createElement("meta");
  meta.name = "robots"; meta.content = "noindex";
  document.head.appendChild(meta);
  root.innerHTML = "<h1>Not found</h1>";
}
if (!m) {
  notFound();
} else {
  fetch(`/api/${m[1]}.json`).then(r => r.ok ? r.json() : null).then(page => {
    if (!page) { notFound(); return; }
    document.title = page.title;
    root.innerHTML = `<h1>${page.title}</h1><p>${page.text}</p><nav>` +
      page.links.map(h => `<a href="${h}">${h}</a>`).join(" ") + "</nav>";
  });
}
"""


def url_of(i: int) -> str:
    return "/" if i == 0 else f"/p{i}"


def links_of(i: int, n: int) -> list[str]:
    out = [0]
    if i:
        out.append((i - 1) // FANOUT)
    out += [c for c in range(FANOUT * i + 1, FANOUT * i + FANOUT + 1) if c < n]
    out += [j for j in (i - 2, i - 1, i + 1, i + 2) if 0 <= j < n and j != i]
    return [url_of(j) for j in dict.fromkeys(out)]


def write_sites(base: Path, n: int) -> tuple[Path, Path]:
    """The js and static twins of *n* pages under *base*."""
    js, static = base / "js", base / "static"
    (js / "api").mkdir(parents=True)
    static.mkdir(parents=True)
    (js / "index.html").write_text(SHELL)
    (js / "app.js").write_text(APP_JS)
    (js / "app.css").write_text("body { font-family: sans-serif; }\n")
    for i in range(n):
        title = f"Page p{i}"
        links = links_of(i, n)
        (js / "api" / f"{i}.json").write_text(
            json.dumps({"title": title, "text": f"{TEXT} ({i})", "links": links})
        )
        nav = " ".join(f'<a href="{h}">{h}</a>' for h in links)
        (static / ("index.html" if i == 0 else f"p{i}.html")).write_text(
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}'
            f"</title></head><body><h1>{title}</h1><p>{TEXT} ({i})</p><nav>{nav}</nav>"
            "</body></html>\n"
        )
    return js, static


NGINX_JS = "location / { try_files $uri /index.html; } location /api/ { try_files $uri =404; }"
NGINX_STATIC = "location / { try_files $uri.html $uri/index.html =404; }"


@dataclass
class Run:
    site: str
    mode: str
    rc: int | None = None
    wall: float = 0.0
    cpu: float | None = None
    pss_kb: int = 0
    rss_kb: int = 0
    pages: int | None = None
    rendered: int = 0
    requests: int | None = None
    listed: int | None = None
    recall: float | None = None
    precision: float | None = None
    note: str = ""
    kinds: dict[str, int] = field(default_factory=dict)
    cpu_kinds: dict[str, float] = field(default_factory=dict)
    cpu_from: str = "/proc"


def kind_of(cmdline: bytes) -> str:
    """What a process of the crawl is, from its command line: the crawler, Playwright's
    driver, or Chromium's browser, renderer, GPU, network or other utility process."""
    words = cmdline.replace(b"\0", b" ").split() or [b"?"]  # (Chromium's rewrite theirs)
    name = Path(words[0].decode(errors="replace")).name
    if "python" in name:
        return "crawler"
    if name == "node":
        return "driver"
    if "time" in name:
        return "time"
    for word in words:
        if word.startswith(b"--utility-sub-type="):
            return word.split(b".")[-1].decode(errors="replace").lower()
        if word.startswith(b"--type="):
            return word[7:].decode(errors="replace")
    return "browser" if "chrom" in name else name


def cpu_group(name: str) -> Path | None:
    """A new cgroup (v1 cpuacct) for one crawl, or None where none can be made."""
    group = Path("/sys/fs/cgroup/cpuacct") / f"render-bench-{os.getpid()}-{name}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


class TreeMemory(threading.Thread):
    """Samples the summed PSS and RSS of process *pid* and all its descendants
    (Chromium's processes start sessions of their own: a process group misses them)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_pss = self.peak_rss = 0
        # The PSS of each kind of process (:func:`kind_of`) at the peak, in kB.
        self.peak_kinds: dict[str, int] = {}
        # CPU seconds of every process of the crawl as last seen: /usr/bin/time counts
        # only the children that were waited for, and Chromium's renderers are not.
        self.cpu_ticks: dict[int, int] = {}
        self.pid_kinds: dict[int, str] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.1):
            parents: dict[int, int] = {}
            ticks: dict[int, int] = {}
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        fields = (entry / "stat").read_text().rpartition(")")[2].split()
                    except OSError:
                        continue
                    parents[int(entry.name)] = int(fields[1])
                    ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
            tree, grew = {self.pid}, True
            while grew:
                more = {p for p, pp in parents.items() if pp in tree} - tree
                grew = bool(more)
                tree |= more
            for pid in tree:
                if pid in ticks:
                    self.cpu_ticks[pid] = max(self.cpu_ticks.get(pid, 0), ticks[pid])
            pss = rss = 0
            kinds: dict[str, int] = {}
            counts: dict[str, int] = {}
            for pid in tree:
                try:
                    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
                    kind = kind_of(Path(f"/proc/{pid}/cmdline").read_bytes())
                except OSError:
                    continue
                self.pid_kinds[pid] = kind
                if m := re.search(r"^Pss:\s+(\d+) kB", text, re.M):
                    pss += int(m.group(1))
                    kinds[kind] = kinds.get(kind, 0) + int(m.group(1))
                    counts[kind] = counts.get(kind, 0) + 1
                if m := re.search(r"^Rss:\s+(\d+) kB", text, re.M):
                    rss += int(m.group(1))
            if pss > self.peak_pss:
                self.peak_kinds = {
                    (f"{k} x{counts[k]}" if counts[k] > 1 else k): v for k, v in kinds.items()
                }
            self.peak_pss = max(self.peak_pss, pss)
            self.peak_rss = max(self.peak_rss, rss)

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds seen of each kind of process (a process that ended between two
        samples loses what it used since the last one)."""
        seconds: dict[str, float] = {}
        for pid, ticks in self.cpu_ticks.items():
            kind = self.pid_kinds.get(pid, "?")
            seconds[kind] = seconds.get(kind, 0) + ticks / os.sysconf("SC_CLK_TCK")
        return seconds

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def crawl(
    site: str,
    mode: str,
    url: str,
    n: int,
    tmp: Path,
    timeout: float,
    root: Path,
    log: Path,
    extra: list[str],
) -> Run:
    run = Run(site, mode)
    before = log.stat().st_size if log.exists() else 0
    load = os.getloadavg()[0]
    timed_out = False
    work = Path(tempfile.mkdtemp(prefix=f"{site}-{mode}-", dir=tmp))
    out = work / "public"
    python = PYTHON if PYTHON.exists() else Path(sys.executable)
    cmd = [
        str(python),
        "-m",
        "crawler.cli",
        "crawl",
        url,
        "--out",
        str(out),
        "--render",
        mode,
        *extra,
    ]
    report = work / "time.txt"
    group = cpu_group(work.name)
    # In its own cpuacct cgroup when there is one: the CPU of every process of the crawl,
    # those that ended too (Chromium's renderers come and go with their contexts).
    enter = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh"] if group else []
    started = time.perf_counter()
    with open(work / "output.txt", "w") as out_log:
        proc = subprocess.Popen(
            [*enter, str(TIME), "-v", "-o", str(report), *cmd],
            cwd=root,
            stdout=out_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        watch = TreeMemory(proc.pid)
        watch.start()
        try:
            run.rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            timed_out = True
    run.wall = time.perf_counter() - started
    watch.stop()
    run.pss_kb, run.rss_kb = watch.peak_pss, watch.peak_rss
    run.kinds = watch.peak_kinds
    run.cpu_kinds = watch.cpu_by_kind()
    if log.exists():  # the site's access log: one line a request, this crawl's at its end
        with open(log, "rb") as f:
            f.seek(before)
            run.requests = sum(1 for _ in f)
    output = (work / "output.txt").read_text(errors="replace")
    text = report.read_text(errors="replace") if report.exists() else ""
    user = re.search(r"User time \(seconds\): ([\d.]+)", text)
    system = re.search(r"System time \(seconds\): ([\d.]+)", text)
    tree_cpu = sum(watch.cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")
    run.cpu = tree_cpu
    if user and system:  # the larger of the two: each can miss what the other sees
        run.cpu = max(tree_cpu, float(user.group(1)) + float(system.group(1)))
    if group is not None:
        run.cpu, run.cpu_from = int((group / "cpuacct.usage").read_text()) / 1e9, "cgroup"
        for _ in range(50):  # empty once the browser's last processes are gone
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    if m := re.search(r"^pages fetched: (\d+)", output, re.M):
        run.pages = int(m.group(1))
    if m := re.search(r"^rendered in Chromium: (\d+)", output, re.M):
        run.rendered = int(m.group(1))
    ledger = out.with_name("public.sitemap-state") / "ledger.sqlite"
    if ledger.exists():
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
        try:
            urls = [u for (u,) in db.execute("SELECT url FROM urls WHERE decision = 'listed'")]
        finally:
            db.close()
        base = url.rstrip("/")
        expected = {base + url_of(i) for i in range(n)}
        run.listed = len(urls)
        hits = len(expected & set(urls))
        run.recall = hits / n
        run.precision = hits / len(urls) if urls else None
    run.note = f"load {load:.1f}" + (f"; timed out after {timeout:.0f} s" if timed_out else "")
    if run.rc != 0 and not timed_out:
        run.note += f"; exit {run.rc}: " + (output.strip().splitlines() or [""])[-1][:80]
    return run


def table(n: int, runs: list[Run]) -> str:
    def fmt(value: float | int | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    lines = [
        f"{n} pages; js: the application (shell + router + JSON API), static: its "
        "server-rendered twin",
        f"{'site':<7} {'render':<7} {'fetched':>7} {'rendered':>8} {'listed':>6} "
        f"{'recall':>6} {'precis.':>7} {'wall s':>7} {'cpu s':>7} {'listed/s':>8} "
        f"{'rend/s':>6} {'cpu/rend':>8} {'req/page':>8} {'PSS MB':>7} {'RSS MB':>7}  note",
    ]
    for r in runs:
        rate = r.listed / r.wall if r.listed and r.wall else None
        rendered_rate = r.rendered / r.wall if r.rendered and r.wall else None
        cpu_rendered = r.cpu / r.rendered if r.rendered and r.cpu is not None else None
        per_page = r.requests / r.listed if r.requests is not None and r.listed else None
        lines.append(
            f"{r.site:<7} {r.mode:<7} {fmt(r.pages, 'd'):>7} {r.rendered:>8} "
            f"{fmt(r.listed, 'd'):>6} {fmt(r.recall, '.3f'):>6} {fmt(r.precision, '.3f'):>7} "
            f"{r.wall:>7.1f} {fmt(r.cpu, '.1f'):>7} {fmt(rate, '.1f'):>8} "
            f"{fmt(rendered_rate, '.1f'):>6} {fmt(cpu_rendered, '.3f'):>8} "
            f"{fmt(per_page, '.2f'):>8} "
            f"{r.pss_kb / 1024:>7.0f} {r.rss_kb / 1024:>7.0f}  {r.note}"
        )
    lines.append("PSS at the peak by process (MB):")
    for r in runs:
        parts = sorted(r.kinds.items(), key=lambda kv: -kv[1])
        kinds = ", ".join(f"{kind} {kb / 1024:.0f}" for kind, kb in parts)
        lines.append(f"  {r.site:<7} {r.mode:<7} {kinds}")
    lines.append("CPU s by process (sampled from /proc; 'cpu s' above: from the cgroup if so):")
    for r in runs:
        parts2 = sorted(r.cpu_kinds.items(), key=lambda kv: -kv[1])
        cpu = ", ".join(f"{kind} {sec:.1f}" for kind, sec in parts2)
        lines.append(f"  {r.site:<7} {r.mode:<7} {cpu}; total {r.cpu or 0:.1f} ({r.cpu_from})")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument(
        "--runs",
        default="static:never,static:auto,static:always,js:never,js:auto,js:always",
        help="SITE:MODE pairs, in order",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="also crawl with the crawler of this checkout (a git worktree of the code "
        "to compare with), each run right before the same run with this one",
    )
    parser.add_argument("--keep", type=Path, help="copy the work directory here")
    parser.add_argument(
        "--crawl-args",
        default="",
        help="more words for every crawl's command line, e.g. '--render-concurrency 2'",
    )
    args = parser.parse_args()
    if not Path("/usr/sbin/nginx").exists():
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True)
    tmp = Path(tempfile.mkdtemp(prefix="render-bench-"))
    tmp.chmod(0o755)  # nginx's workers read the sites under it
    pids: list[Path] = []
    try:
        js, static = write_sites(tmp / "sites", args.pages)
        urls = {}
        for name, root, extra in (("js", js, NGINX_JS), ("static", static, NGINX_STATIC)):
            conf_dir = tmp / f"nginx-{name}"
            conf_dir.mkdir()
            port, pid = start_nginx(conf_dir, extra, root=root)
            pids.append(pid)
            urls[name] = f"http://127.0.0.1:{port}/"
        trees = [("", ROOT)]
        if args.baseline:
            trees.insert(0, ("before ", args.baseline.resolve()))
        runs = []
        for pair in args.runs.split(","):
            site, mode = pair.split(":")
            for label, tree in trees:
                print(f"[{label}{site}] --render {mode} ...", file=sys.stderr)
                run = crawl(
                    site,
                    mode,
                    urls[site],
                    args.pages,
                    tmp,
                    args.timeout,
                    tree,
                    tmp / f"nginx-{site}" / "access.log",
                    shlex.split(args.crawl_args),
                )
                run.note = (label.strip() + " " + run.note).strip()
                runs.append(run)
                text = table(args.pages, [run]).splitlines()
                print(text[2], text[-3], text[-1], sep="\n", file=sys.stderr)
        print(
            f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  cores: "
            f"{len(os.sched_getaffinity(0))}  load: {os.getloadavg()[0]:.1f}"
        )
        print(table(args.pages, runs))
    finally:
        for pid in pids:
            if pid.exists():
                subprocess.run(["kill", pid.read_text().strip()], check=False)
        if args.keep:
            shutil.copytree(
                tmp,
                args.keep / tmp.name,
                ignore=shutil.ignore_patterns("sites"),
                dirs_exist_ok=True,
            )
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
