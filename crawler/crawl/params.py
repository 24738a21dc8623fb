"""Query parameters learned from the pages, and facets (docs/crawling.md#traps-learned).

Counting query strings per path (:mod:`crawler.crawl.traps`) stops a trap late; the
crawl learns instead, per path, which parameters leave the main-content hash
(:mod:`crawler.page.content`) unchanged, and which paths are faceted listings. What
the frontier decides depends on what was learned so far; :func:`settle` decides again
over the whole ledger, so the listed set does not depend on the order of the crawl.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from urllib.parse import unquote_plus

from crawler.core import decisions as d

#: Agreeing pairs of pages needed to learn a parameter on a path.
EVIDENCE = 2
#: Fetched pages of one path remembered for the comparisons (bounds the work).
MAX_OBSERVED = 64
#: Query URLs of one path remembered for grouping and facets (bounds memory).
MAX_MEMBERS = 256
#: Paths with query variants followed at most (bounds memory on a site of a million
#: ``/product/N?ref=...``); beyond it, new paths are crawled without learning.
MAX_PATHS = 100_000

Params = tuple[tuple[str, str], ...]


def split(url: str) -> tuple[str, list[str]]:
    """*url* (normalised) as its address without the query, and the query's raw
    ``name=value`` pieces in order (none for no query)."""
    base, _, query = url.partition("?")
    return base, [p for p in query.split("&") if p] if query else []


def name_of(piece: str) -> str:
    return unquote_plus(piece.partition("=")[0])


def params_of(pieces: Iterable[str]) -> Params:
    """The pieces as a sorted tuple of ``(name, value)``: query order never matters."""
    return tuple(sorted((name_of(p), unquote_plus(p.partition("=")[2])) for p in pieces))


def reduce(url: str, ignored: frozenset[str] | set[str]) -> tuple[str, Params, list[str]]:
    """*url* without the parameters named in *ignored*: ``(the reduced URL, its
    params, the names removed)``."""
    base, pieces = split(url)
    kept = [p for p in pieces if name_of(p) not in ignored]
    removed = sorted({name_of(p) for p in pieces if name_of(p) in ignored})
    return (base + "?" + "&".join(kept) if kept else base), params_of(kept), removed


def ignored_refusal(removed: list[str], target: str | None) -> d.Refusal:
    """*removed*: the learned parameters that make a URL another form of *target*."""
    values = {"names": removed}
    return d.Refusal(d.IGNORED_PARAM, d.RULE_PARAMS, "ignored-parameter", values, target)


def facet_refusal(names: Iterable[str]) -> d.Refusal:
    """A combination of facets (*names*: its parameters)."""
    return d.Refusal(d.FACET, d.RULE_PARAMS, "facet", {"names": sorted(set(names))})


def _differs_in(a: Params, b: Params) -> str | None:
    """The one parameter name in which *a* and *b* differ, or None (none, or several)."""
    da, db = ({n: [v for _, v in g] for n, g in groupby(p, key=itemgetter(0))} for p in (a, b))
    names = [n for n in da.keys() | db.keys() if da.get(n) != db.get(n)]
    return names[0] if len(names) == 1 else None


@dataclass(slots=True)
class _Path:
    """What is known about one path (scheme, host, port and path)."""

    # params -> (main hash, bag hash): what each fetched page of the path held.
    observed: dict[Params, tuple[str, str | None]] = field(default_factory=dict)
    agree: dict[str, int] = field(default_factory=dict)  # name -> agreeing pairs
    changing: set[str] = field(default_factory=set)
    members: list[tuple[str, Params]] = field(default_factory=list)  # fetched query URLs
    singles: set[str] = field(default_factory=set)  # names of one-parameter variants


class ParamLearner:
    """Learns, per path, the parameters that do not change a page (see the module
    docstring). *learned*: what earlier runs learned (path -> names); *on_learn*:
    ``(path, name, learned)`` when a parameter is learned or forgotten; *known*: whether
    a URL was discovered already (then, reduced, it is the group's page)."""

    def __init__(
        self,
        learned: Mapping[str, Iterable[str]] | None = None,
        on_learn: Callable[[str, str, bool], None] | None = None,
        known: Callable[[str], bool] = lambda url: False,
    ) -> None:
        self.known = known
        self.learned: dict[str, set[str]] = {p: set(n) for p, n in (learned or {}).items()}
        self.inherited = {p: frozenset(n) for p, n in self.learned.items()}
        self.on_learn = on_learn
        self.paths: dict[str, _Path] = {}

    def _path(self, base: str) -> _Path | None:
        known = self.paths.get(base)
        if known is None and len(self.paths) < MAX_PATHS:
            known = self.paths[base] = _Path()
        return known

    # -- what a fetched page teaches ------------------------------------------------------

    def observe(self, url: str, main_hash: str | None, bag: str | None = None) -> list[str]:
        """A listed page's main-content hash, and its hash whatever the order (*bag*,
        when the page has one: :func:`crawler.page.content.bag_hash`); returns the names
        learned by it. Two pages are the same when either hash is."""
        if main_hash is None:
            return []
        base, pieces = split(url)
        known = self.paths.get(base)
        if known is None and not pieces:
            # A page without a query teaches something only when its path has
            # variants: kept only once some are known (a page's own links are
            # discovered before it is observed), so that a site's every page does
            # not stay in memory.
            return []
        known = self._path(base)
        params = params_of(pieces)
        if known is None or params in known.observed or len(known.observed) >= MAX_OBSERVED:
            return []
        learned = []
        for other, (other_hash, other_bag) in known.observed.items():
            name = _differs_in(params, other)
            if name is None:
                continue
            if other_hash == main_hash or (bag is not None and other_bag == bag):
                known.agree[name] = known.agree.get(name, 0) + 1
                if (
                    known.agree[name] >= EVIDENCE
                    and name not in known.changing
                    and name not in self.learned.get(base, ())
                ):
                    self.learned.setdefault(base, set()).add(name)
                    learned.append(name)
                    if self.on_learn:
                        self.on_learn(base, name, True)
            elif name not in known.changing:
                known.changing.add(name)
                if name in self.learned.get(base, ()):
                    self.learned[base].discard(name)
                    if self.on_learn:
                        self.on_learn(base, name, False)
        known.observed[params] = (main_hash, bag)
        return learned

    # -- what the frontier asks ---------------------------------------------------------

    def check(self, url: str) -> d.Refusal | None:
        """Why *url* need not be fetched (:func:`ignored_refusal`,
        :func:`facet_refusal`): it differs from a URL to be fetched only in learned
        parameters, or it is a facet combination; None otherwise (then call
        :meth:`admit` if it is fetched)."""
        base, pieces = split(url)
        known = self._path(base) if pieces else None
        if known is None:
            return None
        ignored = self.learned.get(base, set())
        reduced, params, removed = reduce(url, ignored)
        if len(params) == 1 and len(known.singles) < MAX_MEMBERS:
            known.singles.add(params[0][0])
        if removed:
            best = reduced if self.known(reduced) else self._best(known, ignored, params)
            if best is not None and (len(best), best) <= (len(url), url):
                return ignored_refusal(removed, best)
        if len(params) >= 2 and len(known.singles) >= 2:
            return facet_refusal(n for n, _ in params)
        return None

    def admit(self, url: str) -> None:
        """*url* is fetched: remember it as a member of its path's group."""
        base, pieces = split(url)
        known = self._path(base) if pieces else None
        if known is not None and len(known.members) < MAX_MEMBERS:
            known.members.append((url, params_of(pieces)))

    def _best(self, known: _Path, ignored: set[str], params: Params) -> str | None:
        same = [url for url, _ in known.members if reduce(url, ignored)[1] == params]
        return min(same, key=lambda u: (len(u), u), default=None)

    def summary(self) -> dict[str, list[str]]:
        """Path -> the parameters learned on it (sorted)."""
        return {p: sorted(n) for p, n in sorted(self.learned.items()) if n}


# -- the books, once the crawl is over ----------------------------------------------------

Change = tuple[str, str, str, str | None]


def settler(budget: int) -> Callable[[d.Books], Iterator[Change]]:
    """What :func:`crawler.core.decisions.close_books` runs on the closed books: the query
    variants settled (:func:`settle`) with *budget* variants listed a path."""

    def run(books: d.Books) -> Iterator[Change]:
        return settle(books.query_rows(), books.learned_params(), books.decision_by_url, budget)

    return run


def settle(
    rows: Iterable[tuple[str, str, str | None]],
    learned: Mapping[str, Iterable[str]],
    bare: Callable[[str], tuple[str, str | None] | None],
    budget: int,
) -> Iterator[Change]:
    """The decisions about query URLs that only the whole crawl can tell.

    *rows*: ``(url, decision, target)`` of every URL with a query, sorted by URL
    (the URLs of one path are then contiguous); *learned*: path -> learned names;
    *bare*: ``(decision, url)`` of a path's URL without a query, if known; *budget*:
    the most query variants listed per path (0: no cap). Yields ``(url, decision,
    reason, target)`` for each URL whose decision changes (see the module docstring).
    """
    for base, group in groupby(rows, key=lambda row: row[0].partition("?")[0]):
        ignored = frozenset(learned.get(base, ()))
        yield from _settle_path(base, list(group), ignored, bare, budget)


def _settle_path(
    base: str,
    rows: list[tuple[str, str, str | None]],
    ignored: frozenset[str],
    bare: Callable[[str], tuple[str, str | None] | None],
    budget: int,
) -> Iterator[Change]:
    listed = [url for url, decision, _ in rows if decision == d.LISTED]
    others = [(url, decision, target) for url, decision, target in rows if decision in _UNFETCHED]
    if not listed and not others:
        return
    reduced = {url: reduce(url, ignored) for url, _, _ in rows}
    singles = {p[0][0] for _, p, _ in reduced.values() if len(p) == 1}
    faceted = len(singles) >= 2
    keepers: dict[Params, str] = {}
    if ignored:
        found = bare(base)
        if found is not None and found[0] == d.LISTED:
            keepers[()] = base
        for url in sorted(listed, key=lambda u: (len(u), u)):
            _, params, removed = reduced[url]
            keeper = keepers.setdefault(params, url)
            if keeper != url:
                yield url, d.IGNORED_PARAM, ignored_refusal(removed, None).reason, keeper
        listed = [u for p, u in keepers.items() if p]
    # URLs the frontier did not fetch: an alias of the group's page, a facet
    # combination, as the whole crawl sees them.
    for url, decision, target in others:
        _, params, removed = reduced[url]
        page = keepers.get(params) if removed else None
        if page is not None and page != url:
            if decision != d.IGNORED_PARAM or page != target:
                yield url, d.IGNORED_PARAM, ignored_refusal(removed, None).reason, page
        elif decision == d.IGNORED_PARAM and len(params) >= 2 and faceted:
            yield url, d.FACET, facet_refusal(n for n, _ in params).reason, None
    kept = []
    for url in sorted(listed, key=lambda u: (len(u), u)):
        params = reduced[url][1]
        if len(params) >= 2 and faceted:
            yield url, d.FACET, facet_refusal(n for n, _ in params).reason, None
        else:
            kept.append(url)
    if budget and len(kept) > budget:
        path = "/" + base.split("/", 3)[3] if base.count("/") >= 3 else base
        for url in kept[budget:]:
            reason = d.render("listed-variants", {"limit": budget, "path": path})
            yield url, d.TRAP, reason, None


#: Decisions of query URLs the frontier made without fetching them, which the
#: whole crawl may correct.
_UNFETCHED = frozenset({d.IGNORED_PARAM, d.FACET})
