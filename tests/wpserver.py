"""A small WordPress-like site that changes between runs, served by Twisted on 127.0.0.1.

Run ``python -m tests.wpserver --site FILE --log LOG``: it prints its port and serves
the site described by the JSON state FILE, re-read whenever the file changes (parsed
once per version: by inode, mtime and size), so that a test or a benchmark edits the
site between two crawls (:func:`save` writes it atomically). Every request is logged
to LOG as one JSON line: method, path (with the query), status, bytes, time.

The site is what an anonymous visitor of a WordPress 6.x blog sees (a classic theme,
core sitemaps, the REST API):

* HTML pages carry no ``Last-Modified`` and no ``ETag``; each has a per-request nonce
  (``<input type="hidden" name="_wpnonce">``) and the time of the request
  (``<span class="generated">``) in its footer: template noise, not a change. Every
  one sends ``Link: <http://HOST/wp-json/>; rel="https://api.w.org/"`` and has in its
  head the API link, the RSS feed, ``rel=canonical`` and, for a post,
  ``rel=shortlink`` (``/?p=ID``) and ``article:published_time`` /
  ``article:modified_time``. The content is in ``<main>`` (a post's in
  ``<article class="post">``); ``<header>``, the sidebar (``<aside id="secondary"
  class="widget-area">``: recent posts, categories, pages) and ``<footer>`` are on
  every page.
* ``/``: the 10 most recent posts, paginated as ``/page/N/`` (10 a page; beyond the
  last: 404; ``/page/1/``: 301 to ``/``); posts at ``/YYYY/MM/slug/`` with links to the
  previous and next post; pages at ``/slug/``; category archives at
  ``/category/NAME/`` and ``/category/NAME/page/N/``; ``/?p=ID``: 301 to the permalink.
  A trashed post's permalink, and anything unknown, answers 404 with the template.
* ``/feed/``: RSS 2.0 of the 10 most recent posts (with ``Last-Modified`` and ``ETag``
  as WordPress sends for feeds, and 304 to a matching conditional request).
* ``/wp-json/``, ``/wp-json/wp/v2/posts``, ``/wp-json/wp/v2/pages``: ``per_page``
  (1-100, default 10), ``page``, ``_fields``, ``modified_after``, ``modified_before``,
  ``after``, ``before``, ``orderby`` (date, modified, id, title, slug), ``order``; the
  headers ``X-WP-Total`` and ``X-WP-TotalPages``; WordPress's error codes
  (``rest_invalid_param``, ``rest_post_invalid_page_number``) with status 400.
* ``/robots.txt``: WordPress's virtual robots.txt, then the state's ``robots_extra``.
* ``/wp-sitemap.xml``: the core sitemap index of ``wp-sitemap-posts-post-N.xml``,
  ``wp-sitemap-posts-page-N.xml`` (2,000 URLs a file, ``<lastmod>`` = modified_gmt;
  the page sitemap starts with the home page, as WordPress lists it when the front
  page shows the latest posts) and ``wp-sitemap-taxonomies-category-1.xml`` (no
  lastmod).

Only GET and HEAD; any other method answers 404. Times in the state (``date_gmt``,
``modified_gmt``: ``YYYY-MM-DDTHH:MM:SS``, GMT) are the caller's, never this server's
clock; only the footer's ``generated`` time is the time of the request.

The state (:func:`make_site` builds one)::

    {"name": "Site", "description": "...", "robots_extra": "",
     "categories": ["news", ...],
     "posts": [{"id": 1, "slug": "...", "title": "...", "body": "text\\n\\ntext",
                "date_gmt": "2019-01-01T09:00:00", "modified_gmt": "...",
                "category": "news", "status": "publish" | "trash"}, ...],
     "pages": [{"id": 601, "slug": "about", ...same without category...}]}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from html import escape
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

from twisted.internet import reactor
from twisted.web import resource, server

#: Posts on the home page, an archive page and the feed; the REST API's default page.
PER_PAGE = 10
#: Posts in the sidebar's "Recent posts".
RECENT = 5
#: URLs a core sitemap file holds (wp_sitemaps_get_max_urls).
SITEMAP_MAX = 2000
#: The REST API's largest ``per_page``.
REST_MAX_PER_PAGE = 100
ISO = "%Y-%m-%dT%H:%M:%S"
API_REL = "https://api.w.org/"

CATEGORIES = ("news", "releases", "tutorials", "community", "security", "events", "howto")
WORDS = tuple(
    " ".join(
        (
            "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor",
            "incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud",
            "exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure",
            "in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint",
            "occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est",
        )
    ).split(" ")
)
PAGE_SLUGS = ("about", "contact", "privacy-policy", "team", "faq")


# --- the state: building and editing it -------------------------------------------


def gmt(moment: str | datetime) -> str:
    """*moment* (ISO 8601, aware or naive GMT) as the state's ``YYYY-MM-DDTHH:MM:SS``."""
    when = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when.strftime(ISO)


