"""A scripted IndexNow endpoint and key-file host on 127.0.0.1, for tests/test_indexnow.py.

:class:`IndexNowServer` runs a ``ThreadingHTTPServer`` on a free port of 127.0.0.1 in
a thread of the test process. It serves:

- ``GET``: the files of :attr:`IndexNowServer.files` (path -> :class:`Answer`), each
  request recorded in :attr:`IndexNowServer.gets`; any other path is a 404;
- ``POST`` (any path): recorded in :attr:`IndexNowServer.received` (path as sent,
  headers, raw body and its JSON), then answered with the next :class:`Answer` of
  :attr:`IndexNowServer.script`; once the script is used up, ``599`` and a body
  saying so, which no test expects.

An answer may wait *delay* seconds before it is sent (a slow endpoint, for the
client's time-outs). Used as a proxy (``http_proxy``), the server records the
absolute URL a client asks for as the path.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (time-out) leaves a broken pipe: not a test failure.
        pass


class IndexNowServer:
    def __init__(self) -> None:
        self.files: dict[str, Answer] = {}
        self.script: list[Answer] = []
        self.received: list[Received] = []
        self.gets: list[Received] = []
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> IndexNowServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _record(self) -> Received:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                return Received(self.command, self.path, dict(self.headers.items()), body)

            def _answer(self, answer: Answer) -> None:
                if answer.delay:
                    time.sleep(answer.delay)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def do_GET(self) -> None:
                received = self._record()
                with owner._lock:
                    owner.gets.append(received)
                    answer = owner.files.get(self.path, Answer(404, b"not found"))
                self._answer(answer)

            def do_POST(self) -> None:
                received = self._record()
                with owner._lock:
                    owner.received.append(received)
                    if owner.script:
                        answer = owner.script.pop(0)
                    else:
                        answer = Answer(599, b"the test's script is used up")
                self._answer(answer)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    # -- addresses ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path
