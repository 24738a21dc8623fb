"""The crawl frontier: where the crawl goes next, and why not elsewhere.

Every URL the crawl discovers (the start URLs, the lines of a ``--urls`` file, the
entries of the site's sitemaps with ``--seed-sitemaps``, a page's links, a redirect,
canonical or refresh target) comes here once, with how it was found (``found_by``,
:data:`crawler.core.items.SEEDS`; issue #19). Seeds are judged like any URL: never
trusted, only queued. It is normalised once (:mod:`crawler.core.urls`),
keyed, and checked against the seen-set (:mod:`crawler.core.seen`): a URL already known
under another form is recorded as an alias. A new URL is put to the crawl's rule
book (:mod:`crawler.crawl.rulebook`: host and port, the ``<loc>`` length, ``--include``
and ``--exclude``, redirect hops, calendars, learned parameters and facets, traps,
query variants, depth, the page cap, in this order); refused, it gets its final
decision here, with the rule that refused it; let through, a ``queued`` record and
a request (breadth-first: Scrapy's scheduler is FIFO with ``DEPTH_PRIORITY``), asked
conditionally when the previous run knew the page (its ``ETag`` and
``Last-Modified``).

Depth is the shortest link path from the start URL: a URL left out for depth is let
in when a shorter path to it turns up later (concurrency can let a long path win
the race). The frontier's state (the seen-set, aliases, depth caps, counters and
the requests in the downloader) is saved into the spider's ``state`` at the end of
an interrupted run, so ``--resume`` continues where it stopped (Scrapy's
``JOBDIR`` keeps the queue).

What a fetched page leads to reaches the frontier through the page judge
(:mod:`crawler.crawl.judge`), which calls :meth:`Frontier.link` for each of the page's
links and :meth:`Frontier.target` for a redirect, canonical or refresh target.

Settings: ``SITEMAP_START_URLS``, ``SITEMAP_URL_FILE``,
``SITEMAP_MAX_PAGES``, ``SITEMAP_MAX_DEPTH``, ``SITEMAP_MAX_REDIRECTS``,
``SITEMAP_INCLUDE``, ``SITEMAP_EXCLUDE``, ``SITEMAP_STRIP_PARAMS``,
``SITEMAP_STRIP_EXTRA``, ``SITEMAP_TRAP_*``, ``SITEMAP_CALENDAR_WINDOW``.
Meta keys of its requests: ``sitemap_url``, ``sitemap_depth``, ``sitemap_hops``,
``sitemap_referrer``, ``sitemap_conditional``, ``sitemap_reconsidered``.
Stats: ``sitemap/discovered``, ``sitemap/ignored/scheme``,
``sitemap/depth_reconsidered``, ``sitemap/seeds/<found_by>`` (seeds new to the
crawl, by how they were found), ``sitemap/learned/params`` (parameters learned
this run). The values the rule book is built with go into the ledger's ``meta``
(``scope``), for ``explain``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals

from crawler.core import decisions as d
from crawler.core.items import (
    FOUND_LINK,
    FOUND_SITEMAP,
    FOUND_START,
    FOUND_URL_FILE,
    SEEDS,
    Alias,
    Linked,
    PageRequest,
    UrlRecord,
)
from crawler.core.seen import SeenKeys, fingerprint
from crawler.core.urls import Stripping, normalize_url, url_key
from crawler.crawl.calendars import CalendarRule, parse_window
from crawler.crawl.params import ParamLearner
from crawler.crawl.rulebook import RuleBook, RuleParams, starts_of
from crawler.crawl.seeds import read_url_file
from crawler.crawl.traps import TrapDetector
from crawler.ledger.runstate import RunState
from crawler.sitemaps.limits import MAX_LOC_LENGTH

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from crawler.core.publicurl import PublicUrls
    from crawler.ledger.previous import PreviousRun
    from crawler.page.links import Resolved

#: What discovering a URL yields: its record, an alias, its request, or that a
#: sitemap's seed is linked after all.
Discovered = UrlRecord | Alias | Request | Linked


class Frontier:
    """The frontier of a crawl from *start_url* (see the module docstring).

    *more_starts* are start URLs besides *start_url* and *url_file* ``(file, URLs)``
    the seeds of a ``--urls`` file (each start URL is judged like a link, but for
    ``--include``/``--exclude``; a start URL off the site is ``off-host`` like any);
    *callback* and *errback* are the spider's methods its requests go to; *public*
    maps crawled URLs to published ones (a ``<loc>`` too long once published is out
    of scope); *previous* is the previous run, for conditional requests; *include*
    and *exclude* are compiled patterns; a cap of 0 is no cap.
    """

    def __init__(
        self,
        start_url: str,
        *,
        callback: Callable[..., Any],
        errback: Callable[..., Any],
        stats: StatsCollector,
        public: PublicUrls,
        previous: PreviousRun | None,
        traps: TrapDetector,
        include: Iterable[re.Pattern[str]],
        exclude: Iterable[re.Pattern[str]],
        max_pages: int,
        max_depth: int,
        max_redirects: int,
        strip_params: bool,
        extra_strip: tuple[str, ...],
        more_starts: Iterable[str] = (),
        url_file: tuple[str, list[str]] | None = None,
        params: ParamLearner | None = None,
        calendars: CalendarRule | None = None,
    ) -> None:
        self.start_url = start_url
        self.more_starts = list(more_starts)
        self.url_file = url_file
        self.callback, self.errback = callback, errback
        self.stats = stats
        self.public = public
        self.previous = previous
        self.traps = traps
        self.include = list(include)
        self.exclude = list(exclude)
        self.max_pages, self.max_depth = max_pages, max_depth
        self.max_redirects = max_redirects
        self.strip_params, self.extra_strip = strip_params, extra_strip
        self.params = params or ParamLearner()
        self.params.known = self._known
        self.calendars = calendars
        # What the rule book is built with: the ledger keeps it for `explain`.
        self.rule_params = RuleParams(
            start_url=start_url,
            starts=starts_of(start_url, self.more_starts, strip_params, extra_strip),
            include=tuple(p.pattern for p in self.include),
            exclude=tuple(p.pattern for p in self.exclude),
            max_loc_length=MAX_LOC_LENGTH,
            max_redirects=max_redirects,
            calendar_window_days=calendars.window.days if calendars is not None else 0,
            calendar_steps=calendars.steps if calendars is not None else 0,
            calendar_today=calendars.today.isoformat() if calendars is not None else None,
            trap_max_repeats=traps.max_repeats,
            trap_max_segments=traps.max_segments,
            trap_max_query_variants=traps.max_query_variants,
            max_depth=max_depth,
            max_pages=max_pages,
            strip_params=strip_params,
            strip_extra=extra_strip,
        )
        # The start URLs, normalised: exempt from --include and --exclude.
        self.starts = set(self.rule_params.starts or ())
        self.rules = RuleBook.of(
            self.rule_params,
            public=public,
            learner=self.params,
            traps=traps,
            calendars=calendars,
            pages=lambda: self.scheduled,
        )
        # Keys of every URL discovered so far: each URL gets one decision.
        self.seen = SeenKeys()
        # Other forms of known URLs, kept once each (fingerprints of the forms).
        self.alias_forms = SeenKeys()
        # URLs left out for depth: a shorter path found later lets them in.
        self.depth_capped = SeenKeys()
        # URLs found in a sitemap and linked from no page yet (an orphan, so far).
        self.unlinked_seeds = SeenKeys()
        self.scheduled = 0
        # Requests handed to the downloader and not answered yet: url -> (depth, hops,
        # referrer). Kept in the JOBDIR state so a resumed run asks them again.
        self.inflight: dict[str, tuple[int, int, str | None]] = {}

    @classmethod
    def from_crawler(
        cls,
        crawler: Crawler,
        start_url: str,
        public: PublicUrls,
        previous: PreviousRun | None,
        callback: Callable[..., Any],
        errback: Callable[..., Any],
    ) -> Self:
        s = crawler.settings
        assert crawler.stats is not None
        path = s.get("SITEMAP_URL_FILE")
        strip = Stripping.from_settings(s)
        state = RunState.existing(crawler)
        ledger = state.ledger if state is not None else None
        learned = previous.learned_params() if previous is not None else {}
        # A resumed run keeps the day its calendars are cut from.
        resumed = ledger is not None and state is not None and state.resume
        recorded = ledger.get_meta("scope") if ledger is not None and resumed else None
        day = recorded.get("calendar_today") if isinstance(recorded, dict) else None
        today = date.fromisoformat(day) if isinstance(day, str) else None
        if ledger is not None:
            learned = {**learned, **ledger.learned_params()}  # a resumed run's own
            for learned_path, names in learned.items():
                for name in names:
                    ledger.learn_param(learned_path, name, True)
        frontier = cls(
            start_url,
            callback=callback,
            errback=errback,
            stats=crawler.stats,
            public=public,
            previous=previous,
            traps=TrapDetector.from_settings(s),
            include=[re.compile(p) for p in s.getlist("SITEMAP_INCLUDE")],
            exclude=[re.compile(p) for p in s.getlist("SITEMAP_EXCLUDE")],
            max_pages=s.getint("SITEMAP_MAX_PAGES"),
            max_depth=s.getint("SITEMAP_MAX_DEPTH"),
            max_redirects=s.getint("SITEMAP_MAX_REDIRECTS"),
            strip_params=strip.params,
            extra_strip=strip.extra,
            more_starts=s.getlist("SITEMAP_START_URLS"),
            url_file=(str(path), read_url_file(path, start_url)) if path else None,
            params=ParamLearner(learned, ledger.learn_param if ledger is not None else None),
            calendars=CalendarRule(parse_window(s.get("SITEMAP_CALENDAR_WINDOW")), today=today),
        )
        if ledger is not None:
            # The rules' values, for `explain` about a URL the crawl never saw.
            obey = s.getbool("ROBOTSTXT_OBEY")
            ledger.set_meta("scope", {**frontier.rule_params.record(), "robots_obey": obey})
        crawler.signals.connect(
            frontier.reached_downloader, signal=signals.request_reached_downloader
        )
        return frontier

    # -- the start, and the state kept for --resume ------------------------------------

    def start(self, saved: dict[str, Any] | None = None) -> Iterator[Discovered]:
        """The records and requests of the start URLs and the ``--urls`` file's
        seeds; or, given the *saved* state of an
        interrupted run, the requests that were in the downloader when it stopped
        (Scrapy pops requests from the JOBDIR queue when it sends them, so those are
        in no queue any more)."""
        if saved and "seen" in saved:
            self.seen, self.alias_forms = saved["seen"], saved["alias_forms"]
            self.depth_capped = saved.get("depth_capped", SeenKeys())
            self.unlinked_seeds = saved.get("unlinked_seeds", SeenKeys())
            self.scheduled, self.traps.variants = saved["scheduled"], saved["trap_variants"]
            self.stats.set_value("sitemap/resumed", True)
            for url, (depth, hops, referrer) in saved.get("inflight", {}).items():
                yield self._request(url, url_key(url), depth, hops, referrer, dont_filter=True)
            return
        for url in (self.start_url, *self.more_starts):
            yield from self.discover(url, depth=0, referrer=None, found_by=FOUND_START)
        if self.url_file is not None:
            path, urls = self.url_file
            for url in urls:
                yield from self.discover(
                    url, depth=0, referrer=None, found_by=FOUND_URL_FILE, found_from=path
                )

    def save(self, state: dict[str, Any]) -> None:
        """Put what a resumed run needs into the spider's *state* (Scrapy's
        SpiderState pickles it into the JOBDIR when the spider closes)."""
        state.update(
            seen=self.seen,
            alias_forms=self.alias_forms,
            depth_capped=self.depth_capped,
            unlinked_seeds=self.unlinked_seeds,
            scheduled=self.scheduled,
            trap_variants=self.traps.variants,
            inflight=self.inflight,
        )

    def reached_downloader(self, request: Request) -> None:
        meta = request.meta
        url = meta.get("sitemap_url")
        if url is not None:
            self.inflight[url] = (
                meta["sitemap_depth"],
                meta["sitemap_hops"],
                meta["sitemap_referrer"],
            )

    def answered(self, url: str) -> None:
        """The request for *url* was answered (or failed): no longer in flight."""
        self.inflight.pop(url, None)

    # -- discovery ---------------------------------------------------------------------

    def link(self, found: Resolved, depth: int, referrer: str) -> Iterable[Discovered]:
        """A link of a fetched page, resolved (joined, normalised, keyed). Most links
        are known already: those cost a fingerprint lookup, and at most an alias."""
        if self.seen.has_fp(found.fp) and not self.depth_capped.has_fp(found.fp):
            linked: tuple[Discovered, ...] = ()
            if self.unlinked_seeds and self.unlinked_seeds.has_fp(found.fp):
                self.unlinked_seeds.discard_fp(found.fp)
                linked = (Linked(found.key, referrer),)
            form = found.raw
            if form != found.url and form not in self.alias_forms:
                self.alias_forms.add(form)
                return (*linked, Alias(alias=form, url=found.url))
            return linked
        return self.discover(
            found.raw, depth=depth, referrer=referrer, normal=found.url, key=found.key, fp=found.fp
        )

    def seed(self, raw: str, *, found_by: str, found_from: str | None) -> Iterator[Discovered]:
        """A seed found by no page (an entry of one of the site's sitemaps): judged
        like any URL, at depth 0."""
        return self.discover(raw, depth=0, referrer=None, found_by=found_by, found_from=found_from)

    def target(
        self,
        raw: str,
        *,
        depth: int,
        referrer: str | None,
        hops: int = 0,
        encoding: str = "utf-8",
        normal: str | None = None,
        found_by: str = FOUND_LINK,
    ) -> Iterable[Discovered]:
        """A redirect, canonical or refresh target (or a replayed link) of *referrer*."""
        return self.discover(
            raw,
            depth=depth,
            referrer=referrer,
            hops=hops,
            encoding=encoding,
            normal=normal,
            found_by=found_by,
        )

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
        found_by: str = FOUND_LINK,
        found_from: str | None = None,
    ) -> Iterator[Discovered]:
        """Decide what to do with a URL found on *referrer* (or as a seed: *found_by*,
        *found_from*): queue it (yielding a
        ``queued`` record and its request) or record why not. *normal* is its
        normalised form when the caller has it already, and *key* and *fp* (given
        only with *normal*) that form's key and fingerprint (a resolved link has all
        three: keying a URL again is a w3lib canonicalisation)."""
        keyed = self._keyed(raw, encoding, normal, key, fp)
        if keyed is None:
            return
        url, key, fp = keyed
        stats = self.stats
        reconsidered = False
        if self.seen.has_fp(fp):
            if self.depth_capped.has_fp(fp) and not (self.max_depth and depth > self.max_depth):
                reconsidered = True
                # Left out for depth, now found by a shorter path: judge it after all.
                self.depth_capped.discard_fp(fp)
                stats.inc_value("sitemap/depth_reconsidered")
            else:
                if (
                    found_by == FOUND_LINK
                    and referrer is not None
                    and self.unlinked_seeds
                    and self.unlinked_seeds.has_fp(fp)
                ):
                    self.unlinked_seeds.discard_fp(fp)
                    yield Linked(key, referrer)
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
            if found_by in SEEDS:
                stats.inc_value(f"sitemap/seeds/{found_by}")
                if found_by == FOUND_SITEMAP:
                    self.unlinked_seeds.add_fp(fp)
        record = UrlRecord(
            url=url,
            decision=d.QUEUED,
            raw_url=raw if raw != url else None,
            depth=depth,
            referrer=referrer,
            key=key,  # normalised and keyed here already: the pipeline need not again
            found_by=found_by,
            found_from=found_from,
        )
        refusal = self.rules.judge(url, self.rules.found(url, depth, hops, referrer))
        if refusal is not None:
            record.decision, record.reason, record.target = (
                refusal.decision,
                refusal.reason,
                refusal.target,
            )
            record.rule = refusal.rule
            if refusal.rule == d.RULE_DEPTH:
                self.depth_capped.add_fp(fp)
            yield record
            return
        self.params.admit(url)
        self.scheduled += 1
        yield record
        request = self._request(url, key, depth, hops, referrer)
        if reconsidered:
            request.meta["sitemap_reconsidered"] = True
        yield request

    def _keyed(
        self, raw: str, encoding: str, normal: str | None, key: str | None, fp: int | None
    ) -> tuple[str, str, int] | None:
        """*raw*'s normalised form, key and fingerprint (those given are kept); None,
        counted, for a URL of another scheme."""
        url = normal or normalize_url(
            raw, strip_params=self.strip_params, extra_strip=self.extra_strip, encoding=encoding
        )
        if url is None:
            self.stats.inc_value("sitemap/ignored/scheme")
            return None
        if key is None:
            key = url_key(url)
        return url, key, fingerprint(key) if fp is None else fp

    def _known(self, url: str) -> bool:
        return self.seen.has_fp(fingerprint(url_key(url)))

    def observe(self, url: str, main_hash: str | None, bag: str | None = None) -> None:
        """A listed page's main-content hash (and its hash whatever the order), to
        learn from (crawler.crawl.params)."""
        for _ in self.params.observe(url, main_hash, bag):
            self.stats.inc_value("sitemap/learned/params")

    # -- requests ----------------------------------------------------------------------

    def _request(
        self,
        url: str,
        key: str,
        depth: int,
        hops: int,
        referrer: str | None,
        dont_filter: bool = False,
    ) -> Request:
        meta: dict[str, Any] = {
            "sitemap_url": url,
            "sitemap_depth": depth,
            "sitemap_hops": hops,
            "sitemap_referrer": referrer,
            # Every status and every redirect reaches the page judge.
            "handle_httpstatus_all": True,
            "dont_redirect": True,
        }
        return PageRequest(
            url,
            callback=self.callback,
            errback=self.errback,
            meta=meta,
            headers=self._validators(key, meta),
            dont_filter=dont_filter,
        )

    def _validators(self, key: str, meta: dict[str, Any]) -> dict[str, str]:
        """Conditional-request headers from the previous run's record of *key*.

        Scrapy's HttpCacheMiddleware (RFC2616Policy) would do this by keeping every
        response body on disk to replay it after a 304. The ledger already keeps what
        a replay needs (decision, hashes, lastmod and the page's links), so a few
        headers here cost no extra storage; the judge replays the 304.
        """
        if self.previous is None:
            return {}
        prev = self.previous.get(key)
        if prev is None or prev["status"] != 200 or prev["decision"] not in d.REPLAYABLE:
            return {}
        headers = {}
        if prev["etag"]:
            headers["If-None-Match"] = prev["etag"]
        if prev["last_modified"]:
            headers["If-Modified-Since"] = prev["last_modified"]
        if headers:
            meta["sitemap_conditional"] = True
        return headers
