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
from workbook.instructor import grading
from workbook.instructor.release import (
    chapter_records,
    learner_notebook,
    new_secret_cli,
    parse_chapters,
    personal_notebook,
)
from workbook.instructor.term import TermArguments


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


def timed(submissions: Path, out: Path, workers: int, secret: Path | None
          ) -> tuple[float, float]:
    """Wall seconds, and CPU seconds of the grader's own process (the sandbox workers,
    which run the same cells either way, are other processes)."""
    started, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = grading.grade_cli(str(submissions), str(out), workers=workers, timeout_s=10,
                                   term_args=TermArguments(
                                       secret_file=str(secret) if secret else None))
    assert status == 0, f"grading {submissions} failed ({status})"
    return time.perf_counter() - started, time.process_time() - cpu


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
        runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": [], "worst": []}
        plans = {"without": ("plain", None), "with": ("personal", key), "worst": ("plain", key)}
        for round_ in range(args.rounds):
            order = list(plans) if round_ % 2 == 0 else list(reversed(plans))
            for name in order:  # alternate the order, so neither mode always goes first
                folder, secret = plans[name]
                runs[name].append(timed(root / folder, root / "out", args.workers, secret))
    wall = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in runs.items()}
    notebooks = args.students * len(parse_chapters(args.chapters))
    print(f"{notebooks} notebooks ({args.students} students x chapters {args.chapters}), "
          f"{args.workers} workers, median of {args.rounds}; wall s, grader-process CPU s:")
    for name, words in (("without", "without --secret-file"), ("with", "with --secret-file"),
                        ("worst", "with, every answer someone else's")):
        wall_pct = 100 * (wall[name] / wall["without"] - 1)
        cpu_pct = 100 * (cpu[name] / cpu["without"] - 1)
        print(f"  {words:<34} {wall[name]:6.2f} s ({wall_pct:+5.1f} %)   "
              f"CPU {cpu[name]:5.2f} s ({cpu_pct:+5.1f} %)")


if __name__ == "__main__":
    main()
