"""What is written once stays in one place: a grep of the product code.

- ``SITEMAP_STRIP_PARAMS`` and ``SITEMAP_STRIP_EXTRA`` are read from the settings in
  :class:`crawler.core.urls.Stripping` only; every part that normalises URLs takes that
  object's fields.
- SQL on the ledger's tables is written in its rooms only (crawler/ledger/records.py,
  links.py, runs.py, revisits.py, put together in ledger.py): the running ledger, the
  previous run (crawler/ledger/previous.py), ``explain``, ``export`` and the audit read
  a ledger through :class:`crawler.ledger.ledger.LedgerReader`. (The audit's own store,
  crawler/audit/store.py, keeps its own tables: ``sitemaps``, ``listings``,
  ``fetched``.)
- The report pages' URL cap is the setting's default, not a copy of it.
- An option that sets a setting is checked by that setting's rule, the one ``-s``
  asks (crawler/commands/settingrules.py); the IndexNow key by
  :func:`crawler.publish.indexnow.valid_key`.
- A body is left undownloaded (crawler/fetch/bodies.py) only when the verdict book's
  ``type`` verdict (crawler/crawl/verdicts.py) would refuse its page unread.
- A section's name is checked by :func:`crawler.sitemaps.entryrows.check_section`
  alone: the settings' check and the sitemap writer refuse the same names, in the
  same words.
- The section, changefreq and priority rules are read in :func:`pipelines.rules.row_rules`
  only; the publisher asks it whether entries carry values of their own.
- ``SITEMAP_REVISIT_FULL`` is read by the revisit policy, ``SITEMAP_REDIS_POLL_INTERVAL``
  and ``SITEMAP_REDIS_NO_FETCH`` by the distributed crawl's extension, which the
  scheduler asks.
- The cores this process may use are counted in crawler/core/cores.py; a warning
  logged the first time only is :class:`crawler.core.logonce.LogOnce`, not a flag.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest
from scrapy import Request
from scrapy.exceptions import StopDownload
from scrapy.http.headers import Headers
from twisted.web.iweb import UNKNOWN_LENGTH

from crawler.commands.declarations import AUDIT, CRAWL, WORKER, add_options, given_settings
from crawler.commands.options import Parser, UsageError, apply_options, project_settings
from crawler.commands.settingrules import RULES, SettingError, check_settings, check_value
from crawler.crawl.verdicts import Read, VerdictBook
from crawler.fetch.bodies import UnreadBodies
from crawler.ledger import ledger
from crawler.page.analysis import HTML_TYPES
from crawler.sitemaps.entryrows import check_section

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [*sorted((ROOT / "crawler").rglob("*.py")), *sorted((ROOT / "pipelines").rglob("*.py"))]


def readers(pattern: re.Pattern[str]) -> dict[str, int]:
    """{module: lines} of the product modules where *pattern* matches."""
    found: dict[str, int] = {}
    for path in PRODUCT:
        hits = len(pattern.findall(path.read_text(encoding="utf-8")))
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    return found


def test_the_strip_settings_are_read_in_one_place() -> None:
    read = readers(re.compile(r"\.get\w*\(\s*[\"']SITEMAP_STRIP_(?:PARAMS|EXTRA)[\"']"))
    assert read == {"crawler/core/urls.py": 2}, read


def ledger_tables() -> list[str]:
    return re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", ledger.SCHEMA)


def test_the_ledger_tables_are_known() -> None:
    assert {"urls", "aliases", "params", "meta", "addresses", "links"} <= set(ledger_tables())
    assert not {"sitemaps", "listings", "fetched"} & set(ledger_tables())


#: The ledger's modules that hold SQL on its tables.
ROOMS = ("ledger", "records", "links", "runs", "revisits")


def test_no_sql_on_the_ledger_outside_its_module() -> None:
    names = "|".join(ledger_tables())
    sql = re.compile(
        rf"\b(?:FROM|INTO|UPDATE|JOIN|TABLE|table_info)\b\s*\(?\s*(?:\w+\.)?(?:{names})\b"
    )
    found = readers(sql)
    for room in ROOMS:
        found.pop(f"crawler/ledger/{room}.py", None)
    assert not found, f"SQL on the ledger's tables outside its rooms: {found}"
    connects = readers(re.compile(r"sqlite3\.connect\("))
    assert set(connects) <= {"crawler/ledger/ledger.py", "crawler/audit/store.py"}, connects


def test_the_report_pages_cap_is_the_settings_default() -> None:
    import settings
    from crawler.publish.htmlpage import DEFAULT_CAP

    assert DEFAULT_CAP == settings.SITEMAP_REPORT_HTML_URLS
    assert not readers(re.compile(r"^DEFAULT_CAP\b.*=\s*\d", re.M)), "a copied number"


def test_every_option_with_a_setting_is_checked_by_its_rule() -> None:
    for options in (CRAWL, AUDIT, WORKER):
        parser = Parser()
        add_options(parser, options)
        for action in parser._actions:
            option = next((o for o in options if o.name == action.dest), None)
            if option is not None and option.setting in RULES and action.nargs != 0:
                assert getattr(action.type, "__qualname__", "") == "option_type.<locals>.check"


def test_a_checked_option_keeps_its_type() -> None:
    # As before its rule checked it: the nightly basis (crawler/ledger/schedule.py)
    # digests the settings as they are given.
    parser = Parser()
    add_options(parser, CRAWL)
    typed = ["--max-pages", "5", "--delay", "0.5", "--revisit-max", "3", "--max-time", "90s"]
    given = given_settings(parser.parse_args(["http://127.0.0.1/", *typed]), CRAWL)
    expected = {
        "SITEMAP_MAX_PAGES": 5,
        "DOWNLOAD_DELAY": 0.5,
        "CLOSESPIDER_TIMEOUT": 90.0,
        "SITEMAP_REVISIT_MAX": 3.0,
    }
    assert repr({name: given[name] for name in expected}) == repr(expected)


@pytest.mark.parametrize(
    ("flag", "bad"),
    [
        ("--max-pages", "lots"),
        ("--concurrency", "0"),
        ("--delay", "-1"),
        ("--max-urls-per-file", "60000"),
        ("--include", "("),
        ("--indexnow-key", "short"),
        ("--render-concurrency", "0"),
        ("--revisit-min", "0"),
        ("--calendar-window", "3q"),
        ("--delay", "nan"),
    ],
)
def test_the_command_line_the_config_file_and_s_ask_one_rule(
    flag: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    option = next(o for o in CRAWL if o.flag == flag)
    with pytest.raises(ValueError) as rule:
        check_value(option.setting, [bad] if option.action == "append" else bad)
    said = str(rule.value)
    parser = Parser(prog="crawl")
    add_options(parser, CRAWL)
    with pytest.raises(SystemExit):
        parser.parse_args(["http://127.0.0.1/", flag, bad])
    line = capsys.readouterr().err
    assert f"error: argument {flag}: " in line and said in line, line
    key = flag.removeprefix("--")
    with pytest.raises(UsageError) as config:
        apply_options(parser, parser.parse_args([]), {key: bad}, where="--config c.toml")
    assert str(config.value).startswith(f"--config c.toml: {key}: ") and said in str(config.value)
    given = {option.setting: bad}
    with pytest.raises(SettingError) as setting:
        check_settings(project_settings(given), given)
    assert str(setting.value) == f"setting {option.setting} = {bad!r}: {said}"


@pytest.mark.parametrize("key", ["abcd1234", "A-" * 64, "short", "a" * 129, "bad_key!"])
def test_the_indexnow_key_rule_is_the_protocols(key: str) -> None:
    from crawler.publish.indexnow import valid_key

    try:
        check_value("SITEMAP_INDEXNOW_KEY", key)
    except ValueError:
        assert not valid_key(key)
    else:
        assert valid_key(key)
    assert not readers(re.compile(r"8,128")).keys() - {"crawler/publish/indexnow.py"}


class _Stats:
    def inc_value(self, *_: object) -> None:
        pass


@pytest.mark.parametrize(
    "media", ["text/html", "application/xhtml+xml", "application/pdf", "image/png", "text/plain"]
)
def test_a_body_is_left_unread_only_when_the_type_verdict_refuses_its_page(media: str) -> None:
    listed = ["Application/PDF"]
    unread = UnreadBodies(listed, cast(Any, _Stats()))
    request = Request("https://example.test/f", meta={"sitemap_url": "https://example.test/f"})
    try:
        headers = Headers({"Content-Type": f"{media}; charset=utf-8"})
        unread.headers_received(headers, UNKNOWN_LENGTH, request)
        stopped = False
    except StopDownload:
        stopped = True
    book = VerdictBook("https://example.test/", public=cast(Any, None), types=listed)
    read = Read(media_type=media, html=media in HTML_TYPES)
    refused = book.judge(request.url, read, book.answer)
    assert stopped == (refused is not None), refused
    assert refused is None or (refused.decision, refused.reason) == ("non-html", media)


@pytest.mark.parametrize("name", ["blog", "a-1", "x" * 40, "x" * 41, "1a", "Blog", "a_b", "news"])
def test_the_setting_check_and_the_writer_ask_one_section_name_rule(name: str) -> None:
    try:
        check_section(name)
    except ValueError as e:
        writer_says: str | None = str(e)
    else:
        writer_says = None
    settings = project_settings({"SITEMAP_SECTIONS": [f"{name}=/x/"]})
    if writer_says is None:
        check_settings(settings, {})
    else:
        with pytest.raises(SettingError, match=re.escape(writer_says)):
            check_settings(settings, {})
    rule = readers(re.compile(r"SECTION_NAME\b|\{0,39\}|section == \"news\""))
    assert rule == {"crawler/sitemaps/entryrows.py": 2}, rule


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"SITEMAP_SECTIONS": ["blog=/blog/"]},
        {"SITEMAP_CHANGEFREQ_RULES": ["auto"]},
        {"SITEMAP_PRIORITY_RULES": ["/a/=0.9"]},
    ],
)
def test_the_row_rules_are_read_once_and_the_publisher_follows_them(
    given: dict[str, list[str]],
) -> None:
    from crawler.publish.publisher import SitemapOutput
    from pipelines.rules import row_rules

    settings = project_settings(given)
    assert SitemapOutput.from_settings(settings).per_row is bool(given)
    assert [len(rules) for rules in row_rules(settings)] == [
        len(given.get(name, []))
        for name in ("SITEMAP_SECTIONS", "SITEMAP_CHANGEFREQ_RULES", "SITEMAP_PRIORITY_RULES")
    ]
    read = readers(
        re.compile(r"\.get\w*\(\s*[\"']SITEMAP_(?:SECTIONS|CHANGEFREQ_RULES|PRIORITY_RULES)[\"']")
    )
    assert read == {"pipelines/rules.py": 3}, read


def test_each_revisit_and_redis_setting_is_read_in_one_place() -> None:
    def read(name: str) -> dict[str, int]:
        return readers(re.compile(rf"\.get\w*\(\s*[\"']{name}[\"']"))

    assert read("SITEMAP_REVISIT_FULL") == {"crawler/ledger/schedule.py": 1}
    assert read("SITEMAP_REDIS_(?:POLL_INTERVAL|NO_FETCH)") == {"crawler/distributed/sharing.py": 2}


@pytest.mark.parametrize("cores", [1, 2, 3, 8])
def test_the_cores_are_counted_once_and_every_user_agrees(
    monkeypatch: pytest.MonkeyPatch, cores: int
) -> None:
    import os

    from scrapy.settings import Settings

    from crawler.commands.values import processes_count
    from crawler.fetch.browser import render_concurrency
    from crawler.page.parsepool import MAX_AUTO_PROCESSES, default_processes

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert processes_count("auto") == cores
    assert default_processes() == min(MAX_AUTO_PROCESSES, cores - 1)
    auto = Settings({"SITEMAP_RENDER_CONCURRENCY": "auto", "CONCURRENT_REQUESTS_PER_DOMAIN": 64})
    assert render_concurrency(auto) == min(2 * cores, 8)
    counted = readers(re.compile(r"\b(?:sched_getaffinity|cpu_count)\b"))
    assert counted == {"crawler/core/cores.py": 3}, counted


def test_a_warning_logged_once_is_one_helper(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from crawler.core.logonce import LogOnce

    warn = LogOnce(logging.getLogger("once"))
    for n in range(3):
        warn("trouble %d", n)
    assert [r.getMessage() for r in caplog.records] == ["trouble 0 (logged once)"]
    handwritten = readers(re.compile(r"\bwarned\w*\s*=\s*(?:False|True)\b"))
    assert handwritten == {}, handwritten
