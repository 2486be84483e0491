"""The step-time model and the planner as packages: public names, module paths, load order.

The planner's memory and validity rules sit below the step-time model, its search and
costs above it. Each module imports its neighbours by module path, and
``solutions.performance`` loads the planner first; these tests load every module alone in
a fresh interpreter, so an import that only works in one order fails here.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "solutions.performance": ("flops", "comm", "stage", "model", "fit", "validation"),
    "solutions.planner": ("memory", "traffic", "validity", "search", "costs"),
}
MODULES = [f"{package}.{name}" for package, names in PACKAGES.items() for name in names]
OLD_FLAT = ("performance_flops", "performance_comm", "performance_fit", "performance_validation",
            "planner_memory", "planner_comm", "planner_validate", "planner_search")


def fresh_import(statement: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", statement], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("statement", [
    "import solutions.performance",
    "import solutions.planner",
    "import solutions.performance, solutions.planner",
    "import solutions.planner, solutions.performance",
    *(f"import {module}" for module in MODULES),
    "from solutions.performance import estimate",
    "from solutions.planner import recommend",
])
def test_each_module_imports_alone_in_a_fresh_interpreter(statement: str) -> None:
    done = fresh_import(statement)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_package_exports_exactly_its_all(package: str) -> None:
    module = importlib.import_module(package)
    assert len(module.__all__) == len(set(module.__all__))
    for name in module.__all__:
        value = getattr(module, name)  # AttributeError names a missing export
        home = getattr(value, "__module__", None)
        if home is not None and home.startswith(package + "."):
            assert getattr(importlib.import_module(home), name) is value


def test_names_the_course_imports_from_the_packages() -> None:
    from solutions import performance, planner
    from solutions.performance import model
    from solutions.planner import costs, search, validity
    assert performance.estimate is model.estimate
    assert performance.StepEstimate is model.StepEstimate
    assert planner.recommend is search.recommend and planner.why_faster is search.why_faster
    assert planner.validate is validity.validate and planner.rejections is validity.rejections
    assert planner.step_time_s is costs.step_time_s and planner.plan is costs.plan


@pytest.mark.parametrize("name", OLD_FLAT)
def test_no_flat_module_is_left_behind(name: str) -> None:
    assert importlib.util.find_spec(f"solutions.{name}") is None
    assert not (ROOT / "solutions" / f"{name}.py").exists()


def _package_imports(path: Path) -> list[tuple[str, str]]:
    """(package, name) for every ``from solutions.<package> import name`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in PACKAGES:
            found += [(node.module, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("module", MODULES)
def test_modules_import_their_neighbours_by_module_path(module: str) -> None:
    # A name taken from a package's __init__ may not be bound yet while the other package
    # is loading; a module (``from solutions.performance import flops``) always is.
    path = ROOT / Path(*module.split(".")).with_suffix(".py")
    through_init = [f"from {package} import {name}" for package, name in _package_imports(path)
                    if name not in PACKAGES[package]]
    assert not through_init, f"{module} imports names through a package: {through_init}"


def test_star_imports_are_not_used_in_the_packages() -> None:
    for package in PACKAGES:
        for path in (ROOT / Path(*package.split("."))).glob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            stars = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     and any(alias.name == "*" for alias in node.names)]
            assert not stars, f"{path.name}: from {stars} import *"
