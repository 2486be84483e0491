"""ZeRO model-state memory and communication, checked against the paper's Figure 1."""

from __future__ import annotations

import pytest

from solutions import zero


@pytest.mark.parametrize(("stage", "bytes_per_param"), [
    (0, 16.0),        # 2 + 2 + 12
    (1, 4.1875),      # 2 + 2 + 12/64
    (2, 2.21875),     # 2 + 14/64
    (3, 0.25),        # 16/64
])
def test_bytes_per_param_on_64_gpus(stage: int, bytes_per_param: float) -> None:
    assert zero.model_state_bytes_per_param(stage, 64) == pytest.approx(bytes_per_param)


def test_breakdown_of_stage_two() -> None:
    # stage 2 on 8 GPUs: weights 2, gradients 2/8 = 0.25, optimizer 12/8 = 1.5
    parts = zero.model_state_breakdown(2, 8)
    assert (parts.weights, parts.gradients, parts.optimizer) == pytest.approx((2.0, 0.25, 1.5))
    assert parts.total == pytest.approx(3.75)


@pytest.mark.parametrize(("stage", "gb"), [
    # ZeRO paper Figure 1: Psi = 7.5B, N_d = 64, K = 12 -> 120, 31.4, 16.6, 1.9 GB
    (0, 120.0),       # 16 x 7.5
    (1, 31.40625),    # 4.1875 x 7.5
    (2, 16.640625),   # 2.21875 x 7.5
    (3, 1.875),       # 0.25 x 7.5
])
def test_figure_one_of_the_zero_paper(stage: int, gb: float) -> None:
    assert zero.model_state_gb_per_gpu(7.5e9, stage, 64) == pytest.approx(gb)


def test_seven_billion_without_zero() -> None:
    assert zero.model_state_gb_per_gpu(7e9, 0, 1) == pytest.approx(112.0)  # 16 x 7


def test_optimizer_multiplier_can_change() -> None:
    # plain SGD with momentum in FP32 master weights: K = 8 -> 2 + 2 + 8/4 = 6 bytes at stage 1
    assert zero.model_state_bytes_per_param(1, 4, optimizer_bytes=8.0) == pytest.approx(6.0)


def test_one_gpu_every_stage_is_sixteen_bytes() -> None:
    assert [zero.model_state_bytes_per_param(s, 1) for s in range(4)] == [16.0] * 4


@pytest.mark.parametrize("stage", [-1, 4, True, 1.5])
def test_unknown_stage_is_rejected(stage: object) -> None:
    with pytest.raises(ValueError, match="zero_stage"):
        zero.model_state_bytes_per_param(stage, 8)  # type: ignore[arg-type]


def test_zero_gpus_are_rejected() -> None:
    with pytest.raises(ValueError, match="n_dp"):
        zero.model_state_gb_per_gpu(7e9, 1, 0)


def test_negative_parameter_count_is_rejected() -> None:
    with pytest.raises(ValueError, match="n_params"):
        zero.model_state_gb_per_gpu(-7e9, 1, 8)


# -- communication ----------------------------------------------------------------------

def test_comm_multiples() -> None:
    assert [zero.comm_volume_multiple(s) for s in range(4)] == [2, 2, 2, 3]


def test_zero3_comm_for_seven_billion_on_64_gpus() -> None:
    # 3 x 14 GB x 63/64 = 41.34375 GB
    assert zero.comm_gb_per_gpu(7e9, 3, 64) == pytest.approx(41.34375)


def test_data_parallel_comm_for_seven_billion_on_64_gpus() -> None:
    # 2 x 14 GB x 63/64 = 27.5625 GB
    assert zero.comm_gb_per_gpu(7e9, 0, 64) == pytest.approx(27.5625)
    assert zero.comm_gb_per_gpu(7e9, 2, 64) == pytest.approx(27.5625)


def test_comm_with_fp32_gradients_and_one_gpu() -> None:
    # 4 bytes, 1B params, 2 GPUs, stage 0: 2 x 4 GB x 1/2 = 4 GB; one GPU: nothing
    assert zero.comm_gb_per_gpu(1e9, 0, 2, bytes_per_element=4.0) == pytest.approx(4.0)
    assert zero.comm_gb_per_gpu(1e9, 3, 1) == 0.0


# -- the lowest stage that fits ---------------------------------------------------------

def test_thirty_billion_on_eight_gpus() -> None:
    # stage 3: 2 bytes x 30B = 60 GB + 20 GB activations = 80 GB
    assert zero.min_zero_stage_that_fits(30e9, 8, budget_gb=84.0, other_gb=20.0) == 3
    assert zero.min_zero_stage_that_fits(30e9, 8, budget_gb=80.0, other_gb=20.0) == 3  # exact
    assert zero.min_zero_stage_that_fits(30e9, 8, budget_gb=78.0, other_gb=20.0) is None


def test_lower_stage_preferred_when_it_fits() -> None:
    # 7B on 64 GPUs: stage 1 = 29.3125 GB, + 10 GB activations = 39.3 GB <= 40
    assert zero.min_zero_stage_that_fits(7e9, 64, budget_gb=40.0, other_gb=10.0) == 1
    # a 1B model needs 16 GB without ZeRO: fits a 40 GB budget at stage 0
    assert zero.min_zero_stage_that_fits(1e9, 8, budget_gb=40.0) == 0


def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="budget_gb"):
        zero.min_zero_stage_that_fits(7e9, 8, budget_gb=0.0)
