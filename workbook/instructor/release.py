"""``workbook release``: the notebooks students get, one personalised copy each if you like.

    workbook release --out handout --chapters 0,5
    workbook release --out handout --chapters 0,5 --roster roster.csv --secret-file course.key

Without a roster, ``handout/`` receives the learner notebooks of the chosen chapters (no
solutions; the instructor versions stay in the package). With a roster and the course
secret it receives instead, for every student, ``handout/students/<id>/chNN_*.ipynb`` in
that student's numbers: each exercise's prompt is rewritten in them, and a cell after the
setup cell (``wb.your_numbers(id, seed)``) makes the notebook's checks, cards, hints and
solutions use them too. For the instructor only (folder 0700, files 0600) it writes
``handout/answer-key/answer_key.csv`` (every student's numbers and right answers) and
``handout/answer-key/manifest.json`` (what was released to whom, how many students share
each exercise's numbers, and the secret's fingerprint, never the secret).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from autograder.cell_metadata import METADATA_KEY, workbook_meta
from autograder.exercise import Exercise
from autograder.grading.private_files import make_private_dir, write_private
from autograder.personal import fingerprint, personalised, student_seed
from workbook.instructor.roster import Roster
from workbook.outline import CHAPTERS, Chapter
from workbook.paths import learner_path
from workbook.records import printed

KEY_FOLDER = "answer-key"
STUDENTS_FOLDER = "students"
NUMBERS_ROLE = "numbers"
MANIFEST_VERSION = 1
KEY_COLUMNS = ("student", "chapter", "exercise_id", "params", "answer")


def parse_chapters(text: str | None) -> tuple[Chapter, ...]:
    """``"0,5"`` -> chapters 0 and 5; None or "all" -> every chapter."""
    if text is None or text.strip().lower() == "all":
        return CHAPTERS
    numbers: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) >= len(CHAPTERS):
            raise ValueError(f"--chapters takes chapter numbers 0 to {len(CHAPTERS) - 1} "
                             f"separated by commas (e.g. 0,5), got {text!r}")
        if int(part) not in numbers:
            numbers.append(int(part))
    return tuple(CHAPTERS[n] for n in sorted(numbers))


@cache
def learner_notebook(chapter: Chapter) -> str:
    """The built learner notebook's text (the package's, never the instructor version)."""
    return learner_path(chapter).read_text(encoding="utf-8")


def numbers_cell_id(chapter: int) -> str:
    return f"ch{chapter:02d}-numbers"


def numbers_source(student: str, seed: str) -> str:
    return f"wb.your_numbers({json.dumps(student)}, {json.dumps(seed)})"


def _numbers_cell(chapter: int, student: str, seed: str) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "id": numbers_cell_id(chapter),
            "metadata": {METADATA_KEY: {"role": NUMBERS_ROLE}}, "outputs": [],
            "source": numbers_source(student, seed)}


def personal_source(role: str, record: Exercise) -> str | None:
    """What an exercise cell of ``role`` holds in ``record``'s numbers: the prompt, or the
    answer cell a learner starts from (a debug exercise's program is the student's own);
    None for a cell that reads the same in every student's numbers (check, card)."""
    from workbook.build.cells import answer_source, prompt_markdown

    if role == "prompt":
        return prompt_markdown(record)
    if role == "answer":
        return answer_source(record, instructor=False)
    return None


def personal_notebook(chapter: Chapter, student: str, seed: str) -> dict[str, Any]:
    """The chapter's learner notebook in ``student``'s numbers (drawn from ``seed``)."""
    notebook: dict[str, Any] = json.loads(learner_notebook(chapter))
    cells: list[dict[str, Any]] = []
    for cell in notebook["cells"]:
        meta = workbook_meta(cell.get("metadata", {}))
        if meta.get("exercise"):
            record = personalised(printed(str(meta["exercise"])), seed)
            source = personal_source(str(meta.get("role")), record)
            cell = cell if source is None else dict(cell, source=source)
        cells.append(cell)
        if cell.get("id") == f"ch{chapter.number:02d}-001":  # right after the setup cell
            cells.append(_numbers_cell(chapter.number, student, seed))
    notebook["cells"] = cells
    notebook["metadata"][METADATA_KEY]["student"] = student
    return notebook


def serialize(notebook: dict[str, Any]) -> str:
    """As nbformat writes a notebook (one-space indent, sorted keys)."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def chapter_records(chapter: Chapter) -> tuple[Exercise, ...]:
    """The exercises of a chapter's notebook, in notebook order."""
    notebook = json.loads(learner_notebook(chapter))
    ids: list[str] = []
    for cell in notebook["cells"]:
        meta = workbook_meta(cell.get("metadata", {}))
        if meta.get("role") == "answer" and str(meta.get("exercise")) not in ids:
            ids.append(str(meta.get("exercise")))
    return tuple(printed(i) for i in ids)


def shown_answer(record: Exercise) -> str:
    """The right answer as a gradebook shows it ("3.5 GB"); for a function or a lab, what
    it is graded on."""
    expected = record.expected()
    spec = record.answer_kind.function_spec()
    if spec is not None:
        line = f"bug on line {expected[0]}; " if isinstance(expected, tuple) else ""
        return f"{line}{spec.function_name}: graded on this student's own test inputs"
    if callable(expected):
        return "a program: graded on this student's own cases"
    verdict = record.grade(expected)
    return verdict.expected or verdict.yours or str(expected)


@dataclass(frozen=True)
class Released:
    notebooks: tuple[Path, ...]
    key: Path | None = None
    manifest: Path | None = None


