"""Who the crawl says it is: the product token of its User-Agent, and the agents
whose robots directives apply to it.

Sites name a crawler in robots.txt (``User-agent: AcmeBot``) and in robots meta tags
(``<meta name="acmebot" ...>``) by its *product token*, the first word of its
User-Agent header without the version (RFC 9309, section 2.2.1):

- ``AcmeBot/1.0 (+https://acme.example/bot)`` -> ``AcmeBot``;
- the "compatible" form that many crawlers send so that sites serve them what a
  browser gets, ``Mozilla/5.0 (compatible; AcmeBot/1.0; +https://acme.example/bot)``,
  names the crawler inside the comment: its token is ``AcmeBot`` too, not
  ``Mozilla``.

A product token is made of letters, digits, ``_`` and ``-`` (RFC 9309 allows letters,
``_`` and ``-``; digits are accepted as well, since real crawler names carry them).
``ROBOTSTXT_USER_AGENT`` (``--robots-agent``) sets the token outright.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
_LEADING_TOKEN = re.compile(r"[A-Za-z0-9_-]*")
# "compatible;" inside a parenthesised comment, then the crawler's product.
_COMPATIBLE = re.compile(r"\([^)]*?\bcompatible\s*;\s*([A-Za-z0-9_-]+)", re.IGNORECASE)


def is_product_token(text: str) -> bool:
    """Whether *text* is a valid product token: letters, digits, ``_`` and ``-``."""
    return _TOKEN.fullmatch(text) is not None


def product_token(user_agent: str) -> str:
    """The product token of a User-Agent string: ``Foo/1.0 (+url)`` -> ``Foo``, and
    ``Mozilla/5.0 (compatible; Foo/1.0; +url)`` -> ``Foo``. The token is the leading
    run of letters, digits, ``_`` and ``-`` of the product's name (empty when the
    User-Agent has none)."""
    text = user_agent.strip()
    if not text:
        return ""
    first = text.split()[0].split("/")[0]
    if first.lower() == "mozilla":
        compatible = _COMPATIBLE.search(text)
        if compatible is not None:
            return compatible.group(1)
    match = _LEADING_TOKEN.match(first)
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
