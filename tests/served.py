"""A test server in a process of its own: the part every such helper shares."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class ServedSite:
    """A test server (``python -m MODULE ARGS``, which prints its port once it listens)
    in a process of its own, on 127.0.0.1."""

    def __init__(self, module: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():  # it could not listen (a port taken, say)
            self.stop()
            raise OSError(f"the test server {module} did not start: {line.strip()!r}")
        self.port = int(line)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
