"""A temporary nbgrader course with a fabricated class, for nbgrader and ``workbook grade``.

    course = Course.create(tmp_path / "course", chapters=[0, 5])
    course.generate()                                   # nbgrader generate_assignment
    course.submit("right_rosa", lambda record: "right")  # submitted/<student>/<assignment>/
    course.autograde()                                  # nbgrader autograde --force
    nbgrader = course.nbgrader_points()                 # {(student, "5.1"): 1.0, ...}
    run_workbook_grade(course.submitted, tmp_path / "out")      # workbook grade
    ours = workbook_points(tmp_path / "out")

Submissions start from the notebook nbgrader *released* (stub and all) and only the answer
cells change, the way a student edits them. What goes into an answer cell is decided per
exercise by a mode:

- ``right``: the stub replaced by the right answer (for build and debug exercises, a
  correct function written out below, not imported from ``solutions``);
- ``kept_stub``: the placeholder line edited to the right answer and the stub's
  ``raise NotImplementedError()`` left in, so the cell raises after the answer is set
  (nbgrader awards the point: only the check cell must not fail);
- ``wrong``: an honest mistake (the record's first misconception, another choice, a
  function with a classic slip; for debug exercises the wrong line);
- ``line_only``: debug exercises only: the right line, but the buggy function left as is;
- ``error``: the cell raises before the answer is set, or the function raises when called;
- ``empty``: the released cell untouched.

Every nbgrader and workbook command runs as a subprocess of this interpreter's venv with
``WORKBOOK_HOME`` pointing at a scratch folder and the venv's ``bin`` first on PATH (nbgrader
runs ``alembic`` from PATH when it opens a gradebook).
"""

from __future__ import annotations

import csv
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from autograder.exercise import Exercise
from autograder.kinds import Choice, Constraints, Function, Lab, Numeric, Ordering, Trace
from workbook.build.notebooks import instructor_path
from workbook.outline import CHAPTERS
from workbook.records import lookup

BIN = Path(sys.executable).parent
NBGRADER = BIN / "nbgrader"
WORKBOOK = BIN / "workbook"
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
MODES = ("right", "kept_stub", "wrong", "line_only", "error", "empty")

Points = dict[tuple[str, str], float]  # (student, exercise id) -> points
ModeFor = Callable[[Exercise], str]

