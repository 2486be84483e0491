"""The grader under a memory cap with a class that hoards memory the sandbox's measures once
missed: the gradebook is still written, and the honest student keeps every point.

The grader, its workers and their jobs run together in one memory cgroup of 1.2 GB (as a
container's limit or a user slice would hold them). A class may not bring the kernel to
choose whom to stop: the sandbox's own walls stop each hoarder first, and what one holds
costs no other student anything. (Shared memory passed between a job's processes is
tested in tests/autograder/sandbox/test_job_footprint.py.)
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.sandbox import cgroup

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
needs_group = pytest.mark.skipif(cgroup.available() != "",
                                 reason=f"no memory cgroup here: {cgroup.available()}")
ROOT = Path(__file__).resolve().parents[3]
CAP_MB = 1200

HOARDERS = {
    # memory no process maps: two processes, each writing 50 memfds of 15 MB (each under
    # the file-size limit), 1.5 GB in all
    "memfd": "import os, time\nos.fork()\nfds = []\nfor _ in range(50):\n"
             "    fds.append(os.memfd_create('held'))\n    os.write(fds[-1], b'm' * (15 << 20))\n"
             "time.sleep(3)\nanswer_1_1 = 2",
    # files in the job's scratch, as many as it will take
    "files": "n = 0\ntry:\n    while True:\n        open(f'f{n}', 'wb').write(b'f' * (8 << 20))\n"
             "        n += 1\nexcept OSError:\n    pass\nanswer_1_1 = 2",
}
HONEST = {"1.1": "answer_1_1 = 2",
          "1.2": "def double(x):\n    if x < 0:\n        raise ValueError('no')\n    return 2 * x"}

SCRIPT = """
import importlib.util, json, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("toy", sys.argv[1])
toy = importlib.util.module_from_spec(spec); spec.loader.exec_module(toy)
from autograder.grading import GradingSettings, Release, Task, grade_folder, write_outputs
release = Release(1, "Toy", "ch01_toy", toy.CELLS, tuple(Task(r) for r in toy.RECORDS))
folder, out = Path(sys.argv[2]), Path(sys.argv[3])
for student, answers in json.loads(sys.argv[4]).items():
    (folder / student).mkdir(parents=True)
    (folder / student / "toy.ipynb").write_text(json.dumps(toy.notebook_tree(answers)))
batch = grade_folder(folder, {1: release},
                     GradingSettings(workers=2, timeout_s=8, memory_mb=1024))
write_outputs(batch, out)
print("written")
"""


@needs_group
def test_the_gradebook_is_written_and_the_honest_keep_their_points(tmp_path: Path) -> None:
    group = cgroup.MemoryGroup.create("grader-cap", CAP_MB << 20)
    assert group is not None
    students = {f"hoard_{name}": {"1.1": source} for name, source in HOARDERS.items()}
    students["honest"] = HONEST
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(ROOT / "tests/autograder/grading/conftest.py"),
             str(tmp_path / "in"), str(tmp_path / "out"), json.dumps(students)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
            text=True, timeout=300, preexec_fn=group.preexec, check=False)
        kills = group.oom_kills()
    finally:
        group.remove()
    assert done.returncode == 0 and "written" in done.stdout, done.stderr[-3000:]
    with open(tmp_path / "out" / "grades.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    points = {}
    for row in rows:
        points[row["student"]] = points.get(row["student"], 0.0) + float(row["points"] or 0)
    assert points["honest"] == 2  # both toy exercises, one point each
    # The memfd is refused before the answer is set; the files fill the job's own bounded
    # scratch, and that job's answer counts as anyone's would.
    assert (points["hoard_memfd"], points["hoard_files"]) == (0, 1)
    # The sandbox's own walls stopped every hoarder before the cap: the kernel never had to
    # choose whom to kill.
    assert kills == 0


def test_the_batch_says_how_memory_was_bounded(tmp_path: Path) -> None:
    from autograder.grading import GradingSettings, grade_folder

    (tmp_path / "in").mkdir()
    isolation = grade_folder(tmp_path / "in", {}, GradingSettings()).isolation
    if cgroup.available():
        assert f"memory: the sandbox's own measure ({cgroup.available()})" in isolation
    else:
        assert "memory: one kernel-enforced limit per worker" in isolation
