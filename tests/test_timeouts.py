"""The suite's time limit (pytest-timeout, with tests/conftest.py's handling of the
reactor): a test that hangs fails alone, with its stack, and the tests after it run,
those that need the reactor too; and no other clock fails a test that is only slow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

HANGING = """
import asyncio
import time

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred


async def stuck_somewhere_deep() -> None:
    await asyncio.sleep(3600)


async def on_the_way() -> None:
    await stuck_somewhere_deep()


@pytest.mark.timeout(2)
@pytest_twisted.ensureDeferred
async def test_waits_on_a_task_forever() -> None:
    await Deferred.fromFuture(asyncio.ensure_future(on_the_way()))


@pytest.mark.timeout(2)
@pytest_twisted.ensureDeferred
async def test_waits_on_a_deferred_forever() -> None:
    await Deferred()


@pytest.mark.timeout(2)
def test_blocks_forever() -> None:
    time.sleep(3600)


@pytest.mark.timeout(2)
@pytest_twisted.ensureDeferred
async def test_blocks_between_two_awaits() -> None:
    await Deferred.fromFuture(asyncio.ensure_future(asyncio.sleep(0)))
    time.sleep(3600)


@pytest_twisted.ensureDeferred
async def test_the_reactor_still_runs() -> None:
    await Deferred.fromFuture(asyncio.ensure_future(asyncio.sleep(0.01)))


def test_plain_tests_still_run() -> None:
    pass
"""


# As the suite runs (in pytest-xdist's worker processes, pyproject.toml), and in one.
@pytest.mark.parametrize("workers", [["-n", "2"], ["-n", "0"]], ids=["workers", "one-process"])
def test_a_hang_fails_one_test_and_the_suite_goes_on(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_pyfunc_call, pytest_timeout_set_timer  # noqa: F401\n"
    )
    (tmp_path / "test_hanging.py").write_text(HANGING)
    run = subprocess.run(
        [
            # -rN: no short summary, so each message is counted once however wide the terminal.
            *(sys.executable, "-m", "pytest", "-q", "-rN", "-p", "no:cacheprovider"),
            *("--reactor=asyncio", *workers, "--rootdir", str(tmp_path), str(tmp_path)),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = run.stdout
    assert "4 failed, 2 passed" in out, out
    assert out.count("Timeout (>2 s) from pytest-timeout, waiting on the reactor") == 2, out
    assert out.count("Timeout (>2.0s) from pytest-timeout") == 2, out
    # Where the task that never ends is stuck, and where the blocked tests are.
    assert "in on_the_way" in out and "in stuck_somewhere_deep" in out, out
    assert "await asyncio.sleep(3600)" in out, out
    assert out.count("time.sleep(3600)") >= 2, out


def test_hypothesis_allows_a_slow_example() -> None:
    """A busy machine makes an example slow; only the time limit fails a test."""
    from hypothesis import HealthCheck, settings

    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check
