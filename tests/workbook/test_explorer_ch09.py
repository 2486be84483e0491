"""Chapter 9 explorer: prediction, 3D grid, real-run table, reconstruction and the planner.

Expected values are worked out by hand in the comments (Llama 3 405B: d = 16,384, 128 heads,
8 KV heads, FFN 53,248, 126 layers, vocabulary 128,256; Table 4 layout TP 8, PP 16, DP 128).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware, models, performance, planner
from solutions.stack import LLAMA3
from workbook.explorers import ch09
from workbook.explorers.ch09_planner import (
    PlannerSettings,
    plan_numbers,
    planner_messages,
    published_settings,
    summary_lines,
    with_layout,
)
from workbook.explorers.ch09_planner_view import PlannerExplorer
from workbook.explorers.ch09_speed import mfu_by_gpu_count
from workbook.learner.prediction_page import prediction_for

PAPER = PlannerSettings()  # TP 8, CP 1, PP 16, DP 128, Llama 3's FSDP, no recompute, v = 8
# every exercise of the chapter answered: the tables show all they hold
ANSWERED = frozenset(f"9.{k}" for k in range(1, 14))


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
    # which nodes are neighbours is exercise 9.8's rank order: no cell is numbered yet
    assert not any(t.get_text().startswith("node ") for t in grid_ax.texts)
    assert not any("consecutive" in t for t in texts)
    assert len(node_ax.texts) == 8


def test_grid_figure_after_9_8_numbers_the_nodes_in_rank_order() -> None:
    grid_ax, _ = ch09.grid_figure(show_order=True).axes
    texts = {t.get_text() for t in grid_ax.texts}
    # order [TP, CP, PP, DP]: rank = t + 8 (stage + 16 replica), node = rank // 8, so
    # (stage 15, replica 0) is node 15 and (stage 0, replica 127) is 127 x 16 = 2,032;
    # (stage 15, replica 127) = (127 x 16 + 15) x 8 / 8 = 2,047
    assert {"node 0", "node 15", "node 2,032", "node 2,047"} <= texts
    assert any("consecutive nodes" in t for t in texts)


# -- the real runs ----------------------------------------------------------------------

def test_real_runs_table_has_four_sourced_rows() -> None:
    table = ch09.real_runs_table(ANSWERED)
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
    table = ch09.reconstruction(done=ANSWERED)
    assert _row(table, "DP =")[1:4] == ("128", "128", "✔ agrees")  # 16,384 / (8 x 1 x 16)
    assert _row(table, "Layers")[1] == "7 + 8 x 14 + 7"
    # 128 x 16 x 8192 = 16,777,216 = 16.78M (decimal, as the course writes every M)
    assert _row(table, "Tokens per step")[1:4] == ("16.78M", "16M (2,048 sequences of 8,192)",
                                                   "✔ agrees")
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
    # Stage 1 (8 layers): 8 x (3,187,671,040 + 2 x 16,384 norm) / 8 = 3,187,703,808 params.
    # Llama 3's FSDP: gathered BF16 weights 2 B + their 2/128 shard = 6.4252 GB; FP32 gradient
    # shard 4/128 = 0.0996 GB, of which the one-layer chunk in progress (1/8 of the stage) has
    # none yet, plus that chunk's accumulator, 3,187,703,808 / 8 x 4 B = 1.5939 GB; Adam
    # 12/128 = 0.2988 GB. Activations, no recomputation, flash
    # attention: 31.78125 / 8 x 8192 x 16384 = 0.5332 GB per layer per micro-batch, x 128
    # one-layer chunk forwards in flight (all m v = 16 x 8) = 68.2497 GB. Buffers: one
    # whole-sequence activation gradient at a TP boundary (synchronous sequence parallelism),
    # 8192 x 16384 x 2 B = 0.2684 GB.
    mem = numbers["memory"]
    assert mem["weights"] == pytest.approx(6.425214672)
    assert mem["gradients"] == pytest.approx(0.099615744 * 7 / 8 + 1.593851904)
    assert mem["optimizer"] == pytest.approx(0.298847232)
    assert mem["activations"] == pytest.approx(68.249714688)
    assert mem["buffers"] == pytest.approx(0.268435456)
    assert mem["total"] == pytest.approx(76.923228544)
    assert numbers["bubble"] == pytest.approx(15 / 128) and numbers["m"] == 16
    # days and cost are the step-time model's prediction for this layout on Llama 3's stack
    est = performance.estimate(models.LLAMA3_405B, PAPER.config(), hardware.H100_SXM,
                               stack=LLAMA3)
    days = 15.6e12 / est.tokens_per_s / 86400
    assert numbers["estimate"] == est and numbers["mfu"] == est.mfu
    assert numbers["days"] == pytest.approx(days)
    assert numbers["cost_usd"] == pytest.approx(days * 24 * 16384 * 2.0)


def test_default_is_the_paper_run_as_published() -> None:
    c = PAPER.config()
    assert (c.tp, c.cp, c.pp, c.dp, c.grad_accum, c.seq_len) == (8, 1, 16, 128, 16, 8192)
    assert c.activation_recompute == "none" and c.zero_stage == 3 and c.virtual_stages == 8
    assert PAPER.software is LLAMA3 and not LLAMA3.reshard_after_forward


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
    bad = with_layout(PAPER, tp=16)
    numbers = plan_numbers(bad)
    assert numbers["days"] is None
    assert "No speed prediction" in " ".join(summary_lines(bad, numbers))


def test_paper_layout_has_no_problems() -> None:
    assert planner_messages(PAPER) == []


def test_tp_across_nodes_and_gpus_not_multiplying_out() -> None:
    messages = planner_messages(with_layout(PAPER, tp=16))
    text = "\n".join(messages)
    assert "16 x 1 x 16 x 128 = 32,768 GPUs, but the cluster has 16,384" in text
    assert "TP=16 does not fit inside one 8-GPU node" in text
    assert "DP = 16,384 / (TP x CP x PP) = 64 would use every GPU" in text  # 16384 / 256
    assert all(m.startswith("✘ ") for m in messages)


def test_out_of_memory_in_words() -> None:
    # ZeRO-1 on Llama 3's stack: each GPU keeps its stage's BF16 weights (6.38 GB) and FP32
    # gradients (12.75 GB) whole, Adam 12/128 (0.30 GB), beside the 68.25 GB of activations
    # and a 0.27 GB TP gradient buffer: 87.9 GB > 80 GB
    messages = planner_messages(with_layout(PAPER, zero_stage=1))
    assert len(messages) == 1
    assert messages[0].startswith("✘ Out of memory: Needs 87.9 GB per GPU")


def test_bubble_above_target() -> None:
    # v = 4: (16 - 1) / (16 x 4) = 23.4 % of compute time, not below a 20 % target; memory
    # still fits (the chunk in progress holds 2 layers: 3.19 GB of FP32 gradient, 78.3 GB)
    messages = planner_messages(replace(with_layout(PAPER, virtual_stages=4),
                                        max_bubble_pct=20))
    assert len(messages) == 1
    assert "Bubble 23.4% of compute time is not below your 20% target" in messages[0]
    # v = 1: the whole 8-layer stage's FP32 gradient accumulates at once: out of memory too
    assert "Out of memory" in planner_messages(with_layout(PAPER, virtual_stages=1))[0]


def test_more_stages_than_layers_still_renders() -> None:
    bad = with_layout(PAPER, pp=128, dp=16)  # 8 x 128 x 16 = 16,384 GPUs, but 126 layers
    assert any("PP=128 stages but only 126 layers" in m for m in planner_messages(bad))
    assert plan_numbers(bad)["memory"] is None
    fig = ch09.planner_figure(bad)
    assert len(fig.axes) == 2


def test_planner_figure_bars() -> None:
    fig = ch09.planner_figure(PAPER)
    memory_ax, comm_ax = fig.axes
    assert len(memory_ax.patches) == 4  # weights, gradients, optimizer, activations
    assert len(comm_ax.patches) == 5    # TP+SP, PP, DP, EP, CP
    assert "76.9 GB of 80 GB (fits)" in memory_ax.get_title(loc="left")


def test_published_layout_of_deepseek() -> None:
    s = published_settings(replace(PAPER, model="deepseek-v3"))
    assert s is not None
    c = s.layout
    assert (s.gpu, s.n_gpus, c.tp, c.pp, c.dp, c.ep, c.seq_len) == (
        "H800", 2048, 1, 16, 128, 64, 4096)
    # only the degrees are published: none of Llama 3's chunks, stack or ZeRO-3 carries over
    # (DeepSeek-V3 report §3.2: ZeRO-1 data parallelism, DualPipe rather than interleaving)
    assert (c.virtual_stages, c.zero_stage, s.stack) == (1, 1, "megatron-core-2024")
    assert not any("virtual_stages=" in m for m in planner_messages(s))
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
    view.controls["zero_stage"].value = 1
    assert "Out of memory" in view.status.value


def _answer(*exercise_ids: str) -> None:
    """The learner has seen these exercises' solutions (so the planner may show them)."""
    from workbook.learner import progress_log

    for exercise_id in exercise_ids:
        progress_log.record_event("solution", exercise_id)


