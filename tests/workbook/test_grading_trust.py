"""A class in which some students attack the grader: one batch, graded by the command line.

Honest students (some with hostile *names*) must get exactly their points; every attacker
must get none; every student must appear in grades.csv and grades.json; the batch must
finish within the bound the limits imply; and nothing a job wrote may remain on the host.

The attacks are this project's own, one per class of weakness: reading a classmate's
notebook, the instructor notebooks, the reference package or an earlier output folder
(with a ``str`` subclass as the path, ``dir_fd``-relative opens, a program started
through subprocess, the guard's bookkeeping rebound first, every path found by walking
frames and the garbage collector), files left in /tmp, /var/tmp and /dev/shm, a host UNIX
socket, symlinked notebooks and folders, a FIFO named .ipynb, a huge cell, a notebook of
hundreds of slow cells, and a function that disarms the time limit.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import secrets
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import workbook
from autograder.grading.fill import fill_answers
from workbook.instructor import grading

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

TIMEOUT_S = 1.0
WORKERS = 2
TOKEN = secrets.token_hex(6)
PROJECT = Path(workbook.__file__).resolve().parents[1]
INSTRUCTOR = str(grading.instructor_path(grading.CHAPTERS[0]))
SOCKET = Path(f"/tmp/wb-trust-{TOKEN}.sock")
MARKERS = [Path(f"{folder}/wb-trust-{TOKEN}") for folder in ("/tmp", "/var/tmp", "/dev/shm")]

# Right answers, by hand. 0.1: 8 GPUs each send 2(N-1)/N x 1 GB = 14/8 = 1.75 GB.
RIGHT_0_1 = "answer_0_1 = 1.75"
RIGHT_0_4 = 'answer_0_4 = "A"'
# 0.5: ring AllReduce time = 2(N-1) steps of (S/N)/B plus a latency each, in ms.
RIGHT_0_5 = '''
import math
def _check(x, positive=False):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError("not a number")
    if x < 0 or (positive and x == 0):
        raise ValueError("out of range")
def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
    _check(message_gb); _check(link_gb_per_s, True); _check(latency_us)
    if isinstance(n_gpus, float) and n_gpus.is_integer():
        n_gpus = int(n_gpus)
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, int) or n_gpus < 1:
        raise ValueError("n_gpus")
    n = n_gpus
    return 2 * (n - 1) * (1000.0 * message_gb / n / link_gb_per_s + latency_us / 1000.0)
'''

# Every attack ends by copying 0.1's answer out of whatever text it managed to read.
STEAL = '''
import re as _re
def _steal(text):
    found = _re.search(r"answer_0_1 = ([0-9.]+)|\\"expected\\": \\"([0-9.]+)", text)
    if found:
        return float(found.group(1) or found.group(2))
    raise LookupError("nothing to steal")
'''


def _attack(body: str) -> dict[str, str]:
    return {"0.1": STEAL + body}


ANN_NOTEBOOK = "{root}/in/ann/ch00.ipynb"
ATTACKS: dict[str, dict[str, str]] = {
    "str_subclass": _attack(
        "class P(str):\n    pass\n"
        f"answer_0_1 = _steal(open(P({ANN_NOTEBOOK!r})).read())"),
    "dir_fd": _attack(
        "import os\nfd = os.open({root!r} + '/in', os.O_RDONLY)\n"
        "answer_0_1 = _steal(open('ann/ch00.ipynb', opener=lambda p, f: "
        "os.open(p, f, dir_fd=fd)).read())"),
    "subprocess": _attack(
        "import subprocess\n"
        f"answer_0_1 = _steal(subprocess.run(['/bin/cat', {ANN_NOTEBOOK!r}, {INSTRUCTOR!r}],"
        " capture_output=True, text=True).stdout)"),
    "rebinds_guard": _attack(
        "for _name in list(globals()):\n    if _name.startswith('__wb_'):\n"
        "        globals()[_name] = None\n"
        f"answer_0_1 = _steal(open({INSTRUCTOR!r}).read())"),
    "frame_walk": _attack(
        "import gc, sys\npaths = set()\nframe = sys._getframe()\nwhile frame is not None:\n"
        "    for space in (frame.f_locals, frame.f_globals):\n"
        "        paths |= {v for v in list(space.values()) if isinstance(v, str) and '/' in v}\n"
        "    frame = frame.f_back\n"
        "paths |= {o for o in gc.get_objects() if isinstance(o, str) and o.startswith('/')}\n"
        "paths |= {{root!r} + '/in/ann/ch00.ipynb', {root!r} + '/old/grades.json'}\n"
        "texts = []\nfor p in sorted(paths):\n    try:\n        texts.append(open(p).read())\n"
        "    except Exception:\n        pass\nanswer_0_1 = _steal(' '.join(texts))"),
    "old_outputs": _attack("answer_0_1 = _steal(open({root!r} + '/old/grades.json').read())"),
    "reference_source": {"0.1": (  # run the reference's own code on the exercise's numbers
        f"namespace = {{}}\nexec(open({str(PROJECT / 'solutions' / 'collectives.py')!r})"
        ".read(), namespace)\nanswer_0_1 = namespace['ring_allreduce_gb_per_gpu'](1.0, 8)")},
    "leaves_files": _attack(
        "import socket\n"
        + "".join(f"try:\n    open({str(m)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
                  for m in MARKERS)
        + f"open('wb-trust-{TOKEN}-cwd', 'w').write('x')\n"  # its scratch folder
        + f"s = socket.socket(socket.AF_UNIX)\ns.connect({str(SOCKET)!r})\n"
        "answer_0_1 = float(s.recv(10))"),
    "timer_tamper": {"0.5": "import signal\ndef ring_allreduce_time_ms(*args):\n"
                            "    signal.setitimer(signal.ITIMER_REAL, 0)\n"
                            "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                            "    while True:\n        pass"},
    "huge_cell": {"0.1": RIGHT_0_1 + "\n#" + "x" * 200_000},
}
SLOW_CELLS = 300  # each sleeps a whole time limit: 300 s if every cell had its own budget

# Honest students: folder name -> (answers, points). Names a file system or a spreadsheet
# could trip on are honest too: only their grades matter.
LATIN1 = os.fsdecode(b"M\xfcller")  # what an LMS zip gives on Linux
COLLIDING = "a_b-" + hashlib.sha256(b"a b").hexdigest()[:8]
HONEST: dict[str, tuple[dict[str, str], int]] = {
    "ann": ({"0.1": RIGHT_0_1, "0.4": RIGHT_0_4, "0.5": RIGHT_0_5}, 3),
    "submitted": ({"0.1": RIGHT_0_1}, 1),
    "tiny": ({"0.1": "answer_0_1 = 5e-324", "0.4": RIGHT_0_4}, 1),
    "surrogate": ({"0.1": RIGHT_0_1, "0.2": 'raise ValueError("\\udcff")'}, 1),
    LATIN1: ({"0.1": RIGHT_0_1}, 1),
    '=HYPERLINK("evil.invalid","click")': ({"0.1": RIGHT_0_1}, 1),
    "+1-2": ({"0.4": RIGHT_0_4}, 1),
    "\x1b[2J\x1b[31mred\nline": ({"0.4": RIGHT_0_4}, 1),
    "a b": ({"0.1": RIGHT_0_1}, 1),
    "a_b": ({"0.4": RIGHT_0_4}, 1),
    COLLIDING: ({"0.1": RIGHT_0_1, "0.4": RIGHT_0_4}, 2),
}
REFUSED = ("symlinked_notebook", "symlinked_folder", "fifo")
ATTACKERS = (*ATTACKS, *REFUSED, "slow_cells")


def _write(folder: Path, answers: dict[str, str], extra_cells: list[str] = ()) -> None:
    notebook = json.loads(grading.learner_path(grading.CHAPTERS[0]).read_text())
    filled = fill_answers(notebook, answers)
    for source in extra_cells:
        filled["cells"].append({"cell_type": "code", "metadata": {}, "source": source,
                                "outputs": [], "execution_count": None})
    folder.mkdir(parents=True)
    (folder / "ch00.ipynb").write_text(json.dumps(filled))


def _class(root: Path) -> None:
    submissions = root / "in"
    for name, (answers, _) in HONEST.items():
        _write(submissions / name, answers)
    for name, answers in ATTACKS.items():
        _write(submissions / name, {k: v.replace("{root!r}", repr(str(root)))
                                    .replace("{root}", str(root)) for k, v in answers.items()})
    _write(submissions / "slow_cells", {}, [f"import time\ntime.sleep({TIMEOUT_S})"]
           * SLOW_CELLS)
    (submissions / "symlinked_notebook").mkdir()
    (submissions / "symlinked_notebook" / "ch00.ipynb").symlink_to(
        submissions / "ann" / "ch00.ipynb")
    (submissions / "symlinked_folder").symlink_to(submissions / "ann")
    (submissions / "fifo").mkdir()
    os.mkfifo(submissions / "fifo" / "ch00.ipynb")
    (root / "old").mkdir()  # an earlier run's output, holding an expected answer
    (root / "old" / "grades.json").write_text('{"expected": "1.75"}')
    # Everything readable by anyone, as an ordinary umask leaves it: only the sandbox
    # stands between the jobs and these files.
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink() and (path.is_dir() or path.is_file()):
            path.chmod(0o755 if path.is_dir() else 0o644)


def _socket_server() -> tuple[socket.socket, list[bool]]:
    """A host UNIX socket that hands the answer to whoever connects."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(SOCKET))
    os.chmod(SOCKET, 0o777)
    server.listen(4)
    server.settimeout(0.2)
    connected: list[bool] = []

    def serve() -> None:
        while server.fileno() != -1:
            try:
                client, _ = server.accept()
            except OSError:
                continue
            connected.append(True)
            client.sendall(b"1.75")
            client.close()
    threading.Thread(target=serve, daemon=True).start()
    return server, connected


