"""The crawl frontier: where the crawl goes next, and why not elsewhere.

Every URL the crawl finds (a start URL, a seed, a page's link, a redirect, canonical or
refresh target) comes here once, as a :class:`Lead`: normalised, keyed, checked against
the seen-set (a known URL under another form is an alias), then put to the rule book
(:mod:`crawler.crawl.rulebook`). Refused, it gets its final decision here; let through,
a ``queued`` record and a request, conditional or kept from the previous run as the
revisit schedule says (docs/crawling.md, "Order and limits"; docs/nightly.md). A URL
left out for depth is let in when a shorter path turns up (concurrency can let a long
path win the race: :mod:`crawler.crawl.counted`). Its state is saved into the spider's
``state`` so that ``--resume`` continues where it stopped (``JOBDIR`` keeps the queue).

Meta keys of its requests: ``sitemap_url``, ``sitemap_depth``, ``sitemap_hops``,
``sitemap_referrer``, ``sitemap_conditional``, ``sitemap_reconsidered``, ``sitemap_kept``
(not due tonight: answered without a request, crawler.fetch.kept), ``sitemap_recheck``
(kept, then named by a change signal: asked after all).
Stats: ``sitemap/discovered``, ``sitemap/ignored/scheme``,
``sitemap/depth_reconsidered``, ``sitemap/seeds/<found_by>`` (seeds new to the
crawl), ``sitemap/learned/params`` (parameters learned this run),
``sitemap/schedule/signalled``, ``sitemap/schedule/rechecked`` (change signals:
docs/nightly.md).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
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
from crawler.core.urls import Stripping, url_key
from crawler.crawl.calendars import CalendarRule, parse_window
from crawler.crawl.counted import AGAIN, KNOWN, MemoryCounters, Outcome
from crawler.crawl.params import ParamLearner
from crawler.crawl.rulebook import Found, QueryVariants, RuleBook, RuleParams, starts_of
from crawler.crawl.seeds import read_url_file
from crawler.ledger.runstate import RunState
from crawler.ledger.schedule import RevisitPolicy, keepable, later
from crawler.sitemaps.limits import MAX_LOC_LENGTH

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from crawler.core.decisions import Refusal
    from crawler.core.publicurl import PublicUrls
    from crawler.ledger.previous import PreviousRun
    from crawler.page.links import Resolved


@dataclass(frozen=True, slots=True)
class Lead:
    """A URL found, as found: on *referrer* (None for a seed) at *depth*, after *hops*
    redirects, and how (*found_by*, :data:`crawler.core.items.SEEDS`; *found_from*: a
    seed's file or sitemap). *normal* is its normalised form when the finder has it,
    *key* and *fp* (only with *normal*) that form's key and fingerprint (a resolved
    link has all three: keying a URL again is a w3lib canonicalisation)."""

    raw: str
    depth: int
    referrer: str | None = None
    hops: int = 0
    normal: str | None = None
    key: str | None = None
    fp: int | None = None
    found_by: str = FOUND_LINK
    found_from: str | None = None


def refuse(record: UrlRecord, refusal: Refusal) -> None:
    """*record* is decided by *refusal*, with the rule that made it."""
    record.decision, record.reason, record.target = refusal.decision, refusal.reason, refusal.target
    record.rule = refusal.rule


def page_meta(url: str, depth: int, hops: int, referrer: str | None) -> dict[str, Any]:
    """The meta of a page's request: every status and redirect reaches the page judge."""
    return {
        "sitemap_url": url,
        "sitemap_depth": depth,
        "sitemap_hops": hops,
        "sitemap_referrer": referrer,
        "handle_httpstatus_all": True,
        "dont_redirect": True,
    }


#: What discovering a URL yields: its record, an alias, its request, or that a
#: sitemap's seed is linked after all.
Discovered = UrlRecord | Alias | Request | Linked


