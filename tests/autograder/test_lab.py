"""The lab answer kind: runs a program per case, grades the logs, never raises on bad input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder.kinds import Lab
from autograder.result import CheckResult


@dataclass(frozen=True)
class _Report:
    case: str
    problem: str = ""
    checks: tuple[str, ...] = ()
    picture: str = ""


def _cases(params: Any) -> list[dict[str, int]]:
    return [dict(n=n) for n in params.get("ns", (1, 2, 3))]


def _run(program: Any, job: dict[str, int]) -> dict[str, Any]:
    return {"out": program(job["n"])}


def _verify(case: dict[str, int], log: Any) -> _Report:
    want = case["n"] ** 2
    got = log.get("out") if isinstance(log, dict) else None
    if got != want:
        return _Report(f"n={case['n']}", f"expected {want}, observed {got!r}",
                       picture=f"n={case['n']} -> {got!r}")
    return _Report(f"n={case['n']}", checks=("squares match",), picture="ok")


LAB = Lab(function_name="square", signature="(n)", cases=_cases, job=dict, run_job=_run,
          verify=_verify, time_limit_s=1.0)


def test_a_right_program_passes_with_what_was_checked() -> None:
    verdict = LAB.grade(lambda n: n * n, None, {}, ())
    assert verdict.passed and verdict.details == ("squares match",)
    assert verdict.yours == "square: 3 of 3 cases"


def test_a_wrong_program_names_the_first_failing_case_and_shows_its_picture() -> None:
    verdict = LAB.grade(lambda n: n * n if n < 2 else n + n, None, {}, ())
    assert verdict.status == "wrong" and verdict.score == 2 / 3  # n=2: 2+2 == 2*2
    assert verdict.message == "Case n=3: expected 9, observed 6"
    assert verdict.picture == "Your trace, case n=3:\nn=3 -> 6"
    text = str(CheckResult("x.1", "t", verdict, "", None, True))
    assert "n=3 -> 6" in text
    assert "<pre" in CheckResult("x.1", "t", verdict, "", None, True)._repr_html_()


def test_errors_time_outs_and_non_functions_are_reported_not_raised() -> None:
    def endless(n: int) -> int:
        while True:
            pass

    assert LAB.grade(endless, None, {"ns": (1,)}, ()).message == (
        "Case n=1: your program did not finish within 1 s (an endless loop, or a rank that "
        "never returns?)")
    assert LAB.grade(lambda n: 1 / 0, None, {"ns": (1,)}, ()).message == (
        "Case n=1: your program raised ZeroDivisionError: division by zero")
    assert LAB.grade("square", None, {}, ()).status == "invalid"
    assert LAB.grade(4, None, {}, ()).status == "invalid"


def test_a_verifier_that_breaks_on_a_strange_log_fails_the_case() -> None:
    lab = Lab(function_name="square", signature="(n)", cases=_cases, job=dict, run_job=_run,
              verify=lambda case, log: log["missing"])
    verdict = lab.grade(lambda n: n, None, {}, ())
    assert verdict.status == "wrong" and "could not read this run" in verdict.message


def test_grade_logs_grades_logs_made_elsewhere() -> None:
    assert LAB.jobs({}) == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert LAB.grade_logs([{"out": 1}, {"out": 4}, {"out": 9}], {}).passed
    short = LAB.grade_logs([{"out": 1}], {})
    assert short.status == "wrong" and "observed None" in short.message


def test_the_stub_is_recognised_and_an_edit_is_not() -> None:
    namespace: dict[str, Any] = {}
    exec(LAB.stub(), namespace)
    assert LAB.is_stub(namespace["square"])
    assert not LAB.is_stub(lambda n: n * n)
