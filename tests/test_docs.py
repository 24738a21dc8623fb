"""The docs against the code: the reference, the ledger page, README's limits, links.

- docs/reference.md documents every option of every command (in that command's
  section) and every ``SITEMAP_*`` setting with its default, and nothing that is not
  in the code;
- docs/ledger.md documents every table and column of the ledger's schema and every
  decision; docs/audit.md every class and flag of the audit;
- README.md stays a front door (under README_MAX_LINES lines) and keeps the
  install, crawl and test commands;
- every relative link of README.md, docs/*.md and bench/README.md points to a file
  (and heading) that exists.

Only files are read and modules imported: no server, no crawl.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import settings
from crawler.cli import COMMANDS, command_parser
from crawler.commands.declarations import Option
from crawler.core.decisions import FINAL_DECISIONS, QUEUED
from crawler.ledger import ledger, records

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
REFERENCE = DOCS / "reference.md"
LEDGER_DOC = DOCS / "ledger.md"
AUDIT_DOC = DOCS / "audit.md"
README_MAX_LINES = 260
SETTINGS_SECTION = "SITEMAP_* settings"
SETTING_NAME = re.compile(r"\bSITEMAP_[A-Z0-9_*]*[A-Z0-9*]")
OPTION = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)


# -- reading Markdown -------------------------------------------------------------------


def without_code_blocks(text: str) -> str:
    return FENCE.sub("", text)


def sections(path: Path, level: int = 2) -> dict[str, str]:
    """The sections of *path* at heading *level*, by heading text (outside code)."""
    text = without_code_blocks(path.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    parts = re.split(rf"^{'#' * level}[ \t]+(.+?)[ \t]*$", text, flags=re.M)
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        # A deeper heading does not end the section; one as high or higher does.
        end = re.search(rf"^#{{1,{level - 1}}}[ \t]", body, re.M) if level > 1 else None
        found[title.strip()] = body[: end.start()] if end else body
    return found


def section(path: Path, title: str) -> str:
    found = sections(path)
    assert title in found, f"{path.relative_to(ROOT)}: no section '## {title}'"
    return found[title]


def cells(line: str) -> list[str]:
    """The cells of a table row; ``\\|`` is a pipe inside a cell."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def tables(text: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    """(header cells, rows) of every table in *text*."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) - 1:
        if lines[i].lstrip().startswith("|") and re.fullmatch(
            r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*", lines[i + 1]
        ):
            header = [c.lower() for c in cells(lines[i])]
            rows = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            yield header, rows
        else:
            i += 1


def rows_of(text: str, first_column: str) -> list[dict[str, str]]:
    """The rows, as {column: cell}, of the tables in *text* whose first column is
    named *first_column*."""
    return [
        dict(zip(header, row, strict=False))
        for header, rows in tables(text)
        if header and header[0] == first_column
        for row in rows
    ]


def code_names(cell: str) -> list[str]:
    """The names in backticks in *cell* (``\\`a\\`, \\`b\\``)."""
    return re.findall(r"`([^`]+)`", cell)


# -- docs/reference.md: commands and options ----------------------------------------------


def parser_options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option not in ("-h", "--help")
    }


def documented_options(command: str) -> list[dict[str, str]]:
    return rows_of(section(REFERENCE, f"sitemap-crawler {command}"), "option")


@pytest.mark.parametrize("command", [module.NAME for module in COMMANDS])
def test_reference_documents_every_option(command: str) -> None:
    in_code = parser_options(command_parser(command))
    rows = documented_options(command)
    documented = {option for row in rows for option in OPTION.findall(row["option"])}
    missing = sorted(in_code - documented)
    unknown = sorted(documented - in_code)
    where = f"docs/reference.md, section 'sitemap-crawler {command}'"
    assert not missing, f"{where}: options of the parser not documented: {missing}"
    assert not unknown, f"{where}: documented options the parser does not have: {unknown}"


