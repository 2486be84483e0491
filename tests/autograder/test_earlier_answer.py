"""A question that builds on an earlier exercise's answer refers to it, never prints it.

:class:`autograder.template.Earlier` is a number to every calculation and "your answer to
7.1" in text; every record's printed prompt, notes, hints and explanation that use such a
parameter say so, and the value it carries is that exercise's own expected answer.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from autograder.template import Earlier, fill
from workbook.records import by_id


def test_an_earlier_answer_reads_as_a_reference_with_its_unit() -> None:
    size = Earlier(980.0, "7.1", "GB")
    text = fill("The checkpoint ({size} GB) at {bw} GB/s: {size:.0f} GB; ${size}", dict(
        size=size, bw=10.0))
    assert text == ("The checkpoint (your answer to 7.1) at 10 GB/s: your answer to 7.1; "
                    "your answer to 7.1")
    assert size / 10 == 98.0 and pickle.loads(pickle.dumps(size)).exercise_id == "7.1"
    # only the unit itself goes with the field, not a longer word that starts like it
    assert fill("{n} GB/s", dict(n=Earlier(2.0, "0.1", "GB"))) == "your answer to 0.1 GB/s"


CHAINED = [(r, name, value) for r in by_id().values() for name, value in r.params.items()
           if isinstance(value, Earlier)]


def test_the_chained_questions_are_found() -> None:
    assert {r.id for r, _, _ in CHAINED} >= {"4.4", "6.5", "7.2", "7.3", "7.4"}


@pytest.mark.parametrize("chain", CHAINED, ids=lambda c: f"{c[0].id}:{c[1]}")
def test_the_earlier_value_is_that_exercises_answer(chain: tuple[Any, str, Earlier]) -> None:
    record, _, value = chain
    earlier = by_id()[value.exercise_id]
    assert float(value) == pytest.approx(float(earlier.expected()), rel=1e-9)
    texts = [record.render_prompt(), record.render_notes(), record.render_explanation(),
             *(record.render_hint(i) for i in range(len(record.hints)))]
    shown = "\n".join(texts)
    assert value.phrase in record.render_prompt() + record.render_notes(), record.id
    for form in (f"{float(value):g}", f"{float(value):.0f}", f"{float(value):.1f}"):
        assert form not in shown, (record.id, form)
