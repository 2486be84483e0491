"""Every notebook runs top to bottom in a fresh kernel.

Learner notebooks must run with nothing answered and raise nothing ("Run all" works);
instructor notebooks run in grading mode, where any check that is not passed by the
reference solution raises, so executing them proves every solution passes its check.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from workbook.build.notebooks import instructor_path, learner_path
from workbook.outline import CHAPTERS

pytestmark = pytest.mark.slow


def execute(path: Path, workdir: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return nb


def errors_in(nb: nbformat.NotebookNode) -> list[str]:
    return [f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKBOOK_HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_learner_notebook_runs_unanswered(chapter, isolated_home: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in ("NBGRADER_EXECUTION", "WORKBOOK_GRADING"):
        monkeypatch.delenv(flag, raising=False)
    nb = execute(learner_path(chapter), isolated_home)
    assert errors_in(nb) == []
    checks = [c for c in nb.cells if c.metadata.get("workbook", {}).get("role") == "check"]
    text = "".join(str(o.get("data", {}).get("text/plain", "")) for c in checks
                   for o in c.outputs)
    assert "Not answered yet" in text


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_instructor_solutions_pass_every_check(chapter, isolated_home: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_GRADING", "1")
    nb = execute(instructor_path(chapter), isolated_home)
    assert errors_in(nb) == []
