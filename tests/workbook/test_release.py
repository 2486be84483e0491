"""``workbook release``: per-student numbers from a keyed hash, the notebooks and the key."""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import os
from pathlib import Path

import pytest

from autograder.personal import (
    Classmates,
    SecretError,
    carries_numbers,
    personalised,
    read_secret,
    student_seed,
)
from workbook import cli
from workbook.instructor.release import (
    chapter_records,
    parse_chapters,
    personal_notebook,
)
from workbook.instructor.roster import RosterError
from workbook.instructor.roster_files import parse_roster
from workbook.learner.personal_numbers import current_seed
from workbook.outline import CHAPTERS
from workbook.records import all_exercises, lookup, printed

SECRET = b"0123456789abcdef0123456789abcdef"
OTHER_SECRET = b"fedcba9876543210fedcba9876543210"
CLASS = [f"s{n:03d}" for n in range(40)]


@pytest.fixture(autouse=True)
def printed_numbers() -> None:
    """Each test starts (and leaves the kernel) in the printed numbers."""
    from workbook.learner import personal_numbers

    personal_numbers._current.clear()
    yield
    personal_numbers._current.clear()


def test_the_seed_is_an_hmac_of_the_id_under_the_secret() -> None:
    """Independently: HMAC-SHA256 (RFC 2104) of the domain-tagged id, first 128 bits."""
    tag = b"distributed-training-workbook/student-numbers/v1\x00"
    want = hmac.new(SECRET, tag + b"s001", hashlib.sha256).hexdigest()[:32]
    assert student_seed(SECRET, "s001") == want == student_seed(SECRET, " s001 ")
    assert student_seed(OTHER_SECRET, "s001") != want  # another course: other numbers
    assert hashlib.sha256(b"s001").hexdigest()[:32] != want  # not an unkeyed hash


def _numbers(student: str, secret: bytes = SECRET) -> dict[str, str]:
    seed = student_seed(secret, student)
    out = {}
    for record in all_exercises():
        mine = personalised(record, seed)
        spec = mine.answer_kind.function_spec()
        out[record.id] = json.dumps([dict(mine.params), spec.seed if spec else None],
                                    sort_keys=True, default=str)
    return out


def test_students_get_different_numbers_wherever_an_exercise_has_them() -> None:
    by_student = {s: _numbers(s) for s in CLASS}
    for record in all_exercises():
        seen = {by_student[s][record.id] for s in CLASS}
        try:
            space = {json.dumps(record.variant(n), sort_keys=True, default=str)
                     for n in range(200)}
        except ValueError:
            assert len(seen) == 1, record.id  # no numbers to vary: the printed ones
            continue
        # 40 keyed draws from a space of at least 2 variants: never all the same (9.8's
        # record has a single variant, its mirror image); build and debug exercises give
        # every student their own hidden inputs.
        assert len(seen) > 1 or len(space) == 1, record.id
        if record.answer_kind.function_spec() is not None:
            assert len(seen) == len(CLASS), record.id
    # Any two students differ on most exercises.
    for a, b in zip(CLASS, CLASS[1:], strict=False):
        same = sum(by_student[a][k] == by_student[b][k] for k in by_student[a])
        assert same < len(by_student[a]) / 2, (a, b, same)


def test_a_students_numbers_do_not_depend_on_the_class() -> None:
    """The grader recomputes them from the secret and the id alone (no roster needed)."""
    assert _numbers("s007") == _numbers("s007")
    alone = personalised(printed("5.2"), student_seed(SECRET, "s007")).params
    Classmates({s: student_seed(SECRET, s) for s in CLASS})  # a class around them
    assert personalised(printed("5.2"), student_seed(SECRET, "s007")).params == alone


def test_a_personal_prompt_shows_the_students_numbers() -> None:
    chapter = CHAPTERS[0]
    seed = student_seed(SECRET, "s001")
    notebook = personal_notebook(chapter, "s001", seed)
    mine = personalised(printed("0.1"), seed)
    prompt = next("".join(c["source"]) for c in notebook["cells"]
                  if c["metadata"].get("workbook", {}) == {"exercise": "0.1", "role": "prompt"})
    assert f"{mine.params['n_gpus']} GPUs each hold a {mine.params['message_gb']:g} GB" in prompt
    numbers = [c for c in notebook["cells"] if c["id"] == "ch00-numbers"]
    assert numbers[0]["source"] == f'wb.your_numbers("s001", "{seed}")'
    assert [c["id"] for c in notebook["cells"]].index("ch00-numbers") == 2  # after setup
    assert notebook["metadata"]["workbook"]["student"] == "s001"


