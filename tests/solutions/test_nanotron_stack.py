"""nanotron's preset and the two data-parallel behaviours it brought: ZeRO-1 that
all-reduces the whole gradient after the backward (``Stack.zero1_allreduce``), and a
ZeRO-0 all-reduce whose second half moves gradient bytes, not 16-bit weights. Expected
times are ring collectives of the stated bytes (:class:`Links`, tested on its own)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import stack as st
from solutions.layout import ParallelConfig
from solutions.performance import estimate
from solutions.performance.comm import Links
from solutions.planner.memory import stage_params
from solutions.planner.traffic import dp_bytes_per_param

H100 = hw.LLAMA3_H100
ARCH = m.LLAMA3_8B
CFG = ParallelConfig(tp=1, pp=1, dp=16, zero_stage=1, micro_batch=1, grad_accum=4,
                     seq_len=4096, activation_recompute="none")


def _dp(cfg: ParallelConfig, stack: st.Stack) -> float:
    return estimate(ARCH, cfg, H100.gpu, H100, stack, memory_budget_gb=None).breakdown[
        "dp_exposed"]


def _ring(cfg: ParallelConfig, n_bytes: float) -> float:
    links = Links(H100, cfg)
    return links.gather_s(n_bytes, cfg.dp, links.dp_crosses, links.dp_gb_per_s)


def test_nanotron_zero1_all_reduces_fp32_gradients_then_gathers_all_exposed() -> None:
    params = stage_params(ARCH, CFG, 0).dense
    # an all-reduce of FP32 gradients (two ring halves of 4 bytes each) and the gather of
    # the updated 16-bit weights, none of it under the backward
    expected = 2 * _ring(CFG, params * 4) + _ring(CFG, params * 2)
    assert _dp(CFG, st.NANOTRON) == pytest.approx(expected)
    # a ZeRO-1 that reduce-scatters under the backward exposes less
    assert _dp(CFG, replace(st.NANOTRON, zero1_allreduce=False)) < expected


def test_zero0_all_reduce_moves_gradient_bytes_in_both_halves() -> None:
    cfg = replace(CFG, zero_stage=0)
    exposed = replace(st.NANOTRON, overlap_dp=False)
    params = stage_params(ARCH, cfg, 0).dense
    links = Links(H100, cfg)
    assert _dp(cfg, exposed) == pytest.approx(
        links.allreduce_s(params * 4, cfg.dp, links.dp_crosses, links.dp_gb_per_s))


def test_traffic_counts_the_whole_all_reduce_and_the_gather() -> None:
    assert dp_bytes_per_param(CFG, 4.0, st.NANOTRON) == 2 * 4.0 + 2
    assert dp_bytes_per_param(CFG, 4.0, st.MODERN) == 4.0 + 2  # reduce-scatter + gather


def test_the_preset_is_read_from_the_software() -> None:
    nano = st.stack_named("nanotron")
    assert nano.sequence_parallel and not nano.tp_comm_overlap
    assert nano.pipeline_blocking_p2p and not nano.fused_grad_accumulation
    assert nano.grad_reduce_bytes == 4.0 and nano.attention_kernel == "flash2"
    assert "0e0a27ea" in nano.source
