"""Every card shows its question and options as formatted text, never as a template.

Each record's card is built with the printed numbers and then moved to several variants
(seeded draws of "Try a variant"); after each, everything the card shows is read: the
header (HTML), every option or line label of its input, the placeholder of its boxes, and
for a choice the feedback to every option. No text may hold an unfilled template field
(``{option_A}``) or markdown a widget would print as written (``**send**``, a backtick,
``\\$``, a "- " bullet or a "#" heading at the start of a line).
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from autograder.kinds import Choice
from workbook.learner import checking, widgets
from workbook.records import by_id

SEEDS = (0, 1, 2, 7, 31)
FIELD = re.compile(r"\{[A-Za-z_]\w*(?:![rsa])?(?::[^{}]*)?\}")
RAW_MARKDOWN = re.compile(r"\*\*|`|\\\$|(?:^|\n)[ \t]*(?:[-*] |#{1,6} )")
_TAG = re.compile(r"<[^>]+>")
_LINE_BREAK = re.compile(r"<br\s*/?>|</?(?:p|div|li|pre)\b[^>]*>", re.IGNORECASE)


def shown_text(value: str) -> str:
    """What a reader sees of an HTML value: line breaks kept, tags dropped, entities read."""
    return html.unescape(_TAG.sub("", _LINE_BREAK.sub("\n", value)))


def _walk(widget: Any) -> list[str]:
    texts = []
    for name in ("value", "description", "placeholder"):
        value = getattr(widget, name, None)
        if isinstance(value, str):
            texts.append(value)
    texts += [str(option) for option in getattr(widget, "options", ()) or ()]
    for child in getattr(widget, "children", ()) or ():
        texts += _walk(child)
    return texts


def _outputs(card: Any) -> list[str]:
    return [card.output.value] if card.output.value else []


def card_texts(card: Any) -> list[str]:
    """Everything the card shows now, as a reader sees it."""
    texts = [card.prompt.value, *_walk(card.input), *_outputs(card)]
    texts += [rung.value for rung in card.ladder.children]
    return [shown_text(t) for t in texts]


def _choice_feedback(card: Any) -> list[str]:
    """The card's answer to every option, chosen one after the other."""
    found = []
    for label in list(card.input.options):
        card.input.value = label
        card.check()
        found += [shown_text(t) for t in _outputs(card)]
    card.input.value = None
    return found


def problems(texts: list[str]) -> list[str]:
    found = []
    for text in texts:
        for pattern in (FIELD, RAW_MARKDOWN):
            for match in pattern.finditer(text):
                start = max(0, match.start() - 40)
                found.append(f"{match.group().strip()!r} in {text[start:match.end() + 40]!r}")
    return found


def _seeded_variant(record_id: str, seed: int) -> Any:
    return lambda: checking.practice(record_id, seed)


@pytest.mark.parametrize("record", list(by_id().values()), ids=lambda r: r.id)
def test_every_card_renders_its_question_and_options(record: Any) -> None:
    card = widgets.widget(record.id)
    is_choice = isinstance(record.answer_kind, Choice)
    seen = {"printed": card_texts(card) + (_choice_feedback(card) if is_choice else [])}
    if card.buttons["variant"].layout.display != "none":
        for seed in SEEDS:
            card.actions.variant = _seeded_variant(record.id, seed)
            card.buttons["variant"].click()
            seen[f"variant {seed}"] = card_texts(card)
            if is_choice:
                seen[f"variant {seed}"] += _choice_feedback(card)
    found = {where: problems(texts) for where, texts in seen.items()}
    assert not any(found.values()), f"{record.id}: {found}"


def test_choice_options_follow_the_variant() -> None:
    # A question pool deals its own options per variant: the buttons show that draw's.
    pooled = [r for r in by_id().values() if isinstance(r.answer_kind, Choice)
              and any("{" in o.text for o in r.answer_kind.options)]
    assert pooled, "no exercise deals its options"
    for record in pooled:
        card = widgets.widget(record.id)
        for seed in SEEDS:
            card.actions.variant = _seeded_variant(record.id, seed)
            card.buttons["variant"].click()
            kind = record.answer_kind
            assert isinstance(kind, Choice)
            dealt = kind.options_for(card.params)
            shown = [str(label) for label in card.input.options]
            assert [label.split(". ", 1)[0] for label in shown] == [o.key for o in dealt]
            for label, option in zip(shown, dealt, strict=True):
                words = re.sub(r"[*`\\]", "", option.text).split()
                assert label.split(". ", 1)[1].split() == words, (record.id, label)


def test_the_search_sees_placeholders_and_raw_markdown() -> None:
    assert problems(["A. {option_A}"]) and problems(["each GPU **send**s"])
    assert problems(["line one\n- **A.** ring"]) and problems(["costs \\$2"])
    assert problems(["use `zero_stage`"]) and problems(["{x:.2f} GB"])
    assert not problems(["A. The ring", "2 * 3 * 4 = 24", "a set {1, 2}", "\u2022 A. ring"])
    assert shown_text("a<br>- b &amp; c") == "a\n- b & c"
