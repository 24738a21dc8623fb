"""Tests for crawler.page.hreflang: codes, declarations read from real responses, and the
cluster check (issue #14)."""

from __future__ import annotations

import pickle
import re

import pycountry
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from crawler.page.hreflang import declared, valid_code, verify
from crawler.page.links import parse_html

# -- valid_code --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "valid"),
    [
        ("en", True),
        ("EN", True),
        ("en-gb", True),
        ("en-GB", True),
        ("de-CH", True),
        ("zh-Hant", True),
        ("zh-Hant-TW", True),
        ("ZH-HANT-tw", True),
        ("sr-Latn-RS", True),
        ("x-default", True),
        ("X-Default", True),
        # The United Kingdom is GB; UK is only reserved.
        ("en-UK", False),
        ("en-EU", False),
        # ISO 639-2/3 codes are not ISO 639-1.
        ("eng", False),
        ("fil", False),
        # A region alone is not a language.
        ("gb", False),
        ("us", False),
        ("de-DE-x", False),
        ("zh-TW-Hant", False),
        ("zh-Hant-Latn", False),
        ("en_GB", False),
        ("es-419", False),
        ("en-", False),
        ("-en", False),
        ("", False),
        (" en", False),
        ("x-klingon", False),
        ("i-default", False),
        ("e\u0301n", False),
    ],
)
def test_valid_code(code: str, valid: bool) -> None:
    assert valid_code(code) is valid


_LANGS = sorted(lang.alpha_2 for lang in pycountry.languages if hasattr(lang, "alpha_2"))
_SCRIPTS = sorted(script.alpha_4 for script in pycountry.scripts)
_REGIONS = sorted(country.alpha_2 for country in pycountry.countries)
_CODE_RE = re.compile(
    "x-default|(?:{})(?:-(?:{}))?(?:-(?:{}))?".format(
        "|".join(_LANGS), "|".join(_SCRIPTS), "|".join(_REGIONS)
    ),
    re.IGNORECASE,
)
_part = st.one_of(
    st.sampled_from(_LANGS),
    st.sampled_from(_SCRIPTS),
    st.sampled_from(_REGIONS),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzUK_-", min_size=0, max_size=5),
)


@given(
    st.lists(_part, min_size=1, max_size=4).map("-".join),
    st.sampled_from([str.lower, str.upper, str.title, lambda s: s]),
)
def test_valid_code_agrees_with_a_regex_over_pycountry(code: str, case: object) -> None:
    assert callable(case)
    code = case(code)
    assert valid_code(code) is bool(_CODE_RE.fullmatch(code))


# -- declared ------------------------------------------------------------------------

PAGE = "https://example.com/en/page"


def _declared(head: str, headers: dict[str, list[str]] | None = None, body: str = "") -> object:
    response = HtmlResponse(
        url=PAGE,
        body=f"<html><head>{head}</head><body>{body}</body></html>".encode(),
        headers={name: [v.encode() for v in values] for name, values in (headers or {}).items()},
        encoding="utf-8",
    )
    base = "https://example.com/base/" if "<base" in head else PAGE
    return declared(parse_html(response), response, base)


