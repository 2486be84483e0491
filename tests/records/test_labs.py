"""The simulator labs beyond the 58: looked up like exercises, never counted in the 58."""

from __future__ import annotations

from typing import Any

import pytest

from autograder.kinds import Lab
from workbook.records import all_challenges, all_exercises, all_labs, by_id, lookup

LAB_IDS = ["0.7", "1.7", "5.8", "6.6"]


def test_labs_sit_beside_the_58_without_changing_the_count() -> None:
    assert [r.id for r in all_labs()] == LAB_IDS
    assert len(all_exercises()) == 58
    numbered = {r.id for r in (*all_exercises(), *all_challenges())}
    assert not numbered & set(LAB_IDS)
    assert set(LAB_IDS) <= set(by_id())


@pytest.mark.parametrize("exercise_id", LAB_IDS)
def test_the_reference_passes_and_the_stub_does_not(exercise_id: str) -> None:
    record = lookup(exercise_id)
    assert isinstance(record.answer_kind, Lab) and "lab" in record.tags
    assert record.grade(record.expected()).passed
    namespace: dict[str, Any] = {"np": __import__("numpy")}
    exec(record.answer_kind.stub(), namespace)
    stub = namespace[record.answer_kind.function_name]
    assert record.answer_kind.is_stub(stub)
    verdict = record.grade(stub)
    assert verdict.status == "wrong" and verdict.message.startswith("Case ")


@pytest.mark.parametrize("exercise_id", LAB_IDS)
def test_a_fresh_variant_draws_new_data_the_reference_still_passes(exercise_id: str) -> None:
    record = lookup(exercise_id)
    params = record.variant("learner-1")
    assert params != dict(record.params)
    assert record.grade(record.expected(params), params).passed


def test_a_wrong_ring_shows_the_trace_picture_of_the_failing_case() -> None:
    def one_way(rank: Any):  # reduce-scatter only: no all-gather
        import numpy as np
        n, me = rank.size, rank.id
        x = np.array(rank.data, copy=True)
        parts = np.array_split(np.arange(len(x)), n)
        for s in range(n - 1):
            rank.send((me + 1) % n, x[parts[(me - s) % n]])
            yield
            x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)
        return x

    verdict = lookup("0.7").grade(one_way, {"seed": 0, "grading_seed": 4})
    assert "rank 0's sum of all ranks' vectors is wrong at element" in verdict.message
    case = verdict.message.split(":")[0].removeprefix("Case ")
    n = int(case.split(",")[0].removeprefix("N="))
    lines = verdict.picture.splitlines()
    assert lines[0] == f"Your trace, case {case}:"
    assert lines[1].split() == ["step"] + [w for r in range(n) for w in ("rank", str(r))]
    assert len(lines) == 2 + (n - 1) + 1  # N-1 reduce-scatter steps, no all-gather; a legend


def test_visible_examples_are_not_the_graded_cases() -> None:
    from solutions.sim import pipeline_lab as simpipeline

    shown = {(c["pp"], c["m"], c["v"]) for c in simpipeline.cases(lookup("5.8").params)}
    drawn = [{(c["pp"], c["m"], c["v"]) for c in simpipeline.SPEC.graded(seed)}
             for seed in range(20)]
    assert all(not d <= shown for d in drawn)
    assert len({frozenset(d) for d in drawn}) == 20


@pytest.mark.parametrize("lab", ["ring_lab", "zero_lab", "tp_lab", "pipeline_lab"])
def test_no_graded_case_has_the_shape_of_a_shown_example(lab: str) -> None:
    # a file that returns the shown examples' answers and nothing else would earn the share
    # of a grading that repeats a shown shape; the pipeline lab's answer is its shape alone
    import importlib
    module = importlib.import_module(f"solutions.sim.{lab}")
    def shape(case: dict[str, Any]) -> frozenset[tuple[str, Any]]:
        return frozenset((k, v) for k, v in case.items() if k != "seed")
    shown = {shape(c) for c in module.cases({})}
    graded = [shape(c) for seed in range(400) for c in module.SPEC.graded(seed)]
    assert graded and not shown & set(graded)
