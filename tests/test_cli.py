"""The command line as a user runs it: a subprocess, real exit codes, one-line
errors and no tracebacks; plus the same crawl through ``scrapy crawl site``."""

from __future__ import annotations

import json
import pstats
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, MockServer, cli, scrapy, wait_for

OPTIONS = [
    "--out",
    "--state",
    "--base-url",
    "--max-pages",
    "--max-depth",
    "--concurrency",
    "--delay",
    "--user-agent",
    "--include",
    "--exclude",
    "--max-urls-per-file",
    "--max-bytes-per-file",
    "--no-gzip",
    "--format",
    "--set",
]


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    """Bad input: exactly one line on stderr, no traceback."""
    assert proc.returncode == code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("sitemap-crawler")
    assert text in lines[0]


def assert_failure_last_line(proc: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    """A crawl that could not do its job: the summary, then one error line last."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("sitemap-crawler: ")
    assert text in lines[-1]
    assert sum(1 for line in lines if line.startswith("sitemap-crawler")) == 1


def test_help_documents_every_option() -> None:
    proc = cli("crawl", "--help")
    assert proc.returncode == 0
    for option in OPTIONS:
        assert option in proc.stdout
    assert "Exit status" in proc.stdout


def test_crawl_publishes_and_prints_summary(site: MockServer, tmp_path: Path) -> None:
    out = tmp_path / "public"
    proc = cli(
        "crawl",
        site.url("/relative/one.html"),
        "--out",
        str(out),
        "--max-urls-per-file",
        "2",
        "--no-gzip",
        "-s",
        "AUTOTHROTTLE_START_DELAY=0",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "listed: 4" in proc.stderr
    assert f"Sitemap: {site.url('/relative/sitemap_index.xml')}" in proc.stderr
    # Issue 15: the delta feed (changes.atom) is published beside the index.
    assert (out / "changes.atom").is_file()
    names = sorted(p.name for p in out.iterdir() if p.name != "changes.atom")
    assert len(names) == 3 and names[-1] == "sitemap_index.xml"
    assert all(n.endswith(".xml") for n in names)
    assert (tmp_path / "public.sitemap-state" / "ledger.sqlite").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["crawl", "not a url"], "not an http(s) URL: 'not a url'"),
        (["crawl", "ftp://example.com/"], "not an http(s) URL"),
        (["crawl", "http://"], "not an http(s) URL"),
        (["crawl", "http://127.0.0.1:99999/"], "not an http(s) URL"),
        (
            ["crawl", "http://127.0.0.1/", "--max-pages", "lots"],
            "argument --max-pages: 'lots': must be a whole number of at least 0",
        ),
        (
            ["crawl", "http://127.0.0.1/", "--concurrency", "0"],
            "--concurrency: '0': must be a whole number of at least 1",
        ),
        (
            ["crawl", "http://127.0.0.1/", "--delay", "-1"],
            "--delay: '-1': must be a number from 0 to 3600",
        ),
        (
            ["crawl", "http://127.0.0.1/", "--include", "("],
            "--include: '(' is not a regular expression",
        ),
        (
            ["crawl", "http://127.0.0.1/", "--format", "json"],
            "--format: 'json': must be one of xml, txt",
        ),
        (
            ["crawl", "http://127.0.0.1/", "--max-urls-per-file", "60000"],
            "argument --max-urls-per-file: '60000': must be a whole number from 1 to 50000 (a file "
            "cannot exceed the protocol's 50000 URLs)",
        ),
        (
            ["crawl", "http://127.0.0.1/", "--ca-file", "no-such-ca.pem"],
            "argument --ca-file: 'no-such-ca.pem': no such file",
        ),
        (
            ["crawl", "http://127.0.0.1/", "--base-url", "mailto:x@y"],
            "--base-url must be an http(s) URL",
        ),
        (["crawl", "http://127.0.0.1/", "-s", "NOEQUALS"], "expected NAME=VALUE"),
        (["crawl", "http://127.0.0.1/", "--bogus"], "unrecognized arguments: --bogus"),
        (["crawl"], "a start URL is required"),
        *(
            (["audit", "http://127.0.0.1:9/", *args], message)
            for args, message in [
                (["--fail-on", "nonsense"], "unknown class 'nonsense'"),
                (["--fail-under", "120"], "must be between 0 and 100"),
                (["--state", "/nonexistent"], "no finished crawl in /nonexistent"),
                (["--sitemap", "/nonexistent.xml"], "is neither a URL nor a readable file"),
            ]
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    proc = cli(*args, cwd=tmp_path)
    assert_one_line_error(proc, 2, message)
    assert not (tmp_path / "public").exists() or not any((tmp_path / "public").iterdir())


@pytest.mark.parametrize("text", ["not a url", "ftp://example.com/", "http://", "mailto:a@b"])
def test_no_scheme_is_suggested_for_what_is_not_a_host(text: str, tmp_path: Path) -> None:
    proc = cli("crawl", text, cwd=tmp_path)
    assert_one_line_error(proc, 2, f"not an http(s) URL: {text!r}")
    assert "did you mean" not in proc.stderr


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("max-pagse = 3\n", "unknown option 'max-pagse'; did you mean 'max-pages'?"),
        ("max_pagse = 3\n", "unknown option 'max_pagse'; did you mean 'max_pages'?"),
        ("[setings]\nX = 1\n", "unknown option 'setings'; did you mean 'settings'?"),
        ("colour = 3\n", "unknown option 'colour'"),
    ],
)
def test_a_mistyped_config_key_gets_the_closest_option(
    config: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "site.toml"
    path.write_text(f'url = "http://127.0.0.1:9/"\n{config}')
    for command in ("crawl", "audit"):
        proc = cli(command, "--config", str(path), cwd=tmp_path)
        assert_one_line_error(proc, 2, f"--config {path}: {message}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.toml"]


def test_state_inside_output_is_refused(tmp_path: Path) -> None:
    proc = cli(
        "crawl",
        "http://127.0.0.1/",
        "--out",
        str(tmp_path / "pub"),
        "--state",
        str(tmp_path / "pub" / "st"),
    )
    assert_one_line_error(proc, 2, "must not be inside the published directory")


def test_unwritable_output_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = cli("crawl", "http://127.0.0.1/", "--out", str(blocker / "public"))
    assert_one_line_error(proc, 2, f"cannot write to {blocker / 'public'}")


def test_unreachable_host_exits_3(tmp_path: Path, closed_port: int) -> None:
    port = closed_port
    proc = cli(
        "crawl",
        f"http://127.0.0.1:{port}/",
        "--out",
        str(tmp_path / "public"),
        "-s",
        "RETRY_TIMES=0",
    )
    # Issue 13: the site cannot be reached, said once, in a few words.
    assert_failure_last_line(proc, 3, f"cannot reach http://127.0.0.1:{port} (connection refused)")
    # Nothing was published: no empty --out directory is left behind (issue 24).
    assert not (tmp_path / "public").exists()
    # The start URL could not be fetched: no cap was reached.
    assert "cap-reached" not in proc.stderr
    assert "excluded: fetch-error 1" in proc.stderr
    report = json.loads((tmp_path / "public.sitemap-state" / "report.json").read_text())
    assert report["excluded"] == {"fetch-error": 1}
    assert report["pages_fetched"] == 0
    html = (tmp_path / "public.sitemap-state" / "report.html").read_text()
    assert "cap-reached" not in html


def test_an_existing_out_directory_is_kept(tmp_path: Path, closed_port: int) -> None:
    (tmp_path / "public").mkdir()
    proc = cli("crawl", f"http://127.0.0.1:{closed_port}/", "--out", str(tmp_path / "public"))
    assert proc.returncode == 3
    assert (tmp_path / "public").is_dir()


def test_a_robots_txt_answered_500_disallows_everything(servers: Any, tmp_path: Path) -> None:
    """RFC 9309 2.3.1.4: a 5xx robots.txt means nothing may be fetched for now. Only
    robots.txt was requested: no page fetched, and the start URL is recorded as
    disallowed by it, not as a cap reached."""
    site = servers("500")
    proc = cli("crawl", site.url("/"), "--out", str(tmp_path / "public"), "-s", "RETRY_TIMES=0")
    assert_failure_last_line(proc, 3, "robots.txt of")
    assert [r["path"] for r in site.requests() if r["path"] != "/robots.txt"] == []
    assert "pages fetched: 0" in proc.stderr
    assert "cap-reached" not in proc.stderr
    assert "robots.txt: unreachable (HTTP 500), so nothing may be fetched" in proc.stderr
    assert "excluded: robots-disallowed 1" in proc.stderr
    report = json.loads((tmp_path / "public.sitemap-state" / "report.json").read_text())
    assert report["pages_fetched"] == 0
    assert report["excluded"] == {"robots-disallowed": 1}
    assert report["robots"]["state"] == "unreachable"
    assert not (tmp_path / "public").exists()


def test_a_robots_txt_answered_404_is_said_to_be_missing(servers: Any, tmp_path: Path) -> None:
    site = servers("404")
    proc = cli("crawl", site.url("/relative/one.html"), "--out", str(tmp_path / "public"))
    assert proc.returncode == 0, proc.stderr
    assert "robots.txt: not there (HTTP 404), so everything is allowed" in proc.stderr
    assert "no group for" not in proc.stderr
    report = json.loads((tmp_path / "public.sitemap-state" / "report.json").read_text())
    assert report["robots"]["state"] == "unavailable"
    assert report["robots"]["why"] == "HTTP 404"


def test_nothing_listed_exits_3(site: MockServer, tmp_path: Path) -> None:
    proc = cli("crawl", site.url("/gone-404"), "--out", str(tmp_path / "public"))
    assert_failure_last_line(proc, 3, "nothing listed (start URL")
    assert "HTTP 404" in proc.stderr


def test_sigint_publishes_nothing_and_exits_130(servers: object, tmp_path: Path) -> None:
    server = servers("crawl-delay")  # type: ignore[operator]
    out = tmp_path / "public"
    out.mkdir()
    (out / "sitemap_index.xml").write_text("previous")
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "crawl", server.url("/"), "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Crawl-delay 1 s: the crawl is slow enough to be interrupted mid-way.
    wait_for(lambda: len(server.requests()) >= 3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "not published" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["sitemap_index.xml"]
    assert (out / "sitemap_index.xml").read_text() == "previous"


def test_scrapy_crawl_from_the_project_root(site: MockServer, tmp_path: Path) -> None:
    proc = scrapy(
        *("crawl", "site", "-a", f"url={site.url('/relative/one.html')}"),
        *("-s", f"SITEMAP_OUT_DIR={tmp_path / 'public'}", "-s", "LOG_LEVEL=INFO"),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Sitemap published" in proc.stderr
    assert (tmp_path / "public" / "sitemap_index.xml").exists()


def test_unwritable_places_are_named_and_nothing_is_left_behind(tmp_path: Path) -> None:
    proc = cli("crawl", "http://127.0.0.1/", "--out", "/proc")
    assert_one_line_error(proc, 2, "cannot write to /proc: files cannot be created there")
    out = tmp_path / "public"
    proc = cli("crawl", "http://127.0.0.1/", "--out", str(out), "--state", "/proc/x/state")
    assert_one_line_error(proc, 2, "cannot write to /proc/x/state (in /proc)")
    assert not out.exists()  # the good --out is not made when --state is bad


def test_a_second_interrupt_stops_at_once_and_tidies_up(servers: object, tmp_path: Path) -> None:
    # robots.txt never answers: the first Ctrl-C waits for it (up to the download
    # timeout, ten minutes here); the second stops the reactor at once.
    server = servers("slow")  # type: ignore[operator]
    out = tmp_path / "public"
    out.mkdir()
    (out / "sitemap_index.xml").write_text("previous")
    state = tmp_path / "public.sitemap-state"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "crawler.cli", "crawl", server.url("/"), "--out", str(out)),
            *("--log-level", "INFO", "-s", "DOWNLOAD_TIMEOUT=600"),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True)
    reader.start()
    # The crawl has started (Scrapy has the signals): the second robots.txt request, after
    # the start URL's pre-flight gave up on the first.
    wait_for(lambda: len(server.requests()) >= 2)
    proc.send_signal(signal.SIGINT)
    # The second once the first was taken (two at once are one signal to Python).
    wait_for(lambda: any("shutting down gracefully" in line for line in lines))
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    proc.wait(timeout=300)
    assert time.monotonic() - started < 120  # not the ten minutes of a graceful stop
    reader.join(timeout=60)
    proc.stderr.close()
    proc.stdout.close()  # type: ignore[union-attr]
    stderr = "".join(lines)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        "sitemap-crawler: stopped at once by a second interrupt; nothing was published"
    )
    assert (out / "sitemap_index.xml").read_text() == "previous"
    left = sorted(p.name for p in state.iterdir())
    assert "ledger.running.sqlite" not in left and "lock" not in left and "job" not in left
    assert "ledger.failed.sqlite" in left


def test_the_summary_says_which_robots_group_applied(site: MockServer, tmp_path: Path) -> None:
    out = tmp_path / "public"
    proc = cli("crawl", site.url("/relative/one.html"), "--out", str(out), "--robots-agent", "bot")
    assert proc.returncode == 0, proc.stderr
    assert "robots.txt: the group for every agent (*) applied to bot" in proc.stderr
    report = json.loads((tmp_path / "public.sitemap-state" / "report.json").read_text())
    assert report["robots"] == {"token": "bot", "group": "*", "state": "parsed", "why": None}
    proc = cli("crawl", site.url("/relative/one.html"), "--out", str(out))
    assert "robots.txt: the group for sitemap-crawler applied to sitemap-crawler" in proc.stderr


def test_an_unreachable_site_is_said_once(tmp_path: Path, closed_port: int) -> None:
    port = closed_port
    proc = cli("crawl", f"http://127.0.0.1:{port}/", "--out", str(tmp_path / "p"))
    assert_failure_last_line(proc, 3, f"http://127.0.0.1:{port}")
    assert proc.stderr.count("refused") == 1, proc.stderr
    assert "since the last run" not in proc.stderr


def readme_commands() -> list[list[str]]:
    """README.md's first ``crawl`` and its ``audit`` command lines, as arguments."""
    text = (ROOT / "README.md").read_text()
    found = []
    for command in ("crawl", "audit"):
        line = re.search(rf"^\.venv/bin/sitemap-crawler {command} [^#\n]*", text, re.M)
        assert line, f"README.md gives no {command} command"
        found.append(shlex.split(line.group(0))[1:])
    return found


@pytest.mark.skipif(
    not (ROOT / ".git").exists() or shutil.which("git") is None, reason="not a git checkout"
)
def test_readmes_commands_leave_git_status_clean(site: MockServer, tmp_path: Path) -> None:
    """What README's crawl and audit write where they are run (the default state
    directory beside --out, the audit's --report) is in .gitignore."""
    for args in readme_commands():
        # The site in README's examples (https://www.example.com/, or example.com as typed).
        at = site.url("/relative/one.html")
        args = [at if a.startswith("https://") or a == "example.com" else a for a in args]
        proc = cli(*args, "-s", "AUTOTHROTTLE_START_DELAY=0", cwd=tmp_path)
        assert proc.returncode in (0, 5), proc.stderr  # 5: the audit's --fail-under
    written = sorted(p.name + "/" if p.is_dir() else p.name for p in tmp_path.iterdir())
    assert {"public/", "public.sitemap-state/", "audit/"} <= set(written)
    ignored = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(written),
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert sorted(ignored) == written


def test_the_program_exits_as_the_interpreter_would_less_its_teardown() -> None:
    """exit_now: a running thread finishes, atexit handlers run, buffered output is
    written, and the status is kept; importing the command line leaves the GC on."""
    code = (
        "import atexit, gc, sys, threading\n"
        "from crawler.cli import exit_now\n"
        "go = threading.Event()\n"
        "threading.Thread(target=lambda: (go.wait(), print('thread', end=' '))).start()\n"
        "atexit.register(print, 'atexit')\n"
        "print('gc', gc.isenabled(), end=' ')\n"
        "go.set()\n"
        "exit_now(5)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (5, "gc True thread atexit\n", "")


def test_a_profiled_run_writes_its_profile(tmp_path: Path) -> None:
    """Under a profiler the program exits normally, so that the profiler writes what it
    measured (an exit without teardown would end the process first)."""
    prof = tmp_path / "run.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "crawler.cli", "crawl"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "a start URL is required" in done.stderr  # (cProfile swallows the status)
    assert pstats.Stats(str(prof)).total_calls > 0
