"""The commands of ``sitemap-crawler``, one module each, and what they share.

- :mod:`~crawler.commands.crawl`: crawl a site and publish its sitemaps;
- :mod:`~crawler.commands.audit`: compare a site's existing sitemaps with a crawl;
- :mod:`~crawler.commands.worker`: fetch pages for a distributed crawl;
- :mod:`~crawler.commands.explain`: why one URL is, or is not, in the sitemap;
- :mod:`~crawler.commands.options`: exit statuses, one-line errors, the scope and
  politeness options of every crawling command, and the ``--config`` file;
- :mod:`~crawler.commands.process` runs a spider in this process, and
  :mod:`~crawler.commands.distributed` reaches Redis for ``crawl --redis`` and
  ``worker``.

A command module holds ``NAME``, ``HELP``, ``DESCRIPTION``, ``EPILOG``, its
``add_arguments(parser)`` and its ``run(parser, args) -> exit status``;
:mod:`crawler.cli` only dispatches to them. This package is also Scrapy's
``COMMANDS_MODULE``: the ``Command`` classes of ``audit``, ``worker`` and
``explain`` make ``scrapy audit``, ``scrapy worker`` and ``scrapy explain`` work
from the project root, while ``crawl``
defines none, so that ``scrapy crawl site -a url=...`` stays Scrapy's own command.
"""