def _left_on_host() -> list[Path]:
    """Whatever the attacker wrote, wherever on the host's temporary folders it may be."""
    found = [m for m in MARKERS if m.exists()]
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        found += Path(folder).glob(f"*/wb-trust-{TOKEN}-cwd")
    return found


def _grade(unsafe: bool) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="wb-trust-"))  # in /tmp: reachable by anyone
    _class(root)
    server, connected = _socket_server()
    started = time.monotonic()
    try:
        status = grading.grade_cli(str(root / "in"), str(root / "out"), workers=WORKERS,
                                   timeout_s=TIMEOUT_S, unsafe_no_sandbox=unsafe)
    finally:
        seconds = time.monotonic() - started
        server.close()
        SOCKET.unlink(missing_ok=True)
    rows = list(csv.DictReader((root / "out" / "grades.csv").open(encoding="utf-8")))
    data = json.loads((root / "out" / "grades.json").read_text(encoding="utf-8"))
    left = _left_on_host()
    for marker in left:
        marker.unlink()
    return dict(root=root, status=status, seconds=seconds, rows=rows, json=data,
                connected=connected, left=left)


@pytest.fixture(scope="module")
def graded() -> Iterator[dict[str, Any]]:
    result = _grade(unsafe=False)
    yield result
    shutil.rmtree(result["root"], ignore_errors=True)


