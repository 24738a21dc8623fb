"""A test server in a process of its own: the part every such helper shares."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[1]


class ServedSite:
    """A test server (``python -m MODULE ARGS``, which prints its port, or ports, once
    it listens) in a process of its own, on 127.0.0.1, on a port the OS chose. With a
    *log*, the server is given ``--log LOG`` and writes a JSON line a request there.
    A context manager: the server stops at the end of the block."""

    log: Path

    def __init__(self, module: str, *args: str, log: Path | None = None) -> None:
        if log is not None:
            self.log = log
            args = (*args, "--log", str(log))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.ports = [int(port) for port in line.split() if port.isdigit()]
        if not self.ports or len(self.ports) != len(line.split()):  # it could not listen
            self.stop()
            raise OSError(f"the test server {module} did not start: {line.strip()!r}")
        self.port = self.ports[0]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def requests(self) -> list[dict[str, Any]]:
        """The requests the server logged, in order."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def clear_log(self) -> None:
        self.log.write_text("")

    @property
    def gate_path(self) -> Path:
        """The file whose presence holds every request (``tests/gate.py``), for a server
        given ``--gate`` with it."""
        return self.log.with_suffix(".gate")

    @contextmanager
    def gate(self) -> Iterator[None]:
        """Hold every request until the block ends (``tests/gate.py``)."""
        self.gate_path.touch()
        try:
            yield
        finally:
            self.gate_path.unlink()


@dataclass
class ServedDirectory:
    """A directory served over HTTP on 127.0.0.1 (:func:`serve_directory`)."""

    root: Path
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path


@contextmanager
def serve_directory(
    root: Path, files: dict[str, str | bytes] | None = None
) -> Iterator[ServedDirectory]:
    """*root*, made with *files* (a path and its text or bytes each), served by
    Python's http.server on 127.0.0.1 until the block ends."""
    root.mkdir(parents=True, exist_ok=True)
    for name, content in (files or {}).items():
        if isinstance(content, bytes):
            (root / name).write_bytes(content)
        else:
            (root / name).write_text(content)
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = re.search(r"port (\d+)", proc.stdout.readline())
        assert match, "http.server did not start"
        yield ServedDirectory(root, int(match[1]))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
