"""A small real site on 127.0.0.1 whose robots.txt follows RFC 9309's hard cases.

Run ``python -m tests.robotsserver --mode MODE --log FILE [--other URL] [--hops N]
[--retry-after S]``: it binds
a free port, prints ``PORT`` on stdout and serves until killed; every request is
appended to FILE as one JSON line (method, path, Host header, User-Agent, time), as
``tests/mockserver.py`` does. :class:`RobotsServer` starts one from a test.

Pages: ``/`` links to ``/about.html``, ``/private/secret.html``,
``/acme-only/page.html`` and ``{other}/elsewhere.html`` (another host's page, which
must never be requested); each of those pages exists. In ``changing`` and ``then-503`` modes ``/``
links to ``/early.html`` and ``/slow.html`` instead, and ``/slow.html`` answers after
``--delay`` seconds with a link to ``/late/page.html``.

Robots modes (the robots.txt served):

- ``target``: ``Disallow: /private/`` for every agent (the far end of a redirect);
- ``redirect-elsewhere``: a 301 to ``{other}/robots.txt``, another host's;
- ``chain``: a chain of ``--hops`` 301s that goes back and forth between this host
  and ``{other}`` and ends at ``/static/robots-main.txt`` of one of them: every
  server, whatever its mode, answers ``/hop/K/PORT`` with a 301 to
  ``http://127.0.0.1:PORT/hop/K-1/<its own port>`` (K > 1) or to
  ``http://127.0.0.1:PORT/static/robots-main.txt`` (K = 1), and serves
  ``/static/robots-main.txt``: ``Disallow: /acme-only/`` for every agent;
- ``busy``: the first robots.txt request is answered 429, and the first request
  for ``/about.html`` 503, each with ``Retry-After: --retry-after``; then robots.txt
  is ``target``'s;
- ``line-cut``: ``Disallow: /private/``, then comment lines up to a rule line,
  ``Disallow: /archive/``, that byte 512000 (500 KiB) cuts right after
  ``Disallow: /``;
- ``eleven-mib``: ``Disallow: /private/`` and comment lines, 11 MiB with a
  Content-Length; ``eleven-mib-chunked``: the same, streamed without one;
  ``eleven-mib-gzip``: the same, gzipped when the client accepts gzip (11 KiB);
- ``prefix-groups``: groups for ``sitemap`` and ``s`` (prefixes of
  ``sitemap-crawler``) disallowing everything, and ``*`` disallowing ``/private/``;
- ``unknown-line``: the group of ``sitemap-crawler`` and ``otherbot`` holds an
  unknown line and a ``Sitemap:`` line between its two ``User-agent`` lines, then
  ``Disallow: /private/``;
- ``compatible``: ``Mozilla`` disallowed everything, ``AcmeBot`` ``/private/``;
- ``changing``: the first robots.txt served allows everything but ``/never/``, every
  later one disallows ``/late/``; ``then-503``: the same first one, then 503s;
- ``members``: ``Disallow: /members/`` and ``Disallow: /*.cgi$`` for every agent,
  answered after ``--delay`` seconds (requests pile up waiting for it). ``/`` links
  to ``/about.html``, ``/members/``, ``/members/area/``, ``/tools/report.cgi`` and
  ``/tools/index.html``; ``/members/`` links to ``/members/only.html``, reachable
  through it alone.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

from twisted.internet import reactor
from twisted.web import resource, server

from tests.served import ServedSite

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 500 * 1024  # SITEMAP_ROBOTS_MAX_BYTES
ELEVEN_MIB = 11 * 1024 * 1024
HTML = "text/html; charset=utf-8"
TEXT = "text/plain"


def page(body: str, title: str) -> bytes:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body>{body}</body></html>"
    ).encode()


def links(*hrefs: str) -> str:
    return " ".join(f'<a href="{h}">{h}</a>' for h in hrefs)


def filled(head: bytes, size: int) -> bytes:
    """*head*, then comment lines up to *size* bytes exactly."""
    line = b"# " + b"x" * 1021 + b"\n"  # 1024 bytes
    body = head + line * ((size - len(head)) // len(line))
    rest = size - len(body)
    return body + (b"#" + b"y" * (rest - 2) + b"\n" if rest >= 2 else b"\n" * rest)


def line_cut() -> bytes:
    """A rule line that the 500 KiB limit cuts just after ``Disallow: /``."""
    cut_rule = b"Disallow: /archive/\n"
    before = filled(b"User-agent: *\nDisallow: /private/\n", LIMIT - len(b"Disallow: /"))
    body = before + cut_rule + b"Disallow: /about.html\n"
    assert body[:LIMIT].endswith(b"\nDisallow: /")
    return body


ROBOTS: dict[str, str] = {
    "target": "User-agent: *\nDisallow: /private/\n",
    "prefix-groups": (
        "User-agent: sitemap\nDisallow: /\n\n"
        "User-agent: s\nDisallow: /\n\n"
        "User-agent: *\nDisallow: /private/\n"
    ),
    "unknown-line": (
        "User-agent: sitemap-crawler\n"
        "Clean-param: ref /\n"
        "Sitemap: {base}/sitemap.xml\n"
        "User-agent: otherbot\n"
        "Disallow: /private/\n\n"
        "User-agent: *\nDisallow: /\n"
    ),
    "members": "User-agent: *\nDisallow: /members/\nDisallow: /*.cgi$\n",
    "compatible": (
        "User-agent: Mozilla\nDisallow: /\n\nUser-agent: AcmeBot\nDisallow: /private/\n"
    ),
}


class Site(resource.Resource):
    isLeaf = True

    def __init__(self, mode: str, log: Any, other: str, delay: float) -> None:
        super().__init__()
        self.mode = mode
        self.log = log
        self.other = other
        self.delay = delay
        self.port = 0
        self.robots_served = 0
        self.hops = 1
        self.retry_after = "1"
        self.served: dict[str, int] = {}

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def render(self, request: Any) -> bytes | int:
        path = request.uri.decode("latin-1")
        self.log.write(
            json.dumps(
                {
                    "method": request.method.decode(),
                    "path": path,
                    "host": (request.getHeader("host") or "").lower(),
                    "user_agent": request.getHeader("user-agent"),
                    "time": time.time(),
                }
            )
            + "\n"
        )
        self.log.flush()
        self.served[path] = self.served.get(path, 0) + 1
        if path.split("?")[0] == "/robots.txt":
            return self.robots(request)
        if path.startswith("/hop/"):
            return self.hop(request, path)
        if path == "/static/robots-main.txt":
            request.setHeader("Content-Type", TEXT)
            return b"User-agent: *\nDisallow: /acme-only/\n"
        if self.mode == "busy" and path == "/about.html" and self.served[path] == 1:
            request.setResponseCode(503)
            request.setHeader("Retry-After", self.retry_after)
            return b"busy"
        return self.page(request, path)

    def hop(self, request: Any, path: str) -> bytes:
        """``/hop/K/PORT``: one hop of a ``chain``, to the server at PORT."""
        _, _, left, port = path.split("/")
        hops = int(left)
        target = f"http://127.0.0.1:{int(port)}"
        request.setResponseCode(301)
        if hops > 1:
            request.setHeader("Location", f"{target}/hop/{hops - 1}/{self.port}")
        else:
            request.setHeader("Location", f"{target}/static/robots-main.txt")
        return b""

    def robots(self, request: Any) -> bytes | int:
        request.setHeader("Content-Type", TEXT)
        mode = self.mode
        self.robots_served += 1
        if mode == "redirect-elsewhere":
            request.setResponseCode(301)
            request.setHeader("Location", f"{self.other}/robots.txt")
            return b""
        if mode == "chain":
            request.setResponseCode(301)
            if self.hops > 1:
                location = f"{self.other}/hop/{self.hops - 1}/{self.port}"
            else:
                location = f"{self.other}/static/robots-main.txt"
            request.setHeader("Location", location)
            return b""
        if mode == "busy":
            if self.robots_served == 1:
                request.setResponseCode(429)
                request.setHeader("Retry-After", self.retry_after)
                return b"slow down"
            return ROBOTS["target"].encode()
        if mode == "line-cut":
            return line_cut()
        if mode in ("eleven-mib", "eleven-mib-chunked", "eleven-mib-gzip"):
            body = filled(b"User-agent: *\nDisallow: /private/\n", ELEVEN_MIB)
            if mode == "eleven-mib-gzip" and "gzip" in (request.getHeader("accept-encoding") or ""):
                request.setHeader("Content-Encoding", "gzip")
                return gzip.compress(body, mtime=0)
            if mode != "eleven-mib-chunked":
                return body
            # No Content-Length: Twisted sends it chunked.
            for start in range(0, len(body), 64 * 1024):
                request.write(body[start : start + 64 * 1024])
            request.finish()
            return server.NOT_DONE_YET
        if mode in ("changing", "then-503"):
            if self.robots_served == 1:
                return b"User-agent: *\nDisallow: /never/\n"
            if mode == "then-503":
                request.setResponseCode(503)
                return b"overloaded"
            return b"User-agent: *\nDisallow: /late/\n"
        if mode == "members":

            def answer() -> None:
                request.write(ROBOTS[mode].encode())
                request.finish()

            reactor.callLater(self.delay, answer)  # type: ignore[attr-defined]
            return server.NOT_DONE_YET
        return ROBOTS[mode].replace("{base}", self.base).encode()

    def page(self, request: Any, path: str) -> bytes | int:
        request.setHeader("Content-Type", HTML)
        if path == "/":
            if self.mode in ("changing", "then-503"):
                return page(links("/early.html", "/slow.html"), "home")
            if self.mode == "members":
                return page(
                    links(
                        "/about.html",
                        "/members/",
                        "/members/area/",
                        "/tools/report.cgi",
                        "/tools/index.html",
                    ),
                    "home",
                )
            return page(
                links(
                    "/about.html",
                    "/private/secret.html",
                    "/acme-only/page.html",
                    f"{self.other}/elsewhere.html",
                ),
                "home",
            )
        if path == "/slow.html":

            def answer() -> None:
                request.write(page(links("/late/page.html"), path))
                request.finish()

            reactor.callLater(self.delay, answer)  # type: ignore[attr-defined]
            return server.NOT_DONE_YET
        known = {
            "/about.html",
            "/private/secret.html",
            "/acme-only/page.html",
            "/elsewhere.html",
            "/early.html",
            "/late/page.html",
            "/members/area/",
            "/members/only.html",
            "/tools/report.cgi",
            "/tools/index.html",
        }
        if path == "/members/":
            return page(links("/members/only.html"), path)
        if path in known:
            return page(f"the page {path}", path)
        request.setResponseCode(404)
        return page("no such page", "404")


class RobotsServer(ServedSite):
    """A :mod:`tests.robotsserver` subprocess serving *mode*; *other*, *delay*, *hops*
    and *retry_after* as its options of those names."""

    def __init__(
        self,
        mode: str,
        log: Path,
        other: str = "http://localhost:1",
        delay: float = 2.0,
        hops: int = 1,
        retry_after: str = "1",
    ) -> None:
        super().__init__(
            "tests.robotsserver",
            *("--mode", mode, "--other", other, "--delay", str(delay)),
            *("--hops", str(hops), "--retry-after", retry_after),
            log=log,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--other", default="http://localhost:1")
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--hops", type=int, default=1)
    parser.add_argument("--retry-after", default="1")
    args = parser.parse_args()
    log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process
    root = Site(args.mode, log, args.other.rstrip("/"), args.delay)
    root.hops = args.hops
    root.retry_after = args.retry_after
    site = server.Site(root)
    site.displayTracebacks = False
    port = reactor.listenTCP(0, site, interface="127.0.0.1")  # type: ignore[attr-defined]
    root.port = port.getHost().port
    print(root.port, flush=True)
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
