"""A real HTTP test site, served by Twisted on 127.0.0.1 in a subprocess.

Run ``python -m tests.mockserver --robots MODE --log FILE``: it binds a free port,
prints ``PORT`` on stdout and serves until killed. Every request it receives is
appended to FILE as one JSON line (method, path, Host header, a few request
headers, time), so tests can assert what was fetched, how often, and that no
request was made for another host. With ``--gate FILE``, requests wait while FILE
exists (``tests/gate.py``).

The site (``SITE``) has one page per case of issue #2: robots.txt rules, redirects,
canonicals, noindex, nofollow, statuses, types, query variants, tracking
parameters, fragments, relative links and ``<base href>``, IDN and
percent-encoded links, Last-Modified in every HTTP date format, traps. HTML pages
are gzip-encoded when the client accepts it. ``{base}`` in a page is this server's
``http://127.0.0.1:PORT``; ``{other}`` is ``http://localhost:PORT``, the same server
under another host name, which the crawler must never request.

Robots modes: ``rules`` (the default), ``404``, ``403``, ``500``, ``503``, ``429``,
``redirect`` (to /robots-real.txt), ``redirect-loop``, ``redirect-offhost``,
``bom``, ``huge`` (a Disallow beyond the first 500 KiB), ``crawl-delay``,
``slow`` (never answers in time).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import sys
import time
from typing import Any

from twisted.internet import reactor
from twisted.web import resource, server

from tests.gate import Gated

HTML = "text/html; charset=utf-8"


def page(body: str, head: str = "", title: str = "page") -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{head}"
        f"</head><body>{body}</body></html>"
    )


def links(*hrefs: str) -> str:
    return " ".join(f'<a href="{h}">{h}</a>' for h in hrefs)


# path -> (status, headers, body). Bodies and header values are templates.
SITE: dict[str, tuple[int, dict[str, str], str]] = {}


def add(path: str, body: str = "", status: int = 200, unique: bool = True, **headers: str) -> None:
    """Serve *body* at *path*. Pages get their path in a comment so that no two are
    byte-identical by accident; ``unique=False`` serves the body as given."""
    if unique and "</body>" in body:
        body = body.replace("</body>", f"<!-- {path} --></body>")
    hdrs = {"Content-Type": HTML}
    hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
    SITE[path] = (status, hdrs, body)


HOME_LINKS = [
    "/about.html",
    "/about.html?utm_source=news&utm_medium=mail",
    "/about.html#team",
    "/dates/rfc1123.html",
    "/dates/rfc850.html",
    "/dates/asctime.html",
    "/dates/malformed.html",
    "/dates/future.html",
    "/dates/meta.html",
    "/private/secret.html",
    "/private/open.html",
    "/blocked-for-us/page.html",
    "/old-about",
    "/r302",
    "/r307",
    "/loop1",
    "/to-offhost",
    "/canon/self.html",
    "/canon/dup.html?ref=1",
    "/canon/offhost.html",
    "/canon/chain-a.html",
    "/canon/loop-a.html",
    "/canon/header.html",
    "/canon/file.html",
    "/canon/conflict.html",
    "/canon/body.html",
    "/canon/relative.html",
    "/noindex/meta.html",
    "/noindex/googlebot.html",
    "/noindex/header.html",
    "/noindex/otherbot.html",
    "/nofollow/meta.html",
    "/nofollow/header.html",
    "/gone-404",
    "/gone-410",
    "/err-500",
    "/files/doc.pdf",
    "/files/data.json",
    "/products?id=1&color=red",
    "/products?color=red&id=1",
    "/cart;jsessionid=ABC123",
    "/shop?sessionid=abc123",
    "relative/one.html",
    "/base/page.html",
    "/café.html",
    "/%7Euser/",
    "http://bücher.example/",
    "{other}/elsewhere.html",
    "mailto:someone@example.com",
    "javascript:void(0)",
    "/refresh0.html",
    "/refresh5.html",
    "/trap/",
    "/search?q=1",
    "/en/page.html",
    "/public-canonical.html",
    "/dup/",
    "/dup/index.html",
    "/dup/copy.html",
    "/long/" + "x" * 2100,
]

add(
    "/",
    page(
        links(*HOME_LINKS)
        + '<a rel="nofollow" href="/nofollow/hidden3.html">nf</a>'
        + '<map name="m"><area href="/map-target.html" alt="m"></map>',
        title="home",
    ),
    Set_Cookie="visited=1; Domain=127.0.0.1; Path=/",
)
add(
    "/about.html",
    page(links("/", "/about.html#contact")),
    Last_Modified="Sun, 06 Nov 1994 08:49:37 GMT",
)
add("/dates/rfc1123.html", page("x"), Last_Modified="Tue, 15 Nov 2022 12:45:26 GMT")
# A page that embeds an image, a stylesheet and a script (explain: not pages).
add(
    "/dates/rfc850.html",
    page(
        '<img src="/media/photo.png" alt="photo"> x',
        head='<link rel="stylesheet" href="/static/site.css"><script src="/static/site.js">'
        "</script>",
    ),
    Last_Modified="Tuesday, 15-Nov-22 12:45:26 GMT",
)
add("/dates/asctime.html", page("x"), Last_Modified="Tue Nov 15 12:45:26 2022")
add("/dates/malformed.html", page("x"), Last_Modified="yesterday at noon")
add(
    "/dates/future.html",
    page("x"),
    Last_Modified="Fri, 01 Jan 2100 00:00:00 GMT",
    Date="Mon, 02 Jan 2023 03:04:05 GMT",
)
add(
    "/dates/meta.html",
    page("x", head='<meta property="article:modified_time" content="2021-05-06T07:08:09+02:00">'),
)
add("/private/secret.html", page("secret"))
add("/private/open.html", page("open"))
add("/blocked-for-us/page.html", page("not for sitemap-crawler"))
add("/old-about", status=301, Location="/about.html")
add("/r302", status=302, Location="{base}/new.html")
add("/new.html", page("new"))
add("/r307", status=307, Location="/r308")
add("/r308", status=308, Location="/final.html")
add("/final.html", page("final"))
add("/loop1", status=301, Location="/loop2")
add("/loop2", status=301, Location="/loop1")
add("/to-offhost", status=302, Location="{other}/landing.html")
add("/canon/self.html", page("self", head='<link rel="canonical" href="{base}/canon/self.html">'))
add("/canon/dup.html", page("dup", head='<link rel="canonical" href="{base}/canon/self.html">'))
add(
    "/canon/offhost.html",
    page("x", head='<link rel="canonical" href="{other}/canon/offhost.html">'),
)
add("/canon/chain-a.html", page("a", head='<link rel="canonical" href="/canon/chain-b.html">'))
add("/canon/chain-b.html", page("b", head='<link rel="canonical" href="/canon/self.html">'))
add("/canon/loop-a.html", page("a", head='<link rel="canonical" href="/canon/loop-b.html">'))
add("/canon/loop-b.html", page("b", head='<link rel="canonical" href="/canon/loop-a.html">'))
add("/canon/header.html", page("h"), Link='<{base}/canon/self.html>; rel="canonical"')
add(
    "/canon/file.html",
    page("f", head='<link rel="canonical" href="file:///usr/share/doc/python3/html/x.html">'),
)
add(
    "/canon/conflict.html",
    page(
        "c",
        head='<link rel="canonical" href="/canon/self.html">'
        '<link rel="canonical" href="/about.html">',
    ),
)
add("/canon/body.html", page('<link rel="canonical" href="/about.html">body'))
add("/canon/relative.html", page("r", head='<link rel="canonical" href="relative.html">'))
add("/noindex/meta.html", page("n", head='<meta name="robots" content="noindex, follow">'))
add("/noindex/googlebot.html", page("n", head='<meta name="googlebot" content="noindex">'))
add("/noindex/header.html", page("n"), X_Robots_Tag="noindex")
add("/noindex/otherbot.html", page("n"), X_Robots_Tag="otherbot: noindex")
add(
    "/nofollow/meta.html",
    page(links("/nofollow/hidden1.html"), head='<meta name="robots" content="nofollow">'),
)
add("/nofollow/header.html", page(links("/nofollow/hidden2.html")), X_Robots_Tag="nofollow")
for hidden in ("hidden1", "hidden2", "hidden3"):
    add(f"/nofollow/{hidden}.html", page("hidden"))
add("/gone-404", page("not found"), status=404)
add("/gone-410", page("gone"), status=410)
add("/err-500", page("error"), status=500)
add("/files/doc.pdf", "%PDF-1.4 fake", Content_Type="application/pdf")
add("/files/data.json", '{"a": 1}', Content_Type="application/json")
add("/products", page("products"))
add("/cart", page("cart"))
add("/shop", page("shop"))
add("/relative/one.html", page(links("two.html", "../relative/three.html", "./sub/../four.html")))
add("/relative/two.html", page("2"))
add("/relative/three.html", page("3"))
add("/relative/four.html", page("4"))
add("/base/page.html", page(links("target.html"), head='<base href="/base/sub/">'))
add("/base/sub/target.html", page("target"))
add("/caf%C3%A9.html", page("café"))
add("/~user/", page("user"))
add(
    "/refresh0.html",
    page("moving", head='<meta http-equiv="refresh" content="0; url=/about.html">'),
)
add(
    "/refresh5.html",
    page("wait", head='<meta http-equiv="refresh" content="5; url=/refresh-target.html">'),
)
add("/refresh-target.html", page("arrived"))
add(
    "/en/page.html",
    page("en", head='<link rel="alternate" hreflang="de" href="/de/page.html">'),
)
add("/de/page.html", page("de"))
add("/map-target.html", page("map"))
# Three URLs, one body: listed once, under the shortest URL.
for dup in ("/dup/", "/dup/index.html", "/dup/copy.html"):
    add(dup, page("the same page"), unique=False)
# Its canonical is the page's production address (see --base-url).
add(
    "/public-canonical.html",
    page(
        "p", head='<link rel="canonical" href="https://www.example.com/docs/public-canonical.html">'
    ),
)

# -- existing sitemaps, for the audit (issue #3) -------------------------------------------

add("/orphan-live.html", page("listed in a sitemap, linked from nowhere"))
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*entries: str, ns: str = NS) -> str:
    body = "".join(f"<url>{e}</url>\n" for e in entries)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {ns}>\n{body}</urlset>\n'


def loc(path: str, extra: str = "") -> str:
    target = path if "://" in path or path.startswith("{") else "{base}" + path
    return f"<loc>{target}</loc>{extra}"


def sitemapindex(*locs: str) -> str:
    body = "".join(f"<sitemap><loc>{u}</loc></sitemap>\n" for u in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {NS}>\n{body}</sitemapindex>\n'


XML = {"Content-Type": "application/xml"}
GZ = {"Content-Type": "application/gzip"}
SITEMAPS: dict[str, tuple[dict[str, str], str, int]] = {
    # path: (headers, body template, gzip layers)
    "/sitemap_index.xml": (
        XML,
        sitemapindex(
            "{base}/sitemap-pages.xml.gz",
            "{base}/sitemap-double.xml.gz",
            "{base}/sitemap-text.txt",
            "{base}/feed.rss",
            "{base}/feed.atom",
            "{base}/sitemap-nons.xml",
            "{base}/sitemap-uniform.xml",
            "{base}/sitemap-nested.xml",
            "{base}/sub/sitemap-sub.xml",
            "{base}/sitemap-media.xml",
            "{other}/sitemap-offhost.xml",
        ),
        0,
    ),
    # hreflang alternates and images, read and counted.
    "/sitemap-media.xml": (
        XML,
        urlset(
            loc(
                "/refresh5.html",
                '<xhtml:link rel="alternate" hreflang="de" href="{base}/de/page.html"/>'
                "<image:image><image:loc>{base}/a.png</image:loc></image:image>"
                "<image:image><image:loc>{base}/b.png</image:loc></image:image>",
            ),
            ns=NS
            + ' xmlns:xhtml="http://www.w3.org/1999/xhtml"'
            + ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"',
        ),
        0,
    ),
    "/sitemap-pages.xml.gz": (
        GZ,
        urlset(
            loc("/"),
            loc("/about.html", "<lastmod>1990-01-01</lastmod>"),
            loc("/old-about"),
            loc("/gone-404"),
            loc("/err-500"),
            loc("/noindex/meta.html"),
            loc("/canon/dup.html?ref=1".replace("&", "&amp;")),
            loc("/private/secret.html"),
            loc("{other}/elsewhere.html"),
            loc("/orphan-live.html"),
            loc("/orphan-dead.html"),
            loc("/files/doc.pdf"),
            "<loc>relative/page.html</loc>",
            loc("/relative/one.html", "<lastmod>yesterday</lastmod>"),
            loc("/relative/two.html", "<lastmod>2024-01-01T10:00:00</lastmod>"),
            loc("/relative/three.html", "<changefreq>sometimes</changefreq>"),
            loc("/relative/four.html", "<priority>1.5</priority>"),
            loc("/dates/rfc1123.html", "<lastmod>2999-01-01</lastmod>"),
        ),
        1,
    ),
    "/sitemap-double.xml.gz": (
        GZ,
        urlset(loc("/dates/rfc850.html"), loc("/dates/asctime.html")),
        2,
    ),
    "/sitemap-text.txt": (
        {"Content-Type": "text/plain"},
        "{base}/base/page.html\n{base}/about.html\nnot a url\n",
        0,
    ),
    "/feed.rss": (
        {"Content-Type": "application/rss+xml"},
        '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        "<item><title>en</title><link>{base}/en/page.html</link></item>"
        "</channel></rss>",
        0,
    ),
    "/feed.atom": (
        {"Content-Type": "application/atom+xml"},
        '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
        '<entry><title>de</title><link href="{base}/de/page.html"/>'
        "<updated>2020-01-01T00:00:00Z</updated></entry></feed>",
        0,
    ),
    "/sitemap-nons.xml": (XML, urlset(loc("/map-target.html"), ns=""), 0),
    "/sitemap-uniform.xml": (
        XML,
        urlset(
            loc("/cart", "<lastmod>2020-01-01</lastmod>"),
            loc("/products?id=1&amp;color=red", "<lastmod>2020-01-01</lastmod>"),
            loc("/~user/", "<lastmod>2020-01-01</lastmod>"),
        ),
        0,
    ),
    # An index inside an index, which lists an index that lists it back: a cycle.
    "/sitemap-nested.xml": (XML, sitemapindex("{base}/sitemap-cycle.xml"), 0),
    "/sitemap-cycle.xml": (XML, sitemapindex("{base}/sitemap-nested.xml"), 0),
    # A sitemap in /sub/ may only list URLs under /sub/.
    "/sub/sitemap-sub.xml": (XML, urlset(loc("/about.html")), 0),
}


ROBOTS_RULES = """\
User-agent: *
Disallow: /private/

