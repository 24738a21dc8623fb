"""A body the crawl will not read is not downloaded (crawler/fetch/bodies.py).

A real static server (Python's http.server, as a subprocess on 127.0.0.1) serves a
page linking to a 12 MiB video, a PDF and an HTML page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

from tests.conftest import run_crawl
from tests.served import serve_directory

VIDEO_BYTES = 12 * 1024 * 1024


@pytest.fixture
def static_site(tmp_path: Path) -> Iterator[str]:
    files: dict[str, str | bytes] = {
        "index.html": '<html><head><title>home</title></head><body><a href="/film.mp4">film</a>'
        '<a href="/paper.pdf">paper</a><a href="/page.html">page</a></body></html>',
        "page.html": "<html><body>a page</body></html>",
        "paper.pdf": b"%PDF-1.4 a small document\n" * 40,
        "film.mp4": b"\0" * VIDEO_BYTES,
        "robots.txt": "User-agent: *\nAllow: /\n",
    }
    with serve_directory(tmp_path / "www", files) as site:
        yield site.base


@pytest_twisted.ensureDeferred
async def test_unread_bodies_are_not_downloaded(static_site: str, tmp_path: Path) -> None:
    # The downloader's byte count is off by default: on here, to measure the download.
    result = await run_crawl(
        static_site + "/", tmp_path, SITEMAP_LISTED_TYPES=["application/pdf"], DOWNLOADER_STATS=True
    )
    assert result.outcome == "published"
    rows = result.ledger_rows()
    assert rows[static_site + "/film.mp4"]["decision"] == "non-html"
    assert rows[static_site + "/film.mp4"]["reason"] == "video/mp4"
    # The listed PDF is read (its content hash needs the body); so are the pages.
    assert rows[static_site + "/paper.pdf"]["decision"] == "listed"
    assert rows[static_site + "/paper.pdf"]["content_hash"]
    assert rows[static_site + "/page.html"]["decision"] == "listed"
    assert result.stats["sitemap/bodies_skipped"] == 1
    # The video's 12 MiB were not downloaded: at most a socket buffer of it.
    assert result.stats["downloader/response_bytes"] < VIDEO_BYTES / 4
