"""--max-depth means the shortest link distance from the start URL.

The page /target.html is 2 links from the start by a short path and 4 by a chain
of next links. Scrapy's default depth-first order would reach it through the chain
first and leave it out at --max-depth 3; the crawl is breadth-first, and a URL
left out for depth is judged after all when a shorter path turns up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

from tests.conftest import run_crawl
from tests.test_nightly import NightlySite


@pytest.fixture
def chain_site(tmp_path: Path) -> Iterator[NightlySite]:
    site = NightlySite(tmp_path)
    # The chain link comes last: a LIFO (depth-first) queue would take it first.
    site.pages["/"] = {"body": '<a href="/short.html">s</a> <a href="/chain/1.html">c</a>'}
    site.page("/short.html", '<a href="/target.html">t</a>')
    for n in range(1, 4):
        site.page(
            f"/chain/{n}.html", f'<a href="/chain/{n + 1}.html">n</a> <a href="/target.html">t</a>'
        )
    site.page("/chain/4.html", "end")
    site.page("/target.html", "target")
    site.save()
    yield site
    site.stop()


@pytest_twisted.ensureDeferred
async def test_depth_is_the_shortest_distance(chain_site: NightlySite, tmp_path: Path) -> None:
    result = await run_crawl(chain_site.url("/"), tmp_path, SITEMAP_MAX_DEPTH=3)
    decisions = result.decisions()
    assert decisions[chain_site.url("/target.html")][0] == "listed"
    assert result.ledger_rows()[chain_site.url("/target.html")]["depth"] == 2
    assert decisions[chain_site.url("/chain/4.html")] == ("cap-reached", "max depth 3")
    counts = {k: v for k, v in result.stats.items() if k.startswith("sitemap/decision/")}
    assert counts == {"sitemap/decision/listed": 6, "sitemap/decision/cap-reached": 1}


def test_a_depth_cap_is_lifted_by_a_shorter_path(tmp_path: Path) -> None:
    # Concurrency can still let a long path win the race; the spider then lets the
    # URL in when the shorter path turns up, and the ledger takes the new decision.
    from scrapy import Request
    from scrapy.utils.test import get_crawler

    from crawler.commands.options import project_settings
    from crawler.core.items import UrlRecord
    from crawler.core.urls import url_key
    from crawler.crawl.frontier import Lead
    from crawler.crawl.spider import SiteSpider
    from crawler.ledger.ledger import Ledger
    from crawler.ledger.runstate import RunState

    project = project_settings(
        {
            "SITEMAP_MAX_DEPTH": 3,
            "SITEMAP_OUT_DIR": str(tmp_path / "o"),
            "SITEMAP_INCREMENTAL": False,
        }
    )
    crawler = get_crawler(SiteSpider, dict(project))
    spider = SiteSpider.from_crawler(crawler, url="http://h.test/")
    # As Crawler.crawl does: the spider first, then the run state, the first extension.
    crawler.spider = spider
    RunState.from_crawler(crawler)
    crawler.stats.open_spider()
    deep = list(spider.frontier.discover(Lead("http://h.test/target.html", 4)))
    assert [(r.decision, r.reason) for r in deep] == [("cap-reached", "max depth 3")]
    again = list(spider.frontier.discover(Lead("http://h.test/target.html", 5)))
    assert again == []
    short = list(spider.frontier.discover(Lead("http://h.test/target.html", 2)))
    request = next(r for r in short if isinstance(r, Request))
    assert request.meta["sitemap_reconsidered"] is True
    assert request.meta["sitemap_depth"] == 2

    ledger = Ledger(tmp_path / "l.sqlite")
    key = url_key("http://h.test/target.html")
    # The frontier's record of the URL left out for depth: its rule, not its reason's
    # text, tells the ledger that a later decision replaces it.
    capped = deep[0]
    assert isinstance(capped, UrlRecord) and (capped.key, capped.rule) == (key, "depth")
    assert ledger.record(capped)
    listed = UrlRecord(
        url="http://h.test/target.html", decision="listed", key=key, loc="http://h.test/target.html"
    )
    assert ledger.record(listed)
    assert [r["decision"] for r in ledger.rows()] == ["listed"]
    ledger.close()
