"""Tests for the sitemap extensions of an entry (crawler.entry): the value objects
(Alternate, Video, News and SitemapEntry's extensions), the extras JSON the ledger
stores (extras_json, entry_extras), and rows with extras in EntryRows.
"""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError
from decimal import Decimal

import pytest

import crawler.entry
from crawler.entry import (
    Alternate,
    ChangeFreq,
    EntryBatch,
    EntryRows,
    News,
    SitemapEntry,
    Video,
    entry_extras,
    extras_json,
)

BASE = "https://example.com/"


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


# -- the extras JSON and rows with extras -----------------------------------------------


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


def test_plain_rows_keep_the_batch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows whose extras are all None never reach the per-entry path.
    def refuse(*args: object) -> None:
        raise AssertionError("a plain row was checked one by one")

    monkeypatch.setattr(crawler.entry, "_row_entry", refuse)
    rows = [(f"https://example.com/{i}", "2024-01-02", None) for i in range(5000)]
    batches = list(EntryRows(rows).batches(1024))
    assert [len(b) for b in batches] == [1024] * 4 + [904]
    assert all(b.extras is None and b.extended == {} and b.utc for b in batches)
    batch = EntryBatch(["https://example.com/a"], [None], extras=[None])
    assert batch.extended == {}
    with pytest.raises(ValueError, match="as many extras as locs"):
        EntryBatch(["https://example.com/a"], [None], extras=[])
    with pytest.raises(ValueError, match=re.escape("(loc, lastmod) or (loc, lastmod, extras)")):
        list(
            EntryRows(
                [("https://example.com/a", None), ("https://example.com/b", None, None)]
            ).batches()
        )  # noqa: E501
    with pytest.raises(ValueError, match=re.escape("(loc, lastmod) or (loc, lastmod, extras)")):
        list(EntryRows([("https://example.com/a", None, None, None)]))  # type: ignore[list-item]