class Frontier:
    """The frontier of a crawl from *start_url* with the rules of the crawler's settings
    (see the module docstring): the seeds of a ``--urls`` file too; *callback*,
    *errback*: the spider's methods its requests go to; *previous*: the previous run,
    for conditional requests."""

    def __init__(
        self,
        crawler: Crawler,
        start_url: str,
        public: PublicUrls,
        previous: PreviousRun | None,
        callback: Callable[..., Any],
        errback: Callable[..., Any],
    ) -> None:
        s = crawler.settings
        assert crawler.stats is not None
        path = s.get("SITEMAP_URL_FILE")
        self.strip = strip = Stripping.from_settings(s)
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
        calendars = CalendarRule(parse_window(s.get("SITEMAP_CALENDAR_WINDOW")), today=today)
        self.more_starts = s.getlist("SITEMAP_START_URLS")
        rule_params = RuleParams(
            start_url=start_url,
            starts=starts_of(start_url, self.more_starts, strip),
            include=tuple(re.compile(p).pattern for p in s.getlist("SITEMAP_INCLUDE")),
            exclude=tuple(re.compile(p).pattern for p in s.getlist("SITEMAP_EXCLUDE")),
            max_loc_length=MAX_LOC_LENGTH,
            max_redirects=s.getint("SITEMAP_MAX_REDIRECTS"),
            calendar_window_days=calendars.window.days,
            calendar_steps=calendars.steps,
            calendar_today=calendars.today.isoformat(),
            trap_max_repeats=s.getint("SITEMAP_TRAP_MAX_REPEATS"),
            trap_max_segments=s.getint("SITEMAP_TRAP_MAX_SEGMENTS"),
            trap_max_query_variants=s.getint("SITEMAP_TRAP_MAX_QUERY_VARIANTS"),
            max_depth=s.getint("SITEMAP_MAX_DEPTH"),
            max_pages=s.getint("SITEMAP_MAX_PAGES"),
            strip_params=strip.params,
            strip_extra=strip.extra,
        )
        self.start_url = start_url
        self.url_file = (str(path), read_url_file(path, start_url)) if path else None
        self.callback, self.errback = callback, errback
        self.stats, self.public, self.previous = crawler.stats, public, previous
        self.calendars = calendars
        on_learn = ledger.learn_param if ledger is not None else None
        self.params = learner = ParamLearner(learned, on_learn, known=self._known)
        self.counters = MemoryCounters()
        self.rules = RuleBook.of(rule_params, public=public, learner=learner, calendars=calendars)
        # Other forms of known URLs, kept once each (fingerprints of the forms).
        self.alias_forms = SeenKeys()
        # URLs found in a sitemap and linked from no page yet (an orphan, so far).
        self.unlinked_seeds = SeenKeys()
        # The revisit schedule (None: every known URL is asked again, conditionally).
        self.policy: RevisitPolicy | None = state.policy if state is not None else None
        # URLs kept from the previous run tonight (not due), and URLs a signal says to
        # verify tonight before they were discovered (crawler.ledger.schedule).
        self.kept = SeenKeys()
        self.forced = SeenKeys()
        # Requests handed to the downloader and not answered yet: url -> (depth, hops,
        # referrer). Kept in the JOBDIR state so a resumed run asks them again.
        self.inflight: dict[str, tuple[int, int, str | None]] = {}
        if ledger is not None:
            # The rules' values, for `explain` about a URL the crawl never saw.
            obey = s.getbool("ROBOTSTXT_OBEY")
            ledger.set_meta("scope", {**rule_params.record(), "robots_obey": obey})

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any) -> Self:
        frontier = cls(crawler, *args)
        crawler.signals.connect(
            frontier.reached_downloader, signal=signals.request_reached_downloader
        )
        return frontier

    # -- the start, and the state kept for --resume ------------------------------------

    def start(self, saved: dict[str, Any] | None = None) -> Iterator[Discovered]:
        """The records and requests of the start URLs and the ``--urls`` file's seeds; or,
        given the *saved* state of an interrupted run, the requests that were in the
        downloader when it stopped (Scrapy's JOBDIR queue no longer holds them)."""
        if saved and "seen" in saved:
            self.counters, self.alias_forms = _counters(saved), saved["alias_forms"]
            self.unlinked_seeds = saved.get("unlinked_seeds", SeenKeys())
            self.stats.set_value("sitemap/resumed", True)
            for url, (depth, hops, referrer) in saved.get("inflight", {}).items():
                yield self._request(url, url_key(url), depth, hops, referrer, dont_filter=True)
            return
        for url in (self.start_url, *self.more_starts):
            yield from self.discover(Lead(url, 0, found_by=FOUND_START))
        if self.url_file is not None:
            path, urls = self.url_file
            for url in urls:
                yield from self.discover(Lead(url, 0, found_by=FOUND_URL_FILE, found_from=path))

    def save(self, state: dict[str, Any]) -> None:
        """Put what a resumed run needs into the spider's *state* (Scrapy's
        SpiderState pickles it into the JOBDIR when the spider closes)."""
        state.update(
            seen=self.counters,  # and what was counted, and the URLs held aside
            alias_forms=self.alias_forms,
            unlinked_seeds=self.unlinked_seeds,
            inflight=self.inflight,
        )

    def reached_downloader(self, request: Request) -> None:
        meta = request.meta
        if (url := meta.get("sitemap_url")) is not None:
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
        if self.counters.known(found.fp):
            if found.raw == found.url and not self.unlinked_seeds:
                return ()  # the usual one: no seed left to mark linked, no other form
            return (
                *self._linked(found.fp, found.key, referrer),
                *self._alias(found.raw, found.url),
            )
        return self.discover(
            Lead(found.raw, depth, referrer, normal=found.url, key=found.key, fp=found.fp)
        )

    def seed(
        self, raw: str, *, found_by: str, found_from: str | None, lastmod: str | None = None
    ) -> Iterator[Discovered]:
        """A seed found by no page (a sitemap's entry): judged like any URL, at depth 0;
        its *lastmod*, a signal (:meth:`signal`)."""
        yield from self.signal(raw, lastmod=lastmod)
        yield from self.discover(Lead(raw, 0, found_by=found_by, found_from=found_from))

    def signal(self, raw: str, *, lastmod: str | None, **found: object) -> Iterator[Discovered]:
        """A change signal (a sitemap's or feed's entry, the site's API; how it was
        *found* does not matter): *raw* was modified at *lastmod*, in the site's own
        time. When that is later than the page's last verification (the response's
        ``Date``: the site's time too, not this machine's clock; else the lastmod the
        previous run gave it), the page is verified tonight (:meth:`recheck`)."""
        if lastmod:
            yield from self.verify(raw, lastmod)

    def verify(self, raw: str, lastmod: str | None = None) -> Iterator[Discovered]:
        """A signal says the page at *raw* may be gone (the site's API no longer lists
        it), or changed at *lastmod* (:meth:`signal`): verified tonight, if the previous
        run knew it."""
        if self.policy is None or self.previous is None:
            return
        url = self.strip.normalize(raw)
        prev = self.previous.get(url_key(url)) if url is not None else None
        if url is None or prev is None:
            return
        if lastmod is not None:
            verified = prev.get("verified_date")
            since = verified or prev.get("lastmod")
            if not keepable(prev) or not later(lastmod, since, same_second=verified is not None):
                return
        self.stats.inc_value("sitemap/schedule/signalled")
        yield from self.recheck(url, prev.get("depth") or 0, prev.get("referrer"))

    def discover(self, lead: Lead) -> Iterator[Discovered]:
        """Decide what to do with a URL found (*lead*): queue it (yielding a ``queued``
        record and its request) or record why not."""
        if (keyed := self._keyed(lead)) is None:
            return
        url, key, fp = keyed
        claim, counters = None, self.counters
        if not counters.known(fp):
            claim = self.rules.claim(url, self._found(lead, url), counters.held.has_fp(fp))
        outcome = Outcome(KNOWN) if claim is None else self.counters.apply(fp, claim)
        if claim is None or outcome.seen == KNOWN:
            if lead.found_by == FOUND_LINK and lead.referrer is not None:
                yield from self._linked(fp, key, lead.referrer)
            yield from self._alias(lead.raw, url)
            return
        if outcome.seen == AGAIN:
            self.stats.inc_value("sitemap/depth_reconsidered")
        else:
            self.stats.inc_value("sitemap/discovered")
            if lead.found_by in SEEDS:
                self.stats.inc_value(f"sitemap/seeds/{lead.found_by}")
                if lead.found_by == FOUND_SITEMAP:
                    self.unlinked_seeds.add_fp(fp)
        record = self._record(lead, url, key)
        if (refusal := outcome.refusal(claim)) is not None:
            refuse(record, refusal)
            yield record
            return
        self.params.admit(url)
        yield record
        request = self._queued(lead, url, key, fp)
        if outcome.seen == AGAIN:
            request.meta["sitemap_reconsidered"] = True
        yield request

    def recheck(self, url: str, depth: int, referrer: str | None) -> Iterator[Discovered]:
        """A signal says *url* (normalised) may have changed: a page stopped linking to
        it, the site's sitemap or API dates it after its last verification. Verified
        tonight: asked now if it was kept from the previous run already, else when it
        is discovered. A URL fetched tonight already is not asked again."""
        if self.policy is None:
            return
        key = url_key(url)
        fp = fingerprint(key)
        if self.kept.has_fp(fp):
            self.kept.discard_fp(fp)
            yield self._recheck(url, key, depth, referrer)
        elif not self.counters.seen.has_fp(fp):
            self.forced.add_fp(fp)

    def _recheck(self, url: str, key: str, depth: int, referrer: str | None) -> Request:
        """The request of a kept page a signal names (meta ``sitemap_recheck``)."""
        self.stats.inc_value("sitemap/schedule/rechecked")
        request = self._request(url, key, depth, 0, referrer, dont_filter=True, verify=True)
        request.meta["sitemap_recheck"] = True
        return request

    def _linked(self, fp: int, key: str, referrer: str) -> Iterator[Linked]:
        """A seed of the site's sitemaps is linked from *referrer* after all."""
        if self.unlinked_seeds and self.unlinked_seeds.has_fp(fp):
            self.unlinked_seeds.discard_fp(fp)
            yield Linked(key, referrer)

    def _alias(self, raw: str, url: str) -> Iterator[Alias]:
        """Another form of a known URL: kept as an alias, once per form. A fragment
        alone does not make another form (tables of contents would flood the ledger)."""
        form = raw.partition("#")[0]
        if form != url and form not in self.alias_forms:
            self.alias_forms.add(form)
            yield Alias(alias=form, url=url)

    def _found(self, lead: Lead, url: str) -> Found:
        return self.rules.found(url, lead.depth, lead.hops, lead.referrer)

    @staticmethod
    def _record(lead: Lead, url: str, key: str) -> UrlRecord:
        """The ``queued`` record of a URL new to the crawl (normalised and keyed here
        already: the pipeline need not again)."""
        return UrlRecord(
            url=url,
            decision=d.QUEUED,
            raw_url=lead.raw if lead.raw != url else None,
            depth=lead.depth,
            referrer=lead.referrer,
            key=key,
            found_by=lead.found_by,
            found_from=lead.found_from,
        )

    def _keyed(self, lead: Lead) -> tuple[str, str, int] | None:
        """The lead's normalised form, key and fingerprint (those it has are kept);
        None, counted, for a URL of another scheme."""
        url = lead.normal or self.strip.normalize(lead.raw)
        if url is None:
            self.stats.inc_value("sitemap/ignored/scheme")
            return None
        key = lead.key or url_key(url)
        return url, key, fingerprint(key) if lead.fp is None else lead.fp

    def _known(self, url: str) -> bool:
        return self.counters.seen.has_fp(fingerprint(url_key(url)))

    def observe(self, url: str, main_hash: str | None, bag: str | None = None) -> None:
        """A listed page's main-content hash (and its hash whatever the order), to
        learn from (crawler.crawl.params)."""
        for _ in self.params.observe(url, main_hash, bag):
            self.stats.inc_value("sitemap/learned/params")

    # -- requests ----------------------------------------------------------------------

    def _queued(self, lead: Lead, url: str, key: str, fp: int) -> Request:
        """The request of a URL the rules let in (verified tonight if a start URL, or
        named by a signal)."""
        verify = lead.found_by == FOUND_START or self.forced.has_fp(fp)
        request = self._request(url, key, lead.depth, lead.hops, lead.referrer, verify=verify)
        if request.meta.get("sitemap_kept"):
            self.kept.add_fp(fp)
        return request

    def _request(
        self,
        url: str,
        key: str,
        depth: int,
        hops: int,
        referrer: str | None,
        dont_filter: bool = False,
        verify: bool = False,
    ) -> Request:
        """The request of a page; *verify*: asked tonight whatever its schedule says
        (a start URL, or a URL a signal named)."""
        meta = page_meta(url, depth, hops, referrer)
        headers = self._validators(key, meta, verify)
        return PageRequest(
            url,
            callback=self.callback,
            errback=self.errback,
            meta=meta,
            headers=headers,
            dont_filter=dont_filter,
            priority=meta.pop("sitemap_overdue", 0),
        )

    def _validators(self, key: str, meta: dict[str, Any], verify: bool) -> dict[str, str]:
        """Conditional-request headers from the previous run's record of *key*; none,
        and the meta key ``sitemap_kept``, for a URL the revisit schedule does not
        verify tonight (crawler.ledger.schedule): its previous record stands, and the
        request never leaves this process (crawler.fetch.kept).

        Scrapy's HttpCacheMiddleware (RFC2616Policy) would do this by keeping every
        response body on disk to replay it after a 304. The ledger already keeps what
        a replay needs (decision, hashes, lastmod and the page's links), so a few
        headers here cost no extra storage; the judge replays the 304.
        """
        prev = self.previous.get(key) if self.previous is not None else None
        if prev is None:
            return {}
        if self.policy is not None:
            if not verify and not self.policy.due(prev):
                meta["sitemap_kept"] = True
                return {}
            # The most overdue first, should a budget (--max-time) stop the night.
            meta["sitemap_overdue"] = self.policy.overdue(prev)
        if prev["status"] != 200 or prev["decision"] not in d.REPLAYABLE:
            return {}
        asked = (("If-None-Match", "etag"), ("If-Modified-Since", "last_modified"))
        headers = {header: prev[column] for header, column in asked if prev[column]}
        if headers:
            meta["sitemap_conditional"] = True
        return headers


def _counters(saved: dict[str, Any]) -> MemoryCounters:
    """The counters a resumed run goes on with; from the state an earlier version saved
    (the seen-set, the URLs held by the depth cap, the pages queued and the query
    variants of each path apart), the same counts under the rule book's names."""
    seen = saved["seen"]
    if isinstance(seen, MemoryCounters):
        return seen
    counts = {QueryVariants.counter(path): n for path, n in saved["trap_variants"].items()}
    counts[d.RULE_PAGES] = saved["scheduled"]
    return MemoryCounters(seen, saved.get("depth_capped", SeenKeys()), Counter(counts))
