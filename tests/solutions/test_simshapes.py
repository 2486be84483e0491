"""Honest code of every ordinary shape is accepted: the reference collectives for every
memory layout and dtype, a learner's own classes and dataclasses (from a file or shipped
from a notebook), and lists or tuples where arrays are expected."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbook
from autograder.kinds.lab import LabSource
from solutions.sim import pipeline_lab, ring_lab, tp_lab
from solutions.sim.collectives import ring_all_gather, ring_all_reduce
from solutions.sim.lab import run_case


class _Rank:
    """A rank of a lockstep cluster run here: send copies, a message arrives when the step
    ends, recv takes the oldest from a source (the simulator's rules, without a channel)."""

    def __init__(self, rank_id: int, size: int, inboxes: list[dict[int, deque[Any]]],
                 outbox: list[tuple[int, int, np.ndarray]]) -> None:
        self.id, self.size, self._inboxes, self._outbox = rank_id, size, inboxes, outbox

    def send(self, dst: int, array: Any) -> None:
        self._outbox.append((dst, self.id, np.array(array, copy=True)))

    def recv(self, src: int) -> np.ndarray:
        return self._inboxes[self.id][src].popleft()

    def free(self, *arrays: Any) -> None:
        pass


def _lockstep(programs: list[Any]) -> list[Any]:
    n = len(programs)
    inboxes: list[dict[int, deque[Any]]] = [{} for _ in range(n)]
    outbox: list[tuple[int, int, np.ndarray]] = []
    running = [program(_Rank(r, n, inboxes, outbox)) for r, program in enumerate(programs)]
    results: list[Any] = [None] * n
    live = set(range(n))
    while live:
        for r in sorted(live):
            try:
                next(running[r])
            except StopIteration as stop:
                results[r] = stop.value
                live.discard(r)
        for dst, src, payload in outbox:
            inboxes[dst].setdefault(src, deque()).append(payload)
        outbox.clear()
    return results


LAYOUTS = {
    "C order": lambda a: a,
    "transpose": lambda a: a.T,
    "Fortran order": lambda a: np.asfortranarray(a),
    "every other column": lambda a: a[:, ::2],
    "reversed rows": lambda a: a[::-1],
    "a list of lists": lambda a: a.tolist(),
    "a tuple of rows": lambda a: tuple(tuple(row) for row in a.tolist()),
}
DTYPES = ("int64", "int32", "uint8", "float64", "float32")


@settings(max_examples=120, deadline=None)
@given(n=st.integers(1, 6), rows=st.integers(1, 5), cols=st.integers(1, 7),
       layout=st.sampled_from(sorted(LAYOUTS)), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**31))
def test_ring_all_reduce_sums_every_layout_and_dtype(n: int, rows: int, cols: int,
                                                     layout: str, dtype: str,
                                                     seed: int) -> None:
    rng = np.random.default_rng(seed)
    inputs = [rng.integers(0, 100, size=(rows, cols)).astype(dtype) for _ in range(n)]
    views = [LAYOUTS[layout](x) for x in inputs]
    expected_arrays = [np.asarray(v) for v in views]
    want = expected_arrays[0].copy()
    for other in expected_arrays[1:]:
        want += other    # in the inputs' own dtype, as the ring adds
    results = _lockstep([lambda rank, v=v: ring_all_reduce(rank, v) for v in views])
    for got in results:
        assert got.shape == want.shape and got.dtype == want.dtype
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got, want)
    assert all(np.array_equal(np.asarray(v), x) for v, x in
               zip(views, (np.asarray(LAYOUTS[layout](x)) for x in inputs), strict=True)), \
        "the collective changed its input"


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), size=st.integers(0, 9), as_list=st.booleans())
def test_ring_all_gather_returns_every_shard_in_rank_order(n: int, size: int,
                                                         as_list: bool) -> None:
    shards = [np.arange(size) * 10 + r for r in range(n)]
    given_shards = [s.tolist() if as_list else s for s in shards]
    results = _lockstep([lambda rank, s=s: ring_all_gather(rank, s) for s in given_shards])
    for parts in results:
        assert [np.asarray(p).tolist() for p in parts] == [s.tolist() for s in shards]


