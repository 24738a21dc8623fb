"""A URL put to the rules of a finished run: the frontier's rule book rebuilt from what
its ledger recorded (never the current settings). It judges with the run's final state,
where the frontier judged with what it knew then, so a URL refused early by a counted
rule may pass here, and the reverse. A URL the crawl never saw has no depth (the cap is
named, not applied) and no referrer: a dated one is judged as linked from its sequence
when the crawl met it. A ledger of an earlier version lacks some values: "unknown".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler.core import decisions as d
from crawler.core.urls import url_key
from crawler.crawl.calendars import date_of
from crawler.crawl.params import ParamLearner
from crawler.crawl.rulebook import Found, QueryVariants, RuleBook, RuleParams
from crawler.crawl.verdicts import Read, VerdictBook
from crawler.fetch.robotsrules import RobotsRules, RobotsTxtParser, robots_refusal
from crawler.ledger.ledger import LedgerReader

if TYPE_CHECKING:
    from crawler.core.publicurl import PublicUrls
    from crawler.crawl.calendars import CalendarRule, Dated

#: Each rule's place in the order.
_ORDER = {rule: n for n, rule in enumerate(d.RULES)}
#: The frontier's rules (robots.txt is read where a URL is fetched).
_FRONTIER = d.RULES[:-1]


def _reached(refused_by: str | None, rule: str, passed: bool = False) -> bool:
    """Whether a URL refused by *refused_by* (None: queued) was put to *rule* (and,
    with *passed*, passed it: a later rule refused it)."""
    return refused_by is None or _ORDER.get(refused_by, -1) >= _ORDER[rule] + passed


class RunRules:
    """The rules of the run whose ledger is *ledger*."""

    def __init__(self, ledger: LedgerReader, start: str, public: PublicUrls) -> None:
        self.ledger = ledger
        self.start = start
        self.public = public
        scope = ledger.get_meta("scope")
        self.recorded = isinstance(scope, Mapping) and bool(scope)
        self.params = RuleParams.from_record(start, scope if isinstance(scope, Mapping) else {})
        self.queued = ledger.queued()
        self.book = VerdictBook(start, public)

    def judge(self, url: str, row: dict[str, Any] | None) -> dict[str, Any]:
        """What the rules say about *url* (*row*: its row, if the crawl saw it):
        ``would_fetch`` (None: cannot tell), ``would_decide``, ``summary``,
        ``checks`` (``rule``, ``ok``, ``detail``, ``decision``)."""
        key = row["key"] if row is not None else url_key(url)
        book, found, notes = self._book(url, row, key)
        checks: list[dict[str, Any]] = []
        refused: d.Refusal | None = None
        verdicts = {rule.name: (rule, refusal) for rule, refusal in book.verdicts(url, found)}
        for name in _FRONTIER:
            if name not in verdicts:
                if name in book.by_name:
                    break  # after the refusal
                checks.append(_check(name, None, self._missing(name)))
                continue
            rule, refusal = verdicts[name]
            if refusal is not None:
                refused = refusal
                checks.append(_check(name, False, refusal.reason, refusal))
                break
            checks.append(_check(name, True, notes.get(name) or rule.passed(url, found)))
        if refused is None:
            checks.append(self._robots(url))
        return _verdict(checks, row is not None)

    def _missing(self, name: str) -> str:
        if name in (d.RULE_VARIANTS, d.RULE_PAGES) and self.recorded and self.queued is None:
            return f"unknown: this ledger does not say which rule refused a URL ({name} counts)"
        return f"unknown: the crawl's {name} rule is not in this ledger"

    def _book(
        self, url: str, row: dict[str, Any] | None, key: str
    ) -> tuple[RuleBook, Found, dict[str, str]]:
        params = self.params
        notes: dict[str, str] = {}
        others = self._others(url, key)
        # What the crawl counted: the query variants of the path it let through, the queued.
        passed = sum(1 for r in others if _reached(r["rule"], d.RULE_VARIANTS, passed=True))
        counters = {QueryVariants.counter(urlsplit(url).path): passed}
        calendars = params.calendars()
        referrer = row["referrer"] if row is not None else None
        if calendars is not None and (nearest := self._calendar(calendars, url, row, key, notes)):
            referrer = nearest
        queued = self.queued
        if queued is not None and row is not None and row.get("rule") is None:
            queued -= 1  # the URL itself
        counters[d.RULE_PAGES] = queued or 0
        book = RuleBook.of(
            params,
            public=self.public,
            learner=self._learner(url, others),
            calendars=calendars,
            counters=counters,
            counted=queued is not None,
        )
        depth, hops = (int(row.get("depth") or 0), self._hops(row)) if row else (0, 0)
        if row is None and params.max_depth:
            notes[d.RULE_DEPTH] = (
                f"max depth {params.max_depth}: followed when linked from a page at "
                f"depth {params.max_depth - 1} or less"
            )
        return book, book.found(url, depth, hops, referrer), notes

    def _others(self, url: str, key: str) -> list[dict[str, Any]]:
        """The other rows of *url*'s path with a query (none without a query)."""
        base, _, query = url.partition("?")
        if not query:
            return []
        return [r for r in self.ledger.rows_from(base + "?") if r["key"] != key]

    def _learner(self, url: str, others: list[dict[str, Any]]) -> ParamLearner:
        """The parameters learned, and what the crawl met of *url*'s path: the
        single-parameter variants (facets) and the variants it queued."""
        learner = ParamLearner(
            self.ledger.learned_params(),
            known=lambda u: self.ledger.row(url_key(u)) is not None,
        )
        for other in others:
            if _reached(other["rule"], d.RULE_PARAMS) and other["url"] not in (
                self.params.starts or ()
            ):
                learner.check(other["url"])
                if other["rule"] is None:
                    learner.admit(other["url"])
        return learner

    def _calendar(
        self,
        calendars: CalendarRule,
        url: str,
        row: dict[str, Any] | None,
        key: str,
        notes: dict[str, str],
    ) -> str | None:
        """Where the crawl entered *url*'s date sequence, into *calendars*; for an unseen
        URL, the page of its sequence it is judged as linked from (None: another)."""
        dated = date_of(url)
        if dated is None:
            return None
        template = dated.template
        entries: set[Any] = set()
        members: list[tuple[Dated, str]] = []
        starts = self.params.starts or (self.start,)
        for other in self.ledger.rows_from(_sequence_prefix(url, template)):
            other_dated = date_of(other["url"])
            if other["key"] == key or other_dated is None or other_dated.template != template:
                continue
            members.append((other_dated, other["url"]))
            if other["referrer"] is None or other["url"] in starts:
                continue
            if not _reached(other["rule"], d.RULE_CALENDAR):
                continue
            came_from = date_of(other["referrer"])
            if came_from is None or came_from.template != template:
                entries.add(other_dated.first)
        calendars.entries[template] = entries
        if row is not None or not members:
            return None
        nearest = min(members, key=lambda m: abs((m[0].first - dated.first).days))[1]
        notes[d.RULE_CALENDAR] = (
            f"no calendar rule cuts it, as linked from its date sequence ({nearest})"
        )
        return nearest

    def _hops(self, row: dict[str, Any]) -> int:
        """The redirects that led to *row*'s URL (its referrer redirected to it, ...)."""
        hops, current, seen = 0, row, {row["key"]}
        while current["referrer"]:
            referrer = self.ledger.row(url_key(current["referrer"]))
            if (
                referrer is None
                or referrer["key"] in seen
                or referrer["decision"] != d.REDIRECT
                or referrer["target_key"] != current["key"]
            ):
                break
            seen.add(referrer["key"])
            hops, current = hops + 1, referrer
        return hops

    def _robots(self, url: str) -> dict[str, Any]:
        """The crawl's robots.txt rule, on the rules the run read (none: unavailable)."""
        robots, name = self.ledger.get_meta("robots"), d.RULE_ROBOTS
        if self.recorded and not self.params.robots_obey:
            return _check(name, True, "not obeyed (ROBOTSTXT_OBEY is off)")
        if not isinstance(robots, dict):
            return _check(name, None, "unknown: this ledger keeps no robots.txt")
        text, token = robots.get("text"), str(robots.get("token") or "")
        rp = None if text is None else RobotsTxtParser(str(text).encode())
        if (refusal := robots_refusal(rp, url, token)) is not None:
            found = self.robots_rule(url)
            detail = f"{refusal.reason}: {found['says']}" if found else refusal.reason
            return _check(name, False, detail, refusal)
        if rp is None:
            return _check(name, True, "robots.txt was unavailable: all allowed")
        return _check(name, True, f"allowed (group {rp.group_name(token)!r})")

    def robots_rule(self, url: str) -> dict[str, Any] | None:
        """The group and the line of the run's robots.txt that disallow *url*: ``group``,
        ``rule`` (``Disallow: /index-files/``), ``line``, and ``says``, the three in
        words; None when the ledger keeps no robots.txt or no rule disallows it."""
        robots = self.ledger.get_meta("robots")
        if not isinstance(robots, dict) or robots.get("text") is None:
            return None
        rules, token = RobotsRules(str(robots["text"])), str(robots.get("token") or "")
        found = rules.deciding_rule(url, token)
        if found is None or found[0].startswith("Allow"):
            return None
        group = rules.group_name(token)
        rule, line = found
        where = "every agent (*)" if group == "*" else group
        says = f"the group for {where}, `{rule}` (line {line})"
        return {"group": group, "rule": rule, "line": line, "says": says}

    def listing(self, url: str, row: dict[str, Any] | None) -> dict[str, Any] | None:
        """The judge's verdict book replayed: on what the ledger kept of a fetched page,
        or, for a URL the crawl never saw, the verdicts that need no page (the others
        answer "?"); None for a URL the judge never put to it (not fetched, a redirect).
        ``would_list``, ``would_decide``, ``checks``."""
        if row is not None and (row["status"] is None or row["decision"] == d.REDIRECT):
            return None
        read = Read() if row is None else Read.kept(row, self.public)
        checks: list[dict[str, Any]] = []
        for rule in self.book.rules:
            if row is None and rule.reads_page:
                checks.append(_check(rule.name, None, "unknown: read from the page once fetched"))
            elif (refusal := rule.check(url, read)) is not None:
                checks.append(_check(rule.name, False, refusal.reason, refusal))
                break
            else:
                checks.append(_check(rule.name, True, rule.passes))
        oks = [check["ok"] for check in checks]
        would = False if False in oks else None if None in oks else True
        decision = checks[-1]["decision"] if would is False else d.LISTED if would else None
        return {"would_list": would, "would_decide": decision, "checks": checks}


