"""Choice answers: keys in any case and punctuation, option text, feedback per option."""

from __future__ import annotations

import pytest

from autograder.kinds import Choice, Option

KIND = Choice(options=(
    Option("A", "Tree AllReduce", "The root link carries the whole message at every step."),
    Option("B", "Ring AllReduce", "Each link carries only M/N per step, all links busy."),
    Option("C", "Naive gather to GPU 0", ""),
))


def grade(answer: object, expected: str = "B",
          misconceptions: tuple[tuple[object, str], ...] = ()):
    return KIND.grade(answer, expected, {}, misconceptions)


@pytest.mark.parametrize("answer", ["B", "b", " B) ", "(b)", "B.", "b:", "ring allreduce",
                                    "  Ring   AllReduce "])
def test_right_key_in_any_spelling(answer: str) -> None:
    verdict = grade(answer)
    assert verdict.status == "correct"
    assert verdict.score == 1.0
    assert verdict.yours == "B: Ring AllReduce"
    assert verdict.details == ("Each link carries only M/N per step, all links busy.",)


def test_wrong_option_gives_its_feedback_and_hides_the_answer() -> None:
    verdict = grade("a")
    assert verdict.status == "wrong"
    assert verdict.message == "The root link carries the whole message at every step."
    assert verdict.expected == ""
    assert verdict.score == 0.0


def test_wrong_option_without_feedback_still_says_something() -> None:
    assert grade("C").message == "Not C. Reread the options and try again."


def test_misconception_feedback_is_added() -> None:
    verdict = grade("A", misconceptions=(("A", "Fewer steps is not the same as less time."),))
    assert verdict.details == ("Fewer steps is not the same as less time.",)


@pytest.mark.parametrize("answer", ["D", "", "Ring", "x" * 1000])
def test_unknown_text_is_invalid_and_lists_the_keys(answer: str) -> None:
    verdict = grade(answer)
    assert verdict.status == "invalid"
    assert "'A', 'B', 'C'" in verdict.message


@pytest.mark.parametrize("answer", [2, 1.0, None, ["B"], True])
def test_non_text_is_invalid(answer: object) -> None:
    # Option numbers are refused on purpose: 2 must not silently mean "B".
    verdict = grade(answer)
    assert verdict.status == "invalid"
    assert "key of one option" in verdict.message


def test_reference_must_be_a_key() -> None:
    with pytest.raises(ValueError):
        grade("B", expected="Z")


def test_describe() -> None:
    assert KIND.describe() == "the key of one option: A, B, C"
