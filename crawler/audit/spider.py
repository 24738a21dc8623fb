"""The ``audit`` spider: read a site's existing sitemaps and judge what they list.

It runs after a crawl (or on an earlier one's ledger) with the ``site`` spider's page
judge (:class:`crawler.crawl.judge.PageJudge`, with no leads: a listed page is
judged, its links not followed), middlewares and politeness. Where sitemaps are
found, which are fetched and which only reported, and which listed URLs are fetched:
docs/audit.md, "What it does". A local file stands for the file of its name at the
site's root; a sitemap a local index lists is read from beside it when there (the set
just published, not yet uploaded). Entries are stored as the parser reads them
(:mod:`crawler.sitemaps`), so a file's entries are never all in memory, into an
:class:`crawler.audit.store.AuditStore` that :mod:`crawler.audit.report` reports from.

Settings: ``SITEMAP_AUDIT_STORE``, ``SITEMAP_AUDIT_LEDGER``, ``SITEMAP_AUDIT_SITEMAPS``,
``SITEMAP_AUDIT_MAX_DEPTH``, ``SITEMAP_AUDIT_MAX_BYTES``, and the page judge's.
Stats: ``sitemap/audit/sitemaps``, ``sitemap/audit/listings``, ``sitemap/audit/fetched``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request, Spider, signals
from scrapy.exceptions import DontCloseSpider

from crawler.audit.rules import CrawlRules
from crawler.audit.store import AuditStore, Listing
from crawler.core import decisions as d
from crawler.core.items import UrlRecord
from crawler.core.publicurl import PublicUrls, prefix_of
from crawler.core.urls import Stripping, normalize_url, site_of, start_url, url_key
from crawler.crawl.frontier import page_meta
from crawler.crawl.judge import NoLeads, PageJudge
from crawler.crawl.seeds import USUAL_PLACES, sitemap_request
from crawler.ledger.ledger import LedgerReader
from crawler.ledger.runstate import RunState
from crawler.page.parsepool import page_analyser
from crawler.sitemaps.limits import MAX_SITEMAPS_PER_INDEX, MAX_URLS_PER_FILE
from crawler.sitemaps.model import Entry, Kind
from crawler.sitemaps.parse import parse_sitemap

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

# A problem as the store keeps it: {"code", "message", "line"}.
StoredProblem = dict[str, Any]


def _problem(code: str, message: str, line: int | None = None) -> StoredProblem:
    return {"code": code, "message": message, "line": line}


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
        # A local file's name -> the URL it stands for, and its directory.
        self.stands_for: dict[str, str] = {}
        self.local_dirs: dict[str, Path] = {}

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        # Nothing is recorded or published: no item pipelines, no publisher. The
        # extensions' dict is copied whole, so the politeness extensions stay on.
        super().update_settings(settings)
        extensions = settings.getdict("EXTENSIONS")
        extensions["crawler.publish.publisher.SitemapPublisher"] = None
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
        spider.strip = Stripping.from_settings(s)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        return spider

    # Set by from_crawler.
    store: AuditStore
    ledger_path: Path
    extra_sitemaps: list[str]
    max_index_depth: int
    max_sitemap_bytes: int
    strip: Stripping

    @cached_property
    def run_state(self) -> RunState:
        return RunState.of(self.crawler)

    @property
    def public(self) -> PublicUrls:
        return self.run_state.public

    @cached_property
    def judge(self) -> PageJudge:
        state = self.run_state
        return PageJudge(
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
        with LedgerReader.open(self.ledger_path) as ledger:
            declared = ledger.get_meta("robots_sitemaps", []) or []
        root = self.start_origin + "/"
        robots = root + "robots.txt"
        candidates: list[tuple[str, str, list[StoredProblem]]] = []
        for line in declared:
            if urlsplit(line).scheme:
                candidates.append((line, "robots", []))
                continue
            # The protocol asks for a full URL; read it as robots.txt's own
            # URL resolves it, as Scrapy and ultimate-sitemap-parser do.
            resolved = urljoin(robots, line)
            problem = _problem(
                "robots-relative-sitemap",
                f"robots.txt lists the relative URL 'Sitemap: {line}'; the protocol asks"
                f" for a full URL (read as {resolved})",
            )
            candidates.append((resolved, "robots", [problem]))
        candidates += [(root + name, "default", []) for name in USUAL_PLACES]
        for arg in self.extra_sitemaps:
            path = Path(arg)
            if "://" not in arg and path.exists():
                # A local file stands for one at the site's root.
                self._read_local(path, stands_for=root + path.name, via="argument")
            else:
                candidates.append((arg, "argument", []))
        for raw, via, problems in candidates:
            for request in self._sitemap_request(
                raw, via=via, parent=None, depth=0, problems=problems
            ):
                yield request

    def _sitemap_request(
        self,
        raw: str,
        *,
        via: str,
        parent: str | None,
        depth: int,
        problems: list[StoredProblem] | None = None,
    ) -> Iterator[Request]:
        problems = problems or []
        url = normalize_url(raw, strip_params=False)
        if url is None:
            problems = [_problem("invalid-sitemap-url", f"not an http(s) URL: {raw!r}")]
            self.store.add_sitemap(
                raw, via, parent=parent, depth=depth, fetched=0, problems=problems
            )
            return
        if url in self.visited:
            if parent is not None:
                why = f"lists {url}, which was already read (an index cycle)"
                self.store.add_problem(parent, _problem("index-cycle", why))
            return
        self.visited.add(url)
        # Where the parent stands: a local file for its URL at the site.
        where = self.stands_for.get(parent, parent) if parent else None
        scope = self._scope(url, prefix_of(where) if where else self.start_origin + "/")
        if scope is not None:
            problems.append(_problem("sitemap-out-of-scope", f"{scope}: not fetched"))
            self.store.add_sitemap(
                url, via, parent=parent, depth=depth, fetched=0, problems=problems
            )
            return
        if depth > self.max_index_depth:
            why = f"{url} is more than {self.max_index_depth} index levels deep: not read"
            self.store.add_problem(parent or url, _problem("index-too-deep", why))
            return
        local = self._local_child(url, parent)
        if local is not None:
            # The set just published, beside its local index: read here, judged
            # as the file at its URL.
            self._read_local(local, stands_for=url, via=via, parent=parent, depth=depth)
            return
        request = sitemap_request(
            url, self.parse_sitemap, self.sitemap_failed, self.max_sitemap_bytes
        )
        request.meta.update(handle_httpstatus_all=True, audit_via=via, audit_parent=parent)
        request.meta.update(audit_depth=depth, audit_problems=problems)
        yield request

    def _local_child(self, url: str, parent: str | None) -> Path | None:
        """The file beside a local index that stands for *url*, if there is one."""
        if parent is None or parent not in self.local_dirs:
            return None
        directory = prefix_of(self.stands_for[parent])
        if not url.startswith(directory):
            return None
        relative = url[len(directory) :].partition("?")[0].partition("#")[0]
        if not relative or relative.startswith("/") or ".." in relative.split("/"):
            return None
        candidate = self.local_dirs[parent] / relative
        return candidate if candidate.is_file() else None

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
        url = (meta.get("redirect_urls") or [response.url])[0]
        via, parent, depth = meta["audit_via"], meta["audit_parent"], meta["audit_depth"]
        problems: list[StoredProblem] = list(meta.get("audit_problems") or [])
        self.crawler.stats.inc_value("sitemap/audit/sitemaps")
        where = {"parent": parent, "depth": depth, "status": response.status}
        if response.status != 200:
            if via != "default":
                problems.append(_problem("sitemap-http-error", f"HTTP {response.status}"))
            self.store.add_sitemap(url, via, **where, fetched=1, problems=problems)
            return
        # No url: the location rule is checked here, in crawl space (--base-url).
        yield from self._read(url, response.body, via=via, **where, problems=problems)

    def sitemap_failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy
        meta = request.meta
        assert failure.type is not None  # a Failure always holds an exception
        message = f"{failure.type.__name__}: {failure.getErrorMessage()}"[:300]
        problems = [*(meta.get("audit_problems") or []), _problem("sitemap-unreachable", message)]
        where = {"parent": meta["audit_parent"], "depth": meta["audit_depth"], "fetched": 0}
        self.store.add_sitemap(request.url, meta["audit_via"], **where, problems=problems)

    def _read_local(
        self,
        path: Path,
        *,
        stands_for: str,
        via: str,
        parent: str | None = None,
        depth: int = 0,
    ) -> None:
        """Read a local sitemap file as the one at *stands_for* (see the module docstring)."""
        name = str(path)
        self.stands_for[name] = stands_for
        self.local_dirs[name] = path.parent
        self.visited.add(stands_for)
        with path.open("rb") as f:
            data = f.read(self.max_sitemap_bytes + 1)
        directory = prefix_of(stands_for)
        read = self._read(name, data, via=via, parent=parent, depth=depth, directory=directory)
        self.pending_local.extend(read)

    def _read(
        self,
        url: str,
        data: bytes,
        *,
        via: str,
        parent: str | None,
        depth: int,
        status: int | None = None,
        directory: str | None = None,
        problems: list[StoredProblem] | None = None,
    ) -> Iterator[Request]:
        """Parse one sitemap file; for an index, request the sitemaps it lists."""
        listing = _Listing(self, url, self.public.to_crawl(directory or prefix_of(url)))
        parsed = parse_sitemap(
            data,
            # A relative loc names the URL it resolves to against the file's address
            # (what a local file stands for); the location rule is _Listing's.
            base_url=self.stands_for.get(url, url),
            max_bytes=self.max_sitemap_bytes,
            on_entries=listing.take,
        )
        problems = [*(problems or []), *map(asdict, parsed.problems)]
        if parsed.kind == Kind.INDEX and parent is not None:
            problems.append(
                _problem("index-lists-index", f"listed by the index {parent}, and itself an index")
            )
        limit = MAX_SITEMAPS_PER_INDEX if parsed.kind == Kind.INDEX else MAX_URLS_PER_FILE
        not_audited = max(parsed.entry_count - limit, 0)
        if not_audited:
            what = "sitemaps it lists" if parsed.kind == Kind.INDEX else "entries"
            why = (
                f"{not_audited:,} {what} after the first {limit:,} (the protocol's limit for"
                " one file) were not audited: not fetched, not judged, not counted in coverage"
            )
            problems.append(_problem("not-audited", why))
        self.store.add_sitemap(
            url,
            via,
            parent=parent,
            depth=depth,
            status=status,
            kind=parsed.kind.value,
            entries=parsed.entry_count,
            compressed_layers=parsed.compressed_layers,
            size=parsed.size,
            complete=int(parsed.complete),
            fetched=1,
            problems=problems,
            not_audited=not_audited,
        )
        if parsed.kind == Kind.INDEX:
            # Its entries were stored as listings as they were read (the kind is
            # known once the file is): they are the sitemaps to read instead.
            children = self.store.take_listings(url, limit)
            for loc in children:
                child = self.public.to_crawl(normalize_url(loc, strip_params=False) or loc)
                yield from self._sitemap_request(child, via="index", parent=url, depth=depth + 1)
            return
        self.store.commit()
        self.crawler.stats.inc_value("sitemap/audit/listings", listing.count)

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
        for url in self._unjudged():
            scheduled += 1
            meta = page_meta(url, 0, 0, None)
            engine.crawl(Request(url, self.parse_listed, errback=self.listed_failed, meta=meta))
        self.crawler.stats.set_value("sitemap/audit/fetched", scheduled)
        if scheduled:
            raise DontCloseSpider

    def _unjudged(self) -> Iterator[str]:
        """In-scope listed URLs that the crawl never judged."""
        rules = CrawlRules.of_ledger(self.ledger_path)
        with LedgerReader.open(self.ledger_path) as ledger:
            for key, url in self.store.audited_keys():
                found = ledger.decision_of(key)
                # One the crawl's rules left out (--exclude, a cap), or would have,
                # is not fetched: the report says it is excluded, and why.
                if found is None:
                    if rules.excludes(url) is None:
                        yield url
                elif found[0] not in d.JUDGED | d.RULED_OUT:
                    yield url

    def parse_listed(self, response: Response) -> None:
        url = response.meta["sitemap_url"]
        for out in self.judge.judge(response):
            if isinstance(out, UrlRecord) and out.url == url:
                self.store.add_fetched(out)
                return

    def listed_failed(self, failure: Failure) -> None:
        self.store.add_fetched(self.judge.failed(failure))

    def closed(self, reason: str) -> None:
        self.store.close()


@dataclass
class _Listing:
    """The entries of one sitemap file, stored as the parser hands them over: each a row
    of ``listings``, judged against the location rule in crawl space."""

    spider: AuditSpider
    sitemap: str
    directory: str
    count: int = 0

    def take(self, batch: list[Entry]) -> None:
        spider = self.spider
        rows: list[Listing] = []
        strip = spider.strip
        for entry in batch:
            audited = int(self.count < MAX_URLS_PER_FILE)
            self.count += 1
            normal = normalize_url(entry.loc, strip_params=strip.params, extra_strip=strip.extra)
            key = crawl_url = None
            if normal is None:
                scope: str | None = "not an absolute http(s) URL"
            else:
                crawl_url = spider.public.to_crawl(normal)
                key = url_key(crawl_url)
                scope = spider._scope(crawl_url, self.directory)
            # The columns of listings (crawler.audit.store): where the entry is, what it says.
            where = (entry.loc, key, crawl_url, self.sitemap, entry.line)
            said = (entry.lastmod, entry.changefreq, entry.priority, len(entry.alternates))
            rows.append((*where, *said, entry.images, scope, len(entry.media_alternates), audited))
        spider.store.add_listings(rows)