@pytest.mark.parametrize("command", [module.NAME for module in COMMANDS])
def test_reference_gives_each_options_own_default(command: str) -> None:
    """An option whose parser default is a value (not None, off or empty) says so."""
    rows = {
        option: row
        for row in documented_options(command)
        for option in OPTION.findall(row["option"])
    }
    wrong = []
    for action in command_parser(command)._actions:
        default = action.default
        if not action.option_strings or default in (None, False, [], argparse.SUPPRESS):
            continue
        row = rows.get(action.option_strings[-1])
        if row is not None and f"`{default}`" not in row.get("default", ""):
            wrong.append(f"{action.option_strings[-1]}: `{default}` (docs: {row.get('default')!r})")
    assert not wrong, (
        f"docs/reference.md, section 'sitemap-crawler {command}': defaults differ from "
        f"the parser's: {wrong}"
    )


@pytest.mark.parametrize("command", [module.NAME for module in COMMANDS])
def test_reference_shows_each_option_as_declared(command: str) -> None:
    """Each option's row has its value as declared (``--max-pages N``) and names the
    setting the option sets, or says it is as ``crawl``'s: a declaration changed in
    crawler/commands/declarations.py without this page following fails here."""
    rows = {
        option: row
        for row in documented_options(command)
        for option in OPTION.findall(row["option"])
    }
    wrong = []
    for option in declared(command):
        row = rows.get(option.flag)
        if row is None:  # test_reference_documents_every_option says so
            continue
        if option.metavar and f"{option.flag} {option.metavar}" not in row["option"]:
            wrong.append(f"{option.flag}: {row['option']!r}, declared {option.metavar!r}")
        as_crawl = re.search(r"\bas (for )?`crawl`", row["meaning"])
        named = re.search(rf"`{option.setting}\b", row["meaning"])
        if option.setting and not named and not as_crawl:
            wrong.append(f"{option.flag}: its row does not name {option.setting}")
    where = f"docs/reference.md, section 'sitemap-crawler {command}'"
    assert not wrong, f"{where}: rows differ from the declarations: {wrong}"


def test_reference_has_a_section_per_command_and_no_other() -> None:
    names = {module.NAME for module in COMMANDS}
    documented = {
        title.removeprefix("sitemap-crawler ").strip()
        for title in sections(REFERENCE)
        if title.startswith("sitemap-crawler ")
    }
    assert documented == names, (
        f"docs/reference.md: command sections {sorted(documented)}, commands {sorted(names)}"
    )


# -- docs/reference.md: settings ---------------------------------------------------------


SETTINGS: dict[str, Any] = {
    name: value for name, value in vars(settings).items() if name.startswith("SITEMAP_")
}


def settings_rows() -> dict[str, dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    duplicated = []
    for row in rows_of(section(REFERENCE, SETTINGS_SECTION), "setting"):
        for name in code_names(row["setting"]):
            if name in rows:
                duplicated.append(name)
            rows[name] = row
    assert not duplicated, f"docs/reference.md: settings documented twice: {duplicated}"
    return rows


def test_reference_documents_every_setting() -> None:
    rows = settings_rows()
    missing = sorted(set(SETTINGS) - set(rows))
    unknown = sorted(set(rows) - set(SETTINGS))
    where = f"docs/reference.md, section '{SETTINGS_SECTION}'"
    assert not missing, f"{where}: settings of settings/__init__.py not documented: {missing}"
    assert not unknown, f"{where}: documented settings settings/__init__.py lacks: {unknown}"


def comparable(value: Any) -> bool:
    """Whether *value* can be written as a Python literal and read back."""
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError):
        return False


def test_reference_gives_each_settings_default() -> None:
    wrong = []
    for name, row in settings_rows().items():
        value = SETTINGS.get(name)
        if name not in SETTINGS or not comparable(value):
            continue
        cell = row.get("default", "")
        literal = re.match(r"\s*`([^`]*)`", cell)
        try:
            documented = ast.literal_eval(literal.group(1)) if literal else None
        except (ValueError, SyntaxError):
            wrong.append(f"{name}: {cell!r} is not a Python literal (the code has {value!r})")
            continue
        if literal is None or type(documented) is not type(value) or documented != value:
            wrong.append(f"{name}: docs {cell!r}, code `{value!r}`")
    assert not wrong, (
        f"docs/reference.md: setting defaults differ from settings/__init__.py: {wrong}"
    )


