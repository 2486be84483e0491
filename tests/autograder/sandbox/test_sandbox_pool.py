"""The pool running honest code: cells, requests, parallel map, worker replacement."""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import autograder.sandbox.pool as pool_module
from autograder.sandbox import (
    CallRequest,
    Job,
    JobResult,
    Limits,
    SourceRequest,
    ValueRequest,
    WorkerPool,
    worker,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

LIMITS = Limits(cpu_s=5, wall_s=8, cell_timeout_s=2, call_timeout_s=0.5, memory_mb=256)


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(2, LIMITS) as started:
        yield started


def test_cells_share_one_namespace_and_values_come_back_plain(pool: WorkerPool) -> None:
    cells = [
        "import numpy as np\nbytes_per_gpu = 2 * 7e9",
        "ratios = np.array([0.5, 0.25])\nlabels = {'dp': 8, 'tp': (2, 4)}",
        "bad = float('nan')\nprint('done', bytes_per_gpu)",
    ]
    names = ["bytes_per_gpu", "ratios", "labels", "bad", "np"]
    result = pool.run(Job("s1", cells, [ValueRequest(name) for name in names]))
    assert result.status == "ok" and result.cell_errors == ()
    assert result.values["bytes_per_gpu"].value == 14e9  # 2 bytes x 7e9 parameters
    assert result.values["ratios"].value == [0.5, 0.25]
    assert result.values["labels"].value == {"dp": 8, "tp": [2, 4]}
    assert math.isnan(result.values["bad"].value)
    assert result.values["np"].type == "not_plain"
    assert result.values["np"].message == "not plain data: module"
    assert result.values["np"].type_name == "module"
    assert result.stdout_tail == "done 14000000000.0\n"


def test_a_failing_cell_is_recorded_and_the_next_cell_still_runs(pool: WorkerPool) -> None:
    cells = ["x = 1 +", "y = 1 / 0", "z = undefined_name", "w = 'fine'"]
    result = pool.run(Job("s2", cells, [ValueRequest("w"), ValueRequest("x")]))
    errors = [(e.cell, e.error_type, e.line) for e in result.cell_errors]
    assert errors == [(0, "SyntaxError", 1), (1, "ZeroDivisionError", 1), (2, "NameError", 1)]
    assert result.cell_errors[1].message == "division by zero"
    assert "undefined_name" in result.cell_errors[2].message
    assert result.values["w"].value == "fine"
    assert (result.values["x"].type, result.values["x"].message) == ("missing",
                                                                     "x is not defined")
    assert result.status == "ok"


def test_cell_errors_carry_no_grader_paths(pool: WorkerPool) -> None:
    result = pool.run(Job("s3", ["def f():\n    raise ValueError('inner')\n\nf()"]))
    (error,) = result.cell_errors
    # The line is the innermost one of the cell in the traceback: the raise, line 2.
    assert (error.error_type, error.message, error.line) == ("ValueError", "inner", 2)
    assert "/" not in error.message and "autograder" not in error.message


def test_calls_return_outputs_errors_and_timeouts(pool: WorkerPool) -> None:
    cells = [
        "def ring_bytes(n, size):\n"
        "    if n < 1:\n        raise ValueError('n must be at least 1')\n"
        "    return 2 * (n - 1) / n * size\n",
        "def slow(x):\n    while True:\n        pass\n",
        "def leaves(x):\n    import sys\n    sys.exit(4)\n",
        "not_a_function = 3",
    ]
    requests = [
        CallRequest("ring_bytes", [(4, 100), (0, 100), (1, 10)]),
        CallRequest("slow", [(1,)]), CallRequest("leaves", [(1,)]),
        CallRequest("not_a_function", [()]), CallRequest("absent", [()]),
    ]
    result = pool.run(Job("s4", cells, requests))
    first, second, third = result.calls["ring_bytes"]
    assert first.value == 150.0  # 2 x (4 - 1) / 4 x 100
    assert (second.type, second.type_name) == ("raised", "ValueError")
    assert second.message == "n must be at least 1"
    assert third.value == 0.0  # 2 x 0 / 1 x 10
    assert result.calls["slow"][0].type == "timeout"
    assert result.calls["slow"][0].message == "the call took longer than 0.5 s"
    assert (result.calls["leaves"][0].type_name, result.calls["leaves"][0].message) == (
        "SystemExit", "4")
    assert result.calls["not_a_function"][0].type == "not_function"
    assert result.calls["absent"][0].type == "missing"
    assert result.status == "ok"


def test_calls_get_fresh_arguments_including_non_finite_floats(pool: WorkerPool) -> None:
    cells = ["def grab(xs):\n    xs.append(len(xs))\n    return xs"]
    args = [([1.0, math.inf],), ([1.0, math.inf],)]
    result = pool.run(Job("s5", cells, [CallRequest("grab", args)]))
    # Each call sees its own list: two elements in, the appended length 2 out.
    assert [o.value for o in result.calls["grab"]] == [[1.0, math.inf, 2]] * 2


def test_source_request_returns_the_function_text(pool: WorkerPool) -> None:
    cells = ["x = 1\n\ndef area(w, h):\n    # width times height\n    return w * h\n\ny = 2"]
    result = pool.run(Job("s6", cells, [SourceRequest("area"), SourceRequest("x")]))
    assert result.sources["area"].value == (
        "def area(w, h):\n    # width times height\n    return w * h\n")
    assert result.sources["x"].type == "not_function"


def test_map_in_input_order_and_in_completion_order(pool: WorkerPool) -> None:
    # Job 0 sleeps 0.6 s, so with two workers jobs 1.. finish first.
    jobs = [Job("slow", ["import time\ntime.sleep(0.6)\nv = 0"], [ValueRequest("v")])]
    jobs += [Job(f"fast{i}", [f"v = {i}"], [ValueRequest("v")]) for i in range(1, 6)]
    ordered = [r.job_id for r in pool.map(jobs, ordered=True)]
    assert ordered == [job.job_id for job in jobs]
    completed = [r.job_id for r in pool.map(jobs)]
    assert sorted(completed) == sorted(ordered) and completed[-1] == "slow"


def test_a_job_costs_a_fork_not_an_interpreter_start(pool: WorkerPool) -> None:
    result = pool.run(Job("quick", ["import numpy as np\nv = float(np.sqrt(16.0))"],
                          [ValueRequest("v")]))
    assert result.values["v"].value == 4.0
    assert result.wall_s < 1.0  # numpy is already imported; starting Python would not fit


def test_the_learner_sees_no_grader_environment(pool: WorkerPool) -> None:
    result = pool.run(Job("env", ["import os\nenv = dict(os.environ)\ncwd = os.getcwd()"],
                          [ValueRequest("env"), ValueRequest("cwd")]))
    env = result.values["env"].value
    assert "PYTHONPATH" not in env and "PYTEST_CURRENT_TEST" not in env
    assert env["HOME"] == result.values["cwd"].value  # the scratch directory


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_a_dead_worker_is_replaced_and_its_job_run_again(sandbox: str) -> None:
    with WorkerPool(1, LIMITS, sandbox=sandbox) as pool:
        victim = pool._workers[0].process
        scratch_root = Path(pool._workers[0].scratch_root)
        # Inside bubblewrap the scratch lives in the worker's private /tmp, never on the host.
        assert scratch_root.is_dir() == (sandbox == "none")
        threading.Timer(0.5, victim.kill).start()
        result = pool.run(Job("doomed", ["import time\ntime.sleep(1)\nv = 2"],
                              [ValueRequest("v")]))
        assert (result.status, result.values["v"].value) == ("ok", 2)  # not charged
        assert not result.infrastructure and pool._workers[0].process is not victim
        assert not scratch_root.exists()  # removed although the worker died mid-job


def test_a_worker_failing_twice_is_an_infrastructure_failure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with WorkerPool(1, LIMITS) as pool:
        first = pool._workers[0].process
        real = pool_module._Worker.take_line

        def damaged(self: Any) -> bytes | None:
            line = real(self)
            if line is None or b'"result"' not in line:
                return line  # a new worker's hello
            return b'{"damaged": "its scratch folder is gone"}'
        monkeypatch.setattr(pool_module._Worker, "take_line", damaged)
        result = pool.run(Job("twice", ["v = 1"], [ValueRequest("v")]))
        assert result.infrastructure and result.status == "crashed"
        assert "found its own folders damaged" in result.message
        monkeypatch.setattr(pool_module._Worker, "take_line", real)
        after = pool.run(Job("next", ["v = 1"], [ValueRequest("v")]))
        assert after.values["v"].value == 1 and pool._workers[0].process is not first


def test_abandoning_map_early_leaves_the_pool_usable() -> None:
    with WorkerPool(2, LIMITS) as pool:
        jobs = [Job(str(i), [f"import time\ntime.sleep({0.3 * i})\nv = {i}"],
                    [ValueRequest("v")]) for i in range(4)]
        first = next(iter(pool.map(jobs)))
        assert first.job_id == "0"
        start = time.monotonic()
        result = pool.run(Job("after", ["v = 7"], [ValueRequest("v")]))
        assert result.values["v"].value == 7 and time.monotonic() - start < 5


@pytest.mark.parametrize("line, job_id", [
    (b"not json", "?"),
    (b'{"job": {"job_id": "j7", "cells": "x = 1"}, "limits": {}}', "j7"),
    (b'{"job": {"job_id": "j8", "cells": [], "requests": []}, "limits": {"wall_s": -1}}', "j8"),
])
def test_the_worker_answers_a_malformed_request_with_a_crashed_result(
    monkeypatch: pytest.MonkeyPatch, line: bytes, job_id: str,
) -> None:
    replies: list[dict[str, Any]] = []
    monkeypatch.setattr(worker, "_reply", replies.append)
    worker.serve_one(line, "/nonexistent")
    (reply,) = replies
    result = JobResult.from_wire(reply["result"])
    assert (result.job_id, result.status) == (job_id, "crashed")
    assert result.message.startswith("bad request to the worker")


def test_pool_requires_start_and_sane_size() -> None:
    with pytest.raises(ValueError):
        WorkerPool(0)
    with pytest.raises(RuntimeError, match="not started"):
        next(iter(WorkerPool(1).map([Job("j", [])])))
