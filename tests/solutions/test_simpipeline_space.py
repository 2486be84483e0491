"""The pipeline-schedule lab (5.8) draws from a space no table of answers covers: every
draw is a shape of that space, the space is large and its answers larger than the code
that computes them, a table built from many earlier gradings does not pass a fresh one,
and each drawn schedule is judged by rules (its makespan and memory), not by comparison."""

from __future__ import annotations

import inspect
import json
import random
from pathlib import Path

import pytest

import workbook
from autograder.kinds.lab import LabSource
from solutions.pipeline_execute import execute
from solutions.pipeline_schedules import interleaved_order
from solutions.pipeline_simulator import peak_activations
from solutions.sim import pipeline_lab as simpipeline

SPACE = simpipeline.draw_space()


def _answer(pp: int, m: int, v: int) -> list[list[list[object]]]:
    return [[list(a) for a in stage] for stage in simpipeline.pipeline_schedule(pp, m, v)]


def test_every_draw_is_a_shape_of_the_space_and_draws_cover_it() -> None:
    rng = random.Random(0)
    drawn = {(c["pp"], c["m"], c["v"]) for c in (simpipeline.draw(rng) for _ in range(30_000))}
    assert drawn <= set(SPACE)
    assert len(drawn) >= 0.95 * len(SPACE)
    # most 1F1B shapes have m not a multiple of p; interleaved ones always have it one
    one_f = [(p, m) for p, m, v in SPACE if v == 1]
    assert sum(m % p != 0 for p, m in one_f) > 0.8 * len(one_f)
    assert all(m % p == 0 for p, m, v in SPACE if v > 1)


def test_a_table_of_every_answer_is_far_larger_than_the_code_it_replaces() -> None:
    assert len(SPACE) >= 1000
    table_bytes = sum(len(json.dumps(_answer(*shape), separators=(",", ":")))
                      for shape in SPACE[::7]) * 7   # every 7th shape, scaled
    code_bytes = len(inspect.getsource(simpipeline.pipeline_schedule)) + len(
        inspect.getsource(interleaved_order))
    assert table_bytes > 1000 * code_bytes, (table_bytes, code_bytes)


def test_a_table_of_the_answers_of_many_gradings_fails_a_fresh_one() -> None:
    # the answers to every case 50 earlier gradings drew (a class pooling its checks)
    table = {}
    for seed in range(50):
        for case in simpipeline.SPEC.graded(seed):
            key = (case["pp"], case["m"], case["v"])
            table.setdefault(key, _answer(*key))
    assert len(table) < len(SPACE)

    def passes(seed: int) -> bool:
        return all(simpipeline.verify(case, {"value": table.get(
            (case["pp"], case["m"], case["v"]), [])}).passed
            for case in simpipeline.SPEC.graded(seed))

    assert all(passes(seed) for seed in range(50))   # the table is right where it has rows
    assert not any(passes(seed) for seed in range(10_000, 10_200))


@pytest.fixture
def _own_progress_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_PROGRESS_LOG", str(tmp_path / "progress.sqlite"))


@pytest.mark.usefixtures("_own_progress_log")
def test_a_file_holding_the_earlier_graded_space_as_a_table_does_not_pass() -> None:
    # the 78 shapes the lab used to draw from, with their answers, as a file would hold them
    old = [(pp, m, 1) for pp in range(2, 7) for m in range(1, 13)] + [
        (pp, pp * k, v) for pp in range(2, 5) for k in range(1, 4) for v in (2, 3)]
    assert len(old) == 78
    source = (f"TABLE = {json.dumps({repr(s): _answer(*s) for s in old})}\n\n"
              "def pipeline_schedule(pp, m, v):\n"
              "    return TABLE.get(repr((pp, m, v)), [[] for _ in range(pp)])\n")
    for _ in range(3):
        verdict = workbook.check("5.8", LabSource(source, "table.py")).verdict
        assert not verdict.passed, verdict.message


@pytest.mark.parametrize("shape", [(16, 64, 1), (13, 50, 1), (8, 64, 4), (5, 15, 3)])
def test_the_memory_rule_is_the_schedules_own_peak(shape: tuple[int, int, int]) -> None:
    # the rule, derived from the schedule's warm-up, is what the reference schedule holds
    pp, m, v = shape
    ran = execute(pp, m, [[op for op in (interleaved_order(pp, m, v, s) if v > 1 else [])]
                          for s in range(pp)], v) if v > 1 else None
    bound = simpipeline.peak_bound(pp, m, v)
    if ran is not None:
        assert [round(peak_activations(ops) * v) for ops in ran] == bound
    else:
        assert bound == [min(pp - s, m) for s in range(pp)]
    report = simpipeline.verify(dict(pp=pp, m=m, v=v), {"value": _answer(pp, m, v)})
    assert report.passed, report.problem
