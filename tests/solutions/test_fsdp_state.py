"""PyTorch FSDP's model state as it is held: the FP32 shard is the master copy, FP8 all-gathers
keep 1-byte weights, and a chunk being accumulated has no reduced shard yet. Every expected
value is counted here from the parameter counts, not read from the planner."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import chunk_layers
from solutions.performance.model import breakdown_s
from solutions.planner import memory as pm
from solutions.planner.memory import ParallelConfig
from solutions.stack import FSDP2, LLAMA3

#: torchtitan's 405B pipeline layout: TP 8, PP 8, FSDP 8, eight micro-batches of 4 x 8K
PIPE = ParallelConfig(tp=8, pp=8, dp=8, zero_stage=3, micro_batch=4, grad_accum=8, seq_len=8192,
                      activation_recompute="full")
#: FSDP2 counted as allocated bytes: its stream pools (``side_stream_buffers``, reserved
#: bytes) are tested apart, in the last test
ALLOCATED = replace(FSDP2, side_stream_buffers=False)
FP8 = replace(ALLOCATED, linear_precision="fp8")


def _stage1_params() -> float:
    # a middle stage of Llama 3.1 405B holds 16 layers (126 split 15, 16 x 6, 15), 1/8 each
    return 16 * m.dense_layer_params(m.LLAMA3_405B) / 8


def test_fsdp_keeps_no_16_bit_shard_beside_the_fp32_master() -> None:
    cfg = ParallelConfig(tp=1, pp=1, dp=8, zero_stage=3, seq_len=8192)
    psi = pm.stage_params(m.LLAMA3_8B, cfg, 0).total
    kept = pm.stage_memory(m.LLAMA3_8B, cfg, 0, replace(FSDP2, shard_is_master=False))
    master = pm.stage_memory(m.LLAMA3_8B, cfg, 0, FSDP2)
    # 2 bytes per parameter over 8 ranks: 2.0 GB for Llama 3 8B
    assert kept.weights_bytes - master.weights_bytes == pytest.approx(2 * psi / 8)
    assert 2 * psi / 8 == pytest.approx(2.0e9, rel=0.01)
    # the FP32 master itself is among the optimizer's 12 bytes
    assert master.optimizer_bytes == pytest.approx(12 * psi / 8)


def test_fp8_all_gather_keeps_one_byte_per_gathered_layer_weight() -> None:
    psi = _stage1_params()
    assert pm.stage_params(m.LLAMA3_405B, PIPE, 1).total == pytest.approx(psi, rel=1e-4)
    bf16 = pm.stage_memory(m.LLAMA3_405B, PIPE, 1, FP8)
    fp8 = pm.stage_memory(m.LLAMA3_405B, PIPE, 1, replace(FP8, fp8_all_gather=True))
    # the pipeline keeps the stage gathered (no reshard after forward): 2 then 1 byte each
    assert bf16.weights_bytes == pytest.approx(2 * psi, rel=1e-4)
    assert bf16.weights_bytes - fp8.weights_bytes == pytest.approx(psi, rel=1e-4)
    # the last stage's output head stays 16-bit: 128,256 x 16,384 / 8 of it
    last = pm.stage_gathered_bytes(m.LLAMA3_405B, PIPE, 7, replace(FP8, fp8_all_gather=True))
    head = 128256 * 16384 / 8
    layers = pm.stage_params(m.LLAMA3_405B, PIPE, 7).total - head
    assert last == pytest.approx(layers * 1 + head * 2)
    # without FP8 linears the flag changes nothing
    assert replace(FSDP2, fp8_all_gather=True).layer_gather_bytes == 2.0
    # and the step-time model gathers the bytes the memory model holds
    resharding = ParallelConfig(tp=1, pp=1, dp=64, zero_stage=3, seq_len=8192)
    cluster = hw.default_cluster(hw.H100_SXM)
    exposed = replace(FP8, overlap_dp=False)
    slow = breakdown_s(m.LLAMA3_8B, resharding, hw.H100_SXM, cluster, exposed)
    fast = breakdown_s(m.LLAMA3_8B, resharding, hw.H100_SXM, cluster,
                       replace(exposed, fp8_all_gather=True))
    assert fast["fsdp_gather"] < 0.6 * slow["fsdp_gather"]


def test_the_chunk_being_accumulated_has_no_reduced_shard_yet() -> None:
    psi = pm.stage_params(m.LLAMA3_405B, PIPE, 1).total
    # 1F1B (v = 1): the whole stage accumulates in FP32 until the step's last backward
    one = pm.stage_memory(m.LLAMA3_405B, PIPE, 1, ALLOCATED)
    assert one.gradients_bytes == pytest.approx(4 * psi)
    # interleaved, v = 2, m = p: one chunk accumulates while the other's shard is reduced
    two = replace(PIPE, virtual_stages=2)
    chunk = max(chunk_layers(126, 8, 2)[1]) / 16 * psi
    mem = pm.stage_memory(m.LLAMA3_405B, two, 1, ALLOCATED)
    assert mem.gradients_bytes == pytest.approx(4 * chunk + 4 * (psi - chunk) / 8)
    # Llama 3's own layout (v = 8, one layer a chunk): 7/8 of the stage's shard beside it
    paper = ParallelConfig(tp=8, pp=16, dp=128, zero_stage=3, seq_len=8192, grad_accum=16,
                           virtual_stages=8, activation_recompute="none")
    psi = pm.stage_params(m.LLAMA3_405B, paper, 1).total
    got = pm.stage_memory(m.LLAMA3_405B, paper, 1, LLAMA3).gradients_bytes
    assert got == pytest.approx(4 * psi / 8 + 4 * (psi - psi / 8) / 128)


def test_the_traffic_count_reads_the_same_sharding_and_gather_bytes() -> None:
    from solutions.planner.traffic import dp_bytes, dp_bytes_per_param
    fp8 = replace(FP8, fp8_all_gather=True)
    psi = pm.stage_params(m.LLAMA3_405B, PIPE, 1).total
    # FSDP2 under a pipeline keeps the weights gathered: one gather and one FP32 reduction a
    # step, as the memory and step-time models count, not two gathers per micro-batch
    assert pm.gathers_per_step(PIPE, FSDP2) == 1
    assert pm.grad_reductions_per_step(PIPE, FSDP2) == 1
    assert dp_bytes_per_param(PIPE, 4.0, FSDP2) == 4.0 + 2.0
    # the gather moves the linear weights in FP8 (a middle stage holds no end table)
    ring = 7 / 8
    assert dp_bytes(m.LLAMA3_405B, PIPE, 1, 4.0, fp8) == pytest.approx((4.0 + 1.0) * psi * ring)
    assert dp_bytes(m.LLAMA3_405B, PIPE, 1, 4.0, FSDP2) == pytest.approx((4.0 + 2.0) * psi * ring)


#: Qwen3-30B-A3B (the Qwen/Qwen3-30B-A3B config): 48 layers, width 2,048, 32 query heads and
#: 4 K/V heads of 128, 128 experts of FFN width 768 (8 routed to a token), vocabulary 151,936
QWEN3_30B_A3B = m.Architecture(
    "Qwen3-30B-A3B", n_layers=48, d_model=2048, n_heads=32, n_kv_heads=4, d_ffn=6144,
    vocab_size=151936, head_dim_override=128,
    moe=m.MoE(n_routed_experts=128, n_shared_experts=0, experts_per_token=8, expert_d_ffn=768))
#: NeMo AutoModel's benchmark layout of it: 8 GPUs, EP 8 inside FSDP 8
AUTOMODEL = ParallelConfig(tp=1, pp=1, dp=8, ep=8, zero_stage=3, micro_batch=4, grad_accum=16,
                           seq_len=4096, activation_recompute="full")
BF16 = replace(ALLOCATED, bf16_params=True, reshard_after_forward=False)


def test_bf16_parameters_are_their_own_master_and_experts_stay_where_they_lie() -> None:
    # by hand: a routed expert is 3 x 2,048 x 768 (gate, up, down); each GPU holds 128 / 8 of
    # them in each of the 48 layers, and no ZeRO group shards them (expert DP = 8 / 8 = 1)
    experts = 48 * 128 / 8 * 3 * 2048 * 768
    params = pm.stage_params(QWEN3_30B_A3B, AUTOMODEL, 0)
    assert AUTOMODEL.expert_dp == 1
    assert params.expert == pytest.approx(experts)
    dense = params.dense
    got = pm.stage_memory(QWEN3_30B_A3B, AUTOMODEL, 0, BF16)
    # the optimizer: two BF16 moments, no FP32 master; dense ones over the 8 FSDP ranks
    assert got.optimizer_bytes == pytest.approx(4 * dense / 8 + 4 * experts)
    # weights: the dense BF16 shard and its gathered copy (kept, no reshard); the experts
    # once, in place: an FP32-master FSDP2 would hold them twice, shard and gathered
    assert got.weights_bytes == pytest.approx(2 * dense / 8 + 2 * dense + 2 * experts)
    # gradients: 16 micro-batches accumulate the dense ones whole in FSDP's FP32 reduce
    # dtype; the experts' own BF16 gradient accumulates in place
    assert got.gradients_bytes == pytest.approx(4 * dense + 2 * experts)
    # the gather moves only what it shards
    assert pm.stage_gathered_bytes(QWEN3_30B_A3B, AUTOMODEL, 0, BF16) == pytest.approx(2 * dense)
    # with FP32 masters (FSDP2's default) the same layout held 12 bytes of Adam per expert
    fp32 = pm.stage_memory(QWEN3_30B_A3B, AUTOMODEL, 0, replace(BF16, bf16_params=False))
    assert fp32.optimizer_bytes - got.optimizer_bytes == pytest.approx(8 * experts + 8 * dense / 8)


def test_the_bf16_optimizer_step_moves_fourteen_bytes_a_parameter_not_thirty() -> None:
    from solutions.performance.passes import optimizer_s
    cfg = ParallelConfig(tp=1, pp=1, dp=8, zero_stage=3, seq_len=4096)
    gpu = hw.H100_SXM
    fp32 = optimizer_s(m.LLAMA3_8B, cfg, gpu, 0, ALLOCATED)
    bf16 = optimizer_s(m.LLAMA3_8B, cfg, gpu, 0, BF16)
    # Adam with an FP32 master: master, momentum, variance read and written, FP32 gradient
    # read, 16-bit weight written (30); in BF16: weight and moments read and written, BF16
    # gradient read (14)
    assert bf16 / fp32 == pytest.approx(14 / 30)
    psi = pm.stage_params(m.LLAMA3_8B, cfg, 0).total
    assert bf16 == pytest.approx(14 * psi / 8 / (gpu.hbm_bandwidth_tb_per_s * 1e12), rel=0.05)


def test_fsdp2_stream_pools_keep_the_flat_gathers_and_the_last_steps_shards_reserved() -> None:
    # measured peaks are reserved bytes, and the caching allocator keeps a pool per stream:
    # FSDP2's flat all-gather buffers (two units in flight) sit in its gather stream's pool,
    # its gradient shards in the reduce-scatter stream's, beside the compute stream's peak
    psi = _stage1_params()
    layer = m.dense_layer_params(m.LLAMA3_405B) / 8  # one layer on one GPU of TP 8
    allocated = pm.stage_memory(m.LLAMA3_405B, PIPE, 1, ALLOCATED)
    reserved = pm.stage_memory(m.LLAMA3_405B, PIPE, 1, FSDP2)
    assert reserved.weights_bytes - allocated.weights_bytes == pytest.approx(2 * layer * 2)
    # 1F1B accumulates the whole stage in FP32, and the last step's FP32 shards (1/8 of it)
    # are still reserved: 4.5 bytes a parameter where the allocated count has 4
    assert reserved.gradients_bytes == pytest.approx(4 * psi + 4 * psi / 8, rel=1e-4)
    # the 405B runs' FP8 gathers halve the flat buffers
    fp8 = replace(FSDP2, linear_precision="fp8", fp8_all_gather=True)
    flat = (pm.stage_memory(m.LLAMA3_405B, PIPE, 1, fp8).weights_bytes
            - pm.stage_memory(m.LLAMA3_405B, PIPE, 1, replace(fp8, side_stream_buffers=False))
            .weights_bytes)
    assert flat == pytest.approx(2 * layer * 1)