def doc_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md")), ROOT / "bench" / "README.md"]


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_name_only_settings_that_exist(path: Path) -> None:
    """A SITEMAP_* name anywhere in the docs (``SITEMAP_REDIS_*`` patterns aside) is a
    setting of settings/__init__.py: a renamed setting leaves no stale name behind."""
    names = {n for n in SETTING_NAME.findall(path.read_text(encoding="utf-8")) if "*" not in n}
    unknown = sorted(names - set(SETTINGS))
    assert not unknown, f"{path.relative_to(ROOT)} names settings that do not exist: {unknown}"


# -- defaults written once: settings/__init__.py ---------------------------------------

CRAWLING_COMMANDS = ("crawl", "audit")


def declared(command: str) -> list[Option]:
    (module,) = [module for module in COMMANDS if command == module.NAME]
    return list(module.OPTIONS)


#: The options whose default is a setting's, which their help and docs/reference.md
#: give (the test below changes each one).
OPTION_DEFAULTS = {
    option.flag: option.setting
    for command in CRAWLING_COMMANDS
    for option in declared(command)
    if option.setting and (option.from_setting or "{" + option.setting in option.help)
}


def sentinel(value: Any) -> Any:
    """A default no text holds, of *value*'s type."""
    return 97531 if isinstance(value, int | float) else "zq-default"


def expanded_help(parser: argparse.ArgumentParser, option: str) -> str:
    for action in parser._actions:
        if option in action.option_strings:
            return parser._get_formatter()._expand_help(action)
    raise KeyError(option)


def states_default(text: str, value: Any) -> bool:
    """Whether *text* says "default ... *value*" (within a clause)."""
    shown = re.escape(str(value))
    return bool(
        re.search(rf"\bdefault\b[^.;|\n]{{0,40}}?(?<![\w.,`-])`?{shown}`?(?![\w,]|\.\d)", text)
    )


@pytest.mark.parametrize("option", sorted(OPTION_DEFAULTS))
def test_help_takes_each_default_from_settings(
    option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Change the default in settings/__init__.py alone: ``--help`` follows, and
    keeps no copy of the old value."""
    name = OPTION_DEFAULTS[option]
    old = getattr(settings, name)
    monkeypatch.setattr(settings, name, sentinel(old))
    for command in CRAWLING_COMMANDS:
        parser = command_parser(command)
        if option not in parser_options(parser):
            continue
        text = expanded_help(parser, option)
        assert str(sentinel(old)) in text, f"{command} {option}: help {text!r} ignores {name}"
        assert not states_default(text, old), f"{command} {option}: help {text!r} keeps {old!r}"
        if parser.get_default(option.lstrip("-").replace("-", "_")) is not None:
            assert parser.get_default(option.lstrip("-").replace("-", "_")) == sentinel(old)


def test_explains_state_follows_the_out_default(monkeypatch: pytest.MonkeyPatch) -> None:
    (row,) = [r for r in documented_options("explain") if "--state" in r["option"]]
    assert f"`{settings.SITEMAP_OUT_DIR}.sitemap-state`" in row["default"], row
    monkeypatch.setattr(settings, "SITEMAP_OUT_DIR", "zq-out")
    assert "zq-out.sitemap-state" in expanded_help(command_parser("explain"), "--state")


@pytest.mark.parametrize("command", CRAWLING_COMMANDS)
def test_reference_gives_the_settings_default_of_each_option(command: str) -> None:
    """The default column of an option that takes a setting's default is that
    setting's value in settings/__init__.py."""
    wrong = []
    for row in documented_options(command):
        for option in OPTION.findall(row["option"]):
            if option in OPTION_DEFAULTS:
                value = getattr(settings, OPTION_DEFAULTS[option])
                shown = f"{value:g}" if isinstance(value, float) else value
                if f"`{shown}`" not in row.get("default", ""):
                    wrong.append(f"{option}: docs {row.get('default')!r}, settings `{value}`")
    assert not wrong, f"docs/reference.md, section 'sitemap-crawler {command}': {wrong}"


def prose(path: Path) -> str:
    """*path* without its code blocks and without reference.md's tables (checked
    against the code above)."""
    text = without_code_blocks(path.read_text(encoding="utf-8"))
    if path == REFERENCE:
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("|"))
    return text


