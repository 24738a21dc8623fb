"""The ``sitemap-crawler`` command line: it only dispatches to the command modules of
:mod:`crawler.commands` (``crawl``, ``worker``, ``audit``, ``explain``).

Exit status (each command's ``--help`` says which of these it uses):
  0  published; report done and bars passed; the crawl is over; the URL is known
  1  explain: the crawl never saw the URL
  2  usage error (bad option, bad URL, bad config file, unusable directory)
  3  the crawl failed or could not start (nothing published)
  4  refused to publish (too many errors or dropped URLs; --force); the previous set kept
  5  audit: --fail-under or --fail-on broke
  6  the sitemap set could not be written; the previous set is untouched
  7  published, but the IndexNow notification failed
  130 interrupted (Ctrl-C, SIGTERM); nothing was published (--resume continues)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType

from crawler import __version__
from crawler.commands import audit, crawl, explain, worker
from crawler.commands.options import EXIT_USAGE, PROG, Parser

#: The commands, in the order ``--help`` lists them.
COMMANDS: tuple[ModuleType, ...] = (crawl, worker, audit, explain)


def build_parser() -> Parser:
    """The parser of ``sitemap-crawler``, with one sub-parser per command; each
    sub-parser's defaults name its command module (``args.command_module``)."""
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
        module.add_arguments(command)
        command.set_defaults(command_module=module, command_parser=command)
    return parser


def command_parser(name: str) -> Parser:
    """The parser of the command *name* alone, as ``sitemap-crawler NAME`` has it
    (the Python API and the reference's test use it)."""
    for module in COMMANDS:
        if name == module.NAME:
            parser = Parser(
                prog=f"{PROG} {name}", description=module.DESCRIPTION, epilog=module.EPILOG
            )
            module.add_arguments(parser)
            return parser
    raise KeyError(name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module = getattr(args, "command_module", None)
    if module is None:
        parser.print_help()
        return EXIT_USAGE
    code: int = module.run(args.command_parser, args)
    return code


if __name__ == "__main__":
    sys.exit(main())