def _text(rng: random.Random, paragraphs: int) -> str:
    return "\n\n".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))).capitalize() + "."
        for _ in range(paragraphs)
    )


def _title(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))).capitalize()


def _slug(title: str, taken: set[str]) -> str:
    base = "-".join(title.lower().split())
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def make_site(
    posts: int, pages: int, *, seed: int = 0, start: str = "2019-01-01"
) -> dict[str, Any]:
    """A deterministic state: *posts* posts published from *start* on, one every 1 to 3
    days (some edited a little later), and *pages* pages (about, contact, ...)."""
    rng = random.Random(seed)
    when = datetime.fromisoformat(start).replace(hour=9)
    taken: set[str] = set()
    items: list[dict[str, Any]] = []
    for n in range(posts):
        when += timedelta(days=rng.randint(1, 3), minutes=rng.randint(0, 600))
        modified = when + timedelta(hours=rng.randint(1, 200)) if rng.random() < 0.3 else when
        title = _title(rng)
        items.append(
            {
                "id": n + 1,
                "slug": _slug(title, taken),
                "title": title,
                "body": _text(rng, rng.randint(2, 5)),
                "date_gmt": gmt(when),
                "modified_gmt": gmt(modified),
                "category": CATEGORIES[rng.randrange(len(CATEGORIES))],
                "status": "publish",
            }
        )
    page_items: list[dict[str, Any]] = []
    first = datetime.fromisoformat(start).replace(hour=8)
    for n in range(pages):
        slug = PAGE_SLUGS[n] if n < len(PAGE_SLUGS) else f"page-{n + 1}"
        taken.add(slug)
        page_items.append(
            {
                "id": posts + n + 1,
                "slug": slug,
                "title": slug.replace("-", " ").capitalize(),
                "body": _text(rng, 2),
                "date_gmt": gmt(first),
                "modified_gmt": gmt(first + timedelta(days=rng.randint(0, 30))),
                "status": "publish",
            }
        )
    return {
        "name": "Example Blog",
        "description": "Just another WordPress site",
        "robots_extra": "",
        "categories": list(CATEGORIES),
        "posts": items,
        "pages": page_items,
    }


