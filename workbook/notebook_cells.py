"""The cells generated from exercise records, for the learner and the instructor notebook.

Exercise prompts, answer cells and check cells come from the records only; a chapter
source just names the exercise. The instructor version carries nbgrader (schema 3)
metadata: solution regions in answer cells, autograded check cells with points, and
every other cell locked.
"""

from __future__ import annotations

import inspect
from typing import Any

from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder.exercise import Exercise, format_number
from autograder.kinds import Choice, Constraints, Debug, Function, Numeric, Ordering, Trace
from autograder.markup import escape_dollars
from workbook.layout import answer_name, bug_line_name

SETUP_SOURCE = '''\
# Setup: installs the workbook only when it is missing (for example on Google Colab).
# It never upgrades packages that are already installed, so no runtime restart is needed.
import importlib.util
if importlib.util.find_spec("workbook") is None:
    get_ipython().run_line_magic("pip", "install --quiet {install_spec}")
import workbook as wb
import narration'''


def prompt_markdown(record: Exercise) -> str:
    from workbook.widgets import challenge_note

    parts = [f"### Exercise {record.id} · {record.title} *({record.kind})*", "",
             escape_dollars(record.render_prompt())]
    if challenge_note(record.id):
        parts[1:1] = ["", f"*{challenge_note(record.id)}*"]
    if record.notes:
        parts += ["", escape_dollars(record.notes)]
    kind = record.answer
    if isinstance(kind, Debug):
        numbered = "\n".join(f"{i + 1:>2} | {line}" for i, line in
                             enumerate(kind.code.rstrip("\n").split("\n")))
        parts += ["", "```text", numbered, "```"]
    if isinstance(kind, Choice):
        parts += [""] + [f"- **{o.key}.** {escape_dollars(o.text)}" for o in kind.options]
    if isinstance(kind, Ordering):
        parts += ["", "Items: " + ", ".join(f"`{item}`" for item in kind.items)]
    parts += ["", f"*Answer with {kind.describe()}.* Run the check cell, or use the card below."]
    return "\n".join(parts)


def _placeholder(record: Exercise) -> str:
    kind, name = record.answer, answer_name(record)
    if isinstance(kind, Numeric):
        if not kind.unit:
            return f"{name} = None  # your answer: a plain number"
        return (f"{name} = None  # your answer in {kind.unit}: a number, or text with a unit "
                f'like "<number> {kind.unit}"')
    if isinstance(kind, Choice):
        keys = ", ".join(f'"{o.key}"' for o in kind.options)
        return f"{name} = None  # one of {keys}"
    if isinstance(kind, Ordering):
        return f"{name} = None  # a list of all {len(kind.items)} items, {kind.first_label} first"
    if isinstance(kind, Trace):
        return f"{name} = None  # a list with one entry per {kind.step_label}: " + \
            ", ".join(kind.columns)
    if isinstance(kind, Constraints):
        return f"{name} = dict(" + ", ".join(f"{f}=None" for f in kind.fields) + ")"
    if isinstance(kind, Function):
        return kind.stub()
    if isinstance(kind, Debug):
        return (f"{bug_line_name(record)} = None  # the number of the buggy line\n\n"
                f"# Fix the function below (it starts as the buggy version):\n"
                + kind.code.rstrip("\n"))
    raise TypeError(f"no answer cell for {type(kind).__name__}")


def _solution(record: Exercise) -> str:
    kind, name, expected = record.answer, answer_name(record), record.expected()
    if isinstance(kind, Numeric):
        return f"{name} = {format_number(expected).replace(',', '_')}"
    if isinstance(kind, (Choice, Ordering, Trace)):
        value = list(expected) if isinstance(expected, tuple) else expected
        return f"{name} = {value!r}"
    if isinstance(kind, Constraints):
        return f"{name} = {dict(expected)!r}"
    if isinstance(kind, Function):
        return _reference_import(expected, kind.function_name)
    if isinstance(kind, Debug):
        line, fixed = expected
        return (f"{bug_line_name(record)} = {line}\n"
                + _reference_import(fixed, kind.fix.function_name))
    raise TypeError(f"no solution cell for {type(kind).__name__}")


def _reference_import(function: Any, name: str) -> str:
    module = inspect.getmodule(function)
    module_name = module.__name__ if module else "solutions"
    alias = "" if function.__name__ == name else f" as {name}"
    return f"from {module_name} import {function.__name__}{alias}  # the reference solution"


def check_source(record: Exercise) -> str:
    kind = record.answer
    if isinstance(kind, Function):
        return f'wb.check("{record.id}", {kind.function_name})'
    if isinstance(kind, Debug):
        return f'wb.check("{record.id}", ({bug_line_name(record)}, {kind.fix.function_name}))'
    return f'wb.check("{record.id}", {answer_name(record)})'


def _nbgrader(cell: NotebookNode, grade_id: str, *, solution: bool = False,
              grade: bool = False, points: int = 0) -> NotebookNode:
    meta: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": not solution,
                            "schema_version": 3, "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def exercise_cells(record: Exercise, instructor: bool) -> list[NotebookNode]:
    """Prompt, answer, check and widget cells for one exercise."""
    slug = record.id.replace(".", "_")
    prompt = new_markdown_cell(prompt_markdown(record))
    if instructor:
        # The placeholder stays outside the solution region, so the student version that
        # nbgrader releases still defines the answer name (as None) after the stub.
        answer = new_code_cell(_placeholder(record) + "\n### BEGIN SOLUTION\n"
                               + _solution(record) + "\n### END SOLUTION")
    else:
        answer = new_code_cell(_placeholder(record))
    check = new_code_cell(check_source(record))
    card = new_code_cell(f'wb.widget("{record.id}")')
    for cell in (prompt, answer, check, card):
        cell.metadata["workbook"] = {"exercise": record.id}
    prompt.metadata["workbook"]["role"] = "prompt"
    answer.metadata["workbook"]["role"] = "answer"
    check.metadata["workbook"]["role"] = "check"
    card.metadata["workbook"]["role"] = "widget"
    if instructor:
        _nbgrader(prompt, f"prompt_{slug}")
        _nbgrader(answer, f"answer_{slug}", solution=True)
        _nbgrader(check, f"check_{slug}", grade=True, points=record.points)
        _nbgrader(card, f"widget_{slug}")
    return [prompt, answer, check, card]


def lock(cell: NotebookNode, grade_id: str) -> NotebookNode:
    """Mark a non-exercise cell read-only in the instructor notebook."""
    return _nbgrader(cell, grade_id)
