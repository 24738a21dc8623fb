"""The frontier of a distributed crawl: discovery where the page was fetched
(docs/distributed.md).

Every process decides about the links of the pages it fetched with the code of one
process (:class:`crawler.crawl.frontier.Frontier`), up to the rules that count
(:mod:`crawler.crawl.rulebook`), then the depth cap. What needs the whole crawl's view
is settled in Redis, atomically, by the script that reports the page (``_REPORT`` in
:mod:`crawler.distributed.crawl`): the seen-set (a URL new to this process is sent as
a :class:`Candidate`; only the process whose report adds its fingerprint decides
about it, so every URL keeps one decision; exact up to the 64-bit fingerprints'
collisions, about n**2 / 2**65), depth (shallowest wins: a shorter path found later
takes a URL out of the ``capped`` set), the query variants of a path and the page
cap. Their codes become the same refusals as in one process
(:func:`crawler.crawl.rulebook.counted_refusal`), which the coordinator turns into
records (:class:`Settler`). A page is thus reported with everything it led to, or
not at all.

A process remembers which URLs it has sent (``known``: fingerprint -> the shallowest
depth sent), so the navigation links every page repeats cost a dictionary lookup
after the first time, not a round trip; with a depth cap, a URL is sent again when
found by a shorter path.

Settings: those of :class:`crawler.crawl.frontier.Frontier`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from crawler.core import decisions as d
from crawler.core.items import FOUND_START, Alias, UrlRecord
from crawler.core.seen import SeenKeys, fingerprint
from crawler.core.urls import url_key
from crawler.crawl.frontier import Discovered, Frontier, Lead, refuse
from crawler.crawl.rulebook import counted_refusal

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from crawler.page.links import Resolved


class Candidate(NamedTuple):
    """A URL new to the process that found it, for the report script to claim."""

    record: UrlRecord
    fp: str  # the seen-set member (16 hex digits)
    path: str  # the path whose query variants it counts as one of ('' for none)
    kind: str  # 'o' decided out of scope here, 'i' to queue, 'd' beyond the depth cap
    member: bytes  # the serialized request (kind 'i')
    form: str  # the form it was found in, without fragment (an alias if known)

    def args(self) -> tuple[str, str, str, bytes, int]:
        return self.fp, self.path, self.kind, self.member, self.record.depth or 0


class SharedFrontier(Frontier):
    """The frontier of one process of a distributed crawl (see the module docstring).
    ``encode`` serializes a request for the shared queue (the spider sets it: the
    scheduler's serializer). Its requests are never yielded: :meth:`take` hands the
    page's candidates to its report."""

    encode: Callable[[Request], bytes]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known: dict[int, int] = {}
        self.pending: list[Candidate] = []

    def reached_downloader(self, request: Request) -> None:
        """Nothing to keep: a distributed crawl is not resumed (the requests in
        flight are in Redis, each process's in-flight hash)."""

    def recheck(self, url: str, depth: int, referrer: str | None) -> Iterator[Discovered]:
        """A signal names *url*: another process may have kept it tonight, so it is
        asked (once more, past the crawl-wide seen-set) unless this process sent it."""
        if self.policy is None:
            return
        key = url_key(url)
        fp = fingerprint(key)
        if fp in self.known and not self.kept.has_fp(fp):
            return  # asked tonight by this process
        self.kept.discard_fp(fp)
        self.forced.add_fp(fp)  # should this process be the one to find it
        yield self._recheck(url, key, depth, referrer)

    def take(self) -> list[Candidate]:
        """The candidates found since the last call (those of one page)."""
        pending, self.pending = self.pending, []
        return pending

    def link(self, found: Resolved, depth: int, referrer: str) -> Iterable[Discovered]:
        return self.discover(Lead.of(found, depth, referrer))

    def discover(self, lead: Lead) -> Iterator[Discovered]:
        keyed = self._keyed(lead)
        if keyed is None:
            return
        url, key, fp = keyed
        depth, sent = lead.depth, self.known.get(fp)
        if sent is not None and not (self.max_depth and depth < sent and depth <= self.max_depth):
            yield from self._alias(lead.raw, url)
            return
        self.known[fp] = depth if sent is None else min(sent, depth)
        record = self._record(lead, url, key)
        path, member = "", b""
        refusal = self.rules.judge(url, self._found(lead, url), until=d.RULE_VARIANTS)
        if refusal is not None:
            refuse(record, refusal)
            kind = "o"
        else:
            path = self.traps.variant_path(url) or ""
            if self.max_depth and depth > self.max_depth:
                kind = "d"
            else:
                kind = "i"
                verify = lead.found_by == FOUND_START or self.forced.has_fp(fp)
                request = self._request(url, key, depth, lead.hops, lead.referrer, verify=verify)
                if request.meta.get("sitemap_kept"):
                    self.kept.add_fp(fp)
                member = self.encode(request)
        form = lead.raw.partition("#")[0]
        self.pending.append(Candidate(record, format(fp, "016x"), path, kind, member, form))


@dataclass
class Settler:
    """The coordinator's side: the records of a report's candidates, from the codes
    the report script gave them. *alias_forms* keeps each alias once crawl-wide."""

    stats: StatsCollector
    max_variants: int
    max_depth: int
    max_pages: int
    alias_forms: SeenKeys = field(default_factory=SeenKeys)

    def settle(self, candidates: list[Candidate], codes: str) -> Iterator[UrlRecord | Alias]:
        stats = self.stats
        for c, code in zip(candidates, codes, strict=True):
            rec = c.record
            if code == "k":
                if c.form != rec.url and c.form not in self.alias_forms:
                    self.alias_forms.add(c.form)
                    yield Alias(alias=c.form, url=rec.url)
                continue
            if code == "R":
                stats.inc_value("sitemap/depth_reconsidered")
            else:
                stats.inc_value("sitemap/discovered")
            if code in ("t", "d", "c"):
                limits = self.max_variants, self.max_depth, self.max_pages
                refuse(rec, counted_refusal(code, c.path, *limits))
            yield rec
