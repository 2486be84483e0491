"""Constraint answers: every rule checked, every violation explained."""

from __future__ import annotations

import pytest

from autograder.kinds import Constraints, Rule

PARAMS = {"gpus": 16384, "gpus_per_node": 8, "layers": 126}
KIND = Constraints(fields=("tp", "pp", "dp"), rules=(
    Rule("product", lambda a, p: a["tp"] * a["pp"] * a["dp"] == p["gpus"],
         "tp x pp x dp = {tp} x {pp} x {dp} must equal {gpus} GPUs."),
    Rule("tp in a node", lambda a, p: a["tp"] <= p["gpus_per_node"],
         "tp = {tp} spans more than one {gpus_per_node}-GPU node."),
    Rule("stages", lambda a, p: a["pp"] <= p["layers"],
         "pp = {pp} leaves some of the {layers} layers' stages empty."),
    Rule("divides", lambda a, p: p["gpus"] % (a["tp"] * a["pp"]) == 0 and 1 / 0,
         "never shown: the rule fails to evaluate"),
))
RULES = Constraints(fields=KIND.fields, rules=KIND.rules[:3])


def grade(kind: Constraints, answer: object,
          misconceptions: tuple[tuple[object, str], ...] = ()):
    return kind.grade(answer, {"tp": 8, "pp": 16, "dp": 128}, PARAMS, misconceptions)


@pytest.mark.parametrize("answer", [
    {"tp": 8, "pp": 16, "dp": 128},        # Llama 3 405B: 8 x 16 x 128 = 16,384
    {"TP": "8", "pp": " 16 ", "Dp": 128.0},
    {"tp": 4, "pp": 16, "dp": 256},        # 4 x 16 x 256 = 16,384
])
def test_any_configuration_meeting_every_rule_is_right(answer: object) -> None:
    verdict = grade(RULES, answer)
    assert verdict.status == "correct"
    assert verdict.score == 1.0
    assert verdict.expected == ""


def test_yours_lists_the_fields() -> None:
    assert grade(RULES, {"tp": 8, "pp": 16, "dp": 128}).yours == "tp=8, pp=16, dp=128"


def test_every_violation_is_listed_with_numbers_filled_in() -> None:
    # 16 x 16 x 128 = 32,768 != 16,384, and tp = 16 > 8.
    verdict = grade(RULES, {"tp": 16, "pp": 16, "dp": 128})
    assert verdict.status == "wrong"
    assert verdict.message == "Not yet: 2 of 3 constraints are not met."
    assert verdict.details == ("tp x pp x dp = 16 x 16 x 128 must equal 16,384 GPUs.",
                               "tp = 16 spans more than one 8-GPU node.")
    assert verdict.score == pytest.approx(1 / 3)


def test_a_rule_that_cannot_be_evaluated_counts_as_not_met() -> None:
    verdict = grade(KIND, {"tp": 8, "pp": 16, "dp": 128})
    assert verdict.status == "wrong"
    assert verdict.message == "Not yet: 1 of 4 constraints is not met."


def test_misconception_feedback_is_added() -> None:
    note = "DP fills what TP and PP leave: 16,384 / (8 x 16)."
    verdict = grade(RULES, {"tp": 8, "pp": 16, "dp": 64},
                    misconceptions=(({"tp": 8, "pp": 16, "dp": 64}, note),))
    assert verdict.message.endswith(note)


def test_a_template_with_an_unknown_field_is_shown_as_written() -> None:
    kind = Constraints(fields=("tp",), rules=(Rule("r", lambda a, p: False, "bad {nope}"),))
    assert grade(kind, {"tp": 8}).details == ("bad {nope}",)


@pytest.mark.parametrize(("answer", "words"), [
    ({"tp": 8, "pp": 16}, ["missing: dp"]),
    ({"tp": 8, "pp": 16, "dp": 128, "cp": 1}, ["unknown: cp"]),
    ({"tp": 0, "pp": 16, "dp": 128}, ["tp must be at least 1; got 0"]),
    ({"tp": -8, "pp": 16, "dp": 128}, ["tp must be at least 1"]),
    ({"tp": 8.5, "pp": 16, "dp": 128}, ["tp must be a whole number; got 8.5"]),
    ({"tp": True, "pp": 16, "dp": 128}, ["tp must be a whole number"]),
    ({"tp": "eight", "pp": 16, "dp": 128}, ["tp must be a whole number"]),
    ((8, 16, 128), ["Answer with a dict such as {'tp': ..., 'pp': ..., 'dp': ...}"]),
    (None, ["Answer with a dict"]),
])
def test_malformed_answers_are_invalid(answer: object, words: list[str]) -> None:
    verdict = grade(RULES, answer)
    assert verdict.status == "invalid"
    for word in words:
        assert word in verdict.message


def test_digit_strings_with_commas() -> None:
    kind = Constraints(fields=("gpus",), rules=(Rule("r", lambda a, p: a["gpus"] == 16384,
                                                    "x"),))
    assert grade(kind, {"gpus": "16,384"}).passed


def test_describe() -> None:
    assert KIND.describe() == "a dict with keys tp, pp, dp"


def test_advice_is_shown_but_never_counted() -> None:
    kind = Constraints(fields=("a",), rules=(
        Rule("a is even", lambda ans, p: ans["a"] % 2 == 0, "{a} is odd."),
        Rule("a is small", lambda ans, p: ans["a"] < 10, "Try a smaller a than {a}.",
             advice=True),
    ))
    wrong = kind.grade({"a": 11}, {"a": 2}, {}, ())
    assert wrong.message == "Not yet: 1 of 1 constraint is not met."
    assert wrong.details == ("11 is odd.", "Try a smaller a than 11.") and wrong.score == 0
    right = kind.grade({"a": 12}, {"a": 2}, {}, ())  # the advice fails, the constraint holds
    assert right.passed and right.details == ("✔ a is even",)
