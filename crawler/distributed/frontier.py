"""The frontier of a distributed crawl: discovery where the page was fetched
(docs/distributed.md, "What flows where").

Every process decides about the links of the pages it fetched with the code of one
process (:class:`crawler.crawl.frontier.Frontier`); a URL new to the process is sent
as a :class:`Candidate` with its :class:`~crawler.crawl.counted.Claim`, which the
page's report script (``_REPORT`` in :mod:`crawler.distributed.crawl`) applies with
the whole crawl's view. The coordinator turns the outcomes into records
(:class:`Settler`). A process remembers the URLs it sent (``sent``), so the navigation
links every page repeats cost a dictionary lookup after the first time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from crawler.core.items import Alias, UrlRecord
from crawler.core.seen import SeenKeys, fingerprint
from crawler.core.urls import url_key
from crawler.crawl.counted import AGAIN, HOLD, KNOWN, QUEUE, Claim, Outcome
from crawler.crawl.frontier import Discovered, Frontier, Lead, refuse

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector


class Candidate(NamedTuple):
    """A URL new to the process that found it, for the report script to claim."""

    record: UrlRecord
    fp: str  # the seen-set member (16 hex digits)
    claim: Claim
    member: bytes  # the serialized request (a claim that queues it)
    form: str  # the form it was found in, without fragment (an alias if known)

    def args(self) -> tuple[str, str, bytes, int]:
        return self.fp, self.claim.plan(), self.member, self.record.depth or 0


class SharedFrontier(Frontier):
    """The frontier of one process of a distributed crawl (see the module docstring;
    its memory counters stay empty, so every link is put to :meth:`discover`).
    ``encode`` serializes a request for the shared queue (the spider sets it: the
    scheduler's serializer). Its requests are never yielded: :meth:`take` hands the
    page's candidates to its report."""

    encode: Callable[[Request], bytes]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: dict[int, str] = {}
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
        if fp in self.sent and not self.kept.has_fp(fp):
            return  # asked tonight by this process
        self.kept.discard_fp(fp)
        self.forced.add_fp(fp)  # should this process be the one to find it
        yield self._recheck(url, key, depth, referrer)

    def take(self) -> list[Candidate]:
        """The candidates found since the last call (those of one page)."""
        pending, self.pending = self.pending, []
        return pending

    def discover(self, lead: Lead) -> Iterator[Discovered]:
        keyed = self._keyed(lead)
        if keyed is None:
            return
        url, key, fp = keyed
        sent = self.sent.get(fp)
        claim = self.rules.claim(url, self._found(lead, url), True) if sent == HOLD else None
        if sent is not None and (claim is None or claim.after != QUEUE):
            yield from self._alias(lead.raw, url)  # sent, and no claim of it changed
            return
        claim = claim or self.rules.claim(url, self._found(lead, url))
        self.sent[fp] = claim.after
        member = self.encode(self._queued(lead, url, key, fp)) if claim.after == QUEUE else b""
        record, form = self._record(lead, url, key), lead.raw.partition("#")[0]
        self.pending.append(Candidate(record, format(fp, "016x"), claim, member, form))


@dataclass
class Settler:
    """The coordinator's side: the records of a report's candidates, from the outcomes
    of their claims. *alias_forms* keeps each alias once crawl-wide."""

    stats: StatsCollector
    alias_forms: SeenKeys = field(default_factory=SeenKeys)

    def settle(
        self, candidates: list[Candidate], told: list[Outcome]
    ) -> Iterator[UrlRecord | Alias]:
        for c, outcome in zip(candidates, told, strict=True):
            rec = c.record
            if outcome.seen == KNOWN:
                if c.form != rec.url and c.form not in self.alias_forms:
                    self.alias_forms.add(c.form)
                    yield Alias(alias=c.form, url=rec.url)
                continue
            again = outcome.seen == AGAIN
            self.stats.inc_value("sitemap/depth_reconsidered" if again else "sitemap/discovered")
            refusal = outcome.refusal(c.claim)
            if refusal is not None:
                refuse(rec, refusal)
            yield rec
