"""Tests for :mod:`crawler.core.urls`, the one URL normalisation of the project.

Each rule of the module docstring has a table here; the Hypothesis tests check
the invariants that the tables cannot enumerate (idempotence, ASCII output,
never raising).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from crawler.core import urls
from crawler.core.urls import (
    TRACKING_PARAMS,
    StartUrlError,
    host_port,
    normalize_url,
    site_of,
    start_url,
    url_key,
)

E = "http://example.com"

# RFC 3986 URI characters, with every "%" starting an uppercase escape.
_URI_RE = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]|%[0-9A-F]{2})*")


# --- scheme, host and port ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # Scheme and host are case-insensitive; default port, dot segments and
        # fragment go.
        ("HTTP://Example.COM:80/a/./b/../c#frag", f"{E}/a/c"),
        ("hTtPs://EXAMPLE.com/", "https://example.com/"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com:80", f"{E}/"),
        # Non-default ports stay, including the other scheme's default.
        ("http://example.com:8080/", "http://example.com:8080/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com:443/", "http://example.com:443/"),
        # Empty port and leading zeros (the port is a number).
        ("http://example.com:/", f"{E}/"),
        ("http://example.com:0080/", f"{E}/"),
        ("http://example.com:08080/a", "http://example.com:8080/a"),
        ("http://example.com:" + "0" * 5000 + "80/", f"{E}/"),
        ("http://example.com:0/", "http://example.com:0/"),
        ("http://example.com:65535/", "http://example.com:65535/"),
        # Empty path.
        ("http://example.com", f"{E}/"),
        ("http://example.com?a=1", f"{E}/?a=1"),
        ("http://example.com#top", f"{E}/"),
        # IDN hosts: UTS #46 mapping, then punycode (IDNA 2008, non-transitional).
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://BÜCHER.Example/", "http://xn--bcher-kva.example/"),
        ("http://bücher\u3002example/", "http://xn--bcher-kva.example/"),
        ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/"),
        ("http://straße.de/", "http://xn--strae-oqa.de/"),
        ("http://a_b.bücher.de/", "http://a_b.xn--bcher-kva.de/"),
        ("http://XN--BCHER-KVA.EXAMPLE/", "http://xn--bcher-kva.example/"),
        ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"),
        # Percent-encoded hosts are decoded (UTF-8), as the URL standard does.
        ("http://ex%41mple.com/", f"{E}/"),
        ("http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
        # Otherwise the host is kept as it is.
        ("http://example.com./", "http://example.com./"),
        ("http://www.example.com/", "http://www.example.com/"),
        ("http://my_host.example.com/", "http://my_host.example.com/"),
        ("http://" + "a" * 63 + ".com/", "http://" + "a" * 63 + ".com/"),
        ("http://127.0.0.1/", "http://127.0.0.1/"),
        ("http://127.0.0.1:80/", "http://127.0.0.1/"),
        ("http://[::1]/", "http://[::1]/"),
        ("http://[2001:DB8::1]:8080/p", "http://[2001:db8::1]:8080/p"),
        ("https://[::1]:443/", "https://[::1]/"),
        ("http://[::1]:/", "http://[::1]/"),
        # URL standard: outer C0 controls and spaces stripped, tabs and newlines removed.
        ("  http://example.com/a \n", f"{E}/a"),
        ("\x00http://example.com/a\x1f", f"{E}/a"),
        ("http://exa\tmple.com/a\nb\r", f"{E}/ab"),
        # "\" is "/" before the query in http(s) URLs, for browsers and for Scrapy.
        ("http:\\\\example.com\\a\\b?c\\d", f"{E}/a/b?c%5Cd"),
        # ... so this goes to evil.com, as it does in a browser.
        ("http://evil.com\\@good.com/", "http://evil.com/@good.com/"),
    ],
)
def test_scheme_host_port(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


# --- path ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # Dot segments, RFC 3986 5.2.4.
        ("/a/./b/../c", "/a/c"),
        ("/a/b/..", "/a/"),
        ("/a/b/.", "/a/b/"),
        ("/a/./b/./", "/a/b/"),
        ("/../a", "/a"),
        ("/a/../../../b", "/b"),
        ("/a/b/../../..", "/"),
        ("/..", "/"),
        ("/.", "/"),
        ("/a/%2e%2E/b", "/b"),
        ("/a/.%2e/b", "/b"),
        ("/a/%2E/b", "/a/b"),
        ("/.../a", "/.../a"),
        ("/a.b/c..d/.e", "/a.b/c..d/.e"),
        # Duplicate slashes are kept (dot segments count the empty segment).
        ("/a//b", "/a//b"),
        ("//a", "//a"),
        ("/a//", "/a//"),
        ("/a//../b", "/a/b"),
        # Percent-encoding: unreserved decoded, reserved kept, hex uppercased.
        ("/%7euser", "/~user"),
        ("/%7Euser", "/~user"),
        ("/%41%62%30%2D%2E%5F%7E", "/Ab0-._~"),
        ("/a%2fb", "/a%2Fb"),
        ("/a%2Fb", "/a%2Fb"),
        ("/a%3fb", "/a%3Fb"),
        ("/a%3Bb", "/a%3Bb"),
        ("/a%25b", "/a%25b"),
        ("/%e2%82%ac", "/%E2%82%AC"),
        ("/%fc", "/%FC"),
        ("/a%20b", "/a%20b"),
        # Characters not allowed in a URI are encoded; the path is UTF-8.
        ("/a b", "/a%20b"),
        ("/ü", "/%C3%BC"),
        ("/€/日本", "/%E2%82%AC/%E6%97%A5%E6%9C%AC"),
        ('/"<>`{}|^[]', "/%22%3C%3E%60%7B%7D%7C%5E%5B%5D"),
        ("/a\x01b\x7f", "/a%01b%7F"),
        ("/\ud800", "/%EF%BF%BD"),
        # A lone "%" is "%25".
        ("/%", "/%25"),
        ("/100%", "/100%25"),
        ("/%zz", "/%25zz"),
        ("/%2", "/%252"),
        ("/%%41", "/%25A"),
        ("/%\u00e9", "/%25%C3%A9"),
        # What RFC 3986 allows stays as it is.
        ("/!$&'()*+,;=:@~-._", "/!$&'()*+,;=:@~-._"),
        # No other changes.
        ("/A/Index.HTML", "/A/Index.HTML"),
        ("/a/", "/a/"),
        ("/a", "/a"),
        ("/index.html", "/index.html"),
    ],
)
def test_path(path: str, expected: str) -> None:
    assert normalize_url(E + path) == E + expected


# --- query -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # Order and blank values are kept.
        ("?b=2&a=1", "?b=2&a=1"),
        ("?a=&b", "?a=&b"),
        ("?a=1&&b=2", "?a=1&&b=2"),
        ("?a=1&a=2&a=1", "?a=1&a=2&a=1"),
        # An empty query goes, "?" and all.
        ("?", ""),
        ("?#frag", ""),
        ("#?a=1", ""),
        # Percent-encoding, as in the path.
        ("?q=a b", "?q=a%20b"),
        ("?q=a+b", "?q=a+b"),
        ("?q=%7e%2f%3d%26%2b", "?q=~%2F%3D%26%2B"),
        ("?q=ü", "?q=%C3%BC"),
        ("?q=%fc", "?q=%FC"),
        ("?q=%", "?q=%25"),
        ("?q=50%&r=%zz", "?q=50%25&r=%25zz"),
        ("?a[]=1", "?a%5B%5D=1"),
        ("?q=\\", "?q=%5C"),
        ('?q="x"<y>', "?q=%22x%22%3Cy%3E"),
        # What RFC 3986 allows in a query stays (including "'", "?" and "/").
        ("?q='x'", "?q='x'"),
        ("?a=1?b=/c:d@e!$()*,;", "?a=1?b=/c:d@e!$()*,;"),
    ],
)
def test_query(query: str, expected: str) -> None:
    assert normalize_url(f"{E}/{query}") == f"{E}/{expected}"


@pytest.mark.parametrize(
    ("url", "encoding", "expected"),
    [
        # The query uses the page's encoding, the path is always UTF-8.
        (f"{E}/ü?q=ü", "latin-1", f"{E}/%C3%BC?q=%FC"),
        (f"{E}/ü?q=ü", "utf-8", f"{E}/%C3%BC?q=%C3%BC"),
        (f"{E}/?q=€", "cp1252", f"{E}/?q=%80"),
        (f"{E}/?q=ж", "koi8-r", f"{E}/?q=%D6"),
        # A character the encoding lacks: "&#8364;", percent-encoded (URL standard).
        (f"{E}/?q=€", "latin-1", f"{E}/?q=%26%238364%3B"),
        (f"{E}/?q=ü", "ascii", f"{E}/?q=%26%23252%3B"),
        # Unreserved bytes of a multi-byte character stay literal (idempotence).
        (f"{E}/?q=ア", "shift_jis", f"{E}/?q=%83A"),
        (f"{E}/?q=ソ", "shift_jis", f"{E}/?q=%83%5C"),
        (f"{E}/?q=ア", "iso-2022-jp", f"{E}/?q=%1B%24B%25%22%1B%28B"),
        # Unknown or not ASCII-compatible encodings fall back to UTF-8.
        (f"{E}/?q=ü", "utf-16", f"{E}/?q=%C3%BC"),
        (f"{E}/?q=ü", "utf-32-le", f"{E}/?q=%C3%BC"),
        (f"{E}/?q=ü", "cp500", f"{E}/?q=%C3%BC"),
        (f"{E}/?q=ü", "no-such-encoding", f"{E}/?q=%C3%BC"),
        # Existing escapes are never re-encoded.
        (f"{E}/?q=%FC&r=%C3%BC", "latin-1", f"{E}/?q=%FC&r=%C3%BC"),
    ],
)
def test_query_encoding(url: str, encoding: str, expected: str) -> None:
    assert normalize_url(url, encoding=encoding) == expected


# --- tracking parameters -------------------------------------------------------------


@pytest.mark.parametrize(
    ("rest", "kwargs", "expected"),
    [
        ("/?utm_source=x&id=3&gclid=y", {}, "/?id=3"),
        ("/?UTM_Campaign=x&Utm_Medium=y&id=1&utm_=z", {}, "/?id=1"),
        ("/?PHPSESSID=abc&page=2", {}, "/?page=2"),
        ("/?fbclid=1", {}, "/"),
        ("/?jsessionid=1&SID=2&sid", {}, "/"),
        ("/?utm_source=x&", {}, "/"),
        ("/?utm%5Fsource=1&a=2", {}, "/?a=2"),
        # Near misses and values are not names.
        ("/?utm=1&utmsource=2&sidebar=1&gclid_x=1", {}, "/?utm=1&utmsource=2&sidebar=1&gclid_x=1"),
        ("/?a=utm_source&b=gclid", {}, "/?a=utm_source&b=gclid"),
        # jsessionid matrix parameter on the last segment.
        ("/a;jsessionid=ABC", {}, "/a"),
        ("/a;JSESSIONID=ABC?x=1", {}, "/a?x=1"),
        ("/a;v=1;jsessionid=ABC", {}, "/a;v=1"),
        ("/a;jsessionid=ABC;v=1", {}, "/a;v=1"),
        ("/a;jsessionid", {}, "/a"),
        ("/;jsessionid=1", {}, "/"),
        ("/a/..;jsessionid=1", {}, "/"),
        ("/a;jsessionid=1/b", {}, "/a;jsessionid=1/b"),
        ("/a%3Bjsessionid=1", {}, "/a%3Bjsessionid=1"),
        ("/a;b", {}, "/a;b"),
        ("/a;jsessionidx=1", {}, "/a;jsessionidx=1"),
        # strip_params=False keeps everything.
        ("/?utm_source=x&id=3&gclid=y", {"strip_params": False}, "/?utm_source=x&id=3&gclid=y"),
        ("/a;jsessionid=ABC?PHPSESSID=1", {"strip_params": False}, "/a;jsessionid=ABC?PHPSESSID=1"),
        ("/?ref=1", {"strip_params": False, "extra_strip": ["ref"]}, "/?ref=1"),
        # extra_strip adds names, case-insensitively.
        ("/?ref=1&id=2&utm_x=3", {"extra_strip": ["ref"]}, "/?id=2"),
        ("/?REF=1&id=2", {"extra_strip": ("Ref", "session")}, "/?id=2"),
        ("/?ref=1&r=2", {"extra_strip": "ref"}, "/?r=2"),
        ("/?%C3%BC=1&a=2", {"extra_strip": ["ü"]}, "/?a=2"),
        ("/?%FC=1&a=2", {"extra_strip": ["ü"], "encoding": "latin-1"}, "/?a=2"),
        ("/?a=1", {"extra_strip": iter(["a"])}, "/"),
    ],
)
def test_strip_params(rest: str, kwargs: dict[str, Any], expected: str) -> None:
    assert normalize_url(E + rest, **kwargs) == E + expected


def test_tracking_params() -> None:
    assert {"gclid", "fbclid", "jsessionid", "phpsessid", "sid"} <= TRACKING_PARAMS
    assert all(name == name.lower() for name in TRACKING_PARAMS)


# --- rejected URLs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        # Not http(s).
        "mailto:someone@example.com",
        "javascript:alert(1)",
        "ftp://example.com/file",
        "file:///etc/passwd",
        "data:text/plain,hi",
        "ws://example.com/",
        "tel:+123",
        # Not absolute, or no host.
        "",
        "   ",
        "example.com/a",
        "//example.com/a",
        "/a",
        "?a=1",
        "http:",
        "http://",
        "http:///a",
        "http://:80/",
        "http:example.com",
        "http:/example.com",
        # Userinfo: never published.
        "http://user@example.com/",
        "http://user:pw@example.com/",
        "http://@example.com/",
        "https://u:p@bücher.example/",
        # Bad ports.
        "http://example.com:99999/",
        "http://example.com:65536/",
        "http://example.com:abc/",
        "http://example.com:-1/",
        "http://example.com:8080:80/",
        "http://example.com:\u0668\u0660/",
        "http://example.com:" + "9" * 5000 + "/",
        # Bad hosts.
        "http://exa mple.com/",
        "http://example..com/",
        "http://.example.com/",
        "http://a<b>.com/",
        "http://ex%2Fample.com/",
        "http://%FF.com/",
        "http://" + "a" * 64 + ".com/",
        "http://" + ".".join(["a" * 60] * 5) + "/",
        "http://\u2603.net/",
        "http://\ufffd.com/",
        "http://[::1/",
        "http://::1]/",
        "http://[1.2.3.4]/",
        "http://[fe80::1%25eth0]/",
        "http://[v1.x]/",
        "http://[::1]x/",
        "http://[::1]:99999/",
        "http://[nothex::1]/",
    ],
)
def test_rejected(url: str) -> None:
    assert normalize_url(url) is None


def test_stdlib_idna_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the idna package, the stdlib's IDNA 2003 codec is used."""
    monkeypatch.setattr(urls, "_idna", None)
    assert normalize_url("http://Bücher.example/") == "http://xn--bcher-kva.example/"
    # IDNA 2003 maps "ß" to "ss", IDNA 2008 keeps it.
    assert normalize_url("http://straße.de/") == "http://strasse.de/"
    assert normalize_url("http://" + "ü" * 64 + ".de/") is None


