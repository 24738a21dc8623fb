"""Nightly operation through Scrapyd: deploy the project and run a crawl by its API.

A real ``scrapyd`` runs as a subprocess on 127.0.0.1 with its own configuration and
directories under ``tmp_path``. The project is copied as a checkout holds it (no
``setup.py``, no build leftovers) and deployed with ``scrapyd-deploy``, which builds
the egg from ``pyproject.toml``; a crawl of the test site is then scheduled with
``schedule.json``, exactly as ``docs/scheduling.md`` tells an operator to, and the
sitemap set it publishes is validated and read back.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from configparser import ConfigParser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.sitemap import Sitemap

from tests.conftest import ROOT, MockServer
from tests.xsd import validate_index, validate_urlset

BIN = Path(sys.executable).parent
# Seconds scrapyd gets to start (twice that for the job): only a hang reaches them,
# not a busy machine.
STARTUP = 120
PAGES = ["/relative/one.html", "/relative/two.html", "/relative/three.html", "/relative/four.html"]
# What a checkout holds that the egg must not be built from: caches, environments and
# leftovers of earlier builds (an old *.egg-info would be reused as is).
NOT_IN_A_CHECKOUT = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "*.egg-info",
    "build",
    "dist",
    ".hypothesis",
    ".ruff_cache",
    ".pytest_cache",
    "bench",
    "tests",
    "public",
    "*.sitemap-state",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Scrapyd:
    """A running ``scrapyd`` and the directories its configuration names."""

    home: Path
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def output(self) -> str:
        """What scrapyd itself logged (its launcher reports each job's end here)."""
        return (self.home / "scrapyd.out").read_text(errors="replace")

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{endpoint}?{query}", timeout=10) as response:
            return json.load(response)

    def post(self, endpoint: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
        data = urllib.parse.urlencode(fields).encode()
        with urllib.request.urlopen(self.url + endpoint, data=data, timeout=10) as response:
            return json.load(response)


@pytest.fixture
def scrapyd(tmp_path: Path) -> Iterator[Scrapyd]:
    home = tmp_path / "scrapyd"
    home.mkdir()
    port = free_port()
    config = ConfigParser()
    config["scrapyd"] = {
        "bind_address": "127.0.0.1",
        "http_port": str(port),
        "eggs_dir": str(home / "eggs"),
        "logs_dir": str(home / "logs"),
        "items_dir": str(home / "items"),
        "dbs_dir": str(home / "dbs"),
        "max_proc": "1",
        # The default 5 s between queue polls would be most of this test's runtime.
        "poll_interval": "0.2",
    }
    with (home / "scrapyd.conf").open("w") as f:
        config.write(f)
    # scrapyd reads ./scrapyd.conf, and so does each job it runs (same working directory).
    # Its own session, so that teardown reaches the crawl processes it spawned too.
    with (home / "scrapyd.out").open("wb") as out:
        proc = subprocess.Popen(
            [str(BIN / "scrapyd")],
            cwd=home,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Scrapyd(home, port, proc)
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            if proc.poll() is not None:
                pytest.fail(f"scrapyd exited with {proc.returncode}:\n{server.output}")
            try:
                if server.get("daemonstatus.json")["status"] == "ok":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"scrapyd did not answer within {STARTUP} s:\n{server.output}")
            time.sleep(0.1)
        yield server
    finally:
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM scrapyd's process group, then SIGKILL what is left after 10 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    # Whatever of the group outlived scrapyd (a crawl it was running).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[MockServer]:
    server = MockServer("rules", tmp_path / "site.log")
    try:
        yield server
    finally:
        server.stop()


def deploy(scrapyd: Scrapyd, tmp_path: Path) -> tuple[str, Path]:
    """Deploy a clean copy of the project with ``scrapyd-deploy``; return the project
    name (from scrapy.cfg's ``[deploy]``) and the egg scrapyd stored."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, ignore=NOT_IN_A_CHECKOUT)
    cfg = ConfigParser()
    cfg.read(checkout / "scrapy.cfg")
    project = cfg.get("deploy", "project")
    # A target of our own; it inherits everything else from the shipped [deploy].
    with (checkout / "scrapy.cfg").open("a") as f:
        f.write(f"\n[deploy:test]\nurl = {scrapyd.url}\n")
    proc = subprocess.run(
        [str(BIN / "scrapyd-deploy"), "test", "--version", "nightly-1"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["status"] == "ok", proc.stdout
    eggs = list((scrapyd.home / "eggs" / project).glob("*.egg"))
    assert len(eggs) == 1, eggs
    return project, eggs[0]


def read_published(out: Path) -> tuple[bytes, dict[str, bytes]]:
    index = (out / "sitemap_index.xml").read_bytes()
    children = {}
    for entry in Sitemap(index):
        name = entry["loc"].rsplit("/", 1)[1]
        body = (out / name).read_bytes()
        children[name] = gzip.decompress(body) if name.endswith(".gz") else body
    return index, children


# scrapyd-deploy writes a setup.py naming the settings module in a `scrapy` entry point,
# but setuptools ignores setup() entry points when pyproject.toml has a [project] table,
# so the entry point lives in pyproject.toml ([project.entry-points.scrapy]).
def test_deploy_and_crawl_through_scrapyd(
    scrapyd: Scrapyd, site: MockServer, tmp_path: Path
) -> None:
    project, egg = deploy(scrapyd, tmp_path)

    # The egg holds one package, settings and pipelines inside it, and tells scrapyd
    # which settings module to use: without the `scrapy` entry point, the runner cannot
    # start any job. The settings' `pipelines.` paths find crawler.pipelines.
    with zipfile.ZipFile(egg) as z:
        names = z.namelist()
        entry_points = ConfigParser()
        entry_points.read_string(z.read("EGG-INFO/entry_points.txt").decode())
    assert {name.split("/", 1)[0] for name in names} == {"crawler", "EGG-INFO"}
    assert {"crawler/settings/__init__.py", "crawler/pipelines/ledger.py"} <= set(names)
    assert entry_points.has_section("scrapy"), "the egg has no `scrapy` entry point"
    assert entry_points.get("scrapy", "settings") == "crawler.settings"
    assert "site" in scrapyd.get("listspiders.json", project=project)["spiders"]

    out, state = tmp_path / "public", tmp_path / "state"
    scheduled = scrapyd.post(
        "schedule.json",
        [
            ("project", project),
            ("spider", "site"),
            ("url", site.url("/relative/one.html")),
            ("setting", f"SITEMAP_OUT_DIR={out}"),
            ("setting", f"SITEMAP_STATE_DIR={state}"),
            # The test site answers at once; no need to ramp up.
            ("setting", "AUTOTHROTTLE_START_DELAY=0"),
        ],
    )
    assert scheduled["status"] == "ok", scheduled
    job = scheduled["jobid"]

    deadline = time.monotonic() + 2 * STARTUP
    while job not in {j["id"] for j in scrapyd.get("listjobs.json", project=project)["finished"]}:
        assert scrapyd.proc.poll() is None, scrapyd.output
        assert time.monotonic() < deadline, f"job {job} not finished:\n{scrapyd.output}"
        time.sleep(0.2)

    # scrapyd logs "Process died: exitstatus=..." for a job that exits non-zero.
    assert "Process died" not in scrapyd.output, scrapyd.output
    log = (scrapyd.home / "logs" / project / "site" / f"{job}.log").read_text()
    assert "Traceback" not in log, log
    assert "Sitemap published" in log, log

    index, children = read_published(out)
    validate_index(index)
    listed = []
    for body in children.values():
        validate_urlset(body)
        listed.extend(entry["loc"] for entry in Sitemap(body))
    assert sorted(listed) == sorted(site.url(p) for p in PAGES)
    # The published set is the index, the files it names and the delta feed (issue 15).
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*children, "sitemap_index.xml", "changes.atom"]
    )
    assert (state / "ledger.sqlite").exists()

    # The project's settings were in force under scrapyd: robots.txt was read, with the
    # project's user agent, and nothing but the test site was asked.
    requests = site.requests()
    assert "/robots.txt" in {r["path"] for r in requests}
    assert {r["host"] for r in requests} == {f"127.0.0.1:{site.port}"}
    assert all(r["user_agent"].startswith("sitemap-crawler/") for r in requests)
