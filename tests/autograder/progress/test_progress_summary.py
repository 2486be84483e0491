"""The dashboard: its numbers, and how it shows them as HTML, text and JSON."""

from __future__ import annotations

import itertools
import json
from datetime import date, datetime, time, timezone

from autograder.progress.events import Event
from autograder.progress.summary import (
    ChapterProgress,
    percent,
    streak_words,
    summarize,
    text_bar,
)

_uids = itertools.count()
FRESH = {"N": 4}
CHAPTERS = [
    (0, "Ring AllReduce", ["0.1", "0.2", "0.3"]),
    (1, "ZeRO <stages> & memory", ["1.1", "1.2"]),
]
TODAY = date(2025, 3, 6)


def check(exercise_id: str, day: int, *, correct: bool = True,
          variant: dict | None = None) -> Event:
    return Event(
        uid=f"{next(_uids):032x}", action="check", exercise_id=exercise_id, variant=variant,
        answer="", status="correct" if correct else "wrong", score=float(correct),
        hints_used=0, solution_viewed=False,
        utc=datetime.combine(date(2025, 3, day), time(12), tzinfo=timezone.utc),
        local_date=date(2025, 3, day).isoformat(), tz="UTC",
    )


# 0.1 mastered (canonical day 1, variant day 2); 0.2 proficient; 0.3 untouched;
# 1.1 familiar (variant only); 1.2 attempted (wrong). Correct checks fall on days
# 1, 2, 3 (a 3-day run) and 5 (run of 1, alive on the 6th).
EVENTS = [
    check("0.1", 1), check("0.1", 2, variant=FRESH),
    check("0.2", 3),
    check("1.1", 5, variant=FRESH),
    check("1.2", 5, correct=False),
    # A prediction is not a check of any listed exercise: no level, no streak day.
    Event.now("prediction", "ch01/predict", value='"B"', tz="UTC",
              clock=lambda: datetime(2025, 3, 4, 12, tzinfo=timezone.utc)),
]


def test_numbers() -> None:
    summary = summarize(EVENTS, CHAPTERS, TODAY)
    assert (summary.mastered, summary.proficient, summary.attempted, summary.total) \
        == (1, 2, 4, 5)
    assert (summary.streak_days, summary.best_streak) == (1, 3)
    assert summary.chapters == (
        ChapterProgress(0, "Ring AllReduce", mastered=1, proficient=2, attempted=2, total=3),
        ChapterProgress(1, "ZeRO <stages> & memory", mastered=0, proficient=0, attempted=2,
                        total=2),
    )
    assert summary.levels == {"0.1": "mastered", "0.2": "proficient", "0.3": "new",
                              "1.1": "familiar", "1.2": "attempted"}


def test_an_empty_log() -> None:
    summary = summarize([], CHAPTERS, TODAY)
    assert (summary.mastered, summary.attempted, summary.total, summary.streak_days) \
        == (0, 0, 5, 0)
    assert "none running" in str(summary)


def test_events_may_be_a_one_shot_iterator() -> None:
    assert summarize(iter(EVENTS), CHAPTERS, TODAY).best_streak == 3


def test_to_dict_is_json_ready() -> None:
    data = json.loads(json.dumps(summarize(EVENTS, CHAPTERS, TODAY).to_dict()))
    assert data["mastered"] == 1 and data["total"] == 5
    assert data["counts"] == {"new": 1, "attempted": 1, "familiar": 1, "proficient": 1,
                              "mastered": 1}
    assert data["chapters"][1] == {"chapter": 1, "title": "ZeRO <stages> & memory",
                                   "mastered": 0, "proficient": 0, "attempted": 2, "total": 2}
    assert data["levels"]["0.3"] == "new"


def test_plain_text_table() -> None:
    text = str(summarize(EVENTS, CHAPTERS, TODAY))
    lines = text.splitlines()
    # 1 of 5 mastered: 20% and 20 * 1 // 5 = 4 of 20 bar cells.
    assert lines[0] == "Mastered 1 / 5  [####................]  20%"
    assert lines[1] == "Proficient or better 2 / 5, attempted 4 / 5"
    assert lines[2] == "Streak: 1 day (best 3 days)"
    assert "Ring AllReduce" in lines[5] and lines[5].split()[-9:] == \
        ["1", "/", "3", "2", "/", "3", "2", "/", "3"]


def test_html_dashboard_is_accessible_and_escaped() -> None:
    page = summarize(EVENTS, CHAPTERS, TODAY)._repr_html_()
    assert "Mastered 1 / 5" in page and "(20%)" in page
    assert "Day streak: 1 day (best 3 days)" in page
    assert "&#x1F525;" in page  # the flame, hidden from screen readers beside the words
    assert '<th scope="col"' in page and "<caption" in page
    assert "ZeRO &lt;stages&gt; &amp; memory" in page and "<stages>" not in page
    assert "\u2588" * 4 + "\u2591" * 16 in page  # the bar in characters, not colour
    assert page.count("<tr>") == 3  # header row + 2 chapters


def test_helpers() -> None:
    assert percent(57, 58) == 98  # 98.3% rounds down: never 100% before the end
    assert percent(0, 0) == 0
    assert text_bar(3, 58, width=20) == "#" + "." * 19  # 20 * 3 // 58 = 1
    assert text_bar(58, 58, width=10) == "#" * 10
    assert streak_words(4, 9) == "4 days (best 9 days)"
    assert streak_words(1, 1) == "1 day (best 1 day)"


def test_labs_get_their_own_levels_and_never_change_the_counts() -> None:
    labs = [("0.7", "Ring AllReduce on a simulated cluster"), ("6.6", "TP MLP")]
    summary = summarize([*EVENTS, check("0.7", 5)], CHAPTERS, TODAY, labs)
    plain = summarize(EVENTS, CHAPTERS, TODAY)
    assert (summary.mastered, summary.proficient, summary.attempted, summary.total) == (
        plain.mastered, plain.proficient, plain.attempted, plain.total)
    assert summary.beyond == (("0.7", labs[0][1], "proficient"), ("6.6", "TP MLP", "new"))
    assert "Beyond the 5 (challenges and labs, not counted):" in str(summary)
    assert "0.7  Ring AllReduce on a simulated cluster: proficient" in str(summary)
    assert "<li>6.6 TP MLP: new</li>" in summary._repr_html_()
    assert json.loads(json.dumps(summary.to_dict()))["beyond"][0]["level"] == "proficient"
    assert "Beyond" not in str(plain)
