"""Chapter 0 explorer: the prediction, the ring simulation, the two figures and the widget."""

from __future__ import annotations

import pytest

from workbook.explorers import ch00


def test_prediction_answer_is_about_the_same() -> None:
    # 8 GPUs: 2 x 7/8 x 1 GB = 1.75 GB; 1,000 GPUs: 2 x 999/1000 x 1 GB = 1.998 GB
    assert ch00.volume_ratio(8, 1000, 1.0) == pytest.approx(1.998 / 1.75)  # 1.1417
    assert ch00.PREDICTION.actual() == "About the same amount"
    assert ch00.PREDICTION.actual() in ch00.PREDICTION.options


@pytest.mark.parametrize(("ratio", "option"), [
    (1.14, "About the same amount"),
    (7.0, "Roughly 8x more"),
    (125.0, "Roughly 100x more"),  # 1000 / 8 GPUs, the "grows with N" guess
])
def test_closest_option(ratio: float, option: str) -> None:
    assert ch00.closest_volume_option(ratio) == option


def test_ring_on_four_gpus_step_by_step() -> None:
    steps = ch00.ring_steps(4)
    # start + 3 reduce-scatter + 3 all-gather steps
    assert [(s.phase, s.number) for s in steps] == [
        ("start", 0), ("reduce-scatter", 1), ("reduce-scatter", 2), ("reduce-scatter", 3),
        ("all-gather", 1), ("all-gather", 2), ("all-gather", 3)]
    assert steps[0].counts == ((1, 1, 1, 1),) * 4
    # After reduce-scatter GPU g holds the full sum (4) of exactly one chunk, (g + 1) mod 4.
    after_rs = steps[3].counts
    for g in range(4):
        assert [c for c in range(4) if after_rs[g][c] == 4] == [(g + 1) % 4]
    assert steps[-1].counts == ((4, 4, 4, 4),) * 4


def test_every_gpu_sends_one_chunk_per_step_and_two_n_minus_one_in_all() -> None:
    steps = ch00.ring_steps(5)
    for step in steps[1:]:
        assert sorted(src for src, _, _ in step.sends) == [0, 1, 2, 3, 4]
        assert sorted(dst for _, dst, _ in step.sends) == [0, 1, 2, 3, 4]
    sent_by_gpu_0 = sum(1 for s in steps for src, _, _ in s.sends if src == 0)
    assert sent_by_gpu_0 == 8  # 2 x (5 - 1) chunks of M/5 = 1.6 M


def test_ring_steps_rejects_impossible_sizes() -> None:
    with pytest.raises(ValueError):
        ch00.ring_steps(0)
    with pytest.raises(ValueError):
        ch00.ring_steps_figure(9)  # too many panels to read


def test_ring_steps_figure_draws_every_step() -> None:
    fig = ch00.ring_steps_figure(4)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert len(ax.patches) == 24  # 6 steps x 4 GPUs, one outlined received chunk each
    labels = [t.get_text() for t in ax.texts if not t.get_text().isdigit()
              and t.get_text() != "✔"]
    assert labels == ["start", "reduce-scatter 1", "reduce-scatter 2", "reduce-scatter 3",
                      "all-gather 1", "all-gather 2", "all-gather 3"]


def test_ring_time_splits_into_bandwidth_and_latency() -> None:
    t = ch00.ring_time(2.0, 8, 50.0, 5.0)
    assert t.bandwidth_ms == pytest.approx(70.0)  # 2 x 7/8 x 2 GB / 50 GB/s = 0.07 s
    assert t.latency_ms == pytest.approx(0.07)  # 14 steps x 5 us
    assert t.total_ms == pytest.approx(70.07)
    assert t.tree_ms == pytest.approx(240.03)  # 2 x 3 rounds x (5 us + 2 GB / 50 GB/s)


def test_crossover_message_size() -> None:
    # M = N B alpha = 8 x 50e9 B/s x 5e-6 s = 2e6 bytes = 2 MB
    assert ch00.crossover_message_mb(8, 50.0, 5.0) == pytest.approx(2.0)


def test_time_figure_has_four_curves_and_a_marker() -> None:
    fig = ch00.allreduce_time_figure(1.0, 50.0, 5.0, 8)
    assert len(fig.axes) == 1
    assert len(fig.axes[0].lines) == 5  # bandwidth, latency, ring total, tree, N marker


def test_no_message_for_a_large_gradient() -> None:
    assert ch00.ring_messages(1.0, 8, 50.0, 5.0) == []


def test_small_message_on_many_gpus_fails_twice() -> None:
    # 10 KB on 64 GPUs: latency 126 x 5 us = 0.63 ms; bandwidth 2 x 63/64 x 1e-5 GB / 50 GB/s
    # = 0.0004 ms; tree 2 x 6 x (5 us + 0.2 us) = 0.0624 ms, faster than the ring.
    messages = ch00.ring_messages(1e-5, 64, 50.0, 5.0)
    assert len(messages) == 2
    assert messages[0].startswith("✘ Latency-bound: 126 steps x 5 µs")
    assert messages[1].startswith("✘ The ring loses")


def test_latency_bound_ring_can_still_beat_the_tree() -> None:
    # 1 KB on 2 GPUs: latency 2 x 5 us dominates 2 x 1e-6 GB / 2 / 50 GB/s = 0.02 us, and
    # the tree (2 rounds of 5 us + 0.02 us) is slower than the ring, so one message only.
    messages = ch00.ring_messages(1e-6, 2, 50.0, 5.0)
    assert len(messages) == 1 and messages[0].startswith("✘ Latency-bound")


def test_summary_states_the_volume() -> None:
    first = ch00.ring_summary(1.0, 8, 50.0, 5.0)[0]
    assert "= 1.75 GB in 14 steps" in first
    assert "receive 7 GB" in first  # the naive root: (8 - 1) x 1 GB


def test_explorer_redraws_when_a_slider_moves() -> None:
    box = ch00.explorer()
    assert set(box.controls) == {"n_gpus", "message_gb", "link_gb_per_s", "latency_us"}
    assert "✔ Bandwidth-bound" in box.status.value
    first = box.state["figure"]
    box.controls["message_gb"].value = 1e-5
    box.controls["n_gpus"].value = 64
    assert "✘ Latency-bound" in box.status.value
    assert box.state["figure"] is not first
    assert len(box.state["figure"].axes) == 1
