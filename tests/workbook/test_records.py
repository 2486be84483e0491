"""Every exercise record is complete, in the workbook's order, and self-consistent."""

from __future__ import annotations

import pytest

import workbook
from autograder.kinds import Choice, Debug, Numeric
from autograder.template import fill

# The workbook's 58 exercises and their kinds, transcribed by hand from the chapter plan.
CATEGORIES = {
    **{f"0.{i}": k for i, k in enumerate(
        ["derive", "derive", "trace", "trace", "build", "debug"], 1)},
    **{f"1.{i}": k for i, k in enumerate(["derive"] * 5 + ["trace"], 1)},
    **{f"2.{i}": k for i, k in enumerate(["derive"] * 3 + ["build", "trace"], 1)},
    **{f"3.{i}": k for i, k in enumerate(["derive"] * 3 + ["trace", "trace"], 1)},
    **{f"4.{i}": k for i, k in enumerate(["derive"] * 3 + ["trace", "build"], 1)},
    **{f"5.{i}": k for i, k in enumerate(["derive"] * 4 + ["debug", "trace"], 1)},
    **{f"6.{i}": k for i, k in enumerate(["derive"] * 3 + ["trace", "derive"], 1)},
    **{f"7.{i}": k for i, k in enumerate(["derive"] * 4 + ["build"], 1)},
    **{f"8.{i}": k for i, k in enumerate(
        ["derive", "trace", "derive", "trace", "derive", "build"], 1)},
    **{f"9.{i}": k for i, k in enumerate(["derive"] * 7 + ["design", "derive"], 1)},
}
RECORDS = workbook.exercises()


def test_there_are_58_records_in_order() -> None:
    assert len(RECORDS) == 58
    assert [r.id for r in RECORDS] == list(CATEGORIES)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_record_is_complete(record: workbook.Exercise) -> None:
    assert record.category == CATEGORIES[record.id]
    assert record.chapter == int(record.id.split(".")[0])
    assert record.title.strip() and record.prompt.strip()
    assert len(record.hints) >= 2 and all(h.strip() for h in record.hints)
    assert record.explanation.strip()
    assert record.sources and all(s.strip() for s in record.sources)
    assert "{" not in record.render_prompt()  # every template field is filled
    assert "{" not in record.render_explanation()
    assert all("{" not in fill(h, record.params) for h in record.hints)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_canonical_answer_passes_its_own_check(record: workbook.Exercise) -> None:
    expected = record.expected()
    verdict = record.grade(expected)  # for a function answer: the reference function itself
    assert verdict.passed, verdict.message


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.id)
def test_variants_are_accepted_by_the_reference(record: workbook.Exercise) -> None:
    for seed in range(40):
        params = record.draw(seed)
        assert set(params) == set(record.params), "a variant must set the same params"
        expected = record.expected(params)
        assert expected is not None
        record.render_prompt(params)
        if type(record.answer_kind) is Numeric:
            assert expected == expected, "NaN answer"  # noqa: PLR0124
            assert record.grade(expected, params).passed


@pytest.mark.parametrize("record", [r for r in RECORDS if r.misconceptions], ids=lambda r: r.id)
def test_misconceptions_are_not_accepted(record: workbook.Exercise) -> None:
    for wrong, feedback in record.wrong_answers():
        verdict = record.grade(wrong)
        assert not verdict.passed, f"misconception {wrong!r} is graded correct"
        assert feedback.strip()


@pytest.mark.parametrize("record", [r for r in RECORDS if type(r.answer_kind) is Choice],
                         ids=lambda r: r.id)
def test_every_wrong_choice_has_feedback(record: workbook.Exercise) -> None:
    keys = [o.key for o in record.answer_kind.options]
    assert record.expected() in keys and len(set(keys)) == len(keys) >= 2
    assert all(o.feedback.strip() for o in record.answer_kind.options)


@pytest.mark.parametrize("record", [r for r in RECORDS if type(r.answer_kind) is Debug],
                         ids=lambda r: r.id)
def test_debug_line_exists(record: workbook.Exercise) -> None:
    line, fixed = record.expected()
    assert 1 <= line <= len(record.answer_kind.code.strip("\n").split("\n"))
    assert callable(fixed)


def test_unknown_id_names_the_valid_ones() -> None:
    with pytest.raises(KeyError, match="valid ids are 0.1, 0.2"):
        workbook.exercise("10.1")
