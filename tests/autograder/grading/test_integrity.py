"""Integrity checks: release edits by checksum, what the learner's code does, what was blocked."""

from __future__ import annotations

import json

from autograder.grading.integrity import (
    CodeCell,
    blocked_findings,
    compare_release,
    scan_cells,
)
from autograder.grading.match import match_cells
from autograder.grading.model import checksum
from autograder.grading.read import parse_notebook

REFERENCE = frozenset({"solutions"})


def findings_for(release, tree):
    notebook = parse_notebook(json.dumps(tree).encode())
    return compare_release(notebook, release, match_cells(notebook, release))


def test_an_untouched_notebook_has_no_findings(release, toy_notebook) -> None:
    assert findings_for(release, toy_notebook({"1.1": "answer_1_1 = 2"})) == []


def test_reformatting_is_not_an_edit() -> None:
    assert checksum("x = 1  \r\n\r\n") == checksum("x = 1")
    assert checksum("x = 1") != checksum("x = 2")


def test_edited_and_deleted_check_cells_are_reported_per_exercise(release, toy_notebook) -> None:
    tree = toy_notebook()
    tree["cells"][4]["source"] = "pass"
    del tree["cells"][6]
    found = {(f.exercise, f.rule): f for f in findings_for(release, tree)}
    assert set(found) == {("1.1", "edited_check"), ("1.2", "deleted_check")}
    assert found["1.1", "edited_check"].message.startswith(
        "The check cell of exercise 1.1 was edited (its checksum differs from the release)")
    assert not any(f.serious for f in found.values())


def test_locked_cells_are_summed_up_for_the_notebook(release, toy_notebook) -> None:
    tree = toy_notebook()
    tree["cells"][7]["source"] = "explorer(pp=8)"
    del tree["cells"][0]
    [finding] = findings_for(release, tree)
    assert (finding.exercise, finding.rule) == ("", "locked_cells")
    assert finding.message.startswith("1 locked cell(s) edited (cells 8 of the release); "
                                      "1 locked cell(s) deleted (cells 1 of the release).")


def scan(source: str, exercise: str = "1.1"):
    return scan_cells([CodeCell(3, exercise, source)], REFERENCE)


def test_importing_the_reference_in_an_answer_cell_is_serious() -> None:
    for source in ("import solutions.zero", "from solutions import zero as z",
                   "import importlib\nz = importlib.import_module('solutions.zero')",
                   "z = __import__('solutions')"):
        [finding] = scan(source).findings
        assert (finding.rule, finding.serious, finding.cell) == ("imports_reference", True, 3)
        assert "the answer was not credited (the answer cell of exercise 1.1" in finding.message


def test_importing_the_reference_in_a_cell_of_ones_own_is_a_note() -> None:
    [finding] = scan("from solutions.zero import model_state_gb_per_gpu", exercise="").findings
    assert not finding.serious
    assert finding.message == ("Imports the reference code `solutions.zero`; answers may not "
                               "use it (cell 4 (added by the learner), line 1).")


def test_tricks_are_noted_as_ignored() -> None:
    source = "\n".join([
        "import builtins, sys, signal",
        "check = lambda *a: True",
        "wb.check = check",
        "builtins.isinstance = lambda *a: True",
        "setattr(builtins, 'float', int)",
        "def print(*a): pass",
        "class Same:",
        "    def __eq__(self, other): return True",
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)",
        "sys.exit()",
    ])
    result = scan(source)
    rules = [(f.rule, f.message.split(";")[0]) for f in result.findings]
    assert rules == [
        ("redefines", "Redefines check"), ("redefines", "Replaces wb.check"),
        ("redefines", "Replaces builtins.isinstance"),
        ("redefines", "Replaces an attribute of builtins"),
        ("redefines", "Redefines the builtin print"),
        ("redefines", "Class Same defines __eq__"),
        ("time_limit", "Calls signal.signal(), which could change time limits or signals"),
        ("exits", "Calls sys.exit() to end the process"),
    ]
    assert not any(f.serious for f in result.findings)
    assert result.eq_classes == {"Same"}


def test_learner_value_errors_are_known_by_name() -> None:
    result = scan("class Bad(ValueError):\n    pass\nclass Worse(Bad):\n    pass\n"
                  "class Other(KeyError):\n    pass")
    assert result.value_errors == {"Bad", "Worse"}


def test_a_cell_that_does_not_parse_is_left_to_the_sandbox() -> None:
    assert scan("def broken(:\n    import solutions").findings == ()


def test_blocked_operations_one_finding_per_cell_and_kind() -> None:
    answer, own = CodeCell(3, "1.1", ""), CodeCell(5, "", "")
    log = [(answer, "open", "/g/solutions/__pycache__/zero.pyc"),
           (answer, "open", "/g/solutions/zero.py"), (answer, "open", "/g/notes.ipynb"),
           (own, "os.system", ""), (None, "ctypes.dlopen", "")]
    found = blocked_findings(log)
    assert [(f.exercise, f.serious, f.message) for f in found] == [
        ("1.1", True, "Tried to read the grader's files (/g/solutions/zero.py and 1 more) "
                      "(the answer cell of exercise 1.1). The answer was not credited."),
        ("", False, "Tried to start another program (os.system) (cell 6 (added by "
                    "the learner))."),
        ("", False, "Tried to load C code through ctypes (ctypes.dlopen)."),
    ]
    assert blocked_findings(log, skip_cells={3, 5}) == found[2:]


def test_any_blocked_operation_with_a_path_is_file_access() -> None:
    # Which events are file operations is the guard's decision; it logs a path for those
    # (a future one here) and none for a program it refused.
    log = [(None, "os.rename", "/g/solutions/zero.py"), (None, "os.posix_spawn", "")]
    first, second = (f.message for f in blocked_findings(log))
    assert first.startswith("Tried to read the grader's files (/g/solutions/zero.py)")
    assert second.startswith("Tried to start another program (os.posix_spawn)")
