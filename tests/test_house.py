"""The shape of the package, held as tests: rooms of a readable size, no import cycle, nothing
shipped that no entry point reaches, and the tests mirroring the package.

Imports are read by grimp (the graph import-linter checks its contracts on), every import
counted: at the top of a module, inside functions, and under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

from tests.conftest import REPO

PACKAGE = REPO / "pipeline"
ENTRY_POINTS = (
    "pipeline.cli",
    "pipeline.cli.__main__",
    "pipeline.api",
    "pipeline.service.app",
    "pipeline.__main__",
)
# Packages of data files, read with importlib.resources rather than imported.
RESOURCES = ("pipeline.data", "pipeline.sandbox.data")
MOST_MODULES = 12
MOST_LINES = 450


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("pipeline", cache_dir=None)


def _folders() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.is_dir() and (p / "__init__.py").exists())


def test_no_folder_holds_more_than_twelve_modules() -> None:
    crowded = {
        str(folder.relative_to(REPO)): n
        for folder in _folders()
        if (n := len(list(folder.glob("*.py")))) > MOST_MODULES
    }
    assert crowded == {}


def test_no_module_is_over_450_lines() -> None:
    long = {
        str(path.relative_to(REPO)): n
        for path in PACKAGE.rglob("*.py")
        if (n := sum(1 for line in path.read_text().splitlines() if line.strip())) > MOST_LINES
    }
    assert long == {}


def test_no_import_cycle(graph: grimp.ImportGraph) -> None:
    cycles = _cycles({m: graph.find_modules_directly_imported_by(m) for m in graph.modules})
    assert cycles == []


def test_every_shipped_module_is_reached_from_an_entry_point(graph: grimp.ImportGraph) -> None:
    reached = set(ENTRY_POINTS)
    for entry in ENTRY_POINTS:
        reached |= graph.find_upstream_modules(entry, as_package=False)
    # A module reached is reached through its packages too.
    reached |= {m.rsplit(".", depth)[0] for m in reached for depth in range(1, m.count(".") + 1)}
    assert sorted(graph.modules - reached - set(RESOURCES)) == []


def test_every_package_folder_has_its_mirror_of_tests() -> None:
    missing = []
    for folder in _folders():
        if not any(p.name != "__init__.py" for p in folder.glob("*.py")):
            continue
        mirror = REPO / "tests" / folder.relative_to(PACKAGE)
        if not list(mirror.glob("test_*.py")):
            missing.append(str(mirror.relative_to(REPO)))
    assert missing == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("stage", ["read", "normalize", "domains", "verify", "write"])
def test_the_architecture_page_names_each_stages_folder_and_its_step(stage: str) -> None:
    """docs/architecture.md: one folder a stage, and the folder holds the frame step it names."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith(f"| {stage} |"))
    folder, step = (cell.strip() for cell in row.split("|")[2:4])
    path = REPO / folder.strip("`")
    module, name = step.split(":")[0].strip("` "), step.split("`")[3].split(".")[-1]
    assert path.is_dir()
    assert f"def {name}(" in (path / module).read_text(encoding="utf-8")