def copied_defaults() -> dict[str, Any]:
    """The defaults a text could copy: every option's, and every setting's that is a
    number of two digits or more or a word."""
    found = {name: getattr(settings, name) for name in OPTION_DEFAULTS.values()}
    for name, value in SETTINGS.items():
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            continue
        if len(str(value)) >= 2:
            found[name] = value
    return found


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_copy_no_default(path: Path) -> None:
    """README and docs say "default" next to no setting's value: the reference's
    tables are the one written copy (checked above), so changing a default in
    settings/__init__.py leaves nothing stale."""
    text = prose(path)
    copies = [
        f"{name} ({value!r})"
        for name, value in copied_defaults().items()
        if states_default(text, value)
    ]
    assert not copies, f"{path.relative_to(ROOT)} copies these defaults: {copies}"


#: "`SITEMAP_X` (40)", "(10%)", "(15 s)", "(24 hours)": a setting's value quoted in prose.
QUOTED = re.compile(
    r"`(SITEMAP_[A-Z0-9_]+)`\s*\((\d[\d_,.]*)\s*(%|s|seconds?|minutes?|hours?|days?)?[),;]"
)
UNITS = {"%": 0.01, "s": 1, "second": 1, "minute": 60, "hour": 3600, "day": 86400}


def quoted_values(text: str) -> Iterator[tuple[str, float]]:
    """(setting, the value the text gives it) of every setting quoted with a value."""
    for match in QUOTED.finditer(text):
        unit = (match.group(3) or "").rstrip("s") or ("s" if match.group(3) == "s" else "")
        number = float(match.group(2).replace(",", "").replace("_", ""))
        yield match.group(1), number * UNITS.get(unit, 1)


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_quote_each_setting_with_its_value(path: Path) -> None:
    """A setting quoted with its value in prose ("`SITEMAP_MAX_REDIRECTS` (10)") has
    that value in settings/__init__.py: changing it there makes this test name
    every copy to follow."""
    text = path.read_text(encoding="utf-8")
    stale = [
        f"{name}: {value:g} (settings: {SETTINGS.get(name)!r})"
        for name, value in quoted_values(text)
        if not isinstance(SETTINGS.get(name), (int, float)) or abs(SETTINGS[name] - value) > 1e-9
    ]
    assert not stale, f"{path.relative_to(ROOT)} quotes stale values: {stale}"


