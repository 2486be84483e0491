"""The ZeRO-3, tensor-parallel and pipeline labs: the reference passes, each mistake is named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from solutions import pipeline_execute as executor
from solutions import pipeline_simulator as simulator
from solutions.pipeline_schedules import PipelineOp
from solutions.sim import pipeline_lab as simpipeline
from solutions.sim import tp_lab as simtp
from solutions.sim import zero_lab as simzero
from solutions.sim.lab import LabSpec, Report, run_case


def _reports(spec: LabSpec, program: Callable[..., Any], seed: int | None = None,
             ) -> list[Report]:
    cases = spec.cases({}) if seed is None else spec.graded(seed)
    return [spec.verify(case, run_case(spec, program, case)) for case in cases]


def _first_problem(spec: LabSpec, program: Callable[..., Any], seed: int | None = None) -> str:
    problems = [r.problem for r in _reports(spec, program, seed) if not r.passed]
    assert problems, "a wrong program passed every case"
    return problems[0]


@pytest.mark.parametrize("spec, reference", [
    (simzero.SPEC, simzero.zero3_forward), (simtp.SPEC, simtp.tp_mlp_forward),
    (simpipeline.SPEC, simpipeline.pipeline_schedule)])
def test_the_reference_passes_every_case(spec: LabSpec, reference: Callable[..., Any]) -> None:
    for seed in (None, 1, 2):
        reports = _reports(spec, reference, seed)
        assert all(r.passed for r in reports), [r.problem for r in reports]


# -- ZeRO-3 ------------------------------------------------------------------------------

def test_zero3_gathering_every_layer_up_front_exceeds_the_memory_bound() -> None:
    def up_front(rank: Any):
        x, d = rank.data["x"], rank.data["x"].shape[1]
        gathered = []
        for shard in rank.data["shards"]:
            gathered.append((yield from rank.all_gather(shard)))
        for parts in gathered:
            x = np.maximum(x @ np.concatenate(parts).reshape(d, d), 0.0)
            rank.free(*parts)
        return x

    d, layers = 128, 10
    case = dict(n=2, layers=layers, d=d, batch=1, seed=5)
    problem = simzero.verify(case, run_case(simzero.SPEC, up_front, case)).problem
    # rank 0: data = 128 x 8 (x) + 10 layers x 8,192 x 8 (its half of each) = 656,384
    # bytes; a layer is 128 x 128 x 8 = 131,072: the bound is data + 3 layers + 4 x 1,024
    # (activations) + 128 KiB = 1,184,768 bytes; holding the other rank's half of all 10
    # layers at once is 10 x 65,536 = 655,360 beyond the data before any compute.
    data = d * 8 + layers * (d * d // 2) * 8
    bound = data + 3 * d * d * 8 + 4 * d * 8 + (128 << 10)
    assert bound == 1_184_768
    assert problem.startswith("rank 0 held ") and f"expected at most {bound}" in problem
    held = int(problem.split()[3])
    assert held >= data + layers * (d * d // 2) * 8


def test_zero3_using_the_full_weights_without_gathering_fails_on_bytes_gathered() -> None:
    case = simzero.cases({})[0]
    weights, _ = simzero.model(case)    # the full model, carried in as a closure value

    def no_gather(rank: Any):
        yield
        x = rank.data["x"]
        for w in weights:
            x = np.maximum(x @ w, 0.0)
        return x

    problem = simzero.verify(case, run_case(simzero.SPEC, no_gather, case)).problem
    assert problem.startswith("rank 0 never received weight element "), problem



def test_zero3_sending_activations_is_not_a_shard_move() -> None:
    def leak(rank: Any):
        rank.send((rank.id + 1) % rank.size, rank.data["x"])
        yield
        rank.recv((rank.id - 1) % rank.size)
        return (yield from simzero.zero3_forward(rank))

    assert "not an element of any layer's weights" in _first_problem(simzero.SPEC, leak)



def _with_the_model(case: dict[str, Any], program: Callable[..., Any]) -> str:
    """The problem the verifier finds in ``program``, which may use the full model (carried
    in as a closure value, the way a rank that could read the others' shards would)."""
    return simzero.verify(case, run_case(simzero.SPEC, program, case)).problem


def test_zero3_messages_are_checked_element_by_element() -> None:
    case = dict(n=3, layers=3, d=8, batch=2, seed=9)
    weights, _ = simzero.model(case)
    shards = [np.array_split(w.ravel(), 3) for w in weights]

    def right_output(rank: Any) -> np.ndarray:
        x = rank.data["x"]
        for w in weights:
            x = np.maximum(x @ w, 0.0)
        return x

    def zeros(rank: Any):          # the gathers' shapes, filled with zeros
        for shard in rank.data["shards"]:
            for _ in range(rank.size - 1):
                rank.send((rank.id + 1) % rank.size, np.zeros_like(shard))
                yield
                rank.free(rank.recv((rank.id - 1) % rank.size))
        return right_output(rank)

    def neighbours(rank: Any):     # each rank sends the next rank's shard, never received
        n = rank.size
        for layer in range(len(weights)):
            for s in range(n - 1):
                rank.send((rank.id + 1) % n, shards[layer][(rank.id + s + 1) % n])
                yield
                rank.free(rank.recv((rank.id - 1) % n))
        return right_output(rank)

    def twice(rank: Any):          # every gather done twice
        for shard in rank.data["shards"]:
            for _ in range(2):
                parts = yield from rank.all_gather(shard)
                rank.free(*parts)
        return right_output(rank)

    def scrambled(rank: Any):      # the real shards, sent in reverse order
        n = rank.size
        for shard in rank.data["shards"]:
            parts = yield from simzero_gather_reversed(rank, shard, n)
            rank.free(*parts)
        return right_output(rank)

    assert "0, a placeholder that carries no weight" in _with_the_model(case, zeros)
    assert "neither owns nor had received" in _with_the_model(case, neighbours)
    assert "more than once" in _with_the_model(case, twice)
    assert _with_the_model(case, scrambled) == ""


def simzero_gather_reversed(rank: Any, shard: np.ndarray, n: int):
    """A ring all-gather whose every message is its shard back to front (the same
    elements, not one consecutive run of the weights)."""
    me = rank.id
    parts: list[Any] = [None] * n
    parts[me] = shard
    for s in range(n - 1):
        rank.send((me + 1) % n, parts[(me - s) % n][::-1])
        yield
        got = rank.recv((me - 1) % n)
        parts[(me - s - 1) % n] = got[::-1]
    return parts

# -- tensor parallel -----------------------------------------------------------------------

def test_tp_reducing_before_the_activation_gives_the_wrong_output() -> None:
    def reduce_first(rank: Any):
        x, a, b = rank.data["x"], rank.data["a"], rank.data["b"]
        return np.maximum((yield from rank.all_reduce(x @ a @ b)), 0.0)

    problem = _first_problem(simtp.SPEC, reduce_first)
    assert "output Y = relu(X A) B is wrong at element" in problem


def test_tp_all_gathering_the_weights_is_caught() -> None:
    def gather_weights(rank: Any):
        a = np.concatenate((yield from rank.all_gather(rank.data["a"])), axis=1)
        b = np.concatenate((yield from rank.all_gather(rank.data["b"])), axis=0)
        return np.maximum(rank.data["x"] @ a, 0.0) @ b

    assert "which is not a sum of the ranks' partial outputs" in _first_problem(
        simtp.SPEC, gather_weights)


def test_tp_two_all_reduces_are_one_too_many() -> None:
    def twice(rank: Any):
        x, a, b = rank.data["x"], rank.data["a"], rank.data["b"]
        y = yield from rank.all_reduce(np.maximum(x @ a, 0.0) @ b)
        return (yield from rank.all_reduce(y * (rank.id == 0)))

    problem = _first_problem(simtp.SPEC, twice)  # the other ranks add zeros: no information
    assert "which carries no information (0, the empty sum" in problem


# -- pipeline schedules ----------------------------------------------------------------------

def test_gpipe_meets_the_makespan_but_not_1f1bs_memory() -> None:
    def gpipe(pp: int, m: int, v: int) -> list[list[tuple[str, int]]]:
        return [[simpipeline.written(s.op, 1) for s in ops]
                for ops in simulator.schedule_gpipe(pp, m)]

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
        "microbatch 0 on this same stage to run first, but your list puts it later (action "
        "1): the schedule deadlocks here.")


def test_a_deadlock_is_blamed_on_its_root_not_on_a_stage_downstream() -> None:
    # stage 0 runs the backward of microbatch 0 before its forward; stage 1 is innocent
    orders = [[PipelineOp("B", 0), PipelineOp("F", 0), PipelineOp("F", 1), PipelineOp("B", 1)],
              [PipelineOp("F", 0), PipelineOp("B", 0), PipelineOp("F", 1), PipelineOp("B", 1)]]
    with pytest.raises(executor.ScheduleError) as error:
        executor.execute(2, 2, orders, 1)
    assert str(error.value).startswith(
        "stage 0, action 0: B of microbatch 0 needs F of microbatch 0 on this same stage to "
        "run first (through the stages between), but your list puts it later (action 1)")
    assert (error.value.stage, error.value.position) == (0, 0)


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
    (lambda pp, m, v: 1 / 0, "Your function raised an error: ZeroDivisionError: "
                            "division by zero"),
])
def test_malformed_schedules_are_explained(answer: Callable[..., Any], fragment: str) -> None:
    assert fragment in _first_problem(simpipeline.SPEC, answer)
