"""Tests for crawler.publish.feed: the delta feed, ``changes.atom`` (Atom 1.0, RFC 4287).

Every feed rendered here is checked against RFC 4287's own schema (Appendix B):
``tests/atom/atom.rng``, its RELAX NG grammar in the XML syntax lxml reads, and the
three Schematron rules the RFC embeds in it (a feed needs an author unless each
entry has one, an entry one unless its feed has one; an entry needs an alternate link
or content), which lxml's ISO Schematron extracts from the same file; plus RFC 3339
(section 3.3) for every date, which ``xsd:dateTime`` alone does not hold to a time
zone. tests/atom/README.md says how the schema was made and checked.

Feeds are also read back by two independent readers: ultimate-sitemap-parser (usp),
over HTTP from a real server on 127.0.0.1, as a search engine reads a feed submitted
as a sitemap, and feedparser, which reports anything it had to work around as a
"bozo" error.
"""

from __future__ import annotations

import os
import re
from dataclasses import FrozenInstanceError
from datetime import datetime
from functools import cache
from pathlib import Path

import feedparser  # type: ignore[import-untyped]  # no hints, no stubs
import pytest
from lxml import etree, isoschematron  # type: ignore[attr-defined]  # not in lxml-stubs
from usp.objects.sitemap import InvalidSitemap

import crawler.publish.feed
from crawler.core.lastmod import lastmod_datetime
from crawler.publish.feed import (
    ATOM_NS,
    FEED_NAME,
    FeedEntry,
    publish_feed,
    render_feed,
    write_feed,
)
from crawler.sitemaps.limits import MAX_URLS_PER_FILE
from tests.conftest import usp_tree

SCHEMA = Path(__file__).resolve().parent / "atom" / "atom.rng"
NS = {"a": ATOM_NS}
BASE = "https://example.com/"
FEED = {
    "feed_id": BASE + FEED_NAME,
    "title": "Recent changes on example.com",
    "self_url": BASE + FEED_NAME,
    "site_url": BASE,
    "empty_updated": "2026-01-01T00:00:00+00:00",
}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)
# RFC 3339, 5.6, date-time, as RFC 4287, 3.3 narrows it: upper-case "T" and "Z".
_RFC3339 = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)


# -- validating a feed --------------------------------------------------------------------


@cache
def _relaxng() -> etree.RelaxNG:
    return etree.RelaxNG(etree.parse(str(SCHEMA), etree.XMLParser(no_network=True)))


@cache
def _schematron() -> isoschematron.Schematron:
    # The Schematron rules embedded in the grammar, extracted by lxml.
    return isoschematron.Schematron(
        etree.parse(str(SCHEMA), etree.XMLParser(no_network=True)), store_report=True
    )


def atom_errors(data: bytes) -> list[str]:
    """What RFC 4287's schema finds wrong with ``data``: RELAX NG errors,
    failed Schematron assertions and dates that are not RFC 3339 date-times."""
    root = etree.fromstring(data, _PARSER)
    errors: list[str] = []
    relaxng = _relaxng()
    if not relaxng.validate(root):
        errors.extend(f"relaxng: {error.message}" for error in relaxng.error_log)
    schematron = _schematron()
    if not schematron.validate(root):
        report = schematron.validation_report
        failed = report.xpath(
            "//svrl:failed-assert/svrl:text/text()",
            namespaces={"svrl": "http://purl.oclc.org/dsdl/svrl"},
        )
        assert isinstance(failed, list)
        errors.extend(f"schematron: {' '.join(str(text).split())}" for text in failed)
    for date in root.iter(f"{{{ATOM_NS}}}updated", f"{{{ATOM_NS}}}published"):
        if _RFC3339.fullmatch(date.text or "") is None:
            errors.append(f"RFC 3339: {date.text!r}")
    return errors


def assert_valid_atom(data: bytes) -> etree._Element:
    assert isinstance(data, bytes)
    assert data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    data.decode("utf-8")  # UTF-8 throughout
    assert atom_errors(data) == []
    return etree.fromstring(data, _PARSER)


def text_of(element: etree._Element, path: str) -> str:
    """The text of the one element at ``path`` (Atom prefix ``a:``); "" when empty."""
    found = element.findall(path, NS)
    assert len(found) == 1, (path, found)
    return found[0].text or ""


