"""Chapter 0 records: canonical answers worked out by hand."""

from __future__ import annotations

import math
import random

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Choice, Debug, Function
from workbook.records import ch00

RECORDS = {r.id: r for r in ch00.EXERCISES}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_ids_in_order() -> None:
    assert list(RECORDS) == ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6"]


def test_0_1_volume() -> None:
    # 2 x 1 GB x 7/8 = 1.75 GB
    assert ex("0.1").expected() == pytest.approx(1.75)


def test_0_1_variant() -> None:
    # 64 GPUs, 14 GB: 2 x 14 x 63/64 = 27.5625 GB
    assert ex("0.1").expected({"n_gpus": 64, "message_gb": 14.0}) == pytest.approx(27.5625)


def test_0_2_time() -> None:
    # 2 x 2 GB x 7/8 = 3.5 GB at 50 GB/s per direction = 0.07 s = 70 ms
    assert ex("0.2").expected() == pytest.approx(70.0)


def test_0_2_bidirectional_misreading_is_a_misconception() -> None:
    # 3.5 GB / 100 GB/s = 35 ms
    assert any(w == pytest.approx(35.0) for w, _ in ex("0.2").wrong_answers())


def test_0_3_utilisation() -> None:
    # algbw 4/0.03 = 133.33 GB/s; busbw x 1.75 = 233.33 GB/s; / 300 = 77.78 %
    assert ex("0.3").expected() == pytest.approx(77.78, rel=1e-3)


def test_0_3_algbw_is_a_misconception() -> None:
    # 133.33 / 300 = 44.44 %
    assert any(w == pytest.approx(44.44, rel=1e-3) for w, _ in ex("0.3").wrong_answers())


def test_0_3_variants_stay_below_peak() -> None:
    for seed in range(50):
        p = ex("0.3").draw(seed)
        assert 50 < ex("0.3").expected(p) < 95


def test_0_4_ring_wins_for_gigabytes() -> None:
    # ring 14 x (5 us + 4/(8 x 50) s) = 140.07 ms; tree 6 x (5 us + 80 ms) = 480.03 ms
    record = ex("0.4")
    assert record.expected() == "A"
    assert type(record.answer_kind) is Choice
    assert [o.key for o in record.answer_kind.options] == ["A", "B", "C", "D"]


def test_0_4_variants_cover_both_regimes_and_name_the_winner_by_hand() -> None:
    # ring 2(N-1)(a + M/(N B)) against tree 2 ceil(log2 N)(a + M/B), recomputed here
    winners = set()
    for seed in range(80):
        p = ex("0.4").variant(seed)
        n, m_gb, b, a_s = p["n_gpus"], p["message_gb"], p["link_gb_per_s"], p["latency_us"] / 1e6
        ring = 2 * (n - 1) * (a_s + m_gb / (n * b))
        tree = 2 * math.ceil(math.log2(n)) * (a_s + m_gb / b)
        right = p["option_" + ex("0.4").expected(p)]
        assert right.startswith("The ring" if ring <= tree else "The tree")
        feedback = p["feedback_" + ex("0.4").expected(p)]
        assert feedback.startswith("Right")
        winners.add(ring <= tree)
    assert winners == {True, False}


def test_0_5_reference_function() -> None:
    fn = ex("0.5").expected()
    assert fn.__name__ == "ring_allreduce_time_ms"
    assert fn(2.0, 8, 50.0, 5.0) == pytest.approx(70.07)  # 14 x (2.5 + 0.005) ms
    assert fn(1.0, 1, 100.0, 5.0) == 0.0                  # one GPU
    assert fn(0.0, 8, 50.0, 5.0) == pytest.approx(0.07)   # latency only: 14 x 5 us


def test_0_5_edge_cases_cover_the_brief() -> None:
    answer = ex("0.5").answer_kind
    assert type(answer) is Function
    fn = ex("0.5").expected()
    raising = 0
    for args in answer.edge_cases:
        try:
            fn(*args)
        except ValueError:
            raising += 1
    assert raising == 4  # zero GPUs, negative and zero bandwidth, negative latency
    assert (1.0, 1, 100.0, 5.0) in answer.edge_cases
    assert any(args[3] == 0.0 for args in answer.edge_cases)


def test_0_5_random_cases_are_valid() -> None:
    answer = ex("0.5").answer_kind
    assert type(answer) is Function
    fn = ex("0.5").expected()
    rng = random.Random(0)
    for _ in range(100):
        assert fn(*answer.cases(rng)) >= 0


def test_0_6_bug_line_and_fix() -> None:
    record = ex("0.6")
    line, fixed = record.expected()
    assert line == 5
    assert type(record.answer_kind) is Debug
    code_lines = record.answer_kind.code.splitlines()
    assert code_lines[0].startswith("def ring_allreduce_bandwidth_time_s(")
    assert "2 * steps" in code_lines[line - 1]
    assert fixed(2.0, 8, 50.0) == pytest.approx(0.07)  # 3.5 GB / 50 GB/s


def test_0_6_buggy_code_really_doubles() -> None:
    namespace: dict[str, object] = {}
    exec(ex("0.6").answer_kind.code, namespace)  # type: ignore[attr-defined]
    buggy = namespace["ring_allreduce_bandwidth_time_s"]
    assert buggy(2.0, 8, 50.0) == pytest.approx(0.14)  # type: ignore[operator]
