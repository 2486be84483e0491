"""A MoE layer's communication (:func:`solutions.performance.comm.layer_comm_s`): which
TP collectives its routed experts have, the dispatcher's gather over an expert's ranks,
and DeepEP's one copy per destination rank. Expected values are built by hand from ring
collectives of the stated message sizes (:meth:`Links.allreduce_s`, tested on its own)
and the layout's degrees."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import ParallelConfig
from solutions.performance.comm import Links, all_to_all_s, layer_comm_s

H100 = hw.LLAMA3_H100
DSV3 = m.DEEPSEEK_V3  # one shared expert
QWEN_LIKE = replace(DSV3, name="DeepSeek-V3 without its shared expert",
                    moe=replace(DSV3.moe, n_shared_experts=0))


def _activation_bytes(cfg: ParallelConfig) -> float:
    return cfg.micro_batch * cfg.seq_len / cfg.cp * DSV3.d_model * 2


def test_whole_experts_leave_a_moe_layer_only_its_attention_tp_collectives() -> None:
    cfg = ParallelConfig(tp=2, pp=16, dp=32, ep=64, etp=1, seq_len=4096,
                         activation_recompute="none")
    links = Links(H100, cfg, folded_experts=True)
    one = links.allreduce_s(_activation_bytes(cfg), 2, False, links.tp_gb_per_s)
    # one forward pass: (1 + 1) all-reduce equivalents per block that has TP collectives
    assert layer_comm_s(QWEN_LIKE, cfg, links, True, 0, 10).tp == pytest.approx(2 * 10 * one)
    # a shared expert is a TP-split FFN: it keeps the FFN's pair
    assert layer_comm_s(DSV3, cfg, links, True, 0, 10).tp == pytest.approx(4 * 10 * one)
    # dense layers: attention and FFN, as before
    assert layer_comm_s(QWEN_LIKE, cfg, links, True, 10, 0).tp == pytest.approx(4 * 10 * one)


def test_split_experts_gather_their_k_copies_in_the_dispatcher() -> None:
    # Megatron-Core without folding: ETP = TP = 4, the received copies all-gathered over TP
    cfg = ParallelConfig(tp=4, pp=16, dp=16, ep=8, seq_len=4096, activation_recompute="full")
    links = Links(H100, cfg)
    k = DSV3.moe.experts_per_token
    copies = k * _activation_bytes(cfg) / 4  # this GPU's k copies of b s / (cp t) tokens
    gather = links.allreduce_s(copies * 4, 4, False, H100.group_gb_per_s(False, 4))
    a2a = all_to_all_s(links, copies)
    comm = layer_comm_s(QWEN_LIKE, cfg, links, True, 0, 3)
    # full recomputation: 2 forward passes; 2 x 2 + 2 all-to-alls and 2 + 1 gather pairs
    assert comm.ep == pytest.approx(3 * (6 * a2a + 3 * gather))
    # the same layout with whole experts has no gather
    whole = layer_comm_s(QWEN_LIKE, replace(cfg, etp=1), Links(H100, replace(cfg, etp=1),
                                                             folded_experts=True), True, 0, 3)
    assert whole.ep < comm.ep


def test_deepep_sends_one_copy_per_rank_inside_a_node() -> None:
    # EP 8 on one node, 256 experts (32 per GPU): a token's 8 experts sit on
    # 8 (1 - C(224, 8) / C(256, 8)) = 5.30 distinct GPUs, so DeepEP moves 5.30 copies
    from math import comb
    cfg = ParallelConfig(tp=1, pp=16, dp=8, ep=8, seq_len=4096, activation_recompute="none")
    links = Links(H100, cfg)
    assert not links.ep_crosses
    ranks = 8 * (1 - comb(224, 8) / comb(256, 8))
    plain = layer_comm_s(QWEN_LIKE, cfg, links, True, 0, 1).ep
    deepep = layer_comm_s(QWEN_LIKE, cfg, links, True, 0, 1, ep_node_dedup=True).ep
    alpha = 4 * H100.latency_s(False)  # the latency is paid per all-to-all either way
    assert (deepep - alpha) / (plain - alpha) == pytest.approx(ranks / 8, rel=1e-9)


def test_a_contiguous_gate_sends_each_token_to_the_few_ranks_its_block_sits_on() -> None:
    from solutions.performance.comm import nodes_reached
    # AutoModel's fake balanced gate: token t to experts 8t ... 8t + 7 (mod 256). Over 64
    # EP ranks of 4 experts each those are ranks 2t and 2t + 1, always on one node of 8
    assert nodes_reached(64, 256, 8, "contiguous") == 2.0
    assert nodes_reached(8, 256, 8, "contiguous") == 1.0
    # over 6 groups of 42 2/3 experts, 4 of the 32 blocks (starting at 40, 80, 168, 208)
    # straddle a boundary: 1 + 4/32 groups a token
    assert nodes_reached(6, 256, 8, "contiguous") == pytest.approx(1 + 4 / 32)
    # and DeepEP moves that many copies instead of balanced routing's 5.30 of 8 ranks
    cfg = ParallelConfig(tp=1, pp=16, dp=8, ep=8, seq_len=4096, activation_recompute="none")
    links = Links(H100, cfg)
    plain = layer_comm_s(QWEN_LIKE, cfg, links, True, 0, 1).ep
    block = layer_comm_s(QWEN_LIKE, cfg, links, True, 0, 1, ep_node_dedup=True,
                         expert_routing="contiguous").ep
    alpha = 4 * H100.latency_s(False)
    assert (block - alpha) / (plain - alpha) == pytest.approx(1 / 8, rel=1e-9)
