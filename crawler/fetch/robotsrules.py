"""robots.txt rules with RFC 9309 semantics, for :mod:`crawler.fetch.robots`.

The parser (:class:`RobotsTxtParser`, ``ROBOTSTXT_PARSER``) *replaces* Protego's line
handling and group selection and *keeps* Protego for matching (its wildcards, ``$``,
longest match, percent-encoding and speed: the selected rules are handed to it as one
``*`` group). Which group applies, and where this differs from Protego (unknown lines,
``crawl-delay``, an agent name that must equal ours, a cap on wildcard rules, any URL
answered): docs/crawling.md, "robots.txt, RFC 9309" and "Which robots.txt group
applies".
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self
from urllib.parse import quote

from protego import Protego
from scrapy.robotstxt import RobotParser
from scrapy.utils.python import to_unicode

from crawler.core.agent import is_product_token, product_token
from crawler.core.decisions import ROBOTS, RULE_ROBOTS, Refusal

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"
# Group names of the start URL's robots.txt, as recorded in sitemap/robots/group.
EVERY_AGENT = "*"
NO_GROUP = "none"

#: Wildcard rules (with ``*`` or a final ``$``) kept for one agent: each costs a scan
#: of the URL per question (at most about 5 ms a question on a 2 KB URL for all of
#: them), where plain prefixes are ruled out together. Real files have a few dozen.
MAX_WILDCARD_RULES = 1000


# -- the parser: line handling and group selection (RFC 9309), matching by Protego ------

_EOL = re.compile(r"\r\n|\r|\n")
_AGENT = re.compile(r"[A-Za-z0-9_-]*")
# Characters that end a line for Protego (str.splitlines) but not for RFC 9309: escaped
# in the rules handed to it, as its own percent-encoding would write them.
_PROTEGO_EOL = {ord(c): quote(c) for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}

_USER_AGENT, _ALLOW, _DISALLOW, _SITEMAP, _CRAWL_DELAY = range(5)
_KEYS = {
    "user-agent": _USER_AGENT,
    "useragent": _USER_AGENT,
    "user agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "dissallow": _DISALLOW,
    "dissalow": _DISALLOW,
    "disalow": _DISALLOW,
    "diasllow": _DISALLOW,
    "disallaw": _DISALLOW,
    "sitemap": _SITEMAP,
    "site-map": _SITEMAP,
    "crawl-delay": _CRAWL_DELAY,
    "crawl delay": _CRAWL_DELAY,
}


@dataclass(eq=False)
class _Group:
    agents: list[str] = field(default_factory=list)
    # (allow, pattern, line number in the file)
    rules: list[tuple[bool, str, int]] = field(default_factory=list)
    delays: list[str] = field(default_factory=list)


def _key_value(line: str) -> tuple[int | None, str] | None:
    """(key, value) of one line (None: a known key; the value stripped), or None for
    a blank or unreadable line."""
    line = line.split("#", 1)[0].strip()
    if not line:
        return None
    key, colon, value = line.partition(":")
    key = " ".join(key.split()).lower()
    if colon and (key in _KEYS or " " not in key):
        return _KEYS.get(key), value.strip()
    # No colon, or one inside the value ("Sitemap https://..."): "<key> <value>".
    words = line.split()
    for n in (1, 2):
        known = _KEYS.get(" ".join(words[:n]).lower())
        if known is not None and len(words) > n:
            return known, " ".join(words[n:])
    return (None, value.strip()) if colon else None


def _agent_name(value: str) -> str:
    """The agent a ``user-agent`` line names (lowercase; "" for none)."""
    if value.startswith("*") and (len(value) == 1 or value[1].isspace()):
        return EVERY_AGENT
    match = _AGENT.match(value)
    return match.group(0).lower() if match else ""


def _delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class RobotsRules:
    """A parsed robots.txt: its groups and ``Sitemap:`` lines (see the module
    docstring), and, per product token, the group that applies."""

    def __init__(self, text: str) -> None:
        self.groups: list[_Group] = []
        self.sitemaps: list[str] = []
        self._selected: dict[str, tuple[str, Protego | None, float | None, int]] = {}
        current: _Group | None = None
        in_rules = False
        for number, line in enumerate(_EOL.split(text), 1):
            found = _key_value(line)
            if found is None:
                continue
            key, value = found
            if key == _USER_AGENT:
                if current is None or in_rules:
                    current = _Group()
                    self.groups.append(current)
                    in_rules = False
                name = _agent_name(value)
                if name:
                    current.agents.append(name)
            elif key in (_ALLOW, _DISALLOW):
                if current is None:
                    continue  # a rule outside any group
                in_rules = True
                if value:
                    current.rules.append((key == _ALLOW, value, number))
            elif key == _CRAWL_DELAY and current is not None:
                # Not RFC 9309's, but written as a line of a group like a rule (a
                # "Crawl-delay"-only group for one bot must not reach the next one).
                in_rules = True
                current.delays.append(value)
            elif key == _SITEMAP and value:
                self.sitemaps.append(value)
            # Anything else is another record: ignored, and the group goes on.

    @classmethod
    def parse(cls, body: bytes) -> Self:
        """Parse a robots.txt body (UTF-8; undecodable bytes are dropped)."""
        return cls(body.decode("utf-8-sig", errors="ignore"))

    def group_name(self, token: str) -> str:
        """The group that applies to *token*: the token itself (a group naming it,
        in any case), ``*`` or ``none``."""
        return self._select(token)[0]

    def allowed(self, url: str, token: str) -> bool:
        """Whether *url* may be fetched by *token*; answered for any URL (see the
        module docstring), never raised."""
        matcher = self._select(token)[1]
        return matcher is None or matcher.can_fetch(_matchable(url), EVERY_AGENT)

    def deciding_rule(self, url: str, token: str) -> tuple[str, int] | None:
        """The line of *token*'s group that decides *url* (RFC 9309 2.2.2: the longest
        match; ``Allow`` on a tie), as ``("Disallow: /private/", line number)``; None
        when no rule matches. For ``explain``: one Protego per rule, not for a crawl."""
        matchable = _matchable(url)
        best: tuple[int, bool, str, int] | None = None
        for group in self._groups(token)[1]:
            for allow, pattern, number in group.rules:
                single = Protego.parse(
                    f"User-agent: *\nDisallow: {pattern.translate(_PROTEGO_EOL)}\n"
                )
                if single.can_fetch(matchable, EVERY_AGENT):
                    continue  # no match
                rank = (len(pattern), allow)
                if best is None or rank > best[:2]:
                    best = (len(pattern), allow, pattern, number)
        if best is None:
            return None
        return f"{'Allow' if best[1] else 'Disallow'}: {best[2]}", best[3]

    def crawl_delay(self, token: str) -> float | None:
        return self._select(token)[2]

    def dropped(self, token: str) -> int:
        """Wildcard rules of *token*'s groups past :data:`MAX_WILDCARD_RULES`, not
        obeyed."""
        return self._select(token)[3]

    def _groups(self, token: str) -> tuple[str, list[_Group]]:
        """The groups that apply to *token*, and their name: those naming it, else ``*``'s."""
        key = token.lower()
        if key and (groups := [g for g in self.groups if key in g.agents]):
            return token, groups
        return EVERY_AGENT, [g for g in self.groups if EVERY_AGENT in g.agents]

    def _select(self, token: str) -> tuple[str, Protego | None, float | None, int]:
        key = token.lower()
        selected = self._selected.get(key)
        if selected is None:
            name, groups = self._groups(token)
            if not groups:
                selected = (NO_GROUP, None, None, 0)
            else:
                lines = [f"User-agent: {EVERY_AGENT}"]
                wildcards = dropped = 0
                for group in groups:
                    for allow, pattern, _ in group.rules:
                        if "*" in pattern or pattern.endswith("$"):
                            wildcards += 1
                            if wildcards > MAX_WILDCARD_RULES:
                                dropped += 1
                                continue
                        pattern = pattern.translate(_PROTEGO_EOL)
                        lines.append(f"{'Allow' if allow else 'Disallow'}: {pattern}")
                if dropped:
                    logger.warning(
                        "robots.txt has %s wildcard rules for %s: the first %s are obeyed,"
                        " %s dropped",
                        wildcards,
                        name,
                        MAX_WILDCARD_RULES,
                        dropped,
                    )
                delays = [d for g in groups for v in g.delays if (d := _delay(v)) is not None]
                selected = (
                    name,
                    Protego.parse("\n".join(lines) + "\n"),
                    max(delays) if delays else None,
                    dropped,
                )
            self._selected[key] = selected
        return selected


