"""A ``sitemap-crawler`` command as a Scrapy command (Scrapy's ``COMMANDS_MODULE``).

``scrapy audit URL`` and ``scrapy worker --redis URL`` run the same code as
``sitemap-crawler audit`` and ``worker``, with Scrapy's own ``-s``, ``-L`` and log
options. :class:`ProjectCommand` adapts a command module (its ``NAME``, ``HELP``,
``DESCRIPTION``, ``add_arguments`` and ``run``); each command module defines a
``Command`` subclass naming itself. It lives outside :mod:`crawler.commands` because
Scrapy takes every command class found in that package for a command.
"""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import ClassVar

from scrapy.commands import ScrapyCommand

from crawler.commands.options import EXIT_USAGE, error, setting


class ProjectCommand(ScrapyCommand):
    """The command of :attr:`module`, run by Scrapy's command line."""

    module: ClassVar[ModuleType]
    requires_project = True
    requires_crawler_process = False  # our commands run their own

    def syntax(self) -> str:
        return "URL [options]" if self.module.NAME != "worker" else "--redis URL [options]"

    def short_desc(self) -> str:
        return str(self.module.HELP)

    def long_desc(self) -> str:
        return str(self.module.DESCRIPTION)

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        self.module.add_arguments(parser, scrapy=True)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        # Scrapy applied -s to self.settings already (the base of the run's settings);
        # they are the command's own -s too, which win over a --config file's.
        opts.settings = [setting(text) for text in opts.set]
        opts.log_level = self.settings.get("LOG_LEVEL")
        if args:
            error(f"error: unrecognized arguments: {' '.join(args)}")
            self.exitcode = EXIT_USAGE
            return
        parser = argparse.ArgumentParser()
        self.module.add_arguments(parser, scrapy=True)
        self.exitcode = self.module.run(parser, opts, self.settings)
