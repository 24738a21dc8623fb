"""The linter and the formatter configured in pyproject.toml (``[tool.ruff]``): the
code, the tests and the benchmarks have no finding and are formatted.

Runs this environment's ruff (the test extra's) in a child process from the
repository root; a finding fails the test with ruff's own report. ``ruff check
--fix`` and ``ruff format`` fix most of them.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

PATHS = ["crawler", "pipelines", "settings", "tests", "bench"]


@pytest.mark.parametrize(
    "command",
    [["check", "--no-fix"], ["format", "--check", "--diff"]],
    ids=["check", "format"],
)
def test_ruff_finds_nothing(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, (
        f"ruff {' '.join(command)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
    )
