"""Tests for the sitemap extensions the writer writes: hreflang alternates, images,
videos and news in a ``<url>``, and news sitemaps of their own.

Every file written is validated against ``tests/xsd/sitemap-all.xsd`` (the
sitemaps.org schema with Google's image, video and news schemas and an
``xhtml:link`` one) or ``siteindex.xsd``, and the published set is read back
over HTTP, from a real server on 127.0.0.1, by an independent reader:
ultimate-sitemap-parser (usp), which knows images, news and hreflang alternates.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sqlite3
import tempfile
from dataclasses import FrozenInstanceError, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from usp.objects.sitemap import InvalidSitemap

import crawler.sitemaps.entry
import crawler.sitemaps.entryrows
from crawler.publish.writer import CHILD_NAME_RE, SitemapSetWriter, publish_sitemaps
from crawler.sitemaps.entry import Alternate, ChangeFreq, News, SitemapEntry, Video
from crawler.sitemaps.entryrows import EntryBatch, EntryRows
from crawler.sitemaps.extras import entry_extras, extras_json
from crawler.sitemaps.limits import (
    IMAGE_NS,
    MAX_IMAGES_PER_URL,
    MAX_NEWS_URLS_PER_FILE,
    NEWS_NS,
    SITEMAP_NS,
    VIDEO_NS,
    XHTML_NS,
)
from tests.conftest import usp_tree
from tests.xsd import validate_index, validate_urlset

BASE = "https://example.com/"
ALL = frozenset({"xhtml", "image", "video", "news"})
NS = {"s": SITEMAP_NS, "xhtml": XHTML_NS, "image": IMAGE_NS, "video": VIDEO_NS, "news": NEWS_NS}
PLAIN_HEADER = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">\n'
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)


def decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


def published(out: Path, base: str = BASE) -> list[tuple[str, bytes]]:
    """Validate the index and every child it lists (XSDs); return each child's
    name and uncompressed content, in the index's order."""
    index = (out / "sitemap_index.xml").read_bytes()
    validate_index(index)
    children = []
    for loc in etree.fromstring(index, _PARSER).xpath("s:sitemap/s:loc/text()", namespaces=NS):
        name = loc.removeprefix(base)
        assert CHILD_NAME_RE.match(name), name
        content = decompressed(out / name)
        validate_urlset(content)
        children.append((name, content))
    return children


def urls(content: bytes) -> list[etree._Element]:
    return etree.fromstring(content, _PARSER).findall("s:url", NS)


def video(**fields: object) -> Video:
    values: dict[str, object] = {
        "thumbnail_loc": "https://example.com/thumbs/1.jpg",
        "title": "A film",
        "description": "What it shows",
        "content_loc": "https://example.com/films/1.mp4",
    }
    values.update(fields)
    return Video(**values)  # type: ignore[arg-type]


def news(title: str = "An article", date: str = "2026-11-20T08:00:00+00:00") -> News:
    return News("The Example Times", "en", date, title)


RICH = SitemapEntry(
    "https://example.com/en/article?id=1&x=2",
    "2026-11-20",
    ChangeFreq.DAILY,
    Decimal("0.5"),
    alternates=(
        Alternate("en", "https://example.com/en/article?id=1&x=2"),
        Alternate("de-AT", "https://example.com/de/artikel?id=1&x=2"),
        Alternate("x-default", "https://example.com/article?id=1&x=2"),
    ),
    images=("https://example.com/img/a.jpg", "https://example.com/img/b.png?s=1&t=2"),
    videos=(
        video(
            player_loc="https://example.com/player?v=1",
            duration=600,
            publication_date="2026-11-19T10:00:00+01:00",
            expiration_date="2027-01-01",
            family_friendly=True,
            live=False,
        ),
    ),
    news=news(),
)


