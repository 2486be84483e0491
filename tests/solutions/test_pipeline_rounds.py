"""A step that runs the pipeline schedule more than once (``ParallelConfig.pipeline_rounds``):
every round fills and drains the pipeline, holds one round's micro-batches in flight, and the
gradients accumulate across the rounds. Expected values come from the same layout run as one
round of the smaller count, and from the bubble formula by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import ParallelConfig
from solutions.performance.model import breakdown_s
from solutions.planner import memory as pm
from solutions.planner.validity import structural_rejections
from solutions.stack import FSDP2, LLAMA3, MODERN

#: Llama 3 70B on 4 stages of 2 chunks, 8 micro-batches a round, TP 8, DP 4
ROUND = ParallelConfig(tp=8, pp=4, dp=4, zero_stage=1, micro_batch=1, grad_accum=8,
                       seq_len=8192, virtual_stages=2)
FOUR = replace(ROUND, grad_accum=32, pipeline_rounds=4)
ONCE = replace(ROUND, grad_accum=32)


def test_rounds_must_divide_the_micro_batches() -> None:
    with pytest.raises(ValueError, match="pipeline_rounds=3 must divide grad_accum=8"):
        replace(ROUND, pipeline_rounds=3)
    with pytest.raises(ValueError, match="pipeline_rounds must be"):
        replace(ROUND, pipeline_rounds=0)
    assert FOUR.schedule_microbatches == 8 and ONCE.schedule_microbatches == 32
    assert FOUR.global_batch_seqs == ONCE.global_batch_seqs == 4 * 32


def test_each_round_fills_and_drains_the_pipeline() -> None:
    cluster = hw.default_cluster(hw.H100_SXM)
    four = breakdown_s(m.LLAMA3_70B, FOUR, hw.H100_SXM, cluster, MODERN)
    one_round = breakdown_s(m.LLAMA3_70B, ROUND, hw.H100_SXM, cluster, MODERN)
    once = breakdown_s(m.LLAMA3_70B, ONCE, hw.H100_SXM, cluster, MODERN)
    # the work is the 32 micro-batches' either way
    assert four["compute"] == pytest.approx(once["compute"])
    # the bubble is four rounds' of (p - 1)/v micro-batch times each: 4 x 1.5 against 1.5
    assert four["pp_bubble"] == pytest.approx(4 * one_round["pp_bubble"])
    assert four["pp_bubble"] == pytest.approx(4 * once["pp_bubble"])
    # the fill's p - 1 sends come once a round: (8 x 2 + 3) x 4 against 32 x 2 + 3 sends
    assert four["pp_send"] / once["pp_send"] == pytest.approx(4 * (8 * 2 + 3) / (32 * 2 + 3))


def test_a_round_holds_its_own_micro_batches_and_the_step_accumulates_whole() -> None:
    for stage in range(4):
        four = pm.stage_memory(m.LLAMA3_70B, FOUR, stage, FSDP2)
        one_round = pm.stage_memory(m.LLAMA3_70B, ROUND, stage, FSDP2)
        assert four.activations_bytes == pytest.approx(one_round.activations_bytes)
        assert four.buffers_bytes == pytest.approx(one_round.buffers_bytes)
    # Llama 3's FSDP holds the FP32 gradient of the chunk in progress: with m = p = 4 a
    # round, one chunk of the two; across four rounds the whole stage, until the last
    per_round = replace(ROUND, zero_stage=3, grad_accum=4)
    rounds = replace(per_round, grad_accum=16, pipeline_rounds=4)
    psi = pm.stage_params(m.LLAMA3_70B, per_round, 1).total
    assert pm.accumulating_params(m.LLAMA3_70B, per_round, 1, LLAMA3) == pytest.approx(psi / 2)
    assert pm.accumulating_params(m.LLAMA3_70B, rounds, 1, LLAMA3) == pytest.approx(psi)


def test_interleaving_is_judged_on_a_round() -> None:
    # Megatron's interleaved schedule needs m >= p micro-batches in each run of it
    few = replace(ROUND, grad_accum=8, pipeline_rounds=4)  # 2 a round on 4 stages
    kinds = {kind for kind, _ in structural_rejections(m.LLAMA3_70B, few, 128, 8, MODERN)}
    assert "interleave_m" in kinds
    assert "interleave_m" not in {kind for kind, _ in
                                  structural_rejections(m.LLAMA3_70B, FOUR, 128, 8, MODERN)}
