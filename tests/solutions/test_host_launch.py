"""The GPU waiting on the host to launch a MoE layer's experts one GEMM at a time
(:mod:`solutions.performance.host`). Expected times are counted by hand from Transformer
Engine's ``GroupedLinear`` (one GEMM per expert and linear forward, two backward, two
linears) and the per-GEMM floor its benchmark measured (0.267 ms for 8 GEMMs), not read
back from the module."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import ParallelConfig
from solutions.performance import estimate
from solutions.performance import flops as pf
from solutions.stack import FSDP2, MODERN

#: Qwen3-30B-A3B (Hugging Face config): 48 layers, 128 experts of width 768, 8 active.
QWEN3_30B = m.Architecture(
    name="Qwen3-30B-A3B", n_layers=48, d_model=2048, n_heads=32, n_kv_heads=4, d_ffn=6144,
    vocab_size=151936, head_dim_override=128,
    moe=m.MoE(n_routed_experts=128, n_shared_experts=0, experts_per_token=8,
              expert_d_ffn=768))
FLOOR_S = 0.267e-3 / 8  # TE pull request #3134: 8 tiny GEMMs of the loop in 0.267 ms
FP8_LOOP = replace(MODERN, linear_precision="fp8")


def _gpu_expert_s(arch: m.Architecture, cfg: ParallelConfig, gpu: hw.GPU) -> float:
    """One layer's routed-expert GEMMs in one forward pass, at the model's efficiency for
    their shape: the k routed experts' three matrices, 2 FLOPs per weight and token."""
    assert arch.moe is not None
    tokens = cfg.micro_batch * cfg.seq_len
    flops = tokens * 2 * arch.moe.experts_per_token * 3 * arch.d_model * arch.moe.expert_d_ffn
    eff = pf.matmul_efficiency(gpu, *pf.expert_gemm_shape(arch, cfg), precision="fp8")
    return flops / (gpu.peak_flops * eff)


@pytest.mark.parametrize("recompute, passes", [("none", 3), ("full", 4)])
def test_sixteen_small_experts_per_gpu_wait_on_the_host(recompute: str, passes: int) -> None:
    cfg = ParallelConfig(tp=1, pp=1, dp=8, ep=8, zero_stage=1, micro_batch=1, grad_accum=8,
                         seq_len=4096, activation_recompute=recompute)
    # 128 / 8 = 16 experts per GPU, 2 linears, (1 forward + 2 backward [+ 1 recomputed])
    host = 16 * 2 * passes * FLOOR_S
    assert host == pytest.approx(passes * 1.068e-3)
    gpu = passes * _gpu_expert_s(QWEN3_30B, cfg, hw.H100_SXM)
    assert gpu < host  # small experts: the launches take longer than the GEMMs
    expected = cfg.grad_accum * 48 * (host - gpu)
    looped = estimate(QWEN3_30B, cfg, hw.H100_SXM, stack=FP8_LOOP, memory_budget_gb=None)
    fused = estimate(QWEN3_30B, cfg, hw.H100_SXM,
                     stack=replace(FP8_LOOP, expert_gemm_loop=False), memory_budget_gb=None)
    assert looped.breakdown["host"] == pytest.approx(expected, rel=1e-9)
    assert fused.breakdown["host"] == 0.0
    assert looped.step_time_s - fused.step_time_s == pytest.approx(expected, rel=1e-9)


def test_more_expert_parallelism_means_fewer_launches_per_gpu() -> None:
    def host(ep: int) -> float:
        cfg = ParallelConfig(tp=1, pp=1, dp=32, ep=ep, zero_stage=1, micro_batch=1,
                             grad_accum=4, seq_len=4096)
        return estimate(QWEN3_30B, cfg, hw.H100_SXM, stack=FP8_LOOP,
                        memory_budget_gb=None).breakdown["host"]
    # 16, 8 and 4 experts per GPU: the host's share falls faster than the launches do,
    # because each expert's GEMMs also grow taller with EP
    assert host(8) > host(16) > host(32) >= 0.0
    assert host(8) > 2 * host(16)


def test_a_few_large_experts_hide_their_launches() -> None:
    # DeepSeek-V3 at EP 64: 4 experts of width 2,048 per GPU, each GEMM longer than its launch
    cfg = ParallelConfig(tp=1, pp=16, dp=64, ep=64, zero_stage=1, micro_batch=1,
                         grad_accum=16, seq_len=4096)
    dsv3 = m.MODELS["deepseek-v3"]
    assert 4 * 2 * 3 * FLOOR_S < 3 * _gpu_expert_s(dsv3, cfg, hw.H100_SXM)
    est = estimate(dsv3, cfg, hw.H100_SXM, stack=FP8_LOOP, memory_budget_gb=None)
    assert est.breakdown["host"] == 0.0


def test_dense_models_and_stacks_without_the_loop_never_wait() -> None:
    dense = ParallelConfig(tp=1, pp=1, dp=8, zero_stage=1, micro_batch=1, grad_accum=4,
                           seq_len=4096)
    assert estimate(m.LLAMA3_8B, dense, hw.H100_SXM, stack=MODERN,
                    memory_budget_gb=None).breakdown["host"] == 0.0
    moe = ParallelConfig(tp=1, pp=1, dp=8, ep=8, zero_stage=3, micro_batch=1, grad_accum=4,
                         seq_len=4096)
    assert not FSDP2.expert_gemm_loop  # PyTorch-native experts: one torch._grouped_mm kernel
    assert estimate(QWEN3_30B, moe, hw.H100_SXM, stack=FSDP2,
                    memory_budget_gb=None).breakdown["host"] == 0.0