# -- correct functions, written out (a submission must not import the reference) -------------
RIGHT_FUNCTIONS: dict[str, str] = {
    "ring_allreduce_time_ms": '''\
def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
    if isinstance(n_gpus, float) and n_gpus.is_integer():
        n_gpus = int(n_gpus)
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, int) or n_gpus < 1:
        raise ValueError("n_gpus must be a whole number >= 1")
    if message_gb < 0 or link_gb_per_s <= 0 or latency_us < 0:
        raise ValueError("impossible size, bandwidth or latency")
    # 2(N-1) steps, each: one S/N chunk at B GB/s plus the latency
    step_ms = 1000.0 * (message_gb / n_gpus) / link_gb_per_s + latency_us / 1000.0
    return 2 * (n_gpus - 1) * step_ms''',
    "ring_allreduce_bandwidth_time_s": '''\
def ring_allreduce_bandwidth_time_s(message_gb, n_gpus, link_gb_per_s):
    if n_gpus < 1 or link_gb_per_s <= 0 or message_gb < 0:
        raise ValueError("impossible input")
    steps = 2 * (n_gpus - 1)
    chunk_gb = message_gb / n_gpus
    return steps * chunk_gb / link_gb_per_s''',
    "accumulation_plan": '''\
def accumulation_plan(target_batch, micro_batch, dp_degree):
    for value in (target_batch, micro_batch, dp_degree):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError("batch sizes and GPU counts must be whole numbers >= 1")
    per_step = int(micro_batch) * int(dp_degree)
    steps = -(-int(target_batch) // per_step)  # ceiling division
    return steps, steps * per_step''',
    "comm_compute_ratio": '''\
def comm_compute_ratio(params_billion, n_gpus, link_gb_per_s, flops_per_step_tflop,
                       achieved_tflops):
    if isinstance(n_gpus, bool) or int(n_gpus) != n_gpus or n_gpus < 1:
        raise ValueError("n_gpus must be a whole number >= 1")
    if min(params_billion, link_gb_per_s, flops_per_step_tflop, achieved_tflops) <= 0:
        raise ValueError("sizes, bandwidths and throughputs must be > 0")
    gradient_gb = 2.0 * params_billion            # 2 bytes per FP16 gradient
    comm_s = 2 * (n_gpus - 1) * gradient_gb / n_gpus / link_gb_per_s
    compute_s = flops_per_step_tflop / achieved_tflops
    return comm_s / compute_s''',
    "bubble_over_compute": '''\
def bubble_over_compute(pp, m, v=1):
    for value in (pp, m, v):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError("pp, m and v must be whole numbers >= 1")
    return (pp - 1) / (m * v)''',
    "optimal_checkpoint_interval": '''\
import math

def optimal_checkpoint_interval(mtbf_hours, checkpoint_s):
    if mtbf_hours <= 0 or checkpoint_s <= 0:
        raise ValueError("MTBF and checkpoint time must be > 0")
    mtbf_s = mtbf_hours * 3600.0
    tau_s = math.sqrt(2.0 * checkpoint_s * mtbf_s)        # Young's interval
    waste = checkpoint_s / tau_s + tau_s / (2.0 * mtbf_s)
    return tau_s / 60.0, 100.0 * waste''',
    "model_flops_utilisation": '''\
def model_flops_utilisation(n_params, tokens_per_s_per_gpu, peak_tflops):
    if n_params <= 0 or peak_tflops <= 0 or tokens_per_s_per_gpu < 0:
        raise ValueError("parameters and peak must be > 0, throughput >= 0")
    return 6 * n_params * tokens_per_s_per_gpu / (peak_tflops * 1e12)''',
    "step_time_from_costs": '''\
def step_time_from_costs(work_s, send_s, pp, m, v, dp_exposed_s):
    if min(work_s, send_s, dp_exposed_s) < 0 or min(pp, m, v) < 1:
        raise ValueError("times must be >= 0 and degrees >= 1")
    if pp == 1:
        return m * work_s + dp_exposed_s
    # breadth-first rounds when m < pp: each round after the first idles pp - m chunk slots
    idle_slots = (pp - 1) + (v - 1) * max(pp - m, 0)
    bubble = idle_slots / v * work_s
    return m * work_s + bubble + (m * v + pp - 1) * send_s + dp_exposed_s''',
    "dynamic_loss_scale": '''\
def dynamic_loss_scale(overflows, init_scale=65536.0, growth_interval=2000):
    if init_scale <= 0:
        raise ValueError("init_scale must be > 0")
    if isinstance(growth_interval, bool) or int(growth_interval) != growth_interval \\
            or growth_interval < 1:
        raise ValueError("growth_interval must be a whole number >= 1")
    fp32_max = (2.0 - 2.0 ** -23) * 2.0 ** 127
    scale, good = float(init_scale), 0
    for overflow in overflows:
        if overflow:
            scale, good = scale * 0.5, 0
            continue
        good += 1
        if good == growth_interval:
            if scale * 2.0 <= fp32_max:
                scale *= 2.0
            good = 0
    return scale''',
}

