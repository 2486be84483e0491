"""No module imports one that imports it back, not even under ``TYPE_CHECKING``: inside a
package, a file read by others sits below them (docs/decisions.md, "The map")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("solutions", "autograder", "narration", "workbook")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The project's modules ``path`` imports anywhere in it (type-checking blocks and
    function bodies included); ``from package import module`` counts as the module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in known:
                found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if f"{node.module}.{alias.name}" in known)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    known = set(paths)
    # a package's __init__ gathers its modules' names: an edge into it is not a cycle
    return {name: {m for m in _imports(path, known) if path.name != "__init__.py"
                   and paths[m].name != "__init__.py"} for name, path in paths.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (its modules in order), or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_cycle_finder_finds_a_cycle_and_no_false_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_one_that_imports_it_back(package: str) -> None:
    graph = _graph()
    inside = {name: {m for m in deps if m.split(".")[0] == package}
              for name, deps in graph.items() if name.split(".")[0] == package}
    assert _cycle(inside) == []
