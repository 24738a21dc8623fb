"""The crawl's HTTP client (crawler/fetch/renderhandler.py, Scrapy's aiohttp handler):
what the crawl asks of it on a real server (tests/seedserver.py on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

import pytest_twisted

from crawler.fetch.renderhandler import MAX_HEADER_LINE
from tests.conftest import run_crawl
from tests.seedserver import ScriptedSite


@pytest_twisted.ensureDeferred
async def test_long_header_lines_and_the_url_as_made(tmp_path: Path) -> None:
    site = ScriptedSite(tmp_path)
    try:
        # A Link header of 20 KiB (aiohttp's own limit is 8 KiB), and addresses that a
        # URL library would write again (an encoded ";" and "@", which yarl would decode).
        links = ", ".join(f"<{site.url(f'/style/{i:05d}.css')}>; rel=preload" for i in range(400))
        assert 16 * 1024 < len(links) < MAX_HEADER_LINE
        site.page("/", "/long", "/a%3Bb", "/c%40d")
        site.page("/long", "/", headers={"Link": links})
        site.page("/a%3Bb", "/")
        site.page("/c%40d", "/")
        site.save()
        result = await run_crawl(site.url("/"), tmp_path)
        rows = result.ledger_rows()
        for path in ("/long", "/a%3Bb", "/c%40d"):
            assert rows[site.url(path)]["decision"] == "listed", rows[site.url(path)]
        asked = [r["path"] for r in site.requests()]
        assert "/a%3Bb" in asked and "/c%40d" in asked
    finally:
        site.stop()
