"""Every decision the crawl can make about a URL, and the rules that close the books.

Each discovered URL ends with exactly one final decision and a reason, made where the
facts are: the frontier (:mod:`crawler.crawl.frontier`) for scope and caps, the page
judge (:mod:`crawler.crawl.judge`) for a fetched page, and here (:func:`close_books`)
what only the whole crawl can tell: URLs never fetched, byte-identical listed pages,
redirect and canonical chains. docs/ledger.md lists every decision and its reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from crawler.core.urls import url_key

# Decisions. ``queued`` is the only non-final one: a URL scheduled but not yet fetched.
QUEUED = "queued"
LISTED = "listed"
REDIRECT = "redirect"
CANONICAL = "canonical"
NOINDEX = "noindex"
STATUS = "status"
NON_HTML = "non-html"
OTHER_SCHEME = "other-scheme"
ROBOTS = "robots-disallowed"
OFF_HOST = "off-host"
NON_PUBLIC = "non-public"
TOO_LONG = "too-long"
EXCLUDED = "excluded"
TRAP = "trap"
CAP = "cap-reached"
DUPLICATE = "duplicate"
INVALID = "invalid-url"
ERROR = "fetch-error"
# Over the download size cap (DOWNLOAD_MAXSIZE, or once decompressed): the site
# answered, so it is no failure of the site (docs/ledger.md, "Decisions").
TOO_LARGE = "too-large"
# Learned during the crawl (docs/crawling.md#traps-learned): crawler.crawl.params,
# crawler.crawl.calendars, crawler.page.softnotfound.
IGNORED_PARAM = "ignored-parameter"
FACET = "facet-combination"
CALENDAR = "calendar"
SOFT_404 = "soft-404"

FINAL_DECISIONS = (
    LISTED,
    REDIRECT,
    CANONICAL,
    NOINDEX,
    STATUS,
    NON_HTML,
    OTHER_SCHEME,
    ROBOTS,
    OFF_HOST,
    NON_PUBLIC,
    TOO_LONG,
    EXCLUDED,
    TRAP,
    CAP,
    DUPLICATE,
    INVALID,
    ERROR,
    TOO_LARGE,
    IGNORED_PARAM,
    FACET,
    CALENDAR,
    SOFT_404,
)

#: Decisions the crawl learned its way to (docs/crawling.md#traps-learned): each has
#: its stat ``sitemap/excluded/<decision>``, set from the closed books.
LEARNED = (IGNORED_PARAM, FACET, CALENDAR, SOFT_404)

#: Decisions by the crawl's rules about a URL it met and did not judge: its scope
#: (--include/--exclude, the length of a loc), its caps, traps and learned query
#: parameters. The audit reports a listed URL so decided as ``excluded``, never as an
#: orphan, and does not fetch it (the user's rules said not to).
RULED_OUT = frozenset({TOO_LONG, EXCLUDED, TRAP, CAP, IGNORED_PARAM, FACET, CALENDAR})

#: Decisions reached by fetching the URL (or by robots.txt and host rules): the audit
#: trusts them. Caps, traps and exclusions are not judgements of the page.
JUDGED = frozenset(FINAL_DECISIONS) - RULED_OUT

#: Decisions about a 200 page that a 304 can stand for: the next run asks such a
#: page conditionally, and replays the decision when it is not modified.
REPLAYABLE = frozenset(
    {
        LISTED,
        NOINDEX,
        CANONICAL,
        REDIRECT,
        NON_HTML,
        OTHER_SCHEME,
        DUPLICATE,
        EXCLUDED,
        INVALID,
        SOFT_404,
        IGNORED_PARAM,
        FACET,
    }
)

#: The reason of a URL still queued when the crawl stopped (a cap, an interrupted run
#: published with --force).
UNFETCHED = "not fetched: the crawl stopped first"
#: The same, when the time budget (--max-time) ran out.
UNFETCHED_TIME = "not fetched: the time budget (--max-time) ran out"

# -- the frontier's refusals, typed ----------------------------------------------------

# The rules of the rule book (crawler.crawl.rulebook), in the order they are applied: the
# ledger's ``rule`` column names the one that refused a URL before it was fetched.
RULE_HOST = "host"
RULE_LENGTH = "length"
RULE_INCLUDE = "include/exclude"
RULE_HOPS = "hops"
RULE_CALENDAR = "calendar"
RULE_PARAMS = "parameters"
RULE_TRAPS = "traps"
RULE_VARIANTS = "query-variants"
#: A URL left out for depth: a shorter path found later lets it in (the only final
#: decision that a later one replaces).
RULE_DEPTH = "depth"
RULE_PAGES = "pages"
#: Not the frontier's: robots.txt is read where a URL is fetched (only ``explain``
#: applies it with the other rules).
RULE_ROBOTS = "robots.txt"
RULES = (
    RULE_HOST,
    RULE_LENGTH,
    RULE_INCLUDE,
    RULE_HOPS,
    RULE_CALENDAR,
    RULE_PARAMS,
    RULE_TRAPS,
    RULE_VARIANTS,
    RULE_DEPTH,
    RULE_PAGES,
    RULE_ROBOTS,
)

#: The reason of each kind of refusal, from its values: the one place a refusal's
#: reason is written (nothing reads a reason back).
_REASONS: dict[str, str] = {
    "non-public": "non-public address",
    "off-host": "another host",
    "too-long": "longer than {limit} characters",
    "no-include": "matches no --include rule",
    "exclude": "matches --exclude {pattern!r}",
    "hops": "more than {limit} redirect hops",
    "calendar-window": "calendar beyond window: {label} is more than {days} days from today",
    "calendar-steps": "calendar: more than {limit} steps from where the sequence was entered",
    "segments": "more than {limit} path segments",
    "repeats": "path segment {segment!r} repeated {count} times",
    "session-path": "session identifier in path",
    "session-query": "session identifier in query ({name})",
    "query-variants": "more than {limit} query variants of {path}",
    "listed-variants": "more than {limit} query variants of {path} listed",
    "depth": "max depth {limit}",
    "pages": "max pages {limit}",
    "robots": "disallowed by robots.txt (group {group!r})",
    # The verdicts about a fetched page (crawler.crawl.verdicts).
    "host-form": "another form of the site's host, answered HTTP {status}: not listed",
    "status": "HTTP {status}",
    "type": "{type}",
    "noindex": "noindex ({source})",
    "canonical": "canonical -> {target}{where}",
    "scheme": "{scheme} URL; the sitemap lists {start} only",
    "base-url": "outside the --base-url prefix",
    "soft-404": "soft 404: {why}",
    "loc": "not a valid <loc>: {error}",
}


def render(kind: str, values: Mapping[str, Any]) -> str:
    """The reason of a refusal of *kind* with *values* (see :class:`Refusal`)."""
    if kind == "ignored-parameter":
        names = list(values["names"])
        if len(names) == 1:
            return f"parameter {names[0]!r} does not change the page"
        return "parameters " + ", ".join(repr(n) for n in names) + " do not change the page"
    if kind == "facet":
        return "facet combination (" + ", ".join(sorted(set(values["names"]))) + ")"
    return _REASONS[kind].format(**values)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a URL is not fetched (or a fetched page not listed: the verdicts of
    :mod:`crawler.crawl.verdicts`), as facts: the *decision*, the *rule* (:data:`RULES`),
    the *kind* of refusal and its *values*, a *target* (the page it stands for). Its
    :attr:`reason` is rendered from them; nothing parses it back but what a soft-404
    page said, which the ledger keeps in its reason alone (crawler.crawl.verdicts)."""

    decision: str
    rule: str
    kind: str
    values: Mapping[str, Any] = field(default_factory=dict)
    target: str | None = None

    @property
    def reason(self) -> str:
        return render(self.kind, self.values)