def test_recommend_and_the_papers_layout_wait_for_the_exercises_they_answer() -> None:
    view = PlannerExplorer(ch09.opening_settings())
    before = view.settings()
    assert view.recommend_button.disabled
    assert "after 9.1, 9.10 and 9.13" in view.recommend_button.description
    view.recommend()
    assert "answer them first" in view.note.value and view.settings() == before
    view.load_published()
    assert "answer them first" in view.note.value and view.settings() == before
    _answer("9.1", "9.3", "9.10")  # the published layout may show now; the search not yet
    view.load_published()
    assert view.settings().config() == PAPER.config()
    view.recommend()
    assert "exercise 9.13" in view.note.value
    _answer("9.13")
    assert not PlannerExplorer().recommend_button.disabled


def test_recommend_button_loads_the_fastest_layout_and_compares() -> None:
    _answer("9.1", "9.10", "9.13")
    view = PlannerExplorer()
    view.recommend()
    s = view.settings()
    assert planner.validate(s.arch, s.config(), s.n_gpus, global_batch_seqs=s.global_batch_seqs,
                            stack=s.software) == []
    assert "Recommended" in view.note.value
    assert "as fast as the fastest layout found" in view.status.value
    fastest = performance.estimate(s.arch, s.config(), s.gpu_spec, stack=LLAMA3).step_time_s
    # on Llama 3's software the paper's own layout is the fastest the model finds
    assert s.config() == PAPER.config()
    slower_s = with_layout(PAPER, virtual_stages=4)
    view.apply(slower_s)
    slower = performance.estimate(s.arch, slower_s.config(), s.gpu_spec,
                                  stack=LLAMA3).step_time_s
    assert slower > fastest
    assert "more and takes" in view.status.value and "per step it pays" in view.status.value