# -- honest slips: plausible but wrong functions --------------------------------------------
WRONG_FUNCTIONS: dict[str, str] = {
    # N-1 steps instead of 2(N-1): only the reduce-scatter half
    "ring_allreduce_time_ms": '''\
def ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us):
    step_ms = 1000.0 * (message_gb / n_gpus) / link_gb_per_s + latency_us / 1000.0
    return (n_gpus - 1) * step_ms''',
    # rounds down, so the effective batch falls short of the target
    "accumulation_plan": '''\
def accumulation_plan(target_batch, micro_batch, dp_degree):
    steps = max(1, target_batch // (micro_batch * dp_degree))
    return steps, steps * micro_batch * dp_degree''',
    # forgets the 2 bytes per gradient element
    "comm_compute_ratio": '''\
def comm_compute_ratio(params_billion, n_gpus, link_gb_per_s, flops_per_step_tflop,
                       achieved_tflops):
    comm_s = 2 * (n_gpus - 1) * params_billion / n_gpus / link_gb_per_s
    return comm_s / (flops_per_step_tflop / achieved_tflops)''',
    # the interval in seconds, not minutes
    "optimal_checkpoint_interval": '''\
def optimal_checkpoint_interval(mtbf_hours, checkpoint_s):
    tau_s = (2.0 * checkpoint_s * mtbf_hours * 3600.0) ** 0.5
    return tau_s, 100.0 * (2.0 * checkpoint_s / (mtbf_hours * 3600.0)) ** 0.5''',
    # right formula, no input checks: returns a number where a ValueError is due
    "model_flops_utilisation": '''\
def model_flops_utilisation(n_params, tokens_per_s_per_gpu, peak_tflops):
    return 6 * n_params * tokens_per_s_per_gpu / (max(peak_tflops, 1e-9) * 1e12)''',
    # forgets the interleaving: the bubble is (p-1)/m of the work whatever v is
    "step_time_from_costs": '''\
def step_time_from_costs(work_s, send_s, pp, m, v, dp_exposed_s):
    return m * work_s + (pp - 1) * work_s + (m * v + pp - 1) * send_s + dp_exposed_s''',
    # grows after every good step, ignoring growth_interval
    "dynamic_loss_scale": '''\
def dynamic_loss_scale(overflows, init_scale=65536.0, growth_interval=2000):
    scale = float(init_scale)
    for overflow in overflows:
        scale = scale * 0.5 if overflow else scale * 2.0
    return scale''',
}


# -- the labs: per-rank programs on the simulated cluster, written out ---------------------------
_RING = '''import numpy as np

def ring_allreduce(rank):
    n, me = rank.size, rank.id
    x = np.array(rank.data, copy=True)
    bounds = CHUNKING
    span = lambda c: slice(bounds[c % n], bounds[c % n + 1])
    for s in range(n - 1):
        rank.send((me + 1) % n, x[span(me - s)])
        yield
        x[span(me - s - 1)] += rank.recv((me - 1) % n)
    for s in range(n - 1):
        rank.send((me + 1) % n, x[span(me + 1 - s)])
        yield
        x[span(me - s)] = rank.recv((me - 1) % n)
    return x'''
_ONE_F_ONE_B = '''def pipeline_schedule(pp, m, v):
    if v == 1:
        orders = []
        for s in range(pp):
            warm = min(pp - s - 1, m) WARMUP
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
    return orders'''
_ZERO3 = '''import numpy as np

def zero3_forward(rank):
    x = rank.data["x"]
    for shard in rank.data["shards"]:
        parts = yield from rank.all_gather(shard)
        x = np.maximum(x @ np.concatenate(parts).reshape(x.shape[1], x.shape[1]), 0.0)
        FREE
    return x'''
_TP = '''import numpy as np

def tp_mlp_forward(rank):
    d = rank.data
    partial = np.maximum(d["x"] @ d["a"], 0.0) @ d["b"]
    return RELU_AFTER'''

RIGHT_FUNCTIONS.update({
    "ring_allreduce": _RING.replace("CHUNKING", "[len(x) * c // n for c in range(n + 1)]"),
    "pipeline_schedule": _ONE_F_ONE_B.replace(" WARMUP", ""),
    "zero3_forward": _ZERO3.replace("FREE", "rank.free(*parts)"),
    "tp_mlp_forward": _TP.replace("RELU_AFTER", "(yield from rank.all_reduce(partial))"),
})
WRONG_FUNCTIONS.update({
    # chunks of M // N: right when N divides M, the tail lost otherwise
    "ring_allreduce": _RING.replace("CHUNKING", "[min(c * (len(x) // n), len(x)) for c in "
                                    "range(n)] + [n * (len(x) // n)]"),
    # every stage warms up with all m forwards: GPipe's memory, 1F1B's makespan
    "pipeline_schedule": _ONE_F_ONE_B.replace(" WARMUP", " and 0 or m"),
    "zero3_forward": _ZERO3.replace("FREE", "pass  # never freed: the whole model held"),
    "tp_mlp_forward": _TP.replace("RELU_AFTER", "(yield from rank.all_reduce(d['x'] @ d['a'] "
                                  "@ d['b']))"),
})


