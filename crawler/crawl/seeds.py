"""Seeds beyond links: a ``--urls`` file, and the site's own sitemaps
(docs/crawling.md#seeds-beyond-links).

A crawl finds only what is linked, yet a sitemap exists largely for the pages links
hardly reach. So a crawl can start from the lines of a URL file
(:func:`read_url_file`) and the entries of the site's sitemaps (:class:`SitemapSeeds`),
found and read as the audit finds and reads them. Every seed goes to the frontier and
is judged like any URL; a sitemap that cannot be read costs nothing but its seeds.

Meta keys of its requests: ``sitemap_seed_depth``.
Stats: ``sitemap/seeds/sitemaps_read``, ``sitemap/seeds/sitemaps_failed`` (not found,
not a sitemap, unreachable), ``sitemap/seeds/sitemap`` (its seeds new to the crawl).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request

from crawler.core.items import FOUND_SITEMAP
from crawler.core.lastmod import http_date_to_w3c, lastmod_datetime
from crawler.core.urls import normalize_url, site_of
from crawler.sitemaps.limits import MAX_URLS_PER_FILE
from crawler.sitemaps.model import Entry, Kind
from crawler.sitemaps.parse import parse_sitemap

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

#: Where a site's sitemaps usually are, besides those robots.txt names (the audit's).
USUAL_PLACES = ("sitemap.xml", "sitemap_index.xml", "sitemap.xml.gz", "sitemap.txt")
#: The most URLs a --urls file may hold (a bigger list is a sitemap's job).
MAX_FILE_URLS = 1_000_000


#: A file's dates are stamps when most of its entries (at least this many) are dated
#: alike, or within an hour of the file's own Date: generated, not edited.
STAMPED_ENTRIES = 10
STAMP_SECONDS = 3600


def stamped_dates(entries: list[Entry], response: Response) -> str | None:
    """Why the ``<lastmod>`` dates of a sitemap (or feed) say nothing about its pages'
    changes, or None: most of them one value (a template), or the time the file was
    generated (its response's ``Date``; the site's clock). Such a generator would
    name every page every night."""
    dated = [entry.lastmod for entry in entries if entry.lastmod]
    if len(dated) < STAMPED_ENTRIES:
        return None
    value, count = Counter(dated).most_common(1)[0]
    if 2 * count > len(dated):
        return f"{count} of {len(dated)} entries dated {value}"
    date = response.headers.get(b"Date")
    sent = http_date_to_w3c(date.decode("latin-1")) if date else None
    if sent is None:
        return None
    moment = lastmod_datetime(sent)
    recent = 0
    for text in dated:
        try:
            recent += abs((lastmod_datetime(text) - moment).total_seconds()) <= STAMP_SECONDS
        except ValueError:
            continue
    if 2 * recent > len(dated):
        return f"{recent} of {len(dated)} entries dated within an hour of the file's Date"
    return None


def sitemap_request(
    url: str, callback: Callable[..., Any], errback: Callable[..., Any], max_bytes: int
) -> Request:
    """A request for a sitemap: the owner declared it, so it is read as search
    engines read them, whatever robots.txt says of its path."""
    meta = {"dont_obey_robotstxt": True, "download_maxsize": max_bytes, "download_warnsize": 0}
    return Request(url, callback=callback, errback=errback, dont_filter=True, meta=meta)


class SeedError(ValueError):
    """A ``--urls`` file that cannot be used: said in one line."""


def read_url_file(path: str | Path, start_url: str) -> list[str]:
    """The URLs of a ``--urls`` file: one a line; blank lines and ``#`` comments are
    skipped; a line that starts with ``/`` is a path of the start URL's site. A URL
    of another site is kept: the frontier records it ``off-host`` (reported, never
    fetched). A line that is no http(s) URL at all, or a file that cannot be read,
    raises :class:`SeedError` naming the line: a typo should not pass silently."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise SeedError(f"cannot read --urls {path}: {why}") from None
    urls: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        on_site = line.startswith("/") and not line.startswith("//")
        url = urljoin(start_url, line) if on_site else line
        normal = normalize_url(url)
        if normal is None or site_of(normal) is None:
            raise SeedError(f"--urls {path}, line {number}: not an http(s) URL: {line[:200]!r}")
        urls.append(url)
        if len(urls) > MAX_FILE_URLS:
            raise SeedError(f"--urls {path}: more than {MAX_FILE_URLS} URLs")
    return urls


#: What a sitemap's entries become: the frontier's ``seed`` (records and requests).
Seed = Callable[..., Iterable[Any]]