def entries_of(root: etree._Element) -> list[tuple[str, str, str | None, str]]:
    """(id, title, link href, updated) of each entry, in document order."""
    return [
        (
            text_of(entry, "a:id"),
            text_of(entry, "a:title"),
            entry.findall("a:link", NS)[0].get("href"),
            text_of(entry, "a:updated"),
        )
        for entry in root.iterfind("a:entry", NS)
    ]


def page(i: int, updated: str = "2026-11-20T08:00:00+00:00", title: str | None = None) -> FeedEntry:
    return FeedEntry(f"{BASE}page/{i}", updated, title)


# -- the schema itself ----------------------------------------------------------------------

# RFC 4287, 1.1: "A brief, single-entry Atom Feed Document" and "A more extensive,
# single-entry Atom Feed Document", as the RFC gives them.
RFC_BRIEF = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">

  <title>Example Feed</title>
  <link href="http://example.org/"/>
  <updated>2003-12-13T18:30:02Z</updated>
  <author>
    <name>John Doe</name>
  </author>
  <id>urn:uuid:60a76c80-d399-11d9-b93C-0003939e0af6</id>

  <entry>
    <title>Atom-Powered Robots Run Amok</title>
    <link href="http://example.org/2003/12/13/atom03"/>
    <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <updated>2003-12-13T18:30:02Z</updated>
    <summary>Some text.</summary>
  </entry>

</feed>
"""
RFC_EXTENSIVE = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title type="text">dive into mark</title>
  <subtitle type="html">
    A &lt;em&gt;lot&lt;/em&gt; of effort
    went into making this effortless
  </subtitle>
  <updated>2005-07-31T12:29:29Z</updated>
  <id>tag:example.org,2003:3</id>
  <link rel="alternate" type="text/html"
   hreflang="en" href="http://example.org/"/>
  <link rel="self" type="application/atom+xml"
   href="http://example.org/feed.atom"/>
  <rights>Copyright (c) 2003, Mark Pilgrim</rights>
  <generator uri="http://www.example.com/" version="1.0">
    Example Toolkit
  </generator>
  <entry>
    <title>Atom draft-07 snapshot</title>
    <link rel="alternate" type="text/html"
     href="http://example.org/2005/04/02/atom"/>
    <link rel="enclosure" type="audio/mpeg" length="1337"
     href="http://example.org/audio/ph34r_my_podcast.mp3"/>
    <id>tag:example.org,2003:3.2397</id>
    <updated>2005-07-31T12:29:29Z</updated>
    <published>2003-12-13T08:29:29-04:00</published>
    <author>
      <name>Mark Pilgrim</name>
      <uri>http://example.org/</uri>
      <email>f8dy@example.com</email>
    </author>
    <contributor>
      <name>Sam Ruby</name>
    </contributor>
    <contributor>
      <name>Joe Gregorio</name>
    </contributor>
    <content type="xhtml" xml:lang="en"
     xml:base="http://diveintomark.org/">
      <div xmlns="http://www.w3.org/1999/xhtml">
        <p><i>[Update: The Atom draft is finished.]</i></p>
      </div>
    </content>
  </entry>
</feed>
"""


@pytest.mark.parametrize("example", [RFC_BRIEF, RFC_EXTENSIVE], ids=["brief", "extensive"])
def test_the_schema_takes_the_rfcs_own_examples(example: bytes) -> None:
    assert atom_errors(example) == []


def _small_feed() -> bytes:
    return render_feed([page(1, title="One"), page(2, "2026-11-19", "Two")], **FEED)