def test_load_published_for_a_model_without_layout() -> None:
    view = PlannerExplorer(replace(PAPER, model="gpt3-175b"))
    view.load_published()
    assert "No published layout" in view.note.value
    view.controls["model"].value = "deepseek-v3"
    view.load_published()
    assert view.settings().layout.ep == 64


def test_load_published_palm_warns_about_tpus() -> None:
    view = PlannerExplorer(replace(PAPER, model="palm-540b"))
    view.load_published()
    assert "TPU v4 chips" in view.note.value
    assert "TP=12 does not fit inside one 8-GPU node" in view.status.value


# -- MFU against GPU count --------------------------------------------------------------

def test_mfu_scaling_keeps_the_layout_and_grows_dp() -> None:
    rows = mfu_by_gpu_count(PAPER)
    # TP 8 x CP 1 x PP 16 = 128 GPUs per replica: 128, 256, ..., 128 x 2,048. Below DP 16
    # the sharded FP32 gradients and Adam state ((4 + 12)/DP x 3.19B, plus the 2/DP weight
    # shard) no longer fit the 80 GB budget beside 6.4 GB of gathered weights, 68.25 GB of
    # activations and a 0.27 GB TP gradient buffer: DP 8 needs 83.5 GB, DP 16 79.97 GB
    assert [n for n, _, _ in rows] == [128 * 2**k for k in range(4, 12)]
    # across nodes the ring's latency term grows with DP, the rest stays: MFU never rises
    mfus = [mfu for _, mfu, _ in rows]
    assert all(b <= a for a, b in zip(mfus, mfus[1:], strict=False))
    here = performance.estimate(models.LLAMA3_405B, PAPER.config(), hardware.H100_SXM,
                                stack=LLAMA3)
    assert dict((n, mfu) for n, mfu, _ in rows)[16384] == pytest.approx(here.mfu)
    fig = ch09.mfu_scaling_figure(PAPER)
    assert len(fig.axes[0].lines) == 2  # the curve and this layout's marker