def test_the_learners_own_check_uses_the_notebooks_numbers_offline(tmp_path: Path) -> None:
    import workbook as wb

    seed_a, seed_b = student_seed(SECRET, "s001"), student_seed(SECRET, "s002")
    mine, theirs = (personalised(printed("0.2"), s).expected() for s in (seed_a, seed_b))
    assert mine != theirs
    assert not wb.check("0.2", mine).passed  # the printed numbers, before the cell runs
    exec(f'wb.your_numbers("s001", "{seed_a}")', {"wb": wb})  # the notebook's cell
    assert current_seed() == seed_a
    assert wb.check("0.2", mine).passed and not wb.check("0.2", theirs).passed
    assert lookup("0.2").params == personalised(printed("0.2"), seed_a).params
    assert printed("0.2").params != lookup("0.2").params
    with pytest.raises(ValueError, match="32-hex-digit seed"):
        wb.your_numbers("s001", "not a seed")


def _roster(tmp_path: Path, ids: list[str]) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text("id,name\n" + "".join(f"{i},Name {i}\n" for i in ids))
    return path


def _secret(tmp_path: Path, data: bytes = SECRET, mode: int = 0o600) -> Path:
    path = tmp_path / "course.key"
    path.write_bytes(data + b"\n")
    os.chmod(path, mode)
    return path


def test_release_writes_each_student_and_a_private_key(tmp_path: Path) -> None:
    status = cli.main(["release", "--out", str(tmp_path / "h"), "--chapters", "0,5",
                       "--roster", str(_roster(tmp_path, ["s001", "s002"])),
                       "--secret-file", str(_secret(tmp_path))])
    assert status == 0
    names = sorted(p.relative_to(tmp_path / "h").as_posix()
                   for p in (tmp_path / "h").rglob("*") if p.is_file())
    assert names == ["answer-key/answer_key.csv", "answer-key/manifest.json",
                     "students/s001/ch00_ring_allreduce.ipynb",
                     "students/s001/ch05_pipeline_parallelism.ipynb",
                     "students/s002/ch00_ring_allreduce.ipynb",
                     "students/s002/ch05_pipeline_parallelism.ipynb"]
    key_file = tmp_path / "h" / "answer-key" / "answer_key.csv"
    assert key_file.stat().st_mode & 0o777 == 0o600
    rows = list(csv.DictReader(key_file.open()))
    ids = [r.id for c in parse_chapters("0,5") for r in chapter_records(c)]
    assert [r["exercise_id"] for r in rows] == ids * 2
    row = next(r for r in rows if r["student"] == "s002" and r["exercise_id"] == "5.1")
    mine = personalised(printed("5.1"), student_seed(SECRET, "s002"))
    assert json.loads(row["params"]) == json.loads(json.dumps(dict(mine.params)))
    manifest = (tmp_path / "h" / "answer-key" / "manifest.json").read_text()
    assert SECRET.decode() not in manifest and "s002" in manifest
    for notebook in (tmp_path / "h" / "students").rglob("*.ipynb"):
        text = notebook.read_text()
        assert "BEGIN SOLUTION" not in text and SECRET.decode() not in text


def test_release_without_a_roster_copies_the_learner_notebooks(tmp_path: Path) -> None:
    assert cli.main(["release", "--out", str(tmp_path / "h"), "--chapters", "3"]) == 0
    assert [p.name for p in (tmp_path / "h").iterdir()] == ["ch03_learning_rate_scaling.ipynb"]


@pytest.mark.parametrize("args, message", [
    (["--chapters", "12"], "--chapters takes chapter numbers 0 to 9"),
    (["--chapters", "0,x"], "--chapters takes chapter numbers 0 to 9"),
    (["--roster", "r.csv"], "--roster and --secret-file go together"),
])
def test_release_refuses_bad_arguments(tmp_path: Path, args: list[str], message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["release", "--out", str(tmp_path / "h"), *args]) == 2
    assert message in capsys.readouterr().err


