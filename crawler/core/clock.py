"""The one clock: every "now" of the product is read here, from the machine's clock.

A test moves it by moving the machine's clock for the process (libfaketime), never by
patching: the crawl, the ledger and the schedule all read this, so they agree
([nightly.md](../../docs/nightly.md#the-clock))."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now() -> datetime:
    """This moment, timezone-aware (UTC)."""
    return datetime.now(UTC)


def timestamp() -> float:
    """This moment, in seconds since the epoch."""
    return time.time()
