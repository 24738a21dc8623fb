"""Tests for crawler.core.lastmod: HTTP dates, W3C datetimes and page metadata."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from hypothesis import given
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from crawler.core.lastmod import (
    http_date_to_w3c,
    lastmod_datetime,
    lastmod_from_page,
    w3c_datetime,
)
from tests.test_nightly import NightlySite

# A fixed "now" for the two-digit-year rule, so the tests do not age.
NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
RFC_EXAMPLE = "1994-11-06T08:49:37+00:00"


# -- http_date_to_w3c ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # The three formats of RFC 9110, 5.6.7, with its own example date.
        ("Sun, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
        ("Sunday, 06-Nov-94 08:49:37 GMT", RFC_EXAMPLE),
        ("Sun Nov  6 08:49:37 1994", RFC_EXAMPLE),
        # asctime with a two-digit day has one space.
        ("Wed Nov 16 08:49:37 1994", "1994-11-16T08:49:37+00:00"),
        # Robustness the RFC asks of recipients.
        ("sun, 06 nov 1994 08:49:37 gmt", RFC_EXAMPLE),
        ("  Sun, 06 Nov 1994 08:49:37 GMT \r\n", RFC_EXAMPLE),
        ("06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
        ("Sun, 6 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
        ("Sun, 06 Nov 1994 08:49:37 UTC", RFC_EXAMPLE),
        ("Sunday, 06-Nov-1994 08:49:37 GMT", RFC_EXAMPLE),
        # The day name is redundant and not checked against the date.
        ("Mon, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
        # Leap second: the grammar allows :60, datetime does not.
        ("Sat, 31 Dec 2016 23:59:60 GMT", "2016-12-31T23:59:59+00:00"),
        ("Thu, 01 Jan 1970 00:00:00 GMT", "1970-01-01T00:00:00+00:00"),
        ("Thu, 29 Feb 2024 13:05:09 GMT", "2024-02-29T13:05:09+00:00"),
        ("Tue, 01 Jan 0999 00:00:00 GMT", "0999-01-01T00:00:00+00:00"),
    ],
)
def test_http_date_formats(value: str, expected: str) -> None:
    assert http_date_to_w3c(value, now=NOW) == expected


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "garbage",
        "0",
        "Sun, 06 Nov 1994 08:49:37",  # no zone
        "Sun, 06 Nov 1994 08:49:37 +0200",  # an HTTP date is always GMT
        "Sun, 06 Nov 1994 08:49:37 EST",
        "Sun, 06 Nov 94 08:49:37 GMT",  # two-digit year in IMF-fixdate
        "Sun, 32 Nov 1994 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Wed, 29 Feb 2023 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun 06 Nov 1994 08:49:37 GMT extra",
        "Sunday, 06-Nov-94 08:49:37",
        "Sun Nov  6 08:49:37 94",
        "1994-11-06T08:49:37Z",  # ISO 8601 is not an HTTP date
        "784111777",  # nor is a timestamp
        "Sun, \u0660\u0666 Nov 1994 08:49:37 GMT",  # Arabic-Indic digits
        b"",
        b"\xff\xfe\x00garbage",
        12345,
    ],
)
def test_http_date_malformed(value: object) -> None:
    assert http_date_to_w3c(value, now=NOW) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [
        b"Sun, 06 Nov 1994 08:49:37 GMT",
        b"Sunday, 06-Nov-94 08:49:37 GMT",
        b"Sun Nov  6 08:49:37 1994",
    ],
)
def test_http_date_bytes(value: bytes) -> None:
    # Scrapy's Headers hold bytes: response.headers.get(b"Last-Modified").
    assert http_date_to_w3c(value, now=NOW) == RFC_EXAMPLE


@pytest.mark.parametrize(
    ("last_modified", "date", "expected"),
    [
        # Later than Date: clamped to Date (RFC 9110, 8.8.2.1).
        (
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sat, 05 Nov 1994 10:00:00 GMT",
            "1994-11-05T10:00:00+00:00",
        ),
        # Earlier than, or equal to, Date: kept.
        ("Sun, 06 Nov 1994 08:49:37 GMT", "Mon, 07 Nov 1994 00:00:00 GMT", RFC_EXAMPLE),
        ("Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", RFC_EXAMPLE),
        # Date in another of the three formats, and as bytes.
        (
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Saturday, 05-Nov-94 10:00:00 GMT",
            "1994-11-05T10:00:00+00:00",
        ),
        (
            b"Sun, 06 Nov 1994 08:49:37 GMT",
            b"Sat Nov  5 10:00:00 1994",
            "1994-11-05T10:00:00+00:00",
        ),
        # A malformed or missing Date does not clamp.
        ("Sun, 06 Nov 1994 08:49:37 GMT", "yesterday", RFC_EXAMPLE),
        ("Sun, 06 Nov 1994 08:49:37 GMT", "", RFC_EXAMPLE),
        ("Sun, 06 Nov 1994 08:49:37 GMT", None, RFC_EXAMPLE),
        # A malformed Last-Modified is not replaced by Date.
        ("yesterday", "Sat, 05 Nov 1994 10:00:00 GMT", None),
        (None, "Sat, 05 Nov 1994 10:00:00 GMT", None),
    ],
)
def test_http_date_clamped_to_date_header(
    last_modified: str | bytes | None, date: str | bytes | None, expected: str | None
) -> None:
    assert http_date_to_w3c(last_modified, date, now=NOW) == expected


@pytest.mark.parametrize(
    ("value", "now", "expected"),
    [
        ("Sunday, 06-Nov-94 08:49:37 GMT", NOW, RFC_EXAMPLE),
        ("Wednesday, 06-Nov-26 08:49:37 GMT", NOW, "2026-11-06T08:49:37+00:00"),
        # 2049 is 22 years ahead of NOW, within 50: taken as is.
        ("Saturday, 06-Nov-49 08:49:37 GMT", NOW, "2049-11-06T08:49:37+00:00"),
        # 50 years ahead to the day, and just beyond (2076-11-21 12:00 is the edge).
        ("Saturday, 21-Nov-76 12:00:00 GMT", NOW, "2076-11-21T12:00:00+00:00"),
        ("Saturday, 21-Nov-76 12:00:01 GMT", NOW, "1976-11-21T12:00:01+00:00"),
        ("Friday, 31-Dec-99 23:59:59 GMT", NOW, "1999-12-31T23:59:59+00:00"),
        ("Saturday, 01-Jan-00 00:00:00 GMT", NOW, "2000-01-01T00:00:00+00:00"),
        # Near the end of a century the window crosses it.
        (
            "Monday, 01-Jan-01 00:00:00 GMT",
            datetime(2099, 6, 1, tzinfo=UTC),
            "2101-01-01T00:00:00+00:00",
        ),
        (
            "Monday, 01-Jan-60 00:00:00 GMT",
            datetime(2099, 6, 1, tzinfo=UTC),
            "2060-01-01T00:00:00+00:00",
        ),
        # A naive now is taken as UTC.
        ("Sunday, 06-Nov-94 08:49:37 GMT", datetime(2026, 1, 1), RFC_EXAMPLE),
    ],
)
def test_http_date_two_digit_years(value: str, now: datetime, expected: str) -> None:
    assert http_date_to_w3c(value, now=now) == expected


def test_http_date_two_digit_year_default_now() -> None:
    # 1994, not 2094, for as long as this code can be expected to run.
    assert http_date_to_w3c("Sunday, 06-Nov-94 08:49:37 GMT") == RFC_EXAMPLE


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1)))
def test_http_date_round_trips_an_independent_formatter(moment: datetime) -> None:
    moment = moment.replace(microsecond=0, tzinfo=UTC)
    header = format_datetime(moment, usegmt=True)  # the stdlib's IMF-fixdate
    assert http_date_to_w3c(header) == moment.isoformat()


# -- w3c_datetime ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-01-02", "2024-01-02"),
        ("2024-02-29", "2024-02-29"),
        ("2024-01-02T03:04Z", "2024-01-02T03:04:00+00:00"),
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05+00:00"),
        ("2024-01-02T03:04:05.5Z", "2024-01-02T03:04:05+00:00"),
        ("2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05+00:00"),
        ("2024-01-02T03:04:05+00:00", "2024-01-02T03:04:05+00:00"),
        ("2024-01-02T03:04:05-00:00", "2024-01-02T03:04:05+00:00"),
        ("2024-01-02T03:04:05+02:00", "2024-01-02T01:04:05+00:00"),
        ("2024-01-02T03:04+05:30", "2024-01-01T21:34:00+00:00"),
        ("2024-01-01T23:30:00-05:00", "2024-01-02T04:30:00+00:00"),
        ("2024-12-31T23:30:00-01:00", "2025-01-01T00:30:00+00:00"),
        # What CMSs emit besides the note's exact forms.
        ("2024-01-02T03:04:05+0200", "2024-01-02T01:04:05+00:00"),
        ("2024-01-02 03:04:05+02:00", "2024-01-02T01:04:05+00:00"),
        ("2024-01-02t03:04:05z", "2024-01-02T03:04:05+00:00"),
        ("2024-01-02T03:04:05,25Z", "2024-01-02T03:04:05+00:00"),
        ("  2024-01-02T03:04:05Z\n", "2024-01-02T03:04:05+00:00"),
    ],
)
def test_w3c_datetime_valid(value: str, expected: str) -> None:
    assert w3c_datetime(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        # Ambiguous: a time with no zone.
        "2024-01-02T03:04:05",
        "2024-01-02T03:04",
        "2024-01-02T03:04:05.123",
        # Forms the W3C note allows but xsd:date does not.
        "2024",
        "2024-01",
        # Not a real date or time.
        "2024-13-01",
        "2024-00-10",
        "2024-02-30",
        "2023-02-29",
        "0000-01-01",
        "2024-01-02T24:00:00Z",
        "2024-01-02T03:60:00Z",
        "2024-01-02T03:04:60Z",
        "2024-01-02T03:04:05+24:00",
        "2024-01-02T03:04:05+05:60",
        # Out of datetime's range once converted to UTC.
        "9999-12-31T23:00:00-05:00",
        "0001-01-01T00:00:00+01:00",
        # Garbage.
        "",
        "yesterday",
        "02/01/2024",
        "2 January 2024",
        "2024-01-02T03:04:05.Z",
        "2024-01-02T03:04:05Z garbage",
        "2024-1-2",
        "\u0662\u0660\u0662\u0664-01-02",
        "Sun, 06 Nov 1994 08:49:37 GMT",
        None,
        20240102,
    ],
)
def test_w3c_datetime_invalid(value: object) -> None:
    assert w3c_datetime(value) is None  # type: ignore[arg-type]


# Whole-minute offsets: historic zones (LMT) have seconds, which TZD cannot say.
_OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))


@given(
    st.datetimes(
        min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30), timezones=_OFFSETS
    )
)
def test_w3c_datetime_is_idempotent_and_writable(moment: datetime) -> None:
    normalised = w3c_datetime(moment.isoformat())
    assert normalised is not None
    assert w3c_datetime(normalised) == normalised
    assert lastmod_datetime(normalised) == moment.replace(microsecond=0)


# -- lastmod_datetime (the strict check before writing) ----------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-01-02", datetime(2024, 1, 2, tzinfo=UTC)),
        ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T03:04:05+00:00", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T05:04:05.5+02:00", datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)),
        ("2024-01-02T17:04:05+14:00", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_lastmod_datetime_valid(value: str, expected: datetime) -> None:
    assert lastmod_datetime(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "2024-01-02T03:04Z",  # xsd:dateTime needs seconds
        "2024-01-02T03:04:05",  # W3C needs a zone
        "2024",
        "2024-01",
        "2024-01-02T03:04:05+14:30",  # beyond xsd's +-14:00
        "2024-02-30",
        "2024-01-02T03:04:05+0000",
        "2024-01-02 03:04:05Z",
        " 2024-01-02",
        "",
    ],
)
def test_lastmod_datetime_invalid(value: str) -> None:
    with pytest.raises(ValueError):
        lastmod_datetime(value)


# -- lastmod_from_page -------------------------------------------------------------


def _root(head: str, body: str = "<p>Hello</p>") -> object:
    html = f"<!DOCTYPE html><html><head><title>t</title>{head}</head><body>{body}</body></html>"
    response = HtmlResponse(url="https://example.com/page", body=html.encode(), encoding="utf-8")
    return response.selector.root


def _ld(data: str) -> str:
    return f'<script type="application/ld+json">{data}</script>'


ARTICLE = '<meta property="article:modified_time" content="2024-03-04T05:06:07+01:00">'
OG = '<meta property="og:updated_time" content="2023-01-01T00:00:00Z">'


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (ARTICLE, "2024-03-04T04:06:07+00:00"),
        (OG, "2023-01-01T00:00:00+00:00"),
        # article:modified_time wins wherever it is in the document.
        (OG + ARTICLE, "2024-03-04T04:06:07+00:00"),
        # An invalid first choice falls through to the next.
        (
            '<meta property="article:modified_time" content="last week">' + OG,
            "2023-01-01T00:00:00+00:00",
        ),
        (
            '<meta property="article:modified_time" content="2024-03-04T05:06:07">' + OG,
            "2023-01-01T00:00:00+00:00",
        ),
        ('<meta name="article:modified_time" content="2024-03-04">', "2024-03-04"),
        ('<meta property=" Article:Modified_Time " content="2024-03-04">', "2024-03-04"),
        # JSON-LD: an object, a list, an @graph.
        (
            _ld('{"@type": "Article", "dateModified": "2022-05-06T07:08:09Z"}'),
            "2022-05-06T07:08:09+00:00",
        ),
        (
            _ld('[{"@type": "Person"}, {"@type": "WebPage", "dateModified": "2022-05-06"}]'),
            "2022-05-06",
        ),
        (_ld('{"@graph": [{"@type": "WebSite"}, {"dateModified": "2022-05-06"}]}'), "2022-05-06"),
        (
            _ld('{"@type": "Article", "dateModified": "2022-05-06"}') + ARTICLE,
            "2024-03-04T04:06:07+00:00",
        ),
        # Broken JSON costs its block only.
        (
            _ld('{"dateModified": "2021-01-01",}') + _ld('{"dateModified": "2022-05-06"}'),
            "2022-05-06",
        ),
        (_ld("") + _ld('{"dateModified": "2022-05-06"}'), "2022-05-06"),
        (
            '<script type=" Application/LD+JSON ">{"dateModified": "2022-05-06"}</script>',
            "2022-05-06",
        ),
        # A media type parameter, as the rich-data readers accept it.
        (
            '<script type="application/ld+json; charset=utf-8">'
            '{"dateModified": "2022-05-06"}</script>',
            "2022-05-06",
        ),
        # Only a publication date: the last change the page states.
        ('<meta property="article:published_time" content="2024-03-04">', "2024-03-04"),
        (_ld('{"datePublished": "2022-05-06"}'), "2022-05-06"),
        # ... but a modification date, wherever declared, comes first.
        (
            '<meta property="article:published_time" content="2024-03-04">'
            + _ld('{"@type": "Article", "dateModified": "2022-05-06"}'),
            "2022-05-06",
        ),
    ],
)
def test_lastmod_from_page(head: str, expected: str) -> None:
    assert lastmod_from_page(_root(head)) == expected


@pytest.mark.parametrize(
    "head",
    [
        "",
        '<meta name="description" content="2024-03-04">',
        '<meta property="article:modified_time">',
        '<meta property="article:modified_time" content="">',
        _ld('{"dateModified": "2022-05-06T07:08:09"}'),  # no zone: ambiguous
        _ld('{"dateModified": 1651820889}'),
        _ld('{"dateModified": ["2022-05-06"]}'),
        _ld('{"author": {"@type": "Person", "dateModified": "2022-05-06"}}'),  # not the page's
        _ld('"2022-05-06"'),
        _ld("null"),
        _ld("{broken"),
        _ld("[" * 100_000 + "]" * 100_000),  # deeper than json's recursion limit
        '<script type="text/javascript">{"dateModified": "2022-05-06"}</script>',
    ],
)
def test_lastmod_from_page_none(head: str) -> None:
    assert lastmod_from_page(_root(head)) is None


def test_lastmod_from_page_json_ld_in_body() -> None:
    root = _root("", _ld('{"@type": "Article", "dateModified": "2022-05-06"}'))
    assert lastmod_from_page(root) == "2022-05-06"


@pytest.mark.parametrize("body", [b"", b"\x00\x01", b"not html at all"])
def test_lastmod_from_page_degenerate_documents(body: bytes) -> None:
    response = HtmlResponse(url="https://example.com/", body=body, encoding="utf-8")
    assert lastmod_from_page(response.selector.root) is None


def test_lastmod_from_page_not_an_element() -> None:
    assert lastmod_from_page(None) is None
    assert lastmod_from_page("<html></html>") is None


def next_night(tmp_path: Path, night1: Any) -> tuple[Any, Any]:
    """The lastmod pipeline of a night on 2024-03-01 after *night1* (a ledger record)."""
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from crawler.ledger.ledger import Ledger
    from crawler.ledger.previous import PreviousRun
    from pipelines.lastmod import LastmodPipeline

    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record(night1)
    ledger.close()
    previous = PreviousRun.open(tmp_path / "ledger.sqlite")
    assert previous is not None
    stats = MemoryStatsCollector(get_crawler())
    return LastmodPipeline(stats, True, previous, datetime(2024, 3, 1, tzinfo=UTC)), previous


def test_a_moving_last_modified_keeps_the_last_real_change(tmp_path: Path) -> None:
    # Night 1 published the server's Last-Modified; on night 2 the server stamps a new
    # Last-Modified on the same content: ignored as volatile, and the page keeps
    # night 1's lastmod instead of losing it.
    from crawler.core.items import UrlRecord
    from crawler.core.urls import url_key

    url = "http://h.test/a"
    night1 = UrlRecord(
        url=url, decision="listed", key=url_key(url), loc=url, status=200,
        last_modified="Mon, 01 Jan 2024 08:00:00 GMT", lastmod="2024-01-01T08:00:00+00:00",
        lastmod_source="header", content_hash="c1", main_hash="m1", etag='"e"',
    )  # fmt: skip
    pipeline, previous = next_night(tmp_path, night1)
    night2 = UrlRecord(
        url=url, decision="listed", key=url_key(url), status=200,
        last_modified="Fri, 01 Mar 2024 07:00:00 GMT", date="Fri, 01 Mar 2024 09:00:00 GMT",
        content_hash="c1", main_hash="m1",
    )  # fmt: skip
    pipeline.process_item(night2)
    assert night2.lastmod == "2024-01-01T08:00:00+00:00"
    assert "ignored volatile Last-Modified (changed while the content did not)" in night2.warnings
    previous.close()


# -- a site of lying dates and soft 404s, crawled ----------------------------------------

# Every page carries the site's WebSite node with a date of its own: never the page's.
WEBSITE = _ld(
    '{"@context": "https://schema.org", "@type": "WebSite", "url": "/",'
    ' "dateModified": "2019-01-01T00:00:00+00:00"}'
)
NAV = '<nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/about">About</a></nav>'
FOOT = "<footer>Example shop, 1 Main Street. All rights reserved.</footer>"
LONG = (
    "This page has a real description with many words about its subject, which it"
    " explains at length for a reader. "
) * 4


def _meta(prop: str, value: str) -> str:
    return f'<meta property="{prop}" content="{value}">'


def _graph(path: str, nodes: str) -> str:
    return _ld(f'{{"@context": "https://schema.org", "@graph": [{nodes}]}}').replace("PAGE", path)


#: path -> (head, body, the lastmod published on a first run, lastmod_from)
DATED: dict[str, tuple[str, str, str | None, str | None]] = {
    # A theme stamping the time of each request: volatile (Z and offset notations).
    "/stamped": (_meta("article:modified_time", "%NOW%"), "<p>stamped</p>", None, None),
    "/stamped-og": (
        _meta("og:updated_time", "%NOW%").replace("Z", "+00:00"),
        "<p>stamped og</p>",
        None,
        None,
    ),
    "/future": (_meta("article:modified_time", "2100-01-01"), "<p>future</p>", None, None),
    "/epoch": (
        _meta("article:modified_time", "1970-01-01T00:00:00Z"),
        "<p>epoch</p>",
        None,
        None,
    ),
    # The page's own node of a graph: named by @id (the page + #webpage) ...
    "/graph": (
        _graph(
            "/graph",
            '{"@type": "Person", "@id": "http://HOST/#/schema/person/1",'
            ' "dateModified": "2025-09-09T00:00:00+00:00"},'
            '{"@type": "WebPage", "@id": "http://HOST/graph#webpage",'
            ' "dateModified": "2022-02-02T10:00:00+02:00"}',
        ),
        "<p>graph</p>",
        "2022-02-02T08:00:00+00:00",
        "JSON-LD WebPage dateModified",
    ),
    # ... or, in a graph without @id, the main entity.
    "/graph-no-id": (
        _graph(
            "/graph-no-id",
            '{"@type": "Person", "dateModified": "2025-09-09T00:00:00Z"},'
            '{"@type": "BlogPosting", "dateModified": "2022-03-03T00:00:00Z"}',
        ),
        "<p>graph without id</p>",
        "2022-03-03T00:00:00+00:00",
        "JSON-LD BlogPosting dateModified",
    ),
    "/microdata": (
        "",
        '<article itemscope itemtype="https://schema.org/Article"><h1>M</h1>'
        '<meta itemprop="dateModified" content="2024-03-05T10:00:00+00:00">'
        '<div itemprop="author" itemscope itemtype="https://schema.org/Person">'
        '<meta itemprop="dateModified" content="2025-01-01T00:00:00+00:00"></div></article>',
        "2024-03-05T10:00:00+00:00",
        "microdata Article dateModified",
    ),
    # Only a publication date: the last change the page states.
    "/published": (
        _meta("article:published_time", "2023-04-05T06:07:08+02:00"),
        "<p>published</p>",
        "2023-04-05T04:07:08+00:00",
        "meta article:published_time",
    ),
    "/og-offset": (
        _meta("og:updated_time", "2021-06-07T08:09:10-05:00"),
        "<p>og</p>",
        "2021-06-07T13:09:10+00:00",
        "meta og:updated_time",
    ),
}
# A theme's date that six pages declare alike (a template date), each page with its
# own JSON-LD date besides.
for n in range(1, 7):
    DATED[f"/t{n}"] = (
        _meta("og:updated_time", "2018-08-08T08:08:08Z")
        + _ld(f'{{"@type": "WebPage", "dateModified": "2020-01-0{n}"}}'),
        f"<p>templated {n}</p>",
        f"2020-01-0{n}",
        "JSON-LD WebPage dateModified",
    )

#: path -> (head, body, the reason of a soft 404, or None: listed)
SOFT: dict[str, tuple[str, str, str | None]] = {
    "/product/42": (
        "",
        f"{NAV}<h1>Product not found</h1><p>Sorry, the product you are looking for does "
        f"not exist or is no longer available.</p>{FOOT}",
        "soft 404: title says 'Product not found'; 17 words",
    ),
    "/de/produkt": (
        "",
        f"{NAV}<main><h1>Seite nicht gefunden</h1><p>Leider gibt es diese Seite nicht."
        f"</p></main>{FOOT}",
        "soft 404: heading says 'Seite nicht gefunden'; 8 words",
    ),
    "/fr/article": (
        "",
        f"{NAV}<main><p>Désolé, cette page est introuvable.</p></main>{FOOT}",
        "soft 404: text says 'Désolé, cette page est introuvable.'; 5 words",
    ),
    "/es/producto": (
        "",
        f"{NAV}<main><h2>Error 404</h2><p>Página no encontrada.</p></main>",
        "soft 404: heading says 'Error 404'; 4 words",
    ),
    "/ja/item": ("", "<main><h1>ページが見つかりません</h1></main>", None),
    # No false alarm: a documentation page about HTTP 404, an error-code reference,
    # a product called "Not Found" with a real description.
    "/docs/http-404": (
        "",
        f"{NAV}<main><h1>HTTP 404 Not Found</h1><p>{LONG}</p></main>{FOOT}",
        None,
    ),
    "/docs/errorkind": (
        "",
        "<main><h1>Enum std::io::ErrorKind::NotFound</h1>"
        "<p>An entity was not found, often a file.</p></main>",
        None,
    ),
    "/product/not-found": (
        "",
        f"{NAV}<main><h1>Not Found</h1><p>{LONG}</p></main>{FOOT}",
        None,
    ),
}
# The Japanese page's reason (its title is its path, as every test page's).
SOFT["/ja/item"] = (
    SOFT["/ja/item"][0],
    SOFT["/ja/item"][1],
    "soft 404: heading says 'ページが見つかりません'; 1 words",
)


def _lying_site(site: Any) -> None:
    host = site.url("/").split("//")[1].rstrip("/")
    for path, (head, text, _, _) in DATED.items():
        site.page(path, text, head=(head + WEBSITE).replace("HOST", host))
    for path, (head, text, _) in SOFT.items():
        site.page(path, text, head=head)
    # Titles: each test page's is its path; the product's says so.
    site.pages["/product/42"]["body"] = site.pages["/product/42"]["body"].replace(
        "<title>/product/42</title>", "<title>Product not found</title>"
    )
    # A page answered 200 with the words of the site's own "not found" page (which
    # the server answers 404 with): the soft-404 probe's print matches it.
    site.page("/gone", "not found")
    site.home(*DATED, *SOFT, "/gone")


def _check_lying_site(
    rows: dict[str, dict[str, Any]], published: dict[str, str | None], url: Any
) -> None:
    for path, (_, _, lastmod, source) in DATED.items():
        assert published[url(path)] == lastmod, path
        assert rows[url(path)]["lastmod_from"] == source, path
    for path, (_, _, reason) in SOFT.items():
        row = rows[url(path)]
        if reason is None:
            assert row["decision"] == "listed", (path, row["reason"])
        else:
            assert (row["decision"], row["reason"]) == ("soft-404", reason), path
    # The page with the words of the site's own 404 page: the probe's print, shared
    # by every process of a distributed crawl.
    assert set(published) == {url("/")} | {url(p) for p in DATED} | {
        url(p) for p, (_, _, reason) in SOFT.items() if reason is None
    }
    assert rows[url("/gone")]["decision"] == "soft-404"
    # What was ignored, and why.
    verdicts = {url: json.loads(row["page_dates"] or "[]") for url, row in rows.items()}
    assert [
        "meta article:modified_time",
        "2100-01-01",
        "in the future (after the response's Date)",
    ] in verdicts[url("/future")]
    assert verdicts[url("/epoch")][0][2] == "before 1995: a placeholder, not evidence"
    assert verdicts[url("/stamped")][0][2].startswith("volatile: within 5 seconds")
    assert verdicts[url("/stamped-og")][0][2].startswith("volatile: within 5 seconds")
    assert [
        "JSON-LD Person dateModified",
        "2025-09-09T00:00:00+00:00",
        "not this page's node (Person)",
    ] in verdicts[url("/graph")]
    assert [
        "JSON-LD WebSite dateModified",
        "2019-01-01T00:00:00+00:00",
        "not this page's node (WebSite)",
    ] in verdicts[url("/graph-no-id")]
    for n in range(1, 7):
        assert verdicts[url(f"/t{n}")][0] == [
            "meta og:updated_time",
            "2018-08-08T08:08:08+00:00",
            "a template date: many pages of the site declare it alike",
        ]


@pytest_twisted.ensureDeferred
async def test_a_site_of_lying_dates_and_soft_404s(
    nightly: NightlySite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_nightly import night
    from tests.test_nightly import published as published_of

    _lying_site(nightly)
    first = await night(nightly, tmp_path)
    assert first.outcome == "published", first.stats.get("sitemap/message")
    rows = first.ledger_rows()
    _check_lying_site(rows, published_of(first.out), nightly.url)
    assert first.stats["sitemap/lastmod/template_dates"] == {"2018-08-08T08:08:08+00:00": 6}
    assert first.stats["sitemap/excluded/soft-404"] == 6
    assert first.stats["sitemap/soft404/detected"] is False  # the probe was answered 404
    # The second night: the stamped page stamps again (still nothing believed), a page
    # that had a real date starts stamping "now" on the same content (it keeps its
    # date), and the future date is still refused.
    nightly.pages["/og-offset"]["body"] = nightly.pages["/og-offset"]["body"].replace(
        "2021-06-07T08:09:10-05:00", "%NOW%"
    )
    second = await night(nightly, tmp_path)
    entries = published_of(second.out)
    assert entries[nightly.url("/stamped")] is None
    assert entries[nightly.url("/future")] is None
    assert entries[nightly.url("/og-offset")] == "2021-06-07T13:09:10+00:00"
    assert entries[nightly.url("/graph")] == "2022-02-02T08:00:00+00:00"
    # explain tells which declaration gave the date, and what was ignored and why.
    from crawler.cli import main

    capsys.readouterr()
    assert main(["explain", nightly.url("/graph"), "--state", str(second.state), "--json"]) == 0
    told = json.loads(capsys.readouterr().out)["lastmod"]
    assert told["value"] == "2022-02-02T08:00:00+00:00"
    assert told["from"] == "the page's JSON-LD WebPage dateModified"
    assert {"where": "JSON-LD Person dateModified", "value": "2025-09-09T00:00:00+00:00",
            "verdict": "not this page's node (Person)"} in told["declared"]  # fmt: skip
    assert main(["explain", nightly.url("/t1"), "--state", str(second.state)]) == 0
    text = capsys.readouterr().out
    assert (
        "declared: meta og:updated_time 2018-08-08T08:08:08+00:00: a template date: many"
        " pages of the site declare it alike"
    ) in text
    assert "declared: JSON-LD WebPage dateModified 2020-01-01: used" in text
    main(["explain", nightly.url("/product/42"), "--state", str(second.state)])
    assert "soft 404: title says 'Product not found'; 17 words" in capsys.readouterr().out
    # Off: the page's words are not read.
    off = await night(nightly, tmp_path / "off", SITEMAP_SOFT404_CONTENT=False)
    assert nightly.url("/product/42") in published_of(off.out)


def test_a_site_of_lying_dates_with_two_processes(nightly: NightlySite, tmp_path: Path) -> None:
    """The same decisions where pages are judged in two processes and one writes."""
    from crawler.ledger.ledger import Ledger
    from tests.test_nightly import published as published_of
    from tests.test_redis import cli, finish

    _lying_site(nightly)
    nightly.save()
    out, state = tmp_path / "public", tmp_path / "state"
    crawl = cli(
        "crawl", nightly.url("/"), "--out", str(out), "--state", str(state),
        "--processes", "2", "--delay", "0.05",
    )  # fmt: skip
    err = finish(crawl, timeout=120)
    assert crawl.returncode == 0, err
    assert "2018-08-08T08:08:08+00:00" in err  # the summary says so, once
    ledger = Ledger(state / "ledger.sqlite")
    try:
        rows = {row["url"]: row for row in ledger.rows()}
    finally:
        ledger.close()
    _check_lying_site(rows, published_of(out), nightly.url)


# -- the page's own node -------------------------------------------------------------------


def _page(url: str, head: str, body: str = "<p>x</p>") -> object:
    html = f"<html><head><title>t</title>{head}</head><body>{body}</body></html>"
    return HtmlResponse(url=url, body=html.encode(), encoding="utf-8").selector.root


POST = "https://example.com/2024/05/post/"
YOAST = _ld(
    '{"@context": "https://schema.org", "@graph": ['
    '{"@type": "Article", "@id": "https://example.com/2024/05/post/#article",'
    ' "mainEntityOfPage": {"@id": "https://example.com/2024/05/post/"},'
    ' "datePublished": "2024-05-01T08:00:00+00:00", "dateModified": "2024-05-03T09:00:00+00:00"},'
    '{"@type": "WebPage", "@id": "https://example.com/2024/05/post/",'
    ' "url": "https://example.com/2024/05/post/", "dateModified": "2024-05-03T09:00:00+00:00"},'
    '{"@type": "ImageObject", "@id": "https://example.com/2024/05/post/#primaryimage",'
    ' "dateModified": "2025-01-01T00:00:00+00:00"},'
    '{"@type": "WebSite", "@id": "https://example.com/#website", "url": "https://example.com/",'
    ' "dateModified": "2025-02-02T00:00:00+00:00"},'
    '{"@type": "Person", "@id": "https://example.com/#/schema/person/1",'
    ' "dateModified": "2025-03-03T00:00:00+00:00"}]}'
)


@pytest.mark.parametrize(
    ("url", "head", "body", "canonicals", "expected"),
    [
        # A WordPress post's graph: the Article and WebPage name it.
        (POST, YOAST, "", (), "2024-05-03T09:00:00+00:00"),
        # Its comment pages name the post: still its date.
        (POST + "comment-page-2/", YOAST, "", (), "2024-05-03T09:00:00+00:00"),
        ("https://example.com/2024/05/post/?cpage=2", YOAST, "", (), "2024-05-03T09:00:00+00:00"),
        # http and https, www. and a trailing slash aside.
        ("http://www.example.com/2024/05/post", YOAST, "", (), "2024-05-03T09:00:00+00:00"),
        # Another page that carries the post's graph, without naming itself: not its date,
        # unless its canonical is the post.
        ("https://example.com/other/", YOAST, "", (), None),
        ("https://example.com/other/", YOAST, "", (POST,), "2024-05-03T09:00:00+00:00"),
        # The home page: the WebSite and Person nodes name it, and are never its own.
        ("https://example.com/", YOAST, "", (), None),
        # An archive listing posts: each node names another page.
        (
            "https://example.com/blog/",
            _ld(
                '[{"@type": "BlogPosting", "url": "/a/", "dateModified": "2024-01-01"},'
                ' {"@type": "BlogPosting", "url": "/b/", "dateModified": "2024-01-02"}]'
            ),
            "",
            (),
            None,
        ),
        # Microdata: the main item's date, not its author's; a listing's items are
        # not the page; an item of another type than a page's main entity is not.
        (
            "https://example.com/m",
            "",
            '<div itemscope itemtype="http://schema.org/BlogPosting">'
            '<time itemprop="dateModified" datetime="2024-03-05">5 March</time></div>',
            (),
            "2024-03-05",
        ),
        (
            "https://example.com/blog/",
            "",
            '<div itemscope itemtype="http://schema.org/BlogPosting">'
            '<meta itemprop="dateModified" content="2024-03-05"></div>'
            '<div itemscope itemtype="http://schema.org/BlogPosting">'
            '<meta itemprop="dateModified" content="2024-03-06"></div>',
            (),
            None,
        ),
        (
            "https://example.com/m",
            "",
            '<div itemscope itemtype="http://schema.org/Organization">'
            '<meta itemprop="dateModified" content="2024-03-05"></div>',
            (),
            None,
        ),
        # Only a publication date, in microdata.
        (
            "https://example.com/m",
            "",
            '<article itemscope itemtype="https://schema.org/NewsArticle">'
            '<meta itemprop="datePublished" content="2024-03-01T10:00:00Z"></article>',
            (),
            "2024-03-01T10:00:00+00:00",
        ),
    ],
)
def test_the_pages_own_node(
    url: str, head: str, body: str, canonicals: tuple[str, ...], expected: str | None
) -> None:
    assert lastmod_from_page(_page(url, head, body), url, canonicals) == expected


def test_a_page_date_that_moves_on_unchanged_content_keeps_the_last_real_change(
    tmp_path: Path,
) -> None:
    """A date-only stamp of "today" is no volatile date-time, but it moves every night
    while the content does not: the page keeps the date it had."""

    from crawler.core.items import UrlRecord
    from crawler.core.lastmod import Declared
    from crawler.core.urls import url_key

    url = "http://h.test/a"
    night1 = UrlRecord(
        url=url, decision="listed", key=url_key(url), loc=url, status=200,
        lastmod="2024-01-01", lastmod_source="page", lastmod_from="meta article:modified_time",
        content_hash="c1", main_hash="m1",
    )  # fmt: skip
    pipeline, previous = next_night(tmp_path, night1)
    stamped = Declared("meta article:modified_time", "2024-03-01", "2024-03-01")

    def stamped_night(content: str) -> UrlRecord:
        """The page on 1 March, with content "c<content>" and the date stamped on it."""
        record = UrlRecord(
            url=url, decision="listed", key=url_key(url), status=200,
            date="Fri, 01 Mar 2024 09:00:00 GMT", content_hash=f"c{content}",
            main_hash=f"m{content}", page_dates=[stamped],
        )  # fmt: skip
        pipeline.process_item(record)
        return record

    night2 = stamped_night("1")
    assert (night2.lastmod, night2.lastmod_source) == ("2024-01-01", "content")
    assert json.loads(night2.page_verdicts or "") == [
        [
            "meta article:modified_time",
            "2024-03-01",
            "volatile: changed since the last run while the content did not",
        ]
    ]
    # Changed content: the page's new date is believed.
    night3 = stamped_night("2")
    assert (night3.lastmod, night3.lastmod_source) == ("2024-03-01", "page")
    previous.close()
