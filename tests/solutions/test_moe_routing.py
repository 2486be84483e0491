"""The HBM traffic of routing a MoE layer's tokens to their experts and back
(:mod:`solutions.performance.routing`). Expected values are summed kernel by kernel from
Megatron-Core's dispatcher workflow (``token_dispatcher.py``), written out here rather
than read back from the code under test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import ParallelConfig
from solutions.performance import estimate, routing
from solutions.performance import flops as pf
from solutions.performance import stage as pm
from solutions.stack import MODERN

DSV3 = m.MODELS["deepseek-v3"]  # 256 routed experts, 8 active, h = 7,168


def test_all_to_all_dispatcher_kernel_by_kernel() -> None:
    cfg = ParallelConfig(tp=1, pp=16, dp=32, ep=32, seq_len=4096)  # 8 experts per GPU
    h, k = 7168, 8
    permute = h + k * h  # read the row once, write its 8 copies
    sort = k * h + k * h  # read and write every copy
    unpermute = k * h + h  # read the 8 copies, write their weighted sum
    forward = permute + sort + sort + unpermute
    backward = (h + 2 * k * h) + sort + sort + (k * h + h)  # adjoints, probs' gradient
    assert routing.routing_values_per_token(DSV3, cfg) == (forward, backward)
    assert forward == 50 * h and backward == 58 * h
    fwd_bytes, bwd_bytes = routing.routing_bytes_per_token(DSV3, cfg)
    assert (fwd_bytes, bwd_bytes) == (2 * forward, 2 * backward)


def test_one_expert_per_gpu_needs_no_sort_and_a_split_expert_sorts_every_copy() -> None:
    h, k = 7168, 8
    one_each = ParallelConfig(tp=1, pp=16, dp=256, ep=256, seq_len=4096)
    assert routing.routing_values_per_token(DSV3, one_each) == (
        2 * (k + 1) * h, (3 * k + 2) * h)
    # experts split over 2 ranks: both receive every copy, so the sorts move twice the rows
    split = ParallelConfig(tp=2, pp=16, dp=16, ep=16, etp=2, seq_len=4096)
    one = ParallelConfig(tp=1, pp=16, dp=32, ep=16, etp=1, seq_len=4096)
    (f2, b2), (f1, b1) = (routing.routing_values_per_token(DSV3, c) for c in (split, one))
    assert f2 - f1 == b2 - b1 == 4 * k * h


def test_deepep_builds_the_copies_from_the_rows_each_rank_received() -> None:
    h, k = 7168, 8
    # one expert per rank: a token reaches exactly k distinct ranks
    cfg = ParallelConfig(tp=1, pp=16, dp=256, ep=256, seq_len=4096)
    fwd, bwd = routing.routing_values_per_token(DSV3, cfg, dedup=True)
    assert fwd == pytest.approx(2 * (k + k) * h) and bwd == pytest.approx(5 * k * h)
    # a single rank holds every expert: each token arrives once and is copied 8 times
    alone = ParallelConfig(tp=1, pp=16, dp=8, ep=1, seq_len=4096)
    fwd, bwd = routing.routing_values_per_token(DSV3, alone, dedup=True)
    assert fwd == pytest.approx(2 * (1 + k) * h) and bwd == pytest.approx((3 * k + 2) * h)


def test_dense_models_route_nothing() -> None:
    cfg = ParallelConfig(tp=8, pp=16, dp=8, seq_len=8192)
    assert routing.routing_values_per_token(m.LLAMA3_405B, cfg) == (0.0, 0.0)


def test_the_step_pays_forward_and_backward_routing_at_hbm_bandwidth(
        monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = hw.H100_SXM
    cfg = ParallelConfig(tp=1, pp=1, dp=64, ep=64, micro_batch=1, grad_accum=4,
                         seq_len=4096, activation_recompute="none")
    stack = replace(MODERN, ep_comm_overlap=False)
    with_routing = estimate(DSV3, cfg, gpu, stack=stack, memory_budget_gb=None)
    monkeypatch.setattr(pm, "routing_bytes_per_token", lambda *a: (0.0, 0.0))
    without = estimate(DSV3, cfg, gpu, stack=stack, memory_budget_gb=None)
    moe_layers = DSV3.n_layers - DSV3.moe.n_dense_layers
    per_token = sum(routing.routing_bytes_per_token(DSV3, cfg))
    expected = cfg.grad_accum * pf.hbm_seconds(gpu, moe_layers * 4096 * per_token)
    extra = with_routing.breakdown["compute"] - without.breakdown["compute"]
    assert extra == pytest.approx(expected, rel=1e-9)
    assert expected > 0.01 * with_routing.step_time_s  # large enough to matter
