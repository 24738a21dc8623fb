"""Undo gzip, safely: found by its magic bytes (never a file name or header), at most
two layers (a ``.xml.gz`` served again with ``Content-Encoding: gzip``), inflated in
bounded steps (``zlib.decompressobj`` with ``max_length``), so a bomb stops at the cap.
"""

from __future__ import annotations

import io
import itertools
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from crawler.sitemaps.model import Problem

__all__ = ["decompress"]

_GZIP_MAGIC = b"\x1f\x8b"
# 16 + MAX_WBITS: a gzip header and trailer, nothing else (not raw zlib).
_GZIP_WBITS = 16 + zlib.MAX_WBITS
# Inflate at most this much per call: what a bomb can cost beyond max_bytes.
_INFLATE_STEP = 64 * 1024
_MAX_GZIP_LAYERS = 2
# Deflate does at most about 1032:1; real sitemaps stay far below (measured at gzip
# -9: 58:1 for 60,000 repetitive <url>s). Over 200:1 at the cap is a bomb (reading
# stops either way; only the code differs).
_BOMB_RATIO = 200


@dataclass(slots=True)
class _GzipState:
    """What one gzip layer saw; filled in while its generator runs."""

    consumed: int = 0
    error: str | None = None  # corrupt
    trailing: bool = False  # bytes after the last member that are no gzip member
    finished: bool = False  # the last member was complete


def _gunzip(source: Iterable[bytes | memoryview], state: _GzipState) -> Iterator[bytes]:
    """Inflate a gzip stream (any number of members) in steps of _INFLATE_STEP. Never
    raises: see :class:`_GzipState` for what went wrong."""
    inflater = zlib.decompressobj(_GZIP_WBITS)
    in_member = True  # inside a member that has produced or consumed something
    first_member = True
    for chunk in source:
        pending: bytes | memoryview = chunk
        while pending:
            if inflater.eof:
                # gzip(1) ignores zero padding after the last member.
                if not bytes(pending).strip(b"\0"):
                    break
                inflater = zlib.decompressobj(_GZIP_WBITS)
                first_member = False
                in_member = False
            while True:
                before = len(pending)
                try:
                    out = inflater.decompress(pending, _INFLATE_STEP)
                except zlib.error as exc:
                    if first_member or in_member:
                        state.error = str(exc)
                    else:
                        state.trailing = True
                    return
                pending = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
                state.consumed += before - len(pending)
                if out:
                    in_member = True
                    yield out
                if inflater.eof:
                    break
                # Input used up and the output step not filled: nothing is
                # left inside zlib. A full step may leave more to drain.
                if not pending and len(out) < _INFLATE_STEP:
                    break
    state.finished = inflater.eof


def _peek(stream: Iterator[bytes], size: int) -> tuple[bytes, Iterator[bytes]]:
    """The first ``size`` bytes of a stream, and the same stream, unconsumed."""
    head: list[bytes] = []
    got = 0
    for piece in stream:
        head.append(piece)
        got += len(piece)
        if got >= size:
            break
    return b"".join(head), itertools.chain(head, stream)


def _gzip_problems(state: _GzipState, layer: str, stopped: bool) -> list[Problem]:
    name = f"{layer} gzip stream".strip()
    if state.error is not None:
        return [Problem("gzip-error", f"the {name} is corrupt: {state.error}")]
    if state.trailing:
        return [Problem("gzip-trailing-data", f"bytes after the end of the {name}")]
    if not stopped and not state.finished:
        return [Problem("gzip-truncated", f"the {name} ends early")]
    return []


def decompress(data: bytes, max_bytes: int) -> tuple[bytes, int, list[Problem]]:
    """The document (at most ``max_bytes``, gzip or not), how many gzip layers were
    removed, and the problems: ``too-large`` (or ``gzip-bomb`` over 200:1),
    ``double-gzip``, ``too-many-gzip-layers``, ``gzip-error``, ``gzip-truncated``,
    ``gzip-trailing-data``. Never raises, nor holds much more than ``max_bytes``."""
    problems: list[Problem] = []
    if not data.startswith(_GZIP_MAGIC):
        if len(data) > max_bytes:
            problems.append(Problem("too-large", f"over {max_bytes:,} bytes; read stopped there"))
            return data[:max_bytes], 0, problems
        return data, 0, problems

    outer = _GzipState()
    view = memoryview(data)
    slices = (view[i : i + _INFLATE_STEP] for i in range(0, len(data), _INFLATE_STEP))
    stream: Iterator[bytes] = _gunzip(slices, outer)
    layers = 1
    inner: _GzipState | None = None
    head, stream = _peek(stream, len(_GZIP_MAGIC))
    if head.startswith(_GZIP_MAGIC):
        # Typically a .xml.gz file served again with Content-Encoding: gzip.
        inner = _GzipState()
        stream = _gunzip(stream, inner)
        layers = 2
        problems.append(Problem("double-gzip", "gzip inside gzip: two layers were removed"))
        head, stream = _peek(stream, len(_GZIP_MAGIC))
        if head.startswith(_GZIP_MAGIC):
            problems.append(
                Problem(
                    "too-many-gzip-layers",
                    f"still gzip after {_MAX_GZIP_LAYERS} layers; not unpacked further",
                )
            )

    buffer = io.BytesIO()
    capped = False
    for piece in stream:
        room = max_bytes - buffer.tell()
        buffer.write(piece[:room])  # the piece itself when it fits: no copy
        if len(piece) > room:
            capped = True
            break

    if capped:
        ratio = max_bytes / max(outer.consumed, 1)
        problems.append(
            Problem(
                "gzip-bomb",
                f"{outer.consumed:,} compressed bytes inflate to over {max_bytes:,}"
                f" (over {ratio:,.0f}:1); read stopped there",
            )
            if ratio > _BOMB_RATIO
            else Problem("too-large", f"over {max_bytes:,} bytes uncompressed; read stopped there")
        )
    problems.extend(_gzip_problems(outer, "outer" if inner else "", capped))
    if inner is not None:
        problems.extend(_gzip_problems(inner, "inner", capped))
    # getvalue() hands over BytesIO's own buffer (shrunk in place), not a copy.
    return buffer.getvalue(), layers, problems