def _csv_name(name: str) -> str:
    """How a name must look in the CSV, written out by hand for the names above."""
    return {LATIN1: "M\\xfcller", '=HYPERLINK("evil.invalid","click")':
            '\'=HYPERLINK("evil.invalid","click")', "+1-2": "'+1-2",
            "\x1b[2J\x1b[31mred\nline": "\\x1b[2J\\x1b[31mred\nline"}.get(name, name)


def _points(rows: list[dict[str, str]], name: str) -> int:
    return sum(int(r["points"]) for r in rows if r["student"] == _csv_name(name))


def test_honest_students_get_exactly_their_points(graded: dict[str, Any]) -> None:
    got = {name: _points(graded["rows"], name) for name in HONEST}
    assert got == {name: points for name, (_, points) in HONEST.items()}


def test_every_attacker_gets_nothing(graded: dict[str, Any]) -> None:
    assert {name: _points(graded["rows"], name) for name in ATTACKERS} == dict.fromkeys(
        ATTACKERS, 0)


def test_every_student_appears_in_both_gradebooks(graded: dict[str, Any]) -> None:
    everyone = {_csv_name(name) for name in (*HONEST, *ATTACKERS)}
    assert {r["student"] for r in graded["rows"]} == everyone
    in_json = {nb["student"] for nb in graded["json"]["notebooks"]}
    assert {"M\\xfcller", "\x1b[2J\x1b[31mred\nline", "submitted", *ATTACKERS} <= in_json
    assert len(in_json) == len(everyone)
    assert graded["json"]["isolation"].startswith("bubblewrap sandbox")


