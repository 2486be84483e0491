"""No explorer answers an exercise after the actions a learner takes with it.

Every chapter's explorer is built as the notebook builds it, then moved the way a learner
moves it: first through the settings the chapter's text suggests (``SUGGESTED``, one list
per chapter; a test below fails when the prose suggests something not listed here), then
one control at a time through every option of a selection control and, for a number
control, its ends and every printed number of the chapter's exercises that it can take
(the likely "try the setting of exercise 1.6"). After each action the readout (the
verdicts, which show once the prediction is locked) and the text of every figure drawn
are searched for every exercise's answer, in any unit, rounding or notation (the page
leak test's search, :mod:`page_text`).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterator
from typing import Any

import pytest
import test_page_shows_no_answer as leak_test

from workbook.outline import CHAPTERS
from workbook.paths import SOURCE_DIR

#: chapter -> the settings its prose tells the learner to try, by control description,
#: applied in order (each on top of the one before, as a learner does)
SUGGESTED: dict[int, list[dict[str, Any]]] = {
    0: [{"GPUs N": 1000}, {"gradient": 1e-5}],
    1: [{"parameters": 30.0, "data-parallel GPUs": 32, "activations (GB)": 20.0,
         "usable GB per GPU": 84.0}, {"data-parallel GPUs": 128}],
}
#: the sentences that suggest them, so that a new suggestion in the prose is noticed
SUGGESTION = re.compile(r"(?:^|(?<=[.!?:]))\s*((?:Try|Set|Move) [^.?]*\d[^.?]*)", re.MULTILINE)
LISTED_SENTENCES = {
    0: "Try\nthe 10 GB gradient on 1,000 GPUs, then the same with 10 KB",
    1: "Try 30B parameters on 32 GPUs with 20 GB of activations and an 84 GB budget: which "
       "stages\nfit? Then see what 128 GPUs change",
}


class Figures:
    """Every matplotlib figure made while it is active (explorers close theirs)."""

    def __init__(self) -> None:
        self.made: list[Any] = []

    def __enter__(self) -> Figures:
        import matplotlib.figure as mf

        self._init = mf.Figure.__init__
        made, original = self.made, self._init

        def hooked(fig: Any, *args: Any, **kwargs: Any) -> None:
            original(fig, *args, **kwargs)
            made.append(fig)

        mf.Figure.__init__ = hooked  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        import matplotlib.figure as mf

        mf.Figure.__init__ = self._init  # type: ignore[method-assign]

    def texts(self) -> list[str]:
        """Every text drawn, tick labels that are words included (a scale's numbers are
        not readouts; "FP16 (1-5-10)" is a category's label and may carry one)."""
        import matplotlib.text as mt

        found = []
        for fig in self.made:
            fig.canvas.draw()
            ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                     for t in axis.get_ticklabels(which="both")}
            found += [t.get_text() for t in fig.findobj(mt.Text)
                      if t.get_visible() and t.get_text().strip()
                      and (id(t) not in ticks or re.search(r"[A-Za-z]{2,}", t.get_text()))]
        self.made.clear()
        return found


def _explorer(chapter: int) -> Any:
    module = importlib.import_module(f"workbook.explorers.ch{chapter:02d}")
    return module.explorer()


def _values(control: Any, printed: list[float]) -> list[Any]:
    """What a learner can set ``control`` to that this test tries."""
    options = getattr(control, "options", None)
    if options:
        return [o[1] if isinstance(o, tuple) else o for o in options]
    low, high = getattr(control, "min", None), getattr(control, "max", None)
    if low is None or high is None or isinstance(control.value, bool):
        return []
    kind = type(control.value)
    return [kind(v) for v in sorted({low, high, *(p for p in printed if low <= p <= high)})
            if kind is float or float(v).is_integer()]


def _printed_numbers(chapter: int) -> list[float]:
    records = [r for r in leak_test.all_exercises() if r.chapter == chapter]
    return sorted({float(v) for r in records for v in r.params.values()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)})