# -- the value objects ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Alternate("english", BASE), "hreflang must be"),
        (lambda: Alternate("en_GB", BASE), "hreflang must be"),
        (lambda: Alternate("en", "/relative"), "alternate href is not a valid URL"),
        (lambda: Alternate("en", "https://example.com/a b"), "alternate href"),
        (lambda: video(content_loc=None), "needs a content_loc or a player_loc"),
        (lambda: video(title=""), "video title must not be empty"),
        (lambda: video(title=" \n"), "video title must not be empty"),
        (lambda: video(title="t" * 101), "at most 100 characters"),
        (lambda: video(description="d" * 2049), "at most 2048 characters"),
        (lambda: video(description=None), "video description must be a str"),
        (lambda: video(thumbnail_loc="thumb.jpg"), "video thumbnail_loc is not a valid URL"),
        (lambda: video(player_loc="javascript:play()"), "video player_loc"),
        (lambda: video(duration=0), "duration must be whole seconds, 1 to 28800"),
        (lambda: video(duration=28_801), "duration must be whole seconds"),
        (lambda: video(duration=60.0), "duration must be whole seconds"),
        (lambda: video(duration=True), "duration must be whole seconds"),
        (lambda: video(publication_date="yesterday"), "publication_date is not a W3C datetime"),
        (lambda: video(expiration_date="2027-02-30"), "expiration_date is not a W3C datetime"),
        (lambda: video(family_friendly="yes"), "family_friendly must be True, False or None"),
        (lambda: video(live=1), "live must be True, False or None"),
        (lambda: video(title="a\x00b"), "characters XML cannot hold"),
        (lambda: video(title="a\ud800b"), "characters XML cannot hold"),
        (lambda: News("Times", "EN", "2026-11-20", "t"), "news language"),
        (lambda: News("Times", "zh-CN", "2026-11-20", "t"), "news language"),
        (lambda: News("Times", "english", "2026-11-20", "t"), "news language"),
        (lambda: News("Times", "en", "20 Nov 2026", "t"), "news publication_date"),
        (lambda: News("", "en", "2026-11-20", "t"), "news publication_name must not be empty"),
        (lambda: News("Times", "en", "2026-11-20", ""), "news title must not be empty"),
        (
            lambda: SitemapEntry(BASE, images=["https://example.com/i.jpg"] * 1001),
            "at most 1,000 images per URL, not 1,001",
        ),
        (lambda: SitemapEntry(BASE, images="https://example.com/i.jpg"), "images must be"),
        (lambda: SitemapEntry(BASE, images=["i.jpg"]), "image loc is not a valid URL"),
        (lambda: SitemapEntry(BASE, alternates=[("en", BASE)]), "Alternate objects"),
        (lambda: SitemapEntry(BASE, videos=[{"title": "x"}]), "Video objects"),
        (lambda: SitemapEntry(BASE, news="yes"), "News object"),
    ],
)
def test_bad_extension_values_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    "good",
    [
        lambda: Alternate("x-default", BASE),
        lambda: Alternate("zh-Hant-TW", BASE),
        lambda: Alternate("es-419", BASE),
        lambda: video(content_loc=None, player_loc="https://example.com/p"),
        lambda: video(duration=1, title="t" * 100, description="d" * 2048),
        lambda: video(duration=28_800, publication_date="2026-11-20T08:00:00.5Z"),
        lambda: News("Times", "zh-cn", "2026-11-20", "t"),
        lambda: News("Times", "zh-tw", "2026-11-20", "t"),
        lambda: News("Times", "fra", "2026-11-20T08:00:00-05:00", "t"),
    ],
)
def test_good_extension_values_are_taken(good: object) -> None:
    good()  # type: ignore[operator]


def test_entries_with_extensions_are_frozen_values() -> None:
    entry = SitemapEntry(BASE, images=["https://example.com/i.jpg"], alternates=[])
    assert entry.images == ("https://example.com/i.jpg",)  # lists are kept as tuples
    assert entry.alternates == () and entry.videos == () and entry.news is None
    assert entry.extended and not SitemapEntry(BASE).extended
    assert hash(RICH) == hash(
        SitemapEntry(
            RICH.loc,
            RICH.lastmod,
            RICH.changefreq,
            RICH.priority,
            alternates=RICH.alternates,
            images=RICH.images,
            videos=RICH.videos,
            news=RICH.news,
        )
    )
    with pytest.raises(FrozenInstanceError):
        entry.images = ()  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        RICH.videos[0].title = "x"  # type: ignore[misc]
    # Existing callers: positional arguments as before, extensions only by keyword.
    with pytest.raises(TypeError):
        SitemapEntry(BASE, None, None, None, ())  # type: ignore[misc]
    assert SitemapEntry(BASE, "2024-01-02", "daily", "0.5") == SitemapEntry(  # type: ignore[arg-type]
        BASE, "2024-01-02", ChangeFreq.DAILY, Decimal("0.5")
    )


def test_images_up_to_the_limit_are_written(tmp_path: Path) -> None:
    images = [f"https://example.com/img/{i:04d}.jpg" for i in range(MAX_IMAGES_PER_URL)]
    entry = SitemapEntry("https://example.com/gallery", images=images)
    publish_sitemaps(tmp_path, [entry], index_base_url=BASE, extensions={"image"})
    [(_, content)] = published(tmp_path)
    [url] = urls(content)
    assert url.xpath("image:image/image:loc/text()", namespaces=NS) == images
    with pytest.raises(ValueError, match="at most 1,000 images"):
        SitemapEntry("https://example.com/gallery", images=[*images, images[0]])


# -- rendering -------------------------------------------------------------------------


def test_an_entry_with_every_extension_is_rendered_in_schema_order(tmp_path: Path) -> None:
    publish_sitemaps(tmp_path, [RICH], index_base_url=BASE, extensions=ALL)
    [(_, content)] = published(tmp_path)
    assert content.decode() == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="{SITEMAP_NS}" xmlns:xhtml="{XHTML_NS}" xmlns:image="{IMAGE_NS}"'
        f' xmlns:video="{VIDEO_NS}" xmlns:news="{NEWS_NS}">\n'
        "<url><loc>https://example.com/en/article?id=1&amp;x=2</loc>"
        "<lastmod>2026-11-20</lastmod><changefreq>daily</changefreq><priority>0.5</priority>"
        '<xhtml:link rel="alternate" hreflang="en"'
        ' href="https://example.com/en/article?id=1&amp;x=2"/>'
        '<xhtml:link rel="alternate" hreflang="de-AT"'
        ' href="https://example.com/de/artikel?id=1&amp;x=2"/>'
        '<xhtml:link rel="alternate" hreflang="x-default"'
        ' href="https://example.com/article?id=1&amp;x=2"/>'
        "<image:image><image:loc>https://example.com/img/a.jpg</image:loc></image:image>"
        "<image:image><image:loc>https://example.com/img/b.png?s=1&amp;t=2</image:loc>"
        "</image:image>"
        "<video:video><video:thumbnail_loc>https://example.com/thumbs/1.jpg</video:thumbnail_loc>"
        "<video:title>A film</video:title><video:description>What it shows</video:description>"
        "<video:content_loc>https://example.com/films/1.mp4</video:content_loc>"
        "<video:player_loc>https://example.com/player?v=1</video:player_loc>"
        "<video:duration>600</video:duration>"
        "<video:expiration_date>2027-01-01</video:expiration_date>"
        "<video:publication_date>2026-11-19T10:00:00+01:00</video:publication_date>"
        "<video:family_friendly>yes</video:family_friendly><video:live>no</video:live>"
        "</video:video>"
        "<news:news><news:publication><news:name>The Example Times</news:name>"
        "<news:language>en</news:language></news:publication>"
        "<news:publication_date>2026-11-20T08:00:00+00:00</news:publication_date>"
        "<news:title>An article</news:title></news:news>"
        "</url>\n"
        "</urlset>\n"
    )


