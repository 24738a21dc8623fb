"""A real HTTP test site of traps that the crawl must learn, on 127.0.0.1 (issue #19).

Run ``python -m tests.trapserver --mode MODE --log FILE``: it binds a free port,
prints ``PORT`` on stdout and serves until killed; every request is appended to FILE
as one JSON line (its path), so tests can count what was fetched.

Mode ``traps``: a shop whose listing ``/shop/`` takes ``color`` and ``size`` (which
change the page), ``sort`` (which only reorders it: ``sort=name``) and ``ref``
(which changes nothing), linked in every combination and order; referral and ``utm_``
tags in links; an endless day calendar ``/cal/YYYY-MM-DD/`` starting today; an old month calendar
``/events?month=2015-01`` and an old date archive ``/archive/2019/05/``, both linked
from the home page, with prev/next links; an old blog post ``/blog/2019/05/17/old-post/``
linked from the home page. Unknown paths are 404.

Mode ``rules``: the same, and the home page also links a URL of every other rule of
the frontier (robots.txt, another host, path traps, an excluded path, a URL too long,
a list of 20 pages by query string, a chain of pages one link deeper each, a chain of
redirects ``/hop/1`` -> ``/hop/2`` ... ``/hop/6``).
Mode ``soft404``: every unknown path is answered with 200 and a "not found" page
that echoes the path; the home page links two real pages and two that do not exist.
Mode ``soft404-robots``: the same, with a robots.txt that disallows the probe.
Mode ``redirect404``: every unknown path is redirected (302) to ``/not-found.html``,
a 200 "not found" page.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from twisted.internet import reactor
from twisted.web import server

from tests.gate import Leaf

HTML = "text/html; charset=utf-8"

COLORS = ("red", "blue")
SIZES = ("s", "m")
# The items of the shop: (id, color, size).
ITEMS = ((1, "red", "s"), (2, "red", "m"), (3, "blue", "s"), (4, "blue", "m"))


def page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><h1>{title}</h1>{body}</body></html>"
    )


def links(*hrefs: str) -> str:
    return " ".join(f'<a href="{h}">{h}</a>' for h in hrefs)


def shop_links() -> list[str]:
    """Every shop link, single parameters first (as a facet menu lists them)."""
    out = [f"/shop/?color={c}" for c in COLORS] + [f"/shop/?size={s}" for s in SIZES]
    out += ["/shop/?sort=price", "/shop/?sort=name", "/shop/?sort=price&ref=menu"]
    out += [f"/shop/?color={c}&size={s}" for c in COLORS for s in SIZES]
    out += [f"/shop/?size={s}&color={c}" for c in COLORS for s in SIZES]  # another order
    out += ["/shop/?color=red&sort=price", "/shop/?color=blue&sort=name&ref=menu"]
    return out


def today() -> date:
    return datetime.now(UTC).date()


def traps(path: str, query: dict[str, list[str]]) -> tuple[int, str]:
    if path == "/":
        return 200, page(
            "home",
            links(
                "/about.html",
                "/about.html?utm_source=news&utm_medium=mail",
                "/shop/",
                "/shop/?ref=nav",
                "/shop/?ref=footer",
                f"/cal/{today().isoformat()}/",
                "/events?month=2015-01",
                "/archive/2019/05/",
                "/blog/2019/05/17/old-post/",
            ),
        )
    if path == "/about.html":
        return 200, page("about", "We sell socks. " + links("/", "/shop/?ref=about"))
    if path == "/shop/":
        color = query.get("color", [None])[0]
        size = query.get("size", [None])[0]
        items = [
            i for i in ITEMS if (color is None or i[1] == color) and (size is None or i[2] == size)
        ]
        # Sorted by name: the same items, another order (the same page to a search engine).
        if query.get("sort", [None])[0] == "name":
            items.reverse()
        listing = "".join(
            f'<li><a href="/product/{i}">sock {i} ({c}, {s})</a></li>' for i, c, s in items
        )
        return 200, page("shop", f"<ul>{listing}</ul>" + links(*shop_links()))
    if path.startswith("/product/") and path[9:] in {str(i[0]) for i in ITEMS}:
        return 200, page(f"sock {path[9:]}", links("/shop/", "/shop/?ref=product"))
    if path.startswith("/cal/"):
        try:
            day = date.fromisoformat(path[5:].strip("/"))
        except ValueError:
            return 404, page("not found", "")
        prev, nxt = day - timedelta(days=1), day + timedelta(days=1)
        return 200, page(
            f"events on {day}", "No events. " + links(f"/cal/{prev}/", f"/cal/{nxt}/", "/")
        )
    if path == "/events":
        month = query.get("month", [""])[0]
        try:
            first = date.fromisoformat(month + "-01")
        except ValueError:
            return 404, page("not found", "")
        prev = (first - timedelta(days=1)).strftime("%Y-%m")
        nxt = (first + timedelta(days=31)).strftime("%Y-%m")
        return 200, page(
            f"events in {month}", links(f"/events?month={prev}", f"/events?month={nxt}")
        )
    if path.startswith("/archive/"):
        parts = path.strip("/").split("/")
        if len(parts) != 3:
            return 404, page("not found", "")
        year, month = int(parts[1]), int(parts[2])
        prev = (year, month - 1) if month > 1 else (year - 1, 12)
        nxt = (year, month + 1) if month < 12 else (year + 1, 1)
        return 200, page(
            f"archive {year}-{month:02}",
            links(
                f"/archive/{prev[0]}/{prev[1]:02}/",
                f"/archive/{nxt[0]}/{nxt[1]:02}/",
                "/blog/2019/05/17/old-post/",
            ),
        )
    if path == "/blog/2019/05/17/old-post/":
        return 200, page("an old post", "Still true. " + links("/archive/2019/05/"))
    return 404, page("not found", f"No page at {path}.")


#: Mode ``rules``: what the home page links besides the trap shop's links.
RULES_LINKS = (
    "/private/secret.html",
    "http://other.test/page.html",
    "/a/b/a/b/a/b/",
    "/r/r/r/r/",
    "/s/(S(abc123))/page.html",
    "/skip/this.html",
    "/" + "y" * 2100,
    "/list?page=1",
    "/deep/1",
    "/hop/1",
)


def rules(path: str, query: dict[str, list[str]]) -> tuple[int, str]:
    if path == "/":
        status, body = traps(path, query)
        return status, body.replace("</body>", links(*RULES_LINKS) + "</body>")
    if path == "/list":
        n = query.get("page", ["1"])[0]
        return 200, page(f"list page {n}", links(*(f"/list?page={i}" for i in range(1, 21))))
    if path.startswith("/deep/") and path[6:].isdigit():
        return 200, page(f"deep {path[6:]}", links(f"/deep/{int(path[6:]) + 1}"))
    if path.startswith("/hop/") and path[5:].isdigit():
        n = int(path[5:])
        return (302, f"/hop/{n + 1}") if n < 6 else (200, page("hopped", links("/")))
    if path in ("/a/b/a/b/a/b/", "/skip/this.html"):
        return 200, page(path, links("/"))
    return traps(path, query)


def soft404(path: str, query: dict[str, list[str]]) -> tuple[int, str]:
    if path == "/":
        return 200, page("home", links("/real.html", "/real2.html", "/gone.html", "/missing/page"))
    if path in ("/real.html", "/real2.html"):
        return 200, page(path[1:-5], "A real page about " + path[1:-5] + ". " + links("/"))
    return 200, page(
        "Page not found",
        f"<p>Sorry, the page {path} could not be found.</p>"
        f"<p>Try the <a href='/'>home page</a> or the search.</p>",
    )


def redirect404(path: str, query: dict[str, list[str]]) -> tuple[int, str]:
    if path == "/not-found.html":
        return 200, page("Page not found", "<p>Sorry, nothing here.</p>" + links("/"))
    if path in ("/", "/real.html", "/real2.html"):
        return soft404(path, query)
    return 302, ""


class Site(Leaf):
    def __init__(self, mode: str, log: Any) -> None:
        super().__init__(log)
        self.mode = mode

    def render_GET(self, request: Any) -> bytes:
        raw = request.uri.decode("latin-1")
        self.log.write(json.dumps({"path": raw}) + "\n")
        self.log.flush()
        parts = urlsplit(raw)
        if parts.path == "/robots.txt":
            request.setHeader("Content-Type", "text/plain")
            if self.mode == "soft404-robots":
                return b"User-agent: *\nDisallow: /sitemap-crawler-probe-\n"
            return b"User-agent: *\nDisallow: /private/\n"
        serve = {"traps": traps, "rules": rules, "redirect404": redirect404}.get(self.mode, soft404)
        status, body = serve(parts.path, parse_qs(parts.query))
        request.setResponseCode(status)
        if status == 302:
            # A redirect's body is where it goes (none: the not-found page).
            request.setHeader("Location", body or "/not-found.html")
            body = ""
        request.setHeader("Content-Type", HTML)
        return body.encode("utf-8")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mode",
        choices=("traps", "rules", "soft404", "soft404-robots", "redirect404"),
        default="traps",
    )
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process
    site = server.Site(Site(args.mode, log))
    site.displayTracebacks = False
    port = reactor.listenTCP(0, site, interface="127.0.0.1")
    print(port.getHost().port, flush=True)
    reactor.run()


if __name__ == "__main__":
    sys.exit(main())
