"""Which chapter a submitted notebook is: from its metadata, never from its file name.

The builder writes ``{"workbook": {"chapter": N, "role": "learner"}}`` into every notebook.
Editors keep notebook metadata, but a student may paste the cells into a fresh notebook;
then the cells still carry their ids, nbgrader grade ids (``answer_5_1``, ``ch05_cell_003``)
and exercise metadata, and the release sharing the most of them wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from autograder.cell_metadata import grade_id, has_solution, workbook_meta
from autograder.grading.model import Release
from autograder.grading.read import Notebook, Unreadable

_CHAPTER_IN_NAME = re.compile(r"(?:ch(?:apter)?[ _-]?)?0*(\d{1,2})(?:\D|$)", re.IGNORECASE)


def identify(notebook: Notebook, releases: Mapping[int, Release]) -> Release:
    """The release this notebook was made from; raises Unreadable when there is none."""
    meta = workbook_meta(notebook.metadata)
    chapter = meta.get("chapter")
    # nbgrader's student version keeps the instructor notebook's metadata but has its
    # solution regions replaced; only a notebook that still holds them is refused.
    if any(cell.cell_type == "code" and has_solution(cell.source) for cell in notebook.cells):
        raise Unreadable(f"this is the instructor version of chapter {chapter} (it holds the "
                         "solutions), not a learner's notebook")
    if type(chapter) is int and chapter in releases:
        return releases[chapter]
    best = _best_by_cells(notebook, releases)
    if best is None:
        raise Unreadable("not a workbook chapter notebook: its metadata names no chapter and "
                         "none of its cells comes from a chapter release")
    return best


def _best_by_cells(notebook: Notebook, releases: Mapping[int, Release]) -> Release | None:
    scores: dict[int, int] = {}
    for number, release in releases.items():
        ids = {c.cell_id for c in release.cells} | {c.grade_id for c in release.cells if
                                                    c.grade_id}
        exercises = {t.record.id for t in release.tasks}
        score = 0
        for cell in notebook.cells:
            exercise = workbook_meta(cell.metadata).get("exercise")
            score += (cell.cell_id in ids) + (grade_id(cell.metadata) in ids) + (
                exercise in exercises)
        scores[number] = score
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    if not ranked or ranked[0][1] == 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return releases[ranked[0][0]]


def implied_chapter(assignment: str, releases: Mapping[int, Release]) -> int | None:
    """The chapter an assignment folder's name points to ("ch05_pipeline...", "ch05", "5"),
    or None when the name says nothing."""
    if not assignment:
        return None
    match = _CHAPTER_IN_NAME.match(assignment)  # first: it needs no release loaded
    if match and int(match.group(1)) in releases:
        return int(match.group(1))
    for number, release in releases.items():
        if assignment == release.stem:
            return number
    return None
