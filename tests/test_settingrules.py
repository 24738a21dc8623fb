"""Bad settings are refused before a crawl starts: one line naming the setting, its
value and what is allowed, exit status 2, nothing written (crawler/commands/settingrules.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import settings as project
from crawler.commands.options import UsageError, checked_settings, project_settings
from crawler.commands.settingrules import RULES, SettingError, check_settings
from tests.conftest import cli
from tests.test_cli import assert_one_line_error


def test_every_sitemap_setting_has_a_rule() -> None:
    ours = {name for name in vars(project) if name.startswith("SITEMAP_")}
    assert ours == {name for name in RULES if name.startswith("SITEMAP_")}


def test_the_defaults_pass() -> None:
    check_settings(project_settings({}), {})


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "SITEMAP_CHANGEFREQ=dayly",
            "setting SITEMAP_CHANGEFREQ = 'dayly': must be one of always, hourly, daily",
        ),
        ("SITEMAP_PRIORITY=abc", "setting SITEMAP_PRIORITY = 'abc': must be a number from 0.0"),
        ("SITEMAP_PRIORITY=2", "setting SITEMAP_PRIORITY = '2': must be a number from 0.0 to 1.0"),
        ("CONCURRENT_REQUESTS=abc", "CONCURRENT_REQUESTS = 'abc': must be a whole number of at"),
        ("SITEMAP_MAX_DROP=abc", "SITEMAP_MAX_DROP = 'abc': must be a number from 0 to 1"),
        ("DOWNLOAD_TIMEOUT=-5", "DOWNLOAD_TIMEOUT = '-5': must be a number greater than 0"),
        ("SITEMAP_MAX_URLS_PER_FILE=60000", "must be a whole number from 1 to 50000"),
        ("SITEMAP_GZIP=maybe", "SITEMAP_GZIP = 'maybe': must be true or false"),
        ("SITEMAP_INCLUDE=(", "'(' is not a regular expression"),
        ("SITEMAP_VOLATILE_SELECTORS=[[x", "'[[x' is not a CSS selector"),
        ("SITEMAP_LISTED_TYPES=pdf", "'pdf' is not a media type such as application/pdf"),
        ("SITEMAP_FORMAT=json", "SITEMAP_FORMAT = 'json': must be one of xml, txt"),
        (
            "SITEMAP_CHANGEFRQ=daily",
            "unknown setting SITEMAP_CHANGEFRQ; did you mean SITEMAP_CHANGEFREQ?",
        ),
        ("LOG_LEVEL=LOUD", "LOG_LEVEL = 'LOUD': must be one of DEBUG"),
    ],
)
def test_bad_setting_is_one_line_and_exit_2(setting: str, message: str, tmp_path: Path) -> None:
    proc = cli("crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "public"), "-s", setting)
    assert_one_line_error(proc, 2, message)
    assert not (tmp_path / "public.sitemap-state" / "ledger.running.sqlite").exists()


def test_config_settings_table_is_checked_too(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text('url = "http://127.0.0.1:9/"\n[settings]\nSITEMAP_CHANGEFRQ = "daily"\n')
    proc = cli("crawl", "--config", str(config), "--out", str(tmp_path / "public"))
    assert_one_line_error(proc, 2, "unknown setting SITEMAP_CHANGEFRQ; did you mean")
    proc = cli("audit", "http://127.0.0.1:9/", "-s", "SITEMAP_MAX_ERROR_RATE=2")
    assert_one_line_error(proc, 2, "SITEMAP_MAX_ERROR_RATE = '2': must be a number from 0 to 1")


def test_unknown_names_other_than_ours_are_scrapys_business() -> None:
    check_settings(project_settings({"MY_OWN_SETTING": "x"}), {"MY_OWN_SETTING": "x"})
    with pytest.raises(SettingError, match="unknown setting SITEMAP_NOPE"):
        check_settings(project_settings({"SITEMAP_NOPE": 1}), {"SITEMAP_NOPE": 1})


def test_the_longest_revisit_may_not_be_shorter_than_the_shortest() -> None:
    from crawler.commands.declarations import FLAG_OF

    given = {"SITEMAP_REVISIT_MIN": "3", "SITEMAP_REVISIT_MAX": "2"}
    with pytest.raises(SettingError) as refused:
        check_settings(project_settings(given), given, FLAG_OF)
    assert str(refused.value) == (
        "setting SITEMAP_REVISIT_MAX = '2': a number of days, at least SITEMAP_REVISIT_MIN (3)"
        " (option --revisit-max)"
    )
    check_settings(project_settings({**given, "SITEMAP_REVISIT_MAX": "3"}), given)
    # Typed with -s, the setting is named, not the option that would set it.
    with pytest.raises(UsageError) as typed:
        checked_settings(given, typed=given)
    assert str(typed.value).endswith("at least SITEMAP_REVISIT_MIN (3)")
    # A shortest that is no number is its own rule's error, not the longest's.
    with pytest.raises(SettingError, match="setting SITEMAP_REVISIT_MIN = 'x'"):
        bad = {**given, "SITEMAP_REVISIT_MIN": "x"}
        check_settings(project_settings(bad), bad)