@pytest.mark.parametrize(
    ("old", "new", "found"),
    [
        # RFC 4287, 4.1.1: no author on the feed, and entries without one.
        (
            "<author><name>example.com</name><uri>https://example.com/</uri></author>\n",
            "",
            "schematron: An atom:feed must have an atom:author unless all",
        ),
        (
            "<author><name>example.com</name><uri>https://example.com/</uri></author>\n",
            "",
            "schematron: An atom:entry must have an atom:author if its feed does not.",
        ),
        # 4.1.2: an entry whose only link is not an alternate one.
        (
            '<link href="https://example.com/page/1"/>',
            '<link rel="self" href="https://example.com/page/1"/>',
            "schematron: An atom:entry must have at least one atom:link",
        ),
        # 4.1.1: exactly one atom:id, one atom:title.
        ("<id>https://example.com/changes.atom</id>\n", "", "relaxng:"),
        ("<generator>", "<title>Again</title><generator>", "relaxng:"),
        # Appendix B: the feed's metadata before its entries.
        ("</feed>", "<generator>late</generator></feed>", "relaxng:"),
        # 3.3: a date-time, with a zone; upper-case T.
        ("2026-11-19T00:00:00Z", "2026-11-19", "relaxng:"),
        ("2026-11-19T00:00:00Z", "2026-11-19T00:00:00", "RFC 3339:"),
        ("2026-11-19T00:00:00Z", "2026-11-19t00:00:00Z", "relaxng:"),
        # 3.1.1: a Text construct's type; 4.2.7: a link's href.
        ("<title>One</title>", '<title type="plain">One</title>', "relaxng:"),
        ('<link href="https://example.com/"/>', '<link rel="alternate"/>', "relaxng:"),
        # 6.2: an unknown element in the Atom namespace is no extension.
        ("<generator>", "<extra>x</extra><generator>", "relaxng:"),
    ],
)
def test_the_schema_finds_what_breaks_rfc_4287(old: str, new: str, found: str) -> None:
    # The checks the feeds below pass are not vacuous: each rule, broken once.
    data = _small_feed()
    broken = data.replace(old.encode(), new.encode(), 1)
    assert broken != data
    errors = atom_errors(broken)
    assert any(error.startswith(found) for error in errors), errors


# -- the bytes ------------------------------------------------------------------------------

GOLDEN = """\
<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<id>https://example.com/changes.atom</id>
<title>Recent changes on example.com</title>
<updated>2026-11-20T08:00:00+00:00</updated>
<link rel="self" href="https://example.com/changes.atom"/>
<link href="https://example.com/"/>
<author><name>example.com</name><uri>https://example.com/</uri></author>
<generator>sitemap-crawler</generator>
<entry><id>https://example.com/page/1</id><title>One</title>\
<link href="https://example.com/page/1"/><updated>2026-11-20T08:00:00+00:00</updated></entry>
<entry><id>https://example.com/page/2</id><title>Two</title>\
<link href="https://example.com/page/2"/><updated>2026-11-19T00:00:00Z</updated></entry>
</feed>
"""


def test_a_small_feed_is_exactly_these_bytes() -> None:
    data = _small_feed()
    assert data == GOLDEN.encode("utf-8")
    assert_valid_atom(data)


def test_the_same_entries_give_the_same_bytes() -> None:
    entries = [
        page(i, f"2026-11-{20 - i % 10:02d}T0{i % 10}:00:00+00:00", f"P{i}") for i in range(50)
    ]
    again = [FeedEntry(e.url, e.updated, e.title) for e in entries]
    first = render_feed(entries, **FEED)
    assert render_feed(again, **FEED) == first
    assert render_feed(tuple(entries), **FEED) == first
    assert_valid_atom(first)


def test_entries_keep_the_order_given_and_the_feed_is_as_new_as_the_newest() -> None:
    # Newest first, as the caller gives them; an older one out of place stays
    # where it is: the feed does not sort.
    entries = [
        page(3, "2026-11-20T09:00:00+00:00", "Third"),
        page(1, "2026-11-18", "First"),
        page(2, "2026-11-19T23:59:59+00:00", "Second"),
    ]
    root = assert_valid_atom(render_feed(entries, **FEED))
    assert [entry[0] for entry in entries_of(root)] == [e.url for e in entries]
    assert text_of(root, "a:updated") == "2026-11-20T09:00:00+00:00"
    # The feed's updated is the newest entry's wherever it stands in the list.
    root = assert_valid_atom(render_feed(entries[::-1], **FEED))
    assert [entry[0] for entry in entries_of(root)] == [e.url for e in entries[::-1]]
    assert text_of(root, "a:updated") == "2026-11-20T09:00:00+00:00"


