"""Chapter 4 records: canonical answers worked out by hand."""

from __future__ import annotations

import random

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Function
from workbook.records import ch04

RECORDS = {r.id: r for r in ch04.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_ids_in_order() -> None:
    assert list(RECORDS) == ["4.1", "4.2", "4.3", "4.4", "4.5"]
    assert [r.category for r in RECORDS.values()] == ["derive"] * 3 + ["trace", "build"]


def test_4_1_allreduce_time() -> None:
    # S = 20 GB; 2 x 20 x 63/64 = 39.375 GB at 600 GB/s = 65.625 ms
    assert ex("4.1").expected() == pytest.approx(65.625)


def test_4_2_overlap() -> None:
    # 60 ms of AllReduce, 1.5 ms exposed: (60 - 1.5)/60 = 97.5 %
    assert ex("4.2").expected() == pytest.approx(97.5)


def test_4_2_comm_longer_than_compute() -> None:
    # L = 10, b = 4, c = 5: exposed 5 + 9 x 1 = 14 of 50 -> 72 % hidden
    params = dict(n_layers=10, backward_ms=40.0, comm_per_layer_ms=5.0)
    assert ex("4.2").expected(params) == pytest.approx(72.0)


def test_4_3_inter_node() -> None:
    # 8 nodes, 20 GB, one 100 GB/s link: 2 x 20 x 7/8 / 100 = 0.35 s = 350 ms
    assert ex("4.3").expected() == pytest.approx(350.0)


def test_4_3_per_gpu_ring_is_a_misconception() -> None:
    # 64-member ring: 2 x 20 x 63/64 / 100 = 393.75 ms
    assert pytest.approx(393.75) in [w for w, _ in ex("4.3").wrong_answers()]


def test_4_4_ratio() -> None:
    # 120 / (0.5 x 989.4) = 0.2425713 s; 0.35 / 0.2425713 = 1.442875
    assert ex("4.4").expected() == pytest.approx(1.442875)


def test_4_4_peak_misconception() -> None:
    # at peak: 120 / 989.4 = 0.1212856 s; 0.35 / 0.1212856 = 2.88575
    assert pytest.approx(2.88575) in [w for w, _ in ex("4.4").wrong_answers()]


def test_4_5_reference_and_worked_example() -> None:
    fn = ex("4.5").expected()
    assert fn.__name__ == "comm_compute_ratio"
    # 0.35 s / (120 / 494.7 = 0.2425713 s) = 1.442875
    assert fn(10.0, 8, 100.0, 120.0, 494.7) == pytest.approx(1.442875)


def test_4_5_edge_cases_cover_one_gpu_and_invalid_inputs() -> None:
    answer = ex("4.5").answer_kind
    assert type(answer) is Function
    fn = ex("4.5").expected()
    outcomes = []
    for args in answer.edge_cases:
        try:
            outcomes.append(fn(*args))
        except ValueError:
            outcomes.append("ValueError")
    # worked example (2 x 14 GB x 15/16 / 50 GB/s = 0.525 s over 90 / 400 = 0.225 s = 2.3333),
    # one GPU, two GPUs (2 x 14 x 1/2 / 50 = 0.28 s / 0.225 s = 1.2444), then six impossible
    # inputs
    assert outcomes[:3] == [pytest.approx(2.333333), 0.0, pytest.approx(1.244444)]
    assert outcomes[3:] == ["ValueError"] * 6


def test_4_5_random_cases_are_valid_inputs() -> None:
    answer = ex("4.5").answer_kind
    assert type(answer) is Function
    fn = ex("4.5").expected()
    rng = random.Random(0)
    for _ in range(50):
        assert fn(*answer.cases(rng)) >= 0.0