# --- distinct URLs stay distinct ---------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("/a", "/a/"),
        ("/a", "/A"),
        ("/", "/index.html"),
        ("/a%2Fb", "/a/b"),
        ("/a%3Fb", "/a?b"),
        ("//a", "/a"),
        ("/a;v=1", "/a"),
        ("/%C3%BC", "/%FC"),
        ("/?a=1&b=2", "/?b=2&a=1"),
        ("/?a", "/?a="),
        ("/?q=a+b", "/?q=a%20b"),
        ("/?q=a%26b", "/?q=a&b"),
        ("/?sid2=1", "/"),
    ],
)
def test_distinct_paths_stay_distinct(first: str, second: str) -> None:
    assert normalize_url(E + first) != normalize_url(E + second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("http://example.com/", "https://example.com/"),
        ("http://example.com/", "http://www.example.com/"),
        ("http://example.com/", "http://example.com./"),
        ("http://example.com/", "http://example.com:8080/"),
    ],
)
def test_distinct_origins_stay_distinct(first: str, second: str) -> None:
    assert normalize_url(first) != normalize_url(second)


# --- url_key ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (f"{E}/?b=2&a=1", f"{E}/?a=1&b=2"),
        (f"{E}/p?a=1&b=2&c=", f"{E}/p?c=&b=2&a=1"),
        ("HTTP://Example.COM:80/a/../p?b=2&utm_source=x&a=1#top", f"{E}/p?a=1&b=2"),
        ("http://bücher.example/ü", "http://xn--bcher-kva.example/%c3%bc"),
    ],
)
def test_url_key_equal(first: str, second: str) -> None:
    first_n, second_n = normalize_url(first), normalize_url(second)
    assert first_n is not None and second_n is not None
    assert url_key(first_n) == url_key(second_n)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (f"{E}/a", f"{E}/a/"),
        (f"{E}/a", f"{E}/A"),
        (f"{E}/?a=1", f"{E}/?a=2"),
        (f"{E}/?a=1", f"{E}/?a=1&a=1"),
        (f"{E}/a%2Fb", f"{E}/a/b"),
        (E + "/", "https://example.com/"),
        (E + "/", "http://example.com:8080/"),
    ],
)
def test_url_key_distinct(first: str, second: str) -> None:
    first_n, second_n = normalize_url(first), normalize_url(second)
    assert first_n is not None and second_n is not None
    assert url_key(first_n) != url_key(second_n)