def test_a_secret_must_be_private_and_long_enough(tmp_path: Path) -> None:
    with pytest.raises(SecretError, match="chmod 600"):
        read_secret(_secret(tmp_path, mode=0o644))
    with pytest.raises(SecretError, match="16 to 4096 bytes"):
        read_secret(_secret(tmp_path, data=b"short"))
    with pytest.raises(SecretError, match="cannot read"):
        read_secret(tmp_path / "missing.key")
    assert read_secret(_secret(tmp_path)) == SECRET


def test_new_secret_makes_a_private_random_key_once(tmp_path: Path) -> None:
    path = tmp_path / "course.key"
    assert cli.main(["new-secret", str(path)]) == 0
    assert path.stat().st_mode & 0o777 == 0o600 and len(read_secret(path)) == 64
    assert cli.main(["new-secret", str(path)]) == 2  # never overwrites the course's secret


@pytest.mark.parametrize("text, message", [
    ("name\nAda\n", "must name an 'id' column"),
    ("id\ns1\ns1\n", "line 3: the id s1 is already on line 2"),
    ("id\n../etc\n", "line 2: the id '../etc' is not a plain id"),
    ("id\n", "lists no students"),
])
def test_a_bad_roster_says_which_line(text: str, message: str) -> None:
    with pytest.raises(RosterError, match=message.replace("(", r"\(")):
        parse_roster(text)


def test_a_roster_maps_lms_ids() -> None:
    roster = parse_roster("\ufeffID,Name,Canvas_ID,moodle_id\ns1,A,501,77\ns2,B,,\n")
    assert roster.ids == ("s1", "s2")
    assert roster.by_lms("canvas_id") == {"501": "s1"}
    assert roster.by_lms("moodle_id") == {"77": "s1"}


def test_whose_answer_finds_the_classmate_the_answer_is_right_for() -> None:
    seeds = {s: student_seed(SECRET, s) for s in CLASS[:6]}
    classmates = Classmates(seeds)
    record = printed("0.2")
    assert carries_numbers(record) and not carries_numbers(printed("0.5"))
    answers = {s: personalised(record, seeds[s]).expected() for s in seeds}
    other = next(s for s in seeds if answers[s] != answers["s000"])
    assert classmates.whose_answer(record, other, answers["s000"]) in {
        s for s in seeds if answers[s] == answers["s000"]}
    assert classmates.whose_answer(record, "s000", answers["s000"]) == ""
    assert classmates.whose_answer(record, "s000", 123456789.0) == ""
    assert classmates.whose_seed(seeds["s003"]) == "s003"


@pytest.mark.slow
def test_a_personal_notebook_checks_its_own_numbers_in_a_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run top to bottom in a real kernel with no secret anywhere: its own answers pass,
    a classmate's (for other numbers) does not."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from autograder.grading.fill import fill_answers

    mine = personalised(printed("0.2"), student_seed(SECRET, "s001")).expected()
    own_3 = personalised(printed("0.3"), student_seed(SECRET, "s001")).expected()
    theirs = next(v for s in CLASS if abs((v := personalised(
        printed("0.3"), student_seed(SECRET, s)).expected()) - own_3) > 0.05 * own_3)
    notebook = personal_notebook(CHAPTERS[0], "s001", student_seed(SECRET, "s001"))
    filled = fill_answers(notebook, {"0.1": "answer_0_1 = None",
                                     "0.2": f"answer_0_2 = {mine!r}",
                                     "0.3": f"answer_0_3 = {theirs!r}"})
    node = nbformat.reads(json.dumps(filled), as_version=4)
    monkeypatch.setenv("WORKBOOK_HOME", str(tmp_path / "home"))
    nbclient.NotebookClient(node, timeout=300, kernel_name="python3").execute()
    shown = {c.source: "".join(o.get("data", {}).get("text/plain", "") for o in c.outputs)
             for c in node.cells if c.cell_type == "code"}
    assert shown['wb.check("0.2", answer_0_2)'].startswith("✔ Correct")
    assert not shown['wb.check("0.3", answer_0_3)'].startswith("✔")
    assert "in the numbers of s001" in shown[next(s for s in shown if "your_numbers" in s)]