NASTY = "Tom & Jerry <live> \"quoted\" 'single' ]]> caf\u00e9 \u65e5\u672c\r\nnext line\ttab"
NASTY_URL = "https://example.com/q?a=1&b=\"2\"&c='3'&d=<4>"


def test_every_text_and_attribute_is_escaped(tmp_path: Path) -> None:
    entry = SitemapEntry(
        NASTY_URL,
        alternates=[Alternate("fr", NASTY_URL + "&fr")],
        images=[NASTY_URL + "&img"],
        videos=[video(title=NASTY[:100], description=NASTY, player_loc=NASTY_URL + "&p")],
        news=News(NASTY, "en", "2026-11-20", NASTY),
    )
    publish_sitemaps(tmp_path, [entry], index_base_url=BASE, extensions=ALL)
    [(_, content)] = published(tmp_path)
    assert b"\r" not in content and b"&#13;" in content  # kept, not normalised away
    [url] = urls(content)
    assert url.findtext("s:loc", namespaces=NS) == NASTY_URL
    assert url.xpath("xhtml:link/@href", namespaces=NS) == [NASTY_URL + "&fr"]
    assert url.xpath("image:image/image:loc/text()", namespaces=NS) == [NASTY_URL + "&img"]
    assert url.findtext("video:video/video:title", namespaces=NS) == NASTY[:100]
    assert url.findtext("video:video/video:description", namespaces=NS) == NASTY
    assert url.findtext("video:video/video:player_loc", namespaces=NS) == NASTY_URL + "&p"
    assert url.findtext("news:news/news:title", namespaces=NS) == NASTY
    assert url.findtext("news:news/news:publication/news:name", namespaces=NS) == NASTY
    # Quotes inside an attribute are escaped whichever quote delimits it.
    assert b'href="https://example.com/q?a=1&amp;b=&quot;2&quot;&amp;c=&apos;3&apos;' in content


# -- namespaces ------------------------------------------------------------------------

# What the writer wrote for these sets before it knew any extension (generated with
# the code of commit dc923a9): each file's name and the SHA-256 of its uncompressed
# content, first 16 hex digits.
PLAIN_DIGESTS = {
    "entries": {
        "sitemap-00001-9d825bfd55.xml.gz": "9d825bfd5549fb9e",
        "sitemap_index.xml": "184fdcb823f46696",
    },
    "rows-bytes-plain": {
        "sitemap-00001-6ddf195d0c.xml": "6ddf195d0c93c0de",
        "sitemap-00002-cc3c7dce32.xml": "cc3c7dce32fbf18e",
        "sitemap-00003-72f4ac64a3.xml": "72f4ac64a3cb1e2c",
        "sitemap-00004-4812f897a8.xml": "4812f897a881182a",
        "sitemap-00005-06020d8894.xml": "06020d8894ffacd1",
        "sitemap-00006-c3aadd831f.xml": "c3aadd831fe54a65",
        "sitemap-00007-3dd234d5f1.xml": "3dd234d5f1e294a8",
        "sitemap_index.xml": "634e0e76b1897ae4",
    },
    "rows-rotated": {
        "sitemap-00001-691627c7d0.xml.gz": "691627c7d08007ba",
        "sitemap-00002-9d016f8f78.xml.gz": "9d016f8f783ce66d",
        "sitemap-00003-23b4ff1df3.xml.gz": "23b4ff1df350b0fe",
        "sitemap-00004-9e5fc49be7.xml.gz": "9e5fc49be7553782",
        "sitemap-00005-195fc72687.xml.gz": "195fc726876d58ab",
        "sitemap_index.xml": "cb7044fee5eae664",
    },
    "rows-txt": {
        "sitemap-00001-1dcecf1849.txt.gz": "1dcecf1849617865",
        "sitemap-00002-fc3bc5471a.txt.gz": "fc3bc5471a06f6f7",
        "sitemap-00003-baf39467ab.txt.gz": "baf39467ab21d8b5",
        "sitemap_index.xml": "350813d97d75a48d",
    },
}


def _plain_rows(count: int) -> list[tuple[str, str | None]]:
    # URLs the fast path takes and ones it does not (escaping, IRIs, fragments),
    # lastmods of every form.
    forms = (
        "https://example.com/p/{i}",
        "https://example.com/q?a={i}&b=<{i}>",
        "https://example.com/caf\u00e9/{i}",
        "https://example.com/f/{i}#top",
        'https://example.com/it\'s/"{i}"',
    )
    lastmods = (None, "2024-01-02", "2024-01-02T03:04:05+00:00", "2024-01-02T03:04:05.5-05:00")
    return [(forms[i % 5].format(i=i), lastmods[i % 4]) for i in range(count)]


