"""The ``site`` spider: crawl one host the way a polite search-engine bot would.

The spider only wires the crawl's rooms together (its cached properties); a page is
judged on its rendered DOM, on its raw HTML when the render fails.

Before the start URL, it asks for an address that cannot exist (the soft-404 probe,
:mod:`crawler.page.softnotfound`; a second of another shape when the first answers
200): the page a site serves for it with 200 is its "not found" page, which the judge
then recognises. The probes are never recorded in the ledger.

What one request led to (its records and aliases, nothing when a callback failed)
is yielded as one :class:`crawler.core.items.PageRecords` item, for the pipelines.
The same spider runs every mode: a distributed crawl's extension
(:class:`crawler.distributed.sharing.RedisSharing`) stands in for :class:`Sharing`,
with its scheduler and report pipeline swapped in by settings, as scrapy-redis plugs
in. Only the leading process (the one process, or the coordinator) starts the crawl.

Spider arguments: ``url`` (the start URL, required).
Settings: those of the frontier, the judge, the run state, the seeds and the render
policy, and ``SITEMAP_PARSE_*``, ``SITEMAP_SOFT404_PROBE``.
Stats: ``sitemap/soft404/probes``, ``sitemap/soft404/probe_status``,
``sitemap/soft404/detected``, ``sitemap/soft404/shell`` (the probe got an application
shell), ``sitemap/render/failed`` (judged on the raw HTML),
``sitemap/render/unavailable`` (judged on the raw HTML for want of a browser).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request, Spider, signals
from scrapy.http import HtmlResponse, Response

from crawler.core import decisions as d
from crawler.core.items import PageRecords, UrlRecord
from crawler.core.urls import site_of, start_url
from crawler.crawl.frontier import Frontier
from crawler.crawl.judge import PageJudge
from crawler.crawl.restapi import RestSignals, api_roots
from crawler.crawl.seeds import SitemapSeeds
from crawler.fetch.rendering import RenderPolicy
from crawler.ledger.runstate import RunState
from crawler.page.analysis import not_found_print
from crawler.page.parsepool import PageAnalyser, page_analyser
from crawler.page.softnotfound import probe_url

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from crawler.page.analysis import PageAnalysis
    from crawler.page.softnotfound import PagePrint

logger = logging.getLogger(__name__)


#: Seconds a soft-404 probe may take (at most DOWNLOAD_TIMEOUT).
PROBE_TIMEOUT = 10.0
#: Meta keys of the item of the start URLs, and of the item that ends the probe.
BEGIN = "sitemap_begin"
PROBED = "sitemap_probed"

Callback = Callable[["SiteSpider", Any], AsyncIterator[Any]]


def _one_item(method: Callback) -> Callback:
    """A page request's callback or errback that yields exactly one item, even when it
    fails (a distributed crawl ends the request's claim with it): see :meth:`SiteSpider._one`."""

    @functools.wraps(method)
    async def handled(spider: SiteSpider, answer: Any) -> AsyncIterator[Any]:
        if isinstance(answer, Response):
            meta, fetched = answer.meta, True
        else:  # a Failure; a failed render of a fetched page is a fetched page
            meta = answer.request.meta
            fetched = meta.get("sitemap_url") in spider.raw
        async for out in spider._one(meta, method(spider, answer), fetched):
            yield out

    return handled


class Sharing:
    """What the processes of one crawl share: in one process, nothing (a distributed
    crawl's extension stands in for it)."""

    #: This process leads the crawl: it probes, starts the frontier and the seeds.
    leading = True

    def __init__(self) -> None:
        self.sitemaps: list[str] = []

    def hold(self, sitemaps: list[str]) -> None:
        """robots.txt's sitemaps, read during the probe: kept for the leading process."""
        self.sitemaps += sitemaps

    def held(self) -> list[str]:
        """The sitemaps held, once the start URLs went."""
        return self.sitemaps

    def previous(self, state: RunState) -> Any:
        """The previous run's records, as the frontier and the judge ask them."""
        return state.previous

    def frontier(self, *args: Any) -> Frontier:
        """The frontier (:meth:`Frontier.from_crawler`'s arguments)."""
        return Frontier.from_crawler(*args)

    def fail(self, state: RunState) -> Callable[[str], None]:
        return state.fail

    def collect(self, records: list[Any]) -> None:
        """Add to *records* what the frontier keeps to send with them (nothing)."""

    def probe_over(self, spider: SiteSpider, meta: dict[str, Any]) -> Iterator[Any]:
        """The soft-404 probe's last request (its *meta*) was answered: the crawl starts."""
        yield from spider.after_probe()

    def add_print(self, judge: PageJudge, url: str, found: PagePrint) -> None:
        """The probe of *url* found the site's "not found" page: its fingerprint."""
        judge.soft_not_found.add(url, found)

    def prints(self, judge: PageJudge) -> None:
        """Before the first page: the fingerprints other processes' probes found (none)."""

    async def run(self, spider: SiteSpider) -> AsyncIterator[Any]:
        """What ``start`` does once the crawl is started: nothing more."""
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
        self._warned_render = False
        self._prints_read = False
        self.rest: RestSignals | None = None  # the site's REST API, once found

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._opened, signal=signals.spider_opened)
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
        return self.sharing.previous(self.run_state)

    @cached_property
    def frontier(self) -> Frontier:
        crawler, url, public = self.crawler, self.start_url, self.run_state.public
        return self.sharing.frontier(crawler, url, public, self.previous, self.parse, self.failed)

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
            fail=self.sharing.fail(self.run_state),
        )

    @cached_property
    def seeds(self) -> SitemapSeeds | None:
        s = self.crawler.settings
        given = s.getlist("SITEMAP_SEED_SITEMAP_URLS")
        if not (s.getbool("SITEMAP_SEED_SITEMAPS") or given or self._signals):
            return None
        assert self.crawler.stats is not None
        return SitemapSeeds(
            self.start_url,
            given=given,
            usual=s.getbool("SITEMAP_SEED_SITEMAPS"),
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
        return (
            policy is not None
            and not policy.full
            and previous is not None
            and bool(previous.scheduled())
        )

    @cached_property
    def render(self) -> RenderPolicy:
        return RenderPolicy.from_crawler(self.crawler, self.start_url)

    def _opened(self) -> None:
        self.analyser.open(self.crawler.stats)  # the reactor and stats exist from now on

    async def start(self) -> AsyncIterator[Any]:
        if self.run_state.locked_out:
            return  # another run owns the state directory
        if self.sharing.leading:
            for out in self._lead():
                yield out
        async for out in self.sharing.run(self):
            yield out

    def _lead(self) -> Iterator[Any]:
        saved = getattr(self, "state", None)
        if saved and "seen" in saved:
            # A resumed run: the probe's findings were saved with the frontier.
            for url, found in saved.get("soft_prints", []):
                self.judge.soft_not_found.add(url, found)
            self._probed()
        elif self.crawler.settings.getbool("SITEMAP_SOFT404_PROBE"):
            # The start URL waits for the probe: every page is judged knowing the
            # site's "not found" page.
            self.analyser.prints = True
            yield self._probe(probe_url(self.start_url), 1, 0)
            return
        yield from self._begin()

    def _robots_parsed(self, robotparser: Any, request: Request) -> None:
        """robots.txt's ``Sitemap:`` lines, read for seeds (``--seed-sitemaps``). Read
        during the soft-404 probe, they wait for the start URLs (:meth:`_begin`): a
        seed's page read first would find a start URL one level deep."""
        sitemaps = getattr(getattr(robotparser, "rp", None), "sitemaps", None)
        engine = self.crawler.engine
        if self.seeds is None or not self.seeds.reads_robots or not sitemaps or engine is None:
            return
        if "sitemap_probe" in request.meta:
            self.sharing.hold([urljoin(request.url, line) for line in sitemaps])
            return
        for sitemap in self.seeds.declared(sitemaps, request.url):
            engine.crawl(sitemap)

    def _signal_sources(self, response: Response, record: UrlRecord) -> Iterator[Request]:
        """The start page's feeds and the site's REST API, read for change signals."""
        if record.url != self.start_url or self.frontier.policy is None:
            return
        found = [line.partition(" ")[::2] for line in record.unfollowed]
        api = [url for kind, url in found if kind == "api"] + api_roots(response)
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

    def _begin(self) -> Iterator[Any]:
        """The start URLs (after the soft-404 probe), then the sitemap seeds' first
        requests (the held ones of robots.txt first). ``state``: Scrapy's SpiderState,
        the saved frontier of an interrupted run."""
        records: list[Any] = []
        for out in self.frontier.start(getattr(self, "state", None)):
            if isinstance(out, Request):
                yield out
            else:
                records.append(out)
        yield self._item({BEGIN: True}, records, fetched=False)
        if self.seeds is not None:
            yield from self.seeds.declared(self.sharing.held(), self.start_url)
            yield from self.seeds.first_requests()

    def _item(self, meta: dict[str, Any], records: list[Any], fetched: bool) -> PageRecords:
        """What one request led to, as one item."""
        self.sharing.collect(records)
        return PageRecords(records, meta=meta, fetched=fetched)

    # -- the soft-404 probe -------------------------------------------------------------

    def _probe(self, url: str, number: int, hops: int) -> Request:
        self.crawler.stats.inc_value("sitemap/soft404/probes")
        return Request(
            url,
            callback=self.probed,
            errback=self.probe_failed,
            dont_filter=True,
            meta={
                "sitemap_probe": (number, hops),
                "handle_httpstatus_all": True,
                "dont_redirect": True,
                # The start URL waits for it: a probe that hangs is not worth a retry.
                "dont_retry": True,
                "download_timeout": min(
                    PROBE_TIMEOUT, self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
                ),
            },
        )

    async def probed(self, response: Response) -> AsyncIterator[Any]:
        number, hops = response.meta["sitemap_probe"]
        stats = self.crawler.stats
        stats.set_value("sitemap/soft404/probe_status", response.status)
        location = response.headers.get(b"Location")
        if 300 <= response.status < 400 and location is not None and hops < 1:
            target = response.urljoin(location.decode("latin-1"))
            if site_of(target) == site_of(self.start_url):
                yield self._probe(target, number, hops + 1)
                yield self._item(response.meta, [], fetched=True)
                return
        found = False
        if (
            response.status == 200  # a "not found" page served as such is no soft 404
            and isinstance(response, HtmlResponse)
            and self.judge.is_html_page(response)
        ):
            self.analyser.prints = True  # whichever process fetched the probe
            analysis = await self.analyser.analyse(response)
            if analysis.shell is not None:
                # A single-page application answers every address with its shell: the
                # raw shell is no "not found" page, or every route would be one
                # (the rendered routes carry their own noindex, docs/rendering.md).
                stats.set_value("sitemap/soft404/shell", True)
            elif analysis.soft_print is not None:
                self.sharing.add_print(self.judge, response.url, analysis.soft_print)
                found = True
        elif (
            response.status in (404, 410)
            and isinstance(response, HtmlResponse)  # Scrapy's class for an HTML type
            and hops == 0
        ):
            # The site's own "not found" page, answered as such: a page answered 200
            # with the same words is one too. Its words only (no parse in the pool,
            # which may not have started yet).
            printed = not_found_print(response, self.analyser.volatile)
            if printed is not None:
                self.sharing.add_print(self.judge, response.url, printed)
        if found and number == 1:
            yield self._probe(probe_url(self.start_url, second=True), 2, 0)
            yield self._item(response.meta, [], fetched=True)
            return
        for out in self.sharing.probe_over(self, response.meta):
            yield out

    def probe_failed(self, failure: Failure) -> Iterator[Any]:
        # Disallowed by robots.txt, or no answer: the crawl goes on without it.
        yield from self.sharing.probe_over(self, failure.request.meta)  # type: ignore[attr-defined]

    def after_probe(self) -> Iterator[Any]:
        """The probes are over: the crawl starts."""
        self._probed()
        yield from self._begin()

    def _probed(self) -> None:
        self._ready()
        found = self.judge.soft_not_found
        self.crawler.stats.set_value("sitemap/soft404/detected", found.answers_200)
        self.analyser.prints = found.wanted

    # -- the pages (each callback and errback: _one_item) --------------------------------

    def _ready(self) -> None:
        """Once, before the first page is judged here: the probes' findings."""
        if not self._prints_read:
            self._prints_read = True
            self.sharing.prints(self.judge)
            self.analyser.prints = self.judge.soft_not_found.wanted

    @_one_item
    async def parse(self, response: Response) -> AsyncIterator[Any]:
        self._ready()
        url = response.meta["sitemap_url"]
        self.frontier.answered(url)
        # An HTML page is parsed and read by the page-parsing pool (maybe in a worker
        # process) while this process goes on with other responses.
        analysis, note = None, None
        if isinstance(response, HtmlResponse) and self.judge.is_html_page(response):
            analysis = await self.analyser.analyse(response)
            reason = self.render.why(url, analysis)
            if reason is not None:
                if self.render.problem is None:
                    self.raw[url] = (response, analysis)
                    yield self.render.request(
                        response, reason, callback=self.parse_rendered, errback=self.render_failed
                    )
                    return
                stats = self.crawler.stats
                assert stats is not None
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
        self.frontier.answered(url)
        raw, raw_analysis = self.raw.pop(url, (None, None))
        if raw is None or raw_analysis is None:  # a resumed run: the raw answer is gone
            raw = response
        if not isinstance(response, HtmlResponse) or not isinstance(raw, HtmlResponse):
            for out in self._judged(raw, raw_analysis, f"rendered ({meta['sitemap_render']})"):
                yield out
            return
        analysis = await self.analyser.analyse(response)
        note = f"rendered ({meta['sitemap_render']})"
        warning = None
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
            yield self._failed(failure)
            return
        self.frontier.answered(url)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("sitemap/render/failed")
        error = f"{failure.type.__name__ if failure.type else 'Error'}: {failure.getErrorMessage()}"
        error = " ".join(error.split())[:300]
        if not self._warned_render:
            self._warned_render = True
            why = "render failed, judged on its raw HTML"
            logger.warning("%s: %s (%s; logged once)", url, why, error)
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
        yield self._failed(failure)

    def _failed(self, failure: Failure) -> UrlRecord:
        record = self.judge.failed(failure)
        self.frontier.answered(record.url)
        return record

    async def _one(
        self, meta: dict[str, Any], outputs: AsyncIterator[Any], fetched: bool
    ) -> AsyncIterator[PageRecords | Request]:
        """Everything but the requests of *outputs* as one item, then the requests
        (nothing is handed to Scrapy before the item is made: the frontier's
        candidates then all belong to this request). A request for the same page
        (its render) carries the page on: then there is no item unless there are
        records. A failure here is logged and counted (``sitemap/callback_errors``),
        and the item still goes, with what was decided before it: the page's URL
        stays "queued" and is finished as unfetched."""
        records: list[Any] = []
        requests: list[Request] = []
        goes_on = False
        try:
            async for out in outputs:
                if isinstance(out, Request):
                    url = out.meta.get("sitemap_url")
                    goes_on = goes_on or (url is not None and url == meta.get("sitemap_url"))
                    requests.append(out)
                else:
                    records.append(out)
        except Exception:
            logger.exception("Spider error processing %s", meta.get("sitemap_url"))
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("sitemap/callback_errors")
        if records or not goes_on:
            yield self._item(meta, records, fetched)
        for request in requests:
            yield request

    def closed(self, reason: str) -> None:
        state = getattr(self, "state", None)
        if isinstance(state, dict):
            self.frontier.save(state)
            state["soft_prints"] = self.judge.soft_not_found.prints