class Books(Protocol):
    """What :func:`close_books` reads and changes: the running ledger
    (:class:`crawler.ledger.ledger.Ledger`), which stores decisions and makes none."""

    def redecide_queued(self, decision: str, reason: str) -> int: ...  # how many
    def listed_by_content(self) -> Iterator[list[str]]: ...
    def redecide(self, changes: Iterable[tuple[str, str, str, str | None]]) -> None: ...
    def hops(self) -> dict[str, str]: ...
    def append_reasons(self, notes: Iterable[tuple[str, str]]) -> None: ...
    def commit(self) -> None: ...
    def query_rows(self) -> Iterator[tuple[str, str, str | None]]: ...
    def learned_params(self) -> dict[str, list[str]]: ...
    def decision_by_url(self, url: str) -> tuple[str, str | None] | None: ...


def close_books(
    ledger: Books,
    *,
    dedupe_content: bool,
    unfetched: str = UNFETCHED,
    variants: Callable[[Books], Iterable[tuple[str, str, str, str | None]]] | None = None,
) -> int:
    """Decide what only the whole crawl can tell, in the running ledger: every URL
    still queued is ``cap-reached`` (reason *unfetched*); *variants* decides about
    the query variants (:func:`crawler.crawl.params.settler`); byte-identical listed
    pages are one page (:func:`duplicates`); hops that lead to a hop are marked
    (:func:`chains`). Returns how many URLs were left unfetched."""
    left = ledger.redecide_queued(CAP, unfetched)
    if variants is not None:
        ledger.redecide(list(variants(ledger)))
    if dedupe_content:
        ledger.redecide(duplicates(ledger.listed_by_content()))
    ledger.append_reasons(chains(ledger.hops()))
    ledger.commit()
    return left


def duplicates(groups: Iterable[list[str]]) -> list[tuple[str, str, str, str]]:
    """Listed pages with identical bodies (*groups*) are one page: the shortest URL
    stays listed, the others become ``duplicate`` of it. Returns ``(url, decision,
    reason, target)`` for each page that changes."""
    changes: list[tuple[str, str, str, str]] = []
    for urls in groups:
        keeper = min(urls, key=lambda u: (len(u), u))
        changes.extend(
            (url, DUPLICATE, f"same content as {keeper}", keeper) for url in urls if url != keeper
        )
    return changes


def chains(hops: Mapping[str, str]) -> list[tuple[str, str]]:
    """*hops*: the key of each redirect or canonical -> its target's key. A hop whose
    target is itself a hop is part of a chain, or of a loop when following the hops
    comes back; returns ``(key, " (chain)" or " (loop)")`` for each."""
    notes = []
    for key, target in hops.items():
        if target not in hops:
            continue
        seen, node = {key}, target
        while node in hops and node not in seen:
            seen.add(node)
            node = hops[node]
        notes.append((key, " (loop)" if node in seen else " (chain)"))
    return notes


def target_key(target: str | None) -> str | None:
    """The dedup key of a redirect or canonical target (what :func:`chains` follows)."""
    return None if target is None else url_key(target)
