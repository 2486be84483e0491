"""Gradient AllReduce time, overlap with the backward pass, two-level AllReduce, MFU."""

from __future__ import annotations

import pytest

from solutions import overlap as ov


def test_gradient_size() -> None:
    # 10e9 params x 2 bytes = 20 GB; FP32: 40 GB
    assert ov.gradient_gb(10.0) == pytest.approx(20.0)
    assert ov.gradient_gb(10.0, bytes_per_grad=4) == pytest.approx(40.0)


def test_dp_allreduce_10b_on_64_gpus() -> None:
    # 2 x 20 GB x 63/64 = 39.375 GB per GPU at 600 GB/s = 65.625 ms
    assert ov.dp_allreduce_time_ms(10.0, 64, 600.0) == pytest.approx(65.625)


def test_dp_allreduce_with_latency() -> None:
    # 2 x 2 GB x 1/2 = 2 GB at 100 GB/s = 20 ms, plus 2 steps x 10 us = 0.02 ms
    assert ov.dp_allreduce_time_ms(1.0, 2, 100.0, latency_us=10.0) == pytest.approx(20.02)


def test_one_gpu_needs_no_allreduce() -> None:
    assert ov.dp_allreduce_time_ms(10.0, 1, 600.0) == 0.0


# -- overlap ----------------------------------------------------------------------------

def test_only_the_last_bucket_is_exposed_when_comm_is_shorter() -> None:
    # 40 layers, 5 ms compute, 1.5 ms comm each: exposed 1.5 ms of 60 ms -> 97.5 % hidden
    assert ov.exposed_comm_ms(40, 1.5, 5.0) == pytest.approx(1.5)
    assert ov.overlapped_comm_fraction(40, 1.5, 5.0) == pytest.approx(0.975)
    assert ov.backward_with_comm_ms(40, 1.5, 5.0) == pytest.approx(201.5)


def test_queued_communication_when_comm_is_longer_than_compute() -> None:
    # c = 6 > b = 5, L = 40: AllReduces run back to back from t = 5 to 5 + 240 = 245;
    # backward ends at 200, so 45 ms exposed = 6 + 39 x 1; hidden (240 - 45)/240 = 0.8125
    assert ov.exposed_comm_ms(40, 6.0, 5.0) == pytest.approx(45.0)
    assert ov.overlapped_comm_fraction(40, 6.0, 5.0) == pytest.approx(0.8125)
    assert ov.backward_with_comm_ms(40, 6.0, 5.0) == pytest.approx(245.0)


def test_equal_comm_and_compute_exposes_one_bucket() -> None:
    # c = b = 5 ms, 10 buckets: last AllReduce ends at 50 + 5 -> 5 ms exposed, 90 % hidden
    assert ov.exposed_comm_ms(10, 5.0, 5.0) == pytest.approx(5.0)
    assert ov.overlapped_comm_fraction(10, 5.0, 5.0) == pytest.approx(0.9)


def test_a_single_bucket_cannot_overlap() -> None:
    assert ov.overlapped_comm_fraction(1, 3.0, 10.0) == 0.0


def test_overlap_rejects_impossible_inputs() -> None:
    with pytest.raises(ValueError):
        ov.exposed_comm_ms(0, 1.0, 5.0)
    with pytest.raises(ValueError):
        ov.exposed_comm_ms(10, -1.0, 5.0)
    with pytest.raises(ValueError):
        ov.overlapped_comm_fraction(10, 0.0, 5.0)  # no communication: nothing to hide


# -- two-level AllReduce ----------------------------------------------------------------

def test_inter_node_ring_over_one_link() -> None:
    # 8 nodes, 20 GB, one 100 GB/s link: 2 x 20 x 7/8 = 35 GB -> 350 ms
    assert ov.inter_node_allreduce_time_ms(20.0, 8, 100.0) == pytest.approx(350.0)


def test_inter_node_ring_over_eight_rails() -> None:
    # 2.5 GB per rail: 2 x 2.5 x 7/8 = 4.375 GB at 100 GB/s -> 43.75 ms
    assert ov.inter_node_allreduce_time_ms(20.0, 8, 100.0, links_per_node=8) == pytest.approx(
        43.75)


