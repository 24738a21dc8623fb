"""Why is this URL (not) in the sitemap? One URL's story, read (read-only) from the ledger
of the last run that did its job, as one JSON-able dict (docs/explain.md shows it): which
URL the pasted text is, its decision and chain, whether and where it is published, its
lastmod, the links that found it; for a URL the crawl never saw, how the crawled pages
refer to it and what the run's rules say (:mod:`crawler.audit.explainrules`).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urljoin, urlsplit
from xml.sax.saxutils import escape

from crawler.audit.explainrules import RunRules
from crawler.core import decisions as d
from crawler.core.items import FOUND_REFRESH
from crawler.core.paths import LEDGER, LEDGER_FAILED
from crawler.core.publicurl import BaseUrlError, PublicUrls
from crawler.core.urls import host_port, normalize_url, url_key
from crawler.ledger.ledger import LedgerError, LedgerReader

__all__ = ["SCHEMA_ID", "ExplainError", "explain"]

#: The ``schema`` of the JSON answer.
SCHEMA_ID: Final = "sitemap-crawler/explain/1"

#: Decisions whose target is where the URL "ends".
_HOPS: Final = frozenset({d.REDIRECT, d.CANONICAL, d.DUPLICATE})
#: What a page embeds (the ledger's ``unfollowed`` kinds besides nofollow), in words.
_EMBEDDED: Final = {"image": "an image", "stylesheet": "a stylesheet", "script": "a script"}
#: The longest chain or referrer trail followed (a ledger holds no longer one).
_MAX_STEPS: Final = 10_000

_LASTMOD_SOURCES: Final = {
    "header": "the Last-Modified header",
    "page": "the page's metadata (article:modified_time, og:updated_time, dateModified"
    " in JSON-LD or microdata, or a publication date)",
    "content": "a change of the page's main content, detected by a crawl",
}


def _declared(page_dates: str | None, used: str | None) -> list[dict[str, Any]]:
    """The dates the page declared (``page_dates``), each ``used``, ``not needed`` (an
    earlier one was used) or why it was ignored."""
    try:
        rows = json.loads(page_dates) if page_dates else []
    except ValueError:
        return []
    out, taken = [], False
    for where, value, why in rows:
        if why is None and not taken and where == used:
            verdict, taken = "used", True
        else:
            verdict = why or "not needed: an earlier declaration gave the date"
        out.append({"where": where, "value": value, "verdict": verdict})
    return out


class ExplainError(Exception):
    """Bad input (no finished crawl, an unreadable ledger, no URL): one line, exit 2."""


def explain(state: Path, text: str) -> dict[str, Any]:
    """The answer for *text* (a URL as pasted) from the ledger in *state*."""
    with open_ledger(state) as ledger:
        return _Explainer(ledger).explain(text)


def open_ledger(state: Path) -> LedgerReader:
    """The last finished crawl's ledger in *state*, read-only (a running crawl is not disturbed)."""
    path = state / LEDGER
    if not state.is_dir():
        raise ExplainError(f"no state directory {state}")
    if not path.is_file():
        failed = " (the last run failed: see ledger.failed.sqlite)"
        more = failed if (state / LEDGER_FAILED).is_file() else ""
        raise ExplainError(f"no finished crawl in {state}: {path} is missing{more}")
    try:
        return LedgerReader.open(path, immutable=True)
    except LedgerError as e:
        raise ExplainError(str(e)) from None