def _plain_cases(three_columns: bool) -> dict[str, tuple[object, dict[str, object]]]:
    rows: list = _plain_rows(3000)
    if three_columns:  # what the ledger gives once it stores extras: None for plain rows
        rows = [(loc, lastmod, None) for loc, lastmod in rows]
    return {
        "entries": (
            [SitemapEntry(loc, lastmod) for loc, lastmod, *_ in rows[:40]]
            + [
                SitemapEntry(
                    "https://example.com/c", changefreq=ChangeFreq.WEEKLY, priority=Decimal("0.8")
                ),
                SitemapEntry("https://example.com/d", priority=Decimal("0.0")),
            ],
            {},
        ),
        "rows-rotated": (EntryRows(rows), {"max_urls": 700}),
        "rows-bytes-plain": (
            EntryRows(rows, ChangeFreq.DAILY, Decimal("0.5")),
            {"gzip": False, "max_bytes": 60_000},
        ),
        "rows-txt": (EntryRows(rows), {"fmt": "txt", "max_urls": 1000}),
    }


@pytest.mark.parametrize("three_columns", [False, True])
def test_a_plain_set_is_written_as_before(three_columns: bool) -> None:
    for name, (entries, options) in _plain_cases(three_columns).items():
        with tempfile.TemporaryDirectory() as out:
            publish_sitemaps(out, entries, index_base_url=BASE, **options)  # type: ignore[arg-type]
            digests = {
                path.name: hashlib.sha256(decompressed(path)).hexdigest()[:16]
                for path in sorted(Path(out).iterdir())
            }
        assert digests == PLAIN_DIGESTS[name], name


@pytest.mark.parametrize(
    ("extensions", "declared"),
    [
        (set(), ""),
        ({"image"}, f' xmlns:image="{IMAGE_NS}"'),
        ({"news", "xhtml"}, f' xmlns:xhtml="{XHTML_NS}" xmlns:news="{NEWS_NS}"'),
        (
            ALL,
            f' xmlns:xhtml="{XHTML_NS}" xmlns:image="{IMAGE_NS}" xmlns:video="{VIDEO_NS}"'
            f' xmlns:news="{NEWS_NS}"',
        ),
    ],
)
def test_namespaces_are_declared_when_used_on_every_file(
    tmp_path: Path, extensions: set[str], declared: str
) -> None:
    entries = [SitemapEntry(f"https://example.com/{i}") for i in range(5)]
    publish_sitemaps(tmp_path, entries, index_base_url=BASE, max_urls=2, extensions=extensions)
    children = published(tmp_path)
    assert len(children) == 3
    header = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}"{declared}>\n'
    for _, content in children:
        assert content.startswith(header.encode())


@pytest.mark.parametrize(
    ("entry", "missing"),
    [
        (SitemapEntry(BASE, alternates=[Alternate("en", BASE)]), "xhtml"),
        (SitemapEntry(BASE, images=["https://example.com/i.jpg"]), "image"),
        (SitemapEntry(BASE, videos=[video()]), "video"),
        (SitemapEntry(BASE, news=news()), "news"),
    ],
)
@pytest.mark.parametrize("as_rows", [False, True])
def test_an_undeclared_extension_is_refused(
    tmp_path: Path, entry: SitemapEntry, missing: str, as_rows: bool
) -> None:
    out = tmp_path / "out"
    publish_sitemaps(out, [SitemapEntry("https://example.com/old")], index_base_url=BASE)
    before = snapshot(out)
    declared = ALL - {missing}
    entries: object = [SitemapEntry("https://example.com/a"), entry]
    if as_rows:
        entries = EntryRows(
            [("https://example.com/a", None, None), (BASE, None, extras_json(entry))]
        )
    with pytest.raises(ValueError, match=f"uses the {missing} extension"):
        publish_sitemaps(out, entries, index_base_url=BASE, extensions=declared)  # type: ignore[arg-type]
    assert snapshot(out) == before


