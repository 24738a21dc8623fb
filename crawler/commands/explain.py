"""``sitemap-crawler explain URL`` (or ``scrapy explain``): why is this URL (not) in the
sitemap? The answer of :mod:`crawler.audit.explain`, as a short block or ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.commands.declarations import EXPLAIN
from crawler.commands.options import EXIT_OK, EXIT_USAGE, error, print_stdout, scrapy_command
from crawler.core.defaults import setting_default
from crawler.core.paths import CrawlPaths

if TYPE_CHECKING:
    from scrapy.settings import Settings

NAME = "explain"
HELP = "why a URL is, or is not, in the published sitemap"
DESCRIPTION = (
    "Answer for one URL from the ledger of the last crawl in the state directory: its "
    "decision and reason, the redirect or canonical chain to where it ends, the status, "
    "type and robots directives seen, whether and in which file it is published, its "
    "lastmod and where that came from, first and last seen, and the links from the start "
    "URL that found it. For a URL the crawl never saw: whether its rules would fetch it."
)
EPILOG = (
    "Exit status: 0 the crawl knows the URL; 1 it does not; 2 usage error (no finished "
    "crawl in --state, an unreadable ledger, not a URL)."
)

#: Exit status of a URL the crawl never saw.
EXIT_UNKNOWN = 1


OPTIONS = EXPLAIN


def state_of(args: argparse.Namespace) -> Path:
    """The state directory ``--state`` or ``--out`` names, else that of ``crawl`` with
    its default ``--out`` (as a name: relative to here)."""
    if args.state is None and args.out is not None:
        return CrawlPaths.create(args.out).state
    return Path(args.state or CrawlPaths.create(setting_default("SITEMAP_OUT_DIR")).state.name)


def execute(args: argparse.Namespace) -> dict[str, Any]:
    """The answer for ``args.url``; raises ExplainError for bad input."""
    from crawler.audit.explain import ExplainError, explain

    if not args.url:
        raise ExplainError("a URL is required")
    return explain(state_of(args), args.url)


def run(
    parser: argparse.ArgumentParser, args: argparse.Namespace, base: Settings | None = None
) -> int:
    """``sitemap-crawler explain``: print the answer, return the exit status."""
    from crawler.audit.explain import ExplainError

    try:
        answer = execute(args)
    except ExplainError as e:
        error(f"error: {e}")
        return EXIT_USAGE
    text = json.dumps(answer, ensure_ascii=False, indent=2) if args.json else format_answer(answer)
    print_stdout(text)
    return EXIT_OK if answer["known"] else EXIT_UNKNOWN


def _field(name: str, value: str, more: list[str] | None = None) -> list[str]:
    return [f"{name:<11}{value}", *(f"{'':<11}{line}" for line in more or ())]


def format_answer(answer: dict[str, Any]) -> str:
    """The answer as a short block, like ``git show``: one fact a line."""
    lines = [f"url        {answer['url']}"]
    if answer["query"] != answer["url"]:
        lines += _field("asked", answer["query"])
    if not answer["known"]:
        lines += _field("decision", "never seen by the crawl")
        lines += _field("verdict", answer["summary"])
        for ref in answer.get("referred") or ():
            pages = f"{ref['pages']} page{'s' if ref['pages'] != 1 else ''}"
            lines += _field("referred", f"{ref['as']} on {ref['page']} ({pages})")
        for check in [*answer["checks"], *answer["listing"]["checks"]]:
            mark = {True: "ok", False: "no", None: "?"}[check["ok"]]
            decision = f" -> {check['decision']}" if check["decision"] else ""
            lines += _field("", f"{mark:<3}{check['rule']}: {check['detail']}{decision}")
        lines += _field("run", _run(answer))
        return "\n".join(lines)
    if answer["matched_by"] != "url":
        lines += _field("matched", f"by its {answer['matched_by']}")
    reason = f": {answer['reason']}" if answer["reason"] else ""
    lines += _field("decision", f"{answer['decision']}{reason}")
    chain = answer["chain"]
    if len(chain["steps"]) > 1:
        rest = [f"-> {_step(step)}" for step in chain["steps"][1:]]
        if chain["loop"]:
            rest.append("(a loop: it comes back)")
        lines += _field("chain", _step(chain["steps"][0]), rest)
    seen = [str(answer["status"]) if answer["status"] is not None else "not fetched"]
    if answer["content_type"]:
        seen.append(answer["content_type"])
    if answer["depth"] is not None:
        seen.append(f"depth {answer['depth']}")
    lines += _field("status", ", ".join(seen))
    lines += _field("robots", answer["robots"] or "no robots directive")
    lines += _field("sitemap", _sitemap(answer["sitemap"]))
    lastmod = answer["lastmod"]
    if lastmod["value"]:
        run = f", set by the run of {lastmod['run']}" if lastmod["run"] else ""
        lines += _field("lastmod", f"{lastmod['value']} from {lastmod['from']}{run}")
    else:
        lines += _field("lastmod", lastmod["from"])
    for said in lastmod.get("declared") or []:
        lines += _field("", f"  declared: {said['where']} {said['value']}: {said['verdict']}")
    lines += _field("seen", f"first {answer['first_seen']}, last {answer['last_seen']}")
    if revisit := answer.get("revisit"):
        lines += _field(
            "revisit",
            f"last verified {revisit['verified']}, every {revisit['interval_days']:g} days,"
            f" next due {revisit['due']} ({revisit['changes']} changes in"
            f" {revisit['checks']} checks)",
        )
    found = answer["found_via"]
    steps = found["steps"]
    if steps:
        start = "  (start URL)" if steps[0]["url"] == answer["start_url"] else ""
        first = steps[0]["url"] + start
        rest = [f"-> {step['via']}: {step['url']}" for step in steps[1:]]
        if found["from"] != "referrers":
            rest.append(f"({found['from']})")
        lines += _field("found via", first, rest)
    else:
        lines += _field("found via", found["from"])
    for name in ("aliases", "warnings"):
        if answer[name]:
            lines += _field(name, answer[name][0], answer[name][1:])
    lines += _field("run", _run(answer))
    return "\n".join(lines)


def _step(step: dict[str, Any]) -> str:
    decision = step["decision"] or "unknown"
    reason = f" ({step['reason']})" if step["reason"] else ""
    return f"{step['url']}  {decision}{reason}"


def _sitemap(sitemap: dict[str, Any]) -> str:
    if not sitemap["in_set"]:
        return f"not in the published set: {sitemap['why'].removeprefix('not listed: ')}"
    where = sitemap.get("file") or "a file of the set"
    line = f", line {sitemap['line']}" if sitemap.get("line") else ""
    section = f", section {sitemap['section']}" if sitemap.get("section") else ""
    text = f"published as {sitemap['loc']} in {where}{line}{section}"
    if sitemap.get("on_disk") is False:
        text += " (the file is no longer on disk)"
    if sitemap.get("news_file"):
        text += f", and in the news sitemap {sitemap['news_file']}"
    return text


def _run(answer: dict[str, Any]) -> str:
    run = answer["run"]
    return f"{run['outcome'] or 'unknown'}, started {run['started'] or 'unknown'}"


Command = scrapy_command(sys.modules[__name__])
