"""FP8 linear layers in the step-time model: the GEMM rate, the casts, where it is refused.

Expected values are worked out here from the MAMF table and by counting tensors, not read
back from the model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import performance as perf
from solutions.performance import flops as pf
from solutions.planner.memory import ParallelConfig
from solutions.stack import FSDP2, MEGATRON_CORE_2024, Stack

H100 = hw.H100_SXM
FP8_CORE = replace(MEGATRON_CORE_2024, linear_precision="fp8")


def test_a_huge_fp8_gemm_runs_at_the_fp8_microbenchmark_ceiling() -> None:
    # 16K x 16K x 16K: full waves and tiles within 1 %, far above the roofline ridge. The
    # FP8 rate over the BF16 rate is then the two MAMF figures' ratio, 1,402.6 / 792.1.
    shape = (16384.0, 16384.0, 16384.0)
    bf16 = pf.matmul_efficiency(H100, *shape)
    fp8 = pf.matmul_efficiency(H100, *shape, precision="fp8")
    assert fp8 / bf16 == pytest.approx(1402.6 / 792.1, rel=0.01)


def test_a_memory_bound_fp8_gemm_gains_from_its_halved_bytes() -> None:
    # M = 16 tokens against an 8192 x 8192 weight: almost all the time is reading the
    # weight, 2 bytes per element in BF16 and 1 in FP8, so FP8 is close to twice as fast,
    # more than the compute ceilings' 1.77x that a large GEMM gets.
    small = (pf.matmul_efficiency(H100, 16, 8192, 8192, precision="fp8")
             / pf.matmul_efficiency(H100, 16, 8192, 8192))
    large = (pf.matmul_efficiency(H100, 16384, 8192, 8192, precision="fp8")
             / pf.matmul_efficiency(H100, 16384, 8192, 8192))
    assert 1402.6 / 792.1 < small < 2.0
    assert large == pytest.approx(1402.6 / 792.1, rel=0.02)


def test_fp8_is_refused_on_a_gpu_without_fp8_tensor_cores() -> None:
    with pytest.raises(ValueError, match="no FP8 tensor cores"):
        pf.matmul_efficiency(hw.A100_SXM_80GB, 4096, 4096, 4096, precision="fp8")


def test_an_unknown_linear_precision_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="linear_precision must be one of"):
        Stack("x", linear_precision="fp4")


def test_cast_elements_of_a_llama_layer_counted_by_hand() -> None:
    # Llama 3 8B: h = 4096, 32 query heads and 8 KV heads of 128, SwiGLU f = 14336.
    # TP 2 with sequence parallelism. Forward inputs: QKV and FFN-up inputs h/t each (the
    # shard is cast before the all-gather), output projection 4096/2, down projection
    # 14336/2. Backward output gradients: QKV (4096 + 2 x 1024)/2, output and down
    # projections h/t each, gate + up 2 x 14336/2.
    fwd, bwd = pf.fp8_cast_elements_per_token(m.LLAMA3_8B, tp=2, sequence_parallel=True)
    assert fwd == 2 * 2048 + 2048 + 7168
    assert bwd == 2 * 2048 + 3072 + 14336
    fwd1, _ = pf.fp8_cast_elements_per_token(m.LLAMA3_8B, tp=2, sequence_parallel=False)
    assert fwd1 == 2 * 4096 + 2048 + 7168


def _estimate(stack: Stack, cfg: ParallelConfig) -> perf.StepEstimate:
    return perf.estimate(m.LLAMA3_70B, cfg, H100, None, stack, memory_budget_gb=None)


CFG = ParallelConfig(tp=4, pp=4, dp=2, cp=1, zero_stage=1, micro_batch=1, grad_accum=16,
                     seq_len=8192, activation_recompute="selective", virtual_stages=5)


def test_fp8_speeds_up_a_step_by_less_than_its_gemms_alone() -> None:
    bf16 = _estimate(MEGATRON_CORE_2024, CFG)
    fp8 = _estimate(FP8_CORE, CFG)
    # attention, element-wise work, the output head and communication stay as they were,
    # and the casts are added: the step gains, but less than the 1.77x of the GEMMs
    assert 1.1 < bf16.step_time_s / fp8.step_time_s < 1402.6 / 792.1
    # MFU stays on the BF16 peak, as the published FP8 tables do not (they divide by FP8's)
    assert fp8.mfu > bf16.mfu


def test_the_casts_cost_what_their_bytes_take_through_hbm() -> None:
    # Casting free (0 bytes per element) against 6: the difference is the cast traffic of
    # the busiest stage's layers per micro-batch, forward + backward (selective
    # recomputation redoes no GEMM input), times the micro-batches, over HBM.
    layers = m.LLAMA3_70B.n_layers // CFG.pp
    fwd, bwd = pf.fp8_cast_elements_per_token(m.LLAMA3_70B, CFG.tp, True)
    tokens = CFG.micro_batch * CFG.seq_len
    per_mb = 6.0 * (fwd + bwd) * tokens * layers / (H100.hbm_bandwidth_tb_per_s * 1e12)
    original = pf.FP8_CAST_BYTES
    try:
        pf.FP8_CAST_BYTES = 0.0
        free = _estimate(FP8_CORE, CFG)
    finally:
        pf.FP8_CAST_BYTES = original
    costed = _estimate(FP8_CORE, CFG)
    added = costed.breakdown["compute"] - free.breakdown["compute"]
    assert added == pytest.approx(per_mb * CFG.grad_accum, rel=1e-6)


def test_fsdp2_with_float8_on_an_a100_is_refused() -> None:
    cfg = ParallelConfig(tp=1, pp=1, dp=8, zero_stage=3, micro_batch=1, grad_accum=1,
                         seq_len=4096)
    with pytest.raises(ValueError, match="FP8"):
        perf.estimate(m.LLAMA3_8B, cfg, hw.A100_SXM_80GB, None,
                      replace(FSDP2, linear_precision="fp8"), memory_budget_gb=None)
