"""Write answers into a release notebook, as a learner would: for dry runs and benchmarks.

    notebook = json.loads(Path("ch05.ipynb").read_text())
    filled = fill_answers(notebook, {"5.1": "answer_5_1 = 25", "5.5": "bug_line_5_5 = 6\\n..."})

An instructor can fabricate a few submissions this way to try ``workbook grade`` before
the real ones come in; the test suite and the benchmark fabricate whole classes with it.
Answer cells are found by their exercise metadata (or nbgrader's ``answer_N_M`` grade
id), so it works on learner notebooks and on nbgrader's released student versions alike.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from autograder.grading.model import METADATA_KEY


def answer_exercise(cell: Mapping[str, Any]) -> str:
    """The exercise whose answer cell this is, or ""."""
    metadata = cell.get("metadata", {})
    meta = metadata.get(METADATA_KEY, {})
    if isinstance(meta, Mapping) and meta.get("role") == "answer":
        return str(meta.get("exercise", ""))
    nbgrader = metadata.get("nbgrader", {})
    grade_id = nbgrader.get("grade_id", "") if isinstance(nbgrader, Mapping) else ""
    if isinstance(grade_id, str) and grade_id.startswith("answer_"):
        return grade_id.removeprefix("answer_").replace("_", ".")
    return ""


def fill_answers(notebook: Mapping[str, Any], answers: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``notebook`` whose answer cells hold ``answers`` (exercise id -> source);
    KeyError if an exercise has no answer cell."""
    filled = copy.deepcopy(dict(notebook))
    left = set(answers)
    for cell in filled.get("cells", []):
        exercise = answer_exercise(cell)
        if exercise in answers:
            cell["source"] = answers[exercise]
            left.discard(exercise)
    if left:
        raise KeyError(f"no answer cell for exercise(s) {', '.join(sorted(left))}")
    return filled
