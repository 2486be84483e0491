"""Every chapter locks its prediction before it explains anything.

The lock promises a guess "before any explanation": in every chapter source the predict
cell comes right after the opening paragraph, before any section, formula, table, figure
or exercise of the chapter.
"""

from __future__ import annotations

from typing import Any

import pytest

from workbook.outline import CHAPTERS
from workbook.paths import SOURCE_DIR


def before_the_lock(source: str) -> list[str]:
    """The paragraphs of ``source`` before its predict section beyond the title and the
    opening paragraph."""
    head = source.split("```{predict}", 1)[0].split("## Predict first", 1)[0]
    paragraphs = [p.strip() for p in head.split("\n\n") if p.strip()]
    return [p.splitlines()[0] for p in paragraphs[2:]]  # the title, then one paragraph


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_the_lock_comes_before_any_explanation(chapter: Any) -> None:
    source = (SOURCE_DIR / f"{chapter.stem}.md").read_text(encoding="utf-8")
    if chapter.number == 0:  # the welcome: how the workbook works, then the chapter
        source = source.split("+++", 1)[1]
        source = "# Chapter 0\n" + source
    assert not before_the_lock(source), chapter.stem


def test_the_check_sees_an_explanation_before_the_lock() -> None:
    late = "# Ch\n\nOpening.\n\n## Theory\n\n$$x$$\n\n## Predict first\n\n```{predict} ch01\n```"
    assert before_the_lock(late) == ["## Theory", "$$x$$"]
    assert before_the_lock("# Ch\n\nOpening.\n\nMore.\n\n```{predict} ch01\n```") == ["More."]
    early = "# Ch\n\nOpening.\n\n## Predict first\n\n```{narration} ch01/predict\n```\n\n" \
            "```{predict} ch01\n```\n\n## Theory"
    assert before_the_lock(early) == []
