"""The card keeps one state: the question it shows is the question it grades; hints stay
on the card as a ladder; Enter submits; each prompt is on the page once."""

from __future__ import annotations

import re
from typing import Any

import pytest

from autograder.exercise import same_answer
from workbook.learner import widgets
from workbook.records import all_challenges, all_exercises, lookup


def _answer_text(record: Any, params: Any) -> str:
    expected = record.expected(params)
    return f"{expected!r} {record.answer_kind.unit}".strip()


def _shown(card: Any) -> str:
    return str(card.last)


def test_a_variant_is_graded_as_shown_on_every_check() -> None:
    record = lookup("0.1")
    card = widgets.widget("0.1")
    card.buttons["variant"].click()
    shown = dict(card.params or {})
    assert not same_answer(record.expected(shown), record.expected())
    assert record.render_prompt(shown).split("?")[0][:40] in card.prompt.value
    for _ in range(3):  # the first check used to consume the variant; later ones graded 8 x 1 GB
        card.write(_answer_text(record, shown))
        card.buttons["check"].click()
        assert "Correct" in _shown(card) and "Your variant" in _shown(card)
    card.write(_answer_text(record, None))  # the printed question's answer is now wrong
    card.buttons["check"].click()
    assert "Not yet" in _shown(card)


def test_hints_accumulate_as_a_ladder_in_the_numbers_shown() -> None:
    card = widgets.widget("0.1")
    for n in (1, 2, 3):
        card.buttons["hint"].click()
        assert len(card.ladder.children) == n
    texts = [child.value for child in card.ladder.children]
    assert "Hint 1 of" in texts[0] and "Hint 2 of" in texts[1] and "Hint 3 of" in texts[2]


def test_enter_in_the_answer_box_submits() -> None:
    record = lookup("0.1")
    card = widgets.widget("0.1")
    box = card.input.submit_box
    box.value = _answer_text(record, None)
    box._submission_callbacks(box)  # what the front end's Enter key triggers
    assert "Correct" in _shown(card)


@pytest.mark.parametrize("record", all_exercises() + all_challenges(), ids=lambda r: r.id)
def test_the_card_does_not_repeat_the_printed_prompt(record: Any) -> None:
    card = widgets.widget(record.id)
    first_sentence = re.split(r"(?<=[.?!])\s", record.render_prompt())[0]
    assert first_sentence[:60] not in card.prompt.value.replace("<strong>", "").replace(
        "</strong>", "")


def test_the_challenge_says_it_is_beyond_the_58() -> None:
    challenges = all_challenges()
    assert challenges, "the records define exercises beyond the 58"
    assert all("beyond the 58" in widgets.widget(r.id).prompt.value for r in challenges)
    assert all("beyond the 58" not in widgets.widget(r.id).prompt.value
               for r in all_exercises() if r.chapter == 9)


@pytest.mark.parametrize("record", all_exercises() + all_challenges(), ids=lambda r: r.id)
def test_every_variant_changes_the_answer(record: Any) -> None:
    printed = record.expected()
    if callable(printed) or record.answer_kind.function_spec() is not None:
        pytest.skip("graded on generated inputs, not on printed numbers")
    assert not widgets.widget(record.id).buttons["variant"].disabled
    for seed in range(40):
        params = record.variant(seed)
        assert not same_answer(record.expected(params), printed), (record.id, params)


@pytest.mark.parametrize("record", [r for r in all_exercises() if r.category == "debug"],
                         ids=lambda r: r.id)
def test_a_debug_card_offers_variants_that_show_their_own_program(record: Any) -> None:
    from workbook.learner import checking

    assert not widgets.widget(record.id).buttons["variant"].disabled
    for seed in range(10):
        practice = checking.practice(record.id, seed)
        line, _ = record.expected(practice.params)
        buggy = record.answer_kind.code_for(practice.params).splitlines()[line - 1].strip()
        assert buggy in practice.prompt  # the variant's program, with its buggy line, is shown


@pytest.mark.parametrize("exercise_id", ["0.4", "2.5", "3.5", "8.4"])
def test_a_pooled_choice_variant_shows_its_own_options(exercise_id: str) -> None:
    from workbook.learner import checking

    record = lookup(exercise_id)
    for seed in range(10):
        practice = checking.practice(exercise_id, seed)
        right = practice.params["option_" + record.expected(practice.params)]
        assert right in practice.prompt