def test_in_node_phases() -> None:
    # reduce-scatter + all-gather in 8 GPUs: 2 x 20 x 7/8 = 35 GB at 600 GB/s = 58.333 ms
    assert ov.intra_node_time_ms(20.0, 8, 600.0) == pytest.approx(58.3333333)


def test_hierarchical_total() -> None:
    # 58.333 + 350 = 408.333 ms; with 8 rails 58.333 + 43.75 = 102.083 ms
    assert ov.hierarchical_allreduce_time_ms(20.0, 8, 8, 600.0, 100.0) == pytest.approx(
        408.3333333)
    assert ov.hierarchical_allreduce_time_ms(20.0, 8, 8, 600.0, 100.0, 8) == pytest.approx(
        102.0833333)


def test_one_node_has_no_inter_node_step() -> None:
    assert ov.inter_node_allreduce_time_ms(20.0, 1, 100.0) == 0.0


def test_hierarchical_rejects_impossible_inputs() -> None:
    with pytest.raises(ValueError):
        ov.inter_node_allreduce_time_ms(20.0, 8, 100.0, links_per_node=0)
    with pytest.raises(ValueError):
        ov.hierarchical_allreduce_time_ms(20.0, 8, 0, 600.0, 100.0)
    with pytest.raises(ValueError):
        ov.hierarchical_allreduce_time_ms(20.0, 8, 8, 600.0, -100.0)


# -- compute and MFU --------------------------------------------------------------------

def test_compute_time_from_flops_and_mfu() -> None:
    # 120 TFLOP / (989.4 x 0.5 = 494.7 TFLOPS) = 0.242571 s = 242.571 ms
    assert ov.compute_time_ms(120.0, 989.4, 0.5) == pytest.approx(242.5712553)


def test_ratio_and_effective_mfu() -> None:
    # 350 / 242.5712553 = 1.442875; MFU 0.5 x 242.571 / 592.571 = 0.204677
    assert ov.comm_to_compute_ratio(350.0, 242.5712553) == pytest.approx(1.442875)
    assert ov.effective_mfu_no_overlap(0.5, 242.5712553, 350.0) == pytest.approx(0.2046769)


def test_no_communication_keeps_the_mfu() -> None:
    assert ov.effective_mfu_no_overlap(0.4, 100.0, 0.0) == pytest.approx(0.4)


def test_mfu_must_be_a_fraction() -> None:
    with pytest.raises(ValueError):
        ov.compute_time_ms(120.0, 989.4, 50.0)  # a percentage, not a fraction
    with pytest.raises(ValueError):
        ov.effective_mfu_no_overlap(0.0, 100.0, 10.0)


def test_comm_compute_ratio_worked_example() -> None:
    # comm: 2 x 20 x 7/8 / 100 = 0.35 s; compute: 120 / 494.7 = 0.242571 s; 1.442875
    assert ov.comm_compute_ratio(10.0, 8, 100.0, 120.0, 494.7) == pytest.approx(1.442875)


def test_comm_compute_ratio_two_gpus() -> None:
    # 2 x 2 GB x 1/2 = 2 GB at 50 GB/s = 40 ms; 10 TFLOP at 100 TFLOPS = 100 ms -> 0.4
    assert ov.comm_compute_ratio(1.0, 2, 50.0, 10.0, 100.0) == pytest.approx(0.4)


def test_comm_compute_ratio_one_gpu_is_zero() -> None:
    assert ov.comm_compute_ratio(10.0, 1, 100.0, 120.0, 494.7) == 0.0


@pytest.mark.parametrize("args", [
    (10.0, 0, 100.0, 120.0, 494.7),
    (10.0, 8, 0.0, 120.0, 494.7),
    (10.0, 8, -100.0, 120.0, 494.7),
    (10.0, 8, 100.0, 0.0, 494.7),
    (10.0, 8, 100.0, 120.0, 0.0),
    (-1.0, 8, 100.0, 120.0, 494.7),
    (10.0, 2.5, 100.0, 120.0, 494.7),
])
def test_comm_compute_ratio_rejects_impossible_inputs(
    args: tuple[float, int, float, float, float]
) -> None:
    with pytest.raises(ValueError):
        ov.comm_compute_ratio(*args)
