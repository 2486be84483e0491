"""Honest submissions, fabricated from the learner release notebooks, get the points they earn.

Four students hand in every chapter: one answers everything right, one gets some wrong,
one has cells that raise, one hands the notebooks back untouched. Points are all or
nothing per exercise, so each student's total is a count of right answers. The build
and debug answers are written out here by hand, the way a learner would write them
(without importing anything from the workbook), checks and all.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from autograder.grading.fill import fill_answers
from workbook.instructor import grading

# A learner's own input checks, in a cell of their own at the top of the exercises.
HELPERS = '''
import math

def _number(value, allow_zero=True):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"out of range: {value!r}")
    return value

def _whole(value):
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"not a whole number >= 1: {value!r}")
    return value
'''

FUNCTIONS = {
    "0.5": '''
def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
    _number(message_gb); _number(link_gb_per_s, allow_zero=False); _number(latency_us)
    n = _whole(n_gpus)
    # 2(N-1) steps, each: one S/N chunk at B GB/s, plus the latency
    return 2 * (n - 1) * (1000.0 * message_gb / n / link_gb_per_s + latency_us / 1000.0)
''',
    "0.6": '''
bug_line_0_6 = 5

def ring_allreduce_bandwidth_time_s(message_gb, n_gpus, link_gb_per_s):
    _number(message_gb); _number(link_gb_per_s, allow_zero=False)
    n = _whole(n_gpus)
    steps = 2 * (n - 1)
    return steps * (message_gb / n) / link_gb_per_s
''',
    "2.4": '''
def accumulation_plan(target_batch, micro_batch, dp_degree):
    per_step = _whole(micro_batch) * _whole(dp_degree)
    steps = -(-_whole(target_batch) // per_step)
    return steps, steps * per_step
''',
    "4.5": '''
def comm_compute_ratio(params_billion, n_gpus, link_gb_per_s, flops_per_step_tflop,
                       achieved_tflops):
    gradient_gb = 2 * _number(params_billion)
    n = _whole(n_gpus)
    comm_s = 2 * (n - 1) * (gradient_gb / n) / _number(link_gb_per_s, allow_zero=False)
    compute_s = _number(flops_per_step_tflop, False) / _number(achieved_tflops, False)
    return comm_s / compute_s
''',
    "5.5": '''
bug_line_5_5 = 6

def bubble_over_compute(pp, m, v=1):
    return (_whole(pp) - 1) / (_whole(m) * _whole(v))
''',
    "7.5": '''
def optimal_checkpoint_interval(mtbf_hours, checkpoint_s):
    m = _number(mtbf_hours, allow_zero=False) * 3600.0
    c = _number(checkpoint_s, allow_zero=False)
    tau = math.sqrt(2 * c * m)
    return tau / 60.0, 100.0 * (c / tau + tau / (2 * m))
''',
    "9.11": '''
def model_flops_utilisation(n_params, tokens_per_s_per_gpu, peak_tflops):
    _number(n_params, allow_zero=False); _number(tokens_per_s_per_gpu)
    return 6 * n_params * tokens_per_s_per_gpu / (_number(peak_tflops, allow_zero=False) * 1e12)
''',
    "9.12": '''
def step_time_from_costs(work_s, send_s, pp, m, v, dp_exposed_s):
    _number(work_s); _number(send_s); _number(dp_exposed_s)
    p, m, v = _whole(pp), _whole(m), _whole(v)
    if p == 1:
        return m * work_s + dp_exposed_s
    # with m < p the schedule runs breadth-first rounds: each later round idles p - m slots
    idle_slots = (p - 1) + (v - 1) * max(p - m, 0)
    return m * work_s + idle_slots / v * work_s + (m * v + p - 1) * send_s + dp_exposed_s
''',
    "8.6": '''
def dynamic_loss_scale(overflows, init_scale=65536.0, growth_interval=2000):
    scale = float(_number(init_scale, allow_zero=False))
    interval = _whole(growth_interval)
    good = 0
    for overflow in overflows:
        if overflow:
            scale, good = scale * 0.5, 0
        else:
            good += 1
            if good == interval:
                if scale * 2.0 <= 3.4028234663852886e38:
                    scale *= 2.0
                good = 0
    return scale
''',
}


# The labs, written as a learner would: per-rank programs on the simulated cluster.
FUNCTIONS["0.7"] = '''
import numpy as np

def ring_allreduce(rank):
    n, me = rank.size, rank.id
    x = np.array(rank.data, copy=True)
    cut = [len(x) * c // n for c in range(n + 1)]   # my own chunking: floor(M c / N)
    span = lambda c: slice(cut[c % n], cut[c % n + 1])
    for s in range(n - 1):
        rank.send((me + 1) % n, x[span(me - s)])
        yield
        x[span(me - s - 1)] += rank.recv((me - 1) % n)
    for s in range(n - 1):
        rank.send((me + 1) % n, x[span(me + 1 - s)])
        yield
        x[span(me - s)] = rank.recv((me - 1) % n)
    return x
'''
FUNCTIONS["1.7"] = '''
import numpy as np

def zero3_forward(rank):
    x = rank.data["x"]
    for shard in rank.data["shards"]:
        parts = yield from rank.all_gather(shard)
        w = np.concatenate(parts).reshape(x.shape[1], x.shape[1])
        x = np.maximum(x @ w, 0.0)
        rank.free(*parts)
    return x
'''
FUNCTIONS["5.8"] = '''
def pipeline_schedule(pp, m, v):
    if v == 1:
        orders = []
        for s in range(pp):
            warm = min(pp - s - 1, m)
            order = [("F", j) for j in range(warm)]
            for k in range(m - warm):
                order += [("F", warm + k), ("B", k)]
            orders.append(order + [("B", j) for j in range(m - warm, m)])
        return orders
    total = m * v
    chunk = lambda k, fwd: (k % (pp * v)) // pp if fwd else v - 1 - (k % (pp * v)) // pp
    micro = lambda k: (k // (pp * v)) * pp + k % pp
    orders = []
    for s in range(pp):
        warm = min((pp - s - 1) * 2 + (v - 1) * pp, total)
        order = [("F", chunk(k, True), micro(k)) for k in range(warm)]
        for i in range(total - warm):
            order += [("F", chunk(warm + i, True), micro(warm + i)),
                      ("B", chunk(i, False), micro(i))]
        drain = range(total - warm, total)
        orders.append(order + [("B", chunk(k, False), micro(k)) for k in drain])
    return orders
'''
FUNCTIONS["6.6"] = '''
import numpy as np

def tp_mlp_forward(rank):
    d = rank.data
    partial = np.maximum(d["x"] @ d["a"], 0.0) @ d["b"]
    return (yield from rank.all_reduce(partial))
'''
LABS = ("0.7", "1.7", "5.8", "6.6")


def right_answer(task: grading.Task) -> str:
    if task.record.id in FUNCTIONS:
        return FUNCTIONS[task.record.id]
    value = task.record.expected()
    return f"{task.value_name} = {list(value) if isinstance(value, tuple) else value!r}"


def wrong_answer(task: grading.Task) -> str:
    """Numbers doubled, another option, the function off by a constant."""
    if task.record.id in FUNCTIONS:
        source = FUNCTIONS[task.record.id]
        name = task.function_name
        return source + f"\n_right = {name}\ndef {name}(*args):\n    return 7\n"
    value = task.record.expected()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{task.value_name} = {value * 2 + 1!r}"
    if isinstance(value, str):
        other = next(o.key for o in task.record.answer_kind.options  # type: ignore[attr-defined]
                     if o.key != value)
        return f"{task.value_name} = {other!r}"
    if isinstance(value, dict):
        return f"{task.value_name} = {dict((k, v * 2) for k, v in value.items())!r}"
    return f"{task.value_name} = {list(reversed(list(value)))!r}"


def fabricate(root: Path, student: str, pick: dict[str, str]) -> None:
    """Every chapter for ``student``; ``pick`` maps exercise id -> "right"/"wrong"/"raise";
    exercises not in it stay unanswered."""
    for chapter, release in grading.releases().items():
        notebook = json.loads(grading.learner_path(grading.CHAPTERS[chapter]).read_text())
        answers = {}
        for task in release.tasks:
            how = pick.get(task.record.id)
            if how == "right":
                answers[task.record.id] = right_answer(task)
            elif how == "wrong":
                answers[task.record.id] = wrong_answer(task)
            elif how == "raise":
                answers[task.record.id] = (f"scale = 0\n{task.value_name or 'x'} = 1 / scale"
                                           if task.function_name is None else
                                           right_answer(task) + "\nraise KeyError('oops')")
        filled = fill_answers(notebook, answers)
        if answers:  # the learner's helper cell, right before the first exercise
            first = next(i for i, c in enumerate(filled["cells"])
                         if c["metadata"].get("workbook", {}).get("exercise"))
            filled["cells"].insert(first, {"cell_type": "code", "id": f"mine-{chapter}",
                                           "metadata": {}, "source": HELPERS,
                                           "outputs": [], "execution_count": None})
        folder = root / student
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"chapter{chapter}.ipynb").write_text(json.dumps(filled))


ALL_IDS = [t.record.id for r in grading.releases().values() for t in r.tasks]
# Every third exercise wrong for "mixed"; the rest right.
MIXED = {ex: ("wrong" if i % 3 == 0 else "right") for i, ex in enumerate(ALL_IDS)}
# "raises": value answers raise before the answer exists (error), functions raise after
# their def (the cell fails, but the function exists and is right).
RAISES = {ex: "raise" for ex in ALL_IDS}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, str]]:
    root = tmp_path_factory.mktemp("class")
    fabricate(root / "in", "ada", {ex: "right" for ex in ALL_IDS})
    fabricate(root / "in", "bo", MIXED)
    fabricate(root / "in", "cy", RAISES)
    fabricate(root / "in", "di", {})
    status = grading.grade_cli(str(root / "in"), str(root / "out"), workers=2, timeout_s=2)
    assert status == 0
    with (root / "out" / "grades.csv").open(encoding="utf-8") as file:
        return {(row["student"], row["exercise_id"]): row for row in csv.DictReader(file)}


def points(rows: dict[tuple[str, str], dict[str, str]], student: str) -> int:
    return sum(int(row["points"]) for (who, _), row in rows.items() if who == student)


def test_every_exercise_of_every_chapter_has_a_row(graded: dict) -> None:
    # 4 students x 67 exercises (58 + the challenges 5.7 and 9.10-9.13 + 4 labs)
    assert len(graded) == 4 * 67


def test_all_right_earns_every_point(graded: dict) -> None:
    bad = {ex: row["message"] for (who, ex), row in graded.items()
           if who == "ada" and row["status"] != "correct"}
    assert bad == {}
    assert points(graded, "ada") == 67


def test_every_third_wrong_loses_exactly_those_points(graded: dict) -> None:
    # indices 0, 3, ..., 66 of 67 exercises are wrong: 23 of them; 67 - 23 = 44
    assert points(graded, "bo") == 44
    wrong = sorted(ex for (who, ex), row in graded.items()
                   if who == "bo" and row["status"] == "wrong")
    assert wrong == sorted(ex for ex, how in MIXED.items() if how == "wrong")


def test_cells_that_raise(graded: dict) -> None:
    rows = {ex: row for (who, ex), row in graded.items() if who == "cy"}
    # 54 value exercises (5.7 and 9.13 among them) raise before their answer exists: errors naming
    # the exception
    errors = [ex for ex, row in rows.items() if row["status"] == "error"]
    assert len(errors) == 54
    assert "raised ZeroDivisionError: division by zero (line 2)" in rows["0.1"]["message"]
    # the 9 build/debug and 4 lab cells define a right function and then raise: still full
    # marks, as in nbgrader, whose check cell runs after the failed cell
    assert {ex for ex, row in rows.items() if row["status"] == "correct"} == {
        "0.5", "0.6", "2.4", "4.5", "5.5", "7.5", "8.6", "9.11", "9.12", *LABS}
    assert points(graded, "cy") == 13


def test_untouched_notebooks_are_unanswered(graded: dict) -> None:
    rows = {ex: row for (who, ex), row in graded.items() if who == "di"}
    assert {row["status"] for row in rows.values()} == {"unanswered"}
    assert points(graded, "di") == 0
    assert rows["0.1"]["message"] == "Not answered: expected a number in GB."
    assert rows["0.5"]["message"] == "Not answered: ring_allreduce_time_ms still returns None."
    assert rows["0.7"]["message"] == "Not answered: ring_allreduce is still the starting code."


def test_nbgrader_layout_and_a_units_string(tmp_path: Path) -> None:
    # submitted/<student>/<assignment>/<notebook>.ipynb, answers as a learner types them
    chapter = grading.CHAPTERS[0]
    notebook = json.loads(grading.learner_path(chapter).read_text())
    # 0.1: 8 GPUs, 1 GB gradient: ring AllReduce sends 2(N-1)/N x 1 GB = 14/8 = 1.75 GB
    filled = fill_answers(notebook, {"0.1": 'answer_0_1 = "1.75 GB"',
                                     "0.4": 'answer_0_4 = "B"'})
    target = tmp_path / "course" / "submitted" / "eve" / "ch00_ring_allreduce"
    target.mkdir(parents=True)
    (target / "ch00_ring_allreduce.ipynb").write_text(json.dumps(filled))
    (target / "timestamp.txt").write_text("2024-01-01 00:00:00")  # nbgrader's, skipped
    status = grading.grade_cli(None, str(tmp_path / "out"), workers=1, timeout_s=2,
                               nbgrader_course=str(tmp_path / "course"))
    assert status == 0
    rows = list(csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8")))
    by_id = {row["exercise_id"]: row for row in rows}
    assert by_id["0.1"]["status"] == "correct" and by_id["0.1"]["points"] == "1"
    assert by_id["0.4"]["status"] == "wrong" and by_id["0.4"]["points"] == "0"
    assert {row["student"] for row in rows} == {"eve"}
    assert len(rows) == 7  # 0.1-0.6 and the lab 0.7


def student_version(chapter: int) -> dict:
    """What ``nbgrader generate_assignment`` hands out: the instructor notebook (metadata
    and all) with each solution region replaced by a stub."""
    notebook = json.loads(grading.instructor_path(grading.CHAPTERS[chapter]).read_text())
    region = re.compile(r"### BEGIN SOLUTION.*?### END SOLUTION", re.DOTALL)
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        cell["source"] = region.sub("# YOUR CODE HERE\nraise NotImplementedError()", source)
    return notebook


def test_nbgraders_student_version_with_the_stub_left_in(tmp_path: Path) -> None:
    notebook = student_version(5)
    filled = fill_answers(notebook, {
        # 5.1: 4 stages, 12 microbatches: (p-1)/m = 3/12 = 25 % of the ideal compute time
        "5.1": "answer_5_1 = 25\n# YOUR CODE HERE\nraise NotImplementedError()",
        "5.5": "bug_line_5_5 = 6\n" + FUNCTIONS["5.5"].split("\n", 2)[2],
    })
    filled["cells"].insert(0, {"cell_type": "code", "id": "mine", "metadata": {},
                               "source": HELPERS, "outputs": [], "execution_count": None})
    folder = tmp_path / "in" / "eve" / "ch05"
    folder.mkdir(parents=True)
    (folder / "ch05_pipeline_parallelism.ipynb").write_text(json.dumps(filled))
    status = grading.grade_cli(str(tmp_path / "in"), str(tmp_path / "out"), workers=1,
                               timeout_s=2)
    assert status == 0
    rows = {row["exercise_id"]: row for row in
            csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8"))}
    assert {ex: row["status"] for ex, row in rows.items()} == {
        "5.1": "correct", "5.2": "unanswered", "5.3": "unanswered", "5.4": "unanswered",
        "5.5": "correct", "5.6": "unanswered", "5.7": "unanswered",
        "5.8": "unanswered"}
