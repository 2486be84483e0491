"""A lab job's runtime, and the guard cell unpacking the grader's code, find every standard
module they import already loaded in the workers.

Where the sandbox user cannot read the interpreter's files (an interpreter under /root,
graded as root with ``--unsafe-no-sandbox``), a job can import only what its worker
loaded before forking it; a lab runtime needing anything else made every lab an error.
"""

from __future__ import annotations

import ast
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

from autograder.grading import guard
from autograder.grading.fill import fill_answers
from autograder.grading.jobs import module_sources
from workbook.instructor import grading
from workbook.outline import CHAPTERS
from workbook.records import all_labs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "solutions"))
from lab_corpus import HONEST  # noqa: E402


def _standard_imports() -> set[str]:
    modules = sorted({m for lab in all_labs() for m in lab.answer_kind.runtime.pack_entry[0]})
    found: set[str] = set()
    for _, source in module_sources(tuple(modules)):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return {name for name in found if name.split(".")[0] in sys.stdlib_module_names}


def test_every_standard_module_of_the_lab_runtime_is_loaded_in_a_worker() -> None:
    loaded = subprocess.run(
        [sys.executable, "-I", "-c",
         "import sys; sys.path.insert(0, sys.argv[1]); import autograder.sandbox.worker as w; "
         "[__import__(m) for m in w.WARM_MODULES]; print('\\n'.join(sorted(sys.modules)))",
         str(ROOT)], capture_output=True, text=True, check=True).stdout.split()
    needed = _standard_imports()
    assert {"base64", "pickle"} <= needed  # the runtime's own, read from its source
    # and what the guard cell imports to unpack the grader's compiled code
    unpacking = set(re.findall(r'__import__\("(\w+)"\)', guard._LOADER))
    assert {"zlib", "binascii", "marshal"} <= unpacking
    assert needed | unpacking <= set(loaded), (needed | unpacking) - set(loaded)


def test_a_lab_is_graded_without_the_sandbox(tmp_path: Path) -> None:
    chapter = next(c for c in CHAPTERS if c.number == 0)
    notebook = json.loads(grading.learner_path(chapter).read_text())
    source = next(src for exercise, src in HONEST.values() if exercise == "0.7")
    folder = tmp_path / "in" / "learner"
    folder.mkdir(parents=True)
    (folder / "ch00.ipynb").write_text(json.dumps(fill_answers(notebook, {"0.7": source})))
    status = grading.grade_cli(str(tmp_path / "in"), str(tmp_path / "out"), workers=1,
                               timeout_s=10, unsafe_no_sandbox=True)
    assert status == 0
    with (tmp_path / "out" / "grades.csv").open(encoding="utf-8") as file:
        row = next(r for r in csv.DictReader(file) if r["exercise_id"] == "0.7")
    assert row["points"] == "1", row["message"]