def test_refused_files_say_why_and_did_not_hang(graded: dict[str, Any]) -> None:
    messages = {r["student"]: r["message"] for r in graded["rows"] if r["student"] in REFUSED}
    assert "symbolic link" in messages["symlinked_notebook"]
    assert "symbolic link" in messages["symlinked_folder"]
    assert "not a regular file" in messages["fifo"]
    huge = [r["message"] for r in graded["rows"] if r["student"] == "huge_cell"]
    assert "200,0" in huge[0] and "characters" in huge[0]
    assert graded["status"] == 1  # some files could not be graded


def _chapter0_time_limits() -> int:
    """One time limit per chapter-0 record, one more for each that runs a learner's
    function (build, debug and lab records): whatever a notebook adds."""
    from workbook.records import all_challenges, all_exercises, all_labs

    records = [r for r in (*all_exercises(), *all_challenges(), *all_labs()) if r.chapter == 0]
    return len(records) + sum(r.category in ("build", "debug") for r in records)


def test_the_batch_finishes_within_its_bound(graded: dict[str, Any]) -> None:
    # At most _chapter0_time_limits() limits per notebook (10 with the lab 0.7), plus 2 s;
    # a crashed or stuck worker gets 10 s more.
    limits = _chapter0_time_limits()
    per_notebook_s = TIMEOUT_S * limits + 2 + 10
    notebooks = len(HONEST) + len(ATTACKS) + 1 - 1  # huge_cell is refused before running
    bound_s = math.ceil(notebooks / WORKERS) * per_notebook_s + 30  # + start-up
    assert graded["seconds"] < bound_s
    slow = next(nb for nb in graded["json"]["notebooks"] if nb["student"] == "slow_cells")
    assert slow["seconds"] < TIMEOUT_S * limits + 2 + 1  # not SLOW_CELLS time limits


def test_nothing_a_job_wrote_remains_on_the_host(graded: dict[str, Any]) -> None:
    assert graded["left"] == []  # not in /tmp, /var/tmp, /dev/shm, nor a scratch folder
    assert graded["connected"] == []  # the host socket is not reachable


def test_outputs_are_private_and_feedback_pages_never_collide(graded: dict[str, Any]) -> None:
    out = graded["root"] / "out"
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}
    assert not [p for p in files if p.name.startswith(".tmp-")]
    pages = [p for p in files if p.suffix == ".html" and "feedback" in p.parts]
    assert len(pages) == len(HONEST) + len(ATTACKERS)  # one page each, none overwritten
    texts = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    assert "\x1b" not in texts and "M\\xfcller" in texts


def test_text_from_submissions_is_made_safe(graded: dict[str, Any]) -> None:
    raw = (graded["root"] / "out" / "grades.csv").read_text(encoding="utf-8")
    assert "\x1b" not in raw and "\n=HYPERLINK" not in raw and ",=HYPERLINK" not in raw
    assert "\n+1-2" not in raw
    surrogate = next(r for r in graded["rows"] if r["student"] == "surrogate"
                     and r["exercise_id"] == "0.2")
    assert "raised ValueError: \\xff" in surrogate["message"]  # visible, encodable


def test_without_the_sandbox_the_same_class_leaks_and_the_gradebook_says_so() -> None:
    # The control: the corpus does catch a grader without isolation. With only in-process
    # confinement some attacks earn points, reach the host socket and leave files behind.
    result = _grade(unsafe=True)
    try:
        leaked = {name for name in ATTACKERS if _points(result["rows"], name)}
        assert {"str_subclass", "old_outputs", "leaves_files"} <= leaked
        assert result["connected"] and result["left"]
        assert result["json"]["isolation"].startswith("NO SANDBOX")
        assert all(r["message"].endswith("graded WITHOUT the sandbox (--unsafe-no-sandbox).")
                   for r in result["rows"])
    finally:
        shutil.rmtree(result["root"], ignore_errors=True)