def function_name(record: Exercise) -> str:
    """The function a build, debug or lab answer defines."""
    kind = record.answer_kind
    if isinstance(kind, Lab):
        return kind.function_name
    return function_kind(record).function_name


def function_kind(record: Exercise) -> Function:
    spec = record.answer_kind.function_spec()
    if spec is None:
        raise TypeError(f"exercise {record.id} has no function answer")
    return spec


def _raising_function(fn: Function) -> str:
    return (f"def {fn.function_name}{_bare_signature(fn.signature)}:\n"
            "    scale = 0\n    return 1 / scale  # ZeroDivisionError on every call")


def _bare_signature(signature: str) -> str:
    """``(overflows: list[bool], x: float = 1.0) -> float`` without the return annotation."""
    return signature.split("->")[0].strip()


# -- what a student writes --------------------------------------------------------------------
def answer_code(record: Exercise, mode: str) -> str:
    """The code a student puts in place of the stub for ``mode`` (not for kept_stub/empty)."""
    kind, spec = record.answer_kind, record.answer_kind.function_spec()
    line_name = kind.value_name(record.names)
    if isinstance(kind, Lab):
        if mode == "right":
            return RIGHT_FUNCTIONS[kind.function_name]
        if mode == "error":
            return f"def {kind.function_name}{kind.signature}:\n    return 1 / 0"
        return WRONG_FUNCTIONS[kind.function_name]
    if spec is not None and line_name is not None:
        return _debug_code(record, spec, line_name, mode)
    if spec is not None:
        if mode == "right":
            return RIGHT_FUNCTIONS[spec.function_name]
        if mode == "error":
            return _raising_function(spec)
        return WRONG_FUNCTIONS[spec.function_name]
    name = record.names.answer
    if mode == "error":
        # fails before the name is assigned, so it keeps the placeholder's None
        return f'{name} = float("see my notes")'
    value = record.expected() if mode == "right" else wrong_value(record)
    return f"{name} = {_literal(value)}"


def _debug_code(record: Exercise, fix: Function, line_var: str, mode: str) -> str:
    bug_line, _ = record.expected()
    buggy = record.answer_kind.code.rstrip("\n")  # type: ignore[attr-defined]  # a Debug kind
    if mode == "right":
        return f"{line_var} = {bug_line}\n\n{RIGHT_FUNCTIONS[fix.function_name]}"
    if mode == "line_only":
        return f"{line_var} = {bug_line}\n\n{buggy}"
    if mode == "error":
        return f"{line_var} = {bug_line}\n\n{_raising_function(fix)}"
    other = 1 if bug_line != 1 else 2  # an honest wrong guess: the signature line
    return f"{line_var} = {other}\n\n{buggy}"


def wrong_value(record: Exercise) -> Any:
    """A plausible wrong answer for a value exercise."""
    kind, expected = record.answer_kind, record.expected()
    misconceptions = [wrong for wrong, _ in record.wrong_answers() if wrong != expected]
    if misconceptions:
        return misconceptions[0]
    make = _WRONG.get(type(kind))
    if make is None:
        raise TypeError(f"no wrong answer for {type(kind).__name__}")
    return make(kind, expected)


def _wrong_trace(kind: Trace, expected: Any) -> Any:
    rows = [list(row) for row in expected]
    rows[0][0] = rows[0][0] * 2 if isinstance(rows[0][0], (int, float)) else None
    return [tuple(row) for row in rows]


# answer kind -> a plausible wrong answer given the expected one
_WRONG: dict[type, Callable[[Any, Any], Any]] = {
    Numeric: lambda kind, expected: expected * 2,
    Choice: lambda kind, expected: next(o.key for o in kind.options if o.key != expected),
    Ordering: lambda kind, expected: list(reversed(expected)),
    Trace: _wrong_trace,
    Constraints: lambda kind, expected: {key: value * 2 if isinstance(value, int) else value
                                         for key, value in dict(expected).items()},
}


