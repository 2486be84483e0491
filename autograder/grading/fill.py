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

from autograder.cell_metadata import answer_exercise


def fill_answers(notebook: Mapping[str, Any], answers: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``notebook`` whose answer cells hold ``answers`` (exercise id -> source);
    KeyError if an exercise has no answer cell."""
    filled = copy.deepcopy(dict(notebook))
    left = set(answers)
    for cell in filled.get("cells", []):
        metadata = cell.get("metadata", {})
        exercise = answer_exercise(metadata if isinstance(metadata, Mapping) else {})
        if exercise in answers:
            cell["source"] = answers[exercise]
            left.discard(exercise)
    if left:
        raise KeyError(f"no answer cell for exercise(s) {', '.join(sorted(left))}")
    return filled
