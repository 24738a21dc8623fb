"""The frontier of a distributed crawl: discovery where the page was fetched (issue 18).

Every process, coordinator or worker, decides about the links of the pages it
fetched with the same code as one process (:class:`crawler.crawl.frontier.Frontier`):
normalisation, keys, and the rule book (:mod:`crawler.crawl.rulebook`) up to the rules
that count (scope, redirect hops, calendars, learned parameters, the traps a URL
shows by its own shape), then the depth cap. What needs the whole crawl's view is
settled in Redis, atomically, by the script that reports the page (``_REPORT`` in
:mod:`crawler.distributed.crawl`):

* **the seen-set**: a URL new to this process is sent as a :class:`Candidate`; the
  script adds its 64-bit fingerprint to the crawl's seen-set (scrapy-redis's set of
  fingerprints, about 80 bytes a URL in Redis, exact up to the fingerprint's
  collisions: about n**2 / 2**65) and only the process that added it decides about
  it, so every URL keeps one decision;
* **depth, shallowest wins**: a URL left out for depth is in the ``capped`` set; a
  shorter path found later (by any process) takes it out and queues it;
* **query-variant traps**: the variants of a path are counted in one hash;
* **the page cap**: the URLs queued are counted in one key.

The codes of those counted rules become the same refusals as in one process
(:func:`crawler.crawl.rulebook.counted_refusal`).

The script answers with one code a URL (``k`` known already, ``q`` queued, ...),
pushed with the report, and queues the new requests itself; the coordinator turns
codes and candidates into records (:func:`settle`) and writes them. A page is thus
reported with everything it led to, or not at all (a killed process loses nothing:
the page is fetched again and its URLs claimed then).

A process remembers which URLs it has sent (``known``: fingerprint -> the
shallowest depth sent, about 100 bytes each), so the navigation links every page
repeats cost one dictionary lookup after the first time, not a round trip; with a
depth cap, a URL is sent again when found by a shorter path.

Settings: those of :class:`crawler.crawl.frontier.Frontier`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from crawler.core import decisions as d
from crawler.core.items import FOUND_LINK, Alias, UrlRecord
from crawler.core.seen import SeenKeys
from crawler.crawl.frontier import Discovered, Frontier
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

    def take(self) -> list[Candidate]:
        """The candidates found since the last call (those of one page)."""
        pending, self.pending = self.pending, []
        return pending

    def link(self, found: Resolved, depth: int, referrer: str) -> Iterable[Discovered]:
        return self.discover(
            found.raw, depth=depth, referrer=referrer, normal=found.url, key=found.key, fp=found.fp
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
        keyed = self._keyed(raw, encoding, normal, key, fp)
        if keyed is None:
            return
        url, key, fp = keyed
        sent = self.known.get(fp)
        if sent is not None and not (self.max_depth and depth < sent and depth <= self.max_depth):
            form = raw.partition("#")[0]
            if form != url and form not in self.alias_forms:
                self.alias_forms.add(form)
                yield Alias(alias=form, url=url)
            return
        self.known[fp] = depth if sent is None else min(sent, depth)
        record = UrlRecord(
            url=url,
            decision=d.QUEUED,
            raw_url=raw if raw != url else None,
            depth=depth,
            referrer=referrer,
            key=key,
            found_by=found_by,
            found_from=found_from,
        )
        path, member = "", b""
        refusal = self.rules.judge(
            url, self.rules.found(url, depth, hops, referrer), until=d.RULE_VARIANTS
        )
        if refusal is not None:
            record.decision, record.reason, record.target = (
                refusal.decision,
                refusal.reason,
                refusal.target,
            )
            record.rule = refusal.rule
            kind = "o"
        else:
            path = self.traps.variant_path(url) or ""
            if self.max_depth and depth > self.max_depth:
                kind = "d"
            else:
                kind = "i"
                member = self.encode(self._request(url, key, depth, hops, referrer))
        self.pending.append(
            Candidate(record, format(fp, "016x"), path, kind, member, raw.partition("#")[0])
        )


class Settler:
    """The coordinator's side: the records of a report's candidates, from the codes
    the report script gave them. *alias_forms* keeps each alias once crawl-wide."""

    def __init__(
        self, stats: StatsCollector, max_variants: int, max_depth: int, max_pages: int
    ) -> None:
        self.stats = stats
        self.max_variants, self.max_depth, self.max_pages = max_variants, max_depth, max_pages
        self.alias_forms = SeenKeys()

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
                refusal = counted_refusal(
                    code,
                    c.path,
                    max_variants=self.max_variants,
                    max_depth=self.max_depth,
                    max_pages=self.max_pages,
                )
                rec.decision, rec.reason, rec.rule = refusal.decision, refusal.reason, refusal.rule
            yield rec