def recent(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The published posts, most recent first (as the home page lists them)."""
    live = [p for p in state["posts"] if p.get("status", "publish") == "publish"]
    return sorted(live, key=lambda p: (p["date_gmt"], p["id"]), reverse=True)


def permalink(post: dict[str, Any]) -> str:
    """The path of *post* (``/YYYY/MM/slug/``) or of a page (``/slug/``)."""
    if "category" not in post:
        return f"/{post['slug']}/"
    return f"/{post['date_gmt'][:4]}/{post['date_gmt'][5:7]}/{post['slug']}/"


def publish_post(state: dict[str, Any], now_iso: str) -> str:
    """Publish a new post dated *now_iso*; return its path."""
    rng = random.Random(len(state["posts"]) * 7919 + 1)
    ids = [p["id"] for p in state["posts"]] + [p["id"] for p in state["pages"]]
    taken = {p["slug"] for p in state["posts"]} | {p["slug"] for p in state["pages"]}
    title = _title(rng)
    post = {
        "id": max(ids, default=0) + 1,
        "slug": _slug(title, taken),
        "title": title,
        "body": _text(rng, 3),
        "date_gmt": gmt(now_iso),
        "modified_gmt": gmt(now_iso),
        "category": state["categories"][rng.randrange(len(state["categories"]))],
        "status": "publish",
    }
    state["posts"].append(post)
    return permalink(post)


def edit_post(state: dict[str, Any], index: int, now_iso: str) -> str:
    """Edit the text of the *index*-th most recent published post (0: the newest) at
    *now_iso*; return its path."""
    post = recent(state)[index]
    post["body"] += f"\n\nUpdate {gmt(now_iso)}: a correction to this post."
    post["modified_gmt"] = gmt(now_iso)
    return permalink(post)


def trash_post(state: dict[str, Any], index: int) -> str:
    """Move the *index*-th most recent published post (0: the newest) to the trash;
    return the path it had (a 404 from now on)."""
    post = recent(state)[index]
    post["status"] = "trash"
    return permalink(post)


def save(state: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write *state* to *path* atomically (a temporary file, then ``os.replace``)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(state, f)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- the parsed state ---------------------------------------------------------------


@dataclass
class Index:
    """A state and the lookups derived from it (built once per version of the file)."""

    state: dict[str, Any]
    posts: list[dict[str, Any]] = field(default_factory=list)  # most recent first
    pages: list[dict[str, Any]] = field(default_factory=list)  # by title
    by_path: dict[str, tuple[str, int]] = field(default_factory=dict)  # path -> (kind, i)
    by_id: dict[int, dict[str, Any]] = field(default_factory=dict)
    by_category: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    position: dict[int, int] = field(default_factory=dict)  # post id -> index in posts

    @classmethod
    def build(cls, state: dict[str, Any]) -> Index:
        index = cls(state)
        index.posts = recent(state)
        index.pages = sorted(
            (p for p in state["pages"] if p.get("status", "publish") == "publish"),
            key=lambda p: (p["title"], p["id"]),
        )
        for i, post in enumerate(index.posts):
            index.by_path[permalink(post)] = ("post", i)
            index.position[post["id"]] = i
            index.by_id[post["id"]] = post
            index.by_category.setdefault(post["category"], []).append(post)
        for i, page in enumerate(index.pages):
            index.by_path[permalink(page)] = ("page", i)
            index.by_id[page["id"]] = page
        return index

    @property
    def categories(self) -> list[str]:
        """The categories with at least one published post, by name."""
        return sorted(self.by_category)


class State:
    """The state file, parsed again only when it changed (inode, mtime, size)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.key: tuple[int, int, int] | None = None
        self.index: Index | None = None

    def get(self) -> Index:
        st = os.stat(self.path)
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if key != self.key or self.index is None:
            self.index = Index.build(json.loads(self.path.read_text(encoding="utf-8")))
            self.key = key
        return self.index


# --- rendering ----------------------------------------------------------------------


def w3c(moment: str) -> str:
    return f"{moment}+00:00"


def rfc822(moment: str) -> str:
    return format_datetime(datetime.fromisoformat(moment).replace(tzinfo=UTC), usegmt=True)


def pages_of(count: int, per_page: int = PER_PAGE) -> int:
    return max(1, math.ceil(count / per_page))


class Response:
    """What a handler answers: status, headers, body."""

    def __init__(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.status = status
        self.body = body
        self.headers = {"Content-Type": content_type, **(headers or {})}


class Renderer:
    """The pages of one request: absolute URLs on the request's Host."""

    def __init__(self, index: Index, base: str) -> None:
        self.index = index
        self.state = index.state
        self.base = base

    def url(self, path: str) -> str:
        return self.base + path

    def category(self, post: dict[str, Any]) -> str:
        return self.url(f"/category/{post['category']}/")

    def short(self, item: dict[str, Any]) -> str:
        return self.url(f"/?p={item['id']}")

    # The template.

    def html(
        self, status: int, title: str, path: str | None, main: str, head: str = ""
    ) -> Response:
        name = escape(self.state["name"])
        canonical = f'<link rel="canonical" href="{self.url(path)}">\n' if path else ""
        robots = '<meta name="robots" content="noindex, follow">\n' if status == 404 else ""
        nav = "".join(
            f'<li><a href="{self.url(permalink(p))}">{escape(p["title"])}</a></li>'
            for p in self.index.pages
        )
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
        page = f"""<!DOCTYPE html>
<html lang="en-US">
<head>
<meta charset="UTF-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} &#8211; {name}</title>
{robots}<link rel="alternate" type="application/rss+xml" title="{name} &raquo; Feed" \
href="{self.url("/feed/")}">
<link rel="https://api.w.org/" href="{self.url("/wp-json/")}">
{canonical}{head}<meta name="generator" content="WordPress 6.6.2">
</head>
<body class="wp-theme">
<div id="page" class="site">
<header id="masthead" class="site-header">
<p class="site-title"><a href="{self.url("/")}" rel="home">{name}</a></p>
<p class="site-description">{escape(self.state.get("description", ""))}</p>
<nav id="site-navigation" class="main-navigation"><ul>\
<li><a href="{self.url("/")}">Home</a></li>{nav}</ul></nav>
</header>
<div id="content" class="site-content">
<main id="main" class="site-main">
{main}
</main>
{self.sidebar()}
</div>
<footer id="colophon" class="site-footer">
<form class="newsletter" method="post" action="{self.url("/wp-admin/admin-ajax.php")}">\
<input type="hidden" name="action" value="subscribe">\
<input type="hidden" name="_wpnonce" value="{secrets.token_hex(5)}">\
<input type="email" name="email"><button>Subscribe</button></form>
<p>Proudly powered by WordPress. <span class="generated">{now}</span></p>
</footer>
</div>
</body>
</html>
"""
        return Response(status, page.encode("utf-8"), "text/html; charset=UTF-8")

    def sidebar(self) -> str:
        recent = "".join(
            f'<li><a href="{self.url(permalink(p))}">{escape(p["title"])}</a></li>'
            for p in self.index.posts[:RECENT]
        )
        categories = "".join(
            f'<li class="cat-item"><a href="{self.url(f"/category/{c}/")}">{c}</a> '
            f"({len(self.index.by_category[c])})</li>"
            for c in self.index.categories
        )
        pages = "".join(
            f'<li class="page_item"><a href="{self.url(permalink(p))}">'
            f"{escape(p['title'])}</a></li>"
            for p in self.index.pages
        )
        return (
            '<aside id="secondary" class="widget-area">\n'
            f'<section class="widget widget_recent_entries"><h2>Recent Posts</h2><ul>{recent}</ul>'
            "</section>\n"
            f'<section class="widget widget_categories"><h2>Categories</h2><ul>{categories}</ul>'
            "</section>\n"
            f'<section class="widget widget_pages"><h2>Pages</h2><ul>{pages}</ul></section>\n'
            "</aside>"
        )

    def not_found(self) -> Response:
        main = (
            '<section class="error-404 not-found"><header class="page-header">'
            '<h1 class="page-title">Oops! That page can&rsquo;t be found.</h1></header>'
            "<p>It looks like nothing was found at this location.</p></section>"
        )
        return self.html(404, "Page not found", None, main)

    @staticmethod
    def paragraphs(body: str) -> str:
        return "\n".join(f"<p>{escape(p)}</p>" for p in body.split("\n\n"))

    # The pages.

    def listing(self, posts: list[dict[str, Any]], number: int, root: str, title: str) -> Response:
        """An archive page: the home page's or a category's (*root*: ``/`` or
        ``/category/NAME/``)."""
        last = pages_of(len(posts))
        if number > last:
            return self.not_found()
        shown = posts[(number - 1) * PER_PAGE : number * PER_PAGE]
        entries = "\n".join(
            f'<article class="post type-post" id="post-{p["id"]}">'
            f'<h2 class="entry-title"><a href="{self.url(permalink(p))}" rel="bookmark">'
            f"{escape(p['title'])}</a></h2>"
            f'<time class="entry-date" datetime="{w3c(p["date_gmt"])}">{p["date_gmt"][:10]}</time>'
            f'<div class="entry-summary"><p>{escape(p["body"][:200])} [&hellip;]</p></div>'
            f'<footer class="entry-footer"><a href="{self.category(p)}"'
            f' rel="category tag">{p["category"]}</a></footer></article>'
            for p in shown
        )
        path = root if number == 1 else f"{root}page/{number}/"
        heading = "" if root == "/" else f'<header class="page-header"><h1>{title}</h1></header>'
        main = f"{heading}\n{entries}\n{self.pagination(number, last, root)}"
        page_title = title if number == 1 else f"{title} \u2013 Page {number}"
        return self.html(200, page_title, path, main)

    def pagination(self, current: int, last: int, root: str) -> str:
        """paginate_links(): previous, 1, …, current-1..current+1, …, last, next."""
        if last <= 1:
            return ""

        def link(n: int) -> str:
            return self.url(root if n == 1 else f"{root}page/{n}/")

        parts: list[str] = []
        if current > 1:
            parts.append(f'<a class="prev page-numbers" href="{link(current - 1)}">Previous</a>')
        dots = False
        for n in range(1, last + 1):
            if n == current:
                parts.append(f'<span aria-current="page" class="page-numbers current">{n}</span>')
                dots = True
            elif n == 1 or n == last or abs(n - current) <= 1:
                parts.append(f'<a class="page-numbers" href="{link(n)}">{n}</a>')
                dots = True
            elif dots:
                parts.append('<span class="page-numbers dots">&hellip;</span>')
                dots = False
        if current < last:
            parts.append(f'<a class="next page-numbers" href="{link(current + 1)}">Next</a>')
        links = "".join(parts)
        return f'<nav class="navigation pagination"><div class="nav-links">{links}</div></nav>'

    def post(self, i: int) -> Response:
        post = self.index.posts[i]
        path = permalink(post)
        head = (
            f'<link rel="shortlink" href="{self.short(post)}">\n'
            f'<meta property="og:type" content="article">\n'
            f'<meta property="article:published_time" content="{w3c(post["date_gmt"])}">\n'
            f'<meta property="article:modified_time" content="{w3c(post["modified_gmt"])}">\n'
        )
        nav = []
        if i + 1 < len(self.index.posts):  # older
            older = self.index.posts[i + 1]
            nav.append(
                f'<div class="nav-previous"><a href="{self.url(permalink(older))}" rel="prev">'
                f"{escape(older['title'])}</a></div>"
            )
        if i > 0:
            newer = self.index.posts[i - 1]
            nav.append(
                f'<div class="nav-next"><a href="{self.url(permalink(newer))}" rel="next">'
                f"{escape(newer['title'])}</a></div>"
            )
        main = (
            f'<article id="post-{post["id"]}" class="post type-post status-publish">\n'
            f'<header class="entry-header"><h1 class="entry-title">{escape(post["title"])}</h1>'
            f'<time class="entry-date published" datetime="{w3c(post["date_gmt"])}">'
            f"{post['date_gmt'][:10]}</time></header>\n"
            f'<div class="entry-content">\n{self.paragraphs(post["body"])}\n</div>\n'
            f'<footer class="entry-footer">Posted in <a href="'
            f'{self.category(post)}" rel="category tag">'
            f"{post['category']}</a></footer>\n</article>\n"
            f'<nav class="navigation post-navigation"><div class="nav-links">{"".join(nav)}'
            "</div></nav>"
        )
        return self.html(200, post["title"], path, main, head)

    def page(self, i: int) -> Response:
        page = self.index.pages[i]
        head = f'<link rel="shortlink" href="{self.short(page)}">\n'
        main = (
            f'<article id="post-{page["id"]}" class="page type-page status-publish">\n'
            f'<header class="entry-header"><h1 class="entry-title">{escape(page["title"])}</h1>'
            f"</header>\n"
            f'<div class="entry-content">\n{self.paragraphs(page["body"])}\n</div>\n</article>'
        )
        return self.html(200, page["title"], permalink(page), main, head)

    # Feed, robots.txt, sitemaps.

    def feed(self, request: Any) -> Response:
        posts = self.index.posts[:PER_PAGE]
        modified = max((p["modified_gmt"] for p in self.index.posts), default="2000-01-01T00:00:00")
        last_modified = rfc822(modified)
        etag = '"' + hashlib.md5(last_modified.encode()).hexdigest() + '"'
        headers = {"Last-Modified": last_modified, "ETag": etag}
        inm = request.getHeader("if-none-match")
        ims = request.getHeader("if-modified-since")
        if (inm is not None and inm.strip() == etag) or (inm is None and ims == last_modified):
            return Response(304, b"", "application/rss+xml; charset=UTF-8", headers)
        name = escape(self.state["name"])
        items = "".join(
            f"<item><title>{escape(p['title'])}</title><link>{self.url(permalink(p))}</link>"
            f"<pubDate>{rfc822(p['date_gmt'])}</pubDate>"
            f"<category><![CDATA[{p['category']}]]></category>"
            f'<guid isPermaLink="false">{self.short(p)}</guid>'
            f"<description><![CDATA[{p['body'][:200]} [&#8230;]]]></description></item>\n"
            for p in posts
        )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" '
            'xmlns:atom="http://www.w3.org/2005/Atom">\n<channel>'
            f"<title>{name}</title>"
            f'<atom:link href="{self.url("/feed/")}" rel="self" type="application/rss+xml"/>'
            f"<link>{self.url('/')}</link><description>{escape(self.state.get('description', ''))}"
            f"</description><lastBuildDate>{last_modified}</lastBuildDate>"
            f"<language>en-US</language>\n{items}</channel></rss>\n"
        )
        return Response(200, body.encode("utf-8"), "application/rss+xml; charset=UTF-8", headers)

    def robots(self, host: str) -> Response:
        text = (
            "User-agent: *\nDisallow: /wp-admin/\nAllow: /wp-admin/admin-ajax.php\n\n"
            f"Sitemap: http://{host}/wp-sitemap.xml\n"
        )
        extra = self.state.get("robots_extra") or ""
        if extra:
            text += extra if extra.endswith("\n") else extra + "\n"
        return Response(200, text.encode("utf-8"), "text/plain; charset=utf-8")

    def _sitemap_lists(self) -> dict[str, list[tuple[str, str | None]]]:
        """The core sitemaps' URL lists (loc, lastmod), by file name stem."""
        posts = sorted(self.index.posts, key=lambda p: p["id"])
        pages = sorted(self.index.pages, key=lambda p: p["id"])
        home: list[tuple[str, str | None]] = [
            (
                self.url("/"),
                w3c(max(p["modified_gmt"] for p in self.index.posts[:PER_PAGE]))
                if self.index.posts
                else None,
            )
        ]
        return {
            "posts-post": [(self.url(permalink(p)), w3c(p["modified_gmt"])) for p in posts],
            "posts-page": home + [(self.url(permalink(p)), w3c(p["modified_gmt"])) for p in pages],
            "taxonomies-category": [
                (self.url(f"/category/{c}/"), None) for c in self.index.categories
            ],
        }

    def sitemap(self, name: str) -> Response | None:
        xml = "application/xml; charset=UTF-8"
        headers = {"X-Robots-Tag": "noindex, follow"}
        lists = self._sitemap_lists()
        if name == "wp-sitemap.xml":
            locs = "".join(
                f"<sitemap><loc>{self.url(f'/wp-sitemap-{stem}-{n}.xml')}</loc></sitemap>"
                for stem, urls in lists.items()
                if urls
                for n in range(1, pages_of(len(urls), SITEMAP_MAX) + 1)
            )
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</sitemapindex>\n'
            )
            return Response(200, body.encode(), xml, headers)
        if not (name.startswith("wp-sitemap-") and name.endswith(".xml")):
            return None
        stem, _, number = name[len("wp-sitemap-") : -len(".xml")].rpartition("-")
        urls = lists.get(stem)
        if (
            not urls
            or not number.isdigit()
            or not 1 <= int(number) <= pages_of(len(urls), SITEMAP_MAX)
        ):
            return None
        n = int(number)
        entries = "".join(
            f"<url><loc>{loc}</loc>"
            + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "")
            + "</url>"
            for loc, lastmod in urls[(n - 1) * SITEMAP_MAX : n * SITEMAP_MAX]
        )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<urlset '
            f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>\n'
        )
        return Response(200, body.encode(), xml, headers)

    # The REST API.

    def rest(self, route: str, query: dict[str, list[str]]) -> Response | None:
        headers = {
            "X-Robots-Tag": "noindex",
            "Link": f'<{self.url("/wp-json/")}>; rel="{API_REL}"',
            "X-Content-Type-Options": "nosniff",
            "Access-Control-Expose-Headers": "X-WP-Total, X-WP-TotalPages, Link",
            "Allow": "GET",
        }
        if route in ("", "/"):
            data: Any = {
                "name": self.state["name"],
                "description": self.state.get("description", ""),
                "url": self.url(""),
                "home": self.url(""),
                "namespaces": ["oembed/1.0", "wp/v2"],
                "routes": {
                    "/wp/v2/posts": {"namespace": "wp/v2", "methods": ["GET"]},
                    "/wp/v2/pages": {"namespace": "wp/v2", "methods": ["GET"]},
                },
            }
            return self.json(200, data, headers)
        kind = {"/wp/v2/posts": "post", "/wp/v2/pages": "page"}.get(route.rstrip("/"))
        if kind is None:
            return self.json(
                404,
                {
                    "code": "rest_no_route",
                    "message": "No route was found matching the URL and request method.",
                    "data": {"status": 404},
                },
                headers,
            )
        return self.collection(kind, route.rstrip("/"), query, headers)

    def json(self, status: int, data: Any, headers: dict[str, str]) -> Response:
        body = json.dumps(data, separators=(",", ":")).encode("utf-8")
        return Response(status, body, "application/json; charset=UTF-8", headers)

    def invalid(self, headers: dict[str, str], param: str, message: str) -> Response:
        return self.json(
            400,
            {
                "code": "rest_invalid_param",
                "message": f"Invalid parameter(s): {param}",
                "data": {"status": 400, "params": {param: message}, "details": {}},
            },
            headers,
        )

    def collection(
        self, kind: str, route: str, query: dict[str, list[str]], headers: dict[str, str]
    ) -> Response:
        def arg(name: str, default: str | None = None) -> str | None:
            values = query.get(name)
            return values[-1] if values else default

        try:
            per_page = int(arg("per_page", "10") or "10")
        except ValueError:
            return self.invalid(headers, "per_page", "per_page is not of type integer.")
        if not 1 <= per_page <= REST_MAX_PER_PAGE:
            return self.invalid(
                headers, "per_page", "per_page must be between 1 (inclusive) and 100 (inclusive)"
            )
        try:
            page = int(arg("page", "1") or "1")
        except ValueError:
            return self.invalid(headers, "page", "page is not of type integer.")
        if page < 1:
            return self.invalid(headers, "page", "page must be greater than or equal to 1")
        orderby = arg("orderby", "date") or "date"
        if orderby not in ("date", "modified", "id", "title", "slug"):
            return self.invalid(
                headers, "orderby", "orderby is not one of date, modified, id, title, and slug."
            )
        order = arg("order", "desc") or "desc"
        if order not in ("asc", "desc"):
            return self.invalid(headers, "order", "order is not one of asc and desc.")
        items = list(self.index.posts if kind == "post" else self.index.pages)
        for name, column, after in (
            ("modified_after", "modified_gmt", True),
            ("modified_before", "modified_gmt", False),
            ("after", "date_gmt", True),
            ("before", "date_gmt", False),
        ):
            value = arg(name)
            if value is None:
                continue
            try:
                bound = gmt(value)
            except ValueError:
                return self.invalid(headers, name, "Invalid date.")
            items = [p for p in items if (p[column] > bound if after else p[column] < bound)]
        key = {"date": "date_gmt", "modified": "modified_gmt", "id": "id"}.get(orderby, orderby)
        items.sort(key=lambda p: (p[key], p["id"]), reverse=order == "desc")
        total = len(items)
        total_pages = math.ceil(total / per_page)
        if page > total_pages and total > 0:
            return self.json(
                400,
                {
                    "code": "rest_post_invalid_page_number",
                    "message": "The page number requested is larger than the number of "
                    "pages available.",
                    "data": {"status": 400},
                },
                headers,
            )
        fields = [f for f in (arg("_fields") or "").split(",") if f.strip()]
        shown = [
            self.rest_item(p, kind, [f.strip() for f in fields])
            for p in items[(page - 1) * per_page : page * per_page]
        ]
        links = [headers["Link"]]
        own = {k: v[-1] for k, v in query.items() if k != "page"}
        base = self.url(f"/wp-json{route}")

        def at(n: int) -> str:
            params = "&".join(f"{k}={v}" for k, v in {**own, "page": str(n)}.items())
            return f"{base}?{params}"

        if page > 1:
            links.append(f'<{at(page - 1)}>; rel="prev"')
        if page < total_pages:
            links.append(f'<{at(page + 1)}>; rel="next"')
        headers = {
            **headers,
            "X-WP-Total": str(total),
            "X-WP-TotalPages": str(total_pages),
            "Link": ", ".join(links),
        }
        return self.json(200, shown, headers)

    def rest_item(self, p: dict[str, Any], kind: str, fields: list[str]) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": p["id"],
            "date": p["date_gmt"],
            "date_gmt": p["date_gmt"],
            "guid": {"rendered": self.url(f"/?p={p['id']}")},
            "modified": p["modified_gmt"],
            "modified_gmt": p["modified_gmt"],
            "slug": p["slug"],
            "status": "publish",
            "type": kind,
            "link": self.url(permalink(p)),
            "title": {"rendered": escape(p["title"])},
        }
        if kind == "post":
            item["categories"] = [sorted(self.index.by_category).index(p["category"]) + 1]
        if not fields:
            return item
        shown: dict[str, Any] = {}
        for name in fields:
            top, _, sub = name.partition(".")
            if top not in item:
                continue
            if sub and isinstance(item[top], dict):
                if sub in item[top]:
                    shown.setdefault(top, {})[sub] = item[top][sub]
            else:
                shown[top] = item[top]
        return shown

    # Routing.

    def route(self, request: Any, path: str, query: dict[str, list[str]]) -> Response:
        host = self.base.removeprefix("http://")
        if path == "/robots.txt":
            return self.robots(host)
        if path == "/feed/" or path == "/feed":
            return self.feed(request)
        if path == "/wp-json" or path.startswith("/wp-json/"):
            response = self.rest(path[len("/wp-json") :], query)
            return response if response is not None else self.not_found()
        if path.startswith("/wp-sitemap") and "/" not in path[1:]:
            response = self.sitemap(path[1:])
            return response if response is not None else self.not_found()
        if path == "/" and "p" in query:
            target = self.index.by_id.get(int(query["p"][-1])) if query["p"][-1].isdigit() else None
            if target is None:
                return self.not_found()
            return self.redirect(permalink(target))
        if path == "/":
            return self.listing(self.index.posts, 1, "/", self.state.get("description", ""))
        parts = [p for p in path.split("/") if p]
        if not path.endswith("/"):  # WordPress adds the trailing slash
            if path + "/" in self.index.by_path or (parts and parts[0] in ("page", "category")):
                return self.redirect(path + "/")
            return self.not_found()
        if len(parts) == 2 and parts[0] == "page" and parts[1].isdigit():
            n = int(parts[1])
            if n == 1:
                return self.redirect("/")
            if n < 1:
                return self.not_found()
            return self.listing(self.index.posts, n, "/", self.state.get("description", ""))
        if parts and parts[0] == "category" and len(parts) in (2, 4):
            posts = self.index.by_category.get(parts[1])
            if posts is None:
                return self.not_found()
            root = f"/category/{parts[1]}/"
            title = f"Category: {parts[1]}"
            if len(parts) == 2:
                return self.listing(posts, 1, root, title)
            if parts[2] != "page" or not parts[3].isdigit() or int(parts[3]) < 1:
                return self.not_found()
            if int(parts[3]) == 1:
                return self.redirect(root)
            return self.listing(posts, int(parts[3]), root, title)
        found = self.index.by_path.get(path)
        if found is None:
            return self.not_found()
        kind, i = found
        return self.post(i) if kind == "post" else self.page(i)

    def redirect(self, path: str) -> Response:
        return Response(
            301,
            b"",
            "text/html; charset=UTF-8",
            {"Location": self.url(path), "X-Redirect-By": "WordPress"},
        )


