""""Try a variant" shows the new question once, rendered, and only where it means something.

After a press the card's header holds the variant's question with its markdown rendered
(``**bold**`` as <strong>), and the output area says where to look instead of printing the
question a second time. A lab, a function to write or a question whose numbers cannot
change offers no variant and does not promise one.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from autograder.widgets import PRINTED, PRINTED_ONLY
from workbook.learner import widgets
from workbook.records import all_labs, by_id, lookup


def _visible_text(card: Any) -> str:
    return card.prompt.value + "\n" + card.output.value


def _sentence(prompt: str) -> str:
    """A stretch of the prompt's plain words that appears once per rendering."""
    words = re.sub(r"[*`_{}]", "", prompt).split()
    return " ".join(words[:6])


@pytest.mark.parametrize("exercise_id", ["1.1", "5.3", "9.5", "3.1"])
def test_the_variant_question_is_shown_once_and_rendered(exercise_id: str) -> None:
    card = widgets.widget(exercise_id)
    card.buttons["variant"].click()
    shown = _visible_text(card)
    assert "Your variant:" in card.prompt.value
    assert "**" not in shown, "raw markdown bold on the card"
    opening = _sentence(lookup(exercise_id).render_prompt(card.params))
    assert shown.count(opening) == 1, (opening, shown)


def test_bold_in_a_variant_is_rendered() -> None:
    bold = [r for r in by_id().values() if "**" in r.prompt]
    for record in bold[:3]:
        card = widgets.widget(record.id)
        if card.buttons["variant"].layout.display == "none":
            continue
        card.buttons["variant"].click()
        assert "<strong>" in card.prompt.value and "**" not in card.prompt.value


@pytest.mark.parametrize("record", all_labs(), ids=lambda r: r.id)
def test_labs_offer_no_variant(record: Any) -> None:
    card = widgets.widget(record.id)
    assert card.buttons["variant"].layout.display == "none"
    assert card.buttons["variant"].disabled
    assert PRINTED not in card.prompt.value and PRINTED_ONLY in card.prompt.value


def test_every_card_that_offers_a_variant_changes_its_question() -> None:
    for record in by_id().values():
        card = widgets.widget(record.id)
        if card.buttons["variant"].layout.display == "none":
            assert "Try a variant" not in card.prompt.value
            continue
        card.buttons["variant"].click()
        assert record.render_prompt(card.params) != record.render_prompt(), record.id
