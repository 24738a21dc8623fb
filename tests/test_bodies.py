"""A body the crawl will not read is not downloaded (crawler/fetch/bodies.py).

A real static server (Python's http.server, as a subprocess on 127.0.0.1) serves a
page linking to a 12 MiB video, a PDF and an HTML page."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

from tests.conftest import run_crawl

VIDEO_BYTES = 12 * 1024 * 1024


@pytest.fixture
def static_site(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "www"
    root.mkdir()
    (root / "index.html").write_text(
        '<html><head><title>home</title></head><body><a href="/film.mp4">film</a>'
        '<a href="/paper.pdf">paper</a><a href="/page.html">page</a></body></html>'
    )
    (root / "page.html").write_text("<html><body>a page</body></html>")
    (root / "paper.pdf").write_bytes(b"%PDF-1.4 a small document\n" * 40)
    (root / "film.mp4").write_bytes(b"\0" * VIDEO_BYTES)
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = re.search(r"port (\d+)", proc.stdout.readline())
        assert match, "http.server did not start"
        yield f"http://127.0.0.1:{match[1]}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest_twisted.ensureDeferred
async def test_unread_bodies_are_not_downloaded(static_site: str, tmp_path: Path) -> None:
    result = await run_crawl(static_site + "/", tmp_path, SITEMAP_LISTED_TYPES=["application/pdf"])
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
