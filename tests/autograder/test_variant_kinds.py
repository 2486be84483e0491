"""Kinds whose shown text follows the variant: templated choice options, dealt question
pools, and debug exercises with one buggy program per variant."""

from __future__ import annotations

import random

import pytest

from autograder.exercise import Exercise, NoVariantError
from autograder.kinds import Choice, Debug, Function, Option
from autograder.kinds.choice import deal, dealt


def _double(x: int) -> int:
    return 2 * x


RIGHT = "def double(x):\n    y = x\n    return 2 * y\n"
BUG_RETURN = "def double(x):\n    y = x\n    return 3 * y\n"
BUG_ASSIGN = "def double(x):\n    y = x + 1\n    return 2 * y\n"
KIND = Debug(code=BUG_RETURN, programs=(BUG_ASSIGN,),
             fix=Function("double", "(x)", cases=lambda rng: (rng.randint(-9, 9),)))


def test_debug_program_is_picked_by_the_params() -> None:
    assert KIND.code_for({}) == BUG_RETURN and KIND.code_for({"program": 1}) == BUG_ASSIGN
    assert "x + 1" in KIND.prompt_extra({"program": 1})[0]
    assert "x + 1" not in KIND.prompt_extra()[0]
    with pytest.raises(ValueError, match="index from 0 to 1"):
        KIND.code_for({"program": 2})


def test_debug_grades_against_the_variant_program() -> None:
    params = {"program": 1}
    verdict = KIND.grade((3, _double), (2, _double), params, ())
    assert verdict.status == "wrong" and "return 2 * y" in verdict.message  # its own line 3
    assert KIND.grade((2, _double), (2, _double), params, ()).passed
    assert KIND.grade((3, _double), (3, _double), {}, ()).passed


def _debug_record(vary: object) -> Exercise:
    return Exercise(id="x.1", chapter=0, category="debug", title="t", prompt="p", params={},
                    vary=vary,  # type: ignore[arg-type]
                    answer_kind=KIND, reference=lambda p: (2 if p.get("program") else 3,
                                                           _double),
                    hints=("h",), explanation="e", sources=("s",))


def test_debug_variant_needs_another_program() -> None:
    with pytest.raises(NoVariantError):
        _debug_record(lambda rng: {"program": 0}).variant(1)
    assert _debug_record(lambda rng: {"program": 1}).variant(1) == {"program": 1}


def test_choice_options_are_templates_over_the_params() -> None:
    kind = Choice(options=(Option("A", "{n} GPUs", "Yes, {n}."), Option("B", "none", "No.")))
    assert kind.prompt_extra({"n": 8}) == ("- **A.** 8 GPUs\n- **B.** none",)
    assert kind.find("8 gpus", {"n": 8}) is not None
    verdict = kind.grade("A", "A", {"n": 4}, ())
    assert verdict.passed and verdict.details == ("Yes, 4.",)


def test_deal_shuffles_entries_and_names_the_right_key() -> None:
    entries = [("ring", "right", True), ("tree", "no: {braces} stay", False), ("c", "no", False)]
    in_order = deal(entries, "ABC")
    assert in_order["right"] == "A" and in_order["option_B"] == "tree"
    kind = Choice(options=dealt("ABC"))
    rights = set()
    for seed in range(30):
        params = deal(entries, "ABC", random.Random(seed))
        rights.add(params["right"])
        right = kind.find(params["right"], params)
        assert right is not None and right.text == "ring"
        assert kind.grade(params["right"], params["right"], params, ()).passed
    assert rights == {"A", "B", "C"}
    wrong = kind.grade("B", "A", in_order, ())
    assert wrong.message == "no: {braces} stay"  # a dealt text is never filled again
    with pytest.raises(ValueError, match="exactly one"):
        deal([("a", "", True), ("b", "", True)], "AB")
    with pytest.raises(ValueError, match="one entry per key"):
        deal(entries, "AB")


def test_a_fenced_listing_shows_as_preformatted_html() -> None:
    from autograder.markup import inline_markdown

    listing = "```text\n 1 | def f(x):\n 2 |     return x < 1\n```"
    html_text = inline_markdown("Which line?\n\n" + listing)
    assert "<pre><code> 1 | def f(x):\n 2 |     return x &lt; 1</code></pre>" in html_text
    assert "```" not in html_text and html_text.count("<br>") == 2