def _literal(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)


def fill_answer(source: str, record: Exercise, mode: str) -> str:
    """The released answer cell ``source`` as a student in ``mode`` leaves it."""
    if mode == "empty":
        return source
    if STUB not in source:
        raise ValueError(f"exercise {record.id}: the released answer cell has no stub")
    if mode == "kept_stub":
        return _kept_stub(source, record)
    if mode == "line_only" and not _is_debug(record):
        mode = "wrong"
    return source.replace(STUB, answer_code(record, mode))


def _is_debug(record: Exercise) -> bool:
    """A line and a function together: a debug exercise."""
    kind = record.answer_kind
    return kind.function_spec() is not None and kind.value_name(record.names) is not None


def _kept_stub(source: str, record: Exercise) -> str:
    """The answer written above the stub, which still raises NotImplementedError."""
    before, _, _ = source.partition(STUB)
    return before + answer_code(record, "right") + "\n" + STUB


# -- the course -------------------------------------------------------------------------------
def workbook_env(home: Path) -> dict[str, str]:
    """Environment for nbgrader and workbook subprocesses (no grading flag of our own)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["WORKBOOK_HOME"] = str(home)
    for flag in ("NBGRADER_EXECUTION", "WORKBOOK_GRADING"):
        env.pop(flag, None)
    return env


@contextmanager
def _alembic_on_path() -> Iterator[None]:
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{BIN}{os.pathsep}{old}"
    try:
        yield
    finally:
        os.environ["PATH"] = old


@dataclass(frozen=True)
class Course:
    root: Path
    stems: tuple[str, ...]
    assignment: str = "workbook"

    @classmethod
    def create(cls, root: Path, chapters: Sequence[int], assignment: str = "workbook") -> Course:
        """A course folder with nbgrader_config.py and the instructor notebooks in source/."""
        root = root.resolve()
        source = root / "source" / assignment
        source.mkdir(parents=True)
        stems = []
        for number in chapters:
            path = instructor_path(CHAPTERS[number])
            shutil.copy(path, source / path.name)
            stems.append(path.stem)
        (root / "home").mkdir()
        (root / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            f"c.CourseDirectory.root = {str(root)!r}\n"
            "c.CourseDirectory.course_id = 'dtw'\n"
            'c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\n'
            'raise NotImplementedError()"}\n'
            "c.Execute.timeout = 120\n")
        return cls(root, tuple(stems), assignment)

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    def release_path(self, stem: str) -> Path:
        return self.root / "release" / self.assignment / f"{stem}.ipynb"

    def run_nbgrader(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([str(NBGRADER), *args], cwd=self.root, text=True,
                                capture_output=True, env=workbook_env(self.root / "home"))
        if result.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed ({result.returncode}):\n"
                               + result.stdout[-3000:] + result.stderr[-6000:])
        return result

    def generate(self) -> None:
        """``nbgrader generate_assignment`` (which also adds the assignment to the gradebook)."""
        self.run_nbgrader("generate_assignment", self.assignment, "--force")
        missing = [stem for stem in self.stems if not self.release_path(stem).exists()]
        if missing:
            raise RuntimeError(f"nbgrader released no notebook for {missing}")

    def submit(self, student: str, mode_for: ModeFor) -> None:
        """Write ``student``'s submission of every notebook, answer cells filled per mode."""
        folder = self.submitted / student / self.assignment
        folder.mkdir(parents=True, exist_ok=True)
        for stem in self.stems:
            nb = nbformat.read(self.release_path(stem), as_version=4)
            for cell in nb.cells:
                meta = cell.metadata.get("workbook", {})
                if meta.get("role") == "answer":
                    record = lookup(meta["exercise"])
                    cell.source = fill_answer(cell.source, record, mode_for(record))
            nbformat.write(nb, folder / f"{stem}.ipynb")

    def autograde(self, student: str = "*") -> float:
        """``nbgrader autograde --force`` for the students ``student`` matches (nbgrader's
        own glob; every student by default); returns its wall time in seconds."""
        start = time.perf_counter()
        self.run_nbgrader("autograde", self.assignment, "--force", f"--student={student}")
        return time.perf_counter() - start

    def nbgrader_points(self) -> Points:
        """Per-exercise points from the gradebook: grade id ``check_5_1`` is exercise 5.1."""
        from nbgrader.api import Gradebook

        points: Points = {}
        with _alembic_on_path(), Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            for student in gb.students:
                for stem in self.stems:
                    notebook = gb.find_submission_notebook(stem, self.assignment, student.id)
                    for grade in notebook.grades:
                        if grade.name.startswith("check_"):
                            exercise = grade.name.removeprefix("check_").replace("_", ".")
                            points[(student.id, exercise)] = float(grade.score)
        return points


