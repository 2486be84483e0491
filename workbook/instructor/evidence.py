"""How strong a sign of copying is: an integrity flag only where an honest student is very
unlikely to produce the same evidence.

With per-student numbers, a wrong answer that is right for a classmate's numbers *may* be
copied. Alone it proves little: in a multiple-choice exercise whose options are shuffled
per student, nearly every wrong letter is some classmate's right letter; in a numeric
exercise with a handful of variants, a common slip can land on a neighbour's value. So:

* a wrong answer that one of the student's *own* known mistakes explains (a misconception
  of the exercise evaluated in their numbers, or a generic slip such as a missing factor of
  two or a unit off by a thousand) is no evidence at all (once the other matches to the
  same classmate are strong, it is flagged with them: it is that classmate's answer);
* each remaining match is weighed by the chance that an honest wrong answer is right for
  that one classmate by luck: 1 / (distinct answers the exercise gives over its whole
  variant space), i.e. a wrong answer spread evenly over the answers the exercise can have;
* the matches of one student to one classmate are separate exercises, so their chances
  multiply, and a union bound over the classmates it could have been gives the strength:

      p = (classmates) x product over matched exercises of 1 / answers(exercise)

A student is flagged (status ``integrity``, zero points on those rows) only when at least
:data:`MIN_EXERCISES` exercises match the same classmate *and* ``p`` is at most
:data:`MAX_CHANCE`. Anything weaker is not evidence: the rows stay ``wrong`` with the
ordinary feedback, and nobody's page mentions a classmate. A notebook that carries a
classmate's numbers cell is strong evidence on its own (a 128-bit seed is not guessed).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from autograder.exercise import Exercise
from autograder.personal import personalised
from workbook.records import printed

MIN_EXERCISES = 2
MAX_CHANCE = 1e-3
SPACE_SAMPLES = 400     # variant draws to count the answers an exercise can have


def _key(value: Any) -> str:
    """An answer as a comparable key, floats to six significant digits."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(_key(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_key(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


@cache
def answer_space(exercise_id: str) -> int:
    """How many distinct right answers the exercise gives over its variant space (counted
    on :data:`SPACE_SAMPLES` draws, at least 1)."""
    base = printed(exercise_id)
    seen = {_key(personalised(base, f"{i:032x}").expected()) for i in range(SPACE_SAMPLES)}
    return max(1, len(seen))


def explained(own: Exercise, answer: Any, message: str) -> bool:
    """Whether one of the student's own known mistakes explains a wrong ``answer`` to their
    record ``own``: a misconception evaluated in their numbers, or a generic slip (the
    numeric kind's feedback then names the direction and the cause: "too large -- ...")."""
    if "Not yet: your answer is too " in message and " -- " in message:
        return True
    for wrong, _ in own.wrong_answers():
        try:
            if own.answer_kind.grade(answer, wrong, own.params, ()).passed:
                return True
        except Exception:  # noqa: BLE001 - a value the kind cannot judge explains nothing
            continue
    return False


@dataclass(frozen=True)
class Weighed:
    """The matches of one student to one classmate, and how strong they are."""

    student: str
    classmate: str
    exercises: tuple[str, ...]
    p: float
    evidence: tuple[str, ...] = ()     # the matches no known mistake explains

    @property
    def strong(self) -> bool:
        return len(self.evidence) >= MIN_EXERCISES and self.p <= MAX_CHANCE

    def words(self) -> str:
        level = "strong" if self.strong else "weak, not flagged"
        return (f"{', '.join(self.exercises)} right for the numbers of {self.classmate} "
                f"({level}: chance for an honest student about {self.p:.1g})")


def weigh(copied: Mapping[tuple[str, str], str], seeds: Mapping[str, str],
          explained: Collection[tuple[str, str]] = ()) -> list[Weighed]:
    """Every (student, classmate) pair of matches in ``copied`` ((student, exercise) ->
    classmate), weighed by its ``evidence``: the matches no known mistake of the
    student's explains (``explained``). A strong pair holds all its matches, explained
    ones included: once copying from that classmate is shown, their answer is theirs."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for (student, exercise), classmate in sorted(copied.items()):
        pairs.setdefault((student, classmate), []).append(exercise)
    out = []
    classmates = max(1, len(seeds) - 1)
    for (student, classmate), exercises in sorted(pairs.items()):
        evidence = tuple(e for e in exercises if (student, e) not in explained)
        p = float(classmates)
        for exercise in evidence:
            p /= answer_space(exercise)
        out.append(Weighed(student, classmate, tuple(exercises), min(1.0, p), evidence))
    return out
