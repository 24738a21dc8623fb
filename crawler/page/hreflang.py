"""hreflang: the alternates a page declares, and which of them hold up, as Google reads
them (https://developers.google.com/search/docs/specialty/international/localized-versions).
:func:`declared` reads one page's during the crawl; :func:`verify`, once it is over, says
for each listed page what to write and what is wrong, by the rules and in the words of
docs/rich.md. So on the crawl's own site P writes X exactly when X writes P; a page that
does not list itself is not repaired (we do not make up its code). Codes are written as
declared, a page's pairs sorted by code (case-insensitively), then href."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import pycountry
from scrapy.http import Response

from crawler.core.urls import host_port, site_of
from crawler.page.links import clean_href, link_headers

__all__ = ["Verdict", "declared", "valid_code", "verify"]

X_DEFAULT = "x-default"


def valid_code(code: str) -> bool:
    """Whether Google accepts the hreflang value: ``x-default``, or an ISO 639-1 language,
    then optionally an ISO 15924 script and an ISO 3166-1 alpha-2 region, joined by ``-``,
    in any case (``en``, ``en-gb``, ``zh-Hant-TW``; not ``en-UK``, ``eng``, ``en_GB``,
    ``de-DE-x``, nor a value with spaces around it)."""
    if not code.isascii():
        return False
    lowered = code.lower()
    # Each part in pycountry's tables, which it reads on the first lookup.
    found = re.fullmatch(r"([a-z]{2})(?:-([a-z]{4}))?(?:-([a-z]{2}))?", lowered)
    return lowered == X_DEFAULT or bool(
        found
        and pycountry.languages.get(alpha_2=found[1])
        and (found[2] is None or pycountry.scripts.get(alpha_4=found[2]))
        and (found[3] is None or pycountry.countries.get(alpha_2=found[3]))
    )


# -- declarations of one page ------------------------------------------------------


def declared(root: Any, response: Response, base: str) -> tuple[tuple[str, str], ...]:
    """The (code, href) alternates one page declares, each pair once, in order: ``Link``
    headers, against the response's URL (RFC 8288, 3.1: ``<base href>`` does not apply),
    then the head's ``<link>`` (Google reads none in the body), against *base*. Codes as
    written, stripped; hrefs absolute, not normalised."""
    found: list[tuple[str, str]] = []
    for target, params in link_headers(response):
        if "alternate" not in params.get("rel", "").lower().split():
            continue
        code = params.get("hreflang")
        href = clean_href(target)
        if code is not None and href:
            found.append((code.strip(), urljoin(response.url, href)))

    if root is not None and hasattr(root, "xpath"):
        for link in root.xpath("/html/head/link[@rel][@hreflang][@href]"):
            if "alternate" not in link.get("rel", "").lower().split():
                continue
            href = clean_href(link.get("href", ""))
            if href:
                found.append((link.get("hreflang", "").strip(), urljoin(base, href)))
    return tuple(_once(found))


def _once(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """*pairs* without repeats (the code compared case-insensitively), in order."""
    first: dict[tuple[str, str], tuple[str, str]] = {}
    for code, href in pairs:
        first.setdefault((code.lower(), href), (code, href))
    return list(first.values())


# -- the cluster check -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :func:`verify` found: *written*, page -> the (code, href) alternates to write,
    itself included, sorted by code; *problems*, page -> what is wrong with its
    declarations, each once, in order. A page with none is absent from each."""

    written: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class _Page:
    """One page's declarations, read once: each pair once, invalid codes and codes given
    to two URLs left out, and whether it lists itself."""

    valid: list[tuple[str, str]]  # valid codes given to one URL each, in order
    valid_hrefs: set[str]
    declared_hrefs: set[str]  # every href it declares, whatever the code
    lists_self: bool  # declares its own URL, with any code
    self_ok: bool  # ... with a valid code of its own
    problems: list[str]


def _read(url: str, declarations: Sequence[tuple[str, str]]) -> _Page:
    pairs = _once(declarations)
    problems: list[str] = []
    hrefs_of: dict[str, set[str]] = {}
    for code, href in pairs:
        if valid_code(code):
            hrefs_of.setdefault(code.lower(), set()).add(href)
        else:
            problems.append(f"invalid code {code!r}")
    doubled: set[str] = set()
    for code, _ in pairs:
        lowered = code.lower()
        if len(hrefs_of.get(lowered, ())) > 1 and lowered not in doubled:
            doubled.add(lowered)
            problems.append(f"two URLs for {code!r}")
    valid = [(c, h) for c, h in pairs if c.lower() in hrefs_of and c.lower() not in doubled]
    valid_hrefs = {h for _, h in valid}
    declared_hrefs = {h for _, h in pairs}
    lists_self = url in declared_hrefs
    if pairs and not lists_self:
        problems.append("does not list itself")
    return _Page(valid, valid_hrefs, declared_hrefs, lists_self, url in valid_hrefs, problems)


def verify(
    pages: Mapping[str, Sequence[tuple[str, str]]],
    listed: Callable[[str], str | None],
    alternate_hosts: frozenset[str] = frozenset(),
) -> Verdict:
    """Check every page's hreflang cluster (docs/rich.md's rules). *pages*: each
    listed page's URL -> the (code, href) pairs it declares, all normalised; *listed*: for
    a URL, None when it is listed, else why not (``"noindex"``...); *alternate_hosts*:
    lowercase host names whose alternates are written unverified."""
    read = {url: _read(url, decl) for url, decl in pages.items()}
    reason = functools.cache(listed)  # each URL asked once
    hosts = frozenset(h.lower() for h in alternate_hosts)
    written: dict[str, tuple[tuple[str, str], ...]] = {}
    problems: dict[str, list[str]] = {}
    for url in sorted(read):
        if reason(url) is not None:
            continue  # not listed after all: nothing of it is written
        page = read[url]
        notes = list(page.problems)
        keep: list[tuple[str, str]] = []
        judged: dict[str, bool] = {}  # member -> kept, each judged once
        site = site_of(url)
        for code, href in page.valid:
            if href == url:
                keep.append((code, href))
                continue
            if href not in judged:
                judged[href] = _member(url, href, site, read, reason, hosts, notes)
            if judged[href]:
                keep.append((code, href))
        if page.self_ok and any(href != url for _, href in keep):
            written[url] = tuple(sorted(keep, key=lambda pair: (pair[0].lower(), pair[1])))
        unique = list(dict.fromkeys(notes))
        if unique:
            problems[url] = unique
    return Verdict(written, problems)


def _member(
    url: str,
    href: str,
    site: tuple[str, int | None] | None,
    read: Mapping[str, _Page],
    reason: Callable[[str], str | None],
    hosts: frozenset[str],
    notes: list[str],
) -> bool:
    """Whether the alternate *href* of the page *url* is written (docs/rich.md); a
    reason added to *notes* when it is not."""
    why = reason(href)
    if site_of(href) != site and why is not None:
        found = host_port(href)
        if found is not None and found[0] in hosts:
            return True
        if found is not None:
            notes.append(
                f"alternate {href} is on another host (not verified; --alternate-host writes it)"
            )
            return False
    if why is not None:
        notes.append(f"alternate {href} is {why}")
        return False
    other = read.get(href)
    if other is None or url not in other.declared_hrefs:
        notes.append(f"no return link from {href}")
        return False
    if url not in other.valid_hrefs:
        notes.append(f"no valid return link from {href}")
        return False
    if not other.self_ok:
        valid = " with a valid code" if other.lists_self else ""
        notes.append(f"alternate {href} does not list itself{valid}")
        return False
    return True
