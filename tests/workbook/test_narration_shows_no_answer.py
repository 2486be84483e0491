"""No narration transcript states an exercise's answer.

Every narration section's transcript is on the page (and spoken) before the learner
answers anything, so each is searched for every answer of its chapter like the page is,
with its numbers in words read as numbers ("ninety-eight seconds" is 98 s). The spoken
prediction is searched for the prediction's own answer too.
"""

from __future__ import annotations

from typing import Any

import pytest
import test_page_shows_no_answer as page_test

from narration.scripts import SECTIONS, segment
from workbook.learner.prediction_page import prediction_for
from workbook.outline import CHAPTERS


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_no_transcript_states_an_answer(chapter: Any) -> None:
    key = f"ch{chapter.number:02d}"
    answers = page_test.answers_of(chapter.number)
    prediction = prediction_for(key)
    if not prediction.is_choice:
        answers[f"prediction {key}"] = (float(prediction.actual()), prediction.unit)
    elif prediction.measure is not None:
        answers[f"prediction {key}"] = (float(prediction.measure()), prediction.measure_unit)
    texts = [segment(f"{key}/{section}").text for section in SECTIONS]
    found = page_test.leaks(texts, answers)
    assert not found, f"{key}: {found}"
