"""Write a sitemap set (rotated child files plus an index) and publish it atomically.

:class:`SitemapSetWriter` streams entries, or the checked batches of an
:class:`~crawler.sitemaps.entryrows.EntryRows` (a million URLs make no object per URL),
into child files one open at a time, with plain string writes. ``max_bytes`` counts the
uncompressed size; an entry is never split between files. The set declares the
namespaces of the extensions it uses, and only those: a plain set is byte for byte what
it was before extensions existed. Sections and news sitemaps get files of their own
(docs/around.md, "Sections"; docs/rich.md, "News").

Why the child files have content-addressed names (the first 10 hex digits of the SHA-256
of the uncompressed content): only the index can be swapped atomically, so a new child
must never overwrite an old one with different content, and the previous set survives
until the new index is renamed over it (docs/crawling.md, "Publishing is atomic"). A file
already there with the same bytes is left untouched, its modification time too
(docs/nightly.md, "An unchanged night"). One set per directory: only files named like
ours (:data:`CHILD_NAME_RE`) and other writers' temporary files are ever removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import logging
import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate, islice
from pathlib import Path
from typing import Any, Final

from crawler.publish.childfile import ChildFile, fsync_dir, place, write_synced
from crawler.publish.sitemapxml import (
    EXTENSIONS,
    INDEX_FOOTER,
    INDEX_HEADER,
    URLSET_FOOTER,
    escape,
    render_news,
    render_txt,
    render_txt_batch,
    render_xml,
    render_xml_batch,
    urlset_header,
)
from crawler.sitemaps.entry import SitemapEntry, check_loc
from crawler.sitemaps.entryrows import MAX_SECTION_LENGTH, NEWS_SECTION, EntryRows, check_section
from crawler.sitemaps.limits import (
    MAX_BYTES_PER_FILE,
    MAX_NEWS_URLS_PER_FILE,
    MAX_SITEMAPS_PER_INDEX,
    MAX_URLS_PER_FILE,
)

__all__ = ["CHILD_NAME_RE", "EXTENSIONS", "SitemapSetWriter", "WrittenFile", "publish_sitemaps"]

logger = logging.getLogger(__name__)

#: The names of the child files: the default section's ``sitemap-NNNNN-<h>.xml``/``.txt``,
#: a section's ``sitemap-NAME-NNNNN-<h>.xml``/``.txt`` (NAME as check_section() has it:
#: it starts with a letter and is not ``news``) and the news sitemaps'
#: ``sitemap-news-NNNNN-<h>.xml``, each maybe ``.gz``. No two kinds give the same name.
CHILD_NAME_RE: Final = re.compile(
    r"^sitemap-(?:"
    rf"(?:(?!{NEWS_SECTION}-\d{{5}}-[0-9a-f]{{10}}\.)"
    rf"[a-z][a-z0-9-]{{0,{MAX_SECTION_LENGTH - 1}}}-)?"
    r"\d{5}-[0-9a-f]{10}\.(?:xml|txt)"
    rf"|{NEWS_SECTION}-\d{{5}}-[0-9a-f]{{10}}\.xml"
    r")(?:\.gz)?$"
)
# Temporary files are ".<name>.<pid>.tmp"; ours start with ".sitemap" (children,
# and the default index name); a custom index name is matched separately.
_STALE_TEMP_RE: Final = re.compile(r"^\.sitemap.*\.\d+\.tmp$")
_FORMATS: Final = ("xml", "txt")
# SitemapEntry objects are rendered, measured and fitted into files this many at a time.
_CHUNK_ENTRIES: Final = 4096
# EntryRows are read, checked and rendered this many rows at a time: checking and
# rendering hold the GIL, which the compressor thread waits for (up to the 5 ms switch
# interval); shorter batches keep both threads busy (bench/README.md, "Publishing speed").
_ROWS_PER_BATCH: Final = 1024


# Rendered entries on their way into files: their section (None: the default),
# texts, lastmods, locs (for errors), and whether every lastmod is in a form
# childfile.latest_utc() takes (EntryBatch.utc).
_Chunk = tuple[str | None, list[str], list[str | None], list[str], bool]


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """A finished child file: its final name, URL count, uncompressed size, the
    latest ``lastmod`` of its entries (``None`` when none has one), and its
    section (``None``: the default section; ``"news"``: a news sitemap)."""

    name: str
    urls: int
    bytes_uncompressed: int
    lastmod: str | None
    section: str | None = None
    #: Published already, byte for byte, under this name: left untouched.
    unchanged: bool = False


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while entries are written: the ledger's
    rows are tuples it counts as they are made, though they are in no cycle and freed by
    reference counting (bench/README.md, "Publishing speed")."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(slots=True)
class _Series:
    """One kind of child file (a section's sitemaps, or the news sitemaps): how its
    files are named, begin and end, how many URLs each may hold, the file being
    written and how many were started."""

    section: str | None
    prefix: str
    suffix: str
    header: str
    footer: str
    max_urls: int
    current: ChildFile | None = None
    count: int = 0


class SitemapSetWriter:
    """Write a sitemap set into ``out_dir`` under temporary names (:meth:`write`), then
    publish it (:meth:`publish`: the children, then the index ``index_name``, always XML,
    never gzipped, listing each child as ``index_base_url + name``); :meth:`discard`
    removes this writer's temporary files after an error. One writer per directory.

    ``fmt`` is ``"xml"`` or ``"txt"`` (one URL per line); ``max_urls`` and ``max_bytes``
    (uncompressed) may be lowered from the protocol's limits, not raised. ``extensions``:
    those the entries use, among :data:`EXTENSIONS` (``"xhtml"`` for hreflang alternates,
    ``"image"``, ``"video"``, ``"news"``); a text sitemap takes none. News sitemaps are
    XML whatever ``fmt`` is and hold at most 1,000 URLs (or ``max_urls``, if lower).
    Bad arguments or entries raise ``ValueError``; file system errors, ``OSError``.
    """

    def __init__(
        self,
        out_dir: Path,
        *,
        index_base_url: str,
        fmt: str = "xml",
        gzip: bool = True,
        max_urls: int = MAX_URLS_PER_FILE,
        max_bytes: int = MAX_BYTES_PER_FILE,
        index_name: str = "sitemap_index.xml",
        compresslevel: int = 6,
        extensions: Iterable[str] = frozenset(),
    ) -> None:
        if fmt not in _FORMATS:
            raise ValueError(f"fmt must be one of {_FORMATS}, not {fmt!r}")
        if isinstance(extensions, str):
            raise ValueError(f"extensions must be a set of names, not the str {extensions!r}")
        extensions = frozenset(extensions)
        if not extensions <= EXTENSIONS:
            raise ValueError(
                f"unknown extension(s) {sorted(extensions - EXTENSIONS)}:"
                f" extensions are among {sorted(EXTENSIONS)}"
            )
        if extensions and fmt != "xml":
            raise ValueError(f"a {fmt} sitemap cannot hold extensions: {sorted(extensions)}")
        if not 1 <= max_urls <= MAX_URLS_PER_FILE:
            raise ValueError(f"max_urls must be 1 to {MAX_URLS_PER_FILE}, not {max_urls}")
        if not 1 <= max_bytes <= MAX_BYTES_PER_FILE:
            raise ValueError(f"max_bytes must be 1 to {MAX_BYTES_PER_FILE}, not {max_bytes}")
        if not 0 <= compresslevel <= 9:
            raise ValueError(f"compresslevel must be 0 to 9, not {compresslevel}")
        if (
            not index_name
            or index_name.startswith(".")
            or "/" in index_name
            or os.sep in index_name
            or CHILD_NAME_RE.match(index_name)
        ):
            raise ValueError(f"index_name must be a plain file name of its own: {index_name!r}")
        self.out_dir = Path(out_dir)
        self.index_base_url = index_base_url
        self.fmt = fmt
        self.gzip = gzip
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.index_name = index_name
        self.compresslevel = compresslevel
        self.extensions = extensions
        self._check_base_url()
        gz = ".gz" if gzip else ""
        header, footer = (urlset_header(extensions), URLSET_FOOTER) if fmt == "xml" else ("", "")
        # The series being written: the default section's first, then each
        # section's in turn (_next_section()).
        self._series = _Series(None, "sitemap", f".{fmt}{gz}", header, footer, max_urls)
        self._sections_done: set[str | None] = set()
        self._news = _Series(
            NEWS_SECTION,
            f"sitemap-{NEWS_SECTION}",
            f".xml{gz}",
            urlset_header(frozenset({"news"})),
            URLSET_FOOTER,
            min(max_urls, MAX_NEWS_URLS_PER_FILE),
        )
        render = render_xml if fmt == "xml" else render_txt
        self._render: Callable[[SitemapEntry], str] = functools.partial(
            render, extensions=extensions
        )
        self._pid = os.getpid()
        self._stale_index_temp = re.compile(rf"^\.{re.escape(index_name)}\.\d+\.tmp$")
        self._files: list[WrittenFile] = []
        self._final_temps: list[Path] = []  # parallel to _files
        self._temps: set[Path] = set()  # every temporary file not yet renamed away
        self._state = "new"

    def _check_base_url(self, prefix: str = "sitemap", fmt: str | None = None) -> None:
        base = self.index_base_url
        if not isinstance(base, str) or not base.endswith("/"):
            raise ValueError(f"index_base_url must end with '/': {base!r}")
        # Every child name of a kind has the same length, so one sample checks
        # them all: each index <loc> obeys the same rules as a page's.
        sample = f"{base}{prefix}-00001-0123456789.{fmt or self.fmt}{'.gz' if self.gzip else ''}"
        try:
            check_loc(sample)
        except ValueError as exc:
            raise ValueError(
                f"index_base_url {base[:80]!r} makes an invalid <loc>: {exc}"
            ) from None

    @property
    def files(self) -> list[WrittenFile]:
        """The files written so far; after :meth:`publish`, each says whether it was
        published already, byte for byte (``unchanged``)."""
        return list(self._files)

    # -- writing ---------------------------------------------------------------

    def write(
        self,
        entries: Iterable[SitemapEntry] | EntryRows,
        news: Iterable[SitemapEntry] = (),
    ) -> list[WrittenFile]:
        """Write every child file under a temporary name in ``out_dir`` (nothing visible
        changes until :meth:`publish`) and return them: the sitemaps, then the news
        sitemaps. Once per writer. ``entries`` are sorted and deduplicated (the caller's
        job); rows of an EntryRows with a section go into that section's files.
        ``news``: the news sitemaps' entries, each with its ``news``, as the caller chose
        them (Google wants articles of the last 48 hours), newest first.
        """
        if self._state != "new":
            raise RuntimeError(f"write() may be called once per writer (state: {self._state})")
        self._state = "writing"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        chunks = (
            self._batch_chunks(entries)
            if isinstance(entries, EntryRows)
            else self._entry_chunks(entries)
        )
        try:
            with _gc_paused():
                for section, texts, lastmods, locs, utc in chunks:
                    if section != self._series.section:
                        self._next_section(section, locs[0])
                    self._add(self._series, texts, lastmods, locs, utc)
            if self._series.current is None and not self._files:
                # An empty urlset or sitemapindex is invalid (minOccurs 1), and
                # publishing one would delete the previous set: refuse.
                raise ValueError("no entries: refusing to write an empty sitemap set")
            self._finish(self._series)
            for _, texts, lastmods, locs, utc in self._news_chunks(news):
                self._add(self._news, texts, lastmods, locs, utc)
            self._finish(self._news)
        except BaseException:
            for series in (self._series, self._news):
                if series.current is not None:
                    series.current.abort()
                    series.current = None
            self._state = "failed"
            raise
        self._state = "written"
        return list(self._files)

    def _next_section(self, section: str | None, loc: str) -> None:
        """Finish the current section's last file and start ``section``'s series."""
        if section is not None:
            try:
                check_section(section)
            except ValueError as exc:
                raise ValueError(f"bad section of {loc[:80]!r}: {exc}") from None
        series = self._series
        self._finish(series)
        self._sections_done.add(series.section)
        if section in self._sections_done:
            what = "the default section" if section is None else f"section {section!r}"
            raise ValueError(
                f"the rows of {what} do not come together (again at {loc[:80]!r}): rows"
                " must be ordered by section, the default section first"
            )
        prefix = f"sitemap-{section}"
        # A section's names are longer than the default section's.
        self._check_base_url(prefix)
        self._series = _Series(
            section, prefix, series.suffix, series.header, series.footer, self.max_urls
        )

    def _entry_chunks(self, entries: Iterable[SitemapEntry]) -> Iterator[_Chunk]:
        render = self._render
        iterator = iter(entries)
        while chunk := list(islice(iterator, _CHUNK_ENTRIES)):
            lastmods = [entry.lastmod for entry in chunk]
            yield None, list(map(render, chunk)), lastmods, [entry.loc for entry in chunk], False

    def _batch_chunks(self, rows: EntryRows) -> Iterator[_Chunk]:
        render = render_xml_batch if self.fmt == "xml" else render_txt_batch
        extensions = self.extensions
        for batch in rows.batches(_ROWS_PER_BATCH):
            yield batch.section, render(batch, extensions), batch.lastmods, batch.locs, batch.utc

    def _news_chunks(self, news: Iterable[SitemapEntry]) -> Iterator[_Chunk]:
        iterator = iter(news)
        while chunk := list(islice(iterator, _CHUNK_ENTRIES)):
            if not self._news.count:  # the first chunk: news names are longer
                self._check_base_url(self._news.prefix, "xml")
            texts = list(map(render_news, chunk))  # ValueError for an entry without news
            # The index's <lastmod> of a news sitemap is its latest publication
            # date: the file holds no <lastmod>, and that is when it last changed.
            dates: list[str | None] = [e.news.publication_date for e in chunk if e.news]
            yield NEWS_SECTION, texts, dates, [entry.loc for entry in chunk], False

    def _add(
        self,
        series: _Series,
        texts: list[str],
        lastmods: list[str | None],
        locs: list[str],
        utc: bool,
    ) -> None:
        """Add rendered entries to the current file, starting new files as needed.

        A file takes entries while it has fewer than ``max_urls`` and the next
        one still leaves room for the footer within ``max_bytes``: with the
        running sums of the sizes, bisect finds where each file ends. It also
        finds the entry that fills a ``_BATCH_BYTES`` batch, so that zlib gets
        its input in the same pieces as when entries were written one by one.
        """
        sizes = list(map(len, texts))
        if not all(map(str.isascii, texts)):  # str.isascii() is O(1)
            sizes = [len(text.encode()) for text in texts]
        ends = list(accumulate(sizes))
        room = self.max_bytes - len(series.footer)
        start, count = 0, len(texts)
        while start < count:
            current = series.current
            if current is None:
                if len(series.header) + sizes[start] > room:
                    raise ValueError(
                        f"entry does not fit in a file of {self.max_bytes} bytes: "
                        f"{locs[start][:80]!r}"
                    )
                current = series.current = self._start(series)
            before = ends[start - 1] if start else 0
            limit = min(count, start + series.max_urls - current.urls)
            stop = bisect_right(ends, before + room - current.size, start, limit)
            if stop == start:  # this file is full
                self._finish(series)
                continue
            fills = bisect_left(ends, before + current.flush_at - current.size, start, stop)
            stop = min(stop, fills + 1)
            current.add_many(texts[start:stop], ends[stop - 1] - before, lastmods[start:stop], utc)
            start = stop

    def _start(self, series: _Series) -> ChildFile:
        if len(self._files) + 1 > MAX_SITEMAPS_PER_INDEX:
            raise ValueError(
                f"more than {MAX_SITEMAPS_PER_INDEX} sitemap files; raise max_urls or max_bytes"
            )
        series.count += 1
        number = series.count
        # The final name needs the hash of the whole content: write under a
        # provisional temporary name, rename once the file is finished.
        path = self.out_dir / f".{series.prefix}-{number:05d}.{self._pid}.tmp"
        self._temps.add(path)
        child = ChildFile(path, number, self.gzip, self.compresslevel)
        child.add([series.header], len(series.header))
        return child

    def _finish(self, series: _Series) -> None:
        """Finish the series' current file, if any, and give it its final name."""
        child = series.current
        if child is None:
            return
        child.add([series.footer], len(series.footer))
        digest = child.finish()
        series.current = None
        name = f"{series.prefix}-{child.number:05d}-{digest[:10]}{series.suffix}"
        # Same directory, hence same file system: os.replace() is an atomic rename.
        temp = self.out_dir / f".{name}.{self._pid}.tmp"
        os.replace(child.path, temp)
        self._temps.discard(child.path)
        self._temps.add(temp)
        self._final_temps.append(temp)
        self._files.append(
            WrittenFile(name, child.urls, child.size, child.latest_text, series.section)
        )

    # -- publishing ------------------------------------------------------------

    def publish(self) -> Path:
        """Move the written set into place and return the index's path.

        Order: the index is written to a temporary file and fsynced (so that a
        full disk fails before anything visible changes); every child is renamed
        to its final name and the directory fsynced; the index is renamed over
        the old one and the directory fsynced; only then are the previous set's
        children and stale temporary files deleted. A crash at any point leaves
        a complete set, old or new, behind the index.
        """
        if self._state != "written":
            raise RuntimeError(f"publish() needs a successful write() first (state: {self._state})")
        self._state = "publishing"
        index_path = self.out_dir / self.index_name
        index_temp = self.out_dir / f".{self.index_name}.{self._pid}.tmp"
        self._temps.add(index_temp)
        self._write_index(index_temp)

        for i, (written, temp) in enumerate(zip(self._files, self._final_temps, strict=True)):
            if place(temp, self.out_dir / written.name):
                self._files[i] = dataclasses.replace(written, unchanged=True)
            self._temps.discard(temp)
        fsync_dir(self.out_dir)
        place(index_temp, index_path)
        self._temps.discard(index_temp)
        fsync_dir(self.out_dir)
        self._state = "published"

        removed = self._remove_previous({written.name for written in self._files})
        logger.info(
            "Published %d sitemap file(s) (%d unchanged), %d URL(s), at %s "
            "(%d old file(s) removed)",
            len(self._files),
            sum(written.unchanged for written in self._files),
            sum(written.urls for written in self._files),
            index_path,
            removed,
        )
        return index_path

    def _write_index(self, path: Path) -> None:
        size = len(INDEX_HEADER) + len(INDEX_FOOTER)
        base = escape(self.index_base_url)
        with open(path, "wb") as raw:
            raw.write(INDEX_HEADER)
            for written in self._files:
                lastmod = "" if written.lastmod is None else f"<lastmod>{written.lastmod}</lastmod>"
                line = f"<sitemap><loc>{base}{written.name}</loc>{lastmod}</sitemap>\n".encode()
                size += len(line)
                if size > MAX_BYTES_PER_FILE:
                    raise ValueError(f"the sitemap index would exceed {MAX_BYTES_PER_FILE} bytes")
                raw.write(line)
            raw.write(INDEX_FOOTER)
            write_synced(raw)

    def _remove_previous(self, keep: set[str]) -> int:
        removed = 0
        with os.scandir(self.out_dir) as listing:
            for item in listing:
                name = item.name
                if (
                    name in keep
                    or not (
                        CHILD_NAME_RE.match(name)
                        or _STALE_TEMP_RE.match(name)
                        or self._stale_index_temp.match(name)
                    )
                    or item.is_dir(follow_symlinks=False)
                ):
                    continue
                try:
                    os.unlink(item.path)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    # The new set is already published; a leftover old file
                    # is harmless and goes at the next publish.
                    logger.warning(
                        "Could not remove %s of a previous sitemap set: %s", item.path, exc
                    )
                    continue
                removed += 1
        return removed

    # -- clean-up ----------------------------------------------------------------

    def discard(self) -> None:
        """Delete this writer's temporary files; the published set is untouched."""
        for path in list(self._temps):
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                logger.warning("Could not remove temporary file %s: %s", path, exc)
            self._temps.discard(path)
        if self._state != "published":
            self._state = "discarded"


def publish_sitemaps(
    out_dir: Path | str,
    entries: Iterable[SitemapEntry] | EntryRows,
    *,
    news: Iterable[SitemapEntry] = (),
    **kwargs: Any,
) -> tuple[Path, list[WrittenFile]]:
    """Write and publish a sitemap set in one call (``kwargs``: :class:`SitemapSetWriter`'s,
    ``index_base_url`` required; ``news``: :meth:`SitemapSetWriter.write`'s). On any
    exception, KeyboardInterrupt included, the temporary files are removed and the
    exception re-raised; the previously published set stays as it was."""
    writer = SitemapSetWriter(Path(out_dir), **kwargs)
    try:
        writer.write(entries, news)
        index = writer.publish()
    except BaseException:
        writer.discard()
        raise
    return index, writer.files
