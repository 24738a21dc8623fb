"""The frontier's rule book: which URLs a crawl fetches, in one ordered list.

A URL new to the crawl is put to the rules in the order of :data:`crawler.core.decisions.RULES`
(host, length, include/exclude, hops, calendar, parameters, traps, query-variants,
depth, pages; docs/explain.md says what each refuses and with which decision); the
first that refuses it decides (a :class:`crawler.core.decisions.Refusal`), and a URL
every rule lets pass is queued. Start URLs are exempt from include/exclude, calendar
and parameters. robots.txt is read where a URL is fetched (:mod:`crawler.fetch.robots`):
``explain`` applies it as the eleventh rule.

The counted rules and the depth cap's second chance are a claim (:meth:`RuleBook.claim`)
that a backend applies (:mod:`crawler.crawl.counted`). ``explain`` builds the book from
what the run recorded (:class:`RuleParams`): a URL the crawl never saw is judged with
that run's rules, not the current settings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from crawler.core import decisions as d
from crawler.core.decisions import Refusal
from crawler.core.urls import Stripping, is_public_host, other_forms, site_of
from crawler.crawl.calendars import STEPS, CalendarRule
from crawler.crawl.counted import HOLD, REFUSE, Claim, Count
from crawler.crawl.params import ParamLearner
from crawler.crawl.traps import TrapDetector

if TYPE_CHECKING:
    from crawler.core.publicurl import PublicUrls


@dataclass(frozen=True, slots=True)
class Found:
    """How a URL was found: its *depth* (links from the start URL), the redirect
    *hops* that led to it, the page it was found on, and whether it is a start URL."""

    depth: int
    hops: int = 0
    referrer: str | None = None
    start: bool = False


class Rule(Protocol):
    name: str

    def check(self, url: str, found: Found) -> Refusal | None:
        """Why *url* is refused, or None (it passes)."""

    def passed(self, url: str, found: Found) -> str:
        """Why *url* passes, in words (for ``explain``)."""


# -- the values a rule book is built with ----------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleParams:
    """The values a run's rule book was built with, kept in the ledger's ``meta``
    (``scope``) by the frontier. A value missing from an older ledger is None: its
    rule is then unknown to ``explain``, never replaced by today's settings."""

    start_url: str
    starts: tuple[str, ...] | None = None
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    max_loc_length: int | None = None
    max_redirects: int | None = None
    calendar_window_days: int | None = None
    calendar_steps: int | None = None
    calendar_today: str | None = None
    trap_max_repeats: int | None = None
    trap_max_segments: int | None = None
    trap_max_query_variants: int | None = None
    max_depth: int | None = None
    max_pages: int | None = None
    strip_params: bool = True
    strip_extra: tuple[str, ...] = ()
    robots_obey: bool = True

    def record(self) -> dict[str, Any]:
        """What the ledger keeps (JSON)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @classmethod
    def from_record(cls, start_url: str, record: Mapping[str, Any]) -> RuleParams:
        """The values a ledger recorded (keys it lacks are None)."""
        values = {name: record[name] for name in (f.name for f in fields(cls)) if name in record}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        return cls(**{**values, "start_url": start_url})

    def traps(self) -> TrapDetector | None:
        if None in (self.trap_max_repeats, self.trap_max_segments, self.trap_max_query_variants):
            return None
        return TrapDetector(
            max_repeats=int(self.trap_max_repeats or 0),
            max_segments=int(self.trap_max_segments or 0),
            max_query_variants=int(self.trap_max_query_variants or 0),
        )

    def calendars(self) -> CalendarRule | None:
        if self.calendar_window_days is None or self.calendar_today is None:
            return None
        return CalendarRule(
            timedelta(days=self.calendar_window_days),
            STEPS if self.calendar_steps is None else self.calendar_steps,
            date.fromisoformat(self.calendar_today),
        )


def starts_of(start_url: str, more: Iterable[str], strip: Stripping) -> tuple[str, ...]:
    """The start URLs, normalised: exempt from include/exclude, calendars and
    learned parameters (the seeds of a ``--urls`` file are not)."""
    normal = (strip.normalize(raw) for raw in more)
    return tuple(dict.fromkeys([start_url, *(u for u in normal if u is not None)]))


# -- the rules --------------------------------------------------------------------------

EXEMPT = "a start URL (exempt)"


class Host:
    name = d.RULE_HOST

    def __init__(self, start_url: str) -> None:
        self.site = site_of(start_url)
        self.forms = other_forms(self.site)
        self.start_is_public = is_public_host(self.site[0] if self.site else "")

    def check(self, url: str, found: Found) -> Refusal | None:
        target = site_of(url)
        if target == self.site or target in self.forms:
            return None
        host = target[0] if target else ""
        if self.start_is_public and not is_public_host(host):
            return Refusal(d.NON_PUBLIC, self.name, "non-public", {"host": host})
        return Refusal(d.OFF_HOST, self.name, "off-host", {"host": host})

    def passed(self, url: str, found: Found) -> str:
        if site_of(url) != self.site:
            return "another form of the start URL's host (followed as a redirect, never listed)"
        return "the start URL's host"


@dataclass
class Length:
    public: PublicUrls
    limit: int
    name = d.RULE_LENGTH

    def check(self, url: str, found: Found) -> Refusal | None:
        if len(url) > self.limit or len(self.public.loc(url) or "") > self.limit:
            return Refusal(d.TOO_LONG, self.name, "too-long", {"limit": self.limit})
        return None

    def passed(self, url: str, found: Found) -> str:
        return f"{len(url)} characters"


@dataclass
class IncludeExclude:
    include: list[re.Pattern[str]]
    exclude: list[re.Pattern[str]]
    name = d.RULE_INCLUDE

    def check(self, url: str, found: Found) -> Refusal | None:
        if found.start:
            return None
        if self.include and not any(p.search(url) for p in self.include):
            return Refusal(d.EXCLUDED, self.name, "no-include")
        for p in self.exclude:
            if p.search(url):
                return Refusal(d.EXCLUDED, self.name, "exclude", {"pattern": p.pattern})
        return None

    def passed(self, url: str, found: Found) -> str:
        if found.start:
            return EXEMPT
        parts = {"an --include rule": self.include, "no --exclude rule": self.exclude}
        said = ", ".join(f"matches {p}" for p, rules in parts.items() if rules)
        return said or "no --include or --exclude rules"


@dataclass
class Hops:
    limit: int
    name = d.RULE_HOPS

    def check(self, url: str, found: Found) -> Refusal | None:
        if found.hops > self.limit:
            return Refusal(d.CAP, self.name, "hops", {"limit": self.limit})
        return None

    def passed(self, url: str, found: Found) -> str:
        return f"{found.hops} redirect hops (at most {self.limit})"


@dataclass
class Delegated:
    """A rule another piece decides (*decide*: calendars, learned parameters, trap
    shapes); start URLs are exempt when *exempt*; *passes*: why a URL passes."""

    name: str
    decide: Callable[[str, Found], Refusal | None]
    passes: str
    exempt: bool = True

    def check(self, url: str, found: Found) -> Refusal | None:
        return None if self.exempt and found.start else self.decide(url, found)

    def passed(self, url: str, found: Found) -> str:
        return EXEMPT if self.exempt and found.start else self.passes


class Counted:
    """A counted rule: ``count`` names the counter a URL counts in and its limit;
    ``check`` and ``passed`` read *counters*, what was counted so far (``explain``)."""

    name: str
    counters: Mapping[str, int]
    count: Callable[[str, Found], Count | None]

    def check(self, url: str, found: Found) -> Refusal | None:
        count = self.count(url, found)
        if count is not None and self.counters.get(count.counter, 0) >= count.limit:
            return count.refusal
        return None


@dataclass
class QueryVariants(Counted):
    """Counted: the query variants of each path."""

    traps: TrapDetector
    counters: Mapping[str, int]
    name = d.RULE_VARIANTS

    def count(self, url: str, found: Found) -> Count | None:
        path, limit = self.traps.variant_path(url), self.traps.max_query_variants
        if path is None:
            return None
        refusal = Refusal(d.TRAP, self.name, "query-variants", {"limit": limit, "path": path})
        return Count(self.counter(path), limit, refusal)

    @staticmethod
    def counter(path: str) -> str:
        return f"{d.RULE_VARIANTS} {path}"

    def passed(self, url: str, found: Found) -> str:
        path = self.traps.variant_path(url)
        if path is None:
            return "no query"
        before, limit = self.counters.get(self.counter(path), 0), self.traps.max_query_variants
        return f"{before} query variants of {path} before it (at most {limit})"


@dataclass
class Depth:
    """A URL it refuses is held aside, for a shorter path (:meth:`RuleBook.claim`)."""

    limit: int
    name = d.RULE_DEPTH

    def check(self, url: str, found: Found) -> Refusal | None:
        if self.limit and found.depth > self.limit:
            return Refusal(d.CAP, self.name, "depth", {"limit": self.limit})
        return None

    def passed(self, url: str, found: Found) -> str:
        if not self.limit:
            return "no depth cap"
        return f"depth {found.depth} (at most {self.limit})"


@dataclass
class Pages(Counted):
    """Counted: the URLs queued (0: no cap)."""

    limit: int
    counters: Mapping[str, int]
    name = d.RULE_PAGES

    def count(self, url: str, found: Found) -> Count | None:
        refusal = Refusal(d.CAP, self.name, "pages", {"limit": self.limit})
        return Count(self.name, self.limit, refusal) if self.limit else None

    def passed(self, url: str, found: Found) -> str:
        if not self.limit:
            return "no page cap"
        before = self.counters.get(self.name, 0)
        return f"{before} URLs queued before it (at most {self.limit})"


class RuleBook:
    """The rules of one crawl, in order (see the module docstring). *starts*: the
    start URLs, exempt where the module docstring says."""

    def __init__(self, rules: Iterable[Rule], starts: Iterable[str]) -> None:
        self.rules = list(rules)
        self.starts = frozenset(starts)
        self.by_name = {rule.name: rule for rule in self.rules}

    @classmethod
    def of(
        cls,
        params: RuleParams,
        *,
        public: PublicUrls,
        learner: ParamLearner | None,
        calendars: CalendarRule | None,
        counters: Mapping[str, int] | None = None,
        counted: bool = True,
    ) -> RuleBook:
        """The book of *params*, without the rules whose values are missing (an older
        ledger), nor the counted ones (query variants, pages) unless *counted*; those
        read *counters* (what was counted: ``explain``; a crawl's book only claims)."""
        counters, traps = {} if counters is None else counters, params.traps()
        rules: list[Rule] = [Host(params.start_url)]
        if params.max_loc_length is not None:
            rules.append(Length(public, params.max_loc_length))
        if params.include is not None and params.exclude is not None:
            compiled = [re.compile(p) for p in params.include]
            rules.append(IncludeExclude(compiled, [re.compile(p) for p in params.exclude]))
        if params.max_redirects is not None:
            rules.append(Hops(params.max_redirects))
        if calendars is not None:
            cut, why = calendars.check, "no calendar rule cuts it"
            rules.append(Delegated(d.RULE_CALENDAR, lambda u, f: cut(u, f.referrer), why))
        if learner is not None:
            learned, why = learner.check, "no learned parameter, not a facet combination"
            rules.append(Delegated(d.RULE_PARAMS, lambda u, f: learned(u), why))
        if traps is not None:
            shape, why = traps.shape, "no trap rule matches"
            rules.append(Delegated(d.RULE_TRAPS, lambda u, f: shape(u), why, exempt=False))
            if counted:
                rules.append(QueryVariants(traps, counters))
        if params.max_depth is not None:
            rules.append(Depth(params.max_depth))
        if params.max_pages is not None and counted:
            rules.append(Pages(params.max_pages, counters))
        return cls(rules, params.starts or (params.start_url,))

    def found(self, url: str, depth: int, hops: int = 0, referrer: str | None = None) -> Found:
        return Found(depth, hops, referrer, url in self.starts)

    def claim(self, url: str, found: Found, held: bool = False) -> Claim:
        """What *url* asks of the counters (crawler.crawl.counted): the counts of the
        counted rules before the first rule that refuses it, then that refusal; the
        depth cap's holds the URL aside, for a claim that queues it (a shorter path).
        A URL *held* aside already is put to the depth cap first."""
        if held and (refusal := self.by_name[d.RULE_DEPTH].check(url, found)) is not None:
            return Claim((), HOLD, refusal)
        counts: list[Count] = []
        for rule in self.rules:
            if isinstance(rule, Counted):
                if (count := rule.count(url, found)) is not None:
                    counts.append(count)
            elif (refusal := rule.check(url, found)) is not None:
                return Claim(tuple(counts), HOLD if isinstance(rule, Depth) else REFUSE, refusal)
        return Claim(tuple(counts))

    def verdicts(self, url: str, found: Found) -> Iterator[tuple[Rule, Refusal | None]]:
        """Each rule and what it says, up to the first refusal (``explain``)."""
        for rule in self.rules:
            refusal = rule.check(url, found)
            yield rule, refusal
            if refusal is not None:
                return