def test_url_key_keeps_published_order() -> None:
    published = normalize_url(f"{E}/?b=2&a=1")
    assert published == f"{E}/?b=2&a=1"
    assert url_key(published) == f"{E}/?a=1&b=2"


# --- host_port (None: not an http URL)------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/", ("example.com", 80)),
        ("https://example.com", ("example.com", 443)),
        ("HTTP://Example.COM:8080/a?b#c", ("example.com", 8080)),
        ("https://example.com:80/", ("example.com", 80)),
        ("http://example.com:0080/", ("example.com", 80)),
        ("http://example.com:/", ("example.com", 80)),
        ("http://bücher.example/", ("xn--bcher-kva.example", 80)),
        ("https://[2001:DB8::1]:8443/", ("2001:db8::1", 8443)),
        ("http://[::1]/", ("::1", 80)),
        ("http://127.0.0.1:81/", ("127.0.0.1", 81)),
        ("http://u:p@example.com:81/", ("example.com", 81)),
        ("http://example.com./", ("example.com.", 80)),
        # None when not an absolute http(s) URL with a valid host and port.
        ("ftp://example.com/", None),
        ("mailto:a@example.com", None),
        ("/a", None),
        ("//example.com/", None),
        ("", None),
        ("http://", None),
        ("http://example.com:99999/", None),
        ("http://example.com:abc/", None),
        ("http://exa mple.com/", None),
        ("http://[::1/", None),
    ],
)
def test_host_port(url: str, expected: tuple[str, int] | None) -> None:
    assert host_port(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com", True),
        ("https://example.com/a?b#c", True),
        ("HTTPS://EXAMPLE.COM/", True),
        ("http://bücher.example/", True),
        ("http://[::1]:8080/", True),
        # Still an http URL, even if normalize_url refuses to publish it.
        ("http://user:pw@example.com/", True),
        ("ftp://example.com/", False),
        ("mailto:a@example.com", False),
        ("javascript:void(0)", False),
        ("file:///tmp/x", False),
        ("/relative/path", False),
        ("//example.com/a", False),
        ("example.com", False),
        ("http://", False),
        ("http:///a", False),
        ("http:example.com", False),
        ("http://example.com:99999/", False),
        ("", False),
    ],
)
def test_host_port_says_whether_http_url(url: str, expected: bool) -> None:
    assert (host_port(url) is not None) is expected


