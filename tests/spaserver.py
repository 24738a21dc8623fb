"""A single-page-application test site, served over real HTTP on 127.0.0.1 in a
subprocess, for the rendering tests (issue #16).

Run ``python -m tests.spaserver --log FILE``: it binds two free ports, the site
and *another host* (another port of 127.0.0.1 is another host to the crawl),
prints ``PORT OTHER_PORT`` on stdout and serves until killed. Every request either
server receives is appended to FILE as one JSON line (server, method, path).

As single-page applications are served, every path without a dot gets the same
application shell (``<div id="root"></div>`` and ``/app.js``), except a few raw
pages; the client-side router in ``/app.js`` builds each route's content and links
(``APP_JS``). HTML pages carry an ``ETag`` and answer ``If-None-Match`` with a 304.
The cases: links built from ``fetch()`` of a JSON API (``/``), a
route whose URL a script pushes with ``history.pushState`` and is linked nowhere
(``/gallery`` -> ``/gallery/1``), an in-app 404 (an unknown route: "not found"
and a script-added noindex), a script-added canonical (``/product-b-alias``), a
raw-HTML noindex that script removes (``/raw-noindex``), a page whose script
throws after building a link (``/throws``), a page whose script never ends
(``/hangs``), data from a blocked other host (``/partners``) and from a path
robots.txt disallows (``/private``), an image (never loaded), plain static pages
(``/docs/``) that need no rendering, a server-rendered page whose inline script
fills a list from a JSON API (``/news`` -> ``/news/latest``), and a route whose data
arrives late (``/slow``: its API answers after :data:`SLOW_SECONDS`, with a link to
``/slow-found``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.served import ServedSite

ROBOTS = "User-agent: *\nDisallow: /private-api/\n"
#: How long /api/slow.json takes to answer.
SLOW_SECONDS = 2.5

SHELL = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Shop</title>
<link rel="stylesheet" href="/app.css"></head>
<body><div id="root"></div>
<footer><a href="/about">About</a> <a href="/docs/">Docs</a></footer>
<img src="/logo.png" alt="">
<script src="/app.js"></script></body></html>"""

# The router: route -> what it renders. {other} is the other host's base URL.
APP_JS = r"""
const root = document.getElementById("root");
const link = (href, text) => `<a href="${href}">${text || href}</a>`;
const meta = (name, content) => {
  const m = document.createElement("meta");
  m.name = name; m.content = content; document.head.appendChild(m);
};
const routes = {
  "/": async () => {
    const items = await (await fetch("/api/products.json")).json();
    root.innerHTML = "<h1>Shop</h1><nav>" +
      items.map(p => link(p.url, p.name)).join(" ") + " " +
      ["/blog", "/gallery", "/old-offer", "/raw-noindex", "/product-b-alias", "/throws",
       "/hangs", "/partners", "/private", "/slow"].map(h => link(h)).join(" ") + "</nav>";
  },
  "/slow": async () => {
    root.innerHTML = "<h1>Slow</h1><p>loading</p>";
    const items = await (await fetch("/api/slow.json")).json();
    root.innerHTML = "<h1>Slow</h1>" + items.map(h => link(h)).join(" ");
  },
  "/slow-found": () => { root.innerHTML = "<h1>Found late</h1>"; },
  "/about": () => { root.innerHTML = "<h1>About us</h1><p>We sell things.</p>"; },
  "/blog": () => { root.innerHTML = "<h1>Blog</h1><p>News.</p>" + link("/blog/first"); },
  "/blog/first": () => { root.innerHTML = "<h1>First post</h1><p>Hello.</p>"; },
  "/products/1": () => { root.innerHTML = "<h1>Product A</h1>"; },
  "/products/2": () => { root.innerHTML = "<h1>Product B</h1>"; },
  "/products/3": () => { root.innerHTML = "<h1>Product C</h1>"; },
  "/product-b-alias": () => {
    root.innerHTML = "<h1>Product B</h1>";
    const c = document.createElement("link");
    c.rel = "canonical"; c.href = "/products/2"; document.head.appendChild(c);
  },
  "/gallery": () => {
    root.innerHTML = "<h1>Gallery</h1><p>Photo 1 of 1</p>";
    history.pushState({photo: 1}, "", "/gallery/1");
  },
  "/gallery/1": () => { root.innerHTML = "<h1>Photo 1</h1>"; },
  "/news/latest": () => { root.innerHTML = "<h1>Latest news</h1>"; },
  "/throws": () => {
    root.innerHTML = "<h1>Throws</h1>" + link("/thrown-link");
    throw new Error("boom after rendering");
  },
  "/thrown-link": () => { root.innerHTML = "<h1>Reached before the error</h1>"; },
  "/partners": async () => {
    root.innerHTML = "<h1>Partners</h1><p>loading</p>";
    try {
      const items = await (await fetch("{other}/partners.json")).json();
      root.innerHTML += items.map(h => link(h)).join(" ");
    } catch (e) { root.innerHTML = "<h1>Partners</h1><p>none</p>"; }
  },
  "/private": async () => {
    root.innerHTML = "<h1>Private</h1>";
    try {
      const items = await (await fetch("/private-api/links.json")).json();
      root.innerHTML += items.map(h => link(h)).join(" ");
    } catch (e) { root.innerHTML += "<p>none</p>"; }
  },
};
const route = routes[location.pathname];
if (route) {
  route();
} else {
  root.innerHTML = "<h1>Page not found</h1>";
  meta("robots", "noindex");
}
"""

