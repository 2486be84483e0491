"""Named misconceptions: a short label per known mistake, stable across variants, carried
from the exercise record through each answer kind's verdict."""

from __future__ import annotations

import pickle

from autograder.exercise import Exercise
from autograder.kinds import Choice, Constraints, Debug, Function, Numeric, Option
from autograder.kinds.base import Feedback, Misconception, Params, misconception_name
from autograder.kinds.constraints import Rule
from autograder.kinds.named_numbers import NamedNumbers
from autograder.kinds.ordering import Ordering
from autograder.kinds.trace import Trace


def _volume(p: Params) -> float:
    return float(2 * p["M"] * (p["N"] - 1) / p["N"])


RECORD = Exercise(
    id="99.1", chapter=9, category="derive", title="ring volume",
    prompt="{N} GPUs hold {M} GB each; how many GB does each send?",
    params=dict(N=8, M=1.0),
    vary=lambda rng: dict(N=rng.choice([4, 16]), M=rng.choice([2.0, 3.0])),
    answer_kind=Numeric(unit="GB"), reference=_volume, hints=(), explanation="", sources=(),
    misconceptions=(
        Misconception(lambda p: 2 * p["M"], "2M is the limit for many GPUs; with N = {N} "
                      "the factor is 2(N-1)/N."),
        Misconception(lambda p: p["M"] * (p["N"] - 1) / p["N"], "That is one phase only.",
                      name="one phase"),
        Misconception(lambda p: 4 * p["M"] * (p["N"] - 1) / p["N"],
                      "You added what each GPU sends and what it receives (both directions "
                      "of every link of the ring); the question asks for what it sends."),
    ))


def test_label_is_the_given_name_or_the_first_clause() -> None:
    first, second, third = RECORD.misconceptions
    assert first.label == "2M is the limit for many GPUs"
    assert second.label == "one phase"
    # Eleven words before the semicolon: cut at ten, and never inside the parenthesis.
    assert third.label == "You added what each GPU sends and what it receives…"


def test_a_field_in_the_first_clause_reads_as_its_name() -> None:
    record = Misconception(lambda p: 0, "That is per GPU: all {dp_degree:,} GPUs count.")
    assert record.label == "That is per GPU"
    assert Misconception(lambda p: 0, "All {n} GPUs lose it.").label == "All n GPUs lose it"


def test_the_name_is_the_same_in_every_variant() -> None:
    for seed in range(5):
        params = RECORD.variant(seed)
        wrong = 2 * params["M"]
        verdict = RECORD.grade(wrong, params)
        assert verdict.status == "wrong"
        assert verdict.misconceptions == ("2M is the limit for many GPUs",)
        assert f"N = {params['N']}" in verdict.message


def test_right_and_unexplained_answers_name_nothing() -> None:
    assert RECORD.grade(1.75).misconceptions == ()
    assert RECORD.grade(5.0).misconceptions == ()
    assert RECORD.grade("lots").misconceptions == ()


def test_two_mistakes_giving_the_same_number_are_both_named() -> None:
    # N = 2, M = 1: the right answer 2M(N-1)/N is 1; the limit 2M = 2 and "sends and
    # receives" 4M(N-1)/N = 2 coincide, so an answer of 2 names both.
    verdict = RECORD.grade(2.0, dict(N=2, M=1.0))
    assert verdict.misconceptions == ("2M is the limit for many GPUs",
                                      "You added what each GPU sends and what it receives…")


def test_feedback_keeps_its_name_through_pickling_and_compares_as_text() -> None:
    said = Feedback("That is one phase only.", "one phase")
    back = pickle.loads(pickle.dumps(said))
    assert back == "That is one phase only." and misconception_name(back) == "one phase"
    assert misconception_name("Plain text; no record behind it.") == "Plain text"


def test_each_kind_names_the_misconception_it_matches() -> None:
    choice = Choice(options=(Option("A", "Tree", "Root link is busy."),
                             Option("B", "Ring", "")))
    assert choice.grade("a", "B", {}, (("A", Feedback("x", "tree is faster"),),)
                        ).misconceptions == ("tree is faster",)
    assert choice.grade("b", "B", {}, (("A", Feedback("x", "tree"),),)).misconceptions == ()

    fix = Function(function_name="f", signature="(x)",
                   cases=lambda rng: (rng.random(),), n_random=2)
    debug = Debug(code="def f(x):\n    y = x\n    return 2 * y\n", fix=fix)
    verdict = debug.grade(2, (3, lambda x: x), {}, ((2, Feedback("Line 2 is fine.", "copy")),))
    assert verdict.misconceptions == ("copy",)

    numbers = NamedNumbers(fields=(("weights", "GB"), ("grads", "GB")))
    verdict = numbers.grade(dict(weights=4, grads=1), dict(weights=2, grads=1), {},
                            ((dict(weights=4), Feedback("FP32 weights.", "fp32")),))
    assert verdict.misconceptions == ("fp32",)

    rules = (Rule(name="fits", holds=lambda c, p: c["tp"] * c["pp"] <= 8, feedback="too big"),)
    design = Constraints(fields=("tp", "pp"), rules=rules)
    verdict = design.grade(dict(tp=8, pp=2), None, {},
                           ((dict(tp=8, pp=2), Feedback("Sixteen GPUs.", "too many")),))
    assert verdict.misconceptions == ("too many",)

    order = Ordering(items=("a", "b", "c"))
    verdict = order.grade(["c", "b", "a"], ["a", "b", "c"], {},
                          ((["c", "b", "a"], Feedback("Reversed.", "reversed")),))
    assert verdict.misconceptions == ("reversed",)

    trace = Trace(columns=("step", "sent"))
    verdict = trace.grade([[1, 9]], [[1, 2]], {}, (([[1, 9]], Feedback("Doubled.", "double")),))
    assert verdict.misconceptions == ("double",)