# --- properties ------------------------------------------------------------------------

_SCHEMES = st.sampled_from(["http", "https", "HTTP", "hTtPs"])
_HOSTS = st.one_of(
    st.sampled_from(
        [
            "example.com",
            "Example.COM",
            "www.example.com.",
            "bücher.example",
            "例え.テスト",
            "straße.de",
            "a_b.example",
            "127.0.0.1",
            "[::1]",
            "[2001:DB8::1]",
            "ex%41mple.com",
            "xn--bcher-kva.example",
        ]
    ),
    st.text(alphabet="abcXYZ019-_.üß%", min_size=1, max_size=12),
)
_PORTS = st.one_of(
    st.just(""),
    st.sampled_from([":", ":80", ":443", ":0080", ":8080"]),
    st.integers(0, 70000).map(lambda port: f":{port}"),
)
_SEGMENTS = st.one_of(
    st.sampled_from(
        [
            ".",
            "..",
            "",
            "%2e",
            "%2E%2e",
            ";jsessionid=x",
            "a;JSESSIONID=1",
            "..;jsessionid=1",
            "%",
            "%7e",
            "%2f",
            "%zz",
            "%C3%BC",
            "a b",
            "ü",
            "\\",
        ]
    ),
    st.text(max_size=8),
)
_PATHS = st.lists(_SEGMENTS, max_size=6).map(lambda segments: "/".join(["", *segments]))
_NAMES = st.one_of(
    st.sampled_from(["utm_source", "UTM_Medium", "gclid", "PHPSESSID", "sid", "id", "a", "", "ü"]),
    st.text(max_size=6),
)
_PAIRS = st.tuples(_NAMES, st.none() | st.text(max_size=8)).map(
    lambda pair: pair[0] if pair[1] is None else f"{pair[0]}={pair[1]}"
)
_QUERIES = st.none() | st.lists(_PAIRS, max_size=5).map("&".join)
_FRAGMENTS = st.none() | st.text(max_size=8)
_ENCODINGS = st.sampled_from(
    ["utf-8", "latin-1", "cp1252", "shift_jis", "iso-2022-jp", "koi8-r", "utf-16", "ascii"]
)


