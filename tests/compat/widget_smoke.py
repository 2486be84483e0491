"""Drive every exercise card like a learner: fill in the right answer, click Check.

Run by the test suite in the project's environment (ipywidgets 8) and, as a script, in
an environment pinned to Google Colab's versions (ipywidgets 7.7.1, IPython 7.34).
Prints one line per exercise and exits 1 if any card fails.
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any


def drive_all_cards() -> list[str]:
    """Return a list of failures (empty when every card checks its right answer)."""
    import os

    os.environ.setdefault("WORKBOOK_HOME", tempfile.mkdtemp(prefix="wb-smoke-"))
    import workbook
    from autograder.widgets import Actions, ExerciseWidget
    from workbook import records
    from workbook.learner import checking

    failures = []
    for record in (*records.all_exercises(), *records.all_challenges()):
        expected = record.expected()
        namespace: dict[str, Any] = {}
        spec = record.answer_kind.function_spec()
        if spec is not None:  # a function alone, or (line, fixed function)
            alone = record.answer_kind.value_name(record.names) is None
            namespace[spec.function_name] = expected if alone else expected[1]
        actions = Actions(check=lambda a, p, r=record: checking.check_shown(r.id, a, p),
                          hint=lambda p, r=record: checking.hint(r.id, p),
                          solution=lambda p, r=record: checking.solution(r.id, p),
                          variant=lambda r=record: checking.practice(r.id),
                          lookup=namespace.get)
        card = ExerciseWidget(record, actions)
        card.write(expected)
        card.buttons["check"].click()
        if not getattr(card.last, "passed", False):
            failures.append(f"{record.id}: {card.last}")
        card.buttons["hint"].click()
        card.buttons["variant"].click()
    assert workbook.progress().total == 58
    return failures


if __name__ == "__main__":
    import ipywidgets

    problems = drive_all_cards()
    print(f"ipywidgets {ipywidgets.__version__}: {len(problems)} failing card(s)")
    for line in problems:
        print(line)
    sys.exit(1 if problems else 0)
