"""The commands of ``sitemap-crawler``, one module each holding ``NAME``, ``HELP``,
``DESCRIPTION``, ``EPILOG``, ``OPTIONS`` (its options, declared in
:mod:`~crawler.commands.declarations`) and ``run(parser, args)``, and what they share
(:mod:`~crawler.commands.options`). Also Scrapy's ``COMMANDS_MODULE``:
``audit``, ``worker`` and ``explain`` define a ``Command`` for ``scrapy audit`` etc.;
``crawl`` none, so that ``scrapy crawl site -a url=...`` stays Scrapy's own.
"""