@st.composite
def _urls(draw: st.DrawFn) -> str:
    url = f"{draw(_SCHEMES)}://{draw(_HOSTS)}{draw(_PORTS)}{draw(_PATHS)}"
    query, fragment = draw(_QUERIES), draw(_FRAGMENTS)
    if query is not None:
        url += f"?{query}"
    if fragment is not None:
        url += f"#{fragment}"
    return url


_PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


@_PROPERTY_SETTINGS
@given(url=_urls(), encoding=_ENCODINGS, strip_params=st.booleans())
def test_normalize_url_is_idempotent(url: str, encoding: str, strip_params: bool) -> None:
    normalized = normalize_url(url, encoding=encoding, strip_params=strip_params)
    assume(normalized is not None)
    assert normalized is not None  # for the type checker
    assert normalized.isascii()
    assert _URI_RE.fullmatch(normalized), normalized
    assert normalize_url(normalized, encoding=encoding, strip_params=strip_params) == normalized
    assert host_port(normalized) is not None
    assert host_port(normalized) == host_port(url)
    assert url_key(normalized).isascii()


@_PROPERTY_SETTINGS
@given(url=_urls(), encoding=_ENCODINGS)
def test_fragment_and_tracking_never_survive(url: str, encoding: str) -> None:
    normalized = normalize_url(url, encoding=encoding)
    assume(normalized is not None)
    assert normalized is not None
    assert "#" not in normalized
    query = normalized.partition("?")[2]
    for pair in query.split("&") if query else []:
        name = pair.partition("=")[0].lower()
        assert name not in TRACKING_PARAMS and not name.startswith("utm_")