def test_rank_all_reduce_of_a_transpose_through_the_channel() -> None:
    # each rank all-reduces the transpose of its (b x d) partial and transposes back
    def transposed(rank: Any):
        x, a, b = rank.data["x"], rank.data["a"], rank.data["b"]
        partial = np.maximum(x @ a, 0.0) @ b
        total = yield from rank.all_reduce(partial.T)
        return total.T

    for case in tp_lab.SPEC.graded(11)[:3]:
        report = tp_lab.verify(case, run_case(tp_lab.SPEC, transposed, case))
        assert report.passed, report.problem


@pytest.fixture
def _own_progress_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_PROGRESS_LOG", str(tmp_path / "progress.sqlite"))


_DATACLASS_FILE = '''
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Shard:
    """Where this rank's columns of A (and rows of B) sit."""
    rank: int
    size: int
    notes: list = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.rank}/{self.size}"


class Mlp:
    def __init__(self, data):
        self.x, self.a, self.b = data["x"], data["a"], data["b"]

    @staticmethod
    def relu(v):
        return np.maximum(v, 0.0)

    def partial(self):
        return self.relu(self.x @ self.a) @ self.b


def tp_mlp_forward(rank):
    shard = Shard(rank.id, rank.size)
    assert shard.label == f"{rank.id}/{rank.size}" and shard.notes == []
    return (yield from rank.all_reduce(Mlp(rank.data).partial()))
'''


@pytest.mark.usefixtures("_own_progress_log")
def test_a_file_with_module_level_dataclasses_and_classes_loads_and_passes() -> None:
    verdict = workbook.check("6.6", LabSource(_DATACLASS_FILE, "tp.py")).verdict
    assert verdict.passed, verdict.message


def test_classes_defined_in_a_notebook_travel_with_the_function() -> None:
    # a notebook's cells run in module __main__: its classes cannot be imported by name
    # where the ranks run, so they are shipped by value
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(_DATACLASS_FILE, "<cell>", "exec"), namespace)
    case = tp_lab.SPEC.graded(5)[0]
    report = tp_lab.verify(case, run_case(tp_lab.SPEC, namespace["tp_mlp_forward"], case))
    assert report.passed, report.problem


def test_lists_and_tuples_where_arrays_are_expected() -> None:
    # the ring written over Python lists: sends lists, returns a list
    def ring_of_lists(rank: Any):
        n, me = rank.size, rank.id
        x = list(rank.data.tolist())
        bounds = [len(x) * c // n for c in range(n + 1)]
        for s in range(n - 1):
            c = (me - s) % n
            rank.send((me + 1) % n, x[bounds[c]:bounds[c + 1]])
            yield
            c = (me - s - 1) % n
            got = rank.recv((me - 1) % n).tolist()
            x[bounds[c]:bounds[c + 1]] = [p + q for p, q in zip(x[bounds[c]:bounds[c + 1]],
                                                                 got, strict=True)]
        for s in range(n - 1):
            c = (me + 1 - s) % n
            rank.send((me + 1) % n, tuple(x[bounds[c]:bounds[c + 1]]))
            yield
            c = (me - s) % n
            x[bounds[c]:bounds[c + 1]] = rank.recv((me - 1) % n).tolist()
        return x

    for case in ring_lab.SPEC.graded(3)[:3]:
        report = ring_lab.verify(case, run_case(ring_lab.SPEC, ring_of_lists, case))
        assert report.passed, report.problem

    # a schedule of tuples in a tuple
    def schedule_of_tuples(pp: int, m: int, v: int):
        return tuple(tuple(tuple(action) for action in stage)
                     for stage in pipeline_lab.pipeline_schedule(pp, m, v))

    for case in pipeline_lab.SPEC.graded(3):
        report = pipeline_lab.verify(case, run_case(pipeline_lab.SPEC, schedule_of_tuples,
                                                    case))
        assert report.passed, report.problem
