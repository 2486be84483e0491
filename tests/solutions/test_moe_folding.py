"""MoE parallel folding: a stage's TP x CP x DP ranks regrouped for the MoE layers into
expert groups of EP x ETP ranks (Megatron-Core, ``megatron/core/transformer/moe/README.md``,
"MoE Parallel Folding"). Expected values are worked by hand from the layout's degrees and
the architecture's published shape, not read back from the code under test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import planner as pl
from solutions.layout import ParallelConfig, resolve
from solutions.performance import estimate
from solutions.performance import flops as pf
from solutions.performance.comm import Links
from solutions.performance.validation import PUBLISHED_RUNS
from solutions.planner.memory import stage_memory, stage_params
from solutions.stack import MODERN

FOLDED = replace(MODERN, folded_expert_groups=True)

DSV3 = m.MODELS["deepseek-v3"]  # 256 routed experts, 8 active, width 2,048, h = 7,168
#: Megatron-Bridge's Qwen3-235B-A22B preset on H100 (256 GPUs): TP 2, PP 8, EP 32, ETP 1
QWEN_H100 = next(r for r in PUBLISHED_RUNS
                 if r.label == "mbridge-260401-h100-qwen3-235b-a22b-256gpu-fp8cs")


def test_an_expert_group_wider_than_dp_is_a_layout_not_an_error() -> None:
    cfg = QWEN_H100.config
    assert (cfg.tp, cfg.dp, cfg.ep, cfg.expert_tp) == (2, 16, 32, 1)  # EP 32 > DP 16
    assert QWEN_H100.stack.folded_expert_groups
    assert not [p for p in pl.validate(QWEN_H100.arch, cfg, memory_budget_gb=None,
                                       stack=QWEN_H100.stack) if "EP" in p]
    # software without folding cannot run it, and says why
    assert any("EP=32 does not divide DP=16" in p
               for p in pl.validate(QWEN_H100.arch, cfg, memory_budget_gb=None))
    est = QWEN_H100.estimate()
    assert est.step_time_s > 0 and est.breakdown["ep"] > 0


def test_expert_groups_must_tile_the_stage() -> None:
    # 2 x 16 = 32 ranks per stage: EP 64 x ETP 1 = 64 does not tile them; EP 8 x ETP 2 does
    bad = ParallelConfig(tp=2, pp=16, dp=16, ep=64, etp=1, seq_len=4096)
    problems = pl.validate(DSV3, bad, memory_budget_gb=None, stack=FOLDED)
    assert any("EP x ETP = 64 x 1 = 64 does not divide TP x CP x DP = 32" in p
               for p in problems)
    good = replace(bad, ep=8, etp=2)
    assert not [p for p in pl.validate(DSV3, good, memory_budget_gb=None, stack=FOLDED)
                if "EP" in p]
    # without folding an expert is split over the layer's TP group, and only that
    assert any("ETP=1 differs from TP=2" in p
               for p in pl.validate(DSV3, replace(good, etp=1), memory_budget_gb=None))
    # an expert's 2,048 columns do not split 3 ways
    odd = ParallelConfig(tp=3, pp=16, dp=8, ep=8, etp=3, seq_len=4095)
    assert any("ETP=3 does not divide the 2,048 columns" in p
               for p in pl.validate(DSV3, odd, memory_budget_gb=None, stack=FOLDED))


def test_expert_dp_counts_the_ranks_that_hold_the_same_experts() -> None:
    # TP 2 x CP 2 x DP 16 = 64 ranks; EP 8 x ETP 2 = 16 per expert group: 4 copies
    assert ParallelConfig(tp=2, pp=1, dp=16, cp=2, ep=8, etp=2).expert_dp == 4
    assert ParallelConfig(tp=2, pp=1, dp=16, cp=2, ep=8, etp=1).expert_dp == 8
    # ETP unset is TP: the traditional count DP x CP / EP
    for tp, cp, dp, ep in ((1, 1, 8, 8), (4, 2, 16, 8), (8, 1, 64, 16), (2, 4, 8, 2)):
        cfg = ParallelConfig(tp=tp, pp=1, dp=dp, cp=cp, ep=ep)
        assert cfg.expert_tp == tp and cfg.expert_dp == dp * cp // ep


def test_each_gpu_holds_its_experts_split_ep_x_etp_ways() -> None:
    # one DeepSeek-V3 routed expert: 3 matrices of 7,168 x 2,048 (SwiGLU)
    expert = 3 * 7168 * 2048
    cfg = ParallelConfig(tp=2, pp=61, dp=32, ep=64, etp=1, seq_len=4096)
    # stage 10 holds one MoE layer (the first three layers are dense, one layer per stage)
    params = stage_params(DSV3, cfg, 10)
    assert params.expert == pytest.approx(256 * expert / (64 * 1))
    split = stage_params(DSV3, replace(cfg, ep=32, etp=2), 10)
    assert split.expert == pytest.approx(256 * expert / (32 * 2))
    # ZeRO-1: Adam's 12 bytes per expert parameter shared by the expert_dp = 1 owner
    mem = stage_memory(DSV3, cfg, 10, MODERN)
    dense_share = params.dense * 12 / (cfg.dp * cfg.cp)
    assert mem.optimizer_bytes == pytest.approx(dense_share + params.expert * 12 / 1)


def test_expert_gemm_rows_come_from_the_whole_expert_group() -> None:
    # Qwen3-235B, 4,096 tokens, TP 2 (sequence-parallel shards of 2,048 tokens per rank):
    # EP 32 x ETP 1 ranks bring 32 x 2,048 tokens x 8 copies to 128 experts = 4,096 rows
    # of the full 1,536 columns; ETP 2 doubles the rows (the pair shares its tokens) and
    # halves the columns
    arch, cfg = QWEN_H100.arch, QWEN_H100.config
    assert pf.expert_gemm_shape(arch, cfg) == (4096.0, 4096.0, 1536.0)
    assert pf.expert_gemm_shape(arch, replace(cfg, ep=16, etp=2)) == (4096.0, 4096.0, 768.0)
    assert pf.expert_gemm_shape(arch, replace(cfg, ep=8, etp=None)) == (2048.0, 4096.0, 768.0)


def test_the_expert_group_sits_on_consecutive_ranks() -> None:
    cluster = hw.default_cluster(hw.H100_SXM)
    # EP 8 x ETP 1 with TP 2: eight consecutive ranks, one node, all NVLink
    folded = ParallelConfig(tp=2, pp=1, dp=32, ep=8, etp=1)
    assert not Links(cluster, folded, folded_experts=True).ep_crosses
    assert resolve(DSV3, folded, folded_experts=True).groups["ep"].nodes == 1
    # the same EP with experts split like attention (ETP 2): 16 ranks, two nodes
    assert Links(cluster, replace(folded, etp=None), folded_experts=True).ep_crosses
    # the traditional generator puts EP inside DP, TP x CP = 4 apart: four nodes
    with_cp = ParallelConfig(tp=2, pp=1, dp=16, cp=2, ep=8)
    assert resolve(DSV3, with_cp).groups["ep"].nodes == 4
    assert resolve(DSV3, with_cp, folded_experts=True).groups["ep"].nodes == 2
    # Qwen3-235B's EP 32: four nodes of eight
    group = resolve(QWEN_H100.arch, QWEN_H100.config, folded_experts=True).groups["ep"]
    assert (group.nodes, group.per_node) == (4, 8)


def test_etp_equal_to_tp_is_the_traditional_layout() -> None:
    for run in [r for r in PUBLISHED_RUNS if r.config.ep > 1 and r.config.etp is None]:
        same = replace(run.config, etp=run.config.tp)
        a = estimate(run.arch, run.config, run.cluster.gpu, run.cluster, run.stack,
                     memory_budget_gb=None)
        b = estimate(run.arch, same, run.cluster.gpu, run.cluster, run.stack,
                     memory_budget_gb=None)
        assert a.step_time_s == pytest.approx(b.step_time_s, rel=1e-12)


def test_etp_must_be_a_positive_count() -> None:
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="etp must be"):
            ParallelConfig(tp=2, pp=1, dp=8, ep=8, etp=bad)  # type: ignore[arg-type]


def test_overlapped_all_to_alls_expose_only_what_compute_cannot_cover() -> None:
    # the same step with and without Megatron-Core's batch-level EP overlap: per micro-batch
    # the all-to-alls A run under another micro-batch's compute C, exposing
    # max(0, A - C) + interference x min(A, C); nothing else changes (PP 1: no bubble)
    from solutions.performance import stage as pm
    cfg = ParallelConfig(tp=1, pp=1, dp=64, ep=64, grad_accum=4, seq_len=4096,
                         activation_recompute="none")
    cluster = hw.default_cluster(hw.H100_SXM)
    plain = replace(MODERN, folded_expert_groups=True)
    both = [estimate(DSV3, cfg, hw.H100_SXM, cluster, s, memory_budget_gb=None).breakdown
            for s in (plain, replace(plain, ep_comm_overlap=True))]
    a, c = both[0]["ep"] / 4, both[0]["compute"] / 4
    assert a > 0 and c > 0
    exposed = max(0.0, a - c) + pm.OVERLAP_INTERFERENCE * min(a, c)
    assert both[1]["ep"] == pytest.approx(4 * exposed, rel=1e-12)
    assert {k: v for k, v in both[1].items() if k != "ep"} == pytest.approx(
        {k: v for k, v in both[0].items() if k != "ep"}, rel=1e-12)