@pytest.mark.parametrize(
    ("head", "headers", "body", "expected"),
    [
        pytest.param(
            '<link rel="alternate" hreflang="en" href="https://example.com/en/page">'
            '<link rel="alternate" hreflang="de" href="/de/seite">'
            '<link rel="alternate" hreflang="x-default" href="https://example.com/">',
            None,
            "",
            (
                ("en", "https://example.com/en/page"),
                ("de", "https://example.com/de/seite"),
                ("x-default", "https://example.com/"),
            ),
            id="head links, relative href resolved against the page",
        ),
        pytest.param(
            '<base href="https://example.com/base/">'
            '<link rel="alternate" hreflang="fr" href="fr.html">',
            None,
            "",
            (("fr", "https://example.com/base/fr.html"),),
            id="resolved against the base given",
        ),
        pytest.param(
            '<link rel="Alternate Stylesheet" hreflang="fr" href="/fr">'
            '<link REL="ALTERNATE" HREFLANG="  it-IT " href=" /it ">',
            None,
            "",
            (("fr", "https://example.com/fr"), ("it-IT", "https://example.com/it")),
            id="rel tokens in any case, code and href stripped",
        ),
        pytest.param(
            '<link rel="canonical" hreflang="fr" href="/fr">'
            '<link rel="alternate" href="/feed" type="application/rss+xml">'
            '<link rel="alternate" hreflang="es" href="">'
            '<link rel="alternate" hreflang="pt">'
            '<link rel="alternate" media="only screen" href="/m/">',
            None,
            "",
            (),
            id="no alternate rel, no hreflang, no href: nothing",
        ),
        pytest.param(
            '<link rel="alternate" hreflang="en-UK" href="/uk">',
            None,
            "",
            (("en-UK", "https://example.com/uk"),),
            id="an invalid code is given as written (verify judges it)",
        ),
        pytest.param(
            "",
            None,
            '<link rel="alternate" hreflang="fr" href="/fr">',
            (),
            id="a link in the body is not read",
        ),
        pytest.param(
            '<link rel="alternate" hreflang="fr" href="/fr">'
            '<link rel="alternate" hreflang="FR" href="/fr">'
            '<link rel="alternate" hreflang="fr" href="/fr2">',
            None,
            "",
            (("fr", "https://example.com/fr"), ("fr", "https://example.com/fr2")),
            id="the same pair once; the same code twice kept for verify",
        ),
        pytest.param(
            "",
            {
                "Link": [
                    '<https://example.com/de>; rel="alternate"; hreflang="de", '
                    "</fr?a=1,2>; rel=alternate; hreflang=fr, "
                    '<https://example.com/>; rel="canonical"',
                    '<https://example.com/es>; hreflang="es"; rel="nofollow alternate"',
                    '<https://example.com/pt>; rel="alternate"',
                    '<https://example.com/it>; rel="preload"; hreflang="it"',
                ]
            },
            "",
            (
                ("de", "https://example.com/de"),
                ("fr", "https://example.com/fr?a=1,2"),
                ("es", "https://example.com/es"),
            ),
            id="Link headers: several values, several headers, commas in a URL",
        ),
        pytest.param(
            '<base href="https://example.com/base/">'
            '<link rel="alternate" hreflang="en" href="https://example.com/en/page">',
            {"Link": ['<de>; rel="alternate"; hreflang="de"']},
            "",
            (("de", "https://example.com/en/de"), ("en", "https://example.com/en/page")),
            id="headers first, resolved against the URL and not <base>",
        ),
        pytest.param(
            '<link rel="alternate" hreflang="de" href="https://example.com/de">',
            {"Link": ['<https://example.com/de>; rel="alternate"; hreflang="DE"']},
            "",
            (("DE", "https://example.com/de"),),
            id="a pair in the header and the head, once",
        ),
    ],
)
def test_declared(
    head: str, headers: dict[str, list[str]] | None, body: str, expected: object
) -> None:
    assert _declared(head, headers, body) == expected


def test_declared_on_an_empty_page() -> None:
    response = HtmlResponse(url=PAGE, body=b"", encoding="utf-8")
    assert declared(parse_html(response), response, PAGE) == ()


# -- verify --------------------------------------------------------------------------

EN = "https://example.com/en/"
DE = "https://example.com/de/"
FR = "https://example.com/fr/"
ROOT = "https://example.com/"
CLUSTER = (("en", EN), ("de", DE), ("fr", FR), ("x-default", ROOT))


def _listed_all(url: str) -> str | None:
    return None if url.startswith("https://example.com/") else "not crawled"


def _listed_except(**reasons: str) -> object:
    table = {
        {"de": DE, "fr": FR, "en": EN, "root": ROOT}[name]: reason
        for name, reason in reasons.items()
    }

    def listed(url: str) -> str | None:
        return table.get(url, _listed_all(url))

    return listed


SORTED_CLUSTER = (("de", DE), ("en", EN), ("fr", FR), ("x-default", ROOT))