def release_plain(out: Path, chapters: Sequence[Chapter]) -> Released:
    """The learner notebooks of ``chapters`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in chapters:
        target = out / learner_path(chapter).name
        shutil.copyfile(learner_path(chapter), target)
        written.append(target)
    return Released(tuple(written))


def _key_rows(student: str, seed: str, chapters: Sequence[Chapter]) -> list[dict[str, Any]]:
    rows = []
    for chapter in chapters:
        for record in chapter_records(chapter):
            mine = personalised(record, seed)
            numbers = dict(mine.params)
            spec = mine.answer_kind.function_spec()
            if spec is not None:  # what differs per student: the hidden test inputs
                numbers["test_inputs_seed"] = spec.seed
            rows.append(dict(student=student, chapter=chapter.number, exercise_id=record.id,
                             params=json.dumps(numbers, sort_keys=True, default=str),
                             answer=shown_answer(mine)))
    return rows


def _sharing(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Per exercise, the most students who share one set of numbers (1: all different)."""
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        by_numbers = counts.setdefault(row["exercise_id"], {})
        by_numbers[row["params"]] = by_numbers.get(row["params"], 0) + 1
    return {exercise: max(c.values()) for exercise, c in counts.items()}


def release_personal(out: Path, chapters: Sequence[Chapter], roster: Roster,
                     secret: bytes) -> Released:
    """One copy per student in their own numbers, plus the answer key and manifest."""
    written: list[Path] = []
    rows: list[dict[str, Any]] = []
    for student in roster.students:
        seed = student_seed(secret, student.id)
        folder = out / STUDENTS_FOLDER / student.id
        folder.mkdir(parents=True, exist_ok=True)
        for chapter in chapters:
            target = folder / learner_path(chapter).name
            target.write_text(serialize(personal_notebook(chapter, student.id, seed)),
                              encoding="utf-8")
            written.append(target)
        rows += _key_rows(student.id, seed, chapters)
    key_folder = out / KEY_FOLDER
    make_private_dir(key_folder)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=KEY_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    write_private(key_folder / "answer_key.csv", buffer.getvalue())
    manifest = dict(version=MANIFEST_VERSION, secret_fingerprint=fingerprint(secret),
                    chapters=[dict(number=c.number, notebook=learner_path(c).name,
                                   exercises=[r.id for r in chapter_records(c)])
                              for c in chapters],
                    students=[dict(id=s.id, name=s.name) for s in roster.students],
                    most_students_sharing_numbers=_sharing(rows))
    write_private(key_folder / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return Released(tuple(written), key_folder / "answer_key.csv", key_folder / "manifest.json")


def _say(text: str) -> None:
    import sys

    print(f"workbook release: {text}", file=sys.stderr)


def release_cli(out: str, chapters: str | None, roster: str | None,
                secret_file: str | None, worksheet: str | None = None) -> int:
    """Exit status 0 written, 2 bad arguments (nothing written), 1 could not write. With
    ``worksheet`` (a Moodle assignment's grading worksheet) the personal copies are also
    zipped for Moodle's feedback-files upload (:mod:`workbook.instructor.lms_release`)."""
    from autograder.personal import SecretError, read_secret
    from workbook.instructor.lms_moodle import WorksheetError, read_worksheet
    from workbook.instructor.lms_release import MOODLE_RELEASE, moodle_release_zip
    from workbook.instructor.roster import RosterError
    from workbook.instructor.roster_files import read_roster

    if (roster is None) != (secret_file is None):
        _say("--roster and --secret-file go together: personalised copies need both")
        return 2
    if worksheet is not None and roster is None:
        _say("--lms-worksheet zips personal copies for Moodle: give --roster and "
             "--secret-file too")
        return 2
    try:
        chosen = parse_chapters(chapters)
        target = Path(out)
        if target.exists() and not target.is_dir():
            raise ValueError(f"--out {out} exists and is not a folder")
        sheet = None
        if roster is None or secret_file is None:
            done = release_plain(target, chosen)
        else:
            students = read_roster(Path(roster))
            secret = read_secret(Path(secret_file))
            if worksheet is not None:
                sheet = read_worksheet(Path(worksheet), students)
            done = release_personal(target, chosen, students, secret)
        if sheet is not None:
            missing = moodle_release_zip(target / STUDENTS_FOLDER, sheet,
                                         target / MOODLE_RELEASE)
            print(f"Wrote {target / MOODLE_RELEASE} for Moodle's 'Upload multiple feedback "
                  "files in a zip'.")
            if missing:
                _say(f"the worksheet has no participant for {', '.join(missing)}: hand "
                     "their notebooks out another way")
    except (ValueError, SecretError, RosterError, WorksheetError) as error:
        _say(str(error))
        return 2
    except OSError as error:
        _say(f"could not write: {error}")
        return 1
    print(f"Wrote {len(done.notebooks)} notebook(s) into {out}.")
    if done.key is not None:
        print(f"Instructor only (do not hand out): {done.key} and {done.manifest}.")
    return 0


def new_secret_cli(path: str) -> int:
    """Write 32 random bytes as 64 hex digits to a new file only you can read."""
    import os
    import secrets

    target = Path(path)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        _say(f"{path} exists; a course keeps one secret all term (delete it only if no "
             "notebook was released with it)")
        return 2
    except OSError as error:
        _say(f"could not create {path}: {error.strerror}")
        return 1
    with os.fdopen(fd, "w") as file:
        file.write(secrets.token_hex(32) + "\n")
    print(f"Wrote a new course secret to {path} (readable only by you). Keep a copy in a "
          "safe place: without it no student's numbers can be graded.")
    return 0
