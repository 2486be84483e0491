"""Trace answers: rows of one or several columns, the first wrong step named."""

from __future__ import annotations

import pytest

from autograder.kinds import Trace

# Dynamic loss scaling from S = 65536 with overflows at steps 2 and 4 (growth interval
# 2000, so it never doubles): each overflow halves S.
#   step 1: 65536; step 2: 65536 / 2 = 32768; step 3: 32768; step 4: 16384; step 5: 16384
SCALES = [65536, 32768, 32768, 16384, 16384]
ONE = Trace(columns=("scale",))
# (overflow?, scale, good steps in a row)
ROWS = [(False, 65536, 1), (True, 32768, 0), (False, 32768, 1), (True, 16384, 0),
        (False, 16384, 1)]
THREE = Trace(columns=("overflow", "scale", "good"))


def halves(step: int, params: object) -> str:
    return "scale should halve on an overflow" if step in (2, 4) else "scale stays put"


EXPLAINED = Trace(columns=("scale",), explain_step=halves)


@pytest.mark.parametrize("answer", [
    SCALES, tuple(SCALES), [[s] for s in SCALES], ["65536", "32,768", "32768", "2^14", 16384.0],
    [{"scale": s} for s in SCALES],
])
def test_one_column_right(answer: object) -> None:
    verdict = ONE.grade(answer, SCALES, {}, ())
    assert verdict.status == "correct"
    assert verdict.score == 1.0


def test_first_wrong_step_named_with_the_explanation() -> None:
    answer = [65536, 65536, 65536, 32768, 32768]  # never halved at step 2
    verdict = EXPLAINED.grade(answer, SCALES, {}, ())
    assert verdict.status == "wrong"
    assert verdict.message == "step 2: scale should halve on an overflow; you wrote 65536."
    assert verdict.score == pytest.approx(1 / 5)  # only step 1 right
    assert verdict.details == ("1 of 5 steps match.",)


def test_first_wrong_step_without_explanation() -> None:
    verdict = ONE.grade([65536, 32768, 32768, 16384, 8192], SCALES, {}, ())
    assert verdict.message == "step 5: scale is not right; you wrote 8192."
    assert verdict.score == pytest.approx(4 / 5)


def test_several_columns_as_tuples_and_dicts() -> None:
    as_dicts = [{"Overflow": o, "SCALE": s, "good": g} for o, s, g in ROWS]
    as_text = [("no", "65536", "1"), ("yes", "32768", "0"), ("n", "32768", "1"),
               ("Y", "16384", "0"), ("False", "16384", "1")]
    for answer in (ROWS, as_dicts, as_text):
        assert THREE.grade(answer, ROWS, {}, ()).passed


def test_several_columns_name_the_wrong_ones() -> None:
    answer = list(ROWS)
    answer[1] = (True, 131072, 0)  # doubled instead of halved
    verdict = THREE.grade(answer, ROWS, {}, ())
    assert verdict.message == "step 2: scale is not right; you wrote scale = 131072."


def test_misconception_matching_the_first_wrong_row() -> None:
    doubled = [65536, 131072, 131072, 262144, 262144]
    feedback = "An overflow means the scale is too large: it halves, never doubles."
    verdict = ONE.grade(doubled, SCALES, {}, ((doubled, feedback),))
    assert verdict.message == feedback


def test_unit_parsing_in_cells() -> None:
    kind = Trace(columns=("sent",), unit="GB", rel_tol=1e-6)
    # Ring reduce-scatter of 1 GB over 4 GPUs: 0.25 GB per step, cumulative 0.25, 0.5, 0.75.
    assert kind.grade(["250 MB", "0.5 GB", 0.75], [0.25, 0.5, 0.75], {}, ()).passed
    verdict = kind.grade(["250 ms", "0.5 GB", 0.75], [0.25, 0.5, 0.75], {}, ())
    assert verdict.status == "invalid"
    assert "step 1" in verdict.message and "which is a time" in verdict.message


def test_column_units() -> None:
    kind = Trace(columns=("time", "sent"), column_units=("ms", "GB"))
    assert kind.grade([("0.07 s", "1750 MB")], [(70.0, 1.75)], {}, ()).passed


@pytest.mark.parametrize(("answer", "words"), [
    (SCALES[:4], ["Expected 5 rows, one per step; your list has 4"]),
    (SCALES + [1], ["Expected 5 rows", "has 6"]),
    (65536, ["Answer with a list holding one row per step"]),
    (None, ["Answer with a list"]),
    (["65536", "abc", 1, 1, 1], ["step 2", "could not read 'abc'"]),
    (["", 1, 1, 1, 1], ["step 1", "empty"]),
])
def test_malformed_one_column(answer: object, words: list[str]) -> None:
    verdict = ONE.grade(answer, SCALES, {}, ())
    assert verdict.status == "invalid"
    for word in words:
        assert word in verdict.message


@pytest.mark.parametrize(("answer", "words"), [
    ([(False, 65536)] + ROWS[1:], ["step 1: expected 3 value(s)", "got 2"]),
    ([{"overflow": False, "scale": 65536}] + ROWS[1:], ["step 1", "missing: good"]),
    ([65536] + ROWS[1:], ["step 1: expected 3 values"]),
    ([("maybe", 65536, 1)] + ROWS[1:], ["step 1, overflow: answer yes or no"]),
])
def test_malformed_rows(answer: object, words: list[str]) -> None:
    verdict = THREE.grade(answer, ROWS, {}, ())
    assert verdict.status == "invalid"
    for word in words:
        assert word in verdict.message


def test_text_cells() -> None:
    kind = Trace(columns=("phase",))
    expected = ["reduce-scatter", "all-gather"]
    assert kind.grade(["Reduce-Scatter", " all-gather "], expected, {}, ()).passed
    assert kind.grade(["all-gather", "all-gather"], expected, {}, ()).status == "wrong"


def test_numpy_array_answer() -> None:
    np = pytest.importorskip("numpy")
    assert ONE.grade(np.array(SCALES), SCALES, {}, ()).passed


def test_describe() -> None:
    assert THREE.describe() == "a list with one entry per step: overflow, scale, good"