def controls(box: Any) -> list[Any]:
    """The explorer's controls (one view, or chapter 8's two)."""
    found = box.view.controls if hasattr(box, "view") else list(box.controls.values())
    return list(found)


def readouts(box: Any) -> list[str]:
    """The explorer's verdicts: what shows once the prediction is locked."""
    status = box.view.status if hasattr(box, "view") else box.status
    return [s.value for s in (status if isinstance(status, tuple) else (status,))]


def actions(chapter: int, box: Any) -> Iterator[tuple[str, bool]]:
    """Apply every action; yield its description, and whether the prose suggests it."""
    by_name = {c.description: c for c in controls(box)}
    for settings in SUGGESTED.get(chapter, []):
        for k, (name, value) in enumerate(settings.items()):
            by_name[name].value = value  # one slider after the other, as a learner moves them
            if k < len(settings) - 1:
                yield f"on the way to {settings}: {name} = {value!r}", False
        yield f"suggested {settings}", True
    start = {c.description: c.value for c in controls(box)}
    printed = _printed_numbers(chapter)
    for control in controls(box):
        for value in _values(control, printed):
            try:
                control.value = value
            except Exception:  # a value this control refuses is not an action a learner has
                continue
            yield f"{control.description} = {value!r}", False
        control.value = start[control.description]


def at_the_setting_of(box: Any, chapter: int) -> set[str]:
    """The exercises whose printed numbers the explorer is set to: two or more of them (all
    of them for an exercise with fewer) are values of its controls now. A number that only
    equals an answer at another setting is a coincidence, not that exercise's answer."""
    values = set()
    for control in controls(box):
        value = control.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values.add(round(float(value), 9))
    found = set()
    for record in leak_test.all_exercises():
        if record.chapter != chapter:
            continue
        printed = {round(float(v), 9) for v in record.params.values()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if printed and len(printed & values) >= min(2, len(printed)):
            found.add(record.id)
    return found


EXPLORED = [c for c in CHAPTERS if c.number != 9]  # 9's planner: tests/workbook/test_explorer_ch09


@pytest.mark.slow
@pytest.mark.parametrize("chapter", EXPLORED, ids=lambda c: c.stem)
def test_no_action_makes_the_explorer_show_an_answer(chapter: Any) -> None:
    answers = leak_test.answers_of(chapter.number)
    found: dict[str, list[str]] = {}
    with Figures() as figures:
        box = _explorer(chapter.number)
        shown = [*readouts(box), *figures.texts()]
        for exercise_id, lines in leak_test.leaks(shown, answers).items():
            found.setdefault(exercise_id, []).append(f"as opened: {lines[0]}")
        for action, suggested in actions(chapter.number, box):
            shown = [*readouts(box), *figures.texts()]
            here = at_the_setting_of(box, chapter.number)
            for exercise_id, lines in leak_test.leaks(shown, answers).items():
                if suggested or exercise_id in here:
                    found.setdefault(exercise_id, []).append(f"after {action}: {lines[0]}")
    assert not found, f"{chapter.stem}: {found}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.stem)
def test_every_suggestion_in_the_prose_is_tried(chapter: Any) -> None:
    path = SOURCE_DIR / f"{chapter.stem}.md"
    prose = path.read_text(encoding="utf-8")
    explore = prose.split("## Explore", 1)[1].split("## Exercises", 1)[0] \
        if "## Explore" in prose else ""
    suggested = SUGGESTION.findall(explore)
    listed = LISTED_SENTENCES.get(chapter.number)
    for sentence in suggested:
        assert listed is not None and sentence.split()[:4] == listed.split()[:4], (
            f"{chapter.stem} suggests {sentence!r}: add its settings to SUGGESTED")
    if listed is not None:
        assert " ".join(listed.split()) in " ".join(prose.split()), chapter.stem
