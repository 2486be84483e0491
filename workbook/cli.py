"""The ``workbook`` command line.

    workbook list                      every exercise, one per line
    workbook show 0.1                  the prompt in the terminal
    workbook check 0.1 "1.75 GB"       check an answer (recorded in your progress)
    workbook check 0.7 my_ring.py      check the function a .py file defines (build, lab)
    workbook hint 0.1 | solution 0.1   the next hint | the worked solution
    workbook progress [--json]         mastery and streaks
    workbook export-progress           print a code; import-progress CODE merges it
    workbook progress-key [KEY]        print the key that signs your codes, or use KEY
    workbook build [--check]           rebuild the notebooks from their sources
    workbook narrate [--chapter N]     render narration audio offline
    workbook new-secret course.key     create a course secret (per-student numbers)
    workbook release --out DIR [--chapters 0,5] [--roster R.csv --secret-file course.key]
    workbook grade SUBMISSIONS --out OUT [--chapters N --roster R.csv --secret-file KEY]

Exit status: 0 on success, 1 when a check fails or work could not be done, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from workbook.outline import CHAPTERS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbook", description="The Distributed Training "
                                     "Workbook: exercises, checking, progress and grading.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list every exercise")
    for name, text in (("show", "show an exercise's prompt"), ("hint", "the next hint"),
                       ("solution", "the worked solution")):
        sub.add_parser(name, help=text).add_argument("id")
    check = sub.add_parser("check", help="check an answer")
    check.add_argument("id")
    check.add_argument("answer", help='e.g. "1.75 GB", 25%%, B for a choice, or a .py file '
                       "defining the function of a build, debug or lab exercise")
    progress = sub.add_parser("progress", help="mastery and streaks")
    progress.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser("export-progress", help="print a code holding your progress")
    imp = sub.add_parser("import-progress", help="merge a code from export-progress")
    imp.add_argument("code")
    key = sub.add_parser("progress-key", help="print the key that signs your progress "
                         "codes, or give your other machine's key to use it here")
    key.add_argument("key", nargs="?", help="the key printed by progress-key elsewhere")
    build = sub.add_parser("build", help="build the notebooks from the chapter sources")
    build.add_argument("--check", action="store_true", help="fail if a notebook is stale")
    narrate = sub.add_parser("narrate", help="render narration audio offline")
    narrate.add_argument("--chapter", type=int, choices=range(len(CHAPTERS)), metavar="N")
    narrate.add_argument("--out", help="output folder (default: your data directory)")
    grade = sub.add_parser("grade", help="grade submitted notebooks")
    grade.add_argument("submissions", nargs="?", help="the folder of student folders")
    grade.add_argument("--nbgrader-course", metavar="COURSE",
                       help="grade COURSE/submitted of an nbgrader course instead")
    grade.add_argument("--out", required=True)
    grade.add_argument("--workers", type=int, default=None)
    grade.add_argument("--timeout", type=float, default=10.0,
                       help="seconds per cell and per call (at most 600)")
    grade.add_argument("--batch-timeout", type=float, default=None,
                       help="seconds for the whole batch; files not started by then get "
                            "error rows")
    grade.add_argument("--unsafe-no-sandbox", action="store_true",
                       help="grade even where bubblewrap is unavailable (learner code can "
                            "then read what your user can; the report says so)")
    grade.add_argument("--secret-file", metavar="KEY",
                       help="the course secret of `workbook release`: grade every student "
                            "in their own numbers")
    grade.add_argument("--roster", metavar="ROSTER.csv",
                       help="the class: the workbook's CSV (id, name, canvas_id, email, "
                            "idnumber, username), Canvas's gradebook export or Moodle's "
                            "participants download; students who handed in nothing get a "
                            "total, and an upload of anyone else is an error row")
    grade.add_argument("--chapters", metavar="N[,M]",
                       help="the assignment's chapters: every student is out of their "
                            "points, another chapter's notebook is an error row (needed "
                            "for an LMS download)")
    grade.add_argument("--release", metavar="DIR",
                       help="the folder `workbook release` wrote: its chapters are the "
                            "assignment's")
    grade.add_argument("--assignment", metavar="TITLE",
                       help="the assignment's title: the grade column of the LMS import "
                            "(default: 'Workbook ch00' for --chapters 0)")
    grade.add_argument("--lms-worksheet", metavar="WORKSHEET.csv",
                       help="Moodle: this assignment's grading worksheet, which maps its "
                            "participant ids to the roster and is written back with grades")
    grade.add_argument("--lms-timezone", metavar="ZONE", default="UTC",
                       help="the time zone of the times in a Moodle worksheet (e.g. "
                            "Europe/Berlin; default UTC)")
    grade.add_argument("--policies", metavar="POLICIES.ini",
                       help="the term's policy file (late rules, extensions, overrides, "
                            "partial credit), applied afresh on every regrade (default: "
                            "OUT.policies.ini beside the gradebook, when it exists)")
    grade.add_argument("--handed-in", metavar="TIMES.csv",
                       help="student,submitted_at rows from your collection step: the times "
                            "that decide lateness, in place of any the hand-in carries")
    grade.add_argument("--only", metavar="ID[,ID]",
                       help="regrade only these students; everyone else's rows, totals and "
                            "pages are kept from the gradebook in --out")
    grade.add_argument("--layout", choices=("auto", "folders", "nbgrader", "canvas", "moodle"),
                       default="auto", help="how SUBMISSIONS is organised (default: detect; "
                       "nbgrader's submitted/ is the folders layout)")
    grade.add_argument("--due", metavar="TIME",
                       help="the deadline, e.g. 2026-03-01T18:00 (UTC unless an offset is "
                            "given), for the late column")
    release = sub.add_parser("release", help="write the notebooks to hand out")
    release.add_argument("--out", required=True, help="the folder to write them into")
    release.add_argument("--chapters", help="e.g. 0,5 (default: all)")
    release.add_argument("--roster", metavar="ROSTER.csv",
                         help="one personalised copy per student (needs --secret-file)")
    release.add_argument("--secret-file", metavar="KEY", help="the course secret")
    release.add_argument("--lms-worksheet", metavar="WORKSHEET.csv",
                         help="a Moodle assignment's grading worksheet: also zip each "
                              "student's copies for Moodle's feedback-files upload")
    secret = sub.add_parser("new-secret", help="create a course secret file (mode 600)")
    secret.add_argument("path")
    return parser


def _parse_answer(text: str) -> object:
    """A command-line answer: JSON when it parses (lists, dicts), else the raw text."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to be an answer
        return text


