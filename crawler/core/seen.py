"""The crawl's seen-set: a compact set of URL keys.

A million keys take about 150 MB as strings, 70 MB as 64-bit fingerprints (BLAKE2b of
the key) in a set of ints, 25 MB here. Two keys share a fingerprint with probability
about n**2 / 2**65 (3e-8 for a million URLs); the fingerprint is stable across
processes, so the set can be pickled into the JOBDIR state. The newest fingerprints
(up to *spill*, 262,144 by default) are in a set; past that the set is sorted into a
run (an array of unsigned 64-bit integers) and emptied. Runs of equal length are
merged (log2(n / spill) + 1 at most) and searched by bisection. A discarded
fingerprint that is in a run is remembered as gone until it is added again.
"""

from __future__ import annotations

import hashlib
import heapq
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

DEFAULT_SPILL = 1 << 18


def fingerprint(key: str) -> int:
    """The 64-bit fingerprint of a URL key (crawler.core.urls.url_key)."""
    return int.from_bytes(
        hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
    )


class SeenKeys:
    """A set of URL keys, stored as fingerprints (the ``*_fp`` methods take those)."""

    __slots__ = ("_fps", "_runs", "_gone", "_spill")

    def __init__(self, keys: Iterable[str] = (), spill: int = DEFAULT_SPILL) -> None:
        self._fps: set[int] = set()
        self._runs: list[array[int]] = []  # sorted, longest first
        self._gone: set[int] = set()  # discarded, but still in a run
        self._spill = spill
        for key in keys:
            self.add(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.has_fp(fingerprint(key))

    def __len__(self) -> int:
        return len(self._fps) + sum(map(len, self._runs)) - len(self._gone)

    def add(self, key: str) -> None:
        self.add_fp(fingerprint(key))

    def discard(self, key: str) -> None:
        self.discard_fp(fingerprint(key))

    def has_fp(self, fp: int) -> bool:
        return fp in self._fps or (bool(self._runs) and self._in_runs(fp) and fp not in self._gone)

    def add_fp(self, fp: int) -> None:
        if fp in self._fps:
            return
        if self._runs and self._in_runs(fp):
            self._gone.discard(fp)
            return
        self._fps.add(fp)
        if len(self._fps) >= self._spill:
            self._spill_run()

    def discard_fp(self, fp: int) -> None:
        if fp in self._fps:
            self._fps.remove(fp)
        elif self._runs and self._in_runs(fp):
            self._gone.add(fp)

    def _in_runs(self, fp: int) -> bool:
        return any(run[i] == fp for run in self._runs if (i := bisect_left(run, fp)) < len(run))

    def _spill_run(self) -> None:
        run = array("Q", sorted(self._fps))
        self._fps = set()
        # Merged one value at a time: no list or ints of the whole run at once.
        while self._runs and len(self._runs[-1]) <= len(run):
            run = array("Q", heapq.merge(self._runs.pop(), run))
        self._runs.append(run)

    def __getstate__(self) -> tuple[set[int], list[array[int]], set[int], int]:
        return self._fps, self._runs, self._gone, self._spill

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, set):  # a JOBDIR written before the runs
            state = (state, [], set(), DEFAULT_SPILL)
        self._fps, self._runs, self._gone, self._spill = state
