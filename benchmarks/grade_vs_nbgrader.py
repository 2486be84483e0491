"""``workbook grade`` against ``nbgrader autograde`` on the same fabricated class.

    .venv/bin/python benchmarks/grade_vs_nbgrader.py [--students 40] [--chapters 0,5]
    .venv/bin/python benchmarks/grade_vs_nbgrader.py --quick      # 2 students x chapter 0

Builds a temporary nbgrader course from the instructor notebooks, releases it with
``nbgrader generate_assignment`` (not timed), and fabricates every student's submission from
the released notebooks with a reproducible mix of answers per exercise: right, right but
with the stub's ``raise`` left in, wrong, right line with an unfixed function (debug),
raising, and untouched. Then it times the two graders as an instructor would run them
(start-up included) and compares the points of every (student, exercise).

A run of ours lasts seconds and nbgrader's half an hour, on a shared machine whose speed
drifts by more than a third from minute to minute; timed one after the other, the ratio
would depend on the moment each happened to meet. So the two interleave: nbgrader grades
the class in ``--chunks`` commands of about ten students each (its start-up paid once
per command, which counts against it), and ``workbook grade`` grades the whole class before the
first, between each two and after the last, so that both sample the same stretch of time.
The ratio is nbgrader's total against the median of ours, and every run's points must
agree with nbgrader's. ``--chunks 1`` times one nbgrader command over the whole class and
then ours ``--repeats`` times. Exit status 0 when all points agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIX = {"right": 0.5, "kept_stub": 0.05, "wrong": 0.2, "line_only": 0.05, "error": 0.1,
       "empty": 0.1}


def load_harness() -> ModuleType:
    """tests/workbook/nbgrader_course.py (tests are not a package, so load it by path)."""
    path = ROOT / "tests" / "workbook" / "nbgrader_course.py"
    spec = importlib.util.spec_from_file_location("nbgrader_course", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["nbgrader_course"] = module
    spec.loader.exec_module(module)
    return module


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--chapters", default="0,1,2,3,4,5,6,7,8,9",
                        help="comma-separated chapter numbers (default: all 10)")
    parser.add_argument("--quick", action="store_true", help="2 students x chapter 0")
    parser.add_argument("--workers", type=int, default=None,
                        help="workbook grade --workers (default: its own, the core count)")
    parser.add_argument("--chunks", type=int, default=4,
                        help="nbgrader commands the class is split into, ours run before, "
                             "between and after them (default 4; 1: one nbgrader command, "
                             "then ours --repeats times)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="with --chunks 1, runs of workbook grade (default 3)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build the course here and keep it (default: a temp folder)")
    args = parser.parse_args(argv)
    if args.quick:
        args.students, args.chapters = 2, "0"
    args.chapter_list = [int(part) for part in args.chapters.split(",") if part.strip()]
    if args.students < 1 or not args.chapter_list or args.repeats < 1 or args.chunks < 1:
        parser.error("need at least one student, one chapter, one chunk and one run")
    return args


def run(args: argparse.Namespace, workdir: Path) -> int:
    nc = load_harness()
    course = nc.Course.create(workdir / "course", args.chapter_list)
    course.generate()
    students = [f"student_{i:03d}" for i in range(args.students)]
    for student in students:
        course.submit(student, nc.seeded_mix(student, MIX))
    notebooks = len(students) * len(course.stems)
    chapters = f"{len(course.stems)} chapter" + ("s" if len(course.stems) > 1 else "")
    print(f"class: {len(students)} students x {chapters} = {notebooks} notebooks", flush=True)

    runs: list[tuple[float, Path]] = []

    def ours() -> None:
        out = workdir / f"workbook-grade-{len(runs) + 1}"
        runs.append((nc.run_workbook_grade(course.submitted, out, workers=args.workers).seconds,
                     out))
        print(f"workbook grade run {len(runs)}: {runs[-1][0]:8.1f} s", flush=True)

    nbgrader_s = 0.0
    groups = student_globs(len(students), args.chunks)
    for pattern in groups:
        if len(groups) > 1:
            ours()
        seconds = course.autograde(pattern)
        nbgrader_s += seconds
        if len(groups) > 1:
            print(f"nbgrader autograde --student={pattern}: {seconds:8.1f} s", flush=True)
    if len(groups) > 1:
        ours()
    print(f"nbgrader autograde: {nbgrader_s:8.1f} s  ({nbgrader_s / notebooks:.2f} s per "
          f"notebook, {len(groups)} command" + ("s" if len(groups) > 1 else "") + ")",
          flush=True)
    while len(groups) == 1 and len(runs) < args.repeats:
        ours()
    ours_s = statistics.median(seconds for seconds, _ in runs)
    print(f"workbook grade:     {ours_s:8.1f} s  (median of {len(runs)}; "
          f"{1000 * ours_s / notebooks:.0f} ms per notebook, workers: "
          f"{args.workers or os.cpu_count()})")
    print(f"speed-up: {nbgrader_s / ours_s:.1f} x")
    status = 0
    theirs = course.nbgrader_points()
    for _, out in runs:
        unread = nc.ungraded_files(out)
        if unread:
            print(f"workbook grade could not grade {len(unread)} file(s), e.g.: {unread[0]}")
        status |= report_agreement(nc, theirs, nc.workbook_points(out))
    return status


def student_globs(count: int, chunks: int) -> list[str]:
    """nbgrader ``--student`` globs that split student_000 .. student_{count - 1} into
    about ``chunks`` groups of whole tens, every student in exactly one ("*": one group;
    so too past 100 students)."""
    tens = -(-count // 10)
    if chunks <= 1 or tens <= 1 or count > 100:
        return ["*"]
    per = -(-tens // min(chunks, tens))
    globs = []
    for first in range(0, tens, per):
        last = min(first + per, tens) - 1
        globs.append(f"student_0{first if first == last else f'[{first}-{last}]'}?")
    return globs


def report_agreement(nc: ModuleType, theirs: dict[Any, float], ours: dict[Any, float]) -> int:
    differ = nc.disagreements(theirs, ours)
    total = len(set(theirs) | set(ours))
    earned = sum(theirs.values())
    print(f"scores: {total} (student, exercise) pairs, {earned:g} points awarded by nbgrader")
    if not differ:
        print(f"agreement: all {total} per-exercise scores agree (0 disagreements)")
        return 0
    print(f"agreement: {len(differ)} of {total} per-exercise scores DISAGREE")
    for line in differ[:20]:
        print("  " + line)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        return run(args, args.keep.resolve())
    with tempfile.TemporaryDirectory(prefix="wb-grade-bench-") as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