def _cmd_list(args: argparse.Namespace) -> int:
    import workbook
    from workbook.records import all_challenges, all_labs

    for record in workbook.exercises():
        print(f"{record.id:>5}  {record.category:<7} {record.title}")
    for record in (*all_challenges(), *all_labs()):
        print(f"{record.id:>5}  {record.category:<7} {record.title} (beyond the 58)")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    import workbook
    from autograder.markup import plain_text
    from workbook.build.cells import prompt_lines

    record = workbook.exercise(args.id)
    print(plain_text("\n".join(prompt_lines(record))))
    print(f"\nAnswer with {record.answer_kind.describe()}: "
          f"workbook check {record.id} <answer>")
    return 0


def _from_file(exercise_id: str, text: str) -> object:
    """For an answer that names a .py file: run the learner's own file and take what the
    notebook's check cell would pass (the function, or the bug line and the function)."""
    import workbook

    record = workbook.exercise(exercise_id)
    source = Path(text).read_text(encoding="utf-8")
    code = compile(source, text, "exec")  # a syntax error is reported before anything runs
    shipped = record.answer_kind.answer_from_file(source, text)
    if shipped is not None:  # a lab: its ranks run apart, never in this process
        return shipped
    namespace: dict[str, object] = {"__name__": "__learner__"}
    exec(code, namespace)  # the learner's file, on their machine
    return eval(record.answer_kind.check_argument(record.names), namespace)  # noqa: S307


