"""Chapter 6 explorer: the prediction, the timing model, the failure messages and the figures."""

from __future__ import annotations

import matplotlib
import pytest

from workbook.explorers import ch06

matplotlib.use("Agg")


def test_prediction_is_the_ring_volume_of_one_tp_allreduce() -> None:
    # 4096 x 8192 x 2 bytes = 67,108,864 B; x 2 x 3/4 = 100,663,296 B = 100.66 MB
    # (TP = 4: not exercise 6.2's TP = 8).
    assert ch06.PREDICTION.unit == "MB"
    assert ch06.PREDICTION.actual() == pytest.approx(100.663296)


def test_layer_flops_follow_the_megatron_count() -> None:
    # 72 x 4096 x 8192^2 x (1 + 4096 / 49152) = 78 x 4096 x 67,108,864 = 2.1440476741632e13.
    assert ch06.layer_flops(8192, 4096) == pytest.approx(2.1440476741632e13, rel=1e-12)


def test_layer_times_inside_one_server() -> None:
    compute, comm = ch06.layer_times_ms(8192, 4096, 8)
    # 2.1440e13 / 8 / (989.4e12 x 0.4) s = 6.7719 ms.
    assert compute == pytest.approx(6.77193, rel=1e-4)
    # 4 x (2 x 7/8 x 0.067108864 GB / 450 GB/s) = 4 x 0.260979 ms = 1.043916 ms.
    assert comm == pytest.approx(1.043916, rel=1e-5)


def test_tp_16_runs_its_ring_at_the_network_speed() -> None:
    compute, comm = ch06.layer_times_ms(8192, 4096, 16)
    assert compute == pytest.approx(3.385966, rel=1e-5)  # half of TP = 8
    # 4 x (2 x 15/16 x 0.067108864 GB / 50 GB/s) = 4 x 2.5165824 ms = 10.0663296 ms.
    assert comm == pytest.approx(10.0663296, rel=1e-6)


def test_a_small_group_spread_across_servers_is_slow_too() -> None:
    _, comm = ch06.layer_times_ms(8192, 4096, 4, across_servers=True)
    # 4 x (2 x 3/4 x 0.067108864 GB / 50 GB/s) = 4 x 2.01326592 ms = 8.05306368 ms.
    assert comm == pytest.approx(8.05306368, rel=1e-6)
    assert ch06.layer_times_ms(8192, 4096, 1)[1] == 0.0


def test_a_sound_layout_has_no_problems() -> None:
    assert ch06.tp_problems(8192, 8, 64, 8) == []
    assert ch06.tp_problems(16384, 8, 128, 8) == []


def test_uneven_splits_are_named() -> None:
    problems = ch06.tp_problems(8192, 6, 64, 8)
    assert problems == [
        "✘ d = 8192 is not divisible by TP = 6: the weight matrices cannot be split evenly.",
        "✘ 64 query heads do not divide among TP = 6 GPUs: a head cannot be cut in two.",
        "✘ 8 K/V heads do not divide evenly among TP = 6 GPUs.",
    ]


def test_crossing_a_server_boundary_is_named() -> None:
    assert ch06.tp_problems(8192, 16, 64, 8) == [
        "✘ TP = 16 spans 2 8-GPU servers: every AllReduce crosses the inter-node network."]
    assert ch06.tp_problems(8192, 4, 64, 8, across_servers=True) == [
        "✘ The TP group of 4 GPUs is spread across servers: every AllReduce runs at the "
        "inter-node speed."]


def test_split_figure_has_one_patch_per_gpu_on_each_side() -> None:
    fig = ch06.split_shapes_figure(8192, 8)
    assert len(fig.axes) == 2
    assert [len(ax.patches) for ax in fig.axes] == [8, 8]
    assert "[8192, 1024]" in fig.axes[0].get_title()
    assert "[1024, 8192]" in fig.axes[1].get_title()


def test_layer_time_figure_stacks_two_bars_per_tp_degree() -> None:
    fig = ch06.layer_time_figure(tp_values=(1, 2, 4, 8, 16, 32), highlight=8)
    (ax,) = fig.axes
    assert len(ax.patches) == 12
    assert len(ax.lines) == 1  # the server boundary
    assert "TP=8\n(yours)" in [t.get_text() for t in ax.get_xticklabels()]
    small = ch06.layer_time_figure(tp_values=(1, 2, 4, 8)).axes[0]
    assert (len(small.patches), len(small.lines)) == (8, 0)


def test_explorer_reports_and_redraws_when_a_slider_moves() -> None:
    box = ch06.explorer()
    assert "✔ A sound layout" in box.status.value
    box.controls["tp_degree"].value = 16
    assert "✘ TP = 16 spans 2 8-GPU servers" in box.status.value
    box.controls["d_model"].value = 8192
    box.controls["tp_degree"].value = 6
    assert "not divisible by TP = 6" in box.status.value
    box.controls["heads"].value = "40 query / 40 K/V heads (Llama 2 13B, no GQA)"
    box.controls["tp_degree"].value = 8
    assert "Per GPU: 5 query heads and 5 K/V head(s)." in box.status.value  # 40 / 8
    box.controls["tp_degree"].value = 16
    assert "40 query heads do not divide among TP = 16 GPUs" in box.status.value
    box.controls["tp_degree"].value = 4
    box.controls["placement"].value = "across servers"
    assert "The TP group of 4 GPUs is spread across servers" in box.status.value
