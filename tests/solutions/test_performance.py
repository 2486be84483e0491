"""The step-time model against hand arithmetic from the papers' formulas."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import performance as perf
from solutions.performance import flops as pf
from solutions.performance import stage as stage_model
from solutions.performance.validation import gpt, narayanan_tflops_per_gpu
from solutions.planner.memory import ParallelConfig
from solutions.stack import DEEPSPEED_PIPELINE, DEEPSPEED_PIPELINE_2020

GPT_145B = gpt(145.6, n_layers=80, d_model=12288, n_heads=96)
SELENE = hw.SELENE_A100
NO_NETWORK_LATENCY = replace(SELENE, nvlink_latency_us=0.0, inter_node_latency_us=0.0)


def _estimate(arch: m.Architecture, cfg: ParallelConfig, cluster: hw.Cluster = SELENE,
              stack: perf.Stack = perf.MEGATRON_2021) -> perf.StepEstimate:
    return perf.estimate(arch, cfg, cluster.gpu, cluster, stack, memory_budget_gb=None)


def test_narayanan_flops_formula_with_recomputation() -> None:
    # Narayanan et al. 2021, appendix: F = 96 B s l h^2 (1 + s/6h + V/16lh) per batch
    cfg = ParallelConfig(tp=8, pp=8, dp=24, micro_batch=2, grad_accum=48, seq_len=2048,
                         activation_recompute="full", zero_stage=0, virtual_stages=2)
    b, s, layers, h, v = 2304, 2048, 80, 12288, 51200
    by_hand = 96 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    step = _estimate(GPT_145B, cfg).step_time_s
    per_batch = narayanan_tflops_per_gpu(GPT_145B, cfg, step) * 1e12 * cfg.n_gpus * step
    assert per_batch == pytest.approx(by_hand, rel=1e-3)


def test_flops_without_recomputation_are_72_with_v_over_12lh() -> None:
    # 3 passes instead of 4: 72 B s l h^2 (1 + s/6h + V/12lh); attention counted in full
    s, layers, h, v = 2048, 80, 12288, 51200
    by_hand = 72 * s * layers * h**2 * (1 + s / (6 * h) + v / (12 * layers * h)) / s
    assert pf.model_flops_per_token(GPT_145B, s, causal=False) == pytest.approx(by_hand,
                                                                                rel=1e-3)


def test_llama_405b_model_flops_count_causal_attention() -> None:
    # matmul weights per layer: 2 x 16384^2 + 2 x 16384 x 1024 (GQA) + 3 x 16384 x 53248
    per_layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248
    matmul = 6 * (126 * per_layer + 128256 * 16384)  # + the output head
    attention = 3 * 126 * 2 * 8192 * 16384  # half of 4 s (heads x head_dim), fwd + bwd
    assert pf.model_flops_per_token(m.LLAMA3_405B, 8192) == pytest.approx(matmul + attention)


def test_latent_attention_scores_over_192_wide_keys_and_weights_128_wide_values() -> None:
    # DeepSeek-V3 (report §2.1.1): 128 heads; QK^T over qk_nope + qk_rope = 128 + 64 = 192
    # values, softmax x V over v_head_dim = 128: 2 s 128 (192 + 128) forward FLOPs a token
    s = 4096
    full = 2 * s * 128 * (192 + 128)
    assert pf.attention_flops_per_token(m.DEEPSEEK_V3, s, causal=False) == pytest.approx(full)
    assert pf.attention_flops_per_token(m.DEEPSEEK_V3, s) == pytest.approx(full / 2)
    # equal widths give the usual 4 s heads head_dim
    assert pf.attention_flops_per_token(m.LLAMA3_8B, s, causal=False) == pytest.approx(
        4 * s * 32 * 128)


def test_one_gpu_step_is_compute_by_hand() -> None:
    arch = m.GENERIC_7B
    cfg = ParallelConfig(tp=1, pp=1, dp=1, micro_batch=1, grad_accum=4, seq_len=4096,
                         activation_recompute="none", zero_stage=0)
    est = _estimate(arch, cfg, hw.LLAMA3_H100, perf.MODERN)
    # GEMM [4096, 4096] x [4096, 11008]: intensity mkn / (mk + kn + mn)
    mm, k, n = 4096, 4096, 11008
    ai = mm * k * n / (mm * k + k * n + mm * n)
    tiles = (4096 // 128) * 86  # 11008 / 128 = 86 tiles exactly
    waves = tiles / 132  # H100 SMs
    sustained = pf.SUSTAINED_FRACTION["H100"]
    f = sustained * 792.1 / 989.0 * waves / (waves + 0.5)  # MAMF ceiling, no tile waste
    eff = f / (1 + f * (989.4e12 / 3.35e12) / ai)
    # FlashAttention-3-class kernel (Stack "hopper"): forward 630 (long sequences), backward
    # 500 TFLOP/s, the backward 2.5x the forward's FLOPs
    # at 4,096 tokens, 1 / (1 + 230 / 4096) of the long-sequence rate
    attention_eff = sustained * 3.5 / (1 / 630 + 2.5 / 500) / 989 / (1 + 230 / 4096)
    layer_w = 4 * 4096**2 + 3 * 4096 * 11008
    matmul_fwd = 4096 * (32 * 2 * layer_w + 2 * 32000 * 4096)
    attention_fwd = 4096 * 32 * 2 * 4096 * 4096  # 4 s h per token, causal half
    elementwise = pf.ELEMENTWISE_PASSES["fused"] * 32 * 34 * 4096 * 4096 / 3.35e12
    # the benchmark rate counts forward + backward as 3.5 forwards (FlashAttention's
    # benchmark_flash_attention.py), so the kernel spends 3.5 forwards' FLOPs at that rate
    by_hand = 4 * (3 * matmul_fwd / (989.4e12 * eff) + 3.5 * attention_fwd / (989.4e12 *
                                                                             attention_eff)
                   + elementwise)
    assert est.breakdown["compute"] == pytest.approx(by_hand, rel=1e-9)
    assert sum(v for k, v in est.breakdown.items() if k not in ("compute", "optimizer")) == 0


def test_unfused_attention_backward_is_two_forwards_by_hand() -> None:
    # Scores kept in HBM: the backward is four score-sized GEMMs (dP, dV, dS->dQ, dK), two
    # forwards, the whole s x s matrix computed, and the scores' bytes streamed by the
    # element-wise kernels (Korthikanti et al. 2022, Table 2: 5 a s^2 b per layer)
    arch, s = m.GENERIC_7B, 4096
    cfg = ParallelConfig(tp=1, pp=1, dp=1, micro_batch=1, grad_accum=1, seq_len=s,
                         activation_recompute="none", zero_stage=0)
    stack = replace(perf.MODERN, fused_attention=False)
    est = _estimate(arch, cfg, hw.LLAMA3_H100, stack)
    mm, k, n = s, 4096, 11008
    ai = mm * k * n / (mm * k + k * n + mm * n)
    waves = (4096 // 128) * 86 / 132
    f = pf.SUSTAINED_FRACTION["H100"] * 792.1 / 989.0 * waves / (waves + 0.5)
    eff = f / (1 + f * (989.4e12 / 3.35e12) / ai)
    layer_w = 4 * 4096**2 + 3 * 4096 * 11008
    matmul_fwd = s * (32 * 2 * layer_w + 2 * 32000 * 4096)
    attention_fwd = s * 32 * 4 * s * 4096  # 4 s h per token, the whole matrix
    passes = pf.ELEMENTWISE_PASSES[stack.elementwise]
    elementwise = passes * 32 * (34 * s * 4096 + 5 * 32 * s * s) / 3.35e12  # bytes
    by_hand = 3 * (matmul_fwd + attention_fwd) / (989.4e12 * eff) + elementwise
    assert est.breakdown["compute"] == pytest.approx(by_hand, rel=1e-9)


def test_breakdown_adds_up_and_mfu_is_model_flops_over_peak() -> None:
    cfg = ParallelConfig(tp=8, pp=16, dp=128, cp=1, micro_batch=1, grad_accum=16,
                         seq_len=8192, zero_stage=3, activation_recompute="full",
                         virtual_stages=2)
    est = perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM)
    assert tuple(est.breakdown) == perf.BREAKDOWN_KEYS
    assert sum(est.breakdown.values()) == pytest.approx(est.step_time_s)
    assert est.tokens_per_s == pytest.approx(2048 * 8192 / est.step_time_s)
    assert est.mfu == pytest.approx(est.model_tflops_per_gpu / 989.4)
    # full recomputation: one more forward of every layer, ~4/3 of the model FLOPs
    assert 1.25 < est.hfu / est.mfu < 4 / 3
    assert all(v >= 0 for v in est.breakdown.values())
    html = est._repr_html_()
    assert all(key in html for key in perf.BREAKDOWN_KEYS)


def test_tp_all_reduces_by_hand() -> None:
    # GPT 18.4B on one node, TP 8, no recomputation: 4 all-reduces per layer per micro-batch
    arch = gpt(18.4, n_layers=40, d_model=6144, n_heads=48)
    cfg = ParallelConfig(tp=8, pp=1, dp=1, micro_batch=8, grad_accum=4, seq_len=2048,
                         activation_recompute="none", zero_stage=0)
    est = _estimate(arch, cfg, NO_NETWORK_LATENCY)
    message = 8 * 2048 * 6144 * 2  # bytes of the [b s, h] activation
    one = 2 * 7 * message / 8 / (300e9 * SELENE.collective_efficiency)  # 2(t-1) M/(t B)
    assert est.breakdown["tp"] == pytest.approx(4 * 40 * 4 * one)
    full = _estimate(arch, replace(cfg, activation_recompute="full"), NO_NETWORK_LATENCY)
    assert full.breakdown["tp"] == pytest.approx(est.breakdown["tp"] * 6 / 4)


def test_pipeline_bubble_is_p_minus_1_over_v_m_of_the_stage_work() -> None:
    cfg = ParallelConfig(tp=8, pp=8, dp=24, micro_batch=2, grad_accum=48, seq_len=2048,
                         activation_recompute="full", zero_stage=0, virtual_stages=2)
    b = _estimate(GPT_145B, cfg).breakdown
    work = b["compute"] + b["recompute"] + b["tp"] + b["cp"] + b["ep"]
    assert b["pp_bubble"] / work == pytest.approx((8 - 1) / (2 * 48))


def test_stage_sends_cross_nodes_and_interleaving_multiplies_them() -> None:
    cfg = ParallelConfig(tp=8, pp=8, dp=24, micro_batch=2, grad_accum=48, seq_len=2048,
                         activation_recompute="full", zero_stage=0)
    one = 2 * (2 * 2048 * 12288 * 2 / 8) / (25e9 * SELENE.collective_efficiency)
    plain = _estimate(GPT_145B, cfg, NO_NETWORK_LATENCY).breakdown["pp_send"]
    assert plain == pytest.approx((48 + 7) * one)  # (m v + p - 1) sends of b s h / t
    inter = _estimate(GPT_145B, replace(cfg, virtual_stages=2), NO_NETWORK_LATENCY)
    assert inter.breakdown["pp_send"] == pytest.approx((96 + 7) * one)


def test_dp_reduction_exposed_without_overlap_and_mostly_hidden_with_it() -> None:
    arch = gpt(1.7, n_layers=24, d_model=2304, n_heads=24)
    cfg = ParallelConfig(tp=1, pp=1, dp=32, micro_batch=16, grad_accum=1, seq_len=2048,
                         activation_recompute="full", zero_stage=0)
    # parameters: 24 layers x (12 h^2 + 13 h) + V h (one tied table) + 2048 positions x h
    h = 2304
    params = 24 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h
    # 8 of the 32 ranks on each node: the ring drives all 8 HDR ports of a node, 8 x 25 GB/s
    # (below NVLink's 300), not one GPU's 25 GB/s
    by_hand = 2 * 31 * params * 2 / 32 / (8 * 25e9 * SELENE.collective_efficiency)
    stack = replace(perf.MEGATRON_2021, overlap_dp=False)
    exposed = _estimate(arch, cfg, NO_NETWORK_LATENCY, stack).breakdown["dp_exposed"]
    assert exposed == pytest.approx(by_hand, rel=1e-5)
    hidden = _estimate(arch, cfg, NO_NETWORK_LATENCY, perf.MEGATRON_2021)
    # only the last of 24 buckets sticks out; the 23 that hide still cost the interference
    last = exposed / 24
    by_hand = last + stage_model.OVERLAP_INTERFERENCE * (exposed - last)
    assert hidden.breakdown["dp_exposed"] == pytest.approx(by_hand, rel=1e-6)


def test_context_parallel_all_gather_is_on_the_critical_path() -> None:
    base = ParallelConfig(tp=8, cp=1, pp=16, dp=8, micro_batch=1, grad_accum=16,
                          seq_len=131072, zero_stage=3, activation_recompute="selective",
                          virtual_stages=2)
    cfg = replace(base, cp=16)
    est = perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, memory_budget_gb=None)
    # per layer: all-gather of local K,V (2 x 8192 tokens x 1 KV head x 128 x 2 bytes) over
    # 16 ranks for the forward, again for the backward (one layer's gathered K/V is kept),
    # and the reduce-scatter of their gradients: 3 x 15 steps, 8 layers, 16 micro-batches
    c = hw.LLAMA3_H100
    local = 2 * 8192 * 128 * 2
    step = c.inter_node_latency_us * 1e-6 + local / (50e9 * c.collective_efficiency)
    assert est.breakdown["cp"] == pytest.approx(16 * 8 * 3 * 15 * step)


def test_zero3_charges_parameter_all_gathers() -> None:
    cfg = ParallelConfig(tp=8, pp=16, dp=128, micro_batch=1, grad_accum=16, seq_len=8192,
                         zero_stage=1, activation_recompute="full", virtual_stages=2)
    z1 = perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM)
    z3 = perf.estimate(m.LLAMA3_405B, replace(cfg, zero_stage=3), hw.H100_SXM)
    assert z1.breakdown["fsdp_gather"] == 0 < z3.breakdown["fsdp_gather"]


@pytest.mark.parametrize("cfg", [
    ParallelConfig(tp=3, pp=16, dp=128),     # 128 heads do not split 3 ways
    ParallelConfig(tp=8, pp=127, dp=16),     # more stages than layers
])
def test_invalid_layouts_raise(cfg: ParallelConfig) -> None:
    with pytest.raises(ValueError, match="invalid layout|stages|split"):
        perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM)


def test_out_of_memory_raises_unless_the_check_is_off() -> None:
    cfg = ParallelConfig(tp=8, pp=16, dp=128, grad_accum=16, zero_stage=0,
                         activation_recompute="none")
    with pytest.raises(ValueError, match="Needs") as err:
        perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM)
    # the default budget is the GPU's capacity, and the message says so: 80 GiB = 85.9 GB
    assert "budget is 85.9 GB" in str(err.value) and "80 GiB = 85.9 GB" in str(err.value)
    assert perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, memory_budget_gb=None).mfu > 0


def test_the_paper_layout_fits_the_capacity_it_ran_on() -> None:
    # Llama 3's 16,384-GPU 8K layout needs about 77 GB: under the H100's 85.9 GB, so the
    # default check passes; an explicit 70 GB budget refuses it and names that budget
    from solutions.stack import LLAMA3
    cfg = ParallelConfig(tp=8, pp=16, dp=128, micro_batch=1, grad_accum=16, seq_len=8192,
                         zero_stage=3, activation_recompute="none", virtual_stages=8)
    assert perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, stack=LLAMA3).warnings == ()
    with pytest.raises(ValueError, match="budget is 70 GB") as err:
        perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, stack=LLAMA3, memory_budget_gb=70.0)
    assert "capacity" not in str(err.value)


def test_step_time_from_a_cost_table_by_hand() -> None:
    # 16 micro-batches of 0.3 s on 16 stages, v = 2, sends of 5 ms, 0.1 s exposed DP:
    # 16 x 0.3 + 15/2 x 0.3 + (32 + 15) x 0.005 + 0.1 = 4.8 + 2.25 + 0.235 + 0.1 = 7.385 s
    assert perf.step_time_from_costs(0.3, 0.005, 16, 16, 2, 0.1) == pytest.approx(7.385)
    assert perf.step_time_from_costs(0.3, 0.005, 1, 16, 1, 0.0) == pytest.approx(4.8)
    # m < p: plain 1F1B still works (bubble 15 x work); Megatron's interleaving refuses it
    assert perf.pipeline_costs_s(0.3, 0.0, 16, 4, 1) == pytest.approx((4.5, 0.0))
    with pytest.raises(ValueError, match="at least pp=16"):
        perf.step_time_from_costs(0.3, 0.005, 16, 4, 2, 0.1)


@pytest.mark.parametrize(("v", "bubble_over_compute"), [(1, 3.75), (2, 3.375), (4, 3.1875),
                                                        (8, 3.09375)])
def test_interleaving_with_fewer_micro_batches_than_stages(v: int,
                                                           bubble_over_compute: float) -> None:
    # Llama 3's schedule, p = 16, m = 4: 375 %, 337.5 %, 318.8 %, 309.4 % of the compute
    # (breadth-first order simulated by solutions.pipeline; content review finding 6)
    bubble, _ = perf.pipeline_costs_s(1.0, 0.0, 16, 4, v, m_below_p=True)
    assert bubble / 4 == pytest.approx(bubble_over_compute)
    with pytest.raises(ValueError):
        perf.step_time_from_costs(-0.3, 0.005, 16, 16, 2, 0.1)


@pytest.mark.parametrize("kwargs", [dict(memory_budget_gb=0), dict(memory_budget_gb=-5),
                                    dict(zero_stages=()), dict(zero_stages=(4,))])
def test_recommend_rejects_impossible_search_settings(kwargs: dict) -> None:
    from solutions import planner

    with pytest.raises(ValueError, match="memory_budget_gb|zero_stages"):
        planner.recommend(m.LLAMA3_405B, 16384, 2048, 8192, **kwargs)


def test_wrong_argument_types_are_named() -> None:
    from solutions import planner

    with pytest.raises(ValueError, match="arch must be"):
        planner.recommend("llama3-405b", 16384, 2048, 8192)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seq_len"):
        planner.recommend(m.LLAMA3_405B, 16384, 2048, 8192.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cfg must be"):
        perf.estimate(m.LLAMA3_405B, {"tp": 8}, hw.H100_SXM)  # type: ignore[arg-type]


# -- the error classes of published runs, as physics -----------------------------------------

def test_a_group_spanning_whole_nodes_uses_the_nodes_network() -> None:
    # NCCL: one ring per port; k members of a group per node drive k of its ports
    c = hw.SELENE_A100  # 8 x 25 GB/s HDR per node, NVLink 300 GB/s
    assert c.group_gb_per_s(True, 1) == pytest.approx(25 * c.collective_efficiency)
    assert c.group_gb_per_s(True, 8) == pytest.approx(200 * c.collective_efficiency)
    assert c.group_gb_per_s(False, 8) == pytest.approx(300 * c.collective_efficiency)
    fat = replace(c, inter_node_gb_per_s=50.0)  # 8 x 400 Gb/s: capped by NVLink
    assert fat.group_gb_per_s(True, 8) == pytest.approx(300 * c.collective_efficiency)


def test_small_messages_reach_less_bus_bandwidth() -> None:
    # alpha-beta: S bytes per rank reach B / (1 + n alpha B / S), the NCCL-tests curve
    cfg = ParallelConfig(tp=1, pp=1, dp=64, zero_stage=3)
    links = perf.Links(SELENE, cfg)
    b = links.dp_gb_per_s * 1e9
    alpha = SELENE.latency_s(True)
    for size in (1e6, 1e8, 1e10):
        t = links.dp_reduce_scatter_s(size / 2, 64, 2)
        busbw = size * 63 / 64 / t
        assert busbw == pytest.approx(b / (1 + 64 * alpha * b / size), rel=1e-9)


def test_tp_comm_overlap_hides_tp_under_the_gemms() -> None:
    cfg = ParallelConfig(tp=8, pp=1, dp=1, micro_batch=1, grad_accum=8, seq_len=4096,
                         activation_recompute="none", zero_stage=1)
    exposed = _estimate(m.LLAMA3_70B, cfg, hw.LLAMA3_H100,
                        replace(perf.MODERN, tp_comm_overlap=False)).breakdown["tp"]
    hidden = _estimate(m.LLAMA3_70B, cfg, hw.LLAMA3_H100, perf.MODERN).breakdown["tp"]
    # the GEMMs take longer than the TP collectives, so only the interference is left
    assert hidden == pytest.approx(stage_model.OVERLAP_INTERFERENCE * exposed)


def test_full_shard_gathers_every_micro_batch_llama3_once_per_step() -> None:
    cfg = ParallelConfig(tp=8, pp=1, dp=64, micro_batch=1, grad_accum=4, seq_len=8192,
                         activation_recompute="full", zero_stage=3)
    more = replace(cfg, grad_accum=8)
    fsdp = [_estimate(m.LLAMA3_70B, c, hw.LLAMA3_H100, perf.FSDP2_STACK)
            for c in (cfg, more)]
    llama = [_estimate(m.LLAMA3_70B, c, hw.LLAMA3_H100, perf.LLAMA3) for c in (cfg, more)]
    assert fsdp[1].breakdown["fsdp_gather"] == pytest.approx(2 * fsdp[0].breakdown["fsdp_gather"])
    assert llama[1].breakdown["fsdp_gather"] == pytest.approx(llama[0].breakdown["fsdp_gather"])
    assert llama[0].breakdown["fsdp_gather"] < fsdp[0].breakdown["fsdp_gather"]


def test_deepspeed_zero3_exposes_half_its_gathers_when_compute_is_long() -> None:
    # 1 GPU per node (TP 8 fills it), long micro-batches: FSDP hides the gathers, DeepSpeed
    # ZeRO-3 waits on about half of them
    cfg = ParallelConfig(tp=8, pp=1, dp=16, micro_batch=8, grad_accum=1, seq_len=4096,
                         activation_recompute="full", zero_stage=3)
    fsdp = _estimate(m.LLAMA3_70B, cfg, SELENE,
                     replace(perf.FSDP2_STACK, sequence_parallel=False))
    ds = _estimate(m.LLAMA3_70B, cfg, SELENE, perf.DEEPSPEED_ZERO3_STACK)
    links = perf.Links(SELENE, cfg)
    params = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672) / 8
    gather = links.dp_reduce_scatter_s(params, 16, 2)
    # forward: one gather, backward: one gather (the reduce-scatter is dp_exposed); half of
    # each waits, the half that hides costs the interference; FSDP hides all (one of 80
    # layer buckets sticks out)
    i = stage_model.OVERLAP_INTERFERENCE
    assert ds.breakdown["fsdp_gather"] == pytest.approx(2 * gather * (0.5 + 0.5 * i),
                                                        rel=0.05)
    last = gather / 80
    assert fsdp.breakdown["fsdp_gather"] == pytest.approx(2 * (last + i * (gather - last)),
                                                          rel=0.05)


@pytest.mark.parametrize(("stack", "bytes_per_weight"), [
    # a separate pass reads the 16-bit gradient and reads and writes the FP32 accumulator
    (replace(perf.MODERN, fused_grad_accumulation=False), 2 + 2 * 4),
    # DeepSpeed's BF16_Optimizer.update_hp_grads: hp_grad.add_(lp.grad.to(hp_grad.dtype)) reads
    # the BF16 gradient (2), writes and reads its FP32 copy (4 + 4), reads and writes the
    # FP32 buffer (4 + 4)
    (DEEPSPEED_PIPELINE, 2 + 4 * 4),
    # the FP16 engine of 2020-2021: autograd adds each micro-batch into the FP16 .grad in
    # place, reading the new gradient and the old and writing the sum
    (DEEPSPEED_PIPELINE_2020, 2 + 2 * 2),
], ids=["unfused", "deepspeed-bf16", "deepspeed-fp16"])
def test_gradient_accumulation_pass_when_the_gemm_does_not_accumulate(
        stack: perf.Stack, bytes_per_weight: int) -> None:
    # 1.7B GPT, DP 8 in one node, 4 micro-batches: the pass's bytes per weight per
    # micro-batch, against the same stack with the GEMM accumulating
    arch = gpt(1.7, n_layers=24, d_model=2304, n_heads=24)
    cfg = ParallelConfig(tp=1, pp=1, dp=8, micro_batch=4, grad_accum=4, seq_len=2048,
                         activation_recompute="none", zero_stage=1)
    with_pass = _estimate(arch, cfg, SELENE, stack)
    fused = _estimate(arch, cfg, SELENE, replace(stack, fused_grad_accumulation=True))
    h = 2304
    params = 24 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h
    by_hand = 4 * params * bytes_per_weight / 2.039e12
    assert (with_pass.breakdown["compute"] - fused.breakdown["compute"]
            == pytest.approx(by_hand, rel=1e-4))


def test_stack_none_is_the_default_and_a_wrong_stack_is_named() -> None:
    cfg = ParallelConfig(tp=8, pp=16, dp=128, micro_batch=1, grad_accum=16, seq_len=8192,
                         zero_stage=1, activation_recompute="full", virtual_stages=2)
    default = perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, stack=None)
    given = perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, stack=perf.MODERN)
    assert replace(default, warnings=()) == given and given.warnings == ()
    assert default.warnings == (f"No stack given: {perf.MODERN.name} assumed; pass stack= "
                                "(solutions.stack.STACKS) for the software the run uses.",)
    with pytest.raises(ValueError, match="stack must be"):
        perf.estimate(m.LLAMA3_405B, cfg, hw.H100_SXM, stack="llama3")  # type: ignore[arg-type]


def test_nodes_a_token_reaches_by_counting_subsets() -> None:
    # second method: P(a node holds none of the k experts) = C(E - E/n, k) / C(E, k)
    from math import comb

    from solutions.performance.comm import nodes_reached
    for n, e, k in ((8, 256, 8), (4, 64, 6), (2, 16, 2), (1, 8, 2)):
        miss = comb(e - e // n, k) / comb(e, k)
        assert nodes_reached(n, e, k) == pytest.approx(n * (1 - miss))
    assert nodes_reached(8, 256, 1) == pytest.approx(1.0)  # one expert: one node


def test_deepep_sends_a_token_once_per_node_not_once_per_expert() -> None:
    from solutions import stack as st
    arch = m.DEEPSEEK_V3
    cfg = ParallelConfig(tp=1, pp=1, dp=64, ep=64, zero_stage=1, micro_batch=1,
                         grad_accum=1, seq_len=4096, activation_recompute="none")
    plain = perf.breakdown_s(arch, cfg, hw.H100_SXM, hw.LLAMA3_H100, st.MODERN)["ep"]
    dedup = perf.breakdown_s(arch, cfg, hw.H100_SXM, hw.LLAMA3_H100,
                             replace(st.MODERN, ep_node_dedup=True))["ep"]
    # EP 64 = 8 nodes; a token's 8 of 256 experts reach 8 (1 - (224 choose 8)/(256 choose 8))
    # = 5.3 nodes, 4.6 of them remote, against 8 x 56/64 = 7 remote copies without dedup;
    # DeepEP also runs at the port's line rate instead of NCCL's 0.8 of it
    assert dedup / plain == pytest.approx(4.6 / 7 * 0.8, rel=0.03)


def test_attention_rate_grows_with_sequence_as_the_microbenchmark_does() -> None:
    # FlashAttention-3 forward, H100, head dimension 128 (pytorch/benchmark PR #2391):
    # 430, 517, 566, 590, 614, 621 TFLOP/s at 512 ... 16,384 tokens; the model's curve,
    # scaled to its long-sequence rate of 630, is within 2 % of each
    measured = {512: 430, 1024: 517, 2048: 566, 4096: 590, 8192: 614, 16384: 621}
    long = pf.attention_efficiency(hw.H100_SXM, "hopper")
    for seq, tflops in measured.items():
        modelled = 630 * pf.attention_efficiency(hw.H100_SXM, "hopper", seq) / long
        assert modelled == pytest.approx(tflops, rel=0.02)
    assert pf.attention_efficiency(hw.H100_SXM, "hopper", 10**9) == pytest.approx(long)


def test_zero2_reduces_every_micro_batch_and_zero1_once() -> None:
    # Rajbhandari et al. 2020, §5.2: ZeRO-2 reduce-scatters each micro-batch's gradients into
    # the shard as buckets fill; ZeRO-1 reduce-scatters the accumulated gradient once. Without
    # overlap, m = 4: ZeRO-2 pays 4 reduce-scatters + 1 all-gather, ZeRO-1 1 + 1, ZeRO-0's
    # all-reduce 2 such volumes. 1.7B GPT over 32 ranks, 8 per node, at the node's 8 ports.
    arch = gpt(1.7, n_layers=24, d_model=2304, n_heads=24)
    h = 2304
    params = 24 * (12 * h * h + 13 * h) + 51200 * h + 2048 * h + 2 * h
    one = 31 * params * 2 / 32 / (8 * 25e9 * SELENE.collective_efficiency)
    stack = replace(perf.MEGATRON_2021, overlap_dp=False)
    exposed = {}
    for stage in (0, 1, 2):
        cfg = ParallelConfig(tp=1, pp=1, dp=32, micro_batch=4, grad_accum=4, seq_len=2048,
                             activation_recompute="full", zero_stage=stage)
        exposed[stage] = _estimate(arch, cfg, NO_NETWORK_LATENCY, stack).breakdown["dp_exposed"]
    assert exposed[0] == pytest.approx(2 * one, rel=1e-5)
    assert exposed[1] == pytest.approx(2 * one, rel=1e-5)
    assert exposed[2] == pytest.approx(5 * one, rel=1e-5)


def test_zero2_ranks_behind_zero1_once_there_is_accumulation() -> None:
    # the same layout with overlap (Megatron-Core): equal at m = 1, ZeRO-2 slower at m = 8
    # (8 reduce-scatters, each under one micro-batch's backward, against one)
    cfg = ParallelConfig(tp=2, pp=1, dp=64, micro_batch=1, grad_accum=1, seq_len=4096,
                         activation_recompute="selective", zero_stage=1)
    lay = [replace(cfg, zero_stage=z, grad_accum=m_) for m_ in (1, 8) for z in (1, 2)]
    t = [_estimate(m.LLAMA3_8B, c, hw.LLAMA3_H100, perf.MODERN).step_time_s for c in lay]
    assert t[1] == pytest.approx(t[0], rel=1e-12)
    assert t[3] > t[2] * 1.001


def test_uneven_chunks_pay_the_bubble_of_the_largest_chunk() -> None:
    # 70B: 80 layers over PP 4 is 20 a stage; v = 8 chunks of 3,3,3,3,2,2,2,2 layers. The
    # fill and drain are paced by a 3-layer chunk, so the bubble divides by 20/3, not 8
    cluster = hw.LLAMA3_H100
    costs = {}
    for v in (1, 4, 8):
        cfg = ParallelConfig(tp=8, pp=4, dp=4, micro_batch=1, grad_accum=16, seq_len=8192,
                             activation_recompute="none", zero_stage=3, virtual_stages=v)
        costs[v] = perf.breakdown_s(m.LLAMA3_70B, cfg, cluster.gpu, cluster, perf.LLAMA3)
    for v, paced in ((1, 1.0), (4, 4.0), (8, 20 / 3)):
        b = costs[v]
        per_mb = sum(b[k] for k in ("compute", "recompute", "tp", "cp", "ep")) / 16
        assert b["pp_bubble"] == pytest.approx(3 / paced * per_mb, rel=1e-9)
    with pytest.raises(ValueError, match="bubble_v"):
        perf.pipeline_costs_s(1.0, 0.0, 4, 16, 4, bubble_v=5.0)


@pytest.mark.parametrize("stack", [perf.MODERN, perf.FSDP_STACK, perf.LLAMA3,
                                   perf.DEEPSPEED_ZERO3_STACK], ids=lambda s: s.name[:20])
@pytest.mark.parametrize("zero_stage", [1, 2, 3])
def test_time_and_traffic_count_the_same_gathers_and_reductions(stack: perf.Stack,
                                                                zero_stage: int) -> None:
    # with nothing hidden, the DP seconds are the bytes the traffic model counts per
    # parameter (planner.traffic, from planner.memory's counts) at one byte's time each
    from solutions.planner.memory import stage_params
    from solutions.planner.traffic import dp_bytes_per_param
    arch = gpt(1.7, n_layers=24, d_model=2304, n_heads=24)
    cfg = ParallelConfig(tp=1, pp=1, dp=32, micro_batch=2, grad_accum=4, seq_len=2048,
                         activation_recompute="full", zero_stage=zero_stage)
    bare = replace(stack, overlap_dp=False, gather_hidden_fraction=0.0)
    b = perf.breakdown_s(arch, cfg, SELENE.gpu, NO_NETWORK_LATENCY, bare)
    params = stage_params(arch, cfg, 0).total
    per_byte = perf.Links(NO_NETWORK_LATENCY, cfg, bare.pp_outermost,
                          bare.flat_dp_collectives).dp_reduce_scatter_s(
        params, 32, 1.0)
    counted = dp_bytes_per_param(cfg, bare.grad_reduce_bytes, bare)
    assert (b["dp_exposed"] + b["fsdp_gather"]) / per_byte == pytest.approx(counted, rel=1e-6)
