"""Partial credit from a real grading: a chapter 0 notebook whose function is right on some
of its test cases is graded in the sandbox, and the term's policies turn the row's score
into points. The expected fraction is counted here, by calling the learner's function and
the reference on the exercise's own test cases in this process, never read off the grader.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from autograder.grading import grade_folder
from autograder.grading.fill import fill_answers
from autograder.grading.totals import Handed
from autograder.kinds import Function
from workbook import grading
from workbook.instructor.adjust import apply_policies
from workbook.instructor.policies import parse_policies
from workbook.outline import CHAPTERS
from workbook.paths import learner_path
from workbook.records import printed

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

# Right for every input it accepts, but it never refuses an impossible one (0 GPUs, a
# negative size): the reference raises ValueError there, so those cases fail.
NO_CHECKS = '''
def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
    n = int(n_gpus)
    return 2 * (n - 1) * (1000.0 * message_gb / n / link_gb_per_s + latency_us / 1000.0)
'''


def _passed_fraction() -> float:
    record = printed("0.5")
    kind = record.answer_kind
    assert isinstance(kind, Function)
    namespace: dict[str, Any] = {}
    exec(NO_CHECKS, namespace)  # noqa: S102 - the test's own learner function
    mine, reference = namespace[kind.function_name], record.reference(record.params)
    passed = 0
    cases = kind.test_cases()
    for args in cases:
        try:
            want = reference(*args)
        except ValueError:
            try:
                mine(*args)
            except ValueError:
                passed += 1
            except Exception:  # noqa: BLE001 - any other error fails the case
                pass
            continue
        try:
            got = mine(*args)
        except Exception:  # noqa: BLE001
            continue
        passed += abs(got - want) <= 1e-6 * abs(want) + 1e-12
    return passed / len(cases)


def test_a_function_right_on_some_cases_earns_that_fraction_with_partial_credit_on(
        tmp_path: Path) -> None:
    fraction = _passed_fraction()
    assert 0 < fraction < 1, "the function must pass some cases and fail others"
    # (today 24 of 28 cases: the four impossible inputs are not refused -> 0.86 of 1 point)
    notebook = json.loads(learner_path(CHAPTERS[0]).read_text())
    folder = tmp_path / "in" / "ann"
    folder.mkdir(parents=True)
    (folder / "ch00.ipynb").write_text(json.dumps(fill_answers(notebook, {"0.5": NO_CHECKS})))
    settings = grading.settings(1, 5.0, tmp_path / "in", tmp_path / "out")
    graded = grade_folder(tmp_path / "in", grading.releases(), settings)
    row = next(e for e in graded.notebooks[0].exercises if e.exercise_id == "0.5")
    assert (row.status, row.points) == ("wrong", 0)  # all or nothing, as nbgrader
    assert row.score == pytest.approx(fraction)

    on = parse_policies("[grading]\npartial_credit = yes\n")
    adjusted = apply_policies(graded, on, {"ann": Handed()}).batch
    row = next(e for e in adjusted.notebooks[0].exercises if e.exercise_id == "0.5")
    assert row.points == round(printed("0.5").points * fraction, 2)
    assert row.policy.startswith("partial credit: ")
    off = apply_policies(graded, parse_policies(""), {"ann": Handed()})
    assert off.batch is graded