def test_the_newest_is_decided_by_instant_not_by_text() -> None:
    # 10:00+02:00 is 08:00 UTC: earlier than 09:00+00:00, though its text sorts later.
    # Times are written as given: +02:00 stays +02:00.
    entries = [page(1, "2026-11-20T10:00:00+02:00"), page(2, "2026-11-20T09:00:00+00:00")]
    root = assert_valid_atom(render_feed(entries, **FEED))
    assert text_of(root, "a:updated") == "2026-11-20T09:00:00+00:00"
    assert [entry[3] for entry in entries_of(root)] == [e.updated for e in entries]
    # A tie: the first of the equal instants, in the order given.
    tie = [page(1, "2026-11-20T10:00:00+02:00"), page(2, "2026-11-20T08:00:00+00:00")]
    root = assert_valid_atom(render_feed(tie, **FEED))
    assert text_of(root, "a:updated") == "2026-11-20T10:00:00+02:00"


def test_a_date_alone_becomes_midnight_utc() -> None:
    entries = [page(1, "2026-03-01"), page(2, "2026-02-28T23:30:00.25-05:00")]
    data = render_feed(entries, **FEED)
    root = assert_valid_atom(data)
    assert [entry[3] for entry in entries_of(root)] == [
        "2026-03-01T00:00:00Z",
        "2026-02-28T23:30:00.25-05:00",
    ]
    # 2026-02-28T23:30:00.25-05:00 is 2026-03-01T04:30:00.25Z: after midnight UTC.
    assert text_of(root, "a:updated") == "2026-02-28T23:30:00.25-05:00"
    assert b"2026-03-01<" not in data and b"2026-03-01T00:00:00Z" in data
    only = assert_valid_atom(render_feed([page(1, "2026-11-20")], **FEED))
    assert text_of(only, "a:updated") == "2026-11-20T00:00:00Z"


def test_every_title_and_url_is_escaped() -> None:
    nasty_url = BASE + "a?x=1&y=<2>&q=\"3\"&s='4'"
    nasty_title = "Tom & Jerry <b>bold</b> \"quoted\" 'single' ]]> &amp;\r\nline two"
    entries = [
        FeedEntry(nasty_url, "2026-11-20", nasty_title),
        FeedEntry(BASE + "b&c", "2026-11-19"),
    ]
    feed = {**FEED, "title": "News & <notes> \"x\" 'y'", "site_url": BASE + "?a=1&b='2'"}
    data = render_feed(entries, **feed)
    root = assert_valid_atom(data)
    assert text_of(root, "a:title") == feed["title"]
    assert root.xpath("a:link[not(@rel)]/@href", namespaces=NS) == [feed["site_url"]]
    assert text_of(root, "a:author/a:uri") == feed["site_url"]
    assert entries_of(root) == [
        (nasty_url, nasty_title, nasty_url, "2026-11-20T00:00:00Z"),
        (BASE + "b&c", BASE + "b&c", BASE + "b&c", "2026-11-19T00:00:00Z"),
    ]
    text = data.decode()
    assert "Tom &amp; Jerry &lt;b&gt;bold&lt;/b&gt; \"quoted\" 'single' ]]&gt; &amp;amp;" in text
    assert "&#13;\nline two" in text  # a CR survives the reading as a CR
    assert '<link href="https://example.com/a?x=1&amp;y=&lt;2&gt;&amp;q=&quot;3&quot;' in text
    assert '&amp;s=&apos;4&apos;"/>' in text
    assert "<id>https://example.com/a?x=1&amp;y=&lt;2&gt;&amp;q=\"3\"&amp;s='4'</id>" in text


def test_non_ascii_titles_and_iris_are_utf_8() -> None:
    entries = [FeedEntry("https://例え.jp/ページ?q=ü", "2026-11-20", "Grüße — 東京 🚀")]
    data = render_feed(entries, **{**FEED, "site_url": "https://例え.jp/"})
    root = assert_valid_atom(data)
    assert entries_of(root)[0][:3] == (
        "https://例え.jp/ページ?q=ü",
        "Grüße — 東京 🚀",
        "https://例え.jp/ページ?q=ü",
    )
    assert text_of(root, "a:author/a:name") == "例え.jp"
    assert "Grüße — 東京 🚀".encode() in data


def test_a_page_without_a_title_is_titled_with_its_url() -> None:
    entries = [page(1), page(2, title=""), page(3, title=" \t\n"), page(4, title="Four")]
    root = assert_valid_atom(render_feed(entries, **FEED))
    assert [entry[1] for entry in entries_of(root)] == [
        BASE + "page/1",
        BASE + "page/2",
        BASE + "page/3",
        "Four",
    ]


