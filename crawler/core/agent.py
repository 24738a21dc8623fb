"""Who the crawl says it is: the product token of its User-Agent, and the agents
whose robots directives apply to it.

Sites name a crawler in robots.txt and robots meta tags by its *product token*, the
first word of its User-Agent without the version (RFC 9309, 2.2.1):
``AcmeBot/1.0 (+https://acme.example/bot)`` -> ``AcmeBot``, and so does the
"compatible" form, ``Mozilla/5.0 (compatible; AcmeBot/1.0; +https://...)``. A token is
letters, digits (which real names carry, though RFC 9309 has none), ``_`` and ``-``.
``ROBOTSTXT_USER_AGENT`` (``--robots-agent``) sets the token outright.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
# "compatible;" inside a parenthesised comment, then the crawler's product.
_COMPATIBLE = re.compile(r"\([^)]*?\bcompatible\s*;\s*([A-Za-z0-9_-]+)", re.IGNORECASE)


def is_product_token(text: str) -> bool:
    """Whether *text* is a valid product token: letters, digits, ``_`` and ``-``."""
    return _TOKEN.fullmatch(text) is not None


def product_token(user_agent: str) -> str:
    """The product token of a User-Agent string (empty when it has none)."""
    text = user_agent.strip()
    if not text:
        return ""
    first = text.split()[0].split("/")[0]
    if first.lower() == "mozilla" and (compatible := _COMPATIBLE.search(text)):
        return compatible.group(1)
    match = _TOKEN.match(first)
    return match.group(0) if match else ""


def token_of(user_agent: str, robots_user_agent: str | None) -> str:
    """The crawl's product token: ``ROBOTSTXT_USER_AGENT`` (*robots_user_agent*) when
    set, else the User-Agent's; a whole User-Agent string given as the former gives
    its token too."""
    return product_token(robots_user_agent or user_agent)


def robots_agents(user_agent: str, robots_user_agent: str | None) -> tuple[str, ...]:
    """The agents whose robots directives apply to the crawl (lowercase): every
    robot, Google's (whose rules sites write for every crawler), and our product
    token (``ROBOTSTXT_USER_AGENT``, or the User-Agent's)."""
    return ("robots", "googlebot", token_of(user_agent, robots_user_agent).lower())
