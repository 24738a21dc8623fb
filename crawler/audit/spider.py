"""The ``audit`` spider: read a site's existing sitemaps and judge what they list.

It runs after a crawl (or on the ledger of an earlier one) with the ``site``
spider's page judge (:class:`crawler.judge.PageJudge`, with no leads: a listed page
is judged, its links are not followed), middlewares and politeness (issue #3):

1. Sitemap files are discovered from robots.txt ``Sitemap:`` lines (recorded in the
   crawl's ledger), the usual places (``/sitemap.xml``, ``/sitemap_index.xml``,
   ``/sitemap.xml.gz``, ``/sitemap.txt``) and ``SITEMAP_AUDIT_SITEMAPS`` (URLs or
   local files). They are fetched without robots.txt rules (the owner declared
   them), parsed with :mod:`crawler.audit.sitemaps`, and indexes are followed with a
   visited set and a depth cap; cycles and indexes of indexes are reported.
2. A sitemap URL or a ``loc`` on another host or scheme, or outside the sitemap
   file's directory, is reported and never fetched.
3. Listed URLs that the crawl did not judge (orphans, and URLs it left unfetched)
   are fetched once, politely and obeying robots.txt, and judged exactly as the
   crawl judges a page, without following their links.

Everything goes into an :class:`crawler.audit.store.AuditStore`; the report is built
from it and the crawl's ledger by :mod:`crawler.audit.report`.

Settings: ``SITEMAP_AUDIT_STORE``, ``SITEMAP_AUDIT_LEDGER``, ``SITEMAP_AUDIT_SITEMAPS``,
``SITEMAP_AUDIT_MAX_DEPTH``, ``SITEMAP_AUDIT_MAX_BYTES``, and the page judge's.
Stats: ``sitemap/audit/sitemaps``, ``sitemap/audit/listings``, ``sitemap/audit/fetched``.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.exceptions import DontCloseSpider

from crawler import decisions as d
from crawler.audit.sitemaps.model import Kind, ParsedSitemap
from crawler.audit.sitemaps.parse import parse_sitemap
from crawler.audit.store import AuditStore, Listing
from crawler.extensions.runstate import RunState
from crawler.items import UrlRecord
from crawler.judge import NoLeads, PageJudge
from crawler.ledger import Ledger
from crawler.parsepool import page_analyser
from crawler.publicurl import PublicUrls, prefix_of
from crawler.urls import normalize_url, site_of, start_url, url_key

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

DEFAULT_PLACES = ("sitemap.xml", "sitemap_index.xml", "sitemap.xml.gz", "sitemap.txt")


class AuditSpider(Spider):
    name = "audit"

    def __init__(self, url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_url = start_url(url)
        parts = urlsplit(self.start_url)
        self.start_scheme = parts.scheme
        self.start_origin = f"{parts.scheme}://{parts.netloc}"
        self.site = site_of(self.start_url)
        self.visited: set[str] = set()
        self.orphans_scheduled = False
        # Local sitemap files (--sitemap FILE) are read at the start; the requests
        # for the indexes they list are sent once the engine is idle.
        self.pending_local: list[Request] = []

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        # Nothing is recorded or published: no item pipelines, no publisher. The
        # extensions' dict is copied whole, so the politeness extensions stay on.
        super().update_settings(settings)
        extensions = settings.getdict("EXTENSIONS")
        extensions["crawler.extensions.publish.SitemapPublisher"] = None
        settings.set("EXTENSIONS", extensions, priority="spider")
        settings.set("ITEM_PIPELINES", {}, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        s = crawler.settings
        spider.store = AuditStore(Path(s["SITEMAP_AUDIT_STORE"]))
        spider.ledger_path = Path(s["SITEMAP_AUDIT_LEDGER"])
        spider.extra_sitemaps = s.getlist("SITEMAP_AUDIT_SITEMAPS")
        spider.max_index_depth = s.getint("SITEMAP_AUDIT_MAX_DEPTH")
        spider.max_sitemap_bytes = s.getint("SITEMAP_AUDIT_MAX_BYTES")
        spider.strip_params = s.getbool("SITEMAP_STRIP_PARAMS")
        spider.extra_strip = tuple(s.getlist("SITEMAP_STRIP_EXTRA"))
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        return spider

    # Set by from_crawler.
    store: AuditStore
    ledger_path: Path
    extra_sitemaps: list[str]
    max_index_depth: int
    max_sitemap_bytes: int
    strip_params: bool
    extra_strip: tuple[str, ...]

    @cached_property
    def run_state(self) -> RunState:
        return RunState.of(self.crawler, self.start_url)

    @property
    def public(self) -> PublicUrls:
        return self.run_state.public

    @cached_property
    def judge(self) -> PageJudge:
        """The crawl's page judge, with no leads: a listed page is judged once, its
        links are not followed."""
        state = self.run_state
        return PageJudge.from_crawler(
            self.crawler,
            self.start_url,
            public=state.public,
            analyser=page_analyser(self.crawler.settings),
            previous=None,
            leads=NoLeads(),
            fail=state.fail,
        )

    # -- finding the sitemaps ------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        ledger = Ledger(self.ledger_path)
        try:
            declared = ledger.get_meta("robots_sitemaps", []) or []
        finally:
            ledger.close()
        root = self.start_origin + "/"
        candidates: list[tuple[str, str]] = [(u, "robots") for u in declared]
        candidates += [(root + name, "default") for name in DEFAULT_PLACES]
        for arg in self.extra_sitemaps:
            path = Path(arg)
            if "://" not in arg and path.exists():
                self._read_local(path)
            else:
                candidates.append((arg, "argument"))
        for raw, via in candidates:
            for request in self._sitemap_request(raw, via=via, parent=None, depth=0):
                yield request

    def _sitemap_request(
        self, raw: str, *, via: str, parent: str | None, depth: int
    ) -> Iterator[Request]:
        url = normalize_url(raw, strip_params=False)
        if url is None:
            self._unread(
                raw, via, parent, depth, "invalid-sitemap-url", f"not an http(s) URL: {raw!r}"
            )
            return
        if url in self.visited:
            if parent is not None:
                self.store.add_problem(
                    parent,
                    {
                        "code": "index-cycle",
                        "message": f"lists {url}, which was already read (an index cycle)",
                        "line": None,
                    },
                )
            return
        self.visited.add(url)
        scope = self._scope(url, prefix_of(parent) if parent else self.start_origin + "/")
        if scope is not None:
            self._unread(url, via, parent, depth, "sitemap-out-of-scope", f"{scope}: not fetched")
            return
        if depth > self.max_index_depth:
            self.store.add_problem(
                parent or url,
                {
                    "code": "index-too-deep",
                    "message": (
                        f"{url} is more than {self.max_index_depth} index levels deep: not read"
                    ),
                    "line": None,
                },
            )
            return
        yield Request(
            url,
            callback=self.parse_sitemap,
            errback=self.sitemap_failed,
            dont_filter=True,
            meta={
                "dont_obey_robotstxt": True,
                "handle_httpstatus_all": True,
                "download_maxsize": self.max_sitemap_bytes,
                "download_warnsize": 0,
                "audit_via": via,
                "audit_parent": parent,
                "audit_depth": depth,
            },
        )

    def _unread(
        self, url: str, via: str, parent: str | None, depth: int, code: str, message: str
    ) -> None:
        """Record a sitemap that is reported and never fetched."""
        problem = {"code": code, "message": message, "line": None}
        self.store.add_sitemap(url, via, parent=parent, depth=depth, fetched=0, problems=[problem])

    def _scope(self, url: str, directory: str) -> str | None:
        """Why *url* (crawl space) may not appear in a sitemap at *directory*."""
        if site_of(url) != self.site:
            return "another host"
        if not url.startswith(self.start_scheme + ":"):
            return "another scheme"
        if not url.startswith(directory):
            return f"outside the sitemap file's directory {directory}"
        return None

    # -- reading them ---------------------------------------------------------------------

    def parse_sitemap(self, response: Response) -> Iterator[Request]:
        meta = response.meta
        url = (
            meta.get("redirect_urls", [response.url])[0]
            if meta.get("redirect_urls")
            else response.url
        )
        via, parent, depth = meta["audit_via"], meta["audit_parent"], meta["audit_depth"]
        self.crawler.stats.inc_value("sitemap/audit/sitemaps")
        if response.status != 200:
            problems = []
            if via != "default":
                problems.append(
                    {
                        "code": "sitemap-http-error",
                        "message": f"HTTP {response.status}",
                        "line": None,
                    }
                )
            self.store.add_sitemap(
                url,
                via,
                parent=parent,
                depth=depth,
                status=response.status,
                fetched=1,
                problems=problems,
            )
            return
        # No url: the location rule is checked here, in crawl space (--base-url).
        parsed = parse_sitemap(response.body, max_bytes=self.max_sitemap_bytes)
        yield from self._record(
            url, parsed, via=via, parent=parent, depth=depth, status=response.status
        )

    def sitemap_failed(self, failure: Failure) -> None:
        meta = failure.request.meta  # type: ignore[attr-defined]  # set by Scrapy
        url = failure.request.url  # type: ignore[attr-defined]  # set by Scrapy
        assert failure.type is not None  # a Failure always holds an exception
        self.store.add_sitemap(
            url,
            meta["audit_via"],
            parent=meta["audit_parent"],
            depth=meta["audit_depth"],
            fetched=0,
            problems=[
                {
                    "code": "sitemap-unreachable",
                    "message": f"{failure.type.__name__}: {failure.getErrorMessage()}"[:300],
                    "line": None,
                }
            ],
        )

    def _read_local(self, path: Path) -> None:
        data = path.read_bytes()[: self.max_sitemap_bytes + 1]
        parsed = parse_sitemap(data, max_bytes=self.max_sitemap_bytes)
        # A local file stands for a sitemap at the site's root.
        requests = list(
            self._record(
                str(path),
                parsed,
                via="argument",
                parent=None,
                depth=0,
                status=None,
                directory=self.start_origin + "/",
            )
        )
        self.pending_local.extend(requests)

    def _record(
        self,
        url: str,
        parsed: ParsedSitemap,
        *,
        via: str,
        parent: str | None,
        depth: int,
        status: int | None,
        directory: str | None = None,
    ) -> Iterator[Request]:
        problems = [{"code": p.code, "message": p.message, "line": p.line} for p in parsed.problems]
        if parsed.kind == Kind.INDEX and parent is not None:
            problems.append(
                {
                    "code": "index-lists-index",
                    "message": f"listed by the index {parent}, and itself an index",
                    "line": None,
                }
            )
        self.store.add_sitemap(
            url,
            via,
            parent=parent,
            depth=depth,
            status=status,
            kind=parsed.kind.value,
            entries=len(parsed.entries),
            compressed_layers=parsed.compressed_layers,
            size=parsed.size,
            complete=int(parsed.complete),
            fetched=1,
            problems=problems,
        )
        if parsed.kind == Kind.INDEX:
            for entry in parsed.entries:
                child = self.public.to_crawl(
                    normalize_url(entry.loc, strip_params=False) or entry.loc
                )
                yield from self._sitemap_request(child, via="index", parent=url, depth=depth + 1)
            return
        directory = directory or prefix_of(url)
        rows: list[Listing] = []
        for entry in parsed.entries:
            normal = normalize_url(
                entry.loc, strip_params=self.strip_params, extra_strip=self.extra_strip
            )
            if normal is None:
                rows.append(
                    (
                        entry.loc,
                        None,
                        None,
                        url,
                        entry.line,
                        entry.lastmod,
                        entry.changefreq,
                        entry.priority,
                        len(entry.alternates),
                        entry.images,
                        "not an absolute http(s) URL",
                        len(entry.media_alternates),
                    )
                )
                continue
            crawl_url = self.public.to_crawl(normal)
            scope = self._scope(crawl_url, self.public.to_crawl(directory))
            rows.append(
                (
                    entry.loc,
                    url_key(crawl_url),
                    crawl_url,
                    url,
                    entry.line,
                    entry.lastmod,
                    entry.changefreq,
                    entry.priority,
                    len(entry.alternates),
                    entry.images,
                    scope,
                    len(entry.media_alternates),
                )
            )
        self.store.add_listings(rows)
        self.store.commit()
        self.crawler.stats.inc_value("sitemap/audit/listings", len(rows))

    # -- judging what the crawl did not ---------------------------------------------------

    def idle(self) -> None:
        engine = self.crawler.engine
        assert engine is not None
        if self.pending_local:
            pending, self.pending_local = self.pending_local, []
            for request in pending:
                engine.crawl(request)
            raise DontCloseSpider
        if self.orphans_scheduled:
            return
        self.orphans_scheduled = True
        self.store.commit()
        scheduled = 0
        for crawl_url in self._unjudged():
            scheduled += 1
            engine.crawl(
                Request(
                    crawl_url,
                    callback=self.parse_listed,
                    errback=self.listed_failed,
                    meta={
                        "sitemap_url": crawl_url,
                        "sitemap_depth": 0,
                        "sitemap_hops": 0,
                        "sitemap_referrer": None,
                        "handle_httpstatus_all": True,
                        "dont_redirect": True,
                    },
                )
            )
        self.crawler.stats.set_value("sitemap/audit/fetched", scheduled)
        if scheduled:
            raise DontCloseSpider

    def _unjudged(self) -> Iterator[str]:
        """In-scope listed URLs that the crawl never judged."""
        db = sqlite3.connect(f"file:{self.ledger_path}?mode=ro", uri=True)
        try:
            for row in self.store.query(
                "SELECT key, min(url) AS url FROM listings WHERE key IS NOT NULL "
                "AND scope IS NULL GROUP BY key ORDER BY key"
            ):
                found = db.execute("SELECT decision FROM urls WHERE key = ?", (row["key"],))
                decision = found.fetchone()
                if decision is None or decision[0] not in d.JUDGED:
                    yield row["url"]
        finally:
            db.close()

    def parse_listed(self, response: Response) -> None:
        url = response.meta["sitemap_url"]
        for out in self.judge.judge(response):
            if isinstance(out, UrlRecord) and out.url == url:
                self._store_fetched(out)
                return

    def listed_failed(self, failure: Failure) -> None:
        self._store_fetched(self.judge.failed(failure))

    def _store_fetched(self, rec: UrlRecord) -> None:
        self.store.add_fetched(
            url_key(rec.url),
            rec.url,
            rec.decision,
            rec.reason,
            rec.target,
            rec.status,
            rec.last_modified,
        )

    def closed(self, reason: str) -> None:
        self.store.close()
