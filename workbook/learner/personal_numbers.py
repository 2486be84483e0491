"""A personalised notebook's own numbers, for the learner's checks: ``wb.your_numbers``.

A notebook made by ``workbook release --roster ... --secret-file ...`` carries one line
after its setup cell::

    wb.your_numbers("s1234", "b62b5236...")

naming the student and their seed (a keyed hash of the course secret and their id, never
the secret). From then on every exercise in that kernel -- its check, card, hints, worked
solution and practice variants -- is in that student's numbers, offline. The grader never
reads this line to choose numbers: it recomputes the seed from the secret and the id the
notebook was handed in under.
"""

from __future__ import annotations

import re

from autograder.exercise import Exercise
from autograder.personal import personalised

_SEED = re.compile(r"[0-9a-f]{32}")
_current: dict[str, str] = {}


class NumbersNote(str):
    """What the numbers cell shows: whose numbers this notebook is in."""

    def __repr__(self) -> str:  # shown as a sentence, not a quoted string
        return str(self)

    def _repr_html_(self) -> str:
        from html import escape

        return f"<p><em>{escape(str(self))}</em></p>"


def your_numbers(student: str, seed: str) -> NumbersNote:
    """Use ``student``'s numbers (drawn from ``seed``) for every exercise from now on."""
    if not isinstance(seed, str) or not _SEED.fullmatch(seed):
        raise ValueError("wb.your_numbers expects the 32-hex-digit seed its release wrote; "
                         "run the cell as it was handed out")
    _current.clear()
    _current.update(student=str(student), seed=seed)
    return NumbersNote(f"This notebook is in the numbers of {student}: every check, card, "
                       "hint and solution below uses them.")


def current_seed() -> str:
    """The seed of the numbers in use ("" for the printed ones)."""
    return _current.get("seed", "")


def in_your_numbers(record: Exercise) -> Exercise:
    """``record`` in the numbers this kernel uses (unchanged when none were set)."""
    seed = current_seed()
    return personalised(record, seed) if seed else record
