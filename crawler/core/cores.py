"""The cores this process may use: its CPU affinity (``taskset`` may allow fewer), if any."""

import os


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
