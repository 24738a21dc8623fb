"""The linter and the formatter configured in pyproject.toml (``[tool.ruff]``): the
code, the tests and the benchmarks have no finding and are formatted.

Runs this environment's ruff (the test extra's) in a child process from the
repository root; a finding fails the test with ruff's own report. ``ruff check
--fix`` and ``ruff format`` fix most of them. The product code also names no tracker
issue ("issue #N"): a docstring gives the reason and points into docs/.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PATHS = ["crawler", "pipelines", "settings", "tests", "bench"]
PRODUCT = ["crawler", "pipelines", "settings"]
#: "issue #19", "(issue 18)", "issues #2 and #4", also broken over two lines.
TRACKER = re.compile(r"\bissues?\s+#?\d+", re.I)


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


def test_product_code_names_no_tracker_issue() -> None:
    found = []
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for match in TRACKER.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {match.group()!r}")
    assert not found, "tracker numbers in product code (give the docs/ page instead):\n" + (
        "\n".join(found)
    )
