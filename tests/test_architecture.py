"""The stages of docs/architecture.md, held against the code's imports.

crawler/ is grouped by stage; a page flows through them in this order, and a module
may import only from its own stage or an earlier one: never from a later stage,
whether at the top of the module, under ``TYPE_CHECKING`` or inside a function (an
import inside a function is allowed to put off a heavy or optional dependency, never
to dodge a cycle). No two modules import each other, directly or round a circle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The stages, in the order a crawl flows through them (docs/architecture.md).
STAGES = [
    "crawler.core",
    "crawler.sitemaps",
    "crawler.page",
    "crawler.ledger",
    "crawler.fetch",
    "crawler.crawl",
    "pipelines",
    "crawler.publish",
    "crawler.audit",
    "crawler.distributed",
    "crawler.commands",
    "crawler.cli",
    "crawler.api",
]
#: Read by every stage: the package's version and the settings module.
EVERYWHERE = {"crawler", "settings"}


def _modules() -> dict[str, Path]:
    found = {}
    for top in ("crawler", "pipelines", "settings"):
        for path in sorted((ROOT / top).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _target(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path) -> set[str]:
    """Every project module *path* imports, wherever the import stands."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for n in names:
            if (t := _target(n)) is not None:
                out.add(t)
    return out


def _stage(module: str) -> int | None:
    for i, stage in enumerate(STAGES):
        if module == stage or module.startswith(stage + "."):
            return i
    return None


GRAPH = {m: _imports(p) - {m} for m, p in MODULES.items()}


def test_every_module_belongs_to_a_stage() -> None:
    loose = [m for m in MODULES if _stage(m) is None and m not in EVERYWHERE]
    assert loose == [], "modules outside every stage: add them to a stage (and the docs)"


def test_no_module_imports_from_a_later_stage() -> None:
    backwards = []
    for module, targets in GRAPH.items():
        here = _stage(module)
        for target in sorted(targets - EVERYWHERE):
            there = _stage(target)
            if here is not None and there is not None and there > here:
                backwards.append(f"{module} -> {target}")
    assert backwards == []


def test_no_import_circles() -> None:
    # Tarjan's strongly connected components over every import.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v] - EVERYWHERE:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert circles == []


def test_the_architecture_page_names_the_stages_in_order() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = re.findall(r"^\d+\. \*\*`([\w/.]+?)/?`\*\*", text, re.M)
    modules = {s for s in STAGES if s in MODULES and MODULES[s].name != "__init__.py"}
    assert found == [s.replace(".", "/") + (".py" if s in modules else "") for s in STAGES]


def test_the_architecture_page_names_every_module() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for module, path in MODULES.items():
        if path.name == "__init__.py" or module.startswith("settings"):
            continue
        if path.relative_to(ROOT).as_posix() not in text and f"`{path.name}`" not in text:
            missing.append(path.relative_to(ROOT).as_posix())
    assert missing == [], "docs/architecture.md names no room for these modules"
