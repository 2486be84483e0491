"""Per-student numbers: a course secret and a student's id choose that student's parameters.

    secret = read_secret(Path("course.key"))
    seed = student_seed(secret, "s1234")          # 32 hex digits, HMAC-SHA256 keyed by the secret
    mine = record.personalised(seed)              # the exercise in that student's numbers

The seed is a keyed hash (HMAC, RFC 2104, with SHA-256), so knowing classmates' ids or their
numbers tells nothing about anyone else's, and nobody without the secret can recompute them.
The release, the learner's own checks (which receive the student's seed in their notebook)
and the batch grader (which recomputes it from the secret and the id it files the notebook
under, never from the notebook) all draw the same numbers through ``Exercise.personalised``.

:class:`Classmates` answers the integrity question: whose numbers is a wrong answer right for?
"""

from __future__ import annotations

import hashlib
import hmac
import json
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from autograder.exercise import Exercise, same_answer

MIN_SECRET_BYTES = 16
MAX_SECRET_BYTES = 4096
_DOMAIN = b"distributed-training-workbook/student-numbers/v1\x00"


class SecretError(ValueError):
    """The course secret is missing, too short, or readable by others."""


def read_secret(path: Path) -> bytes:
    """The course secret: the file's bytes without surrounding whitespace, at least 16 of
    them. A file that other users may read is refused (whoever reads it can compute every
    student's numbers)."""
    try:
        info = path.stat()
        data = path.read_bytes()[: MAX_SECRET_BYTES + 1]
    except OSError as error:
        raise SecretError(f"cannot read the secret file {path}: {error.strerror}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretError(f"the secret file {path} may be read by other users; make it yours "
                          f"only: chmod 600 {path}")
    secret = data.strip()
    if not MIN_SECRET_BYTES <= len(secret) <= MAX_SECRET_BYTES:
        raise SecretError(f"the secret file {path} must hold {MIN_SECRET_BYTES} to "
                          f"{MAX_SECRET_BYTES} bytes (e.g. 64 hex digits from "
                          "`workbook new-secret`), it holds {len(secret)}")
    return secret


def student_seed(secret: bytes, student_id: str) -> str:
    """The student's seed: HMAC-SHA256(secret, id), 128 bits as 32 hex digits."""
    key = student_id.strip() or student_id  # a folder named " " is still somebody
    if not key:
        raise ValueError("a student id must not be empty")
    digest = hmac.new(secret, _DOMAIN + key.encode("utf-8", "surrogatepass"),
                      hashlib.sha256).hexdigest()
    return digest[:32]


def grading_seed(secret: bytes, student_id: str, exercise_id: str) -> int:
    """The seed a lab's graded cases are drawn from for this student: keyed by the secret
    itself, so (unlike the student's seed, which their notebook carries) nobody can know
    their graded cases in advance, and a regrade draws the same ones."""
    message = f"lab-grading\x00{student_id.strip()}\x00{exercise_id}".encode("utf-8",
                                                                          "surrogatepass")
    return int(hmac.new(secret, _DOMAIN + message, hashlib.sha256).hexdigest()[:8], 16)


def fingerprint(secret: bytes) -> str:
    """A short public name of the secret (to tell two secrets apart, never to recover one)."""
    return hmac.new(secret, _DOMAIN + b"fingerprint", hashlib.sha256).hexdigest()[:12]


@lru_cache(maxsize=65536)
def personalised(record: Exercise, seed: str) -> Exercise:
    """``record`` in the numbers of the student whose seed is ``seed`` (cached)."""
    return record.personalised(seed)


def carries_numbers(record: Exercise) -> bool:
    """Whether an answer to ``record`` is a value that depends on the student's numbers (a
    function or a lab program is judged on the student's own inputs instead)."""
    kind = record.answer_kind
    return kind.function_spec() is None and not callable(record.expected())


@dataclass
class Classmates:
    """Every student's seed (the roster and everyone who handed in), to say whose numbers a
    wrong answer is right for, and which student's seed a notebook carries."""

    seeds: Mapping[str, str]                      # student id -> seed
    _by_seed: dict[str, str] = field(default_factory=dict, repr=False)
    _fitting: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict, repr=False)
    _grouped: dict[str, list[list[str]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_seed = {seed: student for student, seed in self.seeds.items()}

    def whose_seed(self, seed: str) -> str:
        """The student whose seed this is ("" for none of the class's)."""
        return self._by_seed.get(seed, "")

    def whose_answer(self, record: Exercise, student: str, answer: Any) -> str:
        """Another student for whose numbers ``answer`` is right but not for ``student``'s
        ("" when there is none, or when the exercise's answer is not a number-bound value).
        Who an answer fits is worked out once per distinct answer, so a class handing in
        the same wrong answer costs one pass over the class, not one per student."""
        if not carries_numbers(record) or student not in self.seeds:
            return ""
        mine = personalised(record, self.seeds[student]).expected()
        for other in self._fits(record, answer):
            if other != student and not same_answer(
                    personalised(record, self.seeds[other]).expected(), mine):
                return other
        return ""

    def _fits(self, record: Exercise, answer: Any) -> tuple[str, ...]:
        """Every student for whose numbers ``answer`` is right. Students who share numbers
        are asked once, so the cost grows with the exercise's variants, not the class."""
        text = repr(answer) if isinstance(answer, (int, float, str, list, tuple, dict)) else ""
        key = (record.id, text) if 0 < len(text) <= 2000 else None
        if key is not None and key in self._fitting:
            return self._fitting[key]
        fits: list[str] = []
        for students in self._groups(record):
            theirs = personalised(record, self.seeds[students[0]])
            try:
                passed = theirs.answer_kind.grade(answer, theirs.expected(), theirs.params,
                                                  ()).passed
            except Exception:  # noqa: BLE001 - a learner's value a kind cannot judge
                passed = False
            if passed:
                fits.extend(students)
        if key is not None:
            self._fitting[key] = tuple(sorted(fits))
        return tuple(sorted(fits))

    def _groups(self, record: Exercise) -> list[list[str]]:
        """The class grouped by the numbers ``record`` gives them (cached per exercise)."""
        if record.id not in self._grouped:
            groups: dict[str, list[str]] = {}
            for student in sorted(self.seeds):
                params = personalised(record, self.seeds[student]).params
                numbers = json.dumps(dict(params), sort_keys=True, default=repr)
                groups.setdefault(numbers, []).append(student)
            self._grouped[record.id] = list(groups.values())
        return self._grouped[record.id]