@settings(max_examples=300, deadline=None)
@given(url=st.text(max_size=40) | st.builds("{}{}".format, _SCHEMES, st.text(max_size=30)))
def test_arbitrary_text_never_raises(url: str) -> None:
    normalized = normalize_url(url)
    assert normalized is None or normalize_url(normalized) == normalized
    host_port(url)  # never raises either


@settings(max_examples=300, deadline=None)
@given(
    url=_urls() | st.text(max_size=40) | st.builds("{}{}".format, _SCHEMES, st.text(max_size=30))
)
def test_site_of_is_host_port_without_the_default_port(url: str) -> None:
    # site_of splits the URL once; this is what it must equal.
    found = host_port(url)
    if found is None:
        assert site_of(url) is None
    else:
        host, port = found
        scheme = urls._split(url)[0]  # type: ignore[index]
        assert site_of(url) == (host, None if port == urls._DEFAULT_PORTS[scheme] else port)


@settings(max_examples=100, deadline=None)
@given(
    scheme=st.sampled_from(["mailto", "javascript", "ftp", "file", "data", "ws", "tel"]),
    rest=st.text(max_size=30),
)
def test_other_schemes_are_rejected(scheme: str, rest: str) -> None:
    assert normalize_url(f"{scheme}:{rest}") is None
    assert normalize_url(f"{scheme}://example.com/{rest}") is None


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("www.example.com", "; did you mean https://www.example.com or http://www.example.com?"),
        ("127.0.0.1:8095/", "; did you mean http://127.0.0.1:8095/ or https://127.0.0.1:8095/?"),
        ("localhost:8000", "; did you mean http://localhost:8000 or https://localhost:8000?"),
        ("[::1]:8000/a", "; did you mean http://[::1]:8000/a or https://[::1]:8000/a?"),
        ("//example.com/a", "; did you mean https://example.com/a or http://example.com/a?"),
        ("intranet:8080", "; did you mean https://intranet:8080 or http://intranet:8080?"),
        # Not a host without its scheme: no guess.
        ("not a url", ""),
        ("example", ""),
        ("ftp://example.com/", ""),
        ("http:/example.com", ""),
        ("mailto:a@example.com", ""),
        ("a@example.com", ""),
        ("www.example.com:99999", ""),
    ],
)
def test_a_start_url_without_its_scheme_gets_the_urls_it_may_mean(text: str, hint: str) -> None:
    """The spiders' ``-a url=`` (``scrapy crawl site``) says it as the command line does."""
    with pytest.raises(StartUrlError) as raised:
        start_url(text)
    assert str(raised.value) == f"not an http(s) URL: {text!r}{hint}"
