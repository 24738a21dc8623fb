"""sitemap-crawler: crawl a site politely with Scrapy and publish correct sitemaps.

A Scrapy project's layout: ``crawler`` holds the spider, its parts and the command
line, ``pipelines`` the item pipelines, ``settings`` the Scrapy settings module. A
checkout keeps the three beside ``scrapy.cfg``; installed, ``pipelines`` and
``settings`` are ``crawler.pipelines`` and ``crawler.settings``, so that the package
claims no generic top-level name, and the names ``settings`` and ``pipelines`` that
configurations use (``ITEM_PIPELINES`` paths, ``setmodule("settings")``) find them
only where no other module has the name (docs/architecture.md, "Installed names").
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

__version__ = "0.1.0"

#: The project's packages that a checkout has at the top level.
PROJECT_PACKAGES = ("settings", "pipelines")


class _InstalledNames(MetaPathFinder, Loader):
    """Finds ``settings``, ``pipelines`` and ``pipelines.*`` as the installed
    ``crawler.settings`` and ``crawler.pipelines``, one module under both names: only
    when no other finder has a top-level module of that name (another project's
    ``settings`` wins), and a submodule only under this package's own parent."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top not in PROJECT_PACKAGES:
            return None
        if top == fullname:
            others = (f for f in sys.meta_path if f is not self and hasattr(f, "find_spec"))
            if any(f.find_spec(fullname, None, None) is not None for f in others):
                return None
            if importlib.util.find_spec(f"{__name__}.{fullname}") is None:
                return None
        else:
            parent = sys.modules.get(top)
            if parent is None or parent.__name__ != f"{__name__}.{top}":
                return None
        return ModuleSpec(fullname, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return importlib.import_module(f"{__name__}.{spec.name}")

    def exec_module(self, module: ModuleType) -> None:
        pass  # run once, under its installed name


if not any(isinstance(finder, _InstalledNames) for finder in sys.meta_path):
    sys.meta_path.insert(0, _InstalledNames())
