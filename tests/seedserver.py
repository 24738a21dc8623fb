"""A scripted test site that records every request's headers, served by Twisted on 127.0.0.1.

Run ``python -m tests.seedserver --site FILE --log LOG``: it prints its port and
serves the site described by the JSON FILE (re-read on every request). Every request
is logged as one JSON line: its path, all its headers (lowercased names) and its time, so a
test can tell which credentials reached which server. FILE holds::

    {"robots": "User-agent: *\\nAllow: /\\n",        # or {"status": 301, "location": URL}
     "require": {"authorization": "Basic ...", "x-token": "abc", "cookie": "k=v"},
     "pages": {"/": {"body": "<html>...", "status": 200,
                     "type": "text/html; charset=utf-8",
                     "headers": {"Location": "..."},
                     "delay": 0.5,                       # seconds before the answer
                     "size": 300000,                     # a body of this many bytes
                     "gzip": true}},                     # the body gzipped (a .gz file)
     "missing": {"body": "<html>...", "status": 200},      # for a path not in pages
     "hold": {"prefix": "/x-", "until": "/y", "most": 5},
     "redirect_all": {"to": "https://www.example.test", "status": 301}}

``require``: every request must carry these headers (a ``cookie`` requirement is met
by a ``Cookie`` header holding that pair), else 401. ``hold``: a request whose path
starts with ``prefix`` is answered once ``until`` is asked after it, or after ``most`` seconds.
A path not in ``pages`` gets ``missing``, else a 404. ``redirect_all``: every request is
answered with a redirect to ``to`` and its path (a site's http:// or bare-domain server).

With ``--cert`` and ``--key`` it serves HTTPS; ``--bind`` and ``--port`` choose where
it listens (``tests/test_https.py``: 127.0.0.N on ports 80 and 443).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import time
from pathlib import Path
from typing import Any

from twisted.internet import reactor
from twisted.web import server

from tests.gate import Leaf
from tests.served import ServedSite


class Site(Leaf):
    def __init__(self, site: Path, log: Any) -> None:
        super().__init__(log)
        self.site = site
        self.asked: dict[str, int] = {}  # path -> the number of its last request
        self.numbers = itertools.count(1)

    def render(self, request: Any) -> bytes | int:
        path = request.uri.decode("latin-1")
        headers = {
            k.decode("latin-1").lower(): b", ".join(v).decode("latin-1")
            for k, v in request.requestHeaders.getAllRawHeaders()
        }
        self.log.write(json.dumps({"path": path, "headers": headers, "time": time.time()}) + "\n")
        self.log.flush()
        number = self.asked[path] = next(self.numbers)
        spec = json.loads(self.site.read_text())
        status, body, delay = self.respond(request, path, headers, spec)
        request.setResponseCode(status)
        hold = spec.get("hold", {})
        held = path.startswith(hold.get("prefix", "//"))
        if not delay and not held:
            return body
        end = time.monotonic() + (hold["most"] if held else delay)

        def answer() -> None:
            if held and self.asked.get(hold["until"], 0) < number and time.monotonic() < end:
                reactor.callLater(0.05, answer)
            elif not request._disconnected:
                request.write(body)
                request.finish()

        reactor.callLater(0.05 if held else delay, answer)
        return server.NOT_DONE_YET

    def respond(
        self, request: Any, path: str, headers: dict[str, str], spec: dict[str, Any]
    ) -> tuple[int, bytes, float]:
        if moved := spec.get("redirect_all"):
            request.setHeader("Location", moved["to"] + path)
            return moved.get("status", 301), b"", 0
        for name, value in spec.get("require", {}).items():
            got = headers.get(name, "")
            ok = value in [c.strip() for c in got.split(";")] if name == "cookie" else got == value
            if not ok:
                request.setHeader("WWW-Authenticate", 'Basic realm="staging"')
                return 401, b"<html><body>who are you?</body></html>", 0
        if path == "/robots.txt":
            robots = spec.get("robots", "User-agent: *\nAllow: /\n")
            if isinstance(robots, dict):
                request.setHeader("Location", robots["location"])
                return robots["status"], b"", 0
            request.setHeader("Content-Type", "text/plain")
            return 200, robots.encode(), 0
        page = spec["pages"].get(path, spec.get("missing"))
        if page is None:
            request.setHeader("Content-Type", "text/html")
            return 404, b"<html><body>not found</body></html>", 0
        request.setHeader("Content-Type", page.get("type", "text/html; charset=utf-8"))
        for name, value in page.get("headers", {}).items():
            request.setHeader(name, value)
        body = page.get("body", "").encode("utf-8")
        if "size" in page:
            body = b"<html><body><p>" + b"x" * page["size"] + b"</p></body></html>"
        if page.get("gzip"):
            body = gzip.compress(body)
        return page.get("status", 200), body, page.get("delay", 0)


class ScriptedSite(ServedSite):
    """The test side: the site file, the server subprocess and its request log."""

    def __init__(
        self,
        tmp: Path,
        name: str = "site",
        *,
        tls: tuple[Path, Path] | None = None,
        host: str = "127.0.0.1",
        bind: tuple[str, int] = ("127.0.0.1", 0),
    ) -> None:
        """*tls*: serve HTTPS with this certificate chain and key (PEM files); *host*:
        the name its URLs use; *bind*: the address and port it listens on."""

        self.scheme = "https" if tls else "http"
        self.host = host
        self.file = tmp / f"{name}.json"
        self.log = tmp / f"{name}.log"
        self.spec: dict[str, Any] = {"pages": {}}
        self.save()
        extra = ["--cert", str(tls[0]), "--key", str(tls[1])] if tls else []
        super().__init__(
            "tests.seedserver",
            *("--site", str(self.file), "--bind", bind[0], "--port", str(bind[1]), *extra),
            log=self.log,
        )

    def url(self, path: str = "/") -> str:
        default = {"http": 80, "https": 443}[self.scheme]
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{self.host}{port}{path}"

    def page(self, path: str, *links: str, head: str = "", tail: str = "", **spec: Any) -> None:
        """An HTML page linking to *links*; *tail* goes after ``</html>``."""
        anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
        body = (
            f"<!DOCTYPE html><html><head><title>{path}</title>{head}</head>"
            f"<body><h1>{path}</h1>{anchors}</body></html>{tail}"
        )
        self.spec["pages"][path] = {"body": body, **spec}

    def raw(self, path: str, body: str, **spec: Any) -> None:
        self.spec["pages"][path] = {"body": body, **spec}

    def save(self) -> None:
        self.file.write_text(json.dumps(self.spec))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--site", required=True, type=Path)
    parser.add_argument("--log", required=True)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", help="serve HTTPS: the certificate chain (PEM) ...")
    parser.add_argument("--key", help="... and its key (PEM)")
    args = parser.parse_args()
    log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process
    site = server.Site(Site(args.site, log))
    site.displayTracebacks = False
    try:
        if args.cert:
            from twisted.internet import ssl

            pem = Path(args.key).read_text() + Path(args.cert).read_text()
            options = ssl.PrivateCertificate.loadPEM(pem).options()
            port = reactor.listenSSL(args.port, site, options, interface=args.bind)
        else:
            port = reactor.listenTCP(args.port, site, interface=args.bind)
    except Exception as e:  # the port is taken, or not ours to bind
        print(f"error: {e}", flush=True)
        return
    print(port.getHost().port, flush=True)
    reactor.run()


if __name__ == "__main__":
    main()