# -- the chapter's account agrees with the measurements it quotes ---------------------------

def _validation_rows() -> dict[str, list[str]]:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "validation.md").read_text("utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4:
            rows[cells[0]] = cells[1:]
    return rows


def _chapter() -> str:
    from pathlib import Path

    path = Path(__file__).parents[2] / "workbook" / "chapters" / "ch09_capstone_llama3_405b.md"
    return path.read_text("utf-8")


def test_chapter_quotes_the_held_out_errors_of_docs_validation() -> None:
    rows, text = _validation_rows(), " ".join(_chapter().split())
    fit, held = rows["Model, fit rows"], rows["Model, held-out rows"]
    base = next(v for k, v in rows.items() if k.startswith("Constant") and "held-out" in k)
    assert f"chosen on {fit[0]} of {int(fit[0]) + int(held[0])} published runs" in text
    assert f"on the {held[0]} others" in text
    assert f"median error is {held[1]} and {held[2]} fall within 15%" in text
    assert f"against {base[1]} and {base[2]} for a constant share of peak" in text
    llama = ("llama3-t4-16384gpu-s8192", "llama3-t4-8192gpu-s8192",
             "llama3-t4-16384gpu-s131072")
    for run, words in zip(llama, ("8K: {}", "{} (8,192 GPUs)", "{} (128K context)"),
                          strict=True):
        assert words.format(rows[run][4]) in text, run
    # the same rows predicted with constants fitted on the other sources only
    left_out = [rows[run][6] for run in llama]
    assert "the three are {}, {} and {}".format(*left_out) in text


def test_chapter_tells_one_account_of_llama3() -> None:
    text = " ".join(_chapter().split())
    for stale in ("full activation recomputation and two model chunks",
                  "interleaving cannot help", "without saying which count it uses",
                  "median error of about 2%", "§5.1), plus"):
        assert stale not in text
    for fact in ("without activation checkpointing", "do not reshard after forward",
                 "$v = 8$", "m \\ge p", "Table 4 prints DP = 4", "micro-batches of one sequence "
                 "are assumed"):
        assert fact in text, fact


def test_recommendation_puts_the_paper_first_on_its_own_software() -> None:
    table = ch09.recommendation("llama3", top=3, done=ANSWERED)
    assert table.rows[0][1].startswith("TP8 CP1 PP16 DP128 v8 b1 m16 none ZeRO-3")
    other = ch09.recommendation("megatron-core-2024", top=2, done=ANSWERED)
    assert not other.rows[0][1].startswith("TP8 CP1 PP16 DP128 v8 b1 m16 none ZeRO-3")
    assert "saves" in other.rows[0][4]   # the breakdown says why it beats the paper's layout


# -- nothing answers an exercise before it is answered ------------------------------------

def _cells(table: ch09.Table) -> str:
    return str(table)


def test_tables_withhold_each_answer_until_its_exercise_is_answered() -> None:
    runs = ch09.real_runs_table(frozenset())
    # DP of every published run is 9.1's question; its notes state 9.1, 9.4 and 9.8's answers
    assert [row[3].split(" / ")[2] for row in runs.rows] == ["?", "?", "?", "n/p"]
    assert not any("[TP, CP, PP, DP]" in n or "3.8e25" in n for n in runs.footnotes)
    assert "after 9.1, 9.4 and 9.8" in runs.footnotes[0]
    assert "DP 128" not in _cells(runs) and " 128 " not in _cells(runs)
    # 9.1 alone opens the column but not the notes (the rank order is 9.8)
    runs = ch09.real_runs_table(frozenset({"9.1"}))
    assert runs.rows[0][3] == "8 / 16 / 128 / 1 / 1"
    assert "after 9.4 and 9.8" in runs.footnotes[0]
    table = ch09.reconstruction(done=frozenset({"9.2"}))
    assert _row(table, "DP =")[1:4] == ("after 9.1",) * 3
    assert _row(table, "Training FLOPs")[1:4] == ("after 9.4",) * 3
    assert _row(table, "Layers")[1] == "7 + 8 x 14 + 7"  # 9.2 answered
    assert _row(table, "Parameters")[1] == "405.85B"     # no exercise asks it
    search = ch09.recommendation("llama3", top=2, done=frozenset({"9.1"}))
    assert search.rows == () and "exercise 9.10" in search.footnotes[0]


def test_answered_means_the_printed_numbers_checked_right_or_the_solution_seen() -> None:
    import workbook as wb
    from workbook.explorers.ch09_withheld import answered_ids
    from workbook.learner import checking

    assert answered_ids() == frozenset()
    wb.check("9.1", 64)                                     # wrong: still withheld
    variant = {"n_gpus": 4096, "tp": 8, "pp": 16, "cp": 1}  # right, but for other numbers
    assert checking.check_shown("9.1", 32, variant).passed
    assert answered_ids() == frozenset()
    assert wb.check("9.1", 128).passed                      # 16,384 / (8 x 1 x 16)
    wb.solution("9.4")
    assert answered_ids() == {"9.1", "9.4"}
    assert ch09.real_runs_table().rows[0][3] == "8 / 16 / 128 / 1 / 1"
    assert _row(ch09.reconstruction(), "Training FLOPs")[2] == "3.8e25"


def test_the_planner_opens_on_a_layout_that_answers_no_exercise() -> None:
    s = ch09.opening_settings()
    c = s.config()
    # the paper's model, cluster, batch and software, but 32 stages: DP = 16,384 / 256 = 64
    assert (s.model, s.n_gpus, s.global_batch_seqs, s.stack) == (
        PAPER.model, PAPER.n_gpus, PAPER.global_batch_seqs, PAPER.stack)
    assert (c.tp, c.cp, c.pp, c.dp, c.virtual_stages, c.grad_accum) == (8, 1, 32, 64, 4, 32)
    assert planner_messages(s) == []
    lines = " ".join(summary_lines(s, plan_numbers(s)))
    assert "DP 128" not in lines       # 9.1
    # 126 layers on 32 stages: 4 on the busiest, 4 x 3.19B / 8 x 2 bytes = 3.19 GB of
    # gathered weights, not 9.3's 8 x 3.19B / 8 x 2 = 6.38 GB
    assert "weights 3.2" in lines and "weights 6.4" not in lines
    # bubble (32 - 1)/(32 x 4) = 24.2 %, not 9.6's (16 - 1)/(16 x 2) = 46.9 %
    assert "Bubble 24.2%" in lines


def test_load_published_sets_the_paper_run_as_published() -> None:
    _answer("9.1", "9.3", "9.10")
    view = PlannerExplorer(ch09.opening_settings())
    view.controls["virtual_stages"].value = 2
    view.controls["recompute"].value = "full"
    view.load_published()
    s = view.settings()
    # the whole run, chunks and recomputation included, not only the degrees
    assert s.config() == PAPER.config() and s.stack == "llama3"
    assert "✔ This layout works" in view.status.value