class _Explainer:
    def __init__(self, ledger: LedgerReader) -> None:
        self.ledger = ledger
        start = ledger.get_meta("start_url")
        if not isinstance(start, str):
            raise ExplainError("the ledger has no start URL: not a ledger of this tool")
        self.start: str = start
        base = ledger.get_meta("settings_base_url")
        try:
            self.public = PublicUrls.create(start, base if isinstance(base, str) else None)
        except BaseUrlError:
            self.public = PublicUrls.create(start, None)
        self.scope: dict[str, Any] = ledger.get_meta("scope") or {}
        self.outcome: dict[str, Any] = ledger.get_meta("outcome") or {}
        self.run_started: str | None = ledger.get_meta("run_started")
        self.rules = RunRules(ledger, start, self.public)

    def _absolute(self, text: str) -> str:
        raw = text.strip()
        if not raw:
            raise ExplainError("no URL given")
        if "://" in raw:
            return raw
        if raw.startswith(("/", "?")):
            return urljoin(self.start, raw)  # a path of the site
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", raw) and not re.match(r"[^:/]+:\d", raw):
            return raw  # mailto:, javascript:, ... (refused below)
        return f"{urlsplit(self.start).scheme}://{raw}"  # a host without a scheme

    def resolve(self, text: str) -> tuple[str, dict[str, Any] | None, str | None]:
        """(the URL in crawl space, its row or None, how it was matched)."""
        raw = self._absolute(text)
        normal = normalize_url(
            raw,
            strip_params=bool(self.scope.get("strip_params", True)),
            extra_strip=tuple(self.scope.get("strip_extra") or ()),
        )
        if normal is None or host_port(normal) is None:
            raise ExplainError(f"not an http(s) URL: {text.strip()!r}")
        crawl = self.public.to_crawl(normal)
        for url, how in ((normal, "url"), (crawl, "public address")):
            if (row := self.ledger.row(url_key(url))) is not None:
                return url, row, how
        for form in dict.fromkeys((raw.partition("#")[0], raw, normal)):
            key = self.ledger.alias(form)
            if key is not None and (row := self.ledger.row(key)) is not None:
                return str(row["url"]), row, "alias"
        if (row := self.ledger.by_loc(normal)) is not None:
            return str(row["url"]), row, "public address"
        return crawl, None, None

    def explain(self, text: str) -> dict[str, Any]:
        url, row, matched = self.resolve(text)
        answer: dict[str, Any] = {
            "schema": SCHEMA_ID,
            "query": text.strip(),
            "url": url,
            "known": row is not None,
            "start_url": self.start,
            "run": {
                "started": self.run_started,
                "outcome": self.outcome.get("outcome"),
                "message": self.outcome.get("message"),
            },
        }
        if row is None:
            return answer | self._unseen(url)
        reason, robots_rule = row["reason"], None
        if row["decision"] == d.ROBOTS and (robots_rule := self.rules.robots_rule(str(row["url"]))):
            reason = f"{reason}: {robots_rule['says']}"
        return answer | {
            "matched_by": matched,
            "key": row["key"],
            "decision": row["decision"],
            "reason": reason,
            "robots_rule": robots_rule,
            "target": row["target"],
            "chain": (chain := self._chain(row)),
            "status": row["status"],
            "content_type": row["content_type"],
            "robots": row.get("robots"),
            "depth": row["depth"],
            "sitemap": self._sitemap(row, chain),
            "lastmod": self._lastmod(row),
            "first_seen": _iso(row["first_seen"]),
            "last_seen": self.run_started or _iso(row["updated"]),
            "revisit": _revisit(row),
            "found_via": (found := self._found_via(row)),
            "referrer": row["referrer"],
            # The same trail as plain URLs, from the start URL to the page that led here.
            "referrers": [step["url"] for step in found["steps"][:-1]],
            "aliases": self.ledger.aliases_of(row["key"]),
            "warnings": json.loads(row["warnings"]) if row["warnings"] else [],
            # The run's rules put to it again, and its page to the judge's verdicts
            # (crawler.audit.explainrules).
            "rules": self.rules.judge(str(row["url"]), row),
            "listing": self.rules.listing(str(row["url"]), row),
        }

    def _step(self, row: dict[str, Any]) -> dict[str, Any]:
        return {name: row.get(name) for name in ("url", "decision", "reason", "status", "loc")}

    def _chain(self, row: dict[str, Any]) -> dict[str, Any]:
        """From the URL through its redirect, canonical and duplicate targets to where it ends."""
        steps, seen, current, loop = [self._step(row)], {row["key"]}, row, False
        while current["decision"] in _HOPS and current["target"] and len(steps) < _MAX_STEPS:
            following = self.ledger.row(current["target_key"])
            if following is None:
                # A canonical is kept as its published address: back into crawl space.
                following = self.ledger.row(url_key(self.public.to_crawl(current["target"])))
            if following is None:
                why = "not in the ledger (never discovered as a URL of the crawl)"
                steps.append(self._step({"url": current["target"], "reason": why}))
                break
            steps.append(self._step(following))
            if loop := following["key"] in seen:
                break
            seen.add(following["key"])
            current = following
        url, decision = steps[-1]["url"], steps[-1]["decision"]
        return {"steps": steps, "ends_at": url, "end_decision": decision, "loop": loop}

    def _sitemap(self, row: dict[str, Any], chain: dict[str, Any]) -> dict[str, Any]:
        """Whether the page is in the published set, why, and where."""
        decision = row["decision"]
        out: dict[str, Any] = {"listed": decision == d.LISTED, "in_set": False, "loc": row["loc"]}
        if decision != d.LISTED:
            why = str(decision)  # the decision line says why, in the rule's words
            if decision in _HOPS and len(chain["steps"]) > 1:
                end, ends = chain["ends_at"], chain["end_decision"]
                if chain["loop"]:
                    why += f"; the chain loops ({end} comes back), so none of it is listed"
                elif ends == d.LISTED:
                    why += f"; the set lists where it ends: {chain['steps'][-1]['loc'] or end}"
                else:
                    why += f"; it ends at {end}, which is not listed either ({ends or 'unknown'})"
            return {**out, "why": f"not listed: {why}"}
        outcome = self.outcome.get("outcome")
        published = self.ledger.get_meta("published")
        if outcome != "published":
            message = self.outcome.get("message") or outcome or "no outcome recorded"
            return {**out, "why": f"listed, but the run published nothing: {message}"}
        if not isinstance(published, dict):
            why = "listed and published (this ledger does not record the files)"
            return {**out, "in_set": True, "why": why, **self._in_file(None, None, row["section"])}
        why = "listed: " + "; ".join(rule.passes for rule in self.rules.book.rules)
        out.update(in_set=True, why=why, **self._file_of(row, published))
        if row.get("news"):
            news_files = [f for f in published.get("files", []) if f.get("section") == "news"]
            news = self._find_in(news_files, published, row["loc"], guessed=False)
            if news:
                out["news_file"] = news["file"]
        return out

    def _file_of(self, row: dict[str, Any], published: dict[str, Any]) -> dict[str, Any]:
        files: list[dict[str, Any]] = list(published.get("files") or [])
        section, guess, before = row["section"], None, 0
        rank = self.ledger.rank(section, row["loc"])
        for f in files:
            if f.get("section") != section:
                continue
            before += int(f.get("urls") or 0)
            if rank < before:
                guess = f
                break
        # The file on disk has the last word (and the line): the guess first.
        ordered = ([guess] if guess else []) + [
            f for f in files if f is not guess and f.get("section") != "news"
        ]
        found = self._find_in(ordered, published, row["loc"], guessed=guess is not None)
        if found or guess is None:
            return found or self._in_file(None, None, section)
        return self._in_file(guess["name"], None, section, on_disk=False)

    def _in_file(
        self, name: str | None, line: int | None, section: str | None, **more: Any
    ) -> dict[str, Any]:
        url = self.public.sitemap_loc(name) if name else None
        return {"file": name, "file_url": url, "line": line, "section": section, **more}

    def _find_in(
        self, files: list[dict[str, Any]], published: dict[str, Any], loc: str, guessed: bool
    ) -> dict[str, Any] | None:
        """The first of *files* (still on disk) holding *loc*, with the line; *guessed*:
        stop when the first is gone (the guess of *loc*'s file stands, unconfirmed)."""
        directory = Path(str(published.get("index") or "")).parent
        for f in files:
            path = directory / f["name"]
            line = _line_of(path, loc)
            if line is not None:
                return self._in_file(f["name"], line, f.get("section"), on_disk=True)
            if guessed and not path.is_file():
                return None  # an older set's file
        return None

    def _lastmod(self, row: dict[str, Any]) -> dict[str, Any]:
        source, run = row["lastmod_source"], None
        if row["lastmod"] is None:
            why = (
                "none: the page gave no usable date and no change of its content has been "
                "seen yet (a first crawl publishes none from content)"
                if row["decision"] == d.LISTED
                else "none: only listed pages get one"
            )
        else:
            why = _LASTMOD_SOURCES.get(str(source), str(source))
            if source == "header" and row["last_modified"]:
                why += f" ({row['last_modified']})"
            if source == "page" and row.get("lastmod_from"):
                why = f"the page's {row['lastmod_from']}"
            moved = row["lastmod_moved_at"] or row["listed_at"] or _iso(row["first_seen"])
            run = row["changed_at"] if source == "content" else moved
        return {
            "value": row["lastmod"],
            "source": source,
            "from": why,
            "run": run,
            "last_modified": row["last_modified"],
            "changed_at": row["changed_at"],
            "declared_by": row.get("lastmod_from"),
            "declared": _declared(row.get("page_dates"), row.get("lastmod_from")),
        }

    def _found_via(self, row: dict[str, Any]) -> dict[str, Any]:
        """The trail from the start URL: each page with how the next was found on it."""
        trail, seen, broken = [row], {row["key"]}, False
        while trail[-1]["referrer"] and len(trail) < _MAX_STEPS:
            referrer = self.ledger.row(url_key(trail[-1]["referrer"]))
            if referrer is None or referrer["key"] in seen:
                broken = True
                break
            seen.add(referrer["key"])
            trail.append(referrer)
        if broken or url_key(str(trail[-1]["url"])) != url_key(self.start):
            path = self._shortest_path(row["key"])
            if path is not None:
                return {"steps": path, "from": "shortest path over the stored links"}
            if broken:
                return {"steps": [], "from": "the trail of referrers is broken"}
        trail.reverse()
        steps = []
        for n, page in enumerate(trail):
            via = None if n == 0 else self._how(trail[n - 1], page)
            steps.append({"url": page["url"], "via": via, "decision": page["decision"]})
        return {"steps": steps, "from": "referrers"}

    def _how(self, page: dict[str, Any], found: dict[str, Any]) -> str:
        """How *found* was found on *page*: a link, or *page*'s redirect, refresh or
        canonical (a canonical is kept as its public address: mapped back)."""
        target = page["target"]
        if (
            page["decision"] in _HOPS
            and target
            and found["key"] in (page["target_key"], url_key(self.public.to_crawl(target)))
        ):
            # How the target was first found, not the page's reason read back.
            refresh = found.get("found_by") == FOUND_REFRESH
            return "meta refresh" if refresh else str(page["decision"])
        return "link"

    def _shortest_path(self, goal: str) -> list[dict[str, Any]] | None:
        """A shortest path from the start URL to the row *goal* over the stored links and
        targets, breadth first. Links are matched to rows by their stored normalised URL,
        not keyed again (w3lib's canonicalisation is the cost of a search)."""
        keys = self.ledger.keys_by_url()
        start = url_key(self.start)
        parents: dict[str, tuple[str, str] | None] = {start: None}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            if node == goal:
                break
            page = self.ledger.row(node)
            if page is None:
                continue
            following = [(keys.get(link), "link") for link in page["links"]]
            if page["target"]:
                target = self.public.to_crawl(page["target"])
                following.append((keys.get(target) or url_key(target), "target"))
            for nxt, how in following:
                if nxt is not None and nxt not in parents:
                    parents[nxt] = (node, how)
                    queue.append(nxt)
        if goal not in parents:
            return None
        path: list[dict[str, Any]] = []
        at: str | None = goal
        while at is not None:
            parent = parents[at]
            row = self.ledger.row(at)
            via: str | None = None
            if parent is not None:
                # A target hop is named by the decision of the page it leaves.
                left = self.ledger.row(parent[0])
                via = "link" if parent[1] == "link" or left is None else str(left["decision"])
            url, decision = (row["url"], row["decision"]) if row else (at, None)
            path.append({"url": url, "via": via, "decision": decision})
            at = None if parent is None else parent[0]
        path.reverse()
        return path

    def _unseen(self, url: str) -> dict[str, Any]:
        judged = self.rules.judge(url, None)
        referred = self._referred(url)
        if referred and (referred[0]["as"] != "nofollow" or judged["would_fetch"] is not False):
            judged["summary"] = referred[0]["summary"]
        # How crawled pages refer to it without the crawl following it.
        listing = self.rules.listing(url, None)
        return {"decision": None, **judged, "listing": listing, "referred": referred}

    def _referred(self, url: str) -> list[dict[str, Any]]:
        """How the crawled pages refer to *url* without following it (what embeds it
        first, then nofollow links): a page, how many pages, and what it means."""
        found = self.ledger.referring(url)
        out = []
        for kind in [k for k in (*_EMBEDDED, "nofollow") if k in found]:
            seen = found[kind]
            page, pages = seen["page"], seen["pages"]
            others = f" (and {pages - 1} other page{'s' if pages > 2 else ''})" if pages > 1 else ""
            if kind == "nofollow":
                robots = str(seen["robots"] or "")
                how = "rel=nofollow"
                if "nofollow" in robots:
                    how = f"a page whose robots directives say nofollow ({robots})"
                summary = (
                    f"linked from {page}{others} only with nofollow ({how}), which the "
                    "crawl does not follow: no followed link leads to it"
                )
            else:
                summary = (
                    f"{_EMBEDDED[kind]} embedded on {page}{others}: not a page, so the crawl "
                    "does not follow it and never lists it"
                )
            out.append({"as": kind, "page": page, "pages": pages, "summary": summary})
        return out


def _revisit(row: dict[str, Any]) -> dict[str, Any] | None:
    """The URL's revisit schedule (crawler.ledger.schedule): when it was last verified
    (fetched and judged), its interval, when it is next due, and how often it was
    checked and found changed; None for a URL with none (a failure is asked again
    on the next run; a ledger before the schedule)."""
    if row.get("due_at") is None:
        return None
    return {
        "verified": _iso(row["verified_at"]),
        "interval_days": row["revisit_days"],
        "due": _iso(row["due_at"]),
        "checks": row.get("checks") or 0,
        "changes": row.get("changes") or 0,
    }


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(float(timestamp), UTC).isoformat(timespec="seconds")


def _line_of(path: Path, loc: str) -> int | None:
    """The line of *path* (a sitemap file, gzipped or not, XML or text) that lists
    *loc*; None when the file is gone or does not list it."""
    xml, text = f"<loc>{escape(loc)}</loc>".encode(), loc.encode()
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            for number, line in enumerate(f, 1):
                if xml in line or line.rstrip(b"\r\n") == text:
                    return number
    except (OSError, EOFError):
        return None
    return None