# -- workbook grade ---------------------------------------------------------------------------
@dataclass(frozen=True)
class GradeRun:
    seconds: float
    returncode: int  # 0: every file graded; 1: some could not be (rows with status error)
    stdout: str
    stderr: str


def run_workbook_grade(submissions: Path, out: Path, *, workers: int | None = None,
                       timeout_s: float | None = None, home: Path | None = None) -> GradeRun:
    """``workbook grade SUBMISSIONS --out OUT``, timed; raises unless it wrote its outputs."""
    args = [str(WORKBOOK), "grade", str(submissions), "--out", str(out)]
    if workers is not None:
        args += ["--workers", str(workers)]
    if timeout_s is not None:
        args += ["--timeout", str(timeout_s)]
    home = home or out.parent / "workbook-grade-home"
    home.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result = subprocess.run(args, text=True, capture_output=True, env=workbook_env(home))
    run = GradeRun(time.perf_counter() - start, result.returncode, result.stdout, result.stderr)
    if run.returncode not in (0, 1) or not (out / "grades.csv").exists():
        raise RuntimeError(f"workbook grade failed ({run.returncode}):\n"
                           + run.stdout[-3000:] + run.stderr[-6000:])
    return run


def read_grades_csv(out: Path) -> list[dict[str, str]]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def workbook_points(out: Path) -> Points:
    """Per-exercise points from ``OUT/grades.csv`` (rows for files that could not be graded
    name no exercise; see :func:`ungraded_files`)."""
    points: Points = {}
    for row in read_grades_csv(out):
        if not row["exercise_id"]:
            continue
        key = (row["student"], row["exercise_id"])
        if key in points:
            raise ValueError(f"grades.csv has two rows for {key}")
        points[key] = float(row["points"])
    return points


def ungraded_files(out: Path) -> list[str]:
    """The messages of ``grades.csv`` rows for files that could not be graded at all."""
    return [row["message"] for row in read_grades_csv(out) if not row["exercise_id"]]


# -- classes and comparisons ------------------------------------------------------------------
def constant(mode: str) -> ModeFor:
    return lambda record: mode


def cycling(offset: int) -> ModeFor:
    """Every mode in turn along the exercises, starting ``offset`` modes in."""
    def mode_for(record: Exercise) -> str:
        chapter, number = (int(part) for part in record.id.split("."))
        return MODES[(offset + chapter + number) % len(MODES)]
    return mode_for


def seeded_mix(student: str, weights: Mapping[str, float]) -> ModeFor:
    """A reproducible random mode per (student, exercise), drawn with ``weights``."""
    modes, chances = list(weights), list(weights.values())

    def mode_for(record: Exercise) -> str:
        return random.Random(f"{student}:{record.id}").choices(modes, chances)[0]
    return mode_for


def disagreements(nbgrader: Points, ours: Points) -> list[str]:
    """Every (student, exercise) whose points differ or that only one grader reports."""
    lines = []
    for key in sorted(set(nbgrader) | set(ours)):
        theirs, mine = nbgrader.get(key), ours.get(key)
        if theirs is None or mine is None or abs(theirs - mine) > 1e-9:
            lines.append(f"{key[0]} {key[1]}: nbgrader {theirs}, workbook grade {mine}")
    return lines
