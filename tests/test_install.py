"""The wheel, built from this checkout and installed offline in a clean environment:
it claims no generic top-level name (another project's ``settings`` stays that
project's), holds every module of the checkout, and its ``sitemap-crawler`` runs
with the project's settings and pipelines under the names configurations use."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

#: What the wheel is built from (the checkout's other files stay out of the build).
SOURCES = ("crawler", "pipelines", "settings", "pyproject.toml", "README.md")


def _run(*args: str | Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=120, **kwargs
    )
    assert done.returncode == 0, (args, done.stderr[-3000:])
    return done


@pytest.fixture(scope="module")
def installed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """The wheel, and a venv with it installed (``--no-index --no-deps``); the
    environment that lets the venv's Python import the dependencies from this one's
    site-packages (which holds no module of the project, only an editable finder that
    a path on PYTHONPATH does not run)."""
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy(ROOT / name, source / name)
    dist = tmp / "dist"
    # The build backend is this environment's setuptools: no network, no isolation.
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-w",
        dist,
        source,
    )
    (wheel,) = dist.glob("*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "-q",
        "--no-index",
        "--no-deps",
        wheel,
    )
    env = dict(os.environ, PYTHONPATH=sysconfig.get_paths()["purelib"])
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    yield wheel, venv, env


def test_the_wheel_holds_every_module_under_one_top_level_name(
    installed: tuple[Path, Path, dict[str, str]],
) -> None:
    wheel, _, _ = installed
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        top_level = z.read("sitemap_crawler-0.1.0.dist-info/top_level.txt").decode().split()
    assert top_level == ["crawler"]
    expected = {
        str(path.relative_to(ROOT))
        if path.parts[len(ROOT.parts)] == "crawler"
        else "crawler/" + str(path.relative_to(ROOT))
        for top in ("crawler", "pipelines", "settings")
        for path in (ROOT / top).rglob("*.py")
    }
    assert expected - names == set(), "modules of the checkout missing from the wheel"
    assert {name.split("/")[0] for name in names} == {"crawler", "sitemap_crawler-0.1.0.dist-info"}


def test_another_projects_settings_module_stays_its_own(
    installed: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    _, venv, env = installed
    (tmp_path / "settings.py").write_text('WHOSE = "theirs"\n')
    (tmp_path / "pipelines.py").write_text('WHOSE = "theirs"\n')
    check = (
        "import settings, pipelines\n"
        "assert settings.WHOSE == pipelines.WHOSE == 'theirs', settings.__file__\n"
        # The crawler's package imported beside them leaves them alone, and its own
        # are apart.
        "import importlib, crawler, crawler.settings\n"
        "assert importlib.import_module('settings').WHOSE == 'theirs'\n"
        "assert importlib.import_module('pipelines').WHOSE == 'theirs'\n"
        "assert crawler.settings is not settings and crawler.settings.ITEM_PIPELINES\n"
        "print('theirs')\n"
    )
    out = _run(venv / "bin" / "python", "-c", check, cwd=tmp_path, env=env)
    assert out.stdout.strip() == "theirs"


def test_the_installed_names_configurations_use(
    installed: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """Where no other module has the names, ``settings`` and ``pipelines.*`` (Scrapy's
    ``setmodule("settings")``, ``ITEM_PIPELINES`` paths) are the installed modules,
    each one module under both names."""
    _, venv, env = installed
    check = (
        "import importlib\n"
        "from scrapy.settings import Settings\n"
        "from scrapy.utils.misc import load_object\n"
        "import crawler\n"
        "import settings, crawler.settings, pipelines.rules, crawler.pipelines.rules\n"
        "assert settings is crawler.settings and pipelines.rules is crawler.pipelines.rules\n"
        "s = Settings(); s.setmodule('settings')\n"
        "for path in s.getdict('ITEM_PIPELINES'):\n"
        "    assert load_object(path).__module__.startswith('crawler.pipelines.'), path\n"
        "print(len(s.getdict('ITEM_PIPELINES')))\n"
    )
    out = _run(venv / "bin" / "python", "-c", check, cwd=tmp_path, env=env)
    assert int(out.stdout) >= 5
    # The command, from anywhere: its help, which reads the settings' defaults.
    helped = _run(venv / "bin" / "sitemap-crawler", "crawl", "--help", cwd=tmp_path, env=env)
    assert "--max-pages" in helped.stdout
    assert _run(venv / "bin" / "sitemap-crawler", "--help", cwd=tmp_path, env=env).stdout