RAW_NOINDEX = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Hidden</title>
<meta name="robots" content="noindex"></head>
<body><div id="root"></div><script>
document.querySelector('meta[name="robots"]').remove();
document.getElementById("root").innerHTML = '<a href="/from-raw-noindex">more</a>';
</script></body></html>"""

# A server-rendered page (with links: no shell) whose inline script fills its list
# from a JSON API.
NEWS = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>News</title></head>
<body><h1>News</h1><nav><a href="/">Home</a> <a href="/about">About</a>
<a href="/docs/">Docs</a> <a href="/docs/a">A</a> <a href="/docs/b">B</a></nav>
<ul id="list"><li>loading</li></ul>
<script>
fetch("/api/news.json").then(r => r.json()).then(items => {
  document.getElementById("list").innerHTML =
    items.map(h => `<li><a href="${h}">${h}</a></li>`).join("");
});
</script></body></html>"""

HANGS = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Hangs</title></head>
<body><div id="root"></div><script>
for (;;) {}
</script></body></html>"""

DOCS = {
    "/docs/": ("Docs", '<a href="/docs/a">A</a> <a href="/docs/b">B</a> <a href="/news">News</a>'),
    "/docs/a": ("Doc A", '<a href="/docs/">Docs</a> <a href="/docs/b">B</a>'),
    "/docs/b": ("Doc B", '<a href="/docs/">Docs</a> <a href="/docs/a">A</a>'),
}

PRODUCTS = [{"url": f"/products/{n}", "name": f"Product {n}"} for n in (1, 2, 3)]

#: What the crawl must list (paths), rendering; and reading raw HTML only.
LISTED_RENDERED = {
    "/",
    "/about",
    "/blog",
    "/blog/first",
    "/products/1",
    "/products/2",
    "/products/3",
    "/gallery",
    "/gallery/1",
    "/throws",
    "/thrown-link",
    "/hangs",
    "/partners",
    "/private",
    "/docs/",
    "/docs/a",
    "/docs/b",
    "/news",
    "/news/latest",
    "/slow",
    "/slow-found",
}
# (/about's raw HTML is the same shell as /'s: byte-identical, a duplicate.)
LISTED_RAW = {"/", "/docs/", "/docs/a", "/docs/b", "/news"}


def make_handler(name: str, log: str, lock: threading.Lock, other: list[str]) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            with lock, open(log, "a") as f:
                f.write(json.dumps({"server": name, "method": "GET", "path": self.path}) + "\n")
            path = self.path.split("?")[0]
            if name == "other":
                self._send(200, "application/json", json.dumps(["/partner-secret"]), cors=True)
            elif path == "/robots.txt":
                self._send(200, "text/plain", ROBOTS)
            elif path == "/app.js":
                self._send(200, "application/javascript", APP_JS.replace("{other}", other[0]))
            elif path == "/api/products.json":
                self._send(200, "application/json", json.dumps(PRODUCTS))
            elif path == "/api/slow.json":
                time.sleep(SLOW_SECONDS)
                self._send(200, "application/json", json.dumps(["/slow-found"]))
            elif path == "/api/news.json":
                self._send(200, "application/json", json.dumps(["/news/latest"]))
            elif path == "/news":
                self._send(200, "text/html; charset=utf-8", NEWS)
            elif path == "/private-api/links.json":
                self._send(200, "application/json", json.dumps(["/private-secret"]))
            elif path == "/logo.png":
                self._send(200, "image/png", "not really a png")
            elif path == "/raw-noindex":
                self._send(200, "text/html; charset=utf-8", RAW_NOINDEX)
            elif path == "/hangs":
                self._send(200, "text/html; charset=utf-8", HANGS)
            elif path in DOCS:
                title, body = DOCS[path]
                html = (
                    f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
                    f"<h1>{title}</h1><p>Plain documentation.</p>{body}</body></html>"
                )
                self._send(200, "text/html; charset=utf-8", html)
            elif "." in path.rsplit("/", 1)[-1]:
                self._send(404, "text/plain", "not found")
            else:  # any route: the application shell (a soft 404 for unknown ones)
                self._send(200, "text/html; charset=utf-8", SHELL)

        def _send(self, status: int, ctype: str, body: str, cors: bool = False) -> None:
            data = body.encode("utf-8")
            etag = f'"{hashlib.sha1(data).hexdigest()[:16]}"'
            # Validators on HTML pages, as a nightly run asks them conditionally.
            if (
                status == 200
                and ctype.startswith("text/html")
                and self.headers.get("If-None-Match") == etag
            ):
                self.send_response(304)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(status)
            if status == 200 and ctype.startswith("text/html"):
                self.send_header("ETag", etag)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            if cors:
                self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            self.wfile.write(data)

    return Handler


class SpaServer(ServedSite):
    """This application in a process of its own: the site on :attr:`port`, the other
    host on :attr:`other_port`."""

    def __init__(self, log: Path) -> None:
        log.write_text("")
        super().__init__("tests.spaserver", log=log)

    @property
    def other_port(self) -> int:
        return self.ports[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    lock = threading.Lock()
    other_base: list[str] = []
    other = ThreadingHTTPServer(("127.0.0.1", 0), make_handler("other", args.log, lock, other_base))
    other_base.append(f"http://127.0.0.1:{other.server_address[1]}")
    site = ThreadingHTTPServer(("127.0.0.1", 0), make_handler("site", args.log, lock, other_base))
    for srv in (site, other):
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    sys.stdout.write(f"{site.server_address[1]} {other.server_address[1]}\n")
    sys.stdout.flush()
    threading.Event().wait()


if __name__ == "__main__":
    main()
