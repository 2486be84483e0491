"""The planner's memory beyond model states and Korthikanti's activations: the loss's logit
buffers, the K/V gathered for context parallelism, torchtitan's per-op checkpointing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import models as m
from solutions.planner import memory as pm
from solutions.planner.memory import ParallelConfig


def test_loss_buffers_and_gathered_kv_by_hand() -> None:
    from solutions.planner import buffers
    from solutions.stack import FSDP2
    # a 32K-token micro-batch at Llama 3's 128,256 entries: 4.2e9 logits; FP32 is 16.8 GB,
    # eager PyTorch's loss holds 12 bytes each (saved log-softmax, gradient in and out)
    cfg = ParallelConfig(tp=1, pp=1, dp=8, seq_len=32768)
    logits = 32768 * 128256
    assert logits * 4 == pytest.approx(16.8e9, rel=1e-3)
    assert buffers.loss_buffer_bytes(m.LLAMA3_8B, cfg, FSDP2) == logits * 12
    # Megatron's vocabulary-parallel loss over TP 8: 6 bytes for an eighth of the vocabulary
    tp8 = ParallelConfig(tp=8, pp=1, dp=1, seq_len=32768)
    assert buffers.loss_buffer_bytes(m.LLAMA3_8B, tp8) == logits / 8 * 6
    # Llama 3 405B at 128K, TP 8 (one K/V head per GPU), CP 16: 2 x 131,072 x 128 x 2 = 67 MB
    long = ParallelConfig(tp=8, cp=16, pp=16, dp=8, seq_len=131072)
    assert buffers.gathered_kv_bytes(m.LLAMA3_405B, long) == 2 * 131072 * 128 * 2
    assert buffers.gathered_kv_bytes(m.LLAMA3_405B, replace(long, cp=1)) == 0
    # only the last stage holds the loss
    assert buffers.transient_bytes(m.LLAMA3_405B, long, 0) == 2 * 131072 * 128 * 2


def test_torchtitan_alternate_matmul_checkpointing_keeps_half_the_matmuls() -> None:
    # Llama 3 8B: g_kv = 8/32, f/h = 14336/4096 = 3.5; matmul outputs in order
    # Q 2, K 0.5, V 0.5, O 2, gate 7, up 7, down 2: kept Q + V + gate + down = 11.5,
    # plus the attention output 2 and its log-sum-exp 4 x 32 / 4096; the block input 2
    outside, inside = pm.alternate_activation_units(m.LLAMA3_8B)
    assert outside == 2.0
    assert inside == pytest.approx(11.5 + 2 + 4 * 32 / 4096)


def test_fsdp_reduce_scatter_buffers_by_hand() -> None:
    from solutions.stack import DEEPSPEED_ZERO3, FSDP, FSDP2
    # Llama 3 8B layer: Q and O 4096 x 4096 each, K and V 4096 x 1024 each, SwiGLU 3 x 4096
    # x 14336, two RMSNorm weights of 4096: 218,112,000 parameters.
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert layer == 218_112_000
    cfg = ParallelConfig(tp=1, pp=1, dp=8, zero_stage=3, seq_len=8192)
    # FSDP2 (torchtitan): the layer's BF16 gradient (2) and two FP32 reduce-scatter inputs
    assert pm.reduce_scatter_buffer_bytes(m.LLAMA3_8B, cfg, 0, FSDP2) == layer * (2 + 2 * 4)
    # FSDP1 reduces the flat BF16 gradient: 2 + 2 x 2 bytes per parameter
    assert pm.reduce_scatter_buffer_bytes(m.LLAMA3_8B, cfg, 0, FSDP) == layer * 6
    # DeepSpeed's buckets and stages below 3 are not counted
    assert pm.reduce_scatter_buffer_bytes(m.LLAMA3_8B, cfg, 0, DEEPSPEED_ZERO3) == 0
    assert pm.reduce_scatter_buffer_bytes(m.LLAMA3_8B, replace(cfg, zero_stage=2), 0,
                                          FSDP2) == 0
    # they are part of the GPU's gradients
    with_rs = pm.stage_memory(m.LLAMA3_8B, cfg, 0, FSDP2).gradients_bytes
    without = pm.stage_memory(m.LLAMA3_8B, cfg, 0,
                              replace(FSDP2, unit_reduce_scatter=False)).gradients_bytes
    assert with_rs - without == layer * 10
