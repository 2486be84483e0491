"""Pair each submitted cell with the release cell it came from.

A cell is recognised, in order of trust, by its cell id (stable ids such as ``ch05-019``),
its nbgrader grade id, its exercise metadata (exercise and role), and finally, for an
unedited cell whose id an editor dropped, by its exact source. What is left over
is the learner's own: code cells they added, which run with the answer cells.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from autograder.cell_metadata import METADATA_KEY, grade_id
from autograder.grading.model import Release, ReleaseCell, checksum
from autograder.grading.read import Cell, Notebook


@dataclass(frozen=True)
class Match:
    """``counterpart``: release cell id -> index of the submitted cell that is that cell
    (answer cells excepted). ``answers``: exercise id -> indices of the cells claiming to be
    its answer cell (more than one is an error). ``added``: the learner's own code cells."""

    counterpart: Mapping[str, int]
    answers: Mapping[str, tuple[int, ...]]
    added: tuple[int, ...]

    def executed(self) -> list[int]:
        """Indices of the cells the grader runs, in notebook order: answers and added cells."""
        answer_cells = {index for indices in self.answers.values() for index in indices}
        return sorted(answer_cells | set(self.added))

    def answer_of(self, index: int) -> str:
        """The exercise whose answer cell ``index`` is ("" for an added cell)."""
        return next((ex for ex, indices in self.answers.items() if index in indices), "")


class _Lookup:
    """The release's cells indexed every way a submitted cell can be recognised."""

    def __init__(self, release: Release) -> None:
        self.by_id = {c.cell_id: c for c in release.cells if c.cell_id}
        self.by_grade_id = {c.grade_id: c for c in release.cells if c.grade_id}
        self.by_role: dict[tuple[str, str], ReleaseCell] = {
            (c.exercise, c.tag or c.role): c for c in release.cells if c.exercise}
        self.by_source = {(c.cell_type, c.checksum): c for c in release.cells
                          if c.role != "answer" and c.source.strip()}

    def find(self, cell: Cell, taken: set[str]) -> ReleaseCell | None:
        found = self.by_id.get(cell.cell_id) or self.by_grade_id.get(grade_id(cell.metadata))
        if found is None:
            meta: Any = cell.metadata.get(METADATA_KEY)
            if isinstance(meta, Mapping):
                found = self.by_role.get((str(meta.get("exercise")), str(meta.get("role"))))
        if found is None:
            candidate = self.by_source.get((cell.cell_type, checksum(cell.source)))
            found = candidate if candidate is not None and candidate.cell_id not in taken \
                else None
        return found


@lru_cache(maxsize=64)
def _lookup_for(release: Release) -> _Lookup:
    return _Lookup(release)


def match_cells(notebook: Notebook, release: Release) -> Match:
    lookup = _lookup_for(release)
    counterpart: dict[str, int] = {}
    answers: dict[str, list[int]] = {t.record.id: [] for t in release.tasks}
    added: list[int] = []
    for cell in notebook.cells:
        found = lookup.find(cell, set(counterpart))
        if found is None:
            if cell.cell_type == "code":
                added.append(cell.index)
        elif found.role == "answer":
            answers.setdefault(found.exercise, []).append(cell.index)
        elif found.cell_id not in counterpart:
            counterpart[found.cell_id] = cell.index
        # else: a copy of a release cell (a pasted check cell, say): never run
    return Match(counterpart, {ex: tuple(ix) for ex, ix in answers.items()}, tuple(added))
