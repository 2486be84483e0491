"""The cells generated from exercise records, for the learner and the instructor notebook.

Exercise prompts, answer cells and check cells come from the records only (what each
cell says about the answer, its record's answer kind says); a chapter source just names
the exercise. The instructor version carries nbgrader (schema 3) metadata, written by
:mod:`autograder.cell_metadata`: solution regions in answer cells, autograded check cells
with points, and every other cell locked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autograder.cell_metadata import (
    METADATA_KEY,
    NBGRADER_KEY,
    exercise_cell,
    exercise_grade_id,
    nbgrader_cell,
    with_solution,
)
from autograder.exercise import Exercise
from autograder.markup import escape_dollars

if TYPE_CHECKING:  # nbformat is imported only to build cells: importing it costs seconds
    from nbformat import NotebookNode

SETUP_SOURCE = '''\
# Setup: installs the workbook only when it is missing (for example on Google Colab).
# It never upgrades packages that are already installed, so no runtime restart is needed.
import importlib.util
if importlib.util.find_spec("workbook") is None:
    get_ipython().run_line_magic("pip", "install --quiet {install_spec}")
import workbook as wb'''


def prompt_markdown(record: Exercise) -> str:
    """The exercise's markdown cell: heading, question, notes, options or code, and how to
    answer in the notebook."""
    kind = record.answer_kind
    return "\n".join([*prompt_lines(record), "",
                      f"*Answer with {kind.describe()}.* Run the check cell, or use the card "
                      "below."])


def prompt_lines(record: Exercise) -> list[str]:
    """The exercise as markdown lines: heading, question, notes, options or code."""
    from workbook.learner.widgets import challenge_note

    parts = [f"### Exercise {record.id} · {record.title} *({record.category})*", "",
             escape_dollars(record.render_prompt())]
    if challenge_note(record.id):
        parts[1:1] = ["", f"*{challenge_note(record.id)}*"]
    if record.notes:
        parts += ["", escape_dollars(record.render_notes())]
    for block in record.render_extras():
        parts += ["", block]
    return parts


def answer_source(record: Exercise, instructor: bool) -> str:
    """The answer cell: the kind's placeholder for the record's numbers (a debug exercise
    starts from the program its prompt shows), and in the instructor version the solution
    region after it (outside it, so nbgrader's student version still defines the name)."""
    placeholder = record.answer_kind.placeholder_for(record.names, record.params)
    if not instructor:
        return placeholder
    return with_solution(placeholder, record.answer_kind.solution_source(record.expected(),
                                                                    record.names))


def check_source(record: Exercise) -> str:
    return f'wb.check("{record.id}", {record.answer_kind.check_argument(record.names)})'


def _nbgrader(cell: NotebookNode, grade_id: str, *, solution: bool = False,
              grade: bool = False, points: int = 0) -> NotebookNode:
    cell.metadata[NBGRADER_KEY] = nbgrader_cell(grade_id, solution=solution, grade=grade,
                                                points=points)
    return cell


def exercise_cells(record: Exercise, instructor: bool) -> list[NotebookNode]:
    """Prompt, answer, check and widget cells for one exercise."""
    from nbformat.v4 import new_code_cell, new_markdown_cell

    cells = {"prompt": new_markdown_cell(prompt_markdown(record)),
             "answer": new_code_cell(answer_source(record, instructor)),
             "check": new_code_cell(check_source(record)),
             "widget": new_code_cell(f'wb.widget("{record.id}")')}
    for role, cell in cells.items():
        cell.metadata[METADATA_KEY] = exercise_cell(record.id, role)
        if instructor:
            _nbgrader(cell, exercise_grade_id(role, record.id), solution=role == "answer",
                      grade=role == "check", points=record.points)
    return list(cells.values())


def lock(cell: NotebookNode, grade_id: str) -> NotebookNode:
    """Mark a non-exercise cell read-only in the instructor notebook."""
    return _nbgrader(cell, grade_id)
