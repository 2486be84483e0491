"""What the command line prints is plain text for a terminal.

``workbook show``, ``hint``, ``solution`` and ``practice`` print every exercise's text
without markdown markers (``**``, backticks, ``###``, ``\\$``) and without the notebook's
instructions ("the card below", "the check cell"): a terminal renders neither.
"""

from __future__ import annotations

import re

import pytest

from workbook.cli import main
from workbook.learner import checking
from workbook.records import by_id

MARKDOWN = re.compile(r"\*\*|`|\\\$|^#{1,6} |\*\([a-z]+\)\*", re.MULTILINE)
NOTEBOOK_WORDS = ("card below", "check cell", "Run the check")


def _printed(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main(list(argv))
    return capsys.readouterr().out


@pytest.mark.parametrize("exercise_id", sorted(by_id()))
def test_show_hint_and_solution_print_plain_text(exercise_id: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = {command: _printed(capsys, command, exercise_id)
           for command in ("show", "hint", "solution")}
    found = {c: MARKDOWN.findall(text) for c, text in out.items() if MARKDOWN.search(text)}
    assert not found, (exercise_id, found)
    assert not [w for w in NOTEBOOK_WORDS if w in out["show"]], out["show"]
    assert f"workbook check {exercise_id}" in out["show"]


@pytest.mark.parametrize("exercise_id", ["0.1", "0.4", "1.4"])
def test_a_variant_prints_plain_text(exercise_id: str) -> None:
    # 0.1 asks what each GPU **send**s: a terminal shows the word, not the markers.
    out = str(checking.practice(exercise_id, seed=3))
    assert not MARKDOWN.search(out), out


def test_the_search_sees_markdown() -> None:
    assert MARKDOWN.search("### Exercise 0.1 · x *(derive)*")
    assert MARKDOWN.search("each GPU **send**") and MARKDOWN.search("costs \\$2")
    assert not MARKDOWN.search("Exercise 0.1 · x (derive)\n2 * 3 = 6")
