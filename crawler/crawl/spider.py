"""The ``site`` spider: crawl one host the way a polite search-engine bot would.

It wires the crawl's rooms together (its cached properties) and runs the crawl's
life in order: open; ``start``, where the leading process (the one process, or the
coordinator) probes the not-found page (:mod:`crawler.crawl.notfoundprobe`), then
seeds the crawl; the pages, each judged on its rendered DOM, on its raw HTML when the
render fails; close. What one request led to (its records and aliases, nothing when
a callback failed) is yielded as one :class:`crawler.core.items.PageRecords` item.

The same spider runs every mode: a distributed crawl's extension
(:class:`crawler.distributed.sharing.RedisSharing`) stands in for :class:`Sharing`
(docs/distributed.md).

Spider arguments: ``url`` (the start URL, required).
Settings: those of the frontier, the judge, the run state, the seeds, the probe and
the render policy, and ``SITEMAP_PARSE_*``.
Stats: ``sitemap/render/failed`` (judged on the raw HTML),
``sitemap/render/unavailable`` (judged on the raw HTML for want of a browser).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.http import HtmlResponse, Response

from crawler.core import decisions as d
from crawler.core.items import PageRecords, UrlRecord
from crawler.core.logonce import LogOnce
from crawler.core.urls import site_of, start_url
from crawler.crawl.frontier import Frontier
from crawler.crawl.judge import PageJudge
from crawler.crawl.notfoundprobe import PROBE, NotFoundProbe
from crawler.crawl.restapi import RestSignals
from crawler.crawl.seeds import SitemapSeeds
from crawler.fetch.rendering import RenderPolicy
from crawler.fetch.robotsrules import RobotsRules
from crawler.ledger.runstate import RunState
from crawler.page.links import API_REL, link_header_targets
from crawler.page.parsepool import PageAnalyser, page_analyser

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from crawler.page.analysis import PageAnalysis
    from crawler.page.softnotfound import PagePrint

logger = logging.getLogger(__name__)


#: Meta keys of the item of the start URLs, and of the item that ends the probe.
BEGIN = "sitemap_begin"
PROBED = "sitemap_probed"

Callback = Callable[["SiteSpider", Any], AsyncIterator[Any]]


def _one_item(method: Callback) -> Callback:
    """A page request's callback or errback that yields exactly one item, even when it
    fails (a distributed crawl ends the request's claim with it): all *method* yields
    but requests, then the requests (the frontier's candidates then all belong to this
    request). A request for the same page (its render) carries the page on: then there
    is no item unless there are records. A failure is logged and counted
    (``sitemap/callback_errors``), and the item still goes: the page's URL stays
    "queued" and is finished as unfetched."""

    @functools.wraps(method)
    async def handled(spider: SiteSpider, answer: Any) -> AsyncIterator[Any]:
        meta = answer.meta if isinstance(answer, Response) else answer.request.meta
        url = meta.get("sitemap_url")
        # A Failure's page was fetched when its render failed (its raw answer is kept).
        fetched = isinstance(answer, Response) or url in spider.raw
        if url is not None:
            spider.frontier.answered(url)  # no longer in flight, whatever it leads to
        records: list[Any] = []
        requests: list[Request] = []
        goes_on = False
        try:
            async for out in method(spider, answer):
                if isinstance(out, Request):
                    goes_on = goes_on or (url is not None and out.meta.get("sitemap_url") == url)
                    requests.append(out)
                else:
                    records.append(out)
        except Exception:
            logger.exception("Spider error processing %s", url)
            spider.crawler.stats.inc_value("sitemap/callback_errors")
        if records or not goes_on:
            yield spider._item(meta, records, fetched)
        for request in requests:
            yield request

    return handled


class Sharing:
    """What the processes of one crawl share, and how the crawl's steps reach the
    leading process: in one process, nothing is shared and the leader is here."""

    #: This process leads the crawl: it probes the not-found page and seeds the crawl.
    leading = True

    def __init__(self) -> None:
        self.prints: list[tuple[str, PagePrint]] = []  # the probe's, for the judge

    def previous_run(self, state: RunState) -> Any:
        return state.previous

    def make_frontier(self, *args: Any) -> Frontier:
        return Frontier.from_crawler(*args)

    def fail_run(self, state: RunState) -> Callable[[str], None]:
        return state.fail

    def keep_not_found_print(self, url: str, found: PagePrint) -> None:
        self.prints.append((url, found))

    def not_found_prints(self) -> list[tuple[str, PagePrint]]:
        return self.prints

    def tell_leader_probe_is_over(self, spider: SiteSpider, meta: dict[str, Any]) -> Iterator[Any]:
        """The probe's last request (its *meta*) was answered: the leader seeds the crawl."""
        yield from spider.seed_crawl()

    def add_to_item(self, records: list[Any]) -> None:
        """Add to an item's *records* what the frontier keeps to send with them (nothing)."""

    async def follow_crawl(self, spider: SiteSpider) -> AsyncIterator[Any]:
        """What ``start`` does once the leader seeded: nothing (the engine crawls)."""
        return
        yield


class SiteSpider(Spider):
    name = "site"

    def __init__(self, url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_url = start_url(url)
        # The raw answers of the pages being rendered, by URL: a failed render is
        # judged on them, a rendered page with their status and headers.
        self.raw: dict[str, tuple[Response, PageAnalysis]] = {}
        self._warn_render = LogOnce(logger)
        self.rest: RestSignals | None = None  # the site's REST API, once found

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.opened, signal=signals.spider_opened)
        crawler.signals.connect(spider._robots_parsed, signal=signals.robots_parsed)
        return spider

    # The rooms are built when first needed: Scrapy makes the spider before the
    # crawler's stats and extensions (the run state among them) exist.

    @cached_property
    def run_state(self) -> RunState:
        return RunState.of(self.crawler)

    @cached_property
    def sharing(self) -> Sharing:
        return self.crawler.get_extension(Sharing) or Sharing()

    @cached_property
    def previous(self) -> Any:
        return self.sharing.previous_run(self.run_state)

    @cached_property
    def frontier(self) -> Frontier:
        crawler, url, public = self.crawler, self.start_url, self.run_state.public
        args = (crawler, url, public, self.previous, self.parse, self.failed)
        return self.sharing.make_frontier(*args)

    @cached_property
    def analyser(self) -> PageAnalyser:
        return page_analyser(self.crawler.settings)

    @cached_property
    def judge(self) -> PageJudge:
        return PageJudge(
            self.crawler,
            self.start_url,
            public=self.run_state.public,
            analyser=self.analyser,
            previous=self.previous,
            leads=self.frontier,
            fail=self.sharing.fail_run(self.run_state),
        )

    @cached_property
    def probe(self) -> NotFoundProbe:
        keep, shared = self.sharing.keep_not_found_print, self.sharing.not_found_prints
        return NotFoundProbe(self.judge, keep, shared, self.probed, self.crawler.settings)

    @cached_property
    def seeds(self) -> SitemapSeeds | None:
        s = self.crawler.settings
        given, usual = s.getlist("SITEMAP_SEED_SITEMAP_URLS"), s.getbool("SITEMAP_SEED_SITEMAPS")
        if not (usual or given or self._signals):
            return None
        return SitemapSeeds(
            self.start_url,
            given=given,
            usual=usual,
            seed=self.frontier.seed,
            callback=self.read_sitemap,
            errback=self.sitemap_failed,
            stats=self.crawler.stats,
            max_depth=s.getint("SITEMAP_AUDIT_MAX_DEPTH"),
            max_bytes=s.getint("SITEMAP_AUDIT_MAX_BYTES"),
            signal=self.frontier.signal if self._signals else None,
        )

    @cached_property
    def _signals(self) -> bool:
        """Whether tonight reads the site's change signals: a night that keeps pages
        from the previous run (crawler.ledger.schedule)."""
        policy, previous = self.frontier.policy, self.previous
        return bool(policy and not policy.full and previous and previous.scheduled())

    @cached_property
    def render(self) -> RenderPolicy:
        return RenderPolicy.from_crawler(self.crawler, self.start_url)

    # -- the crawl's life, in order: open, probe, seed, the pages (below), close ---------

    def opened(self) -> None:
        self.analyser.open(self.crawler.stats)  # the reactor and stats exist from now on

    async def start(self) -> AsyncIterator[Any]:
        """The leader probes the not-found page, then seeds; then each its mode's way."""
        if self.run_state.locked_out:
            return  # another run owns the state directory
        if self.sharing.leading:
            for out in self.probe_not_found_page():
                yield out
        async for out in self.sharing.follow_crawl(self):
            yield out

    def probe_not_found_page(self) -> Iterator[Any]:
        """The start URL waits for the probe: every page is judged knowing the site's
        "not found" page. ``state``: Scrapy's SpiderState (an interrupted run's)."""
        saved = getattr(self, "state", None)
        if saved and "seen" in saved:
            self.probe.restore(saved)
        elif (first := self.probe.first_request()) is not None:
            yield first
            return
        yield from self.seed_crawl()

    async def probed(self, answer: Response | Failure) -> AsyncIterator[Any]:
        """A probe's answer, or its failure (disallowed by robots.txt, unanswered): the
        next probe, or the probe is over."""
        if isinstance(answer, Response):
            meta, following = answer.meta, await self.probe.answered(answer)
        else:
            meta, following = answer.request.meta, None  # type: ignore[attr-defined]
        if following is None:
            for out in self.sharing.tell_leader_probe_is_over(self, meta):
                yield out
            return
        yield following
        yield self._item(meta, [], fetched=True)

    def seed_crawl(self) -> Iterator[Any]:
        """The probe is over: the start URLs, then the sitemap seeds' first requests, the
        robots.txt's read during the probe (a worker's comes with its report) first: a
        seed's page read before the start URLs would find one a level deep."""
        self.probe.read_findings()
        records: list[Any] = []
        for out in self.frontier.start(getattr(self, "state", None)):
            if isinstance(out, Request):
                yield out
            else:
                records.append(out)
        yield self._item({BEGIN: True}, records, fetched=False)
        robots = self.run_state.robots
        if self.seeds is not None:
            if self.seeds.reads_robots and robots is not None and robots["text"] is not None:
                lines = RobotsRules.parse(robots["text"].encode()).sitemaps
                yield from self.seeds.declared(lines, robots["origin"] + "/robots.txt")
            yield from self.seeds.first_requests()

    def _robots_parsed(self, robotparser: Any, request: Request) -> None:
        """robots.txt's ``Sitemap:`` lines, read for seeds (``--seed-sitemaps``), unless
        read during the probe (:meth:`seed_crawl` reads those)."""
        sitemaps = getattr(getattr(robotparser, "rp", None), "sitemaps", None)
        seeds, engine = self.seeds, self.crawler.engine
        if seeds is None or not seeds.reads_robots or not sitemaps or engine is None:
            return
        if PROBE not in request.meta:
            for sitemap in seeds.declared(sitemaps, request.url):
                engine.crawl(sitemap)

    def _signal_sources(self, response: Response, record: UrlRecord) -> Iterator[Request]:
        """The start page's feeds and the site's REST API, read for change signals."""
        if record.url != self.start_url or self.frontier.policy is None:
            return
        found = [line.partition(" ")[::2] for line in record.unfollowed]
        api = [url for kind, url in found if kind == "api"] + link_header_targets(response, API_REL)
        if self.seeds is not None and self.seeds.signal is not None:
            yield from self.seeds.feeds(url for kind, url in found if kind == "feed")
        if api and self.rest is None and site_of(api[0]) == site_of(self.start_url):
            previous = self.previous
            self.rest = RestSignals(
                api[0],
                signal=self.frontier.signal,
                recheck=self.frontier.verify,
                before=previous.api_links() if previous is not None else None,
                keep=self.run_state.keep_api_links,
                callback=self.read_api,
                errback=self.api_failed,
                stats=self.crawler.stats,
            )
            yield from self.rest.first_requests()

    @_one_item
    async def read_api(self, response: Response) -> AsyncIterator[Any]:
        """A page of the site's REST API's lists: change signals."""
        assert self.rest is not None
        for out in self.rest.read(response):
            yield out

    @_one_item
    async def api_failed(self, failure: Failure) -> AsyncIterator[Any]:
        assert self.rest is not None
        for out in self.rest.failed(failure):
            yield out

    @_one_item
    async def read_sitemap(self, response: Response) -> AsyncIterator[Any]:
        """One of the site's sitemaps: its entries as seeds."""
        assert self.seeds is not None
        for out in self.seeds.read(response):
            yield out

    def sitemap_failed(self, failure: Failure) -> Iterator[PageRecords]:
        assert self.seeds is not None
        self.seeds.failed(failure)
        yield self._item(failure.request.meta, [], fetched=False)  # type: ignore[attr-defined]

    def _item(self, meta: dict[str, Any], records: list[Any], fetched: bool) -> PageRecords:
        """What one request led to, as one item."""
        self.sharing.add_to_item(records)
        return PageRecords(records, meta=meta, fetched=fetched)

    # -- the pages (each callback and errback: _one_item) --------------------------------

    @_one_item
    async def parse(self, response: Response) -> AsyncIterator[Any]:
        self.probe.read_findings()
        url = response.meta["sitemap_url"]
        # An HTML page is parsed and read by the page-parsing pool (maybe in a worker
        # process) while this process goes on with other responses.
        analysis, note = None, None
        if isinstance(response, HtmlResponse) and self.judge.is_html_page(response):
            analysis = await self.analyser.analyse(response)
            if (reason := self.render.why(url, analysis)) is not None:
                if self.render.problem is None:
                    self.raw[url] = (response, analysis)
                    yield self.render.request(
                        response, reason, callback=self.parse_rendered, errback=self.render_failed
                    )
                    return
                stats = self.crawler.stats
                stats.inc_value("sitemap/render/unavailable")
                stats.set_value("sitemap/render/problem", self.render.problem)
                note = f"not rendered ({reason}): {self.render.problem}"
        for out in self._judged(response, analysis, note):
            yield out

    @_one_item
    async def parse_rendered(self, response: Response) -> AsyncIterator[Any]:
        """A page rendered in the browser: judged on its rendered DOM, with the raw
        answer's status and headers."""
        meta = response.meta
        url = meta["sitemap_url"]
        raw, analysis = self.raw.pop(url, (None, None))
        if raw is None or analysis is None:  # a resumed run: the raw answer is gone
            raw = response
        note, warning = f"rendered ({meta['sitemap_render']})", None
        if isinstance(response, HtmlResponse) and isinstance(raw, HtmlResponse):
            analysis = await self.analyser.analyse(response)
            if errors := meta.get("sitemap_render_errors"):
                note += f"; {len(errors)} script errors"
                warning = f"script error while rendering: {errors[0]}"
            if not meta.get("sitemap_render_settled", True):
                note += f"; not settled after {self.crawler.settings['SITEMAP_RENDER_TIMEOUT']} s"
        for out in self._judged(raw, analysis, note, warning):
            yield out

    @_one_item
    async def render_failed(self, failure: Failure) -> AsyncIterator[Any]:
        """A render that failed (timed out, crashed): the page is judged on its raw
        HTML, with a warning."""
        request: Request = failure.request  # type: ignore[attr-defined]  # set by Scrapy
        url = request.meta["sitemap_url"]
        raw, analysis = self.raw.pop(url, (None, None))
        if raw is None:
            yield self.judge.failed(failure)
            return
        self.crawler.stats.inc_value("sitemap/render/failed")
        error = f"{failure.type.__name__ if failure.type else 'Error'}: {failure.getErrorMessage()}"
        error = " ".join(error.split())[:300]
        self._warn_render("%s: render failed, judged on its raw HTML (%s)", url, error)
        note = f"render failed ({request.meta.get('sitemap_render')}): {error}; raw HTML judged"
        for out in self._judged(raw, analysis, note, f"render failed: {error}"):
            yield out

    def _judged(
        self,
        response: Response,
        analysis: PageAnalysis | None,
        note: str | None = None,
        warning: str | None = None,
    ) -> Iterator[Any]:
        url = response.meta["sitemap_url"]
        for out in self.judge.judge(response, analysis):
            if isinstance(out, UrlRecord) and out.url == url and note is not None:
                out.render = note
                if warning is not None:
                    out.warnings.append(warning)
            if isinstance(out, UrlRecord) and out.decision == d.LISTED:
                self.frontier.observe(out.url, out.main_hash, out.bag_hash)
            if isinstance(out, UrlRecord) and out.url == url and not out.kept:
                yield from self._signal_sources(response, out)
            yield out

    @_one_item
    async def failed(self, failure: Failure) -> AsyncIterator[Any]:
        yield self.judge.failed(failure)

    def closed(self, reason: str) -> None:
        state = getattr(self, "state", None)
        if isinstance(state, dict):
            self.frontier.save(state)
            state["soft_prints"] = self.judge.soft_not_found.prints  # see NotFoundProbe.restore