def test_what_xml_cannot_hold_is_left_out_of_a_title() -> None:
    # lxml hands a page's controls on ("<title>a&#1;b</title>" gives "a\x01b"); a
    # title is data from the page, and one bad character must not stop the feed.
    entries = [
        page(1, title="bell\x07 and \x00nul\x1b[0m"),
        page(2, title="\ufffe\uffff\ud800"),
        page(3, title="\x01 \x02"),
        page(4, title="tab\tand\nnewline kept"),
    ]
    data = render_feed(entries, **FEED)
    root = assert_valid_atom(data)
    assert [entry[1] for entry in entries_of(root)] == [
        "bell and nul[0m",
        BASE + "page/2",
        BASE + "page/3",
        "tab\tand\nnewline kept",
    ]


def test_the_author_is_the_site() -> None:
    # The site's host (without a userinfo, with a port) names it; no entry has an
    # author of its own, which the feed's makes valid (RFC 4287, 4.1.1).
    data = render_feed([page(1)], **{**FEED, "site_url": "http://user@example.com:8080/shop/"})
    root = assert_valid_atom(data)
    assert text_of(root, "a:author/a:name") == "example.com:8080"
    assert text_of(root, "a:author/a:uri") == "http://user@example.com:8080/shop/"
    assert root.xpath("count(a:entry/a:author)", namespaces=NS) == 0
    assert text_of(root, "a:generator") == "sitemap-crawler"
    assert root.xpath("count(//a:published | //a:summary | //a:content)", namespaces=NS) == 0


def test_a_short_home_page_may_name_the_feed_but_not_an_entry() -> None:
    # http://p.t/ is shorter than a <loc> may be (12), which binds the entries
    # (the feed is read as a sitemap) and not Atom's own URLs.
    short = "http://p.t/"
    data = render_feed([page(1)], **{**FEED, "site_url": short, "feed_id": short})
    root = assert_valid_atom(data)
    assert text_of(root, "a:id") == short
    assert text_of(root, "a:author/a:uri") == short
    with pytest.raises(ValueError, match="feed entry url is not a valid URL"):
        FeedEntry(short, "2026-11-20")
    with pytest.raises(ValueError, match="site_url is not a valid URL"):
        render_feed([page(1)], **{**FEED, "site_url": "p.t/"})


def test_an_empty_feed_is_valid_and_dated_by_the_caller() -> None:
    data = render_feed([], **FEED)
    root = assert_valid_atom(data)
    assert root.findall("a:entry", NS) == []
    assert text_of(root, "a:updated") == FEED["empty_updated"]
    assert render_feed([], **FEED) == data
    dated = assert_valid_atom(render_feed([], **{**FEED, "empty_updated": "2026-03-04"}))
    assert text_of(dated, "a:updated") == "2026-03-04T00:00:00Z"
    # With entries, empty_updated is not used.
    root = assert_valid_atom(
        render_feed([page(1, "2025-01-01")], **{**FEED, "empty_updated": "2030-01-01"})
    )
    assert text_of(root, "a:updated") == "2025-01-01T00:00:00Z"


def test_feeds_of_every_size_are_valid_atom() -> None:
    for count in (0, 1, 2, 17, 1000):
        entries = [
            FeedEntry(
                f"{BASE}p/{i}?a={i}&b=<{i}>",
                f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"
                if i % 3
                else f"2026-11-20T{i % 24:02d}:00:00Z",
                None if i % 4 == 0 else f'Page {i} & "friends" <{i}>',
            )
            for i in range(count)
        ]
        data = render_feed(entries, **FEED)
        root = assert_valid_atom(data)
        read = entries_of(root)
        assert len(read) == count
        assert [entry[0] for entry in read] == [e.url for e in entries]
        assert [entry[2] for entry in read] == [e.url for e in entries]
        if entries:
            newest = max(lastmod_datetime(e.updated) for e in entries)
            assert datetime.fromisoformat(text_of(root, "a:updated")) == newest


