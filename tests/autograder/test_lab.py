"""The lab answer kind: where it grades, what it reads, and that it never raises on bad input."""

from __future__ import annotations

from typing import Any

import pytest

from autograder.kinds import Lab
from autograder.kinds.lab import LabSource, RecordedLogs, lab_verdict
from autograder.result import CheckResult
from solutions.sim import ring_lab as simring
from solutions.sim.bundle import pack
from solutions.sim.lab import Report
from workbook.records._labs import SimRuntime

RING = Lab(function_name="ring_allreduce", signature="(rank)",
           runtime=SimRuntime(simring.SPEC), exercise="0.7", time_limit_s=5.0)
WRONG = '''
def ring_allreduce(rank):
    yield
    return rank.data
'''


def test_a_file_is_graded_here_without_being_run_here() -> None:
    source = "raise SystemExit('run in the checking process')\n" + WRONG
    verdict = RING.grade(LabSource(source, "mine.py"), None, {"grading_seed": 3}, ())
    assert verdict.status == "wrong" and verdict.score == 0
    assert "could not be loaded: SystemExit" in verdict.message


def test_the_grading_seed_draws_the_cases_and_the_verdict_names_it() -> None:
    first = RING.grade(LabSource(WRONG, "a.py"), None, {"grading_seed": 11}, ())
    again = RING.grade(LabSource(WRONG, "a.py"), None, {"grading_seed": 11}, ())
    other = RING.grade(LabSource(WRONG, "a.py"), None, {"grading_seed": 12}, ())
    assert first.message == again.message != other.message
    assert first.details[0] == "0 of 6 cases drawn for this check (seed 11) passed."


def test_a_function_is_graded_in_a_fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # a patch in this process (the learner's kernel) does not reach the verifier
    monkeypatch.setattr(simring, "verify", lambda case, run: Report("patched"))
    monkeypatch.setattr("autograder.kinds.lab.lab_verdict", lambda *a: None)
    namespace: dict[str, Any] = {}
    exec(WRONG, namespace)
    verdict = RING.grade(namespace["ring_allreduce"], None, {}, ())
    assert verdict.status == "wrong" and "sum of all ranks' vectors is wrong" in verdict.message
    assert RING.grade(simring.ring_allreduce, None, {}, ()).passed


def test_the_batch_graders_bundle_is_graded_here() -> None:
    namespace: dict[str, Any] = {}
    exec(WRONG, namespace)
    assert RING.grade(RecordedLogs(({"bundle": pack(simring.ring_allreduce)},)), None,
                      {"grading_seed": 1}, ()).passed
    failed = RING.grade(RecordedLogs(({"error": "ZeroDivisionError", "error_type": "program"},)),
                        None, {}, ())
    assert failed.status == "wrong" and "could not be run: ZeroDivisionError" in failed.message
    assert RING.grade(RecordedLogs(()), None, {}, ()).score == 0


def test_an_endless_program_costs_one_time_limit_and_the_rest_are_not_run() -> None:
    endless = "def ring_allreduce(rank):\n    while True:\n        pass\n    yield\n"
    lab = Lab(function_name="ring_allreduce", signature="(rank)",
              runtime=SimRuntime(simring.SPEC), exercise="0.7", time_limit_s=1.0)
    verdict = lab.grade(LabSource(endless, "e.py"), None, {"grading_seed": 2}, ())
    assert "Your program was stopped: your program did not finish within 1 s" in \
        verdict.message
    assert "not run, after an earlier case was stopped" in verdict.details[1]


def test_non_functions_are_invalid_not_raised() -> None:
    assert RING.grade("ring_allreduce", None, {}, ()).status == "invalid"
    assert RING.grade(4, None, {}, ()).status == "invalid"
    assert RING.grade(print, None, {}, ()).status == "invalid"  # not a def or lambda


def test_a_pass_says_what_was_checked_and_a_failure_shows_the_picture() -> None:
    good = lab_verdict("f", "its own messages", [Report("n=1", checks=("a", "b"))], 5)
    assert good.passed and good.details == ("a", "b") and good.score == 1.0
    assert good.message == ("Correct: your f passes all 1 cases drawn for this check "
                            "(seed 5), checked from its own messages.")
    bad = lab_verdict("f", "x", [Report("n=1", checks=("a",)),
                                 Report("n=2", "expected 4, observed 5", picture="n=2 -> 5")], 5)
    assert bad.status == "wrong" and bad.score == 0.5  # one case of two passed
    assert bad.message == "Case n=2: expected 4, observed 5"
    assert bad.picture == "Your trace, case n=2:\nn=2 -> 5"
    assert "<pre" in CheckResult("x.1", "t", bad, "", None, True)._repr_html_()


def test_the_stub_is_recognised_and_an_edit_is_not() -> None:
    namespace: dict[str, Any] = {}
    exec(RING.stub(), namespace)
    assert RING.is_stub(namespace["ring_allreduce"])
    assert RING.is_untouched(None) and not RING.is_untouched(LabSource("", "x.py"))
    assert not RING.is_stub(lambda rank: rank)
    assert RING.is_stub_source(RING.stub() + "\n\n")
