"""A test site that changes between runs, served by Twisted on 127.0.0.1.

Run ``python -m tests.nightlyserver --site FILE --log LOG``: it prints its port and
serves the site described by the JSON FILE, re-read on every request, so a test can
edit the site between two crawls. Every request is logged (path, status sent, the
conditional headers received); with ``--gate FILE``, requests wait while FILE exists
(``tests/gate.py``). FILE holds::

    {"robots": "User-agent: *\\nAllow: /\\n",
     "pages": {"/": {"body": "<html>...", "status": 200,
                     "etag": "\\"v1\\"" | null,
                     "last_modified": "Tue, 15 Nov 2022 12:45:26 GMT" | null,
                     "volatile_last_modified": false,   # Last-Modified = now, always
                                                        # (a number: that many seconds ago)
                     "ignore_conditional": false,       # never answers 304
                     "delay": 0,                        # seconds before the answer
                     "headers": {"Link": "<...>; rel=alternate; hreflang=de"}}}
                     # "%NOW%" in a body: the time of the request (a theme that
                     # stamps "now"), as 2024-05-01T08:00:00Z


A page with an ETag or Last-Modified answers 304 to a matching If-None-Match or a
not-older If-Modified-Since, like nginx, unless ``ignore_conditional``.
"""

from __future__ import annotations

import argparse
import json
import time
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any

from twisted.internet import reactor
from twisted.web import server

from tests.gate import Gated, Leaf


class Site(Leaf):
    def __init__(self, site: Path, log: Any) -> None:
        super().__init__(log)
        self.site = site

    def render(self, request: Any) -> bytes | int:
        path = request.uri.decode("latin-1")
        spec = json.loads(self.site.read_text())
        delay = spec["pages"].get(path, {}).get("delay")
        if delay:  # a slow page: answered that many seconds later
            reactor.callLater(delay, self.answer, request, path, spec)
            return server.NOT_DONE_YET
        return self.answer(request, path, spec, finish=False)

    def answer(self, request: Any, path: str, spec: dict[str, Any], finish: bool = True) -> bytes:
        status, body = self.respond(request, path, spec)
        self.log.write(
            json.dumps(
                {
                    "path": path,
                    "status": status,
                    "if_none_match": request.getHeader("if-none-match"),
                    "if_modified_since": request.getHeader("if-modified-since"),
                    "user_agent": request.getHeader("user-agent"),
                    "bytes": len(body),
                    "time": time.time(),
                }
            )
            + "\n"
        )
        self.log.flush()
        if finish and not request.finished and not request._disconnected:
            request.write(body)
            request.finish()
        return body

    def respond(self, request: Any, path: str, spec: dict[str, Any]) -> tuple[int, bytes]:
        if path == "/robots.txt":
            request.setHeader("Content-Type", "text/plain")
            return 200, spec.get("robots", "User-agent: *\nAllow: /\n").encode()
        page = spec["pages"].get(path)
        if page is None:
            request.setResponseCode(404)
            request.setHeader("Content-Type", "text/html")
            return 404, b"<html><body>not found</body></html>"
        status = page.get("status", 200)
        request.setResponseCode(status)
        request.setHeader("Content-Type", "text/html; charset=utf-8")
        if status != 200:
            return status, b"<html><body>error</body></html>"
        etag = page.get("etag")
        volatile = page.get("volatile_last_modified")
        last_modified = (
            formatdate(time.time() - (0.0 if volatile is True else float(volatile)), usegmt=True)
            if volatile is not None and volatile is not False
            else page.get("last_modified")
        )
        for name, value in page.get("headers", {}).items():
            request.setHeader(name, value)
        if etag:
            request.setHeader("ETag", etag)
        if last_modified:
            request.setHeader("Last-Modified", last_modified)
        if not page.get("ignore_conditional") and self.not_modified(request, etag, last_modified):
            request.setResponseCode(304)
            return 304, b""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return 200, page["body"].replace("%NOW%", now).encode("utf-8")

    @staticmethod
    def not_modified(request: Any, etag: str | None, last_modified: str | None) -> bool:
        inm = request.getHeader("if-none-match")
        if inm is not None:
            return etag is not None and etag in [t.strip() for t in inm.split(",")]
        ims = request.getHeader("if-modified-since")
        if ims and last_modified:
            try:
                return parsedate_to_datetime(last_modified) <= parsedate_to_datetime(ims)
            except (TypeError, ValueError):
                return False
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--site", required=True, type=Path)
    parser.add_argument("--log", required=True)
    parser.add_argument("--gate", help="requests wait while this file exists (tests/gate.py)")
    args = parser.parse_args()
    log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process
    site = server.Site(Gated(Site(args.site, log), args.gate))
    site.displayTracebacks = False
    port = reactor.listenTCP(0, site, interface="127.0.0.1")
    print(port.getHost().port, flush=True)
    reactor.run()


if __name__ == "__main__":
    main()
