"""The robots.txt parser (line handling and group selection by RFC 9309, matching by
Protego), the product token, ``--robots-agent``, and the host guard's robots.txt
exception: no server, no crawl."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protego import Protego
from scrapy.http import Request

from crawler.core.agent import is_product_token, product_token, robots_agents, token_of
from crawler.fetch.hostguard import ROBOTS_TXT, HostGuardMiddleware, OffHostRequest
from crawler.fetch.robots import whole_lines
from crawler.fetch.robotsrules import MAX_WILDCARD_RULES, RobotsRules, RobotsTxtParser

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "sitemap-crawler"


def allowed(robots: str, path: str, token: str = TOKEN) -> bool:
    return RobotsRules(robots).allowed(f"http://h.test{path}", token)


# -- which group applies ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["s", "sitemap", "sitemap-", "crawler", "sitemap-crawler2"])
def test_a_group_whose_name_is_not_our_token_does_not_apply(name: str) -> None:
    robots = f"User-agent: {name}\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n"
    assert allowed(robots, "/page")
    assert not allowed(robots, "/private/x")
    assert RobotsRules(robots).group_name(TOKEN) == "*"
    # Protego matched these by prefix: the whole site was disallowed.
    if name in ("s", "sitemap", "sitemap-"):
        assert not Protego.parse(robots).can_fetch("http://h.test/page", TOKEN)


def test_our_group_is_matched_case_insensitively_and_merged() -> None:
    robots = (
        "User-agent: Sitemap-Crawler\nDisallow: /a/\n\n"
        "User-agent: *\nDisallow: /\n\n"
        "User-agent: SITEMAP-CRAWLER\nDisallow: /b/\nAllow: /b/open\n"
    )
    rules = RobotsRules(robots)
    assert rules.group_name(TOKEN) == TOKEN
    assert not allowed(robots, "/a/x")
    assert not allowed(robots, "/b/x")
    assert allowed(robots, "/b/open.html")
    assert allowed(robots, "/c")


def test_every_agent_groups_are_merged_and_none_means_allowed() -> None:
    robots = (
        "User-agent: *\nDisallow: /a/\n\n"
        "User-agent: other\nDisallow: /\n\n"
        "User-agent: *\nDisallow: /b/\n"
    )
    assert not allowed(robots, "/a/1") and not allowed(robots, "/b/1") and allowed(robots, "/c")
    assert RobotsRules("User-agent: other\nDisallow: /\n").group_name(TOKEN) == "none"
    assert allowed("User-agent: other\nDisallow: /\n", "/x")
    assert RobotsRules("").group_name(TOKEN) == "none"


def test_an_empty_group_for_us_allows_everything() -> None:
    robots = "User-agent: sitemap-crawler\nDisallow:\n\nUser-agent: *\nDisallow: /\n"
    assert allowed(robots, "/x")
    assert RobotsRules(robots).group_name(TOKEN) == TOKEN


def test_user_agent_line_values() -> None:
    # The name is the line's leading letters, digits, _ and -; "*" alone or before a
    # space is every agent.
    assert not allowed("User-agent: sitemap-crawler/1.0\nDisallow: /x\n", "/x")
    assert not allowed("User-agent: sitemap-crawler (our bot)\nDisallow: /x\n", "/x")
    assert not allowed("User-agent: * everyone\nDisallow: /x\n", "/x")
    assert allowed("User-agent: *crawler\nDisallow: /x\n", "/x")
    assert not allowed("useragent: sitemap-crawler\ndisallow /x\n", "/x")


# -- lines and groups -----------------------------------------------------------------------


def test_an_unknown_line_or_sitemap_line_does_not_end_a_group() -> None:
    robots = (
        "User-agent: otherbot\n"
        "Clean-param: ref /\n"
        "Sitemap: http://h.test/sitemap.xml\n"
        "User-agent: sitemap-crawler\n"
        "Noindex: /nothing/\n"
        "Disallow: /private/\n"
        "Host: h.test\n"
        "Disallow: /tmp/\n"
    )
    assert not allowed(robots, "/private/x", "otherbot")
    assert not allowed(robots, "/tmp/x")
    assert not allowed(robots, "/private/x")
    rules = RobotsRules(robots)
    assert rules.sitemaps == ["http://h.test/sitemap.xml"]
    # Protego split the group at the unknown line: otherbot lost its rules.
    assert Protego.parse(robots).can_fetch("http://h.test/private/x", "otherbot")


def test_a_user_agent_line_after_a_rule_starts_a_new_group() -> None:
    robots = "User-agent: a\nDisallow: /a/\nUser-agent: sitemap-crawler\nDisallow: /b/\n"
    assert allowed(robots, "/a/x") and not allowed(robots, "/b/x")
    assert not allowed(robots, "/a/x", "a") and allowed(robots, "/b/x", "a")


def test_rules_before_any_user_agent_belong_to_no_group() -> None:
    assert allowed("Disallow: /\nUser-agent: *\nDisallow: /x\n", "/y")


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_endings(eol: str) -> None:
    robots = eol.join(["User-agent: *", "Disallow: /a # a comment", "Allow: /a/b", ""])
    assert not allowed(robots, "/a/x") and allowed(robots, "/a/b") and allowed(robots, "/c")


def test_line_separators_inside_a_value_do_not_make_rules() -> None:
    # str.splitlines() would end the line at \x85 (Protego splits so): not RFC 9309.
    robots = "User-agent: *\nDisallow: /a\x85Disallow: /\n"
    assert allowed(robots, "/b")


def test_crawl_delay_is_the_largest_of_our_groups() -> None:
    robots = (
        "User-agent: sitemap-crawler\nCrawl-delay: 2\n\n"
        "User-agent: bingbot\nCrawl-delay: 60\n\n"
        "User-agent: sitemap-crawler\nCrawl-delay: 5\nCrawl-delay: nonsense\n\n"
        "User-agent: *\nCrawl-delay: 30\nDisallow: /x\n"
    )
    assert RobotsRules(robots).crawl_delay(TOKEN) == 5.0
    assert RobotsRules(robots).crawl_delay("other") == 30.0
    assert RobotsRules(robots).crawl_delay("bingbot") == 60.0
    # A group of only Crawl-delay ends at the next User-agent line.
    assert allowed(robots, "/x", "bingbot")
    assert allowed(robots, "/x")
    assert RobotsRules("User-agent: *\nDisallow: /\n").crawl_delay(TOKEN) is None


# -- what Protego does, kept ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("robots", "path", "expected"),
    [
        ("Disallow: /*.pdf$", "/files/a.pdf", False),
        ("Disallow: /*.pdf$", "/files/a.pdf?x=1", True),
        ("Disallow: /private\nAllow: /private/open", "/private/open.html", True),
        ("Disallow: /private/open\nAllow: /private", "/private/open.html", False),
        ("Allow: /page\nDisallow: /page", "/page", True),
        ("Disallow: /caf%C3%A9", "/café.html", False),
        ("Disallow: /café", "/caf%C3%A9.html", False),
        ("Disallow: /a%2fb", "/a%2Fb", False),
        ("Disallow: /*/secret", "/x/y/secret", False),
        ("Disallow: /", "/robots.txt", True),
    ],
)
def test_protego_matching_is_kept(robots: str, path: str, expected: bool) -> None:
    assert allowed("User-agent: sitemap-crawler\n" + robots + "\n", path) is expected


# -- hostile input: a bounded answer to every question ---------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/a?b",  # a bracketed host never closed
        "http://[zz]/a",  # not an IP address in the brackets
        "http://h.test/caf\udce9",  # a lone surrogate (undecodable bytes, surrogateescape'd)
        "http://h.test/\ud800x",
        "http://[::1/private/x",
    ],
)
def test_allowed_answers_malformed_urls(url: str) -> None:
    rules = RobotsRules("User-agent: *\nDisallow: /private/\nDisallow: /caf%E9\n")
    assert rules.allowed(url, TOKEN) is ("private" not in url and "caf" not in url)


def test_allowed_answers_non_utf8_bytes() -> None:
    rp = RobotsTxtParser(b"User-agent: *\nDisallow: /caf%E9\nDisallow: /private/\n")
    # The byte is requested as %E9 (Scrapy percent-encodes it): the rule for it applies.
    assert rp.allowed(b"http://h.test/caf\xe9", TOKEN) is False
    assert rp.allowed(b"http://h.test/\xff\xfe/x", TOKEN) is True
    assert rp.allowed(b"http://[::1/private/\xff", b"sitemap-crawler/\xff") is False


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.builds(lambda s: "http://" + s, st.text()),
        st.builds(lambda s: "http://[" + s, st.text()),
    ),
    st.binary(max_size=40),
)
def test_allowed_never_raises(url: str, raw: bytes) -> None:
    rules = RobotsRules("User-agent: *\nDisallow: /private/\nAllow: /*.pdf$\nDisallow: /*?\n")
    assert rules.allowed(url, TOKEN) in (True, False)
    rp = RobotsTxtParser(b"User-agent: *\nDisallow: /private/\n")
    assert rp.allowed(b"http://h.test/" + raw, raw) in (True, False)
    assert rp.allowed(url.encode("utf-8", "surrogatepass"), TOKEN) in (True, False)


def test_wildcard_rules_past_the_cap_are_dropped_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 20,000 wildcard rules (a hostile file under 500 KiB) cost 0.07 s a question on a
    # 2 KB URL: past MAX_WILDCARD_RULES of a group the rest are dropped (file order),
    # so a question tries at most that many wildcard patterns. Plain prefixes are all
    # kept (one startswith over all of them rules them out at once).
    from protego import _urlpattern

    extra = 50
    lines = ["User-agent: *", "Disallow: /plain-last/"]
    lines += [f"Disallow: /*{i:05d}x*q*z" for i in range(MAX_WILDCARD_RULES + extra)]
    lines += ["Disallow: /plain-after/"]
    rules = RobotsRules("\n".join(lines) + "\n")
    assert not allowed_by(rules, "/a/00000x/q/z")
    assert not allowed_by(rules, f"/a/{MAX_WILDCARD_RULES - 1:05d}x/q/z")
    assert allowed_by(rules, f"/a/{MAX_WILDCARD_RULES:05d}x/q/z")
    assert not allowed_by(rules, "/plain-after/x")
    assert not allowed_by(rules, "/plain-last/x")
    assert rules.dropped(TOKEN) == extra
    assert RobotsRules("User-agent: *\nDisallow: /*a\n").dropped(TOKEN) == 0
    # The work of one question: at most the kept wildcard patterns are tried.
    tried = [0]
    match = _urlpattern._URLPattern.match

    def counted(self: Any, url: str) -> bool:
        tried[0] += 1
        return match(self, url)

    monkeypatch.setattr(_urlpattern._URLPattern, "match", counted)
    assert allowed_by(rules, "/" + "y" * 2000)
    assert 0 < tried[0] <= MAX_WILDCARD_RULES


def allowed_by(rules: RobotsRules, path: str) -> bool:
    return rules.allowed(f"http://h.test{path}", TOKEN)


def test_scrapy_parser_interface() -> None:
    body = (
        b"\xef\xbb\xbfUser-agent: sitemap-crawler\nDisallow: /x\nCrawl-delay: 1\nSitemap: /s.xml\n"
    )
    rp = RobotsTxtParser(body)
    assert not rp.allowed(b"http://h.test/x", b"sitemap-crawler")
    # A whole User-Agent string is reduced to its token.
    assert not rp.allowed("http://h.test/x", "sitemap-crawler/1.0 (+https://x)")
    assert rp.allowed("http://h.test/y", TOKEN)
    assert rp.crawl_delay(TOKEN) == 1.0
    assert rp.group_name(TOKEN) == TOKEN
    assert list(rp.rp.sitemaps) == ["/s.xml"]  # read by the ledger pipeline


# -- the 500 KiB limit ---------------------------------------------------------------------


def test_whole_lines() -> None:
    body = b"User-agent: *\nDisallow: /archive/\n"
    cut = body.index(b"/archive/") + 1  # just after "Disallow: /"
    assert whole_lines(body, cut) == b"User-agent: *\n"
    assert whole_lines(body, len(body) - 1) == body[:-1]  # the line ends at the limit
    assert whole_lines(body, len(body)) == body
    assert whole_lines(b"no line ends", 5) == b""
    assert whole_lines(b"a\r\nb", 2) == b"a\r"
    # A stopped download shorter than the limit loses its incomplete last line too.
    assert whole_lines(b"a\nDisallow: /x", 100) == b"a\n"


# -- the product token -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ua", "token"),
    [
        ("AcmeBot/1.0 (+https://acme.example/bot)", "AcmeBot"),
        ("Mozilla/5.0 (compatible; AcmeBot/1.0; +https://acme.example/bot)", "AcmeBot"),
        ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "bingbot"),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; "
            "+http://www.google.com/bot.html) Chrome/120.0 Safari/537.36",
            "Googlebot",
        ),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", "Mozilla"),
        ("sitemap-crawler/0.1 (+https://x)", "sitemap-crawler"),
        ("Googlebot", "Googlebot"),
        ("  A/1 B", "A"),
        ("Foo.Bar/2", "Foo"),
        ("", ""),
    ],
)
def test_product_token(ua: str, token: str) -> None:
    assert product_token(ua) == token


def test_token_of_and_robots_agents() -> None:
    assert token_of("AcmeBot/1.0", None) == "AcmeBot"
    assert token_of("AcmeBot/1.0", "Other") == "Other"
    assert token_of("x", "Other/2.0") == "Other"
    assert robots_agents("Mozilla/5.0 (compatible; AcmeBot/1.0)", None) == (
        "robots",
        "googlebot",
        "acmebot",
    )


@pytest.mark.parametrize(
    ("text", "valid"),
    [("AcmeBot", True), ("a_b-2", True), ("a b", False), ("a/1", False), ("", False), ("é", False)],
)
def test_is_product_token(text: str, valid: bool) -> None:
    assert is_product_token(text) is valid


@pytest.mark.parametrize("token", ["Acme Bot", "AcmeBot/1.0", "*"])
def test_a_bad_robots_agent_is_a_usage_error(token: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "crawler.cli",
            "crawl",
            "http://127.0.0.1:9/",
            "--robots-agent",
            token,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "--robots-agent" in result.stderr and "product token" in result.stderr


# -- the host guard ------------------------------------------------------------------------------


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str) -> None:
        self.values[key] = self.values.get(key, 0) + 1


def test_the_host_guard_lets_robots_txt_through_and_nothing_else() -> None:
    guard = HostGuardMiddleware(("127.0.0.1", 8000), _Stats())  # type: ignore[arg-type]
    robots = {ROBOTS_TXT: True}
    guard.process_request(Request("http://www.example.test/robots.txt", meta=robots))
    guard.process_request(Request("https://www.example.test/robots.txt?x=1", meta=robots))
    guard.process_request(Request("http://127.0.0.1:8000/page.html"))
    # A hop of a robots.txt fetch goes anywhere (RFC 9309 2.3.1.2): another path too.
    hop = {**robots, "redirect_urls": ["http://127.0.0.1:8000/robots.txt"]}
    guard.process_request(Request("http://cdn.example.test/static/robots-main.txt", meta=hop))
    for request in (
        Request("http://www.example.test/robots.txt"),  # not a robots.txt fetch
        Request("http://www.example.test/other.txt", meta=robots),
        Request("http://www.example.test/robots.txt/x", meta=robots),
        Request("http://www.example.test/page.html"),
        # Redirected from something else than a robots.txt.
        Request(
            "http://www.example.test/other.txt",
            meta={**robots, "redirect_urls": ["http://127.0.0.1:8000/page.html"]},
        ),
    ):
        with pytest.raises(OffHostRequest):
            guard.process_request(request)


def test_the_middleware_answers_a_malformed_url_from_the_rules_it_has() -> None:
    # What the crawl lists without fetching (a page's images) is asked through
    # StrictRobotsTxtMiddleware.allows: a "[" host never closed raised in urlsplit.
    from crawler.fetch.robots import StrictRobotsTxtMiddleware

    middleware = object.__new__(StrictRobotsTxtMiddleware)
    middleware._parsers = {"http://[::1": RobotsTxtParser(b"User-agent: *\nDisallow: /private/\n")}
    middleware._robotstxt_useragent = TOKEN
    assert middleware.allows("http://[::1/a?b")
    assert not middleware.allows("http://[::1/private/x")
    assert middleware.allows("HTTP://[::1/x/\udcff")
    assert middleware.allows("http://[zz]/private/x")  # no rules fetched for it
    assert middleware.allows("no scheme at all")
