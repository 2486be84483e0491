"""The 5D planner: memory, traffic, validation and recommendation, against hand arithmetic.

Shared hand figures (Llama 3 405B, Table 3 of the paper):
  layer = 570,425,344 (GQA attention) + 2,617,245,696 (SwiGLU) + 32,768 (norms) = 3,187,703,808
  embedding table = 128,256 x 16,384 = 2,101,346,304
  [s, b, h] activation at s = 8192, b = 1, h = 16384 in BF16 = 268,435,456 bytes
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import performance as perf
from solutions import planner as pl
from solutions.planner import activations as pa
from solutions.planner import memory as pm
from solutions.planner import search as ps
from solutions.planner.memory import ParallelConfig, Recompute, memory_per_gpu, stage_memory
from solutions.planner.traffic import comm_per_step, comm_time_s
from solutions.stack import LLAMA3, MEGATRON_2021, MEGATRON_2022, Stack

# Table 4, 16,384 GPUs: TP 8, CP 1, PP 16, DP 128, 16 sequences of 8192 per DP group.
PAPER = ParallelConfig(tp=8, pp=16, dp=128, grad_accum=16, seq_len=8192,
                       activation_recompute="full")
LAYER = 3_187_703_808


def test_config_derived_sizes() -> None:
    assert PAPER.n_gpus == 16384                    # 8 x 1 x 16 x 128
    assert PAPER.global_batch_seqs == 2048          # 128 x 1 x 16
    assert PAPER.tokens_per_step == 16_777_216      # 2048 x 8192: the paper's "16M"


@pytest.mark.parametrize("bad", [
    dict(tp=0, pp=1, dp=1), dict(tp=1, pp=1, dp=1, zero_stage=4),
    dict(tp=1, pp=1, dp=1, activation_recompute="some"), dict(tp=1, pp=1, dp=-2),
])
def test_impossible_config_raises(bad: dict) -> None:
    with pytest.raises(ValueError):
        ParallelConfig(**bad)


def test_paper_layout_validates_with_no_problems() -> None:
    assert pl.validate(m.LLAMA3_405B, PAPER, n_gpus=16384, global_batch_seqs=2048) == []


def test_paper_memory_on_a_middle_stage() -> None:
    # ZeRO-1 on the default (Megatron-Core) stack, full recomputation.
    # stage 1: 8 layers / TP 8 = 3,187,703,808 params per GPU
    # weights 2 B = 6,375,407,616; FP32 main gradients 4 B = 12,750,815,232;
    # Adam 12/128 B = 298,847,232
    # activations, full recompute: 2 x 8192 x 16384 / 8 = 33,554,432 B per layer per
    #   micro-batch x 8 layers x 15 in flight (p - 1 on stage 1) = 4,026,531,840, plus the one
    #   layer rebuilt in the backward: (8 + 23.75 + 0.03125) / 8 x 134,217,728 = 533,200,896
    mem = memory_per_gpu(m.LLAMA3_405B, PAPER)
    assert mem.stage == 1
    assert mem.weights_bytes == pytest.approx(6_375_407_616)
    assert mem.gradients_bytes == pytest.approx(12_750_815_232)
    assert mem.optimizer_bytes == pytest.approx(298_847_232)
    assert mem.activations_bytes == pytest.approx(4_026_531_840 + 533_200_896)
    assert mem.total_bytes == pytest.approx(23_984_802_816)


def test_paper_memory_on_the_first_stage() -> None:
    # stage 0: (7 layers + embedding) / 8 = (22,313,926,656 + 2,101,346,304) / 8
    #   = 3,051,909,120 params -> weights 6,103,818,240 B
    # activations: 7 layers x 16 in flight x 33,554,432 = 3,758,096,384 B + 533,200,896
    mem = stage_memory(m.LLAMA3_405B, PAPER, 0)
    assert mem.weights_bytes == pytest.approx(6_103_818_240)
    assert mem.activations_bytes == pytest.approx(3_758_096_384 + 533_200_896)


def test_seven_b_on_eight_gpus_zero3() -> None:
    # LLaMA-7B shape: layer 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 202,383,360
    # 32 layers + 2 x 32000 x 4096 tables = 6,476,267,520 + 262,144,000 = 6,738,411,520
    # FSDP FULL_SHARD over 8: weights 2/8 + two gathered layers 2 x 202,383,360 x 2 B;
    # FP32 gradients 4/8, Adam 12/8 bytes per parameter
    # activations, flash attention, no dropout: 8 + (2 + 4 + 2 + 6 x 11008/4096) + 4 x 32/4096
    #   = 32.15625 x 4096 x 4096 = 539,492,352 B per layer x 32 layers, one micro-batch
    # the root unit (embedding and untied head, 2 x 32000 x 4096) stays gathered too:
    #   + 262,144,000 x 2 B = 524,288,000
    # loss buffers, Megatron's 6 bytes per logit: 4096 tokens x 32000 x 6 = 786,432,000
    cfg = ParallelConfig(tp=1, pp=1, dp=8, zero_stage=3, seq_len=4096)
    mem = memory_per_gpu(m.GENERIC_7B, cfg)
    assert mem.weights_bytes == pytest.approx(1_684_602_880 + 809_533_440 + 524_288_000)
    assert mem.gradients_bytes == pytest.approx(3_369_205_760)
    assert mem.optimizer_bytes == pytest.approx(10_107_617_280)
    assert mem.activations_bytes == pytest.approx(17_263_755_264)
    assert mem.buffers_bytes == pytest.approx(786_432_000)
    assert mem.total_bytes == pytest.approx(33_234_714_624 + 524_288_000 + 786_432_000)


def test_korthikanti_gpt_layer_is_reproduced() -> None:
    # GPT layer (GeLU 4h, MHA, dropout): 34 s b h + 5 a s^2 b unfused (Korthikanti Table 2)
    t = pa.activation_terms(m.GPT3_175B, 2048, fused_attention=False)
    assert t.outside + t.inside == pytest.approx(34)
    assert t.core == pytest.approx(5 * 96 * 2048 / 12288)
    fused = pa.activation_terms(m.GPT3_175B, 2048, fused_attention=True)
    assert fused.core == pytest.approx(4 * 96 / 12288)          # log-sum-exp only, no s^2
    # without sequence parallelism: s b h (10 + 24/t + 5as/(ht)), Table 2's TP-only row
    cfg = ParallelConfig(tp=8, pp=1, dp=1, seq_len=2048, activation_recompute="none")
    sbh = 2048 * 12288
    got = pa.activation_bytes_per_layer(m.GPT3_175B, cfg, MEGATRON_2021)
    assert got == pytest.approx(sbh * (10 + 24 / 8 + 5 * 96 * 2048 / (12288 * 8)))


def test_recompute_modes_follow_the_attention_kernel() -> None:
    # Llama 3 405B at s = 8192, t = 8 with SP, per layer per micro-batch (sbh = 134,217,728):
    # no dropout, so the unfused core keeps only the softmax output: 2 a s / h = 128
    # unfused none (8 + 23.75 + 128) / 8 sbh = 2,680,225,792; selective 31.75 / 8 sbh =
    # 532,676,608; fused none = fused selective (8 + 23.75 + 0.03125) / 8 sbh = 533,200,896
    sbh = 8192 * 16384
    def per_layer(mode: Recompute, stack: Stack) -> float:
        cfg = ParallelConfig(tp=8, pp=16, dp=128, grad_accum=16, activation_recompute=mode)
        return pa.activation_bytes_per_layer(m.LLAMA3_405B, cfg, stack)
    assert per_layer("none", MEGATRON_2022) == pytest.approx(159.75 / 8 * sbh)
    assert per_layer("selective", MEGATRON_2022) == pytest.approx(31.75 / 8 * sbh)
    assert per_layer("none", LLAMA3) == per_layer("selective", LLAMA3) == pytest.approx(
        31.78125 / 8 * sbh)
    assert per_layer("full", LLAMA3) == pytest.approx(2 / 8 * sbh)


def test_llama3_run_as_published_fits_without_checkpointing() -> None:
    # TP 8, PP 16, DP 128, m = 16, v = 8 (one layer per chunk), no recomputation, Llama 3's
    # FSDP. Stage 1: weights gathered 2 x 3,187,703,808 + shard 2/128 of it = 6,425,214,672;
    # FP32 gradient shard 4/128 = 99,615,744, of which the one-layer chunk being accumulated
    # (1/8) has none yet, plus that chunk's FP32 gradient, 3,187,703,808 / 8 x 4 =
    # 1,593,851,904; Adam 12/128 = 298,847,232.
    # In flight on stage 1: warm-up 2 x 14 + 7 x 16 = 140, + 1 = 141 > m v = 128 chunk
    # forwards of 1 layer: 128 x 533,200,896 = 68,249,714,688.
    cfg = replace(PAPER, zero_stage=3, virtual_stages=8, activation_recompute="none")
    mem = memory_per_gpu(m.LLAMA3_405B, cfg, LLAMA3)
    assert mem.stage == 1
    assert mem.weights_bytes == pytest.approx(6_425_214_672)
    assert mem.gradients_bytes == pytest.approx(99_615_744 * 7 / 8 + 1_593_851_904)
    assert mem.optimizer_bytes == pytest.approx(298_847_232)
    assert mem.activations_bytes == pytest.approx(68_249_714_688)
    assert mem.total_bytes < 80e9
    assert pl.validate(m.LLAMA3_405B, cfg, 16384, global_batch_seqs=2048, stack=LLAMA3) == []
    # resharding after forward would gather twice per micro-batch instead of twice per step
    assert pm.gathers_per_step(cfg, LLAMA3) == 1
    assert pm.gathers_per_step(cfg, MEGATRON_2022) == 32
    # and its FP32 gradients are reduced once per step (chunk by chunk), not per micro-batch
    assert pm.grad_reductions_per_step(cfg, LLAMA3) == 1
    assert pm.grad_reductions_per_step(cfg, MEGATRON_2022) == 16
    # with v = 2 the chunk in progress holds 4 layers: 4 x 398,462,976 x 4 B more, over 80 GB
    two = memory_per_gpu(m.LLAMA3_405B, replace(cfg, virtual_stages=2), LLAMA3)
    assert two.gradients_bytes == pytest.approx(99_615_744 / 2 + 4 * 1_593_851_904)
    assert two.total_bytes > 80e9


def test_in_flight_follows_the_simulated_schedule() -> None:
    # second method: run Megatron's interleaved order in the simulator and count the peak
    # number of chunk forwards whose backward has not run (the memory of each stage)
    from solutions.pipeline_simulator import schedule_spans
    for p, mb, v in ((4, 8, 2), (4, 4, 2), (8, 16, 4), (4, 12, 1), (8, 5, 1)):
        spans = schedule_spans("interleaved" if v > 1 else "1f1b", p, mb, v)
        cfg = ParallelConfig(tp=1, pp=p, dp=1, grad_accum=mb, virtual_stages=v)
        for stage, ops in enumerate(spans):
            live = peak = 0
            for placed in sorted(ops, key=lambda o: o.start):
                live += 1 if placed.op.phase == "F" else -1
                peak = max(peak, live)
            assert pm.in_flight(cfg, stage) * v == peak, (p, mb, v, stage)


def test_paper_traffic_per_step() -> None:
    # TP+SP, full recompute: (2 x 2 fwd + 2 bwd) all-reduce equivalents x 2 x 7/8 x 268,435,456
    #   = 2,818,572,288 B per layer per micro-batch, x 8 layers x 16 = 360,777,252,864
    # PP: 2 x 16 x 268,435,456 / 8 = 1,073,741,824
    # DP: 2 x 127/128 x 3,187,703,808 params x 2 B = 12,651,199,488
    comm = comm_per_step(m.LLAMA3_405B, PAPER)
    assert comm.tp_bytes == pytest.approx(360_777_252_864)
    assert comm.pp_bytes == pytest.approx(1_073_741_824)
    assert comm.dp_bytes == pytest.approx(12_651_199_488)
    assert comm.ep_bytes == 0 and comm.cp_bytes == 0
    assert set(comm.as_gb()) == {"TP+SP", "PP", "DP", "EP", "CP"}


def test_context_parallel_layout_of_the_paper() -> None:
    # Table 4: TP 8, CP 16, PP 16, DP 8 at 131,072 tokens; s_l = 8192; 1 KV head of 128 per GPU
    # K+V chunk 2 x 8192 x 128 x 2 B = 4,194,304; (2 gathers + 1 reduce-scatter) x 15 peers
    #   x 8 layers x 16 micro-batches = 24,159,191,040 B
    cfg = ParallelConfig(tp=8, cp=16, pp=16, dp=8, grad_accum=16, seq_len=131072,
                         activation_recompute="full")
    assert pl.validate(m.LLAMA3_405B, cfg, n_gpus=16384, global_batch_seqs=128) == []
    assert comm_per_step(m.LLAMA3_405B, cfg).cp_bytes == pytest.approx(24_159_191_040)


def test_expert_all_to_all_of_deepseek_v3() -> None:
    # 61 layers on 16 stages: stage 1 holds layers 3-6, all MoE. Tokens 4096 x 8 experts x
    # 7168 x 2 B = 469,762,048 per direction; 4 all-to-alls x 63/64 x 4 layers = 7,398,752,256
    cfg = ParallelConfig(tp=1, pp=16, dp=128, ep=64, seq_len=4096)
    assert comm_per_step(m.DEEPSEEK_V3, cfg).ep_bytes == pytest.approx(7_398_752_256)


def test_deepseek_v3_published_layout_validates() -> None:
    cfg = ParallelConfig(tp=1, pp=16, dp=128, ep=64, grad_accum=30, seq_len=4096)
    assert pl.validate(m.DEEPSEEK_V3, cfg, n_gpus=2048) == []


def test_tp_across_nodes_is_flagged() -> None:
    cfg = ParallelConfig(tp=16, pp=8, dp=128, grad_accum=16, activation_recompute="full")
    found = dict(pl.rejections(m.LLAMA3_405B, cfg, n_gpus=16384))
    assert set(found) == {"tp_in_node", "kv_heads"}   # 16 > 8 GPUs per node, 16 > 8 K/V heads
    assert "TP=16" in found["tp_in_node"] and "node" in found["tp_in_node"]


def test_gpus_that_do_not_multiply_out_are_flagged() -> None:
    problems = pl.validate(m.LLAMA3_405B, PAPER, n_gpus=8192)
    assert len(problems) == 1 and "16,384" in problems[0] and "8,192" in problems[0]


def test_divisibility_problems() -> None:
    cfg = ParallelConfig(tp=3, pp=16, dp=128, grad_accum=16, seq_len=4100,
                         activation_recompute="full")
    text = " ".join(pl.validate(m.LLAMA3_405B, cfg))
    for phrase in ("TP=3 does not fit", "128 query heads", "53,248 FFN", "8 K/V heads",
                   "4,100"):
        assert phrase in text


def test_expert_and_batch_problems() -> None:
    dense_ep = ParallelConfig(tp=8, pp=16, dp=128, ep=2, grad_accum=16,
                              activation_recompute="full")
    assert any("dense" in p for p in pl.validate(m.LLAMA3_405B, dense_ep))
    ds = ParallelConfig(tp=1, pp=16, dp=96, ep=64, seq_len=4096)
    assert any("does not divide DP=96" in p for p in pl.validate(m.DEEPSEEK_V3, ds))
    wrong_batch = pl.validate(m.LLAMA3_405B, PAPER, global_batch_seqs=1024)
    assert wrong_batch and "2,048" in wrong_batch[0]


def test_too_many_stages_and_memory_overflow() -> None:
    assert any("only 126 layers" in p for p in pl.validate(
        m.LLAMA3_405B, ParallelConfig(tp=8, pp=128, dp=16)))
    # PP 4: 32 layers / TP 8 -> weights and gradients 25.2 GB each: over 80 GB in total
    over = pl.validate(m.LLAMA3_405B, ParallelConfig(tp=8, pp=4, dp=512, grad_accum=4))
    assert len(over) == 1 and "budget is 80 GB" in over[0]


def test_bubble() -> None:
    assert pl.bubble(PAPER) == pytest.approx(15 / 16)  # (p-1)/m
    assert pl.bubble(ParallelConfig(tp=8, pp=16, dp=128, grad_accum=16,
                                    virtual_stages=2)) == pytest.approx(15 / 32)
    assert pl.bubble(ParallelConfig(tp=1, pp=1, dp=8)) == 0


def test_recommend_agrees_with_an_exhaustive_search_through_estimate() -> None:
    # second method: every layout of the same grid through the public estimate(), which
    # validates with the full memory model, then the minimum step time
    arch, n, batch, seq = m.LLAMA3_70B, 64, 512, 8192
    found = pl.recommend(arch, n, batch, seq, hw.H100_SXM, top=3)
    best_s = float("inf")
    for cfg in ps._grid(arch, n, batch, seq, 8, ps.ZERO_CHOICES):
        try:
            best_s = min(best_s, perf.estimate(arch, cfg, hw.H100_SXM).step_time_s)
        except ValueError:
            continue
    assert found.best[0].estimate.step_time_s == pytest.approx(best_s)
    times = [r.estimate.step_time_s for r in found.best]
    assert times == sorted(times) and found.candidates > found.valid > 0
    for r in found.best:  # the default budget of both is the GPU's capacity, 80 GiB
        assert pl.validate(arch, r.config, n, global_batch_seqs=batch,
                           memory_budget_gb=80 * 2**30 / 1e9) == []


def test_fast_memory_check_equals_every_stage() -> None:
    for cfg in list(ps._grid(m.LLAMA3_405B, 16384, 2048, 8192, 8, (0, 1, 3)))[::37]:
        if pl.validate(m.LLAMA3_405B, cfg, memory_budget_gb=1e9):
            continue
        for budget in (40.0, 80.0):
            by_all = memory_per_gpu(m.LLAMA3_405B, cfg).total_bytes <= budget * 1e9
            assert ps.fits_memory(m.LLAMA3_405B, cfg, budget) == by_all, cfg


def test_recommend_for_llama_405b_beats_the_paper_layout_and_says_why() -> None:
    found = pl.recommend(m.LLAMA3_405B, 16384, 2048, 8192, hw.H100_SXM, top=5)
    paper_variants = [c for c in ps._grid(m.LLAMA3_405B, 16384, 2048, 8192, 8, (1, 3))
                      if (c.tp, c.cp, c.pp, c.dp) == (8, 1, 16, 128)
                      and not pl.validate(m.LLAMA3_405B, c)]
    paper = min((perf.estimate(m.LLAMA3_405B, c, hw.H100_SXM) for c in paper_variants),
                key=lambda e: e.step_time_s)
    best = found.best[0].estimate
    in_top = any((r.config.tp, r.config.cp, r.config.pp, r.config.dp) == (8, 1, 16, 128)
                 for r in found.best)
    assert in_top or best.step_time_s < paper.step_time_s
    reasons = ps.why_faster(best, paper)
    assert reasons and sum(v for _, v in reasons) > 0
    assert {name for name, _ in reasons} <= set(perf.BREAKDOWN_KEYS)


def test_recommend_gives_up_when_nothing_fits() -> None:
    assert pl.recommend(m.LLAMA3_405B, n_gpus=8, global_batch_seqs=64, seq_len=8192).best == ()


def test_speed_and_cost_with_an_mfu_override() -> None:
    # what-if at 40 % MFU: model FLOPs per token = 6 x (126 layers x matmul weights + the
    # output head) + 3 x 126 x 2 x 8192 x 16384 (causal attention)
    per_layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248
    per_token = 6 * (126 * per_layer + 128256 * 16384) + 3 * 126 * 2 * 8192 * 16384
    days = per_token * 15.6e12 / (16384 * 989.4e12 * 0.4) / 86400
    assert pl.training_days(m.LLAMA3_405B, 15.6e12, PAPER, hw.H100_SXM, 0.4) == pytest.approx(
        days)
    assert pl.training_cost_usd(m.LLAMA3_405B, 15.6e12, PAPER, hw.H100_SXM, 2.0,
                                mfu=0.4) == pytest.approx(days * 24 * 16384 * 2.0)
    step = per_token * 2048 * 8192 / (16384 * 989.4e12 * 0.41)
    assert pl.step_time_s(m.LLAMA3_405B, PAPER, hw.H100_SXM, 0.41) == pytest.approx(step)
    # 2.7e6 tokens/s on 16384 GPUs: 6 x 405.853e9 x 164.79 / 989.4e12 = 0.40559 (no attention)
    assert pl.mfu(m.LLAMA3_405B, 2.7e6, 16384, hw.H100_SXM) == pytest.approx(0.40559, rel=1e-4)
    with pytest.raises(ValueError):
        pl.step_time_s(m.LLAMA3_405B, PAPER, hw.H100_SXM, 0.0)


def test_days_and_cost_follow_the_layout() -> None:
    # without the override: steps x predicted step time; a worse layout costs more
    est = perf.estimate(m.LLAMA3_405B, PAPER, hw.H100_SXM)
    days = 15.6e12 / est.tokens_per_s / 86400
    assert pl.training_days(m.LLAMA3_405B, 15.6e12, PAPER, hw.H100_SXM) == pytest.approx(days)
    interleaved = replace(PAPER, virtual_stages=2)  # half the bubble
    assert pl.training_days(m.LLAMA3_405B, 15.6e12, interleaved, hw.H100_SXM) < days
    assert pl.training_cost_usd(m.LLAMA3_405B, 15.6e12, PAPER, hw.H100_SXM, 2.0) == (
        pytest.approx(days * 24 * 16384 * 2.0))
    with pytest.raises(ValueError, match="invalid layout"):
        pl.training_days(m.LLAMA3_405B, 15.6e12, replace(PAPER, tp=3), hw.H100_SXM)


def test_comm_time() -> None:
    assert comm_time_s(12.65e9, 50.0) == pytest.approx(0.253)  # 12.65 GB at 50 GB/s
    with pytest.raises(ValueError):
        comm_time_s(1e9, 0.0)


def test_plan_renders() -> None:
    report = pl.plan(m.LLAMA3_405B, PAPER, n_gpus=16384)
    assert report.problems == ()
    html = report._repr_html_()
    assert "no problems" in html and "TP+SP" in html and "16,384" in html


def test_tied_embeddings_are_held_once_without_pipelining() -> None:
    # GPT-3 ties input and output embeddings: one V x h table when a single stage holds
    # both ends; with PP > 1 the last stage keeps its own copy (Megatron-LM).
    one = pm.stage_params(m.GPT3_175B, pm.ParallelConfig(tp=1, pp=1, dp=1), 0).dense
    two = pm.stage_params(m.GPT3_175B, pm.ParallelConfig(tp=1, pp=2, dp=1), 1).dense
    table = 50257 * 12288
    layers = 96 * m.dense_layer_params(m.GPT3_175B)
    assert one == layers + table + 2048 * 12288
    assert two == 48 * m.dense_layer_params(m.GPT3_175B) + table


def test_dp_traffic_follows_the_sharding_the_memory_model_assumes() -> None:
    # stage 1 of the paper's layout: 3,187,703,808 params per GPU, ring factor 127/128
    f_psi = 3_187_703_808 * 127 / 128
    llama = replace(PAPER, zero_stage=3, virtual_stages=8, activation_recompute="none")
    # Llama 3's FSDP: one gather of BF16 weights (2 B) and one FP32 reduce-scatter (4 B)
    assert comm_per_step(m.LLAMA3_405B, llama, 4.0, LLAMA3).dp_bytes == pytest.approx(
        f_psi * 6)
    # a resharding ZeRO-3: 16 reduce-scatters (2 B) and 32 gathers (2 B): 96 bytes a parameter
    assert comm_per_step(m.LLAMA3_405B, llama, 2.0, MEGATRON_2022).dp_bytes == pytest.approx(
        f_psi * (16 * 2 + 32 * 2))
    # ZeRO-0: one all-reduce, 2 x 2 B; ZeRO-2: 16 reduce-scatters + one gather
    assert comm_per_step(m.LLAMA3_405B, replace(PAPER, zero_stage=0)).dp_bytes == (
        pytest.approx(f_psi * 4))
    assert comm_per_step(m.LLAMA3_405B, replace(PAPER, zero_stage=2)).dp_bytes == (
        pytest.approx(f_psi * (16 * 2 + 2)))
