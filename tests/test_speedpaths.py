"""The fast paths of the crawl give the answers of the slow ones: the cached link
resolver against ``urljoin`` + ``normalize_url`` + ``url_key`` on every call, and the
main-content hash's rules (what is content, what is not); and the per-page debug
messages that are not built when nobody will see them."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urljoin

import pytest
import pytest_twisted
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import html as lxml_html
from scrapy.http import HtmlResponse

from crawler.core.seen import SeenKeys, fingerprint
from crawler.core.urls import normalize_url, url_key
from crawler.page.content import VERSION, main_content_hash, own_hash, same_content
from crawler.page.links import LinkResolver, clean_href, parse_html
from tests.conftest import MockServer, run_crawl

C0_OR_SPACE = "".join(map(chr, range(0x21)))
BASES = [
    "http://h.test/a/b.html",
    "http://h.test/a/b.html?x=1#f",
    "http://h.test/a/",
    "http://h.test",
    "http://h.test#frag/x",
    "http://h.test/?q/r",
    "https://h.test/a/c;p?q",
    "http://h.test:8080/a/b/c",
    "http://g.test/x/y/z.html",
    "http://h.test/a;x/b",
]
HREF_PARTS = [
    "foo", "./", "../", "..", ".", "/", "//", "g.test", "x.html", "#", "#f", "?", "q=1", "&",
    ";p", "http:", "https:", "HTTP://", "mailto:", "javascript:", "%2e", "%41", "é", " ", "\\",
    "@", ":99", "a/b", "", "\t", "\x01", "\n ", "\x0c",
]  # fmt: skip


def slow(base: str, href: str, encoding: str) -> tuple[str, str, str, int] | None:
    # The href as a browser reads it: cleaned, and without the leading C0 controls and
    # spaces that the URL standard strips (urljoin keeps them in an href of another
    # scheme, which it returns unchanged).
    raw = urljoin(base, clean_href(href).lstrip(C0_OR_SPACE)).partition("#")[0]
    url = normalize_url(raw, encoding=encoding)
    return None if url is None else (raw, url, url_key(url), fingerprint(url_key(url)))


@settings(max_examples=600, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(BASES),
            st.lists(st.sampled_from(HREF_PARTS), max_size=5).map("".join),
            st.sampled_from(["utf-8", "iso-8859-1"]),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_resolver_answers_as_urljoin_and_normalize(calls: list[tuple[str, str, str]]) -> None:
    # One resolver across many calls, so that cached answers are checked against
    # other bases of the same directory, origin and scheme; a tiny bound checks the reset.
    for resolver in (LinkResolver(), LinkResolver(max_entries=3)):
        for base, href, encoding in calls:
            found = resolver.resolve(base, href, encoding)
            assert (None if found is None else tuple(found)) == slow(base, href, encoding)


def test_resolver_shares_entries_within_a_directory() -> None:
    resolver = LinkResolver()
    for page in ("one.html", "two.html?x", "three.html#t"):
        for href in ("../up.html", "next.html#part", "/root.html", "http://h.test/abs"):
            resolver.resolve(f"http://h.test/d/{page}", href)
    assert len(resolver._cache) == 4


def page(body: str, head: str = "") -> HtmlResponse:
    text = f"<html><head>{head}</head><body>{body}</body></html>"
    return HtmlResponse("http://h.test/p.html", body=text.encode(), encoding="utf-8")


def digest(body: str, head: str = "", volatile: tuple[str, ...] = ()) -> str | None:
    return main_content_hash(parse_html(page(body, head)), volatile)


def test_main_hash_ignores_markup_noise() -> None:
    base = digest("<h1>Title</h1><p>Some text, <b>bold</b>.</p><a href='x.html'>x</a>")
    assert base is not None and base.startswith(VERSION)
    same = [
        # Re-indented and minified.
        "\n  <h1>Title</h1>\n  <p>Some text,\n    <b>bold</b>.</p>\n<a href=' x.html '>x</a>\n",
        # Scripts, styles, comments, noscript and template are not content.
        "<h1>Title</h1><script>var t = 1</script><p>Some text, <b>bold</b>.<!-- 10:00 --></p>"
        "<style>p{}</style><noscript>on</noscript><template>t</template><a href='x.html'>x</a>",
    ]
    for body in same:
        assert digest(body) == base, body
    assert digest("<h1>Title</h1><p>Some text, <b>bold</b>.</p>", head="<script>1</script>") != (
        base
    )  # the link is gone
    changed = [
        "<h1>Title</h1><p>Other text, <b>bold</b>.</p><a href='x.html'>x</a>",
        "<h1>Title</h1><p>Some text, <b>bold</b>.</p><a href='y.html'>x</a>",
        "<h1>Title</h1><p>Some text, <b>bold</b>.</p><a href='x.html'>x</a><img src='i.png'>",
    ]
    for body in changed:
        assert digest(body) != base, body


def test_main_and_own_hashes_are_the_stored_ones() -> None:
    """The nightly schedule compares tonight's hashes with stored ones: a faster hash
    must be the same digest (values from the release that stored them)."""
    body = (
        '<nav><a href="/">Home</a></nav><main><h1>Title</h1><p>Some text, <b>bold</b>.</p>\n'
        '<a href=" x.html ">x</a><img src="i.png"><a href="">empty</a><link href="s.css">'
        '</main><footer><a href="/legal">Legal</a></footer>'
    )
    root = lxml_html.fromstring(f"<html><body>{body}</body></html>")
    assert main_content_hash(root) == "m2-5fa6fcd1965abb241b806df05cc204bd"
    assert own_hash(root) == "o1-834162c96a757c5395c9b258d18b79f8"


def test_main_hash_leaves_out_volatile_regions_but_keeps_their_tails() -> None:
    one = digest('<p>a <span class="ts">10:00</span> b</p>', volatile=(".ts",))
    two = digest('<p>a <span class="ts">11:30</span> b</p>', volatile=(".ts",))
    assert one == two
    assert one != digest('<p>a <span class="ts">11:30</span> c</p>', volatile=(".ts",))
    assert digest('<p>a <span class="ts">10:00</span> b</p>') != digest(
        '<p>a <span class="ts">11:30</span> b</p>'
    )


def test_same_content_compares_like_with_like() -> None:
    m1, m2 = VERSION + "1" * 32, VERSION + "2" * 32
    assert same_content(m1, m1, "x", "y") is True  # main content equal, body not
    assert same_content(m1, m2, "x", "x") is False
    # A hash of an earlier version is not compared: the body hashes decide.
    assert same_content("a" * 32, m1, "x", "x") is True
    assert same_content("a" * 32, m1, "x", "y") is False
    assert same_content(None, m1, None, "y") is None


def test_seen_keys_by_key_and_fingerprint() -> None:
    import pickle

    seen = SeenKeys(["http://h.test/a"])
    seen.add("http://h.test/b")
    assert "http://h.test/a" in seen and "http://h.test/b" in seen
    assert "http://h.test/c" not in seen and 42 not in seen
    assert seen.has_fp(fingerprint("http://h.test/b"))
    seen.discard("http://h.test/a")
    assert "http://h.test/a" not in seen and len(seen) == 1
    # Stable across processes: the JOBDIR state is a pickle read by the next run.
    assert fingerprint("http://h.test/b") == 0x7535DFFC6A31A266
    again = pickle.loads(pickle.dumps(seen))
    assert "http://h.test/b" in again and len(again) == 1
    # A JOBDIR state written before the runs (a plain set) still loads.
    old = SeenKeys.__new__(SeenKeys)
    old.__setstate__({fingerprint("http://h.test/b")})
    assert "http://h.test/b" in old and len(old) == 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "discard", "has"]), st.integers(0, 60)), max_size=300
    ),
    st.integers(1, 8),
)
def test_seen_keys_with_runs_answer_as_a_set(ops: list[tuple[str, int]], spill: int) -> None:
    # Tiny spill sizes, so that runs are made, merged and searched; values repeat, so
    # that adds, discards and lookups meet fingerprints in the set, in runs and gone.
    import pickle

    seen, model = SeenKeys(spill=spill), set()
    for op, value in ops:
        fp = value * 0x9E3779B97F4A7C15 % 2**64  # spread over the whole 64 bits
        if op == "add":
            seen.add_fp(fp)
            model.add(fp)
        elif op == "discard":
            seen.discard_fp(fp)
            model.discard(fp)
        assert seen.has_fp(fp) == (fp in model)
        assert len(seen) == len(model)
    again = pickle.loads(pickle.dumps(seen))
    assert all(
        again.has_fp(v * 0x9E3779B97F4A7C15 % 2**64) == (v * 0x9E3779B97F4A7C15 % 2**64 in model)
        for v in range(61)
    )
    assert len(seen._runs) <= max(1, len(model) // spill).bit_length() + 1


def test_seen_keys_memory_stays_small_past_the_spill() -> None:
    import random
    import tracemalloc

    values = [random.getrandbits(64) for _ in range(200_000)]
    tracemalloc.start()
    try:
        seen = SeenKeys(spill=1 << 12)
        for fp in values:
            seen.add_fp(fp)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(seen) == len(set(values))
    assert all(seen.has_fp(fp) for fp in values[::997])
    # 8 bytes a fingerprint in runs plus the newest 4,096 in a set: under 2.5 MB,
    # where a set of 200,000 ints takes about 14 MB.
    assert held < 2_500_000, held


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
@pytest_twisted.ensureDeferred
async def test_per_page_debug_messages_are_not_built_above_debug(
    site: MockServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, level: str
) -> None:
    # caplog's handler takes every record the loggers create: at INFO none of the
    # per-page messages may be created at all; at DEBUG they are Scrapy's own.
    with caplog.at_level(logging.DEBUG, logger="scrapy"):
        result = await run_crawl(site.url("/"), tmp_path, LOG_LEVEL=level)
    assert result.outcome == "published"
    pages = result.stats["response_received_count"]
    crawled = [r for r in caplog.records if r.getMessage().startswith("Crawled (")]
    scraped = [r for r in caplog.records if r.getMessage().startswith("Scraped from")]
    if level == "INFO":
        assert crawled == [] and scraped == []
    else:
        # Every response that reached the engine (a retried one does not), logged.
        assert len(crawled) == pages > 5
        assert scraped
        assert all(r.levelno == logging.DEBUG for r in crawled + scraped)