User-agent: sitemap-crawler
Disallow: /private/
Disallow: /blocked-for-us/
Allow: /private/open.html

Sitemap: {base}/sitemap_index.xml
"""


def robots(mode: str) -> tuple[int, dict[str, str], bytes] | None:
    text = {"Content-Type": "text/plain"}
    if mode in ("rules", "crawl-delay"):
        body = ROBOTS_RULES
        if mode == "crawl-delay":
            body = body.replace(
                "User-agent: sitemap-crawler\n", "User-agent: sitemap-crawler\nCrawl-delay: 1\n"
            )
        return 200, text, body.encode()
    if mode == "bom":
        return 200, text, b"\xef\xbb\xbf" + b"User-agent: sitemap-crawler\nDisallow: /about.html\n"
    if mode == "huge":
        filler = b"# " + b"x" * 1000 + b"\n"
        body = b"User-agent: *\nDisallow: /private/\n" + filler * 600 + b"Disallow: /about.html\n"
        return 200, text, body
    if mode.isdigit():
        return int(mode), text, b"no robots here"
    if mode == "redirect":
        return 301, {"Location": "/robots-real.txt"}, b""
    if mode == "redirect-loop":
        return 302, {"Location": "/robots.txt?again"}, b""
    if mode == "redirect-offhost":
        return 301, {"Location": "{other}/robots.txt"}, b""
    if mode == "slow":
        return None
    raise ValueError(mode)


def hostile(path: str, base: str) -> tuple[int, dict[str, str], bytes]:
    """Sitemaps meant to hurt a parser; the audit must survive each with a report."""
    xml = {"Content-Type": "application/xml"}
    name, _, query = path.removeprefix("/hostile/").partition("?")
    if name == "xxe.xml":
        # The secret file's path comes from the test: /hostile/xxe.xml?/tmp/.../secret
        return (
            200,
            xml,
            (
                f'<?xml version="1.0"?>\n<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file://{query}">]>\n'
                f"<urlset {NS}><url><loc>{base}/about.html?x=&xxe;</loc></url>"
                f"<url><loc>{base}/cart</loc></url></urlset>"
            ).encode(),
        )
    if name == "laughs.xml":
        ents = '<!ENTITY lol "lol">' + "".join(
            f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
            for i in range(1, 10)
        )
        return (
            200,
            xml,
            (
                f'<?xml version="1.0"?>\n<!DOCTYPE lolz [{ents}]>\n'
                f"<urlset {NS}><url><loc>{base}/cart?&lol9;</loc></url></urlset>"
            ).encode(),
        )
    if name == "bomb.xml.gz":
        return 200, {"Content-Type": "application/gzip"}, bomb()
    if name == "truncated.xml":
        full = urlset(*(loc(f"/relative/{n}.html") for n in ("one", "two", "three")))
        return 200, xml, full.replace("{base}", base).encode()[:-60]
    if name == "big.xml":
        body = "".join(f"<url><loc>{base}/big/{i}</loc></url>\n" for i in range(60_000))
        return 200, xml, f'<?xml version="1.0"?>\n<urlset {NS}>\n{body}</urlset>\n'.encode()
    return 404, {"Content-Type": "text/plain"}, b"no such hostile sitemap"


@functools.cache
def bomb(size: int = 200 * 1024 * 1024) -> bytes:
    """A gzip file of *size* bytes of zeros, built without holding them."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1024 * 1024)
    parts = [packer.compress(b'<?xml version="1.0"?><urlset>')]
    parts += [packer.compress(chunk) for _ in range(size // len(chunk))]
    parts.append(packer.flush())
    return b"".join(parts)


class Site(resource.Resource):
    isLeaf = True

    def __init__(self, mode: str, log: Any, port_holder: dict[str, int]) -> None:
        super().__init__()
        self.mode = mode
        self.log = log
        self.port = port_holder

    def render(self, request: Any) -> bytes | int:
        path = request.uri.decode("latin-1")
        host = (request.getHeader("host") or "").lower()
        self.log.write(
            json.dumps(
                {
                    "method": request.method.decode(),
                    "path": path,
                    "host": host,
                    "user_agent": request.getHeader("user-agent"),
                    "cookie": request.getHeader("cookie"),
                    "accept": request.getHeader("accept"),
                    "time": time.time(),
                }
            )
            + "\n"
        )
        self.log.flush()
        base, other = self.base, self.other
        found = self.lookup(path)
        if found is None:
            return server.NOT_DONE_YET  # "slow": the request is left hanging
        status, headers, body = found
        request.setResponseCode(status)
        if isinstance(body, str):
            body = body.encode("utf-8")
        body = body.replace(b"{base}", base.encode()).replace(b"{other}", other.encode())
        for name, value in headers.items():
            request.setHeader(name, value.replace("{base}", base).replace("{other}", other))
        accepts_gzip = "gzip" in (request.getHeader("accept-encoding") or "")
        if accepts_gzip and headers.get("Content-Type", "").startswith("text/html"):
            body = gzip.compress(body, mtime=0)
            request.setHeader("Content-Encoding", "gzip")
        return body

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port['port']}"

    @property
    def other(self) -> str:
        return f"http://localhost:{self.port['port']}"

    def lookup(self, path: str) -> tuple[int, dict[str, str], bytes | str] | None:
        plain = path.split("?")[0]
        if plain == "/robots.txt":
            if path != "/robots.txt" and self.mode == "redirect-loop":
                return 302, {"Location": "/robots.txt?" + path.split("?", 1)[1] + "x"}, b""
            result = robots(self.mode)
            if result is None:
                return None
            return result
        if plain == "/robots-real.txt":
            return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /about.html\n"
        if plain.startswith("/trap/"):
            # Relative links that keep appending to themselves: /trap/x/x/x/...
            return 200, {"Content-Type": HTML}, page(links("x/"), title=plain)
        if plain == "/search":
            # Endless query variants: /search?q=1 -> /search?q=2 -> ...
            n = int(path.split("q=")[1]) if "q=" in path else 0
            return 200, {"Content-Type": HTML}, page(links(f"/search?q={n + 1}"), title=str(n))
        if plain == "/hang":
            return None  # never answers
        if plain.startswith("/long/"):
            return 200, {"Content-Type": HTML}, page("long", title=plain)
        if path in SITEMAPS:
            headers, text, layers = SITEMAPS[path]
            body = text.replace("{base}", self.base).replace("{other}", self.other).encode()
            for _ in range(layers):
                body = gzip.compress(body, mtime=0)
            return 200, headers, body
        if plain.startswith("/hostile/"):
            return hostile(path, self.base)
        entry = SITE.get(path) or SITE.get(plain)
        if entry is None:
            return 404, {"Content-Type": HTML}, page("no such page")
        return entry


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--robots", default="rules")
    parser.add_argument("--log", required=True)
    parser.add_argument("--gate", help="requests wait while this file exists (tests/gate.py)")
    args = parser.parse_args()
    holder: dict[str, int] = {}
    log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process
    site = server.Site(Gated(Site(args.robots, log, holder), args.gate))
    site.displayTracebacks = False
    port = reactor.listenTCP(0, site, interface="127.0.0.1")
    holder["port"] = port.getHost().port
    print(holder["port"], flush=True)
    reactor.run()


if __name__ == "__main__":
    sys.exit(main())
