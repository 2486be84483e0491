"""Notebooks are built from their sources: complete, in sync, and nbgrader-shaped."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import workbook
from workbook.build.notebooks import (
    build,
    build_chapter,
    instructor_path,
    learner_path,
    source_path,
)
from workbook.build.source import SourceError, parse
from workbook.outline import CHAPTERS

BUILT = {c.number: build_chapter(c) for c in CHAPTERS}


def exercise_ids_in(nb: dict) -> list[str]:
    return [c.metadata["workbook"]["exercise"] for c in nb.cells
            if c.metadata.get("workbook", {}).get("role") == "check"]


def test_committed_notebooks_match_their_sources() -> None:
    stale = build(check=True)
    assert not stale, f"run `workbook build`: stale notebooks {stale}"


def test_every_exercise_appears_in_exactly_one_notebook() -> None:
    seen = Counter(i for built in BUILT.values() for i in exercise_ids_in(built.learner))
    ids = [r.id for r in workbook.exercises()]
    assert {i: n for i, n in seen.items() if n != 1} == {}
    assert set(ids) <= set(seen), f"missing: {sorted(set(ids) - set(seen))}"
    for number, built in BUILT.items():
        assert all(i.startswith(f"{number}.") for i in exercise_ids_in(built.learner))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_learner_notebook_shape(chapter) -> None:
    nb = json.loads(learner_path(chapter).read_text())
    assert "do not edit" in "".join(nb["cells"][0]["source"])
    assert nb["metadata"]["workbook"]["chapter"] == chapter.number
    assert all(not c.get("outputs") and not c.get("execution_count")
               for c in nb["cells"] if c["cell_type"] == "code")
    sources = ["".join(c["source"]) for c in nb["cells"]]
    assert "### BEGIN SOLUTION" not in "\n".join(sources)
    assert any("wb.prediction_lock" in s for s in sources)
    assert any("wb.progress()" in s for s in sources)
    assert sum("wb.narration(" in s for s in sources) >= 5


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_instructor_notebook_has_nbgrader_metadata(chapter) -> None:
    nb = json.loads(instructor_path(chapter).read_text())
    grade_ids = [c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"]]
    assert len(grade_ids) == len(set(grade_ids)), "grade ids must be unique"
    for cell in nb["cells"]:
        meta = cell["metadata"]["nbgrader"]
        assert meta["schema_version"] == 3
        role = cell["metadata"].get("workbook", {}).get("role")
        if role == "answer":
            assert meta["solution"] and not meta["locked"]
            assert "### BEGIN SOLUTION" in "".join(cell["source"])
        elif role == "check":
            assert meta["grade"] and meta["locked"] and meta["points"] >= 1
        else:
            assert meta["locked"] and not meta["grade"] and not meta["solution"]


def test_narration_keys_used_exist_and_all_are_used() -> None:
    from narration.scripts import keys

    used = set()
    for chapter in CHAPTERS:
        for block in parse(source_path(chapter).read_text()):
            if block.name == "narration":
                used.add(block.arg)
    assert used == set(keys())


def test_source_errors_name_the_line() -> None:
    with pytest.raises(SourceError, match=r"x\.md:2: unknown directive"):
        parse("text\n```{nonsense} 1\n```\n", origin="x.md")
    with pytest.raises(SourceError, match="never closed"):
        parse("```{exercise} 0.1\n", origin="x.md")
