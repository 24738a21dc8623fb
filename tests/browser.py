"""The real Chromium the browser tests drive: Debian's ``chromium-headless-shell``
package (else its ``chromium``: the crawl's own choice,
:data:`crawler.fetch.rendering.BROWSERS`) through the ``playwright`` package's
``executable_path`` (no browser is downloaded).

``.ci/run`` installs Debian's chromium-headless-shell and chromium when they are
missing; ``TEST_CHROMIUM`` names another binary. A test that needs the browser
takes the ``chromium`` fixture (tests/conftest.py): without a browser it fails with one line saying
what to install, rather than being skipped, so that CI cannot pass without it.
"""

from __future__ import annotations

import os
import shutil

from crawler.fetch.rendering import BROWSERS

#: The switches a headless Chromium needs on a machine with no network and no screen,
#: run as root: without the background-networking ones, Chromium keeps trying to reach
#: Google's hosts.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str | None:
    """The Chromium binary to drive, or None when there is none."""
    named = os.environ.get("TEST_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    for name in (*BROWSERS, "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None
