"""How much per-student numbers cost at grading time: ``workbook grade`` with and without
``--secret-file`` on the same class.

    python benchmarks/personal_grading_speed.py --students 30 --chapters 0,3,5 --rounds 3

Both classes answer every value exercise right (the personalised one in each student's own
numbers, the plain one in the printed numbers) and leave functions and labs unanswered,
so the two runs execute the same cells in the sandbox. A third class hands in the plain
notebooks under the secret (every answer wrong for its student, each one checked against
every classmate's numbers): the worst case of the integrity search. Runs alternate;
the medians are reported.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from autograder.grading.fill import fill_answers
from autograder.personal import personalised, read_secret, student_seed
from workbook import grading
from workbook.release import (
    chapter_records,
    learner_notebook,
    new_secret_cli,
    parse_chapters,
    personal_notebook,
)


def _values(records: tuple, seed: str | None) -> dict[str, str]:
    answers = {}
    for record in records:
        mine = personalised(record, seed) if seed else record
        name = mine.answer_kind.value_name(mine.names)
        if mine.answer_kind.function_spec() is not None or callable(mine.expected()) or not name:
            continue
        value = mine.expected()
        answers[record.id] = f"{name} = {list(value) if isinstance(value, tuple) else value!r}"
    return answers


def fabricate(root: Path, students: int, chapters: str, secret: bytes) -> None:
    for index in range(students):
        student = f"s{index:04d}"
        seed = student_seed(secret, student)
        for chapter in parse_chapters(chapters):
            records = chapter_records(chapter)
            plain = json.loads(learner_notebook(chapter))
            mine = personal_notebook(chapter, student, seed)
            for kind, notebook, numbers in (("plain", plain, None), ("personal", mine, seed)):
                target = root / kind / student / f"{chapter.stem}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(json.dumps(fill_answers(notebook, _values(records, numbers))))


def timed(submissions: Path, out: Path, workers: int, secret: Path | None) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = grading.grade_cli(str(submissions), str(out), workers=workers, timeout_s=10,
                                   secret_file=str(secret) if secret else None)
    assert status == 0, f"grading {submissions} failed ({status})"
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--chapters", default="0,3,5")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        key = root / "course.key"
        with contextlib.redirect_stdout(io.StringIO()):
            new_secret_cli(str(key))
        fabricate(root, args.students, args.chapters, read_secret(key))
        runs: dict[str, list[float]] = {"without": [], "with": [], "worst": []}
        for _ in range(args.rounds):
            runs["without"].append(timed(root / "plain", root / "out", args.workers, None))
            runs["with"].append(timed(root / "personal", root / "out", args.workers, key))
            runs["worst"].append(timed(root / "plain", root / "out", args.workers, key))
    medians = {k: statistics.median(v) for k, v in runs.items()}
    notebooks = args.students * len(parse_chapters(args.chapters))
    print(f"{notebooks} notebooks ({args.students} students x chapters {args.chapters}), "
          f"{args.workers} workers, median of {args.rounds}:")
    print(f"  without --secret-file: {medians['without']:.2f} s")
    print(f"  with --secret-file:    {medians['with']:.2f} s "
          f"({100 * (medians['with'] / medians['without'] - 1):+.1f} %)")
    print(f"  with, every answer someone else's: {medians['worst']:.2f} s "
          f"({100 * (medians['worst'] / medians['without'] - 1):+.1f} %)")


if __name__ == "__main__":
    main()
