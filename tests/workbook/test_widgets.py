"""Every exercise card accepts its right answer through the widget and a Check click."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import workbook as wb

SMOKE = Path(__file__).resolve().parents[1] / "compat" / "widget_smoke.py"


def load_smoke():
    spec = importlib.util.spec_from_file_location("widget_smoke", SMOKE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_card_checks_its_right_answer() -> None:
    assert load_smoke().drive_all_cards() == []


def test_wrong_answer_through_a_card_shows_feedback_in_words() -> None:
    card = wb.widget("0.1")
    card.write("2 GB")
    card.buttons["check"].click()
    assert not card.last.passed
    html = card.last._repr_html_()
    assert "Not yet" in html  # a word, not only a colour


def test_unanswered_card_explains_what_is_expected() -> None:
    card = wb.widget("1.6")
    card.buttons["check"].click()
    assert "Not answered yet" in str(card.last)


def test_prompt_markdown_is_rendered_and_escaped() -> None:
    from autograder.widgets import inline_markdown

    ignore = '<span class="mathjax_ignore tex2jax_ignore">'  # "$2 ... $5" is money, not math
    assert inline_markdown("each GPU **sends**, *once*, `n - 1` <b>") == (
        f"{ignore}each GPU <strong>sends</strong>, <em>once</em>, <code>n - 1</code> &lt;b&gt;"
        "</span>")
    assert inline_markdown("2 * 3 * 4") == f"{ignore}2 * 3 * 4</span>"  # not emphasis


def test_unanswered_is_said_in_words() -> None:
    result = wb.check("0.1", None)
    assert str(result).startswith("○ Not answered yet")
    assert "Not answered yet" in result._repr_html_()
