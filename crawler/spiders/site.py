"""The ``site`` spider: crawl one host the way a polite search-engine bot would.

Each discovered URL is normalised once (:mod:`crawler.urls`), checked against the
crawl's scope (same host and port, length, include/exclude rules, traps, depth and
page caps) and either queued or given its final decision on the spot. Each fetched
URL is judged by its response: status, type, robots directives and canonical
(issue #2, "Deciding what goes in the sitemap"). Every decision is yielded as a
:class:`crawler.items.UrlRecord` item; the pipelines record it in the ledger.

Redirects and meta refreshes are judged here, not followed by Scrapy's redirect
middlewares, so that each hop gets its own decision ("redirect -> target") and its
target is checked like any other discovered URL (host, robots, dedup). Scrapy's
RedirectMiddleware would drop the source silently when the target is filtered.

Spider arguments: ``url`` (the start URL, required).
Settings: ``SITEMAP_*`` (see :mod:`settings`), ``USER_AGENT``,
``ROBOTSTXT_USER_AGENT``.
Meta keys: ``sitemap_url``, ``sitemap_depth``, ``sitemap_hops``, ``sitemap_referrer``.
Stats: ``sitemap/discovered``, ``sitemap/ignored/scheme``, ``sitemap/fatal``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import re
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request, Spider, signals
from scrapy.http import HtmlResponse, Response

from crawler import items as d
from crawler.analysis import (
    DEFAULT_BACKLOG,
    DEFAULT_LOCAL_BELOW,
    PageAnalyser,
    PageAnalysis,
    processes_from,
)
from crawler.items import Alias, PageRecords, UrlRecord
from crawler.limits import MAX_LOC_LENGTH
from crawler.links import LinkResolver, header_directives, link_header_canonicals
from crawler.middlewares.hostguard import OffHostRequest
from crawler.middlewares.robots import RobotsDisallowed, product_token
from crawler.paths import CrawlPaths
from crawler.previous import PreviousRun
from crawler.publicurl import PublicUrls
from crawler.seen import SeenKeys, fingerprint
from crawler.traps import TrapDetector
from crawler.urls import normalize_url, site_of, url_key

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Decisions of a 200 page that a 304 can stand for.
REPLAYABLE = frozenset(
    {
        d.LISTED,
        d.NOINDEX,
        d.CANONICAL,
        d.REDIRECT,
        d.NON_HTML,
        d.OTHER_SCHEME,
        d.DUPLICATE,
        d.EXCLUDED,
        d.INVALID,
    }
)


class PageRequest(Request):
    """A request of the site spider: Scrapy's own, but written to the JOBDIR queue
    (or scrapy-redis's) without a search for its callbacks' names. Scrapy's
    :meth:`Request.to_dict` finds them with ``inspect.getmembers(spider)``, for
    every request queued: 6% of a crawl of rust-doc. The callbacks are the spider's
    own methods, so their names are their ``__name__``; :func:`request_from_dict`
    reads them back as usual."""

    def to_dict(self, *, spider: Spider | None = None) -> dict[str, Any]:
        d = {
            "url": self.url,
            "callback": _method_name(spider, self.callback),
            "errback": _method_name(spider, self.errback),
            "headers": dict(self.headers),
        }
        for attr in self.attributes:
            d.setdefault(attr, getattr(self, attr))
        d["_class"] = f"{type(self).__module__}.{type(self).__qualname__}"
        return d


def _method_name(spider: Spider | None, method: Any) -> Any:
    if method is None or not callable(method):
        return method
    name = getattr(method, "__name__", None)
    if spider is None or name is None or getattr(spider, name, None) != method:
        raise ValueError(f"{method!r} is not a method of {spider!r}")
    return name


class StartUrlError(ValueError):
    """The start URL cannot be crawled."""


class SiteSpider(Spider):
    name = "site"

    def __init__(self, url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not url:
            raise StartUrlError("a start URL is required (-a url=https://example.com/)")
        start = normalize_url(url)
        if start is None or site_of(start) is None:
            raise StartUrlError(f"not an http(s) URL: {url!r}")
        self.start_url = start
        parts = urlsplit(start)
        self.start_scheme = parts.scheme
        self.start_origin = f"{parts.scheme}://{parts.netloc}"
        self.site = site_of(start)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._configure(crawler)
        return spider

    def _configure(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.public = PublicUrls.from_settings(self.start_url, s)
        self.strip_params = s.getbool("SITEMAP_STRIP_PARAMS", True)
        self.extra_strip = tuple(s.getlist("SITEMAP_STRIP_EXTRA"))
        self.links = LinkResolver(strip_params=self.strip_params, extra_strip=self.extra_strip)
        self.include = [re.compile(p) for p in s.getlist("SITEMAP_INCLUDE")]
        self.exclude = [re.compile(p) for p in s.getlist("SITEMAP_EXCLUDE")]
        self.max_pages = s.getint("SITEMAP_MAX_PAGES")
        self.max_depth = s.getint("SITEMAP_MAX_DEPTH")
        self.max_redirects = s.getint("SITEMAP_MAX_REDIRECTS", 10)
        self.listed_types = frozenset(t.lower() for t in s.getlist("SITEMAP_LISTED_TYPES"))
        self.traps = TrapDetector(
            max_repeats=s.getint("SITEMAP_TRAP_MAX_REPEATS", 2),
            max_segments=s.getint("SITEMAP_TRAP_MAX_SEGMENTS", 20),
            max_query_variants=s.getint("SITEMAP_TRAP_MAX_QUERY_VARIANTS", 100),
        )
        token = s.get("ROBOTSTXT_USER_AGENT") or product_token(s.get("USER_AGENT", ""))
        # Robots directives addressed to these agents apply to us.
        self.agents = ("robots", "googlebot", token.lower())
        host = self.site[0] if self.site else ""
        self.start_is_public = _is_public_host(host)
        self.volatile = s.getlist("SITEMAP_VOLATILE_SELECTORS")
        self.analyser = PageAnalyser(
            processes_from(s),
            self.agents,
            self.volatile,
            self.links,
            s.getint("SITEMAP_PARSE_LOCAL_BELOW", DEFAULT_LOCAL_BELOW),
            s.getint("SITEMAP_PARSE_BACKLOG", DEFAULT_BACKLOG),
        )
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        # The previous successful run's ledger: validators, replays, history.
        self.previous = (
            PreviousRun.open(CrawlPaths.from_settings(s).ledger)
            if s.getbool("SITEMAP_INCREMENTAL", True) and s.get("SITEMAP_OUT_DIR")
            else None
        )
        # Keys of every URL discovered so far: each URL gets one decision.
        self.seen = SeenKeys()
        # Other forms of known URLs, kept once each (fingerprints of the forms).
        self.alias_forms = SeenKeys()
        # URLs left out for depth: a shorter path found later lets them in.
        self.depth_capped = SeenKeys()
        self.scheduled = 0
        # Requests handed to the downloader and not answered yet: url -> (depth, hops,
        # referrer). Kept in the JOBDIR state so a resumed run asks them again.
        self.inflight: dict[str, tuple[int, int, str | None]] = {}
        crawler.signals.connect(self._reached_downloader, signal=signals.request_reached_downloader)

    # -- the start -----------------------------------------------------------------

    def _opened(self) -> None:
        self.analyser.open(self.crawler.stats)  # the reactor and stats exist from now on

    async def start(self) -> AsyncIterator[Any]:
        if self.crawler.stats.get_value("sitemap/locked"):
            return  # another run owns the state directory
        saved = getattr(self, "state", None)  # Scrapy's SpiderState, with a JOBDIR
        if saved and "seen" in saved:
            # Resumed: the JOBDIR scheduler holds the pending requests. Those that
            # were in the downloader when the run stopped are in no queue any more
            # (Scrapy pops them), so they are asked again here.
            self.seen, self.alias_forms = saved["seen"], saved["alias_forms"]
            self.depth_capped = saved.get("depth_capped", SeenKeys())
            self.scheduled, self.traps.variants = saved["scheduled"], saved["trap_variants"]
            self.crawler.stats.set_value("sitemap/resumed", True)
            for url, (depth, hops, referrer) in saved.get("inflight", {}).items():
                yield self._request(url, url_key(url), depth, hops, referrer, dont_filter=True)
            return
        for out in self.discover(self.start_url, depth=0, referrer=None, hops=0):
            yield out

    def closed(self, reason: str) -> None:
        # Scrapy's SpiderState pickles self.state into the JOBDIR after this, so an
        # interrupted run can be resumed with the same seen-set and counters.
        if isinstance(getattr(self, "state", None), dict):
            self.state.update(
                seen=self.seen,
                alias_forms=self.alias_forms,
                depth_capped=self.depth_capped,
                scheduled=self.scheduled,
                trap_variants=self.traps.variants,
                inflight=self.inflight,
            )

    def _reached_downloader(self, request: Request) -> None:
        url = request.meta.get("sitemap_url")
        if url is not None:
            meta = request.meta
            self.inflight[url] = (
                meta["sitemap_depth"],
                meta["sitemap_hops"],
                meta["sitemap_referrer"],
            )

    def _meta(self, url: str, depth: int, hops: int, referrer: str | None) -> dict[str, Any]:
        return {
            "sitemap_url": url,
            "sitemap_depth": depth,
            "sitemap_hops": hops,
            "sitemap_referrer": referrer,
            # Every status and every redirect reaches the callback.
            "handle_httpstatus_all": True,
            "dont_redirect": True,
        }

    # -- discovery -------------------------------------------------------------------

    def discover(
        self,
        raw: str,
        *,
        depth: int,
        referrer: str | None,
        hops: int = 0,
        encoding: str = "utf-8",
        normal: str | None = None,
        key: str | None = None,
        fp: int | None = None,
    ) -> Iterator[UrlRecord | Alias | Request]:
        """Decide what to do with a URL found on *referrer*: queue it (yielding a
        ``queued`` record and its request) or record why not. *normal* is its
        normalised form when the caller has it already, and *key* and *fp* (given
        only with *normal*) that form's key and fingerprint (a resolved link has
        all three: keying a new URL is a w3lib canonicalisation, 5% of a
        python3-doc crawl's main thread)."""
        url = normal or normalize_url(
            raw, strip_params=self.strip_params, extra_strip=self.extra_strip, encoding=encoding
        )
        stats = self.crawler.stats
        if url is None:
            stats.inc_value("sitemap/ignored/scheme")
            return
        if key is None:
            key = url_key(url)
        if fp is None:
            fp = fingerprint(key)
        reconsidered = False
        if self.seen.has_fp(fp):
            if self.depth_capped.has_fp(fp) and not (self.max_depth and depth > self.max_depth):
                reconsidered = True
                # Left out for depth, now found by a shorter path: judge it after all.
                self.depth_capped.discard_fp(fp)
                stats.inc_value("sitemap/depth_reconsidered")
            else:
                # Another form of a known URL: keep it as an alias, once per form. A
                # fragment alone does not make another form (tables of contents
                # would flood the ledger with them).
                form = raw.partition("#")[0]
                if form != url and form not in self.alias_forms:
                    self.alias_forms.add(form)
                    yield Alias(alias=form, url=url)
                return
        else:
            self.seen.add_fp(fp)
            stats.inc_value("sitemap/discovered")
        record = UrlRecord(
            url=url,
            decision=d.QUEUED,
            raw_url=raw if raw != url else None,
            depth=depth,
            referrer=referrer,
            key=key,  # normalised and keyed here already: the pipeline need not again
        )
        reason = self._out_of_scope(url, depth, hops)
        if reason is not None:
            record.decision, record.reason = reason
            if reason[1].startswith("max depth"):
                self.depth_capped.add_fp(fp)
            yield record
            return
        self.scheduled += 1
        yield record
        request = self._request(url, key, depth, hops, referrer)
        if reconsidered:
            request.meta["sitemap_reconsidered"] = True
        yield request

    # What judging a fetched page finds (its links, a redirect, canonical or refresh
    # target) goes through here: decided on the spot in one process; a distributed
    # worker (crawler.distributed.spider) reports it to the coordinator instead.
    _found = discover

    def _request(
        self,
        url: str,
        key: str,
        depth: int,
        hops: int,
        referrer: str | None,
        dont_filter: bool = False,
    ) -> Request:
        meta = self._meta(url, depth, hops, referrer)
        return PageRequest(
            url,
            callback=self.parse,
            errback=self.failed,
            meta=meta,
            headers=self._validators(key, meta),
            dont_filter=dont_filter,
        )

    def _validators(self, key: str, meta: dict[str, Any]) -> dict[str, str]:
        """Conditional-request headers from the previous run's record of *key*.

        Scrapy's HttpCacheMiddleware (RFC2616Policy) would do this by keeping every
        response body on disk to replay it after a 304. The ledger already keeps what
        a replay needs (decision, hashes, lastmod and the page's links), so a few
        headers here cost no extra storage; the 304 is judged in :meth:`parse`.
        """
        if self.previous is None:
            return {}
        prev = self.previous.get(key)
        if prev is None or prev["status"] != 200 or prev["decision"] not in REPLAYABLE:
            return {}
        headers = {}
        if prev["etag"]:
            headers["If-None-Match"] = prev["etag"]
        if prev["last_modified"]:
            headers["If-Modified-Since"] = prev["last_modified"]
        if headers:
            meta["sitemap_conditional"] = True
            self.crawler.stats.inc_value("sitemap/conditional/requests")
        return headers

    def _out_of_scope(self, url: str, depth: int, hops: int) -> tuple[str, str] | None:
        target = site_of(url)
        if target != self.site:
            host = target[0] if target else ""
            if self.start_is_public and not _is_public_host(host):
                return d.NON_PUBLIC, "non-public address"
            return d.OFF_HOST, "another host"
        if len(url) > MAX_LOC_LENGTH or len(self.public.loc(url) or "") > MAX_LOC_LENGTH:
            return d.TOO_LONG, f"longer than {MAX_LOC_LENGTH} characters"
        if url != self.start_url:
            if self.include and not any(p.search(url) for p in self.include):
                return d.EXCLUDED, "matches no --include rule"
            for p in self.exclude:
                if p.search(url):
                    return d.EXCLUDED, f"matches --exclude {p.pattern!r}"
        if hops > self.max_redirects:
            return d.CAP, f"more than {self.max_redirects} redirect hops"
        trap = self.traps.check(url)
        if trap is not None:
            return d.TRAP, trap
        if self.max_depth and depth > self.max_depth:
            return d.CAP, f"max depth {self.max_depth}"
        if self.max_pages and self.scheduled >= self.max_pages:
            return d.CAP, f"max pages {self.max_pages}"
        return None

    # -- judging responses ---------------------------------------------------------------

    async def parse(self, response: Response) -> AsyncIterator[PageRecords | Request]:
        # An HTML page is parsed and read in a worker process (crawler.analysis)
        # while this one goes on with other responses; the rest is judged here.
        analysis = None
        if self._is_html_page(response):
            analysis = await self.analyser.analyse(response)  # type: ignore[arg-type]
        records: list[UrlRecord | Alias] = []
        for out in self.judge(response, analysis):
            if isinstance(out, Request):
                yield out
            else:
                records.append(out)
        if records:
            yield PageRecords(records)

    def _is_html_page(self, response: Response) -> bool:
        """Whether :meth:`judge` reads *response* as an HTML page."""
        return (
            response.status == 200
            and isinstance(response, HtmlResponse)
            and _media_type(response) in HTML_TYPES | {""}
        )

    def judge(
        self, response: Response, analysis: PageAnalysis | None = None
    ) -> Iterator[UrlRecord | Alias | Request]:
        """Everything a fetched response leads to: its record, and the records and
        requests of what it links to. *analysis*: the page's, when it is HTML and
        was analysed already."""
        meta = response.meta
        url: str = meta["sitemap_url"]
        self.inflight.pop(url, None)
        depth: int = meta["sitemap_depth"]
        rec = UrlRecord(
            url=url,
            decision=d.LISTED,
            overrides_cap=meta.get("sitemap_reconsidered", False),
            status=response.status,
            depth=depth,
            referrer=meta.get("sitemap_referrer"),
            content_type=_header(response, b"Content-Type"),
            last_modified=_header(response, b"Last-Modified"),
            date=_header(response, b"Date"),
        )
        status = response.status
        if status == 304 and meta.get("sitemap_conditional"):
            yield from self._replay(rec, response)
            return
        if 300 <= status < 400 and b"Location" in response.headers:
            location = response.headers[b"Location"].decode("latin-1")
            yield from self._redirect(rec, urljoin(response.url, location), f"{status}", response)
            return
        if status != 200:
            rec.decision, rec.reason = d.STATUS, f"HTTP {status}"
            yield rec
            return
        if self._is_html_page(response):
            yield from self._judge_html(rec, response, analysis)
            return
        media_type = _media_type(response)
        if media_type not in self.listed_types:
            rec.decision, rec.reason = d.NON_HTML, media_type or "no Content-Type"
            yield rec
            return
        # Another listed type (PDF, say): only headers can say noindex or canonical.
        robots = header_directives(response, self.agents)
        yield from self._judge(rec, response, robots.noindex, link_header_canonicals(response))

    def _judge_html(
        self, rec: UrlRecord, response: HtmlResponse, analysis: PageAnalysis | None
    ) -> Iterator[UrlRecord | Alias | Request]:
        if analysis is None:
            analysis = self.analyser.local(response)
        facts = analysis.facts
        rec.page_lastmod = facts.page_lastmod
        rec.etag = _header(response, b"ETag")
        encoding = analysis.encoding
        if facts.refresh is not None:
            interval, target = facts.refresh
            if interval <= 0:
                # An instant refresh is a redirect to search engines.
                yield from self._redirect(rec, target, "meta refresh", response)
                return
        seen, capped = self.seen, self.depth_capped
        depth, links = rec.depth + 1, rec.links
        # analysis.links has each link once; forms of one target (with tracking
        # parameters, say) share its entry in the ledger.
        targets: set[str] = set()
        for found in analysis.links:
            if found is None:
                self.crawler.stats.inc_value("sitemap/ignored/scheme")
                continue
            if found.url not in targets:
                # Kept normalised in the ledger, so a 304 next time can replay them.
                targets.add(found.url)
                links.append(found.url)
            if seen.has_fp(found.fp) and not capped.has_fp(found.fp):
                # Known already (most links are): at most another form of it to note.
                form = found.raw
                if form != found.url and form not in self.alias_forms:
                    self.alias_forms.add(form)
                    yield Alias(alias=form, url=found.url)
                continue
            yield from self._found(
                found.raw,
                depth=depth,
                referrer=rec.url,
                normal=found.url,
                key=found.key,
                fp=found.fp,
            )
        if facts.refresh is not None:  # a delayed refresh is a link like any other
            target = facts.refresh[1]
            normal = normalize_url(
                target,
                strip_params=self.strip_params,
                extra_strip=self.extra_strip,
                encoding=encoding,
            )
            if normal is None:
                self.crawler.stats.inc_value("sitemap/ignored/scheme")
            else:
                links.append(normal)
                yield from self._found(target, depth=depth, referrer=rec.url, normal=normal)
        yield from self._judge(rec, response, facts.robots.noindex, facts.canonicals, analysis)

    def _replay(self, rec: UrlRecord, response: Response) -> Iterator[UrlRecord | Request]:
        """A 304: the page is as the previous run saw it. Its record stands (decision,
        reason, hashes, lastmod) and its links are discovered again, unfetched."""
        self.crawler.stats.inc_value("sitemap/conditional/not_modified")
        prev = self.previous.get(url_key(rec.url)) if self.previous else None
        if prev is None:  # cannot happen: only known URLs are asked conditionally
            rec.decision, rec.reason = d.STATUS, "HTTP 304 with no earlier record"
            yield rec
            return
        rec.replayed = True
        rec.status = 200
        rec.decision, rec.reason, rec.target = prev["decision"], prev["reason"], prev["target"]
        rec.content_type, rec.last_modified = prev["content_type"], prev["last_modified"]
        rec.etag = _header(response, b"ETag") or prev["etag"]
        rec.content_hash, rec.main_hash = prev["content_hash"], prev["main_hash"]
        rec.lastmod, rec.lastmod_source = prev["lastmod"], prev["lastmod_source"]
        rec.changed_at = prev["changed_at"]
        rec.links = prev["links"].split("\n") if prev["links"] else []
        for link in rec.links:  # stored normalised
            yield from self.discover(link, depth=rec.depth + 1, referrer=rec.url, normal=link)
        if prev["target"] and prev["decision"] in (d.CANONICAL, d.REDIRECT):
            yield from self.discover(
                self.public.to_crawl(prev["target"]), depth=rec.depth, referrer=rec.url
            )
        yield rec

    def _judge(
        self,
        rec: UrlRecord,
        response: Response,
        noindex: str | None,
        canonicals: list[str],
        analysis: PageAnalysis | None = None,
    ) -> Iterator[UrlRecord | Request]:
        """The decision about a fetched page; *analysis* is an HTML page's."""
        canonical = self._canonical(rec, canonicals, response)
        if noindex:
            rec.decision, rec.reason = d.NOINDEX, f"noindex ({noindex})"
        elif canonical is not None and url_key(canonical) != url_key(rec.url):
            rec.decision, rec.target = d.CANONICAL, self.public.loc(canonical) or canonical
            where = "" if site_of(canonical) == self.site else " (another host)"
            rec.reason = f"canonical -> {rec.target}{where}"
            # The canonical target is judged on its own (only if it is ours).
            yield from self._found(canonical, depth=rec.depth, referrer=rec.url)
        elif urlsplit(rec.url).scheme != self.start_scheme:
            rec.decision = d.OTHER_SCHEME
            rec.reason = (
                f"{urlsplit(rec.url).scheme} URL; the sitemap lists {self.start_scheme} only"
            )
        elif self.public.loc(rec.url) is None:
            rec.decision, rec.reason = d.EXCLUDED, "outside the --base-url prefix"
        else:
            if analysis is not None:
                rec.content_hash, rec.main_hash = analysis.content_hash, analysis.main_hash
            else:
                rec.content_hash = hashlib.blake2b(response.body, digest_size=16).hexdigest()
        yield rec

    def _canonical(self, rec: UrlRecord, candidates: list[str], response: Response) -> str | None:
        """The page's canonical, in crawl address space, or None. Invalid and
        conflicting canonicals are ignored with a warning, as search engines do."""
        valid = []
        for raw in candidates:
            url = normalize_url(raw, strip_params=self.strip_params, extra_strip=self.extra_strip)
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
            self.crawler.stats.inc_value("sitemap/warnings/canonical")
            if not getattr(self, "_warned_canonical", False):
                self._warned_canonical = True
                logger.warning("%s: %s (logged once)", rec.url, rec.warnings[0])
        return next(iter(distinct.values()), None)

    def _redirect(
        self, rec: UrlRecord, target: str, how: str, response: Response
    ) -> Iterator[UrlRecord | Request]:
        hops = response.meta.get("sitemap_hops", 0) + 1
        normal = normalize_url(target, strip_params=self.strip_params, extra_strip=self.extra_strip)
        rec.decision = d.REDIRECT
        rec.target = normal or target
        rec.reason = f"{how} -> {rec.target}"
        yield rec
        yield from self._found(target, depth=rec.depth, referrer=rec.url, hops=hops)

    def failed(self, failure: Failure) -> Iterator[UrlRecord]:
        request = failure.request  # type: ignore[attr-defined]
        meta = request.meta
        self.inflight.pop(meta["sitemap_url"], None)
        rec = UrlRecord(
            url=meta["sitemap_url"],
            decision=d.ERROR,
            overrides_cap=meta.get("sitemap_reconsidered", False),
            depth=meta.get("sitemap_depth"),
            referrer=meta.get("sitemap_referrer"),
        )
        if failure.check(RobotsDisallowed):
            rec.decision, rec.reason = d.ROBOTS, str(failure.value)
        elif failure.check(OffHostRequest):
            rec.decision, rec.reason = d.OFF_HOST, "another host"
        else:
            rec.reason = f"{failure.type.__name__}: {failure.getErrorMessage()}"[:500]
        if rec.url == self.start_url and rec.decision == d.ERROR:
            message = f"start URL unreachable: {rec.url} ({rec.reason})"
            logger.error(message)
            self.crawler.stats.set_value("sitemap/fatal", message)
        yield rec


def _media_type(response: Response) -> str:
    return (_header(response, b"Content-Type") or "").split(";")[0].strip().lower()


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value is not None else None


def _is_public_host(host: str) -> bool:
    """False for loopback, private, link-local and reserved addresses and for
    ``localhost``; names are assumed public (they are not resolved here)."""
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return True
    return ip.is_global
