"""The type check: ``mypy`` (strict, configured in pyproject.toml's ``[tool.mypy]``)
finds nothing in crawler, pipelines and settings.

Runs this environment's mypy in a child process from the repository root, so that
it reads the project's configuration and not this test's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_strict_finds_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, (
        f"mypy exited {result.returncode}:\n{result.stdout}{result.stderr}"
    )
