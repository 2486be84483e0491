"""Ring, tree and naive AllReduce costs, and NCCL's bandwidth conversions."""

from __future__ import annotations

import pytest

from solutions import collectives as col

# -- volume -----------------------------------------------------------------------------

def test_ring_allreduce_volume_eight_gpus() -> None:
    # 2 x 1 GB x 7/8 = 1.75 GB
    assert col.ring_allreduce_gb_per_gpu(1.0, 8) == pytest.approx(1.75)


def test_ring_allreduce_volume_approaches_twice_the_message() -> None:
    # 2 x 1 x 999/1000 = 1.998 GB
    assert col.ring_allreduce_gb_per_gpu(1.0, 1000) == pytest.approx(1.998)


def test_ring_halves_are_each_half_of_allreduce() -> None:
    # 4 GB over 4 GPUs: 4 x 3/4 = 3 GB per phase
    assert col.ring_reduce_scatter_gb_per_gpu(4.0, 4) == pytest.approx(3.0)
    assert col.ring_all_gather_gb_per_gpu(4.0, 4) == pytest.approx(3.0)


def test_one_gpu_sends_nothing() -> None:
    assert col.ring_allreduce_gb_per_gpu(5.0, 1) == 0.0
    assert col.ring_allreduce_steps(1) == 0


def test_ring_steps() -> None:
    assert col.ring_allreduce_steps(8) == 14  # 2 x (8 - 1)


def test_naive_root_handles_n_minus_one_messages() -> None:
    # 8 GPUs, 2 GB: the root receives 7 x 2 = 14 GB (and sends as much back)
    assert col.naive_allreduce_root_gb(2.0, 8) == pytest.approx(14.0)


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_volume_rejects_impossible_gpu_counts(bad: float) -> None:
    with pytest.raises(ValueError, match="n_gpus"):
        col.ring_allreduce_gb_per_gpu(1.0, bad)  # type: ignore[arg-type]


def test_volume_rejects_negative_message() -> None:
    with pytest.raises(ValueError, match="message_gb"):
        col.ring_allreduce_gb_per_gpu(-1.0, 8)


# -- time -------------------------------------------------------------------------------

def test_ring_time_bandwidth_only() -> None:
    # 2 GB, 8 GPUs, 50 GB/s per direction: 3.5 GB / 50 GB/s = 0.07 s = 70 ms
    assert col.ring_allreduce_time_ms(2.0, 8, 50.0, 0.0) == pytest.approx(70.0)
    assert col.ring_allreduce_bandwidth_time_s(2.0, 8, 50.0) == pytest.approx(0.07)


def test_ring_time_with_latency() -> None:
    # 14 steps x 5 us = 70 us = 0.07 ms on top of 70 ms
    assert col.ring_allreduce_time_ms(2.0, 8, 50.0, 5.0) == pytest.approx(70.07)


def test_ring_time_latency_dominates_small_messages() -> None:
    # 1 KB on 64 GPUs at 100 GB/s, 10 us: 126 x (10 us + 1e-6/64/100 s = 0.00015625 us)
    # = 126 x 10.00015625 us = 1260.0197 us = 1.2600197 ms
    assert col.ring_allreduce_time_ms(1e-6, 64, 100.0, 10.0) == pytest.approx(1.2600197, rel=1e-6)


def test_ring_time_one_gpu_is_zero() -> None:
    assert col.ring_allreduce_time_ms(2.0, 1, 50.0, 5.0) == 0.0


@pytest.mark.parametrize("args", [
    (2.0, 0, 50.0, 5.0),     # no GPUs
    (2.0, 8, -50.0, 5.0),    # negative bandwidth
    (2.0, 8, 0.0, 5.0),      # zero bandwidth
    (2.0, 8, 50.0, -1.0),    # negative latency
    (-2.0, 8, 50.0, 5.0),    # negative message
    (2.0, 8, float("inf"), 5.0),
])
def test_ring_time_rejects_impossible_input(args: tuple[float, int, float, float]) -> None:
    with pytest.raises(ValueError):
        col.ring_allreduce_time_ms(*args)


def test_tree_rounds() -> None:
    assert [col.tree_rounds(n) for n in (1, 2, 3, 8, 9, 64)] == [0, 1, 2, 3, 4, 6]


def test_tree_time_large_message() -> None:
    # 4 GB, 8 GPUs, 50 GB/s: 2 x 3 rounds x 80 ms = 480 ms
    assert col.tree_allreduce_time_ms(4.0, 8, 50.0, 0.0) == pytest.approx(480.0)


def test_ring_beats_tree_on_large_messages() -> None:
    # ring 140 ms vs tree 480 ms for 4 GB on 8 GPUs at 50 GB/s
    assert col.ring_allreduce_time_ms(4.0, 8, 50.0, 0.0) == pytest.approx(140.0)
    assert col.faster_allreduce(4.0, 8, 50.0, 5.0) == "ring"


def test_tree_beats_ring_on_small_messages() -> None:
    # 64 KB, 64 GPUs, 50 GB/s, 5 us: ring 126 x (5 + 0.02) us = 632.5 us;
    # tree 12 x (5 + 1.28) us = 75.4 us
    assert col.tree_allreduce_time_ms(64e-6, 64, 50.0, 5.0) == pytest.approx(0.07536)
    assert col.faster_allreduce(64e-6, 64, 50.0, 5.0) == "tree"


# -- NCCL bandwidths --------------------------------------------------------------------

def test_algbw_and_busbw_for_allreduce() -> None:
    # 4 GB in 30 ms: algbw = 133.33 GB/s; busbw = 133.33 x 2 x 7/8 = 233.33 GB/s
    assert col.algorithm_bandwidth_gb_per_s(4.0, 30.0) == pytest.approx(133.3333, rel=1e-5)
    assert col.bus_bandwidth_gb_per_s(4.0, 30.0, 8) == pytest.approx(233.3333, rel=1e-5)


def test_bus_utilisation_against_per_direction_peak() -> None:
    # 233.33 / 300 = 0.7778
    assert col.bus_utilisation(4.0, 30.0, 8, 300.0) == pytest.approx(0.77778, rel=1e-4)


@pytest.mark.parametrize(("collective", "factor"), [
    ("allreduce", 1.75),         # 2 x 7/8
    ("reduce_scatter", 0.875),   # 7/8
    ("all_gather", 0.875),
    ("alltoall", 0.875),
    ("broadcast", 1.0),
    ("reduce", 1.0),
])
def test_busbw_factors_from_nccl_tests(collective: col.Collective, factor: float) -> None:
    assert col.busbw_factor(collective, 8) == pytest.approx(factor)


def test_busbw_rejects_unknown_collective() -> None:
    with pytest.raises(ValueError, match="collective"):
        col.busbw_factor("gossip", 8)  # type: ignore[arg-type]


def test_bandwidth_rejects_zero_time() -> None:
    with pytest.raises(ValueError, match="time_ms"):
        col.algorithm_bandwidth_gb_per_s(4.0, 0.0)