# -- what is refused ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: FeedEntry("/relative", "2026-11-20"), "feed entry url is not a valid URL"),
        (lambda: FeedEntry("ftp://example.com/a", "2026-11-20"), "feed entry url is not a valid"),
        (lambda: FeedEntry(BASE + "a b", "2026-11-20"), "feed entry url is not a valid URL"),
        (lambda: FeedEntry(BASE, "2026-11-20T08:00"), "feed entry updated is not a W3C"),
        (lambda: FeedEntry(BASE, "2026-11-20T08:00:00"), "feed entry updated is not a W3C"),
        (lambda: FeedEntry(BASE, "2026-02-30"), "feed entry updated is not a W3C"),
        (lambda: FeedEntry(BASE, "yesterday"), "feed entry updated is not a W3C"),
        (lambda: FeedEntry(BASE, None), "feed entry updated is not a W3C"),  # type: ignore[arg-type]
        (lambda: FeedEntry(BASE, "2026-11-20", 3), "title must be a str"),  # type: ignore[arg-type]
    ],
)
def test_bad_entries_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make()  # type: ignore[operator]


def test_entries_are_frozen_values() -> None:
    entry = page(1, title="One")
    assert entry == FeedEntry(BASE + "page/1", "2026-11-20T08:00:00+00:00", "One")
    assert FeedEntry(BASE, "2026-11-20").title is None
    with pytest.raises(FrozenInstanceError):
        entry.title = "Two"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"feed_id": "urn:x"}, "feed_id is not a valid URL"),
        ({"self_url": "changes.atom"}, "self_url is not a valid URL"),
        ({"site_url": "example.com"}, "site_url is not a valid URL"),
        ({"title": " "}, "feed title must not be empty"),
        ({"title": "a\x00b"}, "feed title contains characters XML cannot hold"),
        ({"empty_updated": "2026-11-20 08:00"}, "empty_updated is not a W3C datetime"),
    ],
)
def test_bad_feed_arguments_are_refused(change: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        render_feed([page(1)], **{**FEED, **change})


def test_a_url_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="URL listed twice"):
        render_feed([page(1), page(2), page(1, "2026-11-19")], **FEED)
    with pytest.raises(ValueError, match="must be FeedEntry objects"):
        render_feed([BASE], **FEED)  # type: ignore[list-item]


def test_a_feed_keeps_to_a_sitemaps_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [page(i) for i in range(MAX_URLS_PER_FILE + 1)]
    with pytest.raises(ValueError, match="at most 50000 entries, not 50001"):
        render_feed(entries, **FEED)
    # The full 50,000 are taken. (Schema-checked up to 1,000 above: lxml's
    # Schematron takes a minute over 50,000 entries.)
    root = etree.fromstring(render_feed(entries[:MAX_URLS_PER_FILE], **FEED), _PARSER)
    assert len(root.findall("a:entry", NS)) == MAX_URLS_PER_FILE
    monkeypatch.setattr(crawler.publish.feed, "MAX_BYTES_PER_FILE", len(_small_feed()) - 1)
    with pytest.raises(ValueError, match="bytes"):
        _small_feed()


# -- read back ------------------------------------------------------------------------------


def test_feedparser_reads_it_without_complaint() -> None:
    entries = [
        FeedEntry(BASE + "a?x=1&y=<2>", "2026-11-20T08:00:00+00:00", "Tom & Jerry <3> \"q\" 'a'"),
        FeedEntry(BASE + "b", "2026-11-19"),
        FeedEntry(BASE + "c", "2026-11-18T23:00:00-02:00", "Grüße"),
    ]
    data = render_feed(entries, **FEED)
    parsed = feedparser.parse(data)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert parsed.encoding.lower() == "utf-8"
    assert parsed.feed.id == FEED["feed_id"]
    assert parsed.feed.title == FEED["title"]
    assert parsed.feed.updated == "2026-11-20T08:00:00+00:00"
    assert parsed.feed.author_detail == {"name": "example.com", "href": BASE}
    assert parsed.feed.generator == "sitemap-crawler"
    assert [(link.get("rel"), link.href) for link in parsed.feed.links] == [
        ("self", FEED["self_url"]),
        ("alternate", BASE),
    ]
    assert [(e.id, e.link, e.title) for e in parsed.entries] == [
        (entry.url, entry.url, entry.title or entry.url) for entry in entries
    ]
    assert [e.updated for e in parsed.entries] == [
        "2026-11-20T08:00:00+00:00",
        "2026-11-19T00:00:00Z",
        "2026-11-18T23:00:00-02:00",
    ]
    assert [tuple(e.updated_parsed)[:6] for e in parsed.entries] == [
        (2026, 11, 20, 8, 0, 0),
        (2026, 11, 19, 0, 0, 0),
        (2026, 11, 19, 1, 0, 0),  # feedparser gives UTC
    ]
    empty = feedparser.parse(render_feed([], **FEED))
    assert not empty.bozo and empty.entries == []


