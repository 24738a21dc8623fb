"""The page judge: what a fetched response says about its URL, and where it leads.

Every decision about a fetched URL is made here (the frontier decides about the URLs
it never fetches; :func:`crawler.core.decisions.close_books` what only the whole
crawl can tell), by the rules of docs/crawling.md in the order :meth:`PageJudge.judge`
puts them: a 304 or a page kept tonight replays the previous run's record; a redirect
(a 3xx, an instant meta refresh) is judged hop by hop, not followed by Scrapy; the
rest is put to the verdict book (:mod:`crawler.crawl.verdicts`). A request that failed
is ``robots-disallowed``, ``off-host``, ``too-large`` or ``fetch-error``; the start URL
unreachable fails the run.

Where a page leads goes to the judge's :class:`Leads`: the frontier (a distributed
worker's reports its candidates), or nowhere for the audit.

Stats: ``sitemap/conditional/not_modified``, ``sitemap/ignored/scheme``,
``sitemap/warnings/canonical``, ``sitemap/too_large`` (pages over the size cap).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin

from scrapy.http import HtmlResponse, Response

from crawler.core import decisions as d
from crawler.core.agent import robots_agents
from crawler.core.items import (
    FOUND_CANONICAL,
    FOUND_REDIRECT,
    FOUND_REFRESH,
    UrlRecord,
)
from crawler.core.logonce import LogOnce
from crawler.core.urls import Stripping, host_port, site_of, url_key
from crawler.crawl.frontier import Lead
from crawler.crawl.verdicts import Read, VerdictBook, directives, media_type
from crawler.fetch.hostguard import OffHostRequest
from crawler.fetch.robots import RobotsDisallowed, robots_allows
from crawler.page.analysis import HTML_TYPES
from crawler.page.links import header_directives, link_header_targets
from crawler.page.softnotfound import SoftNotFound

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from crawler.core.publicurl import PublicUrls
    from crawler.ledger.previous import PreviousRun
    from crawler.page.analysis import PageAnalysis, RichFacts
    from crawler.page.links import Resolved
    from crawler.page.parsepool import PageAnalyser

logger = logging.getLogger(__name__)


class Leads(Protocol):
    """Where what a page leads to goes: its links, resolved, and other URLs it names."""

    def link(self, found: Resolved, depth: int, referrer: str) -> Iterable[object]: ...
    def discover(self, lead: Lead) -> Iterable[object]: ...
    def recheck(self, url: str, depth: int, referrer: str | None) -> Iterable[object]: ...


class NoLeads:
    """Leads followed nowhere: the audit judges a listed page without its links."""

    def link(self, *_: object) -> Iterable[object]:
        return ()

    discover = recheck = link


class PageJudge:
    """Judges the responses of a crawl from *start_url* (see the module docstring).
    *analyser*: for a page the caller has no analysis of; *previous*: the previous
    run, which a 304 replays; *fail*: says the run cannot do its job."""

    def __init__(
        self,
        crawler: Crawler,
        start_url: str,
        *,
        public: PublicUrls,
        analyser: PageAnalyser,
        previous: PreviousRun | None,
        leads: Leads,
        fail: Callable[[str], None],
    ) -> None:
        s = crawler.settings
        assert crawler.stats is not None
        self.stats, self.start_url = crawler.stats, start_url
        self.public, self.analyser = public, analyser
        self.previous, self.leads, self.fail = previous, leads, fail
        self.site = site_of(start_url)
        self.agents = robots_agents(s["USER_AGENT"], s.get("ROBOTSTXT_USER_AGENT"))
        self.strip = Stripping.from_settings(s)
        # Other hosts whose images a listed page keeps.
        self.image_hosts = frozenset(h.lower() for h in s.getlist("SITEMAP_IMAGE_HOSTS"))
        # Whether robots.txt lets us fetch a URL of our site (an image it disallows is not).
        self.allows = robots_allows(crawler)
        self.maxsize = s.getint("DOWNLOAD_MAXSIZE")  # a request's cap unless it has its own
        # What a page read makes of its URL (a thin page saying it is not there included).
        content, listed = s.getbool("SITEMAP_SOFT404_CONTENT"), s.getlist("SITEMAP_LISTED_TYPES")
        self.book = VerdictBook(start_url, public, content=content, types=listed)
        self._warn_canonical = LogOnce(logger)
        # The site's "not found" pages, as the start's probes found them.
        self.soft_not_found = SoftNotFound()

    def is_html_page(self, response: Response) -> bool:
        """Whether :meth:`judge` reads *response* as an HTML page (and wants its analysis)."""
        return (
            response.status == 200
            and isinstance(response, HtmlResponse)
            and media_type(_header(response, b"Content-Type")) in HTML_TYPES | {""}
        )

    # -- a response ---------------------------------------------------------------------

    def judge(self, response: Response, analysis: PageAnalysis | None = None) -> Iterator[object]:
        """Everything a fetched response leads to: its record, and what its leads
        make of the URLs it points at. *analysis*: the page's, when it is HTML and
        was analysed already."""
        meta = response.meta
        url: str = meta["sitemap_url"]
        rec = UrlRecord(
            url=url,
            decision=d.LISTED,
            status=response.status,
            depth=meta["sitemap_depth"],
            referrer=meta.get("sitemap_referrer"),
            content_type=_header(response, b"Content-Type"),
            last_modified=_header(response, b"Last-Modified"),
            date=_header(response, b"Date"),
            key=url_key(url),
            conditional=bool(meta.get("sitemap_conditional")),
            elapsed=_latency(meta),
            size=len(response.body),
        )
        status = response.status
        answer = Read(status, media_type(rec.content_type), self.is_html_page(response))
        if meta.get("sitemap_kept"):
            yield from self.replay(rec, None, kept=True)
        elif status == 304 and meta.get("sitemap_conditional"):
            yield from self.replay(rec, _header(response, b"ETag"))
        elif 300 <= status < 400 and (location := response.headers.get(b"Location")) is not None:
            target = urljoin(response.url, location.decode("latin-1"))
            yield from self._redirect(rec, target, f"{status}", response)
        elif (verdict := self.book.judge(url, answer, self.book.answer)) is not None:
            rec.decision, rec.reason = verdict.decision, verdict.reason
            yield rec
        elif isinstance(response, HtmlResponse) and answer.html:
            yield from self._judge_html(rec, response, analysis, answer)
        else:  # another listed type (PDF, say): only headers can say noindex or canonical
            robots, links = header_directives(response, self.agents), link_header_targets(response)
            rec.robots, canonical = directives(robots), self._canonical(rec, links)
            read = replace(answer, noindex=robots.noindex, canonical=canonical)
            yield from self._judge(rec, response, read)

    def _judge_html(
        self, rec: UrlRecord, response: HtmlResponse, analysis: PageAnalysis | None, answer: Read
    ) -> Iterator[object]:
        if analysis is None:
            analysis = self.analyser.local(response)
        facts = analysis.facts
        rec.page_dates, rec.title = facts.page_dates, facts.title
        rec.etag = _header(response, b"ETag")
        if facts.refresh is not None and facts.refresh[0] <= 0:
            # An instant refresh is a redirect to search engines.
            target = facts.refresh[1]
            yield from self._redirect(rec, target, "meta refresh", response, found_by=FOUND_REFRESH)
            return
        depth, links, leads = _depth(rec) + 1, rec.links, self.leads
        # analysis.links has each link once; forms of one target (with tracking
        # parameters, say) share its entry in the ledger.
        targets: set[str] = set()
        for found in analysis.links:
            if found is None:
                self.stats.inc_value("sitemap/ignored/scheme")
                continue
            if found.url not in targets:
                # Kept normalised in the ledger, so a 304 next time can replay them.
                targets.add(found.url)
                links.append(found.url)
            yield from leads.link(found, depth, rec.url)
        yield from self._dropped(rec, targets)
        # What it refers to on this site and the crawl does not follow (explain).
        rec.unfollowed = [
            f"{kind} {url}" for kind, url in analysis.unfollowed if site_of(url) == self.site
        ]
        if facts.refresh is not None:  # a delayed refresh is a link like any other
            target = facts.refresh[1]
            normal = self.strip.normalize(target, analysis.encoding)
            if normal is None:
                self.stats.inc_value("sitemap/ignored/scheme")
            else:
                links.append(normal)
                yield from leads.discover(
                    Lead(target, depth, rec.url, normal=normal, found_by=FOUND_REFRESH)
                )
        rec.robots, canonical = directives(facts.robots), self._canonical(rec, facts.canonicals)
        read = replace(answer, noindex=facts.robots.noindex, canonical=canonical)
        yield from self._judge(rec, response, read, analysis)

    def _judge(
        self, rec: UrlRecord, response: Response, read: Read, analysis: PageAnalysis | None = None
    ) -> Iterator[object]:
        """The decision about a fetched page (the verdict book); *analysis* is an HTML page's."""
        page = analysis is not None and self.soft_not_found.matches(analysis.soft_print)
        says = analysis.not_found if analysis is not None else None
        read = replace(read, not_found_page=bool(page), says=says)
        verdict = self.book.judge(rec.url, read)
        if verdict is not None:
            rec.decision, rec.reason, rec.target = verdict.decision, verdict.reason, verdict.target
        if verdict is not None and verdict.rule == "canonical" and read.canonical:
            # The canonical target is judged on its own (only if it is ours).
            yield from self.leads.discover(
                Lead(read.canonical, _depth(rec), rec.url, found_by=FOUND_CANONICAL)
            )
        elif verdict is None or verdict.rule == self.book.loc.name:
            if analysis is not None:
                rec.content_hash, rec.main_hash = analysis.content_hash, analysis.main_hash
                rec.bag_hash, rec.own_hash = analysis.bag_hash, analysis.own_hash
            else:
                rec.content_hash = hashlib.blake2b(response.body, digest_size=16).hexdigest()
            rec.loc = None if verdict else self.public.loc(rec.url)
            if verdict is None and analysis is not None and analysis.rich is not None:
                self._rich(rec, analysis.rich)
        yield rec

    def _rich(self, rec: UrlRecord, rich: RichFacts) -> None:
        """A listed page's rich data (docs/rich.md). Its alternates as declared (they are
        verified once the crawl is over: crawler.publish.richentries); its images on our site
        that robots.txt lets us fetch, or on an --image-host; its videos that have
        what Google requires (the others are named in its problems); its news."""
        rec.alternates = [[code, href] for code, href in rich.alternates]
        for image in rich.images:
            found = host_port(image)
            if site_of(image) == self.site:
                if self.allows(image):
                    rec.images.append(image)
                else:
                    self.stats.inc_value("sitemap/images/robots_disallowed")
            elif found is not None and found[0] in self.image_hosts:
                rec.images.append(image)
            else:
                self.stats.inc_value("sitemap/images/other_host")
        for video in rich.videos:
            name = video.content_loc or video.player_loc or video.thumbnail_loc or "?"
            rec.problems.extend(f"video {name}: {problem}" for problem in video.problems)
            if video.missing:
                rec.problems.append(f"video {name} not written: no {', '.join(video.missing)}")
            else:
                rec.videos.append(video.to_json())
        rec.news = rich.news.to_json() if rich.news is not None else None

    def _canonical(self, rec: UrlRecord, candidates: list[str]) -> str | None:
        """The page's canonical, in crawl address space, or None. Invalid and
        conflicting canonicals are ignored with a warning, as search engines do."""
        valid = []
        for raw in candidates:
            url = self.strip.normalize(raw)
            if url is None:
                rec.warnings.append(f"ignored canonical {raw[:200]!r}: not an http(s) URL")
                continue
            valid.append(self.public.to_crawl(url))
        distinct = {url_key(u): u for u in valid}
        if len(distinct) > 1:
            rec.warnings.append(
                "ignored conflicting canonicals: " + ", ".join(sorted(distinct.values()))
            )
            return None
        if rec.warnings:
            self.stats.inc_value("sitemap/warnings/canonical")
            self._warn_canonical("%s: %s", rec.url, rec.warnings[0])
        return next(iter(distinct.values()), None)

    def _redirect(
        self,
        rec: UrlRecord,
        target: str,
        how: str,
        response: Response,
        found_by: str = FOUND_REDIRECT,
    ) -> Iterator[object]:
        hops = response.meta.get("sitemap_hops", 0) + 1
        rec.decision, rec.target = d.REDIRECT, self.strip.normalize(target) or target
        rec.reason = f"{how} -> {rec.target}"
        yield rec
        yield from self.leads.discover(Lead(target, _depth(rec), rec.url, hops, found_by=found_by))

    def _dropped(self, rec: UrlRecord, targets: set[str]) -> Iterator[object]:
        """The URLs this page linked to last time and links to no more: verified
        tonight (a post trashed must not stay listed until its due night)."""
        prev = self.previous.get(rec.key or url_key(rec.url)) if self.previous else None
        if prev is None or not prev.get("links"):
            return
        for url in prev["links"]:
            if url not in targets:
                yield from self.leads.recheck(url, _depth(rec) + 1, rec.url)

    # -- a 304, or a page kept from the previous run --------------------------------------

    def replay(self, rec: UrlRecord, etag: str | None, kept: bool = False) -> Iterator[object]:
        """A 304, or a page the revisit schedule keeps tonight (*kept*: not fetched):
        the page is as the previous run saw it. Its record stands (decision, reason,
        hashes, lastmod) and its stored links are followed, unfetched."""
        if not kept:
            self.stats.inc_value("sitemap/conditional/not_modified")
        prev = self.previous.get(url_key(rec.url)) if self.previous else None
        if prev is None:  # cannot happen: only known URLs are asked conditionally or kept
            rec.decision, rec.reason = d.STATUS, "HTTP 304 with no earlier record"
            yield rec
            return
        rec.replayed, rec.status, rec.etag = True, 200, etag or prev["etag"]
        if kept:
            rec.kept, rec.status, rec.conditional = True, prev["status"], False
            for column in _KEPT:
                setattr(rec, column, prev.get(column))
        # The record as the previous run saw it: its size is the body's it stands for,
        # not the empty 304's; its rich data as the page declared it (a 304 has no body
        # to read it from again); a rendered page's came from its rendered DOM.
        for column in _REPLAYED:
            setattr(rec, column, prev.get(column))
        rec.page_verdicts = prev.get("page_dates")
        rec.links, rec.unfollowed = list(prev["links"]), list(prev.get("unfollowed") or ())
        for column in ("alternates", "images", "videos", "news", "problems"):
            if prev.get(column):
                setattr(rec, column, json.loads(prev[column]))
        if rec.decision == d.LISTED and (verdict := self.book.loc.check(rec.url, Read())):
            rec.decision, rec.reason = verdict.decision, verdict.reason
        elif rec.decision == d.LISTED:
            rec.loc = self.public.loc(rec.url)  # the published address as this run publishes it
        depth = _depth(rec)
        for link in rec.links:  # stored normalised
            yield from self.leads.discover(Lead(link, depth + 1, rec.url, normal=link))
        if prev["target"] and prev["decision"] in (d.CANONICAL, d.REDIRECT):
            how = FOUND_REDIRECT if prev["decision"] == d.REDIRECT else FOUND_CANONICAL
            target = self.public.to_crawl(prev["target"])
            yield from self.leads.discover(Lead(target, depth, rec.url, found_by=how))
        yield rec

    # -- a failure ----------------------------------------------------------------------

    def failed(self, failure: Failure) -> UrlRecord:
        """The record of a request that got no response."""
        request: Request = failure.request  # type: ignore[attr-defined]  # set by Scrapy
        meta = request.meta
        url: str = meta["sitemap_url"]
        rec = UrlRecord(
            url=url,
            decision=d.ERROR,
            depth=meta.get("sitemap_depth"),
            referrer=meta.get("sitemap_referrer"),
            key=url_key(url),
            conditional=bool(meta.get("sitemap_conditional")),
        )
        if isinstance(failure.value, RobotsDisallowed):
            rec.decision, rec.reason = d.ROBOTS, str(failure.value)
        elif isinstance(failure.value, OffHostRequest):
            rec.decision, rec.reason = d.OFF_HOST, "another host"
        elif (cap := _over_size_cap(failure, request, self.maxsize)) is not None:
            rec.decision, rec.reason = d.TOO_LARGE, cap
            self.stats.inc_value("sitemap/too_large")
        else:
            kind = failure.type.__name__ if failure.type is not None else "Error"
            rec.reason = f"{kind}: {failure.getErrorMessage()}"[:500]
        if rec.url == self.start_url and rec.decision == d.ERROR:
            self.fail(f"start URL unreachable: {rec.url} ({rec.reason})")
        return rec