@pytest.mark.parametrize(
    ("pages", "listed", "hosts", "written", "problems"),
    [
        pytest.param(
            {EN: CLUSTER, DE: CLUSTER, FR: CLUSTER, ROOT: CLUSTER},
            _listed_all,
            frozenset(),
            {EN: SORTED_CLUSTER, DE: SORTED_CLUSTER, FR: SORTED_CLUSTER, ROOT: SORTED_CLUSTER},
            {},
            id="three languages and x-default, all good",
        ),
        pytest.param(
            {EN: CLUSTER, DE: CLUSTER, FR: (("fr", FR), ("x-default", ROOT)), ROOT: CLUSTER},
            _listed_all,
            frozenset(),
            {
                EN: (("de", DE), ("en", EN), ("x-default", ROOT)),
                DE: (("de", DE), ("en", EN), ("x-default", ROOT)),
                FR: (("fr", FR), ("x-default", ROOT)),
                ROOT: SORTED_CLUSTER,
            },
            {EN: [f"no return link from {FR}"], DE: [f"no return link from {FR}"]},
            id="a missing return link: fr and root still pair",
        ),
        pytest.param(
            {EN: CLUSTER, DE: CLUSTER, FR: CLUSTER},
            _listed_except(root="noindex"),
            frozenset(),
            {
                EN: (("de", DE), ("en", EN), ("fr", FR)),
                DE: (("de", DE), ("en", EN), ("fr", FR)),
                FR: (("de", DE), ("en", EN), ("fr", FR)),
            },
            {
                EN: [f"alternate {ROOT} is noindex"],
                DE: [f"alternate {ROOT} is noindex"],
                FR: [f"alternate {ROOT} is noindex"],
            },
            id="a noindex alternate",
        ),
        pytest.param(
            {EN: (("en", EN), ("de", DE)), DE: (("en", EN), ("de", DE))},
            # de in pages though not listed: given no alternates, judged as one.
            _listed_except(de=f"canonicalised to {EN}"),
            frozenset(),
            {},
            {EN: [f"alternate {DE} is canonicalised to {EN}"]},
            id="a canonicalised alternate: en is alone, nothing written",
        ),
        pytest.param(
            {
                EN: (("en", EN), ("de", DE), ("en-UK", FR)),
                DE: (("en", EN), ("de", DE), ("en-UK", FR)),
                FR: (("en", EN), ("de", DE), ("en-UK", FR)),
            },
            _listed_all,
            frozenset(),
            {EN: (("de", DE), ("en", EN)), DE: (("de", DE), ("en", EN))},
            {
                EN: ["invalid code 'en-UK'"],
                DE: ["invalid code 'en-UK'"],
                # fr's self-reference is under the invalid code: it writes nothing
                # and no one writes it.
                FR: [
                    "invalid code 'en-UK'",
                    f"no valid return link from {EN}",
                    f"no valid return link from {DE}",
                ],
            },
            id="an invalid code",
        ),
        pytest.param(
            {
                EN: (("en", EN), ("de", DE), ("de", FR)),
                DE: (("en", EN), ("de", DE)),
                FR: (("en", EN), ("de", FR)),
            },
            _listed_all,
            frozenset(),
            {},
            {
                EN: ["two URLs for 'de'"],
                DE: [f"no valid return link from {EN}"],
                FR: [f"no valid return link from {EN}"],
            },
            id="a code given to two URLs: both left out",
        ),
        pytest.param(
            {EN: (("en", EN), ("de", "https://example.de/"))},
            _listed_all,
            frozenset(),
            {},
            {
                EN: [
                    "alternate https://example.de/ is on another host "
                    "(not verified; --alternate-host writes it)"
                ]
            },
            id="a cross-host alternate, not named",
        ),
        pytest.param(
            {EN: (("en", EN), ("de", "https://example.de/"), ("fr", "http://example.fr:8080/"))},
            _listed_all,
            frozenset({"example.de", "EXAMPLE.FR"}),
            {EN: (("de", "https://example.de/"), ("en", EN), ("fr", "http://example.fr:8080/"))},
            {},
            id="cross-host alternates named: written as declared, unverified",
        ),
        pytest.param(
            {EN: (("en", EN), ("de", "http://example.com/de/"))},
            _listed_all,
            frozenset(),
            {},
            {EN: ["alternate http://example.com/de/ is not crawled"]},
            id="http and https of one host are one site: verified, not another host",
        ),
        pytest.param(
            {
                EN: (("de", DE), ("fr", FR)),
                DE: (("en", EN), ("de", DE), ("fr", FR)),
                FR: (("en", EN), ("de", DE), ("fr", FR)),
            },
            _listed_all,
            frozenset(),
            {DE: (("de", DE), ("fr", FR)), FR: (("de", DE), ("fr", FR))},
            {
                EN: ["does not list itself"],
                DE: [f"alternate {EN} does not list itself"],
                FR: [f"alternate {EN} does not list itself"],
            },
            id="a page not declaring itself: not written, and not written by others",
        ),
        pytest.param(
            {EN: (("en", EN), ("x-default", EN))},
            _listed_all,
            frozenset(),
            {},
            {},
            id="only itself (twice): nothing written, nothing wrong",
        ),
        pytest.param(
            {EN: (("en", EN), ("de", DE)), DE: (("en", EN), ("de", DE), ("en", FR))},
            _listed_all,
            frozenset(),
            {},
            {EN: [f"no valid return link from {DE}"], DE: ["two URLs for 'en'"]},
            id="the return link under a doubled code is no return link",
        ),
        pytest.param(
            {
                EN: (("en", EN), ("de", DE)),
                DE: (("en", EN), ("de-XX", DE)),
            },
            _listed_all,
            frozenset(),
            {},
            {
                EN: [f"alternate {DE} does not list itself with a valid code"],
                DE: ["invalid code 'de-XX'"],
            },
            id="a self-reference under an invalid code",
        ),
        pytest.param(
            {EN: (("en", EN), ("de", DE), ("de", DE), ("DE", DE))},
            _listed_except(de="not found"),
            frozenset(),
            {},
            {EN: [f"alternate {DE} is not found"]},
            id="a repeated pair judged and said once",
        ),
        pytest.param(
            {EN: (), DE: ()},
            _listed_all,
            frozenset(),
            {},
            {},
            id="no declarations",
        ),
    ],
)
def test_verify(
    pages: dict[str, tuple[tuple[str, str], ...]],
    listed: object,
    hosts: frozenset[str],
    written: dict[str, tuple[tuple[str, str], ...]],
    problems: dict[str, list[str]],
) -> None:
    assert callable(listed)
    verdict = verify(pages, listed, hosts)
    assert verdict.written == written
    assert verdict.problems == problems
    assert pickle.loads(pickle.dumps(verdict)) == verdict


