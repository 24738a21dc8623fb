"""The cores this process may use: its CPU affinity where the system keeps one (a
container or ``taskset`` may allow fewer than the machine has), else the machine's."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """How many cores this process may run on (at least 1)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
