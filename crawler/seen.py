"""The crawl's seen-set: a compact set of URL keys.

A crawl keeps every URL key it has met, to give each URL one decision. Kept as
strings, a million keys take about 150 MB; kept as 64-bit fingerprints (BLAKE2b of
the key) in a set of ints, about 60 MB. Two distinct keys share a fingerprint with
probability about n**2 / 2**65: 3e-8 for a million URLs, 3e-6 for ten million.
The fingerprint is stable across processes (unlike ``hash()``), so the set can be
pickled into the JOBDIR state and resumed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def fingerprint(key: str) -> int:
    """The 64-bit fingerprint of a URL key (crawler.urls.url_key)."""
    return int.from_bytes(
        hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
    )


class SeenKeys:
    """A set of URL keys, stored as fingerprints. ``in``, ``add`` and ``discard`` take
    keys; the ``*_fp`` forms take fingerprints a caller has already computed."""

    __slots__ = ("_fps",)

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._fps: set[int] = {fingerprint(k) for k in keys}

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and fingerprint(key) in self._fps

    def __len__(self) -> int:
        return len(self._fps)

    def add(self, key: str) -> None:
        self._fps.add(fingerprint(key))

    def discard(self, key: str) -> None:
        self._fps.discard(fingerprint(key))

    def has_fp(self, fp: int) -> bool:
        return fp in self._fps

    def __getstate__(self) -> set[int]:
        return self._fps

    def __setstate__(self, state: set[int]) -> None:
        self._fps = state