#: The columns of the previous run's record a 304 replays as they are.
_REPLAYED = (
    "decision", "reason", "target", "content_type", "last_modified", "content_hash",
    "main_hash", "lastmod", "lastmod_source", "changed_at", "lastmod_from", "size", "title",
    "robots", "render", "own_hash",
)  # fmt: skip

#: What a page kept from the previous run keeps besides (its schedule included).
_KEPT = ("elapsed", "verified_at", "verified_date", "revisit_days", "due_at", "checks", "changes")

# Scrapy's words when a body is over DOWNLOAD_MAXSIZE: as announced or as received
# (scrapy.utils._download_handlers.get_maxsize_msg), or once decompressed
# (HttpCompressionMiddleware's IgnoreRequest).
_SIZE_CAP_WORDS = ("larger than download max size", "exceeded DOWNLOAD_MAXSIZE")


def _over_size_cap(failure: Failure, request: Request, maxsize: int) -> str | None:
    """The reason of a download cut for its size, or None for another failure.
    Scrapy cancels a body that grows past the cap while it streams with no message
    of its own; it said so in a warning, and the request had a cap: a cancelled
    download of a request with a cap is read as that."""
    message = failure.getErrorMessage()
    cap = request.meta.get("download_maxsize", maxsize)
    words = f"over the download size cap (DOWNLOAD_MAXSIZE, {cap} bytes)"
    name = failure.type.__name__ if failure.type is not None else ""
    cancelled = name in ("CancelledError", "DownloadCancelledError") and not message.strip()
    return words if any(w in message for w in _SIZE_CAP_WORDS) or (cap and cancelled) else None


def _latency(meta: dict[str, Any]) -> float | None:
    """Scrapy's ``download_latency`` (seconds from request sent to response), rounded."""
    latency = meta.get("download_latency")
    return round(float(latency), 4) if isinstance(latency, int | float) else None


def _depth(rec: UrlRecord) -> int:
    assert rec.depth is not None  # a fetched URL's record always has its depth
    return rec.depth


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value is not None else None