@dataclass
class SitemapSeeds:
    """Finds and reads the site's sitemaps for seeds (see the module docstring).
    *given*: the ``--sitemap`` URLs; *usual*: the usual places and robots.txt's lines
    too (``--seed-sitemaps``); *callback*, *errback* call :meth:`read`, :meth:`failed`."""

    start_url: str
    _: KW_ONLY
    given: list[str]
    usual: bool
    seed: Seed
    callback: Callable[..., Any]
    errback: Callable[..., Any]
    stats: StatsCollector
    max_depth: int
    max_bytes: int
    # robots.txt's sitemaps and the start page's feeds read for change signals only
    # (their entries' dates, crawler.crawl.frontier.Frontier.signal): a nightly run's.
    signal: Seed | None = None
    # Each sitemap is read once (an index cycle ends here).
    visited: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.site = site_of(self.start_url)

    def first_requests(self) -> Iterator[Request]:
        """The sitemaps to read from the start: those given and the usual places."""
        root = urljoin(self.start_url, "/")
        for url in self.given:
            yield from self._request(url)
        if self.usual:
            for name in USUAL_PLACES:
                yield from self._request(root + name, quiet=True)

    @property
    def reads_robots(self) -> bool:
        """Whether robots.txt's ``Sitemap:`` lines are read (for seeds, or signals)."""
        return self.usual or self.signal is not None

    def feeds(self, urls: Iterable[str]) -> Iterator[Request]:
        """The requests for the start page's feeds, read for their entries' dates."""
        if self.signal is None:
            return
        for url in urls:
            yield from self._request(url, quiet=True, only=True)

    def declared(self, sitemaps: Iterable[str], robots_url: str) -> list[Request]:
        """The requests for robots.txt's ``Sitemap:`` lines (a relative one read
        against robots.txt's URL, as the audit reads it)."""
        urls = (urljoin(robots_url, line) for line in sitemaps)
        return [r for url in urls for r in self._request(url, only=not self.usual)]

    def _request(
        self, raw: str, depth: int = 0, *, quiet: bool = False, only: bool = False
    ) -> Iterator[Request]:
        url = normalize_url(raw, strip_params=False)
        if url is None or url in self.visited:
            return
        self.visited.add(url)
        if site_of(url) != self.site:
            logger.warning("sitemap %s is on another site: not read for seeds", url)
            return
        if depth > self.max_depth:
            logger.warning(
                "sitemap %s is more than %d index levels deep: not read", url, self.max_depth
            )
            return
        request = sitemap_request(url, self.callback, self.errback, self.max_bytes)
        request.meta.update(
            sitemap_seed_depth=depth, sitemap_seed_quiet=quiet, sitemap_signal_only=only
        )
        yield request

    def read(self, response: Response) -> Iterator[Any]:
        """A fetched sitemap: its entries as seeds, an index's sitemaps as requests."""
        meta = response.meta
        url = (meta.get("redirect_urls") or [response.url])[0]
        if response.status != 200:
            self._failed(url, f"HTTP {response.status}", quiet=meta.get("sitemap_seed_quiet"))
            return
        entries: list[Entry] = []

        def take(batch: list[Entry]) -> None:
            # The protocol's 50,000 a file (an index's sitemaps as well), as the audit.
            entries.extend(batch[: max(MAX_URLS_PER_FILE - len(entries), 0)])

        parsed = parse_sitemap(response.body, max_bytes=self.max_bytes, on_entries=take)
        if parsed.entry_count > len(entries):
            why = "sitemap %s lists %d entries: only the first %d read for seeds"
            logger.warning(why, url, parsed.entry_count, len(entries))
        if parsed.kind == Kind.UNKNOWN:
            self._failed(url, "not a sitemap", quiet=meta.get("sitemap_seed_quiet"))
            return
        self.stats.inc_value("sitemap/seeds/sitemaps_read")
        if parsed.kind == Kind.INDEX:
            depth = meta["sitemap_seed_depth"] + 1
            only = meta.get("sitemap_signal_only", False)
            for entry in entries:
                yield from self._request(urljoin(url, entry.loc.strip()), depth, only=only)
            return
        logger.info("sitemap %s: %d entries read as seeds", url, len(entries))
        if self.signal is not None and (stamp := stamped_dates(entries, response)):
            # Dates that say nothing: no entry's date is a signal (as a seed, it stands).
            logger.info("sitemap %s: its dates are no change signal: %s", url, stamp)
            self.stats.inc_value("sitemap/signals/stamped_sitemaps")
            entries = [replace(entry, lastmod=None) for entry in entries]
        seed = self.seed
        if self.signal is not None and meta.get("sitemap_signal_only"):
            seed = self.signal  # entries read for their dates alone
        for entry in entries:
            yield from seed(
                urljoin(url, entry.loc.strip()),
                found_by=FOUND_SITEMAP,
                found_from=url,
                lastmod=entry.lastmod,
            )

    def failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # set by Scrapy
        kind = failure.type.__name__ if failure.type is not None else "Error"
        self._failed(request.url, f"{kind}: {failure.getErrorMessage()}"[:300], quiet=False)

    def _failed(self, url: str, why: str, *, quiet: Any) -> None:
        self.stats.inc_value("sitemap/seeds/sitemaps_failed")
        # A usual place that is not there is no news; a declared sitemap is.
        (logger.info if quiet else logger.warning)("sitemap %s not read for seeds: %s", url, why)
