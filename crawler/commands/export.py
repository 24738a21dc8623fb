"""``sitemap-crawler export``: the ledger of the last finished crawl as JSON lines, for
people and tools that read no SQLite (docs/ledger.md, "Exporting"). A crawl writes no
such copy: ``ledger.sqlite`` is what is queried, and a copy would be rewritten nightly."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from crawler.commands.declarations import EXPORT
from crawler.commands.explain import state_of
from crawler.commands.options import EXIT_OK, EXIT_USAGE, error
from crawler.core.paths import LEDGER_JSONL

if TYPE_CHECKING:
    from crawler.ledger.ledger import LedgerReader

NAME = "export"
HELP = "write the ledger of the last crawl as JSON lines (ledger.jsonl)"
DESCRIPTION = (
    "Write every row of the ledger of the last finished crawl in the state directory as "
    "one JSON object a line, keys sorted, warnings and the lists (links, unfollowed) as "
    "JSON lists: by default to ledger.jsonl in the state directory."
)
EPILOG = (
    "Exit status: 0 written; 2 usage error (no finished crawl in --state, an unreadable "
    "ledger, a file that cannot be written)."
)

OPTIONS = EXPORT


def write_rows(ledger: LedgerReader, out: TextIO) -> None:
    """Every row of *ledger* as a JSON line on *out*."""
    for row in ledger.rows():
        if row["warnings"]:
            row["warnings"] = json.loads(row["warnings"])
        out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def run(parser: argparse.ArgumentParser, args: argparse.Namespace, base: object = None) -> int:
    """``sitemap-crawler export``: write the rows, return the exit status."""
    from crawler.audit.explain import ExplainError, open_ledger

    state = state_of(args)
    path = Path(args.file or state / LEDGER_JSONL)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open_ledger(state) as ledger:
            if args.file == "-":
                write_rows(ledger, sys.stdout)
                return EXIT_OK
            with tmp.open("w", encoding="utf-8") as f:
                write_rows(ledger, f)
            tmp.replace(path)
    except (ExplainError, OSError) as e:
        error(f"error: {e}")
        return EXIT_USAGE
    return EXIT_OK
