"""Rich sitemaps (issue 14): hreflang alternates, images, videos and news, taken
from the crawled pages of a real test site (tests/nightlyserver.py on 127.0.0.1),
written exactly, valid against sitemap-all.xsd, read back by an independent reader,
and the same after a nightly run of 304s."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from lxml import etree

from tests.conftest import CrawlResult, run_crawl, usp_tree
from tests.test_nightly import NightlySite
from tests.xsd import validate_index, validate_urlset

NS = {
    "s": "http://www.sitemaps.org/schemas/sitemap/0.9",
    "xhtml": "http://www.w3.org/1999/xhtml",
    "image": "http://www.google.com/schemas/sitemap-image/1.1",
    "video": "http://www.google.com/schemas/sitemap-video/1.1",
    "news": "http://www.google.com/schemas/sitemap-news/0.9",
}
# The news window's reference time (SITEMAP_NEWS_TIME): tests never patch the clock.
NOW = "2026-11-20T12:00:00+00:00"


def html(title: str, body: str = "", head: str = "", lang: str = "en") -> str:
    return (
        f'<html lang="{lang}"><head><title>{title}</title>{head}</head>'
        f"<body><p>{title}</p>{body}</body></html>"
    )


def alternates(*pairs: tuple[str, str]) -> str:
    return "".join(f'<link rel="alternate" hreflang="{c}" href="{h}">' for c, h in pairs)


class RichSite(NightlySite):
    """A multilingual, media and news site."""

    def build(self) -> None:
        other = f"http://localhost:{self.port}"  # another host, for our crawl
        a = [("en", "/en/"), ("de", "/de/"), ("fr", "/fr/"), ("x-default", "/")]
        pages: dict[str, dict[str, Any]] = {
            # Cluster A: three languages and x-default, all linking to all; /fr/
            # declares its alternates in an HTTP Link header instead of its head.
            "/": html("home", self.links("/en/", "/de/", "/fr/", "/img.html", "/video.html",
                      "/video-bad.html", "/news/", "/en/b.html", "/en/c.html", "/en/d.html",
                      "/en/e.html", "/en/f.html"), alternates(*a)),  # fmt: skip
            "/en/": html("en", "", alternates(*a)),
            "/de/": html("de", "", alternates(*a), lang="de"),
            "/fr/": {
                "body": html("fr", "", lang="fr"),
                "headers": {
                    "Link": ", ".join(f'<{h}>; rel="alternate"; hreflang="{c}"' for c, h in a)
                },
            },
            # B: /de/b.html does not link back.
            "/en/b.html": html("en b", self.links("/de/b.html"),
                               alternates(("en", "/en/b.html"), ("de", "/de/b.html"))),
            "/de/b.html": html("de b", "", alternates(("de", "/de/b.html")), lang="de"),
            # C: the French alternate is noindex.
            "/en/c.html": html("en c", self.links("/fr/c.html"),
                               alternates(("en", "/en/c.html"), ("fr", "/fr/c.html"))),
            "/fr/c.html": html("fr c", "", '<meta name="robots" content="noindex">'
                               + alternates(("en", "/en/c.html"), ("fr", "/fr/c.html")), "fr"),
            # D: an invalid code (the UK is GB); en and de hold up.
            "/en/d.html": html("en d", self.links("/de/d.html", "/en-gb/d.html"),
                               alternates(("en", "/en/d.html"), ("de", "/de/d.html"),
                                          ("en-UK", "/en-gb/d.html"))),
            "/de/d.html": html("de d", "", alternates(("en", "/en/d.html"),
                               ("de", "/de/d.html")), "de"),
            "/en-gb/d.html": html("en-gb d", "", alternates(("en", "/en/d.html"),
                                  ("en-UK", "/en-gb/d.html"))),
            # E: two URLs for 'de'.
            "/en/e.html": html("en e", self.links("/de/e1.html", "/de/e2.html"),
                               alternates(("en", "/en/e.html"), ("de", "/de/e1.html"),
                                          ("de", "/de/e2.html"))),
            "/de/e1.html": html("de e1", "", alternates(("en", "/en/e.html"),
                                ("de", "/de/e1.html")), "de"),
            "/de/e2.html": html("de e2", "", alternates(("en", "/en/e.html"),
                                ("de", "/de/e2.html")), "de"),
            # F: an alternate on another host (a ccTLD site, say).
            "/en/f.html": html("en f", "", alternates(("en", "/en/f.html"),
                               ("ja", f"{other}/ja/f.html"))),
            # Images: each source, and each kind left out.
            "/img.html": html("images", """
                <img src="/i/plain.png">
                <img srcset="/i/small.jpg 320w, /i/large.jpg 1280w, /i/medium.jpg 640w">
                <picture><source srcset="/i/pic-1x.webp 1x, /i/pic-2x.webp 2x">
                  <img src="/i/pic-fallback.jpg"></picture>
                <img data-src="/i/lazy.png"><img data-lazy-src="/i/lazy2.png">
                <img data-srcset="/i/lazy-s.png 100w, /i/lazy-l.png 900w">
                <img src="data:image/png;base64,iVBORw0KGgo=">
                <img src="blob:https://example.com/uuid">
                <img src="/i/pixel.gif" width="1" height="1">
                <img src="/private/secret.png">
                <img src="http://cdn.example.test/cdn.png">
                <img src="http://other.example.test/elsewhere.png">
                """, '<meta property="og:image" content="/i/og.png">'
                     '<link rel="image_src" href="/i/image-src.png">'),
            # Videos: a complete VideoObject, and one without its thumbnail.
            "/video.html": html("video", "", _video_ld(thumbnail="/v/thumb.jpg")),
            "/video-bad.html": html("video bad", "", _video_ld(thumbnail=None)),
            # News: inside the 48-hour window (two) and outside it (one).
            "/news/": html("news", self.links("/news/a.html", "/news/b.html",
                                              "/news/c.html")),
            "/news/a.html": html("Story A", "", _published("2026-11-20T10:00:00Z")),
            "/news/b.html": html("Story B", "", _published("2026-11-17T10:00:00Z")),
            "/news/c.html": html("Histoire C", "", _published("2026-11-19T14:30:00+01:00"),
                                 lang="fr-FR"),
        }  # fmt: skip
        self.robots = "User-agent: *\nDisallow: /private/\n"
        for path, page in pages.items():
            spec = page if isinstance(page, dict) else {"body": page}
            self.pages[path] = {**spec, "etag": f'"{path}"'}
        self.save()

    @staticmethod
    def links(*paths: str) -> str:
        return "".join(f'<a href="{p}">{p}</a>' for p in paths)


def _video_ld(thumbnail: str | None) -> str:
    video: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "VideoObject",
        "name": "A film",
        "description": "What the film is about",
        "contentUrl": "/v/film.mp4",
        "duration": "PT1M30S",
        "uploadDate": "2026-11-01T08:00:00Z",
        "isFamilyFriendly": True,
    }
    if thumbnail:
        video["thumbnailUrl"] = thumbnail
    return f'<script type="application/ld+json">{json.dumps(video)}</script>'


def _published(when: str) -> str:
    return f'<meta property="article:published_time" content="{when}">'


@pytest.fixture
def rich_site(tmp_path: Path) -> Iterator[RichSite]:
    site = RichSite(tmp_path)
    site.build()
    yield site
    site.stop()


OPTIONS = {
    "SITEMAP_IMAGES": True,
    "SITEMAP_VIDEOS": True,
    "SITEMAP_IMAGE_HOSTS": ["cdn.example.test"],
    "SITEMAP_NEWS_PUBLICATION": "The Test Times",
    "SITEMAP_NEWS_TIME": NOW,
}


def published(out: Path) -> tuple[dict[str, dict[str, Any]], list[bytes]]:
    """Every entry of the published set by loc, and the raw files (each validated)."""
    index = (out / "sitemap_index.xml").read_bytes()
    validate_index(index)
    entries: dict[str, dict[str, Any]] = {}
    files = []
    for loc in etree.fromstring(index).xpath("//s:loc/text()", namespaces=NS):
        data = (out / loc.rsplit("/", 1)[1]).read_bytes()
        data = gzip.decompress(data) if loc.endswith(".gz") else data
        validate_urlset(data)
        files.append(data)
        for url in etree.fromstring(data).xpath("s:url", namespaces=NS):
            entry = entries.setdefault(url.xpath("string(s:loc)", namespaces=NS), {})
            alts = url.xpath("xhtml:link", namespaces=NS)
            if alts:
                entry["alternates"] = {(a.get("hreflang"), a.get("href")) for a in alts}
            images = url.xpath("image:image/image:loc/text()", namespaces=NS)
            if images:
                entry["images"] = set(images)
            for video in url.xpath("video:video", namespaces=NS):
                entry.setdefault("videos", []).append(
                    {el.tag.split("}")[1]: el.text for el in video if isinstance(el.tag, str)}
                )
            news = url.xpath("news:news", namespaces=NS)
            if news:
                entry["news"] = (
                    news[0].xpath("string(news:publication/news:name)", namespaces=NS),
                    news[0].xpath("string(news:publication/news:language)", namespaces=NS),
                    news[0].xpath("string(news:publication_date)", namespaces=NS),
                    news[0].xpath("string(news:title)", namespaces=NS),
                )
    return entries, files


def problems(result: CrawlResult) -> dict[str, list[str]]:
    return {
        url: json.loads(row["problems"])
        for url, row in result.ledger_rows().items()
        if row["problems"]
    }


@pytest_twisted.ensureDeferred
async def test_rich_entries_are_exactly_what_the_pages_declare(
    rich_site: RichSite, tmp_path: Path
) -> None:
    site = rich_site
    u = site.url
    result = await run_crawl(u("/"), tmp_path, **OPTIONS)
    assert result.outcome == "published"
    entries, _ = published(result.out)

    cluster = {("en", u("/en/")), ("de", u("/de/")), ("fr", u("/fr/")), ("x-default", u("/"))}
    for page in ("/", "/en/", "/de/", "/fr/"):
        assert entries[u(page)]["alternates"] == cluster, page
    d_pair = {("en", u("/en/d.html")), ("de", u("/de/d.html"))}
    assert entries[u("/en/d.html")]["alternates"] == d_pair
    assert entries[u("/de/d.html")]["alternates"] == d_pair
    for page in ("/en/b.html", "/de/b.html", "/en/c.html", "/en/e.html", "/de/e1.html",
                 "/de/e2.html", "/en/f.html", "/en-gb/d.html"):  # fmt: skip
        assert "alternates" not in entries[u(page)], page

    assert entries[u("/img.html")]["images"] == {
        u(p)
        for p in (
            "/i/plain.png", "/i/large.jpg", "/i/pic-2x.webp", "/i/pic-fallback.jpg",
            "/i/lazy.png", "/i/lazy2.png", "/i/lazy-l.png", "/i/og.png", "/i/image-src.png",
        )
    } | {"http://cdn.example.test/cdn.png"}  # fmt: skip

    assert entries[u("/video.html")]["videos"] == [
        {
            "thumbnail_loc": u("/v/thumb.jpg"),
            "title": "A film",
            "description": "What the film is about",
            "content_loc": u("/v/film.mp4"),
            "duration": "90",
            "publication_date": "2026-11-01T08:00:00+00:00",
            "family_friendly": "yes",
        }
    ]
    assert "videos" not in entries[u("/video-bad.html")]

    news = {loc: e["news"] for loc, e in entries.items() if "news" in e}
    assert news == {
        u("/news/a.html"): ("The Test Times", "en", "2026-11-20T10:00:00+00:00", "Story A"),
        u("/news/c.html"): ("The Test Times", "fr", "2026-11-19T13:30:00+00:00", "Histoire C"),
    }

    found = problems(result)
    assert found[u("/en/b.html")] == [f"hreflang: no return link from {u('/de/b.html')}"]
    assert f"hreflang: alternate {u('/fr/c.html')} is noindex" in found[u("/en/c.html")]
    assert "hreflang: invalid code 'en-UK'" in found[u("/en/d.html")]
    assert "hreflang: two URLs for 'de'" in found[u("/en/e.html")]
    assert found[u("/en/f.html")] == [
        f"hreflang: alternate http://localhost:{site.port}/ja/f.html is on another host "
        "(not verified; --alternate-host writes it)"
    ]
    assert found[u("/video-bad.html")] == [
        f"video {u('/v/film.mp4')} not written: no thumbnail_loc"
    ]
    stats = result.stats
    assert stats["sitemap/rich/alternates"] == 4 * 4 + 2 * 2
    assert stats["sitemap/rich/images"] == 10
    assert stats["sitemap/rich/videos"] == 1
    assert stats["sitemap/rich/news"] == 2
    report = json.loads((result.state / "report.json").read_text())
    assert report["rich"] == {
        "alternates": 20, "images": 10, "videos": 1, "news": 2,
        "problems": sum(len(p) for p in found.values()),
    }  # fmt: skip
    assert {p["url"] for p in report["rich_problems"]} == set(found)


@pytest_twisted.ensureDeferred
async def test_alternate_hosts_are_written_as_declared(rich_site: RichSite, tmp_path: Path) -> None:
    u = rich_site.url
    result = await run_crawl(u("/"), tmp_path, SITEMAP_ALTERNATE_HOSTS=["localhost"])
    entries, _ = published(result.out)
    assert entries[u("/en/f.html")]["alternates"] == {
        ("en", u("/en/f.html")),
        ("ja", f"http://localhost:{rich_site.port}/ja/f.html"),
    }


@pytest_twisted.ensureDeferred
async def test_a_nightly_run_of_304s_writes_the_same_files(
    rich_site: RichSite, tmp_path: Path
) -> None:
    first = await run_crawl(rich_site.url("/"), tmp_path, **OPTIONS)
    before = {p.name: p.read_bytes() for p in first.out.iterdir()}
    rich_site.clear_log()
    second = await run_crawl(rich_site.url("/"), tmp_path, **OPTIONS)
    assert second.outcome == "published"
    statuses = {
        r["status"]
        for r in rich_site.requests()
        # The soft-404 probe asks for an address that cannot exist, each night.
        if r["path"] != "/robots.txt" and not r["path"].startswith("/sitemap-crawler-probe-")
    }
    assert statuses == {304}
    assert {p.name: p.read_bytes() for p in second.out.iterdir()} == before


@pytest_twisted.ensureDeferred
async def test_without_the_options_no_extension_but_hreflang(
    rich_site: RichSite, tmp_path: Path
) -> None:
    result = await run_crawl(rich_site.url("/"), tmp_path, SITEMAP_HREFLANG=False)
    _, files = published(result.out)
    for data in files:
        for prefix in ("xmlns:xhtml", "xmlns:image", "xmlns:video", "xmlns:news"):
            assert prefix.encode() not in data
    assert not any(p.name.startswith("sitemap-news") for p in result.out.iterdir())


@pytest_twisted.ensureDeferred
async def test_an_independent_reader_reads_them_back(
    rich_site: RichSite, served: tuple[Path, str], tmp_path: Path
) -> None:
    # Published for the address that serves them (--base-url), so that
    # ultimate-sitemap-parser fetches the index and its files over HTTP.
    root, base = served
    u = rich_site.url
    result = await run_crawl(
        u("/"), tmp_path, SITEMAP_OUT_DIR=str(root), SITEMAP_BASE_URL=base, **OPTIONS
    )
    assert result.outcome == "published"
    pages = {page.url: page for page in usp_tree(base + "sitemap_index.xml").all_pages()}
    en = pages[base + "en/"]
    assert {(code, href) for code, href in en.alternates or []} == {
        ("en", base + "en/"), ("de", base + "de/"), ("fr", base + "fr/"), ("x-default", base),
    }  # fmt: skip
    assert base + "i/large.jpg" in {image.loc for image in pages[base + "img.html"].images or []}
    story = pages[base + "news/a.html"].news_story
    assert story is not None and story.title == "Story A"
    assert story.publication_name == "The Test Times" and story.publication_language == "en"