def test_a_text_sitemap_takes_no_extensions(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a txt sitemap cannot hold extensions"):
        SitemapSetWriter(tmp_path, index_base_url=BASE, fmt="txt", extensions={"image"})
    with pytest.raises(ValueError, match="unknown extension"):
        SitemapSetWriter(tmp_path, index_base_url=BASE, extensions={"images"})
    with pytest.raises(ValueError, match="a set of names"):
        SitemapSetWriter(tmp_path, index_base_url=BASE, extensions="image")
    entry = SitemapEntry(BASE, images=["https://example.com/i.jpg"])
    for entries in ([entry], EntryRows([(BASE, None, extras_json(entry))])):
        with pytest.raises(ValueError, match="a text sitemap cannot hold extensions"):
            publish_sitemaps(tmp_path, entries, index_base_url=BASE, fmt="txt")
    assert list(tmp_path.iterdir()) == []


# -- rotation --------------------------------------------------------------------------


@pytest.mark.parametrize("slack", [0, -1])
@pytest.mark.parametrize("as_rows", [False, True])
def test_rotation_counts_whole_entries_with_their_extensions(
    tmp_path: Path, slack: int, as_rows: bool
) -> None:
    # Eleven entries of exactly the same size, each some 60 KB with its 500
    # images: with room for exactly three, every file is the cap to the byte;
    # one byte less, two fit.
    def entry(i: int) -> SitemapEntry:
        images = [f"https://example.com/img/{i:02d}/{j:03d}.jpg" for j in range(500)]
        return SitemapEntry(f"https://example.com/gallery/{i:02d}", images=images)

    entries = [entry(i) for i in range(11)]
    with tempfile.TemporaryDirectory() as probe:
        publish_sitemaps(probe, entries[:1], index_base_url=BASE, gzip=False, extensions={"image"})
        [one] = [p for p in Path(probe).iterdir() if p.name.startswith("sitemap-")]
        size = one.stat().st_size  # header + entry + footer
    header = len(PLAIN_HEADER) + len(f' xmlns:image="{IMAGE_NS}"')
    footer = len("</urlset>\n")
    entry_size = size - header - footer
    assert entry_size > 40_000
    cap = header + 3 * entry_size + footer + slack
    source: object = entries
    if as_rows:
        source = EntryRows((e.loc, e.lastmod, extras_json(e)) for e in entries)
    _, files = publish_sitemaps(
        tmp_path,
        source,
        index_base_url=BASE,
        max_bytes=cap,
        extensions={"image"},  # type: ignore[arg-type]
    )
    per_file = 3 if slack == 0 else 2
    assert [f.urls for f in files] == [per_file] * (11 // per_file) + [11 % per_file]
    full = header + per_file * entry_size + footer
    assert [f.bytes_uncompressed for f in files[:-1]] == [full] * (len(files) - 1)
    assert all(f.bytes_uncompressed <= cap for f in files)
    locs = []
    for _, content in published(tmp_path):
        for url in urls(content):  # never split: each <url> whole, with its 500 images
            assert len(url.findall("image:image", NS)) == 500
            locs.append(url.findtext("s:loc", namespaces=NS))
    assert locs == [e.loc for e in entries]


def test_an_entry_too_big_for_a_file_is_refused(tmp_path: Path) -> None:
    images = [f"https://example.com/img/{j:03d}.jpg" for j in range(1000)]
    entry = SitemapEntry("https://example.com/gallery", images=images)
    with pytest.raises(ValueError, match="does not fit in a file of 10000 bytes"):
        publish_sitemaps(
            tmp_path, [entry], index_base_url=BASE, max_bytes=10_000, extensions={"image"}
        )
    assert list(tmp_path.iterdir()) == []


# -- news sitemaps -----------------------------------------------------------------------


def news_entries(count: int) -> list[SitemapEntry]:
    # Newest first, as the caller gives them.
    return [
        SitemapEntry(
            f"https://example.com/news/{i:05d}",
            "2026-11-20",
            ChangeFreq.HOURLY,
            Decimal("0.9"),
            images=["https://example.com/i.jpg"],
            news=news(f"Story {i}", f"2026-11-{20 - i // 1000:02d}T{23 - i % 24:02d}:00:00+00:00"),
        )
        for i in range(count)
    ]


def test_news_sitemaps_rotate_at_1000_and_are_listed_in_the_index(tmp_path: Path) -> None:
    entries = [SitemapEntry(f"https://example.com/{i}") for i in range(3)]
    stories = news_entries(2 * MAX_NEWS_URLS_PER_FILE + 500)
    _, files = publish_sitemaps(tmp_path, entries, index_base_url=BASE, news=stories)
    assert [f.urls for f in files] == [3, 1000, 1000, 500]
    assert files[0].name.startswith("sitemap-00001-")
    assert [f.name[:19] for f in files[1:]] == [f"sitemap-news-0000{n}-" for n in (1, 2, 3)]
    assert all(re.fullmatch(r"sitemap-news-\d{5}-[0-9a-f]{10}\.xml\.gz", f.name) for f in files[1:])
    children = published(tmp_path)
    assert [name for name, _ in children] == [f.name for f in files]  # the index lists them all
    # The index's lastmod of a news sitemap: its latest publication date.
    assert [f.lastmod for f in files[1:]] == [
        "2026-11-20T23:00:00+00:00",
        "2026-11-19T23:00:00+00:00",
        "2026-11-18T23:00:00+00:00",
    ]
    index = etree.fromstring((tmp_path / "sitemap_index.xml").read_bytes(), _PARSER)
    # (The first child's entries have no lastmod, nor has it one in the index.)
    assert index.xpath("s:sitemap/s:lastmod/text()", namespaces=NS) == [
        f.lastmod for f in files[1:]
    ]
    seen = []
    for _, content in children[1:]:
        # The news namespace only, and <loc> and <news:news> only, in the order given.
        assert content.startswith(
            f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}"'
            f' xmlns:news="{NEWS_NS}">\n'.encode()
        )
        for url in urls(content):
            assert [child.tag for child in url] == [f"{{{SITEMAP_NS}}}loc", f"{{{NEWS_NS}}}news"]
            seen.append(url.findtext("s:loc", namespaces=NS))
    assert seen == [entry.loc for entry in stories]


def test_news_sitemaps_obey_a_lower_max_urls_and_the_byte_cap(tmp_path: Path) -> None:
    _, files = publish_sitemaps(
        tmp_path,
        news_entries(1),
        index_base_url=BASE,
        news=news_entries(25),
        max_urls=10,
        extensions={"image", "news"},
        gzip=False,
    )
    assert [f.urls for f in files] == [1, 10, 10, 5]
    published(tmp_path)


def test_without_news_there_is_no_news_sitemap_and_the_index_is_as_before(tmp_path: Path) -> None:
    entries = [SitemapEntry(f"https://example.com/{i}") for i in range(3)]
    publish_sitemaps(tmp_path / "one", entries, index_base_url=BASE)
    publish_sitemaps(tmp_path / "two", entries, index_base_url=BASE, news=[])
    publish_sitemaps(tmp_path / "three", entries, index_base_url=BASE, news=iter(()))
    one = snapshot(tmp_path / "one")
    assert one == snapshot(tmp_path / "two") == snapshot(tmp_path / "three")
    assert not any("news" in name for name in one)


def test_news_sitemaps_of_a_previous_set_are_removed_and_nothing_else(tmp_path: Path) -> None:
    entries = [SitemapEntry(f"https://example.com/{i}") for i in range(3)]
    _, first = publish_sitemaps(tmp_path, entries, index_base_url=BASE, news=news_entries(3))
    others = {
        "robots.txt": b"User-agent: *\n",
        "sitemap-news.xml": b"theirs",
        "sitemap-news-00001-0123456789.txt": b"not a name the writer gives",
        "sitemap-news-1-0123456789.xml": b"nor this",
    }
    for name, data in others.items():
        (tmp_path / name).write_bytes(data)
    assert {f.name for f in first} <= set(snapshot(tmp_path))
    _, second = publish_sitemaps(tmp_path, entries, index_base_url=BASE)
    assert set(snapshot(tmp_path)) == {f.name for f in second} | {"sitemap_index.xml", *others}
    for name, data in others.items():
        assert (tmp_path / name).read_bytes() == data
        assert not CHILD_NAME_RE.match(name)


def test_a_news_entry_without_news_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    publish_sitemaps(out, [SitemapEntry("https://example.com/old")], index_base_url=BASE)
    before = snapshot(out)
    stories = [*news_entries(2), SitemapEntry("https://example.com/plain")]
    with pytest.raises(ValueError, match="a news sitemap entry needs news"):
        publish_sitemaps(out, [SitemapEntry(BASE)], index_base_url=BASE, news=stories)
    assert snapshot(out) == before


def test_news_sitemaps_need_a_base_url_their_names_fit(tmp_path: Path) -> None:
    # Their names are 5 characters longer than the others': a base that leaves
    # just room for those cannot name a news sitemap.
    base = "https://example.com/" + "d" * (2047 - 21 - 31) + "/"
    assert len(base + "sitemap-00001-0123456789.xml.gz") == 2047
    publish_sitemaps(tmp_path / "a", [SitemapEntry(BASE)], index_base_url=base)
    with pytest.raises(ValueError, match="index_base_url"):
        publish_sitemaps(
            tmp_path / "b", [SitemapEntry(BASE)], index_base_url=base, news=news_entries(1)
        )


# -- rows with extras (the ledger's fast path) ------------------------------------------------


def test_extras_json_format() -> None:
    entry = SitemapEntry(
        "https://example.com/a",
        alternates=[Alternate("en", "https://example.com/a"), Alternate("x-default", BASE)],
        images=["https://example.com/i.jpg"],
        videos=[video(duration=60, family_friendly=False)],
        news=News("Times", "zh-cn", "2026-11-20", 'Caf\u00e9 "news"'),
    )
    text = extras_json(entry)
    assert text == (
        '{"alternates":[["en","https://example.com/a"],["x-default","https://example.com/"]],'
        '"images":["https://example.com/i.jpg"],'
        '"videos":[{"thumbnail_loc":"https://example.com/thumbs/1.jpg","title":"A film",'
        '"description":"What it shows","content_loc":"https://example.com/films/1.mp4",'
        '"duration":60,"family_friendly":false}],'
        '"news":{"publication_name":"Times","language":"zh-cn",'
        '"publication_date":"2026-11-20","title":"Caf\u00e9 \\"news\\""}}'
    )
    assert SitemapEntry(entry.loc, **entry_extras(text)) == entry
    assert extras_json(SitemapEntry(BASE)) is None
    assert entry_extras(None) == {}
    assert entry_extras("{}") == {}
    assert entry_extras('{"images":["https://example.com/i.jpg"]}') == {
        "images": ("https://example.com/i.jpg",)
    }


@pytest.mark.parametrize(
    ("extras", "message"),
    [
        ("", "extras is not JSON"),
        ("{", "extras is not JSON"),
        ("[]", "extras must be a JSON object"),
        ('{"image":[]}', "extras has unknown keys: image"),
        ('{"images":"https://example.com/i.jpg"}', "extras images must be a JSON array"),
        ('{"images":[1]}', "image loc is not a valid URL"),
        ('{"alternates":[["en"]]}', "an alternate must be [hreflang, href]"),
        ('{"alternates":[["EN-gb-x", "https://example.com/"]]}', "hreflang must be"),
        (
            '{"videos":[{"title":"t","description":"d","content_loc":"https://example.com/v"}]}',
            "a video lacks thumbnail_loc",
        ),
        (
            '{"videos":[{"thumbnail_loc":"https://example.com/t","title":"t","description":"d"}]}',
            "a video needs a content_loc or a player_loc",
        ),
        (
            '{"videos":[{"thumbnail_loc":"https://example.com/t","title":"t","description":"d",'
            '"content_loc":"https://example.com/v","rating":5}]}',
            "a video has unknown keys: rating",
        ),
        ('{"news":{"title":"t"}}', "extras news lacks publication_name, language"),
        (
            '{"news":{"publication_name":"n","language":"en","publication_date":"2026-11-20",'
            '"title":7}}',
            "news title must be a str",
        ),
    ],
)
def test_bad_extras_are_refused_saying_what(extras: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        entry_extras(extras)


@pytest.mark.parametrize("first", ["loc", "extras"])
@pytest.mark.parametrize("batch_size", [1, 4096])
def test_a_row_with_bad_extras_is_refused_as_a_bad_loc_is(
    tmp_path: Path, first: str, batch_size: int
) -> None:
    # Today a bad loc from the ledger refuses the whole set (the previous one
    # stays published) with SitemapEntry's message: bad extras do the same,
    # and the first bad row is the one reported, whatever is bad in it.
    out = tmp_path / "out"
    publish_sitemaps(out, [SitemapEntry("https://example.com/old")], index_base_url=BASE)
    before = snapshot(out)
    rows: list[tuple[str, str | None, str | None]] = [
        (f"https://example.com/{i:04d}", None, None) for i in range(3000)
    ]
    bad_loc = ("https://example.com/a b", None, None)
    bad_extras = ("https://example.com/x", None, '{"images":["not a url"]}')
    rows[2000:2002] = [bad_loc, bad_extras] if first == "loc" else [bad_extras, bad_loc]
    entry_rows = EntryRows(rows)
    real_batches = entry_rows.batches
    entry_rows.batches = lambda size=4096: real_batches(batch_size)  # type: ignore[method-assign]
    with pytest.raises(ValueError) as raised:
        publish_sitemaps(out, entry_rows, index_base_url=BASE, extensions={"image"}, max_urls=500)
    if first == "loc":
        assert str(raised.value).startswith("loc contains whitespace")
    else:
        assert str(raised.value) == (
            "bad extras of 'https://example.com/x': image loc is not a valid URL:"
            " loc must be 12 to 2047 characters long, not 9: 'not a url'"
        )
    assert snapshot(out) == before
    # Iterated one by one (as report.py reads the ledger), the same error.
    with pytest.raises(ValueError) as one_by_one:
        list(EntryRows(rows))
    assert str(one_by_one.value) == str(raised.value)


def test_plain_rows_keep_the_batch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows whose extras are all None never reach the per-entry path.
    def refuse(*args: object) -> None:
        raise AssertionError("a plain row was checked one by one")

    monkeypatch.setattr(crawler.sitemaps.entryrows.EntryBatch, "_extend", refuse)
    rows = [(f"https://example.com/{i}", "2024-01-02", None) for i in range(5000)]
    batches = list(EntryRows(rows).batches(1024))
    assert [len(b) for b in batches] == [1024] * 4 + [904]
    assert all(b.extras is None and b.extended == {} and b.utc for b in batches)
    batch = EntryBatch(["https://example.com/a"], [None], extras=[None])
    assert batch.extended == {}
    with pytest.raises(ValueError, match="as many extras as locs"):
        EntryBatch(["https://example.com/a"], [None], extras=[])
    shape = re.escape("(loc, lastmod, extras, section, changefreq, priority) tuples")
    with pytest.raises(ValueError, match=shape):
        list(
            EntryRows(
                [("https://example.com/a", None), ("https://example.com/b", None, None)]
            ).batches()
        )  # noqa: E501
    seven = ("https://example.com/a", None, None, None, None, None, None)
    with pytest.raises(ValueError, match=shape):
        list(EntryRows([seven]))  # type: ignore[list-item]
    with pytest.raises(ValueError, match=shape):
        list(EntryRows([seven]).batches())  # type: ignore[list-item]
    with pytest.raises(ValueError, match=shape):
        list(EntryRows([("https://example.com/a",)]).batches())  # type: ignore[list-item]


def test_rows_from_sqlite_with_extras_publish_what_entries_do(tmp_path: Path) -> None:
    # The integrator's path: extras_json() stored in a TEXT column, read back by
    # a cursor in (loc, lastmod, extras) rows. (Rows share one changefreq and
    # priority, EntryRows'; these entries have none.)
    stories = [replace(e, changefreq=None, priority=None) for e in news_entries(3)]
    entries = sorted(
        [
            replace(RICH, changefreq=None, priority=None),
            SitemapEntry(NASTY_URL, videos=[video(title=NASTY[:100], player_loc=NASTY_URL)]),
            *(SitemapEntry(f"https://example.com/p/{i:05d}", "2024-01-02") for i in range(5000)),
            *stories,
        ],
        key=lambda e: e.loc,
    )
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    db.execute("CREATE TABLE urls (loc TEXT, lastmod TEXT, extras TEXT)")
    db.executemany(
        "INSERT INTO urls VALUES (?, ?, ?)", ((e.loc, e.lastmod, extras_json(e)) for e in entries)
    )
    stored = db.execute("SELECT count(*) FROM urls WHERE extras IS NOT NULL").fetchone()[0]
    assert stored == 5
    cursor = db.execute("SELECT loc, lastmod, extras FROM urls ORDER BY loc")
    options = {"index_base_url": BASE, "extensions": ALL, "max_urls": 2000}
    _, from_rows = publish_sitemaps(tmp_path / "rows", EntryRows(cursor), news=stories, **options)
    _, from_entries = publish_sitemaps(tmp_path / "entries", entries, news=stories, **options)
    assert snapshot(tmp_path / "rows") == snapshot(tmp_path / "entries")
    assert from_rows == from_entries
    published(tmp_path / "rows")
    # Iterated, the rows give the very entries that were stored.
    cursor = db.execute("SELECT loc, lastmod, extras FROM urls ORDER BY loc")
    assert list(EntryRows(cursor)) == entries
    db.close()


_GOOD_EXTENSIONS = st.fixed_dictionaries(
    {},
    optional={
        "alternates": st.lists(
            st.builds(
                Alternate,
                st.sampled_from(["en", "de-AT", "x-default", "zh-Hant-TW"]),
                st.sampled_from([BASE, NASTY_URL, "https://example.com/caf\u00e9"]),
            ),
            max_size=3,
        ),
        "images": st.lists(st.sampled_from([BASE + "i.jpg", NASTY_URL]), max_size=3),
        "videos": st.lists(
            st.builds(
                video,
                title=st.sampled_from(["t", NASTY[:100]]),
                duration=st.sampled_from([None, 1, 28_800]),
                live=st.sampled_from([None, True, False]),
            ),
            max_size=2,
        ),
        "news": st.builds(news, title=st.sampled_from(["t", NASTY])),
    },
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["https://example.com/a", NASTY_URL, "https://example.com/caf\u00e9"]),
            st.sampled_from([None, "2024-01-02", "2024-01-02T00:00:00.5Z"]),
            st.one_of(st.none(), _GOOD_EXTENSIONS),
        ),
        min_size=1,
        max_size=30,
    ),
    max_urls=st.integers(1, 12),
    batch_size=st.sampled_from([1, 7, 4096]),
)
def test_rows_and_entries_with_extensions_are_written_alike(
    rows: list[tuple[str, str | None, dict | None]], max_urls: int, batch_size: int
) -> None:
    entries = [SitemapEntry(loc, lastmod, **(ext or {})) for loc, lastmod, ext in rows]
    texts = [extras_json(e) for e in entries]
    entry_rows = EntryRows((e.loc, e.lastmod, t) for e, t in zip(entries, texts, strict=True))
    real_batches = entry_rows.batches
    entry_rows.batches = lambda size=4096: real_batches(batch_size)  # type: ignore[method-assign]
    options = {"index_base_url": BASE, "max_urls": max_urls, "extensions": ALL}
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        _, from_entries = publish_sitemaps(one, entries, **options)  # type: ignore[arg-type]
        _, from_rows = publish_sitemaps(two, entry_rows, **options)  # type: ignore[arg-type]
        assert snapshot(Path(one)) == snapshot(Path(two))
        assert from_entries == from_rows
        written = [url for _, content in published(Path(one)) for url in urls(content)]
    assert [url.findtext("s:loc", namespaces=NS) for url in written] == [e.loc for e in entries]
    for entry, url in zip(entries, written, strict=True):
        assert url.xpath("xhtml:link/@hreflang", namespaces=NS) == [
            a.hreflang for a in entry.alternates
        ]
        assert url.xpath("xhtml:link/@href", namespaces=NS) == [a.href for a in entry.alternates]
        assert url.xpath("image:image/image:loc/text()", namespaces=NS) == list(entry.images)
        assert [
            v.findtext("video:title", namespaces=NS) for v in url.findall("video:video", NS)
        ] == [v.title for v in entry.videos]
        assert url.findtext("news:news/news:title", namespaces=NS) == (
            None if entry.news is None else entry.news.title
        )
    for entry, text in zip(entries, texts, strict=True):
        assert (text is None) == (not entry.extended)
        assert text is None or set(json.loads(text)) <= {"alternates", "images", "videos", "news"}
        assert SitemapEntry(entry.loc, entry.lastmod, **entry_extras(text)) == entry


