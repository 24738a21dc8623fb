"""One child file of a sitemap set being written, and the file operations publishing needs.

:class:`ChildFile` is a temporary file, its gzip stream (``mtime=0``, no file name: the
same content gives the same bytes, RFC 1952) and the running SHA-256 that names it,
its size, URL count and latest lastmod. Text is encoded, hashed and compressed in
batches of about :data:`BATCH_BYTES`, in a thread of their own, while the next batch
is rendered.
"""

from __future__ import annotations

import contextlib
import filecmp
import gzip as gzip_module
import hashlib
import os
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Final

from crawler.core.lastmod import lastmod_datetime

# One GzipFile.write() or encode() per entry is several times slower than a batch.
# (The size also sets where zlib's input is split, which shows at compresslevel 0.)
BATCH_BYTES: Final = 256 * 1024
# One thread that compresses and writes the child files' batches, in order.
_COMPRESSOR: Final = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemap-gzip")


def fsync_dir(path: Path) -> None:
    """Sync the directory *path*: a rename is durable only once it is."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def place(temp: Path, final: Path) -> bool:
    """Rename *temp* over *final*; or, when *final* holds *temp*'s bytes already, remove
    *temp* and leave *final* as it is, its modification time too (docs/nightly.md, "An
    unchanged night"), and return True."""
    try:
        unchanged = filecmp.cmp(temp, final, shallow=False)
    except OSError:
        unchanged = False
    if unchanged:
        temp.unlink()
    else:
        os.replace(temp, final)
    return unchanged


def write_synced(raw: BinaryIO) -> None:
    raw.flush()
    os.fsync(raw.fileno())


def utc_key(lastmod: str) -> str | None:
    """``YYYY-MM-DDThh:mm:ss`` (UTC) for the lastmod forms crawler.core.lastmod writes,
    a date or a ``+00:00`` date-time without a fraction, else ``None``.

    Fixed-width digits: these keys sort as the instants they stand for, so the
    latest lastmod of a file is found without a datetime per entry. ``lastmod``
    has passed SitemapEntry's check, so its length tells its form.
    """
    if len(lastmod) == 10:  # YYYY-MM-DD: midnight UTC, as lastmod_datetime() has it
        return lastmod + "T00:00:00"
    if len(lastmod) == 25 and lastmod.endswith("+00:00"):
        return lastmod[:19]
    return None


def latest_utc(lastmods: list[str | None]) -> str | None:
    """The latest of ``lastmods``, every one ``None``, a date or a ``+00:00``
    date-time without a fraction (EntryBatch.utc); of equal instants, the first.

    For these forms, text order is time order (a date sorts before any time of
    its day), except that a date and its day's ``T00:00:00+00:00`` are one
    instant: max() takes the date-time, and the date wins if it came first.
    """
    latest = max(filter(None, lastmods), default=None)
    if latest is not None and latest.endswith("T00:00:00+00:00"):
        date = latest[:10]
        if date in lastmods and lastmods.index(date) < lastmods.index(latest):
            return date
    return latest


class ChildFile:
    """The one child file being written: see the module docstring."""

    def __init__(self, path: Path, number: int, gzip: bool, compresslevel: int) -> None:
        self.path = path
        self.number = number
        # open(), not tempfile.mkstemp(): mkstemp makes the file 0600, and a
        # published sitemap must be readable by the web server (umask decides).
        self.raw: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed in finish()/abort()
        self.stream: BinaryIO | gzip_module.GzipFile = self.raw
        if gzip:
            self.stream = gzip_module.GzipFile(
                filename="", mode="wb", fileobj=self.raw, compresslevel=compresslevel, mtime=0
            )
        self.sha = hashlib.sha256()
        # The write of the previous batch, running while this one is rendered.
        self.pending: Future[None] | None = None
        self.batch: list[str] = []
        self.size = 0  # bytes, UTF-8, batch included
        self.flush_at = BATCH_BYTES
        self.urls = 0
        # The latest lastmod so far, as written (latest_text), as a utc_key()
        # when it has one, and as a datetime once one was needed.
        self.latest: datetime | None = None
        self.latest_key: str | None = None
        self.latest_text: str | None = None

    def add(self, texts: list[str], size: int) -> None:
        """Add ``texts``, ``size`` bytes in UTF-8 in all."""
        self.batch.extend(texts)
        self.size += size
        if self.size >= self.flush_at:
            self.flush_batch()

    def add_many(self, texts: list[str], size: int, lastmods: list[str | None], utc: bool) -> None:
        """Add entries: ``texts``, ``size`` bytes in all, and their ``lastmods``
        (``utc``: as EntryBatch.utc)."""
        self.urls += len(texts)
        self.add(texts, size)
        if utc:
            lastmods = [latest_utc(lastmods)]
        for lastmod in lastmods:
            if lastmod is not None:
                self.note_lastmod(lastmod)

    def note_lastmod(self, lastmod: str) -> None:
        # Compared as instants: "2024-01-01T23:00:00-05:00" is later than
        # "2024-01-02T03:00:00+00:00" though it sorts first as a string. Of
        # equal instants ("2024-01-02", "2024-01-02T00:00:00Z"), the first stays.
        key = utc_key(lastmod)
        if key is not None and self.latest_key is not None:
            if key > self.latest_key:
                self.latest, self.latest_key, self.latest_text = None, key, lastmod
            return
        if self.latest_text is None:
            self.latest_key, self.latest_text = key, lastmod
            return
        if lastmod == self.latest_text:
            return
        # Another zone, or a fraction of a second: compare as datetimes.
        if self.latest is None:
            self.latest = lastmod_datetime(self.latest_text)
        moment = lastmod_datetime(lastmod)
        if moment > self.latest:
            self.latest, self.latest_key, self.latest_text = moment, key, lastmod

    def flush_batch(self) -> None:
        if self.batch:
            data = "".join(self.batch).encode()
            self.batch.clear()
            # SHA-256, zlib and the file write release the GIL: the batch is hashed
            # and compressed on the other core while the next one is rendered. One
            # batch at a time, in order: the bytes of a plain write.
            self._wait()
            self.pending = _COMPRESSOR.submit(self._write, data)
        self.flush_at = self.size + BATCH_BYTES

    def _write(self, data: bytes) -> None:
        self.sha.update(data)
        self.stream.write(data)

    def _wait(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending.result()  # raises what the write raised

    def finish(self) -> str:
        """Close the streams, fsync, and return the hex digest of the content."""
        self.flush_batch()
        self._wait()
        if self.stream is not self.raw:
            self.stream.close()  # writes the gzip trailer; leaves raw open
        write_synced(self.raw)
        self.raw.close()
        return self.sha.hexdigest()

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self._wait()  # the file is being thrown away; its write error with it
        for stream in (self.stream, self.raw):
            # Closing after a failed write may fail again; discard() deletes the file.
            with contextlib.suppress(OSError, ValueError):
                stream.close()
