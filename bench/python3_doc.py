"""Real-site check: crawl Debian's python3-doc HTML served by nginx on 127.0.0.1.

    python bench/python3_doc.py [--keep DIR]

Installs ``python3-doc`` and ``nginx-light`` with apt-get when missing (as root),
starts nginx on a free loopback port with a throw-away configuration, then runs
three crawls through the real command line:

1. the default crawl;
2. ``--max-urls-per-file 100`` (rotation);
3. ``--base-url https://docs.python.org/3/`` (publishing for another address).

For each it validates every published file against ../shared/xsd, reads the files
back with Scrapy's own sitemap parser, and compares the listed pages with a
file-based reachability count (bench/reachability.py): recall and precision.
Prints one table; exit status 1 if any check fails. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lxml import etree
from scrapy.utils.sitemap import Sitemap

ROOT = Path(__file__).resolve().parents[1]
XSD = ROOT / "tests" / "xsd"
DOCS = Path("/usr/share/doc/python3/html")

NGINX_CONF = """\
worker_processes 2;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
daemon on;
events {{ worker_connections 1024; }}
http {{
  include /etc/nginx/mime.types;
  log_format brief '$status $request_method $uri $body_bytes_sent';
  access_log {tmp}/access.log brief;
  gzip on;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fcgi; uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  server {{ listen 127.0.0.1:{port}; root {root}; {extra} }}
}}
"""


def ensure_packages() -> None:
    missing = [
        p
        for p, probe in (
            ("python3-doc", DOCS / "index.html"),
            ("nginx-light", Path("/usr/sbin/nginx")),
        )
        if not probe.exists()
    ]
    if missing:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(tmp: Path, extra: str = "", root: Path = DOCS) -> tuple[int, Path]:
    """nginx serving *root* (the docs) on a free loopback port; *extra* goes in the
    server block."""
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, root=root.resolve(), extra=extra))
    subprocess.run(["nginx", "-c", str(conf)], check=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return port, tmp / "nginx.pid"
        time.sleep(0.1)
    raise RuntimeError("nginx did not start")


def check_published(out: Path) -> tuple[int, int]:
    """Validate the set; return (files, URLs) as read back by Scrapy's parser."""
    urlset = etree.XMLSchema(etree.parse(str(XSD / "sitemap.xsd")))
    siteindex = etree.XMLSchema(etree.parse(str(XSD / "siteindex.xsd")))
    index = (out / "sitemap_index.xml").read_bytes()
    siteindex.assertValid(etree.fromstring(index))
    files = urls = 0
    for entry in Sitemap(index):
        data = gzip.decompress((out / entry["loc"].rsplit("/", 1)[1]).read_bytes())
        urlset.assertValid(etree.fromstring(data))
        files += 1
        urls += sum(1 for _ in Sitemap(data))
    return files, urls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="keep outputs in this directory")
    args = parser.parse_args()
    ensure_packages()
    work = Path(tempfile.mkdtemp(prefix="python3-doc-"))
    port, pid_file = start_nginx(work)
    url = f"http://127.0.0.1:{port}/"
    runs = {
        "default": [],
        "rotation 100": ["--max-urls-per-file", "100"],
        "base-url": ["--base-url", "https://docs.python.org/3/"],
    }
    rows = []
    failed = False
    try:
        for name, extra in runs.items():
            out = work / name.replace(" ", "-") / "public"
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "crawler.cli", "crawl", url, "--out", str(out), *extra],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            seconds = time.perf_counter() - started
            if proc.returncode != 0:
                print(proc.stdout, proc.stderr, sep="\n")
                failed = True
                continue
            files, urls = check_published(out)
            base = extra[1] if name == "base-url" else None
            locs_ok = True
            if base:
                index = (out / "sitemap_index.xml").read_bytes()
                locs_ok = all(e["loc"].startswith(base) for e in Sitemap(index))
            reach = subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "bench" / "reachability.py"),
                    "--root",
                    str(DOCS),
                    "--url",
                    url,
                    "--ledger",
                    str(out.with_name("public.sitemap-state") / "ledger.sqlite"),
                    *(["--base-url", base] if base else []),
                ],
                capture_output=True,
                text=True,
            )
            lines = reach.stdout.splitlines()
            expected = lines[0].rsplit(": ", 1)[1]
            rows.append(
                (
                    name,
                    expected,
                    urls,
                    files,
                    f"{seconds:.1f}",
                    lines[2],
                    "yes" if locs_ok else "NO",
                )
            )
            failed |= reach.returncode != 0 or not locs_ok
            if reach.returncode != 0:
                print(reach.stdout)
    finally:
        subprocess.run(["kill", pid_file.read_text().strip()], check=False)
        if args.keep:
            for name in runs:
                run_dir = work / name.replace(" ", "-")
                if run_dir.exists():
                    shutil.copytree(run_dir, args.keep / run_dir.name, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{'run':<14} {'expected':>8} {'listed':>6} {'files':>5} {'secs':>6}  "
        f"{'against the files':<36} XSD+readback  locs"
    )
    for name, expected, urls, files, secs, recall, locs in rows:
        print(
            f"{name:<14} {expected:>8} {urls:>6} {files:>5} {secs:>6}  "
            f"{recall:<36} ok            {locs}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