# The scheme and authority of a URL, which rules never match: to where the path starts
# (RFC 3986: the first "/", "?" or "#"), whatever is inside (a "[::1" never closed).
URL_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
# A host that Protego's urlsplit always reads, put before the path it is given.
_ANY_HOST = "http://robots.invalid"
_SURROGATES = re.compile("[\ud800-\udfff]")


def _surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"%{code - 0xDC00:02X}"
    return quote(match.group().encode("utf-8", "surrogatepass"))


def _matchable(url: str) -> str:
    """*url* as Protego can always read it: its path and query behind a host
    urlsplit accepts, lone surrogates percent-encoded as the bytes they stand for."""
    url = _SURROGATES.sub(_surrogate, url)
    authority = URL_AUTHORITY.match(url)
    if authority is None:
        return url
    rest = url[authority.end() :]
    return _ANY_HOST + (rest if rest[:1] in ("/", "?", "#", "") else "/" + rest)


def _text(value: str | bytes) -> str:
    """A URL or agent given as bytes: undecodable bytes kept (as surrogates)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class RobotsTxtParser(RobotParser):
    """Scrapy's parser interface over :class:`RobotsRules` (``ROBOTSTXT_PARSER``).
    ``rp`` is the parsed file, as for Scrapy's Protego parser (``rp.sitemaps``)."""

    def __init__(self, body: bytes) -> None:
        self.rp = RobotsRules.parse(body)

    @classmethod
    def from_crawler(cls, crawler: Crawler, robotstxt_body: bytes) -> Self:
        return cls(robotstxt_body)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return self.rp.allowed(_text(url), _token(user_agent))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self.rp.crawl_delay(_token(user_agent))

    def group_name(self, user_agent: str | bytes) -> str:
        return self.rp.group_name(_token(user_agent))

    def dropped(self, user_agent: str | bytes) -> int:
        return self.rp.dropped(_token(user_agent))


def _token(user_agent: str | bytes) -> str:
    text = to_unicode(user_agent, errors="replace")
    return text if is_product_token(text) else product_token(text)


def robots_refusal(rp: RobotParser | None, url: str, token: str) -> Refusal | None:
    """robots.txt's refusal of *url* for *token*, or None: allowed, or no rules (none
    fetched, or unavailable: everything allowed, RFC 9309 2.3.1.3). The crawl's rule
    (:mod:`crawler.fetch.robots`), which ``explain`` puts a URL to."""
    if rp is None or rp.allowed(url, token):
        return None
    group = rp.group_name(token) if isinstance(rp, RobotsTxtParser) else NO_GROUP
    return Refusal(ROBOTS, RULE_ROBOTS, "robots", {"group": group})
