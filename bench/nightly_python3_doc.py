"""Real-site nightly check: two runs of an unchanged python3-doc served by nginx.

    python bench/nightly_python3_doc.py

Runs ``sitemap-crawler crawl`` twice on the same state directory against Debian's
python3-doc HTML served by nginx on 127.0.0.1 (nginx sends ETag and Last-Modified
and answers conditional requests with 304). The second run must download no page
body the server could validate (nginx's access log: no 200 for an HTML page),
republish byte-identical files, and take a fraction of the first run's time.
Prints the figures; exit status 1 if a check fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from python3_doc import ROOT, ensure_packages, start_nginx  # noqa: E402


def run(base: str, work: Path) -> tuple[float, Counter[str], dict[str, object]]:
    log = work / "access.log"
    log.write_text("")
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "crawl", base, "--out", str(work / "public")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    time.sleep(0.2)  # nginx writes its log line after the response
    statuses: Counter[str] = Counter()
    for line in log.read_text().splitlines():
        status, _method, uri, _size = line.split(" ", 3)
        kind = "html" if uri.endswith((".html", "/")) else "other"
        statuses[f"{kind} {status}"] += 1
    report = json.loads((work / "public.sitemap-state" / "report.json").read_text())
    return seconds, statuses, report


def main() -> int:
    ensure_packages()
    work = Path(tempfile.mkdtemp(prefix="nightly-python3-doc-"))
    port, pid_file = start_nginx(work)
    base = f"http://127.0.0.1:{port}/"
    try:
        first_s, first, rep1 = run(base, work)
        files1 = {p.name: p.read_bytes() for p in (work / "public").iterdir()}
        second_s, second, rep2 = run(base, work)
        files2 = {p.name: p.read_bytes() for p in (work / "public").iterdir()}
    finally:
        subprocess.run(["kill", pid_file.read_text().strip()], check=False)
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{'run':<7} {'secs':>6} {'HTML 200':>9} {'HTML 304':>9} {'conditional':>12} {'listed':>7}"
    )
    for name, secs, st, rep in (
        ("first", first_s, first, rep1),
        ("second", second_s, second, rep2),
    ):
        print(
            f"{name:<7} {secs:>6.1f} {st['html 200']:>9} {st['html 304']:>9} "
            f"{rep['conditional_requests']:>12} {rep['listed']:>7}"
        )
    identical = files1 == files2
    print(
        f"second/first time: {second_s / first_s:.2f}  byte-identical output: {identical}  "
        f"added/removed/lastmod changes: {len(rep2['added'])}/{len(rep2['removed'])}/"
        f"{len(rep2['lastmod_changes'])}"
    )
    ok = identical and second["html 200"] == 0 and not rep2["added"] and not rep2["removed"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
