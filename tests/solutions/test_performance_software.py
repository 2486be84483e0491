"""The step-time model per software: what each library's collectives and pipeline send,
layouts that ran outside the usual rules, and expert parallelism's two costs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import performance as perf
from solutions.performance import flops as pf
from solutions.performance.validation import gpt
from solutions.planner.memory import ParallelConfig
from solutions.stack import MEGATRON_2022

GPT_145B = gpt(145.6, n_layers=80, d_model=12288, n_heads=96)
SELENE = hw.SELENE_A100
NO_NETWORK_LATENCY = replace(SELENE, nvlink_latency_us=0.0, inter_node_latency_us=0.0)


def _estimate(arch: m.Architecture, cfg: ParallelConfig, cluster: hw.Cluster = SELENE,
              stack: perf.Stack = perf.MEGATRON_2021) -> perf.StepEstimate:
    return perf.estimate(arch, cfg, cluster.gpu, cluster, stack, memory_budget_gb=None)

def test_deepspeed_pipeline_sends_slices_and_blocks() -> None:
    # TP 8, PP 8, no latency: DeepSpeed's engine sends PartitionedTensor slices (1/t of the
    # activation per TP rank, like Megatron's scatter/gather) but blocks on its receives
    # too: 2 x Megatron's sends. Before September 2021 the gradient went whole: per chunk
    # (1/8 + 1) of Megatron's (1/8 + 1/8), blocking doubling it: 2 x 9/2 = 9 times.
    from solutions.stack import DEEPSPEED_PIPELINE_2020
    cfg = ParallelConfig(tp=8, pp=8, dp=24, micro_batch=2, grad_accum=48, seq_len=2048,
                         activation_recompute="full", zero_stage=1)
    megatron = _estimate(GPT_145B, cfg, NO_NETWORK_LATENCY, perf.MEGATRON_2021)
    deepspeed = _estimate(GPT_145B, cfg, NO_NETWORK_LATENCY, perf.DEEPSPEED_PIPELINE_STACK)
    old = _estimate(GPT_145B, cfg, NO_NETWORK_LATENCY, DEEPSPEED_PIPELINE_2020)
    assert deepspeed.breakdown["pp_send"] == pytest.approx(2 * megatron.breakdown["pp_send"])
    assert old.breakdown["pp_send"] == pytest.approx(9 * megatron.breakdown["pp_send"])


def test_flat_zero3_gathers_run_at_one_port_not_the_node() -> None:
    # ZeRO-3 over 64 A100s at TP 1 (8 per node): NCCL's per-port rings give the group the
    # node's 8 HDR ports (200 GB/s, capped by NVLink's 300), a flat ring one port (25 GB/s);
    # with nothing hidden and no latency the DP seconds differ by 200 / 25 = 8
    arch = gpt(1.7, n_layers=24, d_model=2304, n_heads=24)
    cfg = ParallelConfig(tp=1, pp=1, dp=64, micro_batch=2, grad_accum=1, seq_len=2048,
                         activation_recompute="full", zero_stage=3)
    bare = replace(perf.DEEPSPEED_ZERO3_STACK, overlap_dp=False, gather_hidden_fraction=0.0)
    flat = perf.breakdown_s(arch, cfg, SELENE.gpu, NO_NETWORK_LATENCY, bare)
    ranks = perf.breakdown_s(arch, cfg, SELENE.gpu, NO_NETWORK_LATENCY,
                             replace(bare, flat_dp_collectives=False))
    for key in ("dp_exposed", "fsdp_gather"):
        assert flat[key] == pytest.approx(8 * ranks[key])


def test_tp_across_nodes_is_estimated_with_a_warning() -> None:
    # TP 16 on 8-GPU nodes: every TP all-reduce is a ring over 16 GPUs, 8 on each of two
    # nodes, so NCCL's per-port rings drive the node's 8 x 400 Gb/s ports (400 GB/s, under
    # NVLink's 450) at 80 %: B = 320 GB/s, 10 us per step: 2 x 15 x (alpha + M / 16 / B)
    # for M = b s h x 2 bytes; 4 per layer (no recomputation), 16 layers on the busiest of
    # 8 stages (126 = 6 x 16 + 2 x 15), 2 micro-batches
    cfg = ParallelConfig(tp=16, pp=8, dp=128, micro_batch=1, grad_accum=2, seq_len=8192,
                         zero_stage=1, activation_recompute="none")
    est = perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, stack=MEGATRON_2022,
                        memory_budget_gb=None)
    assert len(est.warnings) == 2  # 16 > 8 GPUs per node, and 16 > 8 K/V heads
    assert "TP=16 does not fit" in est.warnings[0] and "K/V heads" in est.warnings[1]
    message = 1 * 8192 * 16384 * 2
    one = 2 * 15 * (10e-6 + message / 16 / 320e9)
    assert est.breakdown["tp"] == pytest.approx(2 * 16 * 4 * one, rel=1e-9)


def test_expert_parallelism_makes_expert_gemms_taller() -> None:
    # DeepSeek-V3 (256 routed experts, 8 active, expert width 2048), 4,096 tokens per GPU:
    # each local expert sees 4096 x 8 x ep / 256 rows: 128 at EP 1, 8,192 at EP 64
    arch = m.MODELS["deepseek-v3"]
    for ep, rows in ((1, 128), (64, 8192)):
        cfg = ParallelConfig(tp=1, pp=16, dp=128, ep=ep, seq_len=4096)
        assert pf.expert_gemm_shape(arch, cfg) == (rows, 7168.0, 2048.0)
    one = ParallelConfig(tp=1, pp=16, dp=128, ep=1, zero_stage=1, grad_accum=16,
                         seq_len=4096, activation_recompute="full")
    eight = replace(one, ep=8)
    slow = perf.estimate(arch, one, hw.H800_SXM, memory_budget_gb=None)
    fast = perf.estimate(arch, eight, hw.H800_SXM, memory_budget_gb=None)
    # replicated experts pay no all-to-all but run 128-row GEMMs: their compute is slower
    assert slow.breakdown["ep"] == 0 < fast.breakdown["ep"]
    assert slow.breakdown["compute"] > 1.5 * fast.breakdown["compute"]