def test_a_changed_default_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above see a default changed in settings/__init__.py alone."""
    monkeypatch.setattr(settings, "SITEMAP_MAX_PAGES", 1234)
    with pytest.raises(AssertionError, match="--max-pages"):
        test_reference_gives_the_settings_default_of_each_option("crawl")
    assert states_default("fetch at most N pages (default 500000)", 500_000)
    assert states_default("the default `public`", "public")
    assert not states_default("default 8 per host, 16 in all", 6)
    assert list(
        quoted_values("`SITEMAP_MAX_DROP` (20%) and `SITEMAP_ROBOTS_MAX_AGE` (24 hours)")
    ) == [
        ("SITEMAP_MAX_DROP", 0.2),
        ("SITEMAP_ROBOTS_MAX_AGE", 86400),
    ]
    monkeypatch.setitem(SETTINGS, "SITEMAP_MAX_REDIRECTS", 11)
    with pytest.raises(AssertionError, match="SITEMAP_MAX_REDIRECTS"):
        test_docs_quote_each_setting_with_its_value(DOCS / "crawling.md")


# -- docs/ledger.md ----------------------------------------------------------------------


def schema_tables() -> dict[str, list[str]]:
    """{table: columns} of ``crawler.ledger.ledger.SCHEMA``."""
    found = {}
    for table, body in re.findall(
        r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\)", ledger.SCHEMA, re.S
    ):
        columns = []
        for line in body.splitlines():
            words = line.strip().rstrip(",").split()
            constraint = ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT")
            if words and not words[0].startswith("--") and words[0].upper() not in constraint:
                columns.append(words[0])
        found[table] = columns
    return found


def test_schema_parsed() -> None:
    tables_ = schema_tables()
    assert {"urls", "aliases", "meta"} <= set(tables_), sorted(tables_)
    assert tables_["urls"] == list(records.COLUMNS)


@pytest.mark.parametrize("table", sorted(schema_tables()))
def test_ledger_doc_documents_every_column(table: str) -> None:
    columns = schema_tables()[table]
    body = section(LEDGER_DOC, f"Table `{table}`")
    documented = {name for row in rows_of(body, "column") for name in code_names(row["column"])}
    missing = [c for c in columns if c not in documented]
    unknown = sorted(documented - set(columns))
    where = f"docs/ledger.md, section 'Table `{table}`'"
    assert not missing, f"{where}: columns of the ledger's SCHEMA not documented: {missing}"
    assert not unknown, f"{where}: documented columns the schema lacks: {unknown}"


def test_ledger_doc_documents_every_decision() -> None:
    decisions = {QUEUED, *FINAL_DECISIONS}
    rows = rows_of(section(LEDGER_DOC, "Decisions"), "decision")
    documented = {name for row in rows for name in code_names(row["decision"])}
    missing = sorted(decisions - documented)
    unknown = sorted(documented - decisions)
    assert not missing, f"docs/ledger.md, section 'Decisions': decisions not documented: {missing}"
    assert not unknown, f"docs/ledger.md, section 'Decisions': no such decisions: {unknown}"


def test_audit_doc_names_every_class_and_flag() -> None:
    try:
        from crawler.audit.report import CLASSES, FLAGS
    except ImportError:  # pragma: no cover  (before the audit became a package)
        from crawler.audit import CLASSES, FLAGS  # type: ignore[attr-defined,no-redef]
    text = AUDIT_DOC.read_text(encoding="utf-8")
    missing = [name for name in (*CLASSES, *FLAGS, "dead-orphan") if f"`{name}`" not in text]
    assert not missing, f"docs/audit.md does not name these audit classes or flags: {missing}"


# -- README.md ----------------------------------------------------------------------------

FRONT_DOOR = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]"',
    ".venv/bin/sitemap-crawler crawl example.com --out public/",
    ".venv/bin/pytest",
)


def test_readme_is_short() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines < README_MAX_LINES, (
        f"README.md has {lines} lines (limit {README_MAX_LINES}): move reference to docs/"
    )


def test_readme_gives_install_crawl_and_test_in_one_block() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = [m.group(0) for m in FENCE.finditer(text)]
    assert any(all(command in block for command in FRONT_DOOR) for block in blocks), (
        f"README.md: no code block holds the three commands {list(FRONT_DOOR)}"
    )


# -- links -------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    for match in HEADING.finditer(without_code_blocks(path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def relative_links(path: Path) -> Iterator[str]:
    text = CODE_SPAN.sub("", without_code_blocks(path.read_text(encoding="utf-8")))
    for target in LINK.findall(text):
        if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target):  # http:, https:, mailto:
            yield target


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files_that_exist(path: Path) -> None:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(
                f"{target} (no {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest})"
            )
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading #{anchor} in {dest.relative_to(ROOT)})")
    assert not broken, f"{path.relative_to(ROOT)}: broken links: {broken}"
