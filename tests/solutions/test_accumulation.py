"""Gradient accumulation: batch arithmetic, saved communication, throughput, recomputation."""

from __future__ import annotations

import pytest

from solutions import accumulation as acc


def test_effective_batch() -> None:
    assert acc.effective_batch(4, 64, 8) == 2048  # 4 x 64 x 8


@pytest.mark.parametrize(("target", "micro", "dp", "steps"), [
    (2048, 4, 8, 64),     # 2048 / 32
    (1000, 4, 8, 32),     # 31.25 rounds up
    (2049, 4, 8, 65),     # one sequence over 64 x 32
    (16, 4, 8, 1),        # below one step's worth
    (1, 1, 1, 1),
    (10**18 + 1, 1, 1, 10**18 + 1),  # exact integer arithmetic (a float ceil would be off)
])
def test_required_accumulation_steps(target: int, micro: int, dp: int, steps: int) -> None:
    assert acc.required_accumulation_steps(target, micro, dp) == steps


@pytest.mark.parametrize("args", [(0, 4, 8), (2048, 0, 8), (2048, 4, 0), (-2048, 4, 8),
                                  (2048, 2.5, 8)])
def test_required_steps_rejects_impossible_input(args: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        acc.required_accumulation_steps(*args)


def test_comm_time_saved() -> None:
    assert acc.comm_time_saved_ms(64, 50.0) == pytest.approx(3150.0)  # 63 x 50
    assert acc.comm_time_saved_ms(1, 50.0) == 0.0


def test_step_time_and_throughput() -> None:
    # 64 x 120 ms + 50 ms = 7730 ms; 2048 seq / 7.73 s = 264.9418 seq/s
    assert acc.step_time_ms(64, 120.0, 50.0) == pytest.approx(7730.0)
    assert acc.throughput_seq_per_s(4, 64, 8, 120.0, 50.0) == pytest.approx(264.9418, rel=1e-6)


def test_optimizer_time_is_added() -> None:
    # 7730 + 1 = 7731 ms; 2048 / 7.731 = 264.9075 seq/s
    assert acc.throughput_seq_per_s(4, 64, 8, 120.0, 50.0, optimizer_ms=1.0) == pytest.approx(
        264.9075, rel=1e-6)


def test_comm_fraction() -> None:
    # 50 / 7730 = 0.0064683; without accumulation 3200 / (7680 + 3200) = 0.294118
    assert acc.comm_fraction_of_step(64, 120.0, 50.0) == pytest.approx(0.0064683, rel=1e-4)
    assert acc.comm_fraction_of_step(1, 7680.0, 3200.0) == pytest.approx(0.294118, rel=1e-5)


def test_checkpointing_costs_a_third_more() -> None:
    assert acc.checkpointed_micro_batch_ms(300.0) == pytest.approx(400.0)  # 300 x 4/3
    assert acc.checkpointed_micro_batch_ms(300.0, forward_fraction=0.5) == pytest.approx(450.0)


def test_compute_per_optimizer_step() -> None:
    # 2048 / (8 x 8) = 32 steps x 200 ms = 6400 ms
    assert acc.compute_ms_per_optimizer_step(2048, 8, 8, 200.0) == pytest.approx(6400.0)


@pytest.mark.parametrize("call", [
    lambda: acc.step_time_ms(0, 120.0, 50.0),
    lambda: acc.step_time_ms(4, 0.0, 50.0),
    lambda: acc.step_time_ms(4, 120.0, -1.0),
    lambda: acc.comm_time_saved_ms(4, -5.0),
    lambda: acc.throughput_seq_per_s(4, 64, 0, 120.0, 50.0),
    lambda: acc.checkpointed_micro_batch_ms(-1.0),
])
def test_impossible_times_are_rejected(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


def test_accumulation_plan_returns_the_batch_the_steps_really_give() -> None:
    from solutions.accumulation import accumulation_plan

    # 1000 / (4 x 8) = 31.25 -> 32 steps; 32 x 4 x 8 = 1024 sequences, not 1000
    assert accumulation_plan(1000, 4, 8) == (32, 1024)
    assert accumulation_plan(2048, 4, 8) == (64, 2048)  # divisible: exactly the target
    assert accumulation_plan(16, 4, 8) == (1, 32)       # one step overshoots
    with pytest.raises(ValueError):
        accumulation_plan(1000, 0, 8)
