"""NamedNumbers: several numbers with units in one dict, each graded like a Numeric answer;
and, through a toy record, every place a kind is asked for something (the notebook cells,
the check, the grader's task, the card) works for it with no change outside its module."""

from __future__ import annotations

from typing import Any

import pytest

from autograder.exercise import Exercise
from autograder.grading.model import Task
from autograder.kinds.base import CellNames
from autograder.kinds.named_numbers import NamedNumbers
from autograder.kinds.trip import AskValue

# Memory per GPU for a 7B model in mixed precision with Adam and no sharding (ZeRO paper,
# Sec. 3.1: 2 + 2 + 12 bytes per parameter): weights 14 GB, gradients 14 GB, optimizer 84 GB.
KIND = NamedNumbers(fields=(("weights", "GB"), ("grads", "GB"), ("optimizer", "GB")))
EXPECTED = {"weights": 14.0, "grads": 14.0, "optimizer": 84.0}
FORGOT_MASTER = ({"optimizer": 56.0}, "Adam keeps an FP32 master copy too: 4 + 4 + 4 bytes.")


def grade(answer: Any, misconceptions: tuple[tuple[Any, str], ...] = ()) -> Any:
    return KIND.grade(answer, EXPECTED, {}, misconceptions)


def test_all_values_right_in_any_unit_of_their_family() -> None:
    verdict = grade({"weights": "14000 MB", "Grads": 14, " optimizer ": "84 GB"})
    assert verdict.passed and verdict.score == 1.0
    assert verdict.expected == "weights = 14 GB, grads = 14 GB, optimizer = 84 GB"


def test_one_wrong_value_is_named_with_its_numeric_explanation() -> None:
    verdict = grade({"weights": 14, "grads": 14, "optimizer": 84_000})  # MB typed as GB
    assert verdict.status == "wrong"
    assert verdict.score == pytest.approx(2 / 3)
    assert "still wrong: optimizer" in verdict.message
    assert verdict.details[0].startswith("optimizer: Not yet: your answer is too large -- "
                                         "check the unit prefix")
    assert verdict.expected == ""  # a wrong answer does not give the answer away


def test_a_misconception_is_matched_per_value() -> None:
    verdict = grade({"weights": 14, "grads": 14, "optimizer": 56}, (FORGOT_MASTER,))
    assert verdict.details == ("optimizer: " + FORGOT_MASTER[1],)


@pytest.mark.parametrize(("answer", "says"), [
    (112, "Answer with dict(weights=..., grads=..., optimizer=...)"),
    ({"weights": 14, "grads": 14}, "missing: optimizer"),
    ({"weights": 14, "grads": 14, "optimizer": 84, "activations": 3}, "unknown: activations"),
    ({"weights": 14, "grads": "lots", "optimizer": 84}, "grads: "),
    ({"weights": 14, "grads": "14 s", "optimizer": 84}, "grads: "),
])
def test_unreadable_answers_are_invalid_and_say_why(answer: Any, says: str) -> None:
    verdict = grade(answer)
    assert verdict.status == "invalid" and not verdict.counts_as_attempt
    assert says in verdict.message


def test_field_names_must_be_distinct_identifiers() -> None:
    with pytest.raises(ValueError, match="identifiers"):
        NamedNumbers(fields=(("a b", "GB"),))
    with pytest.raises(ValueError, match="distinct"):
        NamedNumbers(fields=(("a", "GB"), ("a", "s")))


# -- the rest of the system asks the kind ----------------------------------------------------
RECORD = Exercise(
    id="1.99", chapter=1, category="derive", title="Memory breakdown",
    prompt="A {n_params_b}B model trains with Adam in mixed precision on one GPU. Give the "
           "memory for weights, gradients and optimizer state.",
    params={"n_params_b": 7}, vary=lambda rng: {"n_params_b": rng.choice([1, 7, 13])},
    answer_kind=KIND,
    reference=lambda p: {"weights": 2.0 * p["n_params_b"], "grads": 2.0 * p["n_params_b"],
                         "optimizer": 12.0 * p["n_params_b"]},
    hints=("2 bytes per parameter for each of weights and gradients.",),
    explanation="2, 2 and 12 bytes per parameter.", sources=("ZeRO paper, Sec. 3.1",))


def test_notebook_cells_come_from_the_kind() -> None:
    from workbook.build.cells import answer_source, check_source, prompt_markdown

    learner = answer_source(RECORD, instructor=False)
    assert learner == ("answer_1_99 = dict(weights=None, grads=None, optimizer=None)  "
                       "# weights in GB, grads in GB, optimizer in GB")
    namespace: dict[str, Any] = {}
    exec(learner, namespace)
    assert KIND.is_untouched(namespace["answer_1_99"])
    solved: dict[str, Any] = {}
    exec(answer_source(RECORD, instructor=True), solved)  # the solution region runs too
    assert RECORD.grade(solved["answer_1_99"]).passed
    assert check_source(RECORD) == 'wb.check("1.99", answer_1_99)'
    assert "*Answer with a dict of numbers: weights (in GB)" in prompt_markdown(RECORD)


def test_the_grader_reads_it_as_a_value() -> None:
    task = Task(RECORD)
    assert (task.asks, task.value_name, task.function_name) == (
        (AskValue("answer_1_99"),), "answer_1_99", None)
    assert KIND.value_name(CellNames.for_exercise("1.99")) == "answer_1_99"


def test_the_card_offers_a_literal_box_for_it() -> None:
    from autograder.widgets import answer_input

    _, read, write = answer_input(RECORD, lambda name: None)
    write({"weights": 14, "grads": 14, "optimizer": 84})
    assert RECORD.grade(read()).passed
