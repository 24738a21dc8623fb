"""The ``sitemap-crawler`` command line: it only dispatches to the command modules of
:mod:`crawler.commands`. Exit statuses: each command's ``EPILOG`` and docs/reference.md.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

# What the imports make (76,000 objects) lives as long as the process: made with the GC
# off, then frozen, never walked (bench/README.md, "Fixed costs of a run").
gc.disable()
try:
    from crawler import __version__
    from crawler.commands import audit, crawl, explain, export, worker
    from crawler.commands.declarations import add_options
    from crawler.commands.options import EXIT_USAGE, PROG, Parser
finally:  # on again, even after an import that failed
    gc.freeze()
    gc.enable()

#: The commands, in the order ``--help`` lists them.
COMMANDS: tuple[ModuleType, ...] = (crawl, worker, audit, explain, export)


def build_parser() -> Parser:
    """The parser of ``sitemap-crawler``, with one sub-parser per command."""
    parser = Parser(
        prog=PROG,
        description="Crawl a website politely and publish correct, rotated, gzipped "
        "XML sitemaps plus a sitemap index; audit the sitemaps a site already has.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in COMMANDS:
        command = sub.add_parser(
            module.NAME, help=module.HELP, description=module.DESCRIPTION, epilog=module.EPILOG
        )
        add_options(command, module.OPTIONS)
        command.set_defaults(command_module=module, command_parser=command)
    return parser


def command_parser(name: str) -> Parser:
    """The parser of the command *name* alone, as ``sitemap-crawler NAME`` has it."""
    module = {module.NAME: module for module in COMMANDS}[name]
    parser = Parser(prog=f"{PROG} {name}", description=module.DESCRIPTION, epilog=module.EPILOG)
    add_options(parser, module.OPTIONS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The exit status of the command *argv*; without *argv* (the program), the exit."""
    parser = build_parser()
    args = parser.parse_args(argv)
    module = getattr(args, "command_module", None)
    if module is None:
        parser.print_help()
    code = EXIT_USAGE if module is None else int(module.run(args.command_parser, args))
    return code if argv is not None else exit_now(code)


def exit_now(code: int) -> NoReturn:
    """Exit as the interpreter would (threads joined, atexit handlers, streams flushed),
    less its teardown of every object (bench/README.md, "Fixed costs of a run"). From the
    main thread only, where the program runs; a normal exit under a profiler or tracer
    (``python -m cProfile``, a debugger, coverage), which writes its results after it."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)
    threading._shutdown()  # type: ignore[attr-defined]  # what an exit does first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed: nothing more to say
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