# -- read back by ultimate-sitemap-parser, over HTTP ------------------------------------------


def test_ultimate_sitemap_parser_reads_the_extensions_back(served: tuple[Path, str]) -> None:
    root, base = served
    pages = [
        SitemapEntry(
            f"{base}{lang}/article-{i}?a=1&b=2",
            "2026-11-20T08:00:00+00:00",
            alternates=[
                Alternate("en", f"{base}en/article-{i}?a=1&b=2"),
                Alternate("fr-CA", f"{base}fr/article-{i}?a=1&b=2"),
                Alternate("x-default", f"{base}article-{i}"),
            ],
            images=[f"{base}img/{i}-{j}.jpg?w=1&h=2" for j in range(3)],
            videos=[video()] if i == 0 else (),
            news=news(f'Tom & Jerry <{i}> "{lang}"') if i % 2 else None,
        )
        for lang in ("en", "fr")
        for i in range(4)
    ]
    plain = [SitemapEntry(f"{base}p/{i}") for i in range(5)]
    stories = [page for page in pages if page.news is not None]
    _, files = publish_sitemaps(
        root, [*plain, *pages], index_base_url=base, extensions=ALL, max_urls=5, news=stories
    )
    assert [f.urls for f in files] == [5, 5, 3, 4]
    published(root, base)

    tree = usp_tree(base + "sitemap_index.xml")
    children = tree.sub_sitemaps  # type: ignore[attr-defined]
    assert [child.url for child in children] == [base + f.name for f in files]
    assert not any(isinstance(child, InvalidSitemap) for child in children)
    read = list(tree.all_pages())
    assert [page.url for page in read] == [e.loc for e in (*plain, *pages, *stories)]
    by_file = [list(child.all_pages()) for child in children]
    for written, page in zip([*plain, *pages], read, strict=False):
        assert page.last_modified == (
            datetime.fromisoformat(written.lastmod) if written.lastmod else None
        )
        assert [(alt[0], alt[1]) for alt in page.alternates or []] == [
            (a.hreflang, a.href) for a in written.alternates
        ]
        assert [image.loc for image in page.images or []] == list(written.images)
        if written.news is None:
            assert page.news_story is None
        else:
            story = page.news_story
            assert story is not None
            assert story.title == written.news.title
            assert story.publication_name == "The Example Times"
            assert story.publication_language == "en"
            assert story.publish_date == datetime.fromisoformat(written.news.publication_date)
    # The news sitemap: each story again, with its news and nothing else.
    for written, page in zip(stories, by_file[-1], strict=True):
        assert page.url == written.loc
        assert page.news_story is not None and page.news_story.title == written.news.title  # type: ignore[union-attr]
        assert page.images is None and page.alternates is None and page.last_modified is None
