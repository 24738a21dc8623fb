"""The commands of ``sitemap-crawler``, one module each (``crawl``, ``audit``,
``worker``, ``explain``), and what they share (:mod:`~crawler.commands.options`,
:mod:`~crawler.commands.process`, :mod:`~crawler.commands.distributed`).

A command module holds ``NAME``, ``HELP``, ``DESCRIPTION``, ``EPILOG``, its
``add_arguments(parser)`` and its ``run(parser, args) -> exit status``. This package is
also Scrapy's ``COMMANDS_MODULE``: the ``Command`` classes of ``audit``, ``worker`` and
``explain`` make ``scrapy audit`` etc. work from the project root; ``crawl`` defines
none, so that ``scrapy crawl site -a url=...`` stays Scrapy's own command.
"""
