"""The dependency direction: workbook -> autograder, solutions, narration; never back up."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package -> packages it must never import
FORBIDDEN = {
    "solutions": {"autograder", "narration", "workbook"},
    "autograder": {"workbook", "narration", "solutions"},
    "narration": {"workbook", "autograder", "solutions"},
}


def imported_top_level(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_never_imports_upward(package: str) -> None:
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_top_level(path) & FORBIDDEN[package]
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert not offenders, f"{package} must not import {sorted(FORBIDDEN[package])}: {offenders}"
