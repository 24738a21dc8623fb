"""Tests for crawler.page.pagemedia: images, videos and news facts read from real
responses (issue #14)."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.http import HtmlResponse
from scrapy.utils.response import get_base_url

from crawler.page.links import parse_html
from crawler.page.pagemedia import NewsFacts, images, news, news_language
from crawler.page.pagevideos import VideoFacts, videos

PAGE = "https://example.com/dir/page.html"


def _response(body: str, headers: dict[str, str] | None = None, url: str = PAGE) -> HtmlResponse:
    return HtmlResponse(
        url=url,
        body=body.encode("utf-8"),
        headers={k: v.encode() for k, v in (headers or {}).items()},
        encoding="utf-8",
    )


def _images(html: str, limit: int = 1000) -> tuple[str, ...]:
    response = _response(html)
    return images(parse_html(response), get_base_url(response), limit)


def _video_back(video: VideoFacts) -> VideoFacts:
    """*video* read back from the JSON the ledger keeps of it."""
    data = json.loads(json.dumps(video.to_json()))
    return VideoFacts(
        **{**data, "missing": tuple(data["missing"]), "problems": tuple(data["problems"])}
    )


def _videos(html: str) -> tuple[VideoFacts, ...]:
    response = _response(html)
    found = videos(parse_html(response), get_base_url(response), response.url)
    for video in found:
        assert _video_back(video) == video
        assert pickle.loads(pickle.dumps(video)) == video
    return found


def _news(html: str, headers: dict[str, str] | None = None) -> NewsFacts | None:
    response = _response(html, headers)
    found = news(parse_html(response), response)
    if found is not None:
        assert NewsFacts(**json.loads(json.dumps(found.to_json()))) == found
        assert pickle.loads(pickle.dumps(found)) == found
    return found


# -- images --------------------------------------------------------------------------

E = "https://example.com"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        pytest.param(
            '<img src="a.jpg"><img src="/b.png"><img src="https://cdn.example.net/c.gif">',
            (f"{E}/dir/a.jpg", f"{E}/b.png", "https://cdn.example.net/c.gif"),
            id="img src, relative and absolute, other hosts kept",
        ),
        pytest.param(
            '<head><base href="https://static.example.com/img/"></head><body><img src="a.jpg">',
            ("https://static.example.com/img/a.jpg",),
            id="resolved against <base href>",
        ),
        pytest.param(
            '<img src="s.jpg" srcset="s.jpg 320w, m.jpg 640w, l.jpg 1280w, xl.jpg 960w">',
            (f"{E}/dir/s.jpg", f"{E}/dir/l.jpg"),
            id="srcset: the largest w, besides src",
        ),
        pytest.param(
            '<img srcset="a.jpg, b.jpg 2x, c.jpg 1.5x">',
            (f"{E}/dir/b.jpg",),
            id="srcset: the largest x (none is 1x)",
        ),
        pytest.param(
            '<img srcset="a.jpg, b.jpg">',
            (f"{E}/dir/a.jpg",),
            id="srcset without descriptors: the first",
        ),
        pytest.param(
            '<img srcset="/img,crop=1,w=100.jpg 100w, /img,crop=1,w=800.jpg 800w">',
            (f"{E}/img,crop=1,w=800.jpg",),
            id="srcset URLs holding commas",
        ),
        pytest.param(
            '<picture><source srcset="a.avif 1x, a2.avif 2x" type="image/avif">'
            '<source media="(min-width: 800px)" srcset="w.webp 800w, w2.webp 1600w">'
            '<img src="fallback.jpg"></picture>',
            (f"{E}/dir/a2.avif", f"{E}/dir/w2.webp", f"{E}/dir/fallback.jpg"),
            id="picture sources, in page order",
        ),
        pytest.param(
            '<video poster="p.jpg"><source src="v.mp4" type="video/mp4"></video>'
            '<audio><source src="a.mp3"></audio>',
            (),
            id="video and audio sources are not images",
        ),
        pytest.param(
            '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="real.jpg">'
            '<img data-srcset="lazy-1.jpg 1x, lazy-2.jpg 2x">'
            '<img data-lazy-src="/lazy.webp">'
            '<picture><source data-srcset="p1.jpg 300w, p2.jpg 600w"></picture>',
            (f"{E}/dir/real.jpg", f"{E}/dir/lazy-2.jpg", f"{E}/lazy.webp", f"{E}/dir/p2.jpg"),
            id="lazy-loading attributes; a data: placeholder left out",
        ),
        pytest.param(
            '<head><meta property="og:image" content="https://example.com/og.jpg">'
            '<meta name="og:image:url" content="/og2.jpg">'
            '<meta property="og:image:width" content="1200">'
            '<link rel="image_src" href="/thumb.jpg"></head>'
            '<body><img src="/og.jpg"></body>',
            (f"{E}/og.jpg", f"{E}/og2.jpg", f"{E}/thumb.jpg"),
            id="og:image and link rel=image_src; each URL once",
        ),
        pytest.param(
            '<img src="blob:https://example.com/1234"><img src="DATA:image/png;base64,iVBO">'
            '<img src="javascript:void(0)"><img src=""><img src="  ">'
            '<img src="about:blank">',
            (),
            id="data:, blob: and other non-http URLs left out",
        ),
        pytest.param(
            '<img src="/t1.gif" width="1" height="1">'
            '<img src="/t2.gif" width="1px" height="1">'
            '<img src="/t3.gif" style="width:1px;height:1px;border:0">'
            '<img src="/t4.gif" style="WIDTH: 0 ; HEIGHT: 0px !important">'
            '<img src="/t5.gif" width="1" style="height:1px">'
            '<img src="/t6.gif" width="100" height="100" style="width:1px; height:1px">'
            '<img src="/ok1.gif" width="1" height="50">'
            '<img src="/ok2.gif" width="1">'
            '<img src="/ok3.gif" width="1" height="1" style="width:320px">',
            (f"{E}/ok1.gif", f"{E}/ok2.gif", f"{E}/ok3.gif"),
            id="1x1 tracking pixels left out, by attributes or style",
        ),
        pytest.param(
            '<noscript><img src="/real.jpg"></noscript><img src=" /spaced.jpg\n">',
            (f"{E}/real.jpg", f"{E}/spaced.jpg"),
            id="noscript images read; attribute whitespace stripped",
        ),
        pytest.param("", (), id="an empty page"),
    ],
)
def test_images(html: str, expected: tuple[str, ...]) -> None:
    assert _images(html) == expected


def test_images_limit() -> None:
    html = "".join(f'<img src="/i{n}.jpg">' for n in range(1200))
    found = _images(html)
    assert len(found) == 1000
    assert found[:2] == (f"{E}/i0.jpg", f"{E}/i1.jpg")
    assert _images(html, limit=3) == (f"{E}/i0.jpg", f"{E}/i1.jpg", f"{E}/i2.jpg")
    assert _images(html, limit=0) == ()


_img_url = st.one_of(
    st.sampled_from(["a.jpg", "/b.png", "data:image/png;base64,AAAA", "blob:x", "", "c.jpg"]),
    st.text(alphabet="abc/.:,? ", max_size=12),
)


@given(st.lists(st.tuples(st.sampled_from(["src", "srcset", "data-src"]), _img_url), max_size=20))
def test_images_unique_and_http(attrs: list[tuple[str, str]]) -> None:
    html = "".join(f'<img {name}="{value}">' for name, value in attrs)
    found = _images(html)
    assert len(found) == len(set(found))
    assert all(url.startswith(("http://", "https://")) for url in found)


# -- videos --------------------------------------------------------------------------

FULL_JSONLD = """{
  "@context": "https://schema.org",
  "@type": "VideoObject",
  "name": "  How to  tie a tie ",
  "description": "Step by step.",
  "thumbnailUrl": ["/thumbs/tie.jpg", "/thumbs/tie-2.jpg"],
  "contentUrl": "https://cdn.example.com/tie.mp4",
  "embedUrl": "https://example.com/embed/tie",
  "duration": "PT1M30S",
  "uploadDate": "2024-03-01T08:00:00+01:00",
  "expires": "2030-01-01",
  "isFamilyFriendly": "true"
}"""

TIE = VideoFacts(
    thumbnail_loc=f"{E}/thumbs/tie.jpg",
    title="How to tie a tie",
    description="Step by step.",
    content_loc="https://cdn.example.com/tie.mp4",
    player_loc=f"{E}/embed/tie",
    duration=90,
    publication_date="2024-03-01T07:00:00+00:00",
    expiration_date="2030-01-01",
    family_friendly=True,
)


def found(thumbnail_loc: str, title: str, description: str, **rest: Any) -> VideoFacts:
    """A video with the three fields Google requires, and *rest*."""
    return VideoFacts(thumbnail_loc, title, description, **rest)


def _ld(*blocks: str) -> str:
    return "".join(f'<script type="application/ld+json">{b}</script>' for b in blocks)


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        pytest.param(_ld(FULL_JSONLD), (TIE,), id="JSON-LD VideoObject, every field"),
        pytest.param(
            _ld(
                f'{{"@context": "https://schema.org", "@graph": [{{"@type": "WebPage"}}, '
                f"{FULL_JSONLD}]}}"
            ),
            (TIE,),
            id="inside @graph",
        ),
        pytest.param(_ld(f"[{FULL_JSONLD}]"), (TIE,), id="in a list"),
        pytest.param(
            _ld(f'{{"@type": "NewsArticle", "headline": "x", "video": [{FULL_JSONLD}]}}'),
            (TIE,),
            id="as the video of an article",
        ),
        pytest.param(
            _ld(FULL_JSONLD.replace('"VideoObject"', '["VideoObject", "CreativeWork"]')),
            (TIE,),
            id="@type a list",
        ),
        pytest.param(
            _ld(FULL_JSONLD, FULL_JSONLD),
            (TIE,),
            id="the same video twice is one",
        ),
        pytest.param(
            _ld(
                '{"@type": "VideoObject", "name": "Bare", "thumbnail": {"@type": "ImageObject",'
                ' "contentUrl": "/t.jpg"}, "embedUrl": "/player?id=1"}'
            ),
            (
                VideoFacts(
                    thumbnail_loc=f"{E}/t.jpg",
                    title="Bare",
                    player_loc=f"{E}/player?id=1",
                    missing=("description",),
                ),
            ),
            id="thumbnail as an ImageObject; a missing description",
        ),
        pytest.param(
            _ld('{"@type": "VideoObject"}'),
            (
                VideoFacts(
                    missing=("thumbnail_loc", "title", "description", "content_loc or player_loc")
                ),
            ),
            id="nothing Google requires",
        ),
        pytest.param(
            _ld(
                '{"@type": "VideoObject", "name": "Long", "contentUrl": "/l.mp4",'
                ' "duration": "PT8H0M1S", "uploadDate": "2024-03-01T08:00:00",'
                ' "isFamilyFriendly": false}'
            ),
            (
                VideoFacts(
                    title="Long",
                    content_loc=f"{E}/l.mp4",
                    family_friendly=False,
                    missing=("thumbnail_loc", "description"),
                    problems=(
                        "duration 28801 s is over Google's limit of 28,800 s: left out",
                        "uploadDate '2024-03-01T08:00:00' is not a W3C date or date-time"
                        " with a time zone: left out",
                    ),
                ),
            ),
            id="over 8 hours and a date without a zone: dropped with problems",
        ),
        pytest.param(
            _ld(
                '{"@type": "VideoObject", "name": "x", "contentUrl": "/x.mp4", "duration": "1:30"}',
                '{"@type": "VideoObject", "name": "y", "contentUrl": "/y.mp4", "duration": "PT0S"}',
                '{"@type": "VideoObject", "name": "z", "contentUrl": "/z.mp4",'
                ' "duration": "P1DT2H"}',
                '{"@type": "VideoObject", "name": "w", "contentUrl": "/w.mp4",'
                ' "duration": "PT2.6S"}',
            ),
            tuple(
                VideoFacts(
                    title=name,
                    content_loc=f"{E}/{name}.mp4",
                    duration=duration,
                    missing=("thumbnail_loc", "description"),
                    problems=problems,
                )
                for name, duration, problems in (
                    ("x", None, ("duration '1:30' is not an ISO 8601 duration: left out",)),
                    ("y", None, ("duration 0 s is under Google's minimum of 1 s: left out",)),
                    ("z", None, ("duration 93600 s is over Google's limit of 28,800 s: left out",)),
                    ("w", 3, ()),
                )
            ),
            id="durations: not ISO 8601, zero, days, a fraction",
        ),
        pytest.param(
            _ld(
                '{"@type": "VideoObject", "name": "Live", "embedUrl": "/live",'
                ' "publication": {"@type": "BroadcastEvent", "isLiveBroadcast": true,'
                ' "startDate": "2024-01-01T10:00:00Z"}}',
                '{"@type": "VideoObject", "name": "Event", "embedUrl": "/ev",'
                ' "publication": [{"@type": "BroadcastEvent"}]}',
                '{"@type": "VideoObject", "name": "Past", "embedUrl": "/past",'
                ' "publication": {"@type": "BroadcastEvent", "isLiveBroadcast": "False"}}',
            ),
            tuple(
                VideoFacts(
                    title=title,
                    player_loc=f"{E}{path}",
                    live=live,
                    missing=("thumbnail_loc", "description"),
                )
                for title, path, live in (
                    ("Live", "/live", True),
                    ("Event", "/ev", True),
                    ("Past", "/past", False),
                )
            ),
            id="live: isLiveBroadcast, or a BroadcastEvent",
        ),
        pytest.param(
            _ld(
                '{"@type": "VideoObject", "name": "Self", "thumbnailUrl": "/t.jpg",'
                ' "description": "d", "contentUrl": "page.html", "embedUrl": "#player"}'
            ),
            (
                VideoFacts(
                    thumbnail_loc=f"{E}/t.jpg",
                    title="Self",
                    description="d",
                    missing=("content_loc or player_loc",),
                    problems=(
                        f"content_loc {PAGE} is the page itself (Google: it must not be): left out",
                        f"player_loc {PAGE}#player is the page itself (Google: it must not"
                        " be): left out",
                    ),
                ),
            ),
            id="the page itself is no content_loc or player_loc",
        ),
        pytest.param(
            _ld('{"@type": "VideoObject", "name": "broken",,}', "not json at all", "")
            + _ld('{"@type": "VideoObject", "name": "fine", "contentUrl": "/f.mp4"}'),
            (
                VideoFacts(
                    title="fine",
                    content_loc=f"{E}/f.mp4",
                    missing=("thumbnail_loc", "description"),
                ),
            ),
            id="malformed JSON-LD blocks skipped, the rest read",
        ),
        pytest.param(
            _ld(
                '{"@type": "VideoObject", "name": 42, "description": {"@value": "v"},'
                ' "thumbnailUrl": 7, "contentUrl": ["data:video/mp4;base64,AA", "/r.mp4"],'
                ' "duration": null, "uploadDate": 20240101, "isFamilyFriendly": "maybe",'
                ' "publication": "live"}',
                '"a string"',
                "[1, 2, null]",
                '{"@graph": {"@type": "Thing"}}',
            ),
            (
                VideoFacts(
                    title="42",
                    description="v",
                    content_loc=f"{E}/r.mp4",
                    missing=("thumbnail_loc",),
                    problems=(
                        "uploadDate '20240101' is not a W3C date or date-time with a time"
                        " zone: left out",
                    ),
                ),
            ),
            id="odd JSON-LD values: no crash",
        ),
        pytest.param(
            '<div itemscope itemtype="https://schema.org/VideoObject">'
            '<h2 itemprop="name">Micro  video</h2>'
            '<meta itemprop="description" content="Made of microdata.">'
            '<link itemprop="thumbnailUrl" href="/m.jpg">'
            '<meta itemprop="contentUrl" content="https://cdn.example.com/m.mp4">'
            '<link itemprop="embedUrl" href="/embed/m">'
            '<meta itemprop="duration" content="PT2M">'
            '<time itemprop="uploadDate" datetime="2024-05-06">May 6</time>'
            '<meta itemprop="isFamilyFriendly" content="http://schema.org/True">'
            '<div itemprop="publication" itemscope itemtype="https://schema.org/BroadcastEvent">'
            '<meta itemprop="isLiveBroadcast" content="true">'
            '<span itemprop="name">not the video name</span></div>'
            "</div>",
            (
                VideoFacts(
                    thumbnail_loc=f"{E}/m.jpg",
                    title="Micro video",
                    description="Made of microdata.",
                    content_loc="https://cdn.example.com/m.mp4",
                    player_loc=f"{E}/embed/m",
                    duration=120,
                    publication_date="2024-05-06",
                    family_friendly=True,
                    live=True,
                ),
            ),
            id="microdata, with meta and link itemprops and a nested item",
        ),
        pytest.param(
            '<article itemscope itemtype="http://schema.org/Article">'
            '<h1 itemprop="headline">A</h1>'
            '<div itemprop="video" itemscope itemtype="http://schema.org/VideoObject">'
            '<iframe itemprop="embedUrl" src="/embed/a"></iframe>'
            '<img itemprop="thumbnailUrl" src="/a.jpg"><p itemprop="description">About A</p>'
            '<meta itemprop="name" content="Video A"></div></article>',
            (found(f"{E}/a.jpg", "Video A", "About A", player_loc=f"{E}/embed/a"),),
            id="microdata video inside an article, src of iframe and img",
        ),
        pytest.param(
            "<head><title>Page title</title>"
            '<meta property="og:title" content="OG title">'
            '<meta property="og:description" content="OG description">'
            '<meta property="og:image" content="/og.jpg">'
            '<meta property="og:video" content="http://example.com/v.mp4">'
            '<meta property="og:video:secure_url" content="https://example.com/v.mp4">'
            '<meta property="og:video:type" content="video/mp4">'
            '<meta property="og:video:url" content="https://www.youtube.com/embed/abc">'
            '<meta property="og:video:type" content="text/html"></head>',
            (
                found(f"{E}/og.jpg", "OG title", "OG description", content_loc=f"{E}/v.mp4"),
                found(
                    f"{E}/og.jpg",
                    "OG title",
                    "OG description",
                    player_loc="https://www.youtube.com/embed/abc",
                ),
            ),
            id="og:video: secure_url preferred, the type decides file or player",
        ),
        pytest.param(
            '<head><meta property="og:video" content="/clip.webm">'
            '<meta property="og:video" content="https://player.example.net/42"></head>',
            (
                VideoFacts(
                    content_loc=f"{E}/clip.webm",
                    missing=("thumbnail_loc", "title", "description"),
                ),
                VideoFacts(
                    player_loc="https://player.example.net/42",
                    missing=("thumbnail_loc", "title", "description"),
                ),
            ),
            id="og:video without a type: a file extension makes a content_loc",
        ),
        pytest.param(
            "<head><title> The  page </title>"
            '<meta name="description" content="Page description."></head><body>'
            '<video poster="/p1.jpg" src="/v1.mp4"></video>'
            '<video poster="/p2.jpg" title="Own title"><source src="/v2.webm">'
            '<source src="/v2.mp4"></video>'
            '<video src="/no-poster.mp4"></video></body>',
            (
                found(f"{E}/p1.jpg", "The page", "Page description.", content_loc=f"{E}/v1.mp4"),
                found(f"{E}/p2.jpg", "Own title", "Page description.", content_loc=f"{E}/v2.webm"),
            ),
            id="video elements with a poster; the page's title and description",
        ),
        pytest.param(
            "<head><title>Page</title></head><body>"
            + _ld(
                '{"@type": "VideoObject", "name": "From JSON-LD",'
                ' "contentUrl": "/v.mp4", "duration": "PT10S"}'
            )
            + '<meta property="og:video" content="/v.mp4">'
            '<video poster="/poster.jpg" src="/v.mp4"></video></body>',
            (
                VideoFacts(
                    thumbnail_loc=f"{E}/poster.jpg",
                    title="From JSON-LD",
                    content_loc=f"{E}/v.mp4",
                    duration=10,
                    missing=("description",),
                ),
            ),
            id="one video in three sources: merged, the first source's fields first",
        ),
        pytest.param("<p>No video here</p>", (), id="no video"),
    ],
)
def test_videos(html: str, expected: tuple[VideoFacts, ...]) -> None:
    assert _videos(html) == expected


def test_video_json_form() -> None:
    assert TIE.to_json() == {
        "thumbnail_loc": f"{E}/thumbs/tie.jpg",
        "title": "How to tie a tie",
        "description": "Step by step.",
        "content_loc": "https://cdn.example.com/tie.mp4",
        "player_loc": f"{E}/embed/tie",
        "duration": 90,
        "publication_date": "2024-03-01T07:00:00+00:00",
        "expiration_date": "2030-01-01",
        "family_friendly": True,
        "live": None,
        "missing": [],
        "problems": [],
    }


# -- news ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "headers", "expected"),
    [
        pytest.param(
            '<html lang="en-US"><head><title>Site | Story</title>'
            '<meta property="article:published_time" content="2025-11-09T08:00:00-05:00">'
            '<meta property="og:title" content="Story"></head></html>',
            None,
            NewsFacts("2025-11-09T13:00:00+00:00", "Story", "en"),
            id="article:published_time, og:title, html lang",
        ),
        pytest.param(
            '<html lang="de"><head><title>Seite</title>'
            + _ld(
                '{"@context": "https://schema.org", "@type": "NewsArticle",'
                ' "headline": "Schlagzeile", "datePublished": "2025-01-02"}'
            )
            + "</head></html>",
            None,
            NewsFacts("2025-01-02", "Schlagzeile", "de"),
            id="JSON-LD NewsArticle: datePublished and headline",
        ),
        pytest.param(
            "<html><head><title>  Blog  post </title>"
            + _ld(
                '{"@graph": [{"@type": "WebSite", "datePublished": "2001-01-01"},'
                ' {"@type": "BlogPosting", "datePublished": "2025-03-04T05:06:07Z"}]}'
            )
            + "</head></html>",
            None,
            NewsFacts("2025-03-04T05:06:07+00:00", "Blog post", None),
            id="BlogPosting in @graph; <title>; no language",
        ),
        pytest.param(
            '<html lang="fr">'
            + _ld(
                '{"@type": "WebPage", "mainEntity": {"@type": ["Article"],'
                ' "headline": "Titre", "datePublished": "2025-06-07"}}'
            )
            + "</html>",
            None,
            NewsFacts("2025-06-07", "Titre", "fr"),
            id="Article as mainEntity",
        ),
        pytest.param(
            '<html lang="en">'
            '<meta property="article:published_time" content="yesterday">'
            + _ld(
                '{"@type": "Article", "datePublished": "2025-06-07T10:00:00"}',
                '{"@type": "Article", "datePublished": "2025-06-08"}',
            )
            + "</html>",
            None,
            NewsFacts("2025-06-08", None, "en"),
            id="dates that are not W3C with a zone are passed over",
        ),
        pytest.param(
            '<html lang="en">'
            + _ld('{"@type": "Article", "datePublished": "2025-06-07",,}')
            + _ld(
                '{"@type": "Person", "datePublished": "2025-06-07",'
                ' "citation": {"@type": "Article", "datePublished": "2025-01-01"}}'
            )
            + "<title>No date</title></html>",
            None,
            None,
            id="no publication date: None (broken JSON-LD, a nested article)",
        ),
        pytest.param(
            '<meta name="article:published_time" content="2025-01-01">',
            {"Content-Language": "pt-BR, en"},
            NewsFacts("2025-01-01", None, "pt"),
            id="Content-Language when the page has no lang",
        ),
        pytest.param(
            '<html xml:lang="zh-Hant"><meta property="article:published_time"'
            ' content="2025-01-01"></html>',
            {"Content-Language": "en"},
            NewsFacts("2025-01-01", None, "zh-tw"),
            id="xml:lang, Traditional Chinese",
        ),
    ],
)
def test_news(html: str, headers: dict[str, str] | None, expected: NewsFacts | None) -> None:
    assert _news(html, headers) == expected


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("en", "en"),
        ("EN-gb", "en"),
        ("en_US", "en"),
        ("fil", "fil"),
        ("gsw-CH", "gsw"),
        ("zh", "zh"),
        ("zh-CN", "zh-cn"),
        ("zh-cn", "zh-cn"),
        ("zh-TW", "zh-tw"),
        ("zh-Hans", "zh-cn"),
        ("zh-Hans-HK", "zh-cn"),
        ("zh-Hant", "zh-tw"),
        ("zh-Hant-CN", "zh-tw"),
        ("zh-HK", "zh-tw"),
        ("zh-SG", "zh-cn"),
        ("xx", None),
        ("english", None),
        ("", None),
        ("é", None),
    ],
)
def test_news_language(tag: str, expected: str | None) -> None:
    assert news_language(tag) == expected


def test_news_json_form() -> None:
    assert NewsFacts("2025-01-02", "T", "de").to_json() == {
        "publication_date": "2025-01-02",
        "title": "T",
        "language": "de",
    }


def test_everything_on_an_empty_page() -> None:
    response = _response("")
    root: Any = parse_html(response)
    assert images(root, PAGE) == ()
    assert videos(root, PAGE, PAGE) == ()
    assert news(root, response) is None


_SNIPPETS = [
    '<script type="application/ld+json">',
    "</script>",
    '{"@type": "VideoObject", "name": ',
    '{"@type": ["NewsArticle"], "datePublished": ',
    '"@graph": [',
    '"video": {',
    '"PT99999H"',
    '"2025-01-01"',
    "[]",
    "{}",
    "null",
    ",",
    "}",
    "]",
    '<div itemscope itemtype="https://schema.org/VideoObject">',
    '<span itemprop="duration publication" itemscope>',
    '<meta itemprop="contentUrl" content="/v.mp4">',
    "</div>",
    '<video poster="/p.jpg"><source src="/v.mp4">',
    '<picture><source srcset=",,, 2x, (w) 10w">',
    '<img srcset="a 1x, b 0x, c 1e3x" width="1">',
    '<meta property="og:video:type" content="text/html">',
    '<meta property="og:video" content="">',
    '<meta property="article:published_time" content="2025-13-40">',
    '<html lang="-">',
    "<svg><title>t</title></svg>",
    "<!-- -->",
]


@given(st.lists(st.sampled_from(_SNIPPETS), max_size=25))
def test_odd_markup_never_raises(parts: list[str]) -> None:
    response = _response("".join(parts))
    root = parse_html(response)
    assert len(set(images(root, PAGE))) == len(images(root, PAGE))
    for video in videos(root, PAGE, PAGE):
        assert video.duration is None or 1 <= video.duration <= 28_800
        assert _video_back(video) == video
    found = news(root, response)
    assert found is None or NewsFacts(**found.to_json()) == found
