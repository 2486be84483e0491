"""Hybrid sharding (``ParallelConfig.dp_shard``): the ZeRO state sharded inside groups of
consecutive data-parallel ranks and replicated across them (PyTorch FSDP HYBRID_SHARD,
FSDP2's 2-D mesh). Expected values come from the sharding arithmetic by hand: a shard
group of ``d`` ranks holds the state a ZeRO layout of DP = ``d`` holds, its collectives
are that layout's, and each gradient shard is then all-reduced across the ``r`` groups."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import ParallelConfig
from solutions.performance import estimate
from solutions.performance.comm import Links
from solutions.performance.validation import run_from_record
from solutions.planner.memory import memory_per_gpu, stage_params
from solutions.planner.traffic import dp_bytes
from solutions.stack import FSDP

H100 = hw.LLAMA3_H100  # 8 GPUs a node
ARCH = m.LLAMA3_8B
FULL = ParallelConfig(tp=1, pp=1, dp=32, zero_stage=3, micro_batch=1, grad_accum=1,
                      seq_len=8192, activation_recompute="full")
HYBRID = replace(FULL, dp_shard=8)  # 4 groups of 8, one a node


def test_a_shard_group_of_d_ranks_holds_what_zero_over_d_ranks_holds() -> None:
    hybrid = memory_per_gpu(ARCH, HYBRID, FSDP)
    alone = memory_per_gpu(ARCH, replace(FULL, dp=8), FSDP)
    assert hybrid.weights_bytes == alone.weights_bytes
    assert hybrid.gradients_bytes == alone.gradients_bytes
    assert hybrid.optimizer_bytes == alone.optimizer_bytes
    # by hand: 12 bytes of Adam state per parameter over 8 ranks, not 32
    params = stage_params(ARCH, FULL, 0).dense
    assert hybrid.optimizer_bytes == pytest.approx(params * 12 / 8)
    assert memory_per_gpu(ARCH, FULL, FSDP).optimizer_bytes == pytest.approx(params * 12 / 32)


def test_one_group_over_all_of_dp_is_full_sharding() -> None:
    same = replace(FULL, dp_shard=32)
    assert memory_per_gpu(ARCH, same, FSDP) == memory_per_gpu(ARCH, FULL, FSDP)
    a = estimate(ARCH, same, H100.gpu, H100, FSDP, memory_budget_gb=None)
    b = estimate(ARCH, FULL, H100.gpu, H100, FSDP, memory_budget_gb=None)
    assert a.step_time_s == b.step_time_s and a.breakdown == b.breakdown


def test_gathers_stay_in_the_node_and_gradient_shards_cross_it() -> None:
    links = Links(H100, HYBRID)
    assert not links.dp_crosses and links.replica_crosses
    assert links.dp_gb_per_s == H100.group_gb_per_s(False, 8)
    # the 4 groups' matching ranks sit one a node: one network port each
    assert links.replica_gb_per_s == H100.group_gb_per_s(True, 1)
    full = Links(H100, FULL)
    assert full.dp_crosses and full.cfg.replicas == 1
    assert full.replica_allreduce_s(1e9, 2.0) == 0.0  # nothing to all-reduce across
    params = stage_params(ARCH, HYBRID, 0).dense
    shard = params / 8 * FSDP.grad_reduce_bytes
    assert links.replica_allreduce_s(params / 8, FSDP.grad_reduce_bytes) == pytest.approx(
        links.allreduce_s(shard, 4, True, H100.group_gb_per_s(True, 1)))


def test_hybrid_sharding_trades_network_gathers_for_a_shard_all_reduce() -> None:
    full = estimate(ARCH, FULL, H100.gpu, H100, FSDP, memory_budget_gb=None).breakdown
    hybrid = estimate(ARCH, HYBRID, H100.gpu, H100, FSDP, memory_budget_gb=None).breakdown
    assert hybrid["fsdp_gather"] < full["fsdp_gather"]  # NVLink instead of the network
    assert hybrid["compute"] == full["compute"]


def test_traffic_adds_the_shard_all_reduce_by_hand() -> None:
    params = stage_params(ARCH, HYBRID, 0).dense
    g = 2.0
    # ZeRO-3 resharding, one micro-batch: one reduce-scatter of gradients and two
    # all-gathers of 16-bit weights inside the group of 8, (8-1)/8 of the bytes each;
    # then the 1/8 shard all-reduced over 4 groups, 2 (4-1)/4 of it
    inside = (1 * g + 2 * 2) * params * 7 / 8
    across = 1 * 2 * g * 3 / 4 * params / 8
    assert dp_bytes(ARCH, HYBRID, 0, g, FSDP) == pytest.approx(inside + across)


@pytest.mark.parametrize("bad", [
    dict(dp_shard=5),                  # does not divide 32
    dict(dp_shard=8, zero_stage=0),    # nothing to shard
    dict(dp_shard=0),
    dict(dp_shard=8.0),
])
def test_a_shard_group_that_cannot_be_built_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="dp_shard|zero_stage"):
        replace(FULL, **bad)


def test_a_published_row_may_state_its_shard_groups() -> None:
    record = {
        "id": "hsdp-example", "source_id": "example", "source": "hand-made",
        "model": {"name": "tiny", "n_layers": 4, "d_model": 512, "n_heads": 8,
                  "n_kv_heads": 8, "d_ffn": 2048, "vocab_size": 1000},
        "gpu": "H100 SXM5 80GB", "n_gpus": 16,
        "cluster": {"gpus_per_node": 8, "nic_gbit_per_gpu": 400, "nics_per_node": 8},
        "layout": {"tp": 1, "pp": 1, "dp": 16, "dp_shard": 8, "zero_stage": 3,
                   "micro_batch": 1, "grad_accum": 1, "seq_len": 2048, "recompute": "none"},
        "stack": "fsdp", "metric": "step_time_s", "reported": 1.0, "split": "held_out",
    }
    run = run_from_record(record)
    assert run.config.shard_dp == 8 and run.config.replicas == 2


def test_the_planner_searches_per_node_shards_when_asked() -> None:
    from solutions.planner import recommend

    slow = replace(H100, inter_node_gb_per_s=25 / 8)  # 25 Gb/s per GPU
    kwargs = dict(gpu=slow.gpu, cluster=slow, zero_stages=(3,), stack=FSDP, top=5)
    plain = recommend(ARCH, 64, 256, 8192, **kwargs)
    hybrid = recommend(ARCH, 64, 256, 8192, hybrid_sharding=True, **kwargs)
    assert all(r.config.dp_shard is None for r in plain.best)
    sharded = [r for r in hybrid.best if r.config.dp_shard is not None]
    assert sharded, "no hybrid layout among the fastest five"
    for r in sharded:  # the shard group is one node's data-parallel ranks
        assert r.config.dp_shard == 8 // (r.config.tp * r.config.cp) < r.config.dp
        assert f"shard{r.config.dp_shard}" in hybrid.table()
    # a wider search never finds a slower best layout
    assert hybrid.best[0].estimate.step_time_s <= plain.best[0].estimate.step_time_s
    assert hybrid.candidates > plain.candidates