def _sequence_prefix(url: str, template: str) -> str:
    """The start every URL of *url*'s date sequence (*template*) shares."""
    at, query = template.index("{date}"), template.find("?")
    head = template[: query + 1] if 0 <= query < at else template[:at]
    return f"{urlsplit(url).scheme}://{head}"


def _check(
    rule: str, ok: bool | None, detail: str, refusal: d.Refusal | None = None
) -> dict[str, Any]:
    decision, target = (refusal.decision, refusal.target) if refusal else (None, None)
    out: dict[str, Any] = {"rule": rule, "ok": ok, "detail": detail, "decision": decision}
    return out if target is None else {**out, "target": target}


def _verdict(checks: list[dict[str, Any]], known: bool) -> dict[str, Any]:
    refused = next((c for c in checks if c["ok"] is False), None)
    unknown = next((c for c in checks if c["ok"] is None), None)
    if refused is not None:
        would: bool | None = False
        summary = f"the crawl's rules would not fetch it: {refused['detail']}"
    elif unknown is not None:
        would = None
        summary = f"the crawl's rules may fetch it: {unknown['detail']}"
    else:
        would = True
        summary = (
            "the crawl's rules let it through"
            if known
            else "the crawl's rules would fetch it: no crawled page links to it "
            "(link it from a crawled page, or check the link's spelling)"
        )
    return {
        "would_fetch": would,
        # The decision the crawl would record (had a page linked to it).
        "would_decide": refused["decision"] if refused else None,
        "summary": summary,
        "checks": checks,
    }
