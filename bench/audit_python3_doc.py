"""Real-site audit check: python3-doc with a sitemap edited by hand.

    python bench/audit_python3_doc.py

Serves Debian's python3-doc HTML with nginx on 127.0.0.1 (plus one page that says
noindex, linked from nowhere), publishes its sitemap with ``sitemap-crawler crawl``,
then edits that sitemap the way sites go wrong: drops five live pages and adds a
dead URL, a redirected one, the noindex page and an off-host URL. ``sitemap-crawler
audit --sitemap edited.xml`` must report exactly those edits: the five as
``missing``, each added URL in its class, everything else ``indexable``, and no
protocol problem. Prints the comparison; exit status 1 on any difference.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scrapy.utils.sitemap import Sitemap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from python3_doc import ROOT, ensure_packages, start_nginx  # noqa: E402

NOINDEX_PAGE = (
    '<!DOCTYPE html><html><head><meta name="robots" content="noindex">'
    "<title>draft</title></head><body>draft</body></html>"
)


def main() -> int:
    ensure_packages()
    work = Path(tempfile.mkdtemp(prefix="audit-python3-doc-"))
    (work / "draft.html").write_text(NOINDEX_PAGE)
    work.chmod(0o755)  # nginx's workers run as www-data
    extra = f"location = /draft.html {{ alias {work / 'draft.html'}; default_type text/html; }}"
    port, pid_file = start_nginx(work, extra)
    base = f"http://127.0.0.1:{port}/"
    failed = False
    try:
        pub = work / "public"
        crawl = subprocess.run(
            [sys.executable, "-m", "crawler.cli", "crawl", base, "--out", str(pub)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if crawl.returncode != 0:
            print(crawl.stdout, crawl.stderr)
            return 1
        locs: list[str] = []
        for child in Sitemap((pub / "sitemap_index.xml").read_bytes()):
            data = gzip.decompress((pub / child["loc"].rsplit("/", 1)[1]).read_bytes())
            locs += [e["loc"] for e in Sitemap(data)]
        dropped = [locs[i] for i in (10, 100, 200, 300, 400)]
        added = {
            base + "no-such-page.html": "4xx",
            base + "library": "redirect",
            base + "draft.html": "noindex",
            "https://docs.python.org/3/whatsnew/index.html": "off-host",
        }
        kept = [u for u in locs if u not in dropped] + list(added)
        edited = work / "edited.xml"
        edited.write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            + "".join(f"<url><loc>{u}</loc></url>\n" for u in kept)
            + "</urlset>\n"
        )
        started = time.perf_counter()
        audit = subprocess.run(
            [
                sys.executable,
                "-m",
                "crawler.cli",
                "audit",
                base,
                "--sitemap",
                str(edited),
                "--report",
                str(work / "report"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        seconds = time.perf_counter() - started
        print(audit.stdout)
        if audit.returncode != 0:
            print(audit.stderr)
            return 1
        report = json.loads((work / "report" / "audit.json").read_text())
        found: dict[str, set[str]] = {}
        for u in report["urls"]:
            found.setdefault(u["class"], set()).add(u["url"])
        expected: dict[str, set[str]] = {"missing": set(dropped)}
        for url, cls in added.items():
            expected.setdefault(cls, set()).add(url)
        print(f"{'class':<12} {'expected':>8} {'reported':>8}  match")
        for cls in sorted(set(found) | set(expected) - {"indexable"}):
            if cls == "indexable":
                continue
            ok = found.get(cls, set()) == expected.get(cls, set())
            failed |= not ok
            print(
                f"{cls:<12} {len(expected.get(cls, ())):>8} {len(found.get(cls, ())):>8}  "
                f"{'yes' if ok else 'NO'}"
            )
        indexable_ok = found.get("indexable", set()) == set(locs) - set(dropped)
        failed |= not indexable_ok
        print(
            f"{'indexable':<12} {len(set(locs) - set(dropped)):>8} "
            f"{len(found.get('indexable', ())):>8}  {'yes' if indexable_ok else 'NO'}"
        )
        print(f"protocol problems: {len(report['problems'])}  audit took {seconds:.1f} s")
        failed |= bool(report["problems"])
    finally:
        subprocess.run(["kill", pid_file.read_text().strip()], check=False)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