def _cmd_check(args: argparse.Namespace) -> int:
    import workbook

    text = args.answer
    if text.endswith(".py") and not Path(text).is_file():
        print(f"workbook check: no file {text} (an answer ending in .py names the file "
              "that defines your function)", file=sys.stderr)
        return 2
    if text.endswith(".py"):
        try:
            answer = _from_file(args.id, text)
        except Exception as error:  # noqa: BLE001 - the learner's file, reported
            print(f"workbook check: {text} did not define the answer: "
                  f"{type(error).__name__}: {error}", file=sys.stderr)
            return 2
        result = workbook.check(args.id, answer)
        print(result)
        return 0 if result.passed else 1
    result = workbook.check(args.id, _parse_answer(text))
    print(result)
    return 0 if result.passed else 1


def _cmd_text(args: argparse.Namespace) -> int:
    import workbook

    print(getattr(workbook, args.command)(args.id))
    return 0


def _cmd_progress(args: argparse.Namespace) -> int:
    import workbook

    summary = workbook.progress()
    print(json.dumps(summary.to_dict(), indent=2) if args.json else summary)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    import workbook

    print(workbook.export_progress())
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    import workbook

    added = workbook.import_progress(args.code)
    print(f"Imported {added} new event(s).")
    return 0


def _cmd_progress_key(args: argparse.Namespace) -> int:
    from workbook.learner.progress_commands import progress_key, use_progress_key

    if args.key is None:
        print(progress_key())
        print("Run `workbook progress-key THIS-KEY` on your other machine once; codes "
              "exported here then import there.", file=sys.stderr)
        return 0
    try:
        where = use_progress_key(args.key)
    except ValueError as error:
        print(f"workbook progress-key: {error}", file=sys.stderr)
        return 2
    print(f"Using that key from now on (kept in {where}).")
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from workbook.build.notebooks import build

    stale = build(check=args.check)
    verb = "stale" if args.check else "written"
    for path in stale:
        print(f"{verb}: {path}")
    if not stale:
        print("All notebooks are up to date.")
    return 1 if (args.check and stale) else 0


def _cmd_narrate(args: argparse.Namespace) -> int:
    from workbook.narrate import render_cli

    return render_cli(args.chapter, args.out)


def _cmd_grade(args: argparse.Namespace) -> int:
    from workbook.instructor.grading import grade_cli
    from workbook.instructor.term import TermArguments

    term = TermArguments(
        roster=args.roster, secret_file=args.secret_file,
        layout={"auto": None, "nbgrader": "folders"}.get(args.layout, args.layout),
        due=args.due, chapters=args.chapters, assignment=args.assignment,
        release=args.release, worksheet=args.lms_worksheet, timezone=args.lms_timezone,
        policies=args.policies or _beside(args.out, ".policies.ini"), only=args.only,
        handed_in=args.handed_in)
    return grade_cli(args.submissions, args.out, workers=args.workers, timeout_s=args.timeout,
                     unsafe_no_sandbox=args.unsafe_no_sandbox,
                     nbgrader_course=args.nbgrader_course, batch_timeout_s=args.batch_timeout,
                     term_args=term)


def _beside(out: str, suffix: str) -> str | None:
    """``OUT<suffix>`` beside the gradebook folder, when that file exists."""
    from pathlib import Path

    path = Path(out.rstrip("/\\") + suffix)
    return str(path) if out.strip() and path.is_file() else None


def _cmd_release(args: argparse.Namespace) -> int:
    from workbook.instructor.release import release_cli

    return release_cli(args.out, args.chapters, args.roster, args.secret_file,
                       args.lms_worksheet)


def _cmd_new_secret(args: argparse.Namespace) -> int:
    from workbook.instructor.release import new_secret_cli

    return new_secret_cli(args.path)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": _cmd_list, "show": _cmd_show, "check": _cmd_check, "hint": _cmd_text,
    "solution": _cmd_text, "progress": _cmd_progress, "export-progress": _cmd_export,
    "import-progress": _cmd_import, "progress-key": _cmd_progress_key, "build": _cmd_build,
    "narrate": _cmd_narrate,
    "grade": _cmd_grade, "release": _cmd_release, "new-secret": _cmd_new_secret,
}


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:  # the reader went away (`workbook progress --json | head`)
        _silence_stdout()
        return 0
    except KeyError as exc:  # an unknown exercise id: the message lists the valid ones
        print(f"workbook: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"workbook: {exc}", file=sys.stderr)
        return 1
    except RecursionError:
        print("workbook: the answer is nested too deeply to be read", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
