"""The Python API (crawler/api.py): one function per command, callable many times in
one process, with the command line's options, checks and results.

This test process runs Twisted's reactor itself (pytest-twisted), as a program that
embeds sitemap-crawler might: each call still gets a reactor of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawler import api
from tests.conftest import MockServer

FAST = {"AUTOTHROTTLE_START_DELAY": 0, "RETRY_TIMES": 1}


def test_crawl_twice_in_one_process(site: MockServer, tmp_path: Path) -> None:
    out = tmp_path / "public"
    first = api.crawl(site.url("/"), out=str(out), settings=FAST)
    assert first.exit_code == 0 and first.published, first.message
    assert first.out == out and first.state == tmp_path / "public.sitemap-state"
    assert first.index == out / "sitemap_index.xml" and first.index.exists()
    assert first.index_url == site.url("/sitemap_index.xml")
    # The figures are the run's, as report.json has them.
    assert first.report is not None
    report = json.loads(first.report.read_text())
    assert first.listed == report["listed"] > 0
    assert first.excluded == {k: v for k, v in report["excluded"].items() if v}
    assert first.pages_fetched == report["pages_fetched"]
    assert first.added == len(report["added"]) == first.listed
    assert first.urls_written == first.listed and first.files_written >= 1
    assert f"listed: {first.listed}" in first.summary

    # Again in the same process: a nightly run, which asks conditionally.
    second = api.crawl(site.url("/"), out=str(out), settings=FAST)
    assert second.exit_code == 0 and second.published, second.message
    assert second.stats["sitemap/conditional/requests"] > 0
    assert (second.listed, second.added, second.removed) == (first.listed, 0, 0)


def test_bad_options_raise_the_command_lines_message(tmp_path: Path) -> None:
    with pytest.raises(
        api.UsageError, match="max_pages: 'lots': must be a whole number of at least 0"
    ):
        api.crawl("http://127.0.0.1:1/", out=str(tmp_path / "p"), max_pages="lots")
    with pytest.raises(api.UsageError, match="unknown option 'colour'"):
        api.crawl("http://127.0.0.1:1/", colour="blue")
    with pytest.raises(api.UsageError, match="not an http\\(s\\) URL"):
        api.crawl("ftp://example.com/", out=str(tmp_path / "p"))
    with pytest.raises(api.UsageError, match="unknown class 'bogus'"):
        api.audit("http://127.0.0.1:1/", fail_on="bogus")


def test_a_failed_crawl_is_a_result(tmp_path: Path, closed_port: int) -> None:
    result = api.crawl(
        f"http://127.0.0.1:{closed_port}/", out=str(tmp_path / "p"), settings={"RETRY_TIMES": 0}
    )
    assert result.exit_code == 3 and result.outcome == "failed"
    assert result.message is not None and "cannot reach http://127.0.0.1:" in result.message
    assert not result.published and result.index is None


def test_audit(site: MockServer, tmp_path: Path) -> None:
    crawled = api.crawl(site.url("/"), out=str(tmp_path / "public"), settings=FAST)
    assert crawled.published
    result = api.audit(
        site.url("/"), state=str(crawled.state), report=str(tmp_path / "audit"), settings=FAST
    )
    assert result.exit_code == 0, result.error
    assert result.audit is not None and result.coverage == result.audit.coverage
    data = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert result.counts == data["counts"]
    assert result.written[0] == tmp_path / "audit" / "audit.json"
    assert "coverage" in result.summary
