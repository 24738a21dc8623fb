"""Unit tables for the pieces the crawl is built from: link discovery and robots
directives on real HtmlResponse objects, traps, the public-URL mapping, the site
identity, the ledger's rules and the offline cookie middleware."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.http import HtmlResponse

from crawler.core.decisions import CANONICAL, CAP, LISTED, QUEUED, REDIRECT, UNFETCHED, close_books
from crawler.core.items import UrlRecord
from crawler.core.publicurl import BaseUrlError, PublicUrls, prefix_of
from crawler.core.seen import fingerprint
from crawler.core.urls import site_of, url_key
from crawler.crawl.counted import MemoryCounters
from crawler.crawl.rulebook import RuleBook, RuleParams
from crawler.crawl.traps import TrapDetector
from crawler.fetch.cookies import is_public_suffix
from crawler.ledger.ledger import Ledger
from crawler.page.links import page_facts
from tests.conftest import NetworkWatch

AGENTS = ("robots", "googlebot", "sitemap-crawler")


def html(
    body: str, head: str = "", url: str = "http://h.test/dir/page.html", **headers: str
) -> HtmlResponse:
    text = f"<html><head>{head}</head><body>{body}</body></html>"
    return HtmlResponse(url, body=text.encode(), headers=headers, encoding="utf-8")


# -- links ------------------------------------------------------------------------------


def test_links_from_a_area_and_hreflang_with_base() -> None:
    response = html(
        '<a href=" rel.html ">a</a><a href="/abs">b</a><area href="area.html">'
        '<a rel="nofollow" href="no.html">n</a><a rel="ugc nofollow" href="no2.html">n</a>'
        '<a href="">empty</a><a>none</a><link rel="alternate" hreflang="de" href="de.html">'
        '<link rel="alternate" type="application/rss+xml" href="feed.xml">'
        '<a href="t\tab\nbed.html">t</a>',
        head='<base href="http://h.test/other/">',
    )
    facts = page_facts(response, AGENTS)
    assert facts.links == [
        "http://h.test/other/rel.html",
        "http://h.test/abs",
        "http://h.test/other/area.html",
        "http://h.test/other/de.html",
        "http://h.test/other/tabbed.html",
    ]


@pytest.mark.parametrize(
    ("head", "headers", "noindex", "nofollow"),
    [
        ('<meta name="robots" content="noindex">', {}, "meta robots", None),
        ('<meta name="ROBOTS" content="NOINDEX, NOFOLLOW">', {}, "meta robots", "meta robots"),
        ('<meta name="robots" content="none">', {}, "meta robots", "meta robots"),
        ('<meta name="googlebot" content="noindex">', {}, "meta googlebot", None),
        ('<meta name="sitemap-crawler" content="nofollow">', {}, None, "meta sitemap-crawler"),
        ('<meta name="otherbot" content="noindex">', {}, None, None),
        ('<meta name="robots" content="index, follow">', {}, None, None),
        ("", {"X-Robots-Tag": "noindex"}, "X-Robots-Tag", None),
        (
            "",
            {"X-Robots-Tag": "googlebot: noindex, nofollow"},
            "X-Robots-Tag (googlebot)",
            "X-Robots-Tag (googlebot)",
        ),
        ("", {"X-Robots-Tag": "otherbot: noindex"}, None, None),
        ("", {"X-Robots-Tag": "unavailable_after: 25 Jun 2010 15:00:00 PST"}, None, None),
    ],
)
def test_robots_directives(
    head: str, headers: dict[str, str], noindex: str | None, nofollow: str | None
) -> None:
    facts = page_facts(html('<a href="x.html">x</a>', head=head, **headers), AGENTS)
    assert facts.robots.noindex == noindex
    assert facts.robots.nofollow == nofollow
    assert facts.links == ([] if nofollow else ["http://h.test/dir/x.html"])


@pytest.mark.parametrize(
    ("head", "body", "headers", "canonicals"),
    [
        ('<link rel="canonical" href="/c">', "", {}, ["http://h.test/c"]),
        ('<link rel="Canonical" href="c2">', "", {}, ["http://h.test/dir/c2"]),
        ("", '<link rel="canonical" href="/in-body">', {}, []),
        ("", "", {"Link": '<http://h.test/h>; rel="canonical"'}, ["http://h.test/h"]),
        ("", "", {"Link": '</p1>; rel="prev", </c3>; rel=canonical'}, ["http://h.test/c3"]),
        ("", "", {"Link": '<http://h.test/s.css>; rel="preload"'}, []),
    ],
)
def test_canonical_sources(
    head: str, body: str, headers: dict[str, str], canonicals: list[str]
) -> None:
    assert page_facts(html(body, head=head, **headers), AGENTS).canonicals == canonicals


def test_meta_refresh() -> None:
    facts = page_facts(
        html("", head='<meta http-equiv="refresh" content="3;URL=\'/next\'">'), AGENTS
    )
    assert facts.refresh == (3.0, "http://h.test/next")
    noscript = page_facts(
        html('<noscript><meta http-equiv="refresh" content="0;url=/js"></noscript>'), AGENTS
    )
    assert noscript.refresh is None


# -- traps --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://h/a/b/c/", None),
        ("http://h/a/b/a/b/", None),
        ("http://h/a/b/a/b/a/b/", "path segment 'a' repeated 3 times"),
        ("http://h/" + "/".join(str(i) for i in range(21)), "more than 20 path segments"),
        ("http://h/" + "/".join(str(i) for i in range(20)), None),
        ("http://h/(S(abc123xyz))/page.aspx", "session identifier in path"),
        ("http://h/p?sessionid=1", "session identifier in query (sessionid)"),
        ("http://h/p?s=shoes", None),
    ],
)
def test_trap_rules(url: str, reason: str | None) -> None:
    refusal = TrapDetector(max_repeats=2, max_segments=20, max_query_variants=100).shape(url)
    assert (refusal.reason if refusal else None) == reason


def test_trap_query_variants() -> None:
    """Counted: the rule book names the counter, the backend counts."""
    params = RuleParams(
        "http://h/", trap_max_repeats=2, trap_max_segments=20, trap_max_query_variants=3
    )
    book = RuleBook.of(
        params, public=PublicUrls.create("http://h/", None), learner=None, calendars=None
    )
    counters = MemoryCounters()

    def reason(url: str) -> str | None:
        claim = book.claim(url, book.found(url, 1))
        refusal = counters.apply(fingerprint(url_key(url)), claim).refusal(claim)
        return None if refusal is None else refusal.reason

    results = [reason(f"http://h/cal?d={i}") for i in range(5)]
    assert results == [
        None,
        None,
        None,
        "more than 3 query variants of /cal",
        "more than 3 query variants of /cal",
    ]
    assert reason("http://h/other?d=1") is None


# -- public URLs and sites ---------------------------------------------------------------------


def test_public_urls() -> None:
    public = PublicUrls.create("http://127.0.0.1:8000/docs/index.html", "https://www.example.com/3")
    assert public.public_prefix == "https://www.example.com/3/"
    assert public.loc("http://127.0.0.1:8000/docs/a/b.html") == "https://www.example.com/3/a/b.html"
    assert public.loc("http://127.0.0.1:8000/other.html") is None
    assert (
        public.to_crawl("https://www.example.com/3/x.html") == "http://127.0.0.1:8000/docs/x.html"
    )
    assert public.to_crawl("https://elsewhere.example/x.html") == "https://elsewhere.example/x.html"
    plain = PublicUrls.create("http://h.test/", None)
    assert plain.loc("http://h.test/x") == "http://h.test/x"
    assert plain.sitemap_loc("sitemap_index.xml") == "http://h.test/sitemap_index.xml"
    with pytest.raises(BaseUrlError):
        PublicUrls.create("http://h.test/", "ftp://x/")
    assert prefix_of("http://h.test") == "http://h.test/"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("http://example.com/", "https://example.com/x", True),
        ("http://example.com:80/", "https://example.com:443/", True),
        ("http://example.com:8080/", "https://example.com:8080/", True),
        ("http://example.com/", "http://example.com:8080/", False),
        ("http://example.com/", "http://www.example.com/", False),
        ("http://EXAMPLE.com/", "http://example.com/", True),
        ("http://127.0.0.1:8000/", "http://localhost:8000/", False),
    ],
)
def test_site_identity(a: str, b: str, same: bool) -> None:
    assert (site_of(a) == site_of(b)) is same


# -- ledger -----------------------------------------------------------------------------------


def rec(url: str, decision: str, target: str | None = None, loc: str | None = None) -> UrlRecord:
    return UrlRecord(url=url, decision=decision, target=target, key=url_key(url), loc=loc)


def test_ledger_first_final_decision_wins(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    assert ledger.record(rec("http://h/a", QUEUED))
    assert not ledger.record(rec("http://h/a", QUEUED))
    assert ledger.record(rec("http://h/a", LISTED, loc="http://h/a"))
    assert not ledger.record(rec("http://h/a", REDIRECT, target="http://h/b"))
    assert [r["decision"] for r in ledger.rows()] == [LISTED]
    ledger.close()


def test_closing_the_books_marks_unfetched_chains_and_loops(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    ledger.record(rec("http://h/q", QUEUED))
    ledger.record(rec("http://h/r1", REDIRECT, target="http://h/r2"))
    ledger.record(rec("http://h/r2", REDIRECT, target="http://h/ok"))
    ledger.record(rec("http://h/l1", CANONICAL, target="http://h/l2"))
    ledger.record(rec("http://h/l2", CANONICAL, target="http://h/l1"))
    close_books(ledger, dedupe_content=True)
    assert ledger.counts()[CAP] == 1
    reasons = {r["url"]: (r["decision"], r["reason"]) for r in ledger.rows()}
    assert reasons["http://h/q"] == (CAP, UNFETCHED)
    assert reasons["http://h/r1"][1].endswith("(chain)")
    assert not reasons["http://h/r2"][1].endswith(")")
    assert reasons["http://h/l1"][1].endswith("(loop)")
    assert reasons["http://h/l2"][1].endswith("(loop)")
    ledger.close()


def test_ledger_streams_listed_entries_sorted(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.sqlite")
    for name in ("c", "a", "b"):
        record = rec(f"http://h/{name}", LISTED, loc=f"https://pub/{name}")
        record.lastmod = "2024-01-01T00:00:00+00:00" if name == "b" else None
        ledger.record(record)
    ledger.record(rec("http://h/z", REDIRECT, target="http://h/a"))
    entries = list(ledger.listed_entries())
    assert [e.loc for e in entries] == ["https://pub/a", "https://pub/b", "https://pub/c"]
    assert [e.lastmod for e in entries] == [None, "2024-01-01T00:00:00+00:00", None]
    ledger.close()


# -- cookies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "public"),
    [
        ("co.uk", True),
        ("example.co.uk", False),
        ("com", True),
        ("github.io", True),
        ("127.0.0.1", False),
    ],
)
def test_public_suffix_check_is_offline(domain: str, public: bool) -> None:
    with NetworkWatch() as network:
        assert is_public_suffix(domain) is public
    assert network == []


# -- compressed responses --------------------------------------------------------------------


@pytest.mark.parametrize("charset", ["", "; charset=iso-8859-1"])
def test_compressed_html_is_decoded_without_guessing_on_gzip(charset: str) -> None:
    import gzip

    from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
    from scrapy.http import Request, Response
    from scrapy.utils.test import get_crawler

    from crawler.fetch.compression import CompressedAsPlainResponseMiddleware

    text = "<html><head><title>café</title></head><body>é</body></html>"
    encoding = "iso-8859-1" if charset else "utf-8"
    request = Request("http://h.test/")
    compressed = HtmlResponse(
        "http://h.test/",
        body=gzip.compress(text.encode(encoding)),
        headers={"Content-Type": "text/html" + charset, "Content-Encoding": "gzip"},
        request=request,
    )
    plain = CompressedAsPlainResponseMiddleware().process_response(request, compressed)
    assert type(plain) is Response  # no encoding to guess on the gzip bytes
    assert plain.body == compressed.body and plain.headers == compressed.headers
    decoded = HttpCompressionMiddleware.from_crawler(get_crawler()).process_response(request, plain)
    assert isinstance(decoded, HtmlResponse)
    assert decoded.css("title::text").get() == "café"
    assert decoded.encoding.lower().replace("_", "-") in (
        {"iso-8859-1", "cp1252"} if charset else {"utf-8"}
    )


# -- requests written to the JOBDIR queue ------------------------------------------------


def test_page_request_serialises_as_scrapy_does() -> None:
    from scrapy import Request
    from scrapy.utils.request import request_from_dict

    from crawler.core.items import PageRequest
    from crawler.crawl.spider import SiteSpider

    spider = SiteSpider(url="http://h.test/")
    kwargs = {
        "callback": spider.parse,
        "errback": spider.failed,
        "meta": {"sitemap_url": "http://h.test/a", "sitemap_depth": 2},
        "headers": {"If-None-Match": '"x"'},
        "priority": -2,
    }
    ours = PageRequest("http://h.test/a", **kwargs).to_dict(spider=spider)
    scrapys = Request("http://h.test/a", **kwargs).to_dict(spider=spider)
    assert ours.pop("_class") == "crawler.core.items.PageRequest"
    assert ours == scrapys
    back = request_from_dict({**ours, "_class": "crawler.core.items.PageRequest"}, spider=spider)
    assert type(back) is PageRequest
    assert back.callback == spider.parse and back.errback == spider.failed
    assert back.meta == kwargs["meta"] and back.priority == -2
    with pytest.raises(ValueError, match="not a method"):
        PageRequest("http://h.test/b", callback=print).to_dict(spider=spider)


# -- the progress line ------------------------------------------------------------------


def test_progress_counts_pages_not_robots_txt() -> None:
    import io

    from scrapy.utils.test import get_crawler

    from crawler.crawl.progress import Progress

    stats = get_crawler().stats
    assert stats is not None
    stats.set_value("response_received_count", 3)  # robots.txt and two pages
    stats.set_value("robotstxt/response_count", 1)
    assert Progress(stats, 1.0, io.StringIO()).line().startswith("fetched 2, ")
