"""Chapter 9 explorer: prediction, 3D grid, real-run table, reconstruction and the planner.

Expected values are worked out by hand in the comments (Llama 3 405B: d = 16,384, 128 heads,
8 KV heads, FFN 53,248, 126 layers, vocabulary 128,256; Table 4 layout TP 8, PP 16, DP 128).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware, models, performance, planner
from workbook.explorers import ch09
from workbook.explorers.ch09_planner import (
    PlannerExplorer,
    PlannerSettings,
    plan_numbers,
    planner_messages,
    published_settings,
    summary_lines,
)
from workbook.explorers.ch09_speed import mfu_by_gpu_count
from workbook.prediction_page import prediction_for

PAPER = PlannerSettings()  # TP 8, CP 1, PP 16, DP 128, FSDP, full recompute, v = 2


# -- prediction -------------------------------------------------------------------------

def test_prediction_is_about_three_billion() -> None:
    # 2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248
    # = 536,870,912 + 33,554,432 + 2,617,245,696 = 3,187,671,040: nearest to 3e9.
    assert ch09.PREDICTION.actual() == "about 3 billion"
    assert prediction_for("ch09") is ch09.PREDICTION
    assert ch09.PREDICTION.options == ("about 2 billion", "about 3 billion", "about 4 billion")


# -- the 3D grid ------------------------------------------------------------------------

@pytest.mark.parametrize(("rank", "expected"), [
    (0, (0, 0, 0, 0)),
    (7, (7, 0, 0, 0)),        # last GPU of node 0: still TP group 0
    (8, (0, 0, 1, 0)),        # next node: stage 1 of replica 0
    (127, (7, 0, 15, 0)),     # 8 x 16 = 128 GPUs per replica
    (128, (0, 0, 0, 1)),
    (16383, (7, 0, 15, 127)),
])
def test_rank_coordinates_follow_tp_cp_pp_dp(rank: int, expected: tuple[int, ...]) -> None:
    assert ch09.rank_coordinates(rank, 8, 1, 16, 128) == expected


def test_rank_coordinates_with_context_parallelism() -> None:
    # TP 8, CP 2, PP 2, DP 2: rank 8 is CP rank 1; rank 16 stage 1; rank 32 replica 1.
    assert ch09.rank_coordinates(8, 8, 2, 2, 2) == (0, 1, 0, 0)
    assert ch09.rank_coordinates(16, 8, 2, 2, 2) == (0, 0, 1, 0)
    assert ch09.rank_coordinates(32, 8, 2, 2, 2) == (0, 0, 0, 1)
    with pytest.raises(ValueError, match="outside"):
        ch09.rank_coordinates(64, 8, 2, 2, 2)


def test_grid_figure_draws_every_tp_group_and_one_node() -> None:
    fig = ch09.grid_figure()
    grid_ax, node_ax = fig.axes
    assert grid_ax.images[0].get_array().shape == (16, 128)  # stages x replicas
    assert node_ax.images[0].get_array().shape == (8, 1)
    # the degrees and layer counts are exercises 9.1 and 9.2: the picture does not print them
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert not any("128" in t or "layers)" in t for t in texts), texts
    texts = {t.get_text() for t in grid_ax.texts}
    # node of (stage 15, replica 127) = (127 x 16 + 15) x 8 / 8 = 2,047
    assert {"node 0", "node 15", "node 2,032", "node 2,047"} <= texts
    assert len(node_ax.texts) == 8


# -- the real runs ----------------------------------------------------------------------

def test_real_runs_table_has_four_sourced_rows() -> None:
    table = ch09.real_runs_table()
    assert [row[0] for row in table.rows] == ["Llama 3 405B [1]", "DeepSeek-V3 [2]",
                                              "PaLM 540B [3]", "GPT-3 175B [4]"]
    llama, deepseek, _, gpt3 = table.rows
    assert llama[1] == "405.9B (paper 405B)"  # 126 x 3,187,703,808 + 2 x 128,256 x 16,384 + d
    assert llama[3] == "8 / 16 / 128 / 1 / 1"
    assert "37.6B active" in deepseek[1]
    assert gpt3[3] == "n/p / n/p / n/p / n/p / n/p"
    assert len(table.footnotes) == 4 and all("§" in n or "Table" in n for n in table.footnotes)
    page = table._repr_html_()
    assert page.count("<tr>") == 5  # header + four runs


# -- the reconstruction -----------------------------------------------------------------

def _row(table: ch09.Table, quantity: str) -> tuple[str, ...]:
    return next(row for row in table.rows if row[0].startswith(quantity))


def test_reconstruction_agrees_where_the_paper_is_exact() -> None:
    table = ch09.reconstruction()
    assert _row(table, "DP =")[1:4] == ("128", "128", "✔ agrees")  # 16,384 / (8 x 1 x 16)
    assert _row(table, "Layers")[1] == "7 + 8 x 14 + 7"
    assert _row(table, "Tokens per step")[3] == "✔ agrees"  # 128 x 16 x 8192 = 16 x 2^20
    # 400 / 989.4 = 40.43 %, 1.4 % below the paper's rounded 41 %
    assert _row(table, "MFU at 400")[1:4] == ("40.4%", "41%", "✔ within 1.4%")


def test_reconstruction_flags_the_gpu_hour_gap() -> None:
    table = ch09.reconstruction(mfu=0.41)
    # 6 x 405.853e9 x 15.6e12 = 3.7988e25 FLOPs; / (16384 x 989.4e12 x 0.41) = 5.716e6 s
    # = 66.15 days; x 16384 x 24 = 26.01M GPU-hours, 15.6 % below 30.84M.
    assert _row(table, "Days")[1] == "66.2"
    assert _row(table, "GPU-hours")[1:4] == ("26.01M", "30.84M", "✘ below by 16%")
    # 3.7988e25 / (30.84e6 x 3600 x 989.4e12) = 0.3458
    assert _row(table, "Average MFU")[1] == "34.6%"
    # At 35 % MFU: 66.15 x 0.41 / 0.35 = 77.49 days, 30.47M GPU-hours, 1.2 % below.
    assert _row(ch09.reconstruction(mfu=0.35), "GPU-hours")[3] == "✔ within 1.2%"


def test_stage_text_collapses_runs() -> None:
    assert ch09.stage_text((7, 8, 8, 8, 7)) == "7 + 8 x 3 + 7"
    assert ch09.stage_text((4,)) == "4"


# -- the planner ------------------------------------------------------------------------

def test_paper_layout_numbers() -> None:
    numbers = plan_numbers(PAPER)
    # Stage 1 (8 layers): 8 x (3,187,671,040 + 2 x 16,384 norm) / 8 = 3,187,703,808 params;
    # FSDP over DP 128: weights and gradients 2 / 128 bytes each = 0.04981 GB; Adam 12 / 128
    # bytes = 0.2988 GB; activations 8 layers x 15 in flight x (1 + 15/32) x 2 x 8192 x
    # 16384 / 8 bytes = 5.914 GB.
    assert numbers["memory"]["weights"] == pytest.approx(0.049807872)
    assert numbers["memory"]["optimizer"] == pytest.approx(0.298847232)
    assert numbers["memory"]["activations"] == pytest.approx(5.91396864)
    assert numbers["memory"]["total"] == pytest.approx(6.312431616)
    assert numbers["bubble"] == pytest.approx(15 / 32) and numbers["m"] == 16
    # days and cost are the step-time model's prediction for this layout
    est = performance.estimate(models.LLAMA3_405B, PAPER.config(), hardware.H100_SXM)
    days = 15.6e12 / est.tokens_per_s / 86400
    assert numbers["estimate"] == est and numbers["mfu"] == est.mfu
    assert numbers["days"] == pytest.approx(days)
    assert numbers["cost_usd"] == pytest.approx(days * 24 * 16384 * 2.0)


def test_what_if_mfu_replaces_the_prediction_and_says_so() -> None:
    what_if = replace(PAPER, what_if_mfu=True)
    numbers = plan_numbers(what_if)
    # 6 x (126 x 3,187,671,040 + 128,256 x 16,384) + 3 x 126 x 2 x 8192 x 16384 FLOPs per
    # token (causal attention), x 15.6e12 tokens / (16384 x 989.4e12 x 0.41) / 86400 s
    per_token = 6 * (126 * 3_187_671_040 + 128_256 * 16_384) + 3 * 126 * 2 * 8192 * 16384
    days = per_token * 15.6e12 / (16384 * 989.4e12 * 0.41) / 86400
    assert numbers["estimate"] is None and numbers["days"] == pytest.approx(days)
    assert "What-if at 41% MFU" in " ".join(summary_lines(what_if, numbers))
    assert "Predicted for this layout" in " ".join(summary_lines(PAPER, plan_numbers(PAPER)))


def test_invalid_layout_has_no_speed_prediction() -> None:
    bad = replace(PAPER, tp=16)
    numbers = plan_numbers(bad)
    assert numbers["days"] is None
    assert "No speed prediction" in " ".join(summary_lines(bad, numbers))


def test_paper_layout_has_no_problems() -> None:
    assert planner_messages(PAPER) == []


def test_tp_across_nodes_and_gpus_not_multiplying_out() -> None:
    messages = planner_messages(replace(PAPER, tp=16))
    text = "\n".join(messages)
    assert "16 x 1 x 16 x 128 = 32,768 GPUs, but the cluster has 16,384" in text
    assert "TP=16 does not fit inside one 8-GPU node" in text
    assert "DP = 16,384 / (TP x CP x PP) = 64 would use every GPU" in text  # 16384 / 256
    assert all(m.startswith("✘ ") for m in messages)


def test_out_of_memory_in_words() -> None:
    # Selective recompute, v = 1: 34 x 8192 x 16384 / 8 = 570.4 MB per layer per micro-batch;
    # stage 1: 8 x 15 x 570.4 MB = 68.45 GB + 13.05 GB of model state = 81.5 GB > 80 GB.
    # with ZeRO-1 (each GPU keeps its stage's BF16 weights and gradients)
    messages = planner_messages(replace(PAPER, zero_stage=1, recompute="selective",
                                        virtual_stages=1, max_bubble_pct=100))
    assert len(messages) == 1
    assert messages[0].startswith("✘ Out of memory: Needs 81.5 GB per GPU")


def test_bubble_above_target() -> None:
    # v = 1: (16 - 1) / 16 = 93.75 % of compute time, not below 50 %.
    messages = planner_messages(replace(PAPER, virtual_stages=1))
    assert len(messages) == 1
    assert "Bubble 93.8% of compute time is not below your 50% target" in messages[0]


def test_more_stages_than_layers_still_renders() -> None:
    bad = replace(PAPER, pp=128, dp=16)  # 8 x 128 x 16 = 16,384 GPUs, but 126 layers
    assert any("PP=128 stages but only 126 layers" in m for m in planner_messages(bad))
    assert plan_numbers(bad)["memory"] is None
    fig = ch09.planner_figure(bad)
    assert len(fig.axes) == 2


def test_planner_figure_bars() -> None:
    fig = ch09.planner_figure(PAPER)
    memory_ax, comm_ax = fig.axes
    assert len(memory_ax.patches) == 4  # weights, gradients, optimizer, activations
    assert len(comm_ax.patches) == 5    # TP+SP, PP, DP, EP, CP
    assert "6.3 GB of 80 GB (fits)" in memory_ax.get_title(loc="left")


def test_published_layout_of_deepseek() -> None:
    s = published_settings(replace(PAPER, model="deepseek-v3"))
    assert s is not None
    assert (s.gpu, s.n_gpus, s.tp, s.pp, s.dp, s.ep, s.seq_len) == (
        "H800", 2048, 1, 16, 128, 64, 4096)
    assert published_settings(replace(PAPER, model="gpt3-175b")) is None


# -- the widgets ------------------------------------------------------------------------

def test_explorer_builds_and_rerenders_on_a_slider() -> None:
    box = ch09.explorer()
    assert box.children
    view = PlannerExplorer()
    assert "✔ This layout works" in view.status.value
    view.controls["tp"].value = 16
    assert "TP=16 does not fit inside one 8-GPU node" in view.status.value
    view.controls["tp"].value = 8
    view.controls["recompute"].value = "selective"
    assert "Out of memory" in view.status.value


def test_recommend_button_loads_the_fastest_layout_and_compares() -> None:
    view = PlannerExplorer()
    view.recommend()
    s = view.settings()
    assert planner.validate(s.arch, s.config(), s.n_gpus,
                            global_batch_seqs=s.global_batch_seqs) == []
    assert "Recommended" in view.note.value
    assert "as fast as the fastest layout found" in view.status.value
    fastest = performance.estimate(s.arch, s.config(), s.gpu_spec).step_time_s
    view.apply(PAPER)  # back to the paper's layout, which the model predicts is slower
    slower = performance.estimate(s.arch, PAPER.config(), s.gpu_spec).step_time_s
    assert slower > fastest
    assert "more and takes" in view.status.value and "per step it pays" in view.status.value


def test_load_published_for_a_model_without_layout() -> None:
    view = PlannerExplorer(replace(PAPER, model="gpt3-175b"))
    view.load_published()
    assert "No published layout" in view.note.value
    view.controls["model"].value = "deepseek-v3"
    view.load_published()
    assert view.settings().ep == 64


def test_load_published_palm_warns_about_tpus() -> None:
    view = PlannerExplorer(replace(PAPER, model="palm-540b"))
    view.load_published()
    assert "TPU v4 chips" in view.note.value
    assert "TP=12 does not fit inside one 8-GPU node" in view.status.value


# -- MFU against GPU count --------------------------------------------------------------

def test_mfu_scaling_keeps_the_layout_and_grows_dp() -> None:
    rows = mfu_by_gpu_count(PAPER)
    # TP 8 x CP 1 x PP 16 = 128 GPUs per replica: 128, 256, ..., 128 x 2,048
    assert [n for n, _, _ in rows] == [128 * 2**k for k in range(12)]
    # across nodes the ring's latency term grows with DP, the rest stays: MFU never rises
    mfus = [mfu for _, mfu, _ in rows]
    assert all(b <= a for a, b in zip(mfus, mfus[1:], strict=False))
    here = performance.estimate(models.LLAMA3_405B, PAPER.config(), hardware.H100_SXM)
    assert dict((n, mfu) for n, mfu, _ in rows)[16384] == pytest.approx(here.mfu)
    fig = ch09.mfu_scaling_figure(PAPER)
    assert len(fig.axes[0].lines) == 2  # the curve and this layout's marker