def test_verify_asks_listed_once_per_url() -> None:
    asked: list[str] = []

    def listed(url: str) -> str | None:
        asked.append(url)
        return None

    verify({EN: CLUSTER, DE: CLUSTER, FR: CLUSTER, ROOT: CLUSTER}, listed)
    assert sorted(asked) == sorted({DE, FR, ROOT, EN})


_SITE = [f"https://example.com/{n}" for n in range(5)]
_declaration = st.tuples(
    st.sampled_from(["en", "de", "fr", "en-UK", "x-default"]), st.sampled_from(_SITE)
)


@given(
    st.dictionaries(st.sampled_from(_SITE), st.lists(_declaration, max_size=6)),
    st.sets(st.sampled_from(_SITE)),
)
def test_what_is_written_on_one_site_is_symmetric(
    pages: dict[str, list[tuple[str, str]]], unlisted: set[str]
) -> None:
    verdict = verify(
        {url: tuple(decl) for url, decl in pages.items() if url not in unlisted},
        lambda url: "noindex" if url in unlisted else None,
    )
    for page, pairs in verdict.written.items():
        hrefs = {href for _, href in pairs}
        assert page in hrefs
        assert len(hrefs) > 1
        assert all(valid_code(code) for code, _ in pairs)
        assert list(pairs) == sorted(pairs, key=lambda p: (p[0].lower(), p[1]))
        codes = [code.lower() for code, _ in pairs]
        for code in set(codes):
            assert len({h for c, h in pairs if c.lower() == code}) == 1
        for href in hrefs - {page}:
            assert href not in unlisted
            assert page in {h for _, h in verdict.written[href]}