def test_ultimate_sitemap_parser_reads_the_feed_as_a_sitemap(served: tuple[Path, str]) -> None:
    root, base = served
    entries = [
        FeedEntry(f"{base}page/{i}?a={i}&b=<{i}>", updated, title)
        for i, (updated, title) in enumerate(
            [
                ("2026-11-20T08:00:00+00:00", "Tom & Jerry \"<1>\" 'x'"),
                ("2026-11-19", None),
                ("2026-11-18T22:30:00-02:00", "Grüße"),
                ("2026-11-18T10:00:00.5+00:00", "   "),
            ]
        )
    ]
    feed = {**FEED, "feed_id": base + FEED_NAME, "self_url": base + FEED_NAME, "site_url": base}
    temp = write_feed(root / FEED_NAME, render_feed(entries, **feed))
    publish_feed(temp, root / FEED_NAME)

    tree = usp_tree(base + FEED_NAME)
    assert not isinstance(tree, InvalidSitemap), tree
    assert type(tree).__name__ == "PagesAtomSitemap"
    pages = list(tree.all_pages())
    assert [p.url for p in pages] == [e.url for e in entries]
    # usp keeps an Atom entry's title and date as a "news story".
    assert [p.news_story.title for p in pages] == [  # type: ignore[union-attr]
        "Tom & Jerry \"<1>\" 'x'",
        entries[1].url,
        "Grüße",
        entries[3].url,
    ]
    assert [p.news_story.publish_date for p in pages] == [  # type: ignore[union-attr]
        lastmod_datetime(e.updated) for e in entries
    ]

    # An empty feed is a valid, empty sitemap, not an error.
    temp = write_feed(root / FEED_NAME, render_feed([], **feed))
    publish_feed(temp, root / FEED_NAME)
    tree = usp_tree(base + FEED_NAME)
    assert not isinstance(tree, InvalidSitemap), tree
    assert list(tree.all_pages()) == []


# -- publishing ------------------------------------------------------------------------------


def test_write_makes_a_synced_temporary_file_beside_the_feed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    data = _small_feed()
    final = tmp_path / FEED_NAME
    temp = write_feed(final, data)
    assert temp == tmp_path / f".changes.atom.{os.getpid()}.tmp"
    assert temp.read_bytes() == data
    assert not final.exists()  # nothing published yet
    assert synced  # the file was fsynced before write_feed returned
    # Readable by the web server as the umask allows, not mkstemp()'s 0600.
    umask = os.umask(0)
    os.umask(umask)
    assert temp.stat().st_mode & 0o777 == 0o666 & ~umask


def test_publish_renames_the_temporary_file_into_place(tmp_path: Path) -> None:
    final = tmp_path / FEED_NAME
    final.write_bytes(b"the previous feed")
    data = _small_feed()
    temp = write_feed(final, data)
    assert final.read_bytes() == b"the previous feed"  # untouched until the rename
    inode = temp.stat().st_ino
    publish_feed(temp, final)
    assert final.read_bytes() == data
    assert final.stat().st_ino == inode  # renamed, not copied
    assert sorted(p.name for p in tmp_path.iterdir()) == [FEED_NAME]
    # Republishing the same feed gives the same bytes.
    publish_feed(write_feed(final, _small_feed()), final)
    assert final.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == [FEED_NAME]


def test_a_failed_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="No space left"):
        write_feed(tmp_path / FEED_NAME, _small_feed())
    assert list(tmp_path.iterdir()) == []


def test_publish_refuses_a_rename_across_directories(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    temp = write_feed(tmp_path / FEED_NAME, _small_feed())
    with pytest.raises(ValueError, match="not in the same directory"):
        publish_feed(temp, elsewhere / FEED_NAME)
    assert temp.exists() and not (elsewhere / FEED_NAME).exists()
    temp.unlink()
