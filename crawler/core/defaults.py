"""The settings' defaults, for what is built before or without Scrapy's settings:
help texts, parser defaults, function defaults. Each default is written once, in
settings/__init__.py (the project's settings module), and read from there.
"""

from __future__ import annotations

from typing import Any


def setting_default(name: str) -> Any:
    """The default of the setting *name* (read when asked: a test that changes it in
    the settings module sees help texts follow)."""
    import settings as project

    return getattr(project, name)