class Site(resource.Resource):
    isLeaf = True

    def __init__(self, state: Path, log: IO[str]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.state = State(state)
        self.log = log

    def render(self, request: Any) -> bytes:
        uri = request.uri.decode("latin-1")
        method = request.method.decode("latin-1")
        host = (request.getHeader("host") or "").strip()
        if not host:
            address = request.getHost()
            host = f"{address.host}:{address.port}"
        renderer = Renderer(self.state.get(), f"http://{host}")
        parts = urlsplit(uri)
        if method not in ("GET", "HEAD"):
            response = renderer.not_found()
        else:
            response = renderer.route(request, parts.path or "/", parse_qs(parts.query))
        request.setResponseCode(response.status)
        for name, value in response.headers.items():
            request.setHeader(name, value)
        if response.headers["Content-Type"].startswith("text/html") and response.status != 301:
            request.setHeader("Link", f'<http://{host}/wp-json/>; rel="{API_REL}"')
        self.log.write(
            json.dumps(
                {
                    "method": method,
                    "path": uri,
                    "status": response.status,
                    "bytes": 0 if method == "HEAD" else len(response.body),
                    "time": time.time(),
                }
            )
            + "\n"
        )
        self.log.flush()
        return response.body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", required=True, type=Path, help="the JSON state file")
    parser.add_argument("--log", required=True, help="one JSON line a request is added here")
    args = parser.parse_args()
    log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - open for the process
    site = server.Site(Site(args.site, log))  # type: ignore[no-untyped-call]
    site.displayTracebacks = False
    loop: Any = reactor
    port = loop.listenTCP(0, site, interface="127.0.0.1")
    print(port.getHost().port, flush=True)
    loop.run()


if __name__ == "__main__":
    main()
