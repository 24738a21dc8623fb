"""The judge's verdict book: what a fetched page makes of its URL, in one ordered list.

A response that is no redirect (:mod:`crawler.crawl.judge`) is put to the rules of
:class:`VerdictBook` in their order there, its answer's first (host, status, type); the
first against it decides (a :class:`crawler.core.decisions.Refusal`), and a page every
rule lets pass is ``listed`` (docs/crawling.md). Declared as the frontier's rules
(:mod:`crawler.crawl.rulebook`); ``explain`` replays the book on what the ledger kept
of a page (:meth:`Read.kept`), or on an unseen URL with the rules that need no page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler.core import decisions as d
from crawler.core.decisions import Refusal
from crawler.core.urls import site_of, url_key
from crawler.sitemaps.entry import check_loc

if TYPE_CHECKING:
    from crawler.core.publicurl import PublicUrls
    from crawler.page.links import RobotsDirectives

#: Why the site's "not found" page served with 200 is a soft 404.
NOT_FOUND_PAGE = "the page the site serves for an address that cannot exist"
_NOINDEX = re.compile(r"noindex \(([^)]*)\)")


@dataclass(frozen=True, slots=True)
class Read:
    """What a fetched page says of itself: its *status*, *media type*, whether its body
    read as *HTML*, where it says *noindex*, its *canonical* (in crawl address space;
    None: none, or ignored), whether it is the site's *not found page*, and what its
    text *says* when it reads as "not found"."""

    status: int = 200
    media_type: str = ""
    html: bool = True
    noindex: str | None = None
    canonical: str | None = None
    not_found_page: bool = False
    says: str | None = None

    @classmethod
    def kept(cls, row: Mapping[str, Any], public: PublicUrls) -> Read:
        """What the ledger kept of a fetched page: ``status``, ``content_type`` (a page
        not ``non-html`` passed the type verdict), ``robots``, the ``target`` of a
        ``canonical``, and for what its text said, the reason of a ``soft-404``."""
        noindex = _NOINDEX.match(row.get("robots") or "")
        target = row["target"] if row["decision"] == d.CANONICAL else None
        soft = row["decision"] == d.SOFT_404 and str(row["reason"] or "")
        return cls(
            status=row["status"],
            media_type=media_type(row["content_type"]),
            html=row["decision"] != d.NON_HTML,
            noindex=noindex.group(1) if noindex else None,
            canonical=public.to_crawl(target) if target else None,
            not_found_page=soft == d.render("soft-404", {"why": NOT_FOUND_PAGE}),
            says=soft.removeprefix(d.render("soft-404", {"why": ""})) if soft else None,
        )


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type header, lower case ("" for none)."""
    return (content_type or "").split(";")[0].strip().lower()


def directives(robots: RobotsDirectives) -> str | None:
    """The directives that apply to us, as the ledger's ``robots`` keeps them:
    ``noindex (meta robots), nofollow (X-Robots-Tag)``; None when there are none."""
    found = [
        f"{name} ({source})"
        for name, source in (("noindex", robots.noindex), ("nofollow", robots.nofollow))
        if source
    ]
    return ", ".join(found) or None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A rule of the book, as :class:`crawler.crawl.rulebook.Rule`: its *name* (the kind
    of its refusals), the *decision* it makes, whether it *reads the page* (else the
    URL alone decides), the *facts* of its verdict against a page (None: it passes; a
    ``target`` is the page it stands for) and why a page passes (*passes*)."""

    name: str
    decision: str
    reads_page: bool
    facts: Callable[[str, Read], dict[str, Any] | None]
    passes: str

    def check(self, url: str, read: Read) -> Refusal | None:
        if (values := self.facts(url, read)) is None:
            return None
        return Refusal(self.decision, self.name, self.name, values, values.get("target"))


class VerdictBook:
    """The verdicts of one crawl from *start_url*, in order (see the module docstring);
    *content*: whether a page that says it is not there is a soft 404; *types*: the
    others than HTML whose pages are listed (``SITEMAP_LISTED_TYPES``)."""

    def __init__(
        self, start_url: str, public: PublicUrls, *, content: bool = True, types: Iterable[str] = ()
    ) -> None:
        self.public, self.site, self.content = public, site_of(start_url), content
        self.scheme = urlsplit(start_url).scheme
        self.listed_types = frozenset(t.lower() for t in types)
        self.loc = Verdict("loc", d.INVALID, False, self._loc, "a valid <loc>")
        self.answer = [  # another form of the host that does not redirect may be another site
            Verdict("host-form", d.EXCLUDED, True, self._host_form, "the start URL's host"),
            Verdict("status", d.STATUS, True, _status, "HTTP 200"),
            Verdict("type", d.NON_HTML, True, self._type, "HTML, or a listed type"),
        ]
        self.rules = [
            *self.answer,
            Verdict("noindex", d.NOINDEX, True, _noindex, "no noindex directive"),
            Verdict("canonical", d.CANONICAL, True, self._canonical, "its own canonical (or none)"),
            Verdict("scheme", d.OTHER_SCHEME, False, self._scheme, "the start URL's scheme"),
            Verdict("base-url", d.EXCLUDED, False, self._base_url, "inside the --base-url prefix"),
            Verdict("soft-404", d.SOFT_404, True, self._soft_404, 'not a "not found" page'),
            self.loc,
        ]

    def judge(self, url: str, read: Read, rules: list[Verdict] | None = None) -> Refusal | None:
        """The first of *rules* (all by default) against the page of *url*; None: it passes."""
        for rule in self.rules if rules is None else rules:
            if (refusal := rule.check(url, read)) is not None:
                return refusal
        return None

    def _host_form(self, url: str, read: Read) -> dict[str, Any] | None:
        return None if site_of(url) == self.site else {"status": read.status}

    def _type(self, url: str, read: Read) -> dict[str, Any] | None:
        listed = read.html or read.media_type in self.listed_types
        return None if listed else {"type": read.media_type or "no Content-Type"}

    def _canonical(self, url: str, read: Read) -> dict[str, Any] | None:
        canonical = read.canonical
        if canonical is None or url_key(canonical) == url_key(url):
            return None
        where = "" if site_of(canonical) == self.site else " (another host)"
        return {"target": self.public.loc(canonical) or canonical, "where": where}

    def _scheme(self, url: str, read: Read) -> dict[str, Any] | None:
        scheme = urlsplit(url).scheme
        return None if scheme == self.scheme else {"scheme": scheme, "start": self.scheme}

    def _base_url(self, url: str, read: Read) -> dict[str, Any] | None:
        return None if self.public.loc(url) is not None else {}

    def _soft_404(self, url: str, read: Read) -> dict[str, Any] | None:
        why = NOT_FOUND_PAGE if read.not_found_page else read.says if self.content else None
        return {"why": why} if why else None

    def _loc(self, url: str, read: Read) -> dict[str, Any] | None:
        try:
            check_loc(self.public.loc(url) or "")
        except ValueError as e:
            return {"error": str(e)}
        return None


def _status(url: str, read: Read) -> dict[str, Any] | None:
    return None if read.status == 200 else {"status": read.status}


def _noindex(url: str, read: Read) -> dict[str, Any] | None:
    return {"source": read.noindex} if read.noindex else None
