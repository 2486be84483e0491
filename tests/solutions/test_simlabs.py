"""The ZeRO-3, tensor-parallel and pipeline labs: the reference passes, each mistake is named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from solutions import pipeline as pl
from solutions import simcluster as sim
from solutions import simpipeline, simtp, simzero
from solutions.simlab import LabSpec, Report, run_case


def _reports(spec: LabSpec, program: Callable[..., Any]) -> list[Report]:
    return [spec.verify(case, run_case(spec, program, case)) for case in spec.cases({})]


def _first_problem(spec: LabSpec, program: Callable[..., Any]) -> str:
    problems = [r.problem for r in _reports(spec, program) if not r.passed]
    assert problems, "a wrong program passed every case"
    return problems[0]


@pytest.mark.parametrize("spec, reference", [
    (simzero.SPEC, simzero.zero3_forward), (simtp.SPEC, simtp.tp_mlp_forward),
    (simpipeline.SPEC, simpipeline.pipeline_schedule)])
def test_the_reference_passes_every_case(spec: LabSpec, reference: Callable[..., Any]) -> None:
    reports = _reports(spec, reference)
    assert all(r.passed for r in reports), [r.problem for r in reports]


# -- ZeRO-3 ------------------------------------------------------------------------------

def test_zero3_gathering_every_layer_up_front_exceeds_the_memory_bound() -> None:
    def up_front(rank: sim.Rank):
        x, d = rank.data["x"], rank.data["x"].shape[1]
        gathered = []
        for shard in rank.data["shards"]:
            gathered.append((yield from rank.all_gather(shard)))
        for parts in gathered:
            x = np.maximum(x @ np.concatenate(parts).reshape(d, d), 0.0)
            rank.free(*parts)
        return x

    problem = _first_problem(simzero.SPEC, up_front)
    # case 0: N=4, 3 layers of 4x4 float64, batch 2: data = 2x4x8 + 3x(4x8) = 160 bytes;
    # one layer's missing shards 12 x 8 = 96 bytes; all three held at once: 160 + 288.
    assert problem.startswith("rank 0 held 448 bytes at step 9; expected at most 256")


def test_zero3_using_the_full_weights_without_gathering_fails_on_bytes_gathered() -> None:
    def no_gather(rank: sim.Rank):
        import sys
        frame = sys._getframe(1)
        while "case" not in frame.f_locals:
            frame = frame.f_back  # type: ignore[assignment]
        weights, _ = simzero.model(frame.f_locals["case"])
        x = rank.data["x"]
        for w in weights:
            x = np.maximum(x @ w, 0.0)
        yield
        return x

    assert _first_problem(simzero.SPEC, no_gather).startswith(
        "rank 0 received 0 bytes; expected 288")


def test_zero3_sending_activations_is_not_a_shard_move() -> None:
    def leak(rank: sim.Rank):
        rank.send((rank.id + 1) % rank.size, rank.data["x"])
        yield
        rank.recv((rank.id - 1) % rank.size)
        return (yield from simzero.zero3_forward(rank))

    assert "which is not a weight element it held" in _first_problem(simzero.SPEC, leak)


# -- tensor parallel -----------------------------------------------------------------------

def test_tp_reducing_before_the_activation_gives_the_wrong_output() -> None:
    def reduce_first(rank: sim.Rank):
        x, a, b = rank.data["x"], rank.data["a"], rank.data["b"]
        return np.maximum((yield from rank.all_reduce(x @ a @ b)), 0.0)

    problem = _first_problem(simtp.SPEC, reduce_first)
    assert "output Y = relu(X A) B is wrong at element" in problem


def test_tp_all_gathering_the_weights_is_caught() -> None:
    def gather_weights(rank: sim.Rank):
        a = np.concatenate((yield from rank.all_gather(rank.data["a"])), axis=1)
        b = np.concatenate((yield from rank.all_gather(rank.data["b"])), axis=0)
        return np.maximum(rank.data["x"] @ a, 0.0) @ b

    assert "not a sum of the ranks' partial outputs" in _first_problem(simtp.SPEC,
                                                                       gather_weights)


def test_tp_two_all_reduces_are_one_too_many() -> None:
    def twice(rank: sim.Rank):
        x, a, b = rank.data["x"], rank.data["a"], rank.data["b"]
        y = yield from rank.all_reduce(np.maximum(x @ a, 0.0) @ b)
        return (yield from rank.all_reduce(y * (rank.id == 0)))

    problem = _first_problem(simtp.SPEC, twice)
    assert "exactly one all-reduce" in problem and "elements" in problem


# -- pipeline schedules ----------------------------------------------------------------------

def test_gpipe_meets_the_makespan_but_not_1f1bs_memory() -> None:
    def gpipe(pp: int, m: int, v: int) -> list[list[tuple[str, int]]]:
        return [[(phase, mb) for _, phase, mb in ops] for ops in pl.schedule_gpipe(pp, m)]

    assert _first_problem(simpipeline.SPEC, gpipe) == (
        "stage 0 holds 8 microbatches' activations at once; 1F1B holds at most 4 there: "
        "start a backward as soon as one is ready instead of running more forwards")


def test_a_backward_before_its_forward_is_rejected_at_that_action() -> None:
    def early_backward(pp: int, m: int, v: int) -> list[list[Any]]:
        orders = simpipeline.pipeline_schedule(pp, m, v)
        orders[-1][0], orders[-1][1] = orders[-1][1], orders[-1][0]  # last stage: B0 then F0
        return orders

    assert _first_problem(simpipeline.SPEC, early_backward) == (
        "The schedule was rejected: stage 3, action 0: B of microbatch 0 needs F of "
        "microbatch 0 on stage 3 first, which cannot run before it: the schedule deadlocks "
        "here.")


def test_a_needlessly_late_schedule_fails_on_makespan_with_the_bubble() -> None:
    def late(pp: int, m: int, v: int) -> list[list[Any]]:
        orders = simpipeline.pipeline_schedule(pp, m, v)
        orders[1][0], orders[1][1] = orders[1][1], orders[1][0]  # stage 1 runs F1 before F0
        return orders

    problem = _first_problem(simpipeline.SPEC, late)
    assert problem.startswith("makespan 24 slots, bubble 50.0% of compute; expected the "
                              "minimum 2mv + 2(p-1) = 22 slots, bubble (p-1)/(mv) = 37.5%")


@pytest.mark.parametrize("answer, fragment", [
    (lambda pp, m, v: None, "return a list with one list of actions per stage"),
    (lambda pp, m, v: [[("F", 0)]] * pp, "stage 0 runs 1 of its 16 actions"),
    (lambda pp, m, v: [[("X", 0)]] * pp, "is not an action"),
    (lambda pp, m, v: 1 / 0, "Your function raised: ZeroDivisionError"),
])
def test_malformed_schedules_are_explained(answer: Callable[..., Any], fragment: str) -> None:
    assert fragment in _first_problem(simpipeline.SPEC, answer)
