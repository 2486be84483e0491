"""A learner's set-up is a learner's: `make lab` installs no test tool and serves no solution,
and the README's terminal commands work as written after it.

(The install itself was measured on a fresh clone: `make lab` 419 MB and 105 packages,
against 774 MB and 126 with the test tools.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
TEST_TOOLS = ("pytest", "playwright", "mypy", "nbgrader", "ruff", "hypothesis", "nbclient")


def _make_dry_run(target: str) -> str:
    """The commands `make <target>` would run in a clone without a .venv."""
    done = subprocess.run(["make", "-n", "-B", target, "VENV=/nonexistent/venv"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return done.stdout


def test_the_lab_extra_holds_no_test_tool() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = [re.split(r"[<>=\[ ;]", req)[0].lower() for req in extras["lab"]]
    assert not set(names) & set(TEST_TOOLS), names
    assert "jupyterlab" in names and "ipykernel" in names
    assert "notebook" in names  # Notebook 7's /tree, served by the same server


@pytest.mark.skipif(subprocess.run(["which", "make"], capture_output=True).returncode != 0,
                    reason="make is not installed")
def test_make_lab_installs_the_lab_extra_and_serves_the_learner_folder() -> None:
    commands = _make_dry_run("lab")
    installs = re.findall(r'pip install[^\n]*"\.\[([^\]]*)\]"', commands)
    assert installs == ["lab"], installs
    serve = next(line for line in commands.splitlines() if "root_dir" in line)
    folder = serve.split("root_dir=")[1].split()[0]
    assert "instructor" not in folder and folder != "workbook/notebooks"
    assert "cp \"$nb\"" in commands and "workbook/notebooks/*.ipynb" in commands
    assert "instructor" not in commands


@pytest.mark.skipif(subprocess.run(["which", "make"], capture_output=True).returncode != 0,
                    reason="make is not installed")
def test_make_test_keeps_the_test_extra() -> None:
    assert '".[test,lab]"' in _make_dry_run("test")


def test_readme_terminal_commands_say_where_workbook_lives() -> None:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert ".venv/bin/workbook" in quickstart and "source .venv/bin/activate" in quickstart
    using = readme.split("## Using it", 1)[1].split("\n## ", 1)[0]
    first_terminal = using.index("`workbook check")
    assert "activate" in using[:first_terminal] or ".venv/bin/" in using[:first_terminal]


@pytest.mark.skipif(subprocess.run(["which", "make"], capture_output=True).returncode != 0,
                    reason="make is not installed")
def test_make_instructor_installs_the_package_and_the_sandbox() -> None:
    """The instructors' guide's one set-up command: the package (its `workbook` command),
    and bubblewrap through the system packages script; no test tool."""
    commands = _make_dry_run("instructor")
    assert re.findall(r'pip install[^\n]*"\.\[([^\]]*)\]"', commands) == ["lab"]
    assert "install-system-deps.sh" in commands and "workbook --help" in commands
    guide = (ROOT / "docs" / "instructors.md").read_text()
    assert "make instructor" in guide and "pip install distributed-training-workbook" not in guide


def test_make_lab_saves_the_widgets_state_with_a_notebook() -> None:
    # without it a reopened notebook shows "model not found" for every card until re-run
    commands = _make_dry_run("lab")
    assert "share/jupyter/lab/settings/overrides.json" in commands
    overrides = json.loads((ROOT / "scripts" / "lab_settings_overrides.json").read_text())
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"]["saveState"] is True
