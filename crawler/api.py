"""The Python API: one function per command, for other programs (docs/api.md)::

    from crawler import api

    result = api.crawl("https://www.example.com/", out="public", max_pages=10_000)
    audited = api.audit("https://www.example.com/", report="audit/", fail_under=95)

The keyword arguments are the command's long options, checked by its own parser (bad
input raises :class:`UsageError`). Each call runs the command in a child Python process,
since a Twisted reactor runs once per process.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from crawler.commands.options import UsageError

if TYPE_CHECKING:
    from argparse import Namespace

    from crawler.audit.report import AuditReport
    from crawler.commands.audit import AuditOutcome
    from crawler.commands.crawl import CrawlOutcome

__all__ = ["AuditResult", "CrawlResult", "UsageError", "audit", "crawl"]

T = TypeVar("T")


@dataclass(frozen=True)
class CrawlResult:
    """What a crawl did: ``exit_code`` is the command line's exit status; ``outcome``
    the publisher's decision (``published``, ``refused``, ...; None when the crawl never
    started) and ``message`` why; ``summary`` the text the command prints. ``added``,
    ``removed`` and ``lastmod_changes`` count the changes since the last run (their
    lists are in ``report``, the run's ``report.json``); ``stats`` are Scrapy's."""

    exit_code: int
    outcome: str | None
    message: str | None
    summary: str
    out: Path
    state: Path
    pages_fetched: int = 0
    listed: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    added: int | None = None
    removed: int | None = None
    lastmod_changes: int | None = None
    files_written: int = 0
    urls_written: int = 0
    index: Path | None = None
    index_url: str | None = None
    report: Path | None = None
    report_html: Path | None = None
    duration: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def published(self) -> bool:
        return self.outcome == "published"


@dataclass(frozen=True)
class AuditResult:
    """What an audit found: ``coverage`` (percent of the crawl's indexable pages the
    sitemaps list; None when it found none), ``counts`` per class and flag, the files
    ``written`` with ``report=``, ``error`` (why the exit status is not 0) and the whole
    ``audit`` report (None when the audit could not run)."""

    exit_code: int
    error: str | None
    summary: str
    coverage: float | None = None
    counts: dict[str, int] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    audit: AuditReport | None = None


def crawl(url: str | None = None, **options: Any) -> CrawlResult:
    """Crawl *url* and publish its sitemaps, as ``sitemap-crawler crawl`` does."""
    return _in_child("crawl", url, options, CrawlResult)


def audit(url: str | None = None, **options: Any) -> AuditResult:
    """Audit *url*'s existing sitemaps, as ``sitemap-crawler audit`` does."""
    return _in_child("audit", url, options, AuditResult)


def _in_child(command: str, url: str | None, options: dict[str, Any], kind: type[T]) -> T:
    """Run *command* in a child Python (``python -m crawler.api``), the request and
    answer pickled in a private directory. Not ``multiprocessing``: its ``spawn`` would
    import the caller's main module again, its ``fork`` copy the caller's reactor."""
    with tempfile.TemporaryDirectory(prefix="sitemap-crawler-api-") as work:
        request, answer = Path(work, "request.pickle"), Path(work, "answer.pickle")
        request.write_bytes(pickle.dumps((command, url, options)))
        env = dict(os.environ)
        # The child finds this package where the caller did (installed, or a checkout).
        here = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
        child = subprocess.Popen(
            [sys.executable, "-m", "crawler.api", str(request), str(answer)], env=env
        )
        try:
            code = child.wait()
        except KeyboardInterrupt:
            # Stop the crawl as SIGTERM does: it publishes nothing, keeps the last set.
            child.terminate()
            child.wait()
            raise
        if not answer.exists():
            raise RuntimeError(f"the {command} process ended without a result (exit code {code})")
        answered, value = pickle.loads(answer.read_bytes())
    if answered == "usage":
        raise UsageError(value)
    if answered == "error":
        raise RuntimeError(f"{command} failed: {value}")
    assert isinstance(value, kind)
    return value


def _child(request: Path, answer: Path) -> None:
    """In the child process: run the pickled request, pickle ``(kind, value)`` back."""
    command, url, options = pickle.loads(request.read_bytes())
    try:
        reply: tuple[str, object] = ("result", _run(command, url, options))
    except UsageError as e:
        reply = ("usage", str(e))
    except Exception as e:
        reply = ("error", f"{type(e).__name__}: {e}")
    answer.write_bytes(pickle.dumps(reply))


def _run(command: str, url: str | None, options: dict[str, Any]) -> CrawlResult | AuditResult:
    from crawler.cli import command_parser
    from crawler.commands import audit as audit_command
    from crawler.commands import crawl as crawl_command
    from crawler.commands.options import apply_options, load_config

    parser = command_parser(command)
    args = parser.parse_args([])
    args.url = url
    apply_options(parser, args, options, where=f"{command}()")
    load_config(parser, args)
    if command == "crawl":
        return _crawl_result(crawl_command.execute(args), args)
    return _audit_result(audit_command.execute(args))


def _crawl_result(outcome: CrawlOutcome, args: Namespace) -> CrawlResult:
    from crawler.core.decisions import LISTED
    from crawler.core.paths import CrawlPaths

    run, paths = outcome.run, CrawlPaths.create(args.out, args.state)
    result = CrawlResult(
        exit_code=outcome.code,
        outcome=run.outcome if run is not None else None,
        message=outcome.error or (run.message if run is not None else None),
        summary=outcome.summary() or outcome.error or "",
        out=paths.out,
        state=paths.state,
        stats=outcome.stats,
    )
    if run is None or run.summary is None:
        return result
    summary = run.summary
    books, published, lengths = summary.books, summary.published, summary.lengths
    return replace(
        result,
        pages_fetched=summary.crawl.pages_fetched,
        listed=books.listed,
        excluded={k: v for k, v in sorted(books.decisions.items()) if v and k != LISTED},
        added=lengths.get("added"),
        removed=lengths.get("removed"),
        lastmod_changes=lengths.get("lastmod_changes"),
        files_written=published.files_written if published is not None else 0,
        urls_written=published.urls_written if published is not None else 0,
        index=published.index_path if published is not None else None,
        index_url=published.index_url if published is not None else None,
        report=summary.report_path,
        report_html=summary.report_html_path,
        duration=summary.crawl.duration,
    )


def _audit_result(outcome: AuditOutcome) -> AuditResult:
    report = outcome.report
    return AuditResult(
        exit_code=outcome.code,
        error=outcome.error,
        summary=outcome.summary,
        coverage=report.coverage if report is not None else None,
        counts=report.counts if report is not None else {},
        written=list(outcome.written),
        audit=report,
    )


if __name__ == "__main__":
    # Through the module's importable name, so that what is pickled back names
    # crawler.api's classes, not __main__'s.
    from crawler.api import _child as child
    from crawler.cli import exit_now

    child(Path(sys.argv[1]), Path(sys.argv[2]))
    exit_now(0)
