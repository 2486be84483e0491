"""The planner's memory beyond model states and Korthikanti's activations: the loss's logit
buffers, the K/V gathered for context parallelism, torchtitan's per-op checkpointing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solutions import models as m
from solutions.planner import activations as pa
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
    outside, inside = pa.alternate_activation_units(m.LLAMA3_8B)
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


def _peak(events: list[tuple[str, int]]) -> int:
    """Peak live bytes of a sequence of ('+', bytes) allocations and ('-', bytes) frees."""
    live = peak = 0
    for kind, size in events:
        live += size if kind == "+" else -size
        peak = max(peak, live)
    return peak


def test_loss_parallel_holds_sixteen_bytes_per_logit_at_its_backward_peak() -> None:
    from solutions.planner import buffers
    from solutions.stack import FSDP2, MEGATRON_CORE_2024
    # PyTorch loss_parallel, per local logit, replayed line by line
    # (torch/distributed/tensor/parallel/loss.py): forward: the 16-bit logits, .float(),
    # x - max, exp(shifted) summed and freed, shifted - logsumexp; x and shifted freed
    forward = [("+", 2), ("+", 4), ("+", 4), ("+", 4), ("-", 4), ("+", 4), ("-", 4), ("-", 4)]
    assert _peak(forward) == 14
    # torchtitan deletes the logits before backward; the saved log-softmax (4) stays.
    # _nll_loss_and_log_softmax_backward: zeros_like(x), exp(x), their sum, exp freed,
    # the product; then the two temporaries freed, .to(bf16) for the .float()'s backward
    backward = [("+", 4), ("+", 4), ("+", 4), ("+", 4), ("-", 4), ("+", 4), ("-", 4),
                ("-", 4), ("+", 2)]
    assert _peak(backward) == 16 == FSDP2.tp_loss_bytes_per_logit
    # torchtitan's Llama 3.1 70B at TP 8: 16 x 8,192 tokens per micro-batch, 1/8 of 128,256
    cfg = ParallelConfig(tp=8, pp=1, dp=32, micro_batch=16, seq_len=8192)
    assert buffers.loss_buffer_bytes(m.LLAMA3_70B, cfg, FSDP2) == 33_621_540_864
    # without TP the plain cross entropy's 12; Megatron's own loss keeps its 6 under TP
    assert buffers.loss_buffer_bytes(m.LLAMA3_70B, replace(cfg, tp=1), FSDP2) == (
        16 * 8192 * 128256 * 12)
    assert buffers.loss_buffer_bytes(m.LLAMA3_70B, cfg, MEGATRON_CORE_2024) == (
        16 * 8192 * 16032 * 6)


def test_dtensor_sequence_parallel_keeps_the_gathered_gemm_inputs_whole() -> None:
    from solutions.stack import FSDP2, MEGATRON_CORE_2024
    # Llama's outside terms: norm inputs 2 + 2, norm outputs feeding the GEMMs 2 + 2 = 8.
    # Megatron keeps all of them split over TP 8: 1 unit. torchtitan keeps the norm inputs
    # split (4 / 8) and the two gathered GEMM inputs whole: 0.5 + 4 = 4.5 in BF16, and
    # 0.5 + 2 = 2.5 when the gather moves FP8
    assert pa.outside_units_kept(8.0, 8, MEGATRON_CORE_2024) == 1.0
    assert pa.outside_units_kept(8.0, 8, FSDP2) == 4.5
    assert pa.outside_units_kept(8.0, 8, replace(FSDP2, linear_precision="fp8")) == 2.5
    assert pa.outside_units_kept(8.0, 1, FSDP2) == 8.0
    # a selective layer of Llama 3.1 70B at 16 x 8,192 tokens, TP 8 grows by 3.5 units
    cfg = ParallelConfig(tp=8, pp=1, dp=32, micro_batch=16, seq_len=8192,
                         activation_recompute="selective")
    sbh = 16 * 8192 * 8192
    grown = (pa.activation_bytes_per_layer(m.LLAMA3_70B, cfg, FSDP2)
             - pa.activation_bytes_per_layer(m.LLAMA3_70B, cfg,
                                             replace(FSDP2, sp_keeps_gathered_inputs=False)))
    assert grown == pytest.approx(3.5 * sbh)


def test_the_layer_rebuilt_by_full_recomputation_ignores_the_selective_policy() -> None:
    from solutions.stack import FSDP2
    # full recomputation reruns the layer's forward under autograd: it keeps the whole
    # selective (attention-core) amount even when the stack's selective policy is torchtitan's
    # per-op one, which would keep only half the matmuls
    cfg = ParallelConfig(tp=1, pp=1, dp=8, micro_batch=2, seq_len=8192,
                         activation_recompute="full")
    per_op = replace(FSDP2, selective_recompute="alternate_matmuls")
    plain = replace(FSDP2, selective_recompute="attention")
    assert pa.rebuilt_layer_bytes(m.LLAMA3_8B, cfg, per_op, False) == (
        pa.rebuilt_layer_bytes(m.LLAMA3_8B, cfg, plain, False))
    selective = replace(cfg, activation_recompute="selective")
    assert pa.rebuilt_layer_bytes(m.LLAMA3_8B, cfg, per_op, False) > (
        pa.activation_bytes_per_layer(m.LLAMA3_8B, selective, per_op))


def test_transformer_engine_keeps_fp8_gemm_inputs() -> None:
    from solutions.stack import FSDP2, MEGATRON_CORE_2024
    # Llama 3 405B, TP 8 with SP, selective: Korthikanti's 31.78 units per layer split 8 ways;
    # FP8 halves the two norm outputs (4 of the 8 outside units), the attention output (2)
    # and the SwiGLU product (2 x 53,248 / 16,384 = 6.5): 0.25 + 4.25 / 8 = 0.78125 units
    cfg = ParallelConfig(tp=8, pp=1, dp=1, seq_len=8192, activation_recompute="selective")
    fp8 = replace(MEGATRON_CORE_2024, linear_precision="fp8")
    sbh = 8192 * 16384
    bf16_bytes = pa.activation_bytes_per_layer(m.LLAMA3_405B, cfg, MEGATRON_CORE_2024)
    fp8_bytes = pa.activation_bytes_per_layer(m.LLAMA3_405B, cfg, fp8)
    assert bf16_bytes - fp8_bytes == pytest.approx(0.78125 * sbh)
    assert pa.fp8_input_savings(m.LLAMA3_405B, 8, fp8) == pytest.approx(0.78125)
    # torchao's Float8Linear keeps the 16-bit input; BF16 linears save nothing either way
    assert pa.fp8_input_savings(m.LLAMA3_405B, 8, replace(FSDP2, linear_precision="fp8")) == 0
    assert pa.fp8_input_savings(m.LLAMA3_405B, 8, MEGATRON_CORE_2024) == 0
    # full recomputation keeps each layer's 16-bit input whatever the linears' format
    full = replace(cfg, activation_recompute="full")
    assert pa.activation_bytes_per_layer(m.LLAMA3_405B, full, fp8) == (
        pa.activation_bytes_per_layer(m.LLAMA3_405B, full, MEGATRON_CORE_2024))


def test_torch_pipelining_keeps_a_buffer_per_micro_batch_by_hand() -> None:
    from solutions.planner import buffers
    from solutions.stack import FSDP2, MEGATRON_CORE_2024
    # torchtitan's 405B run: TP 8 with sequence parallelism, PP 8, 8 micro-batches of 4 x 8K
    cfg = ParallelConfig(tp=8, pp=8, dp=8, micro_batch=4, grad_accum=8, seq_len=8192,
                         activation_recompute="full")
    hidden = 4 * 8192 * 16384 // 8 * 2  # one micro-batch's stage input, an eighth per rank
    logits = 4 * 8192 * 128256 // 8 * 2  # the last stage's 16-bit output
    assert hidden == 134_217_728 and logits == 1_050_673_152
    assert pm.in_flight_chunks(cfg, 0) == 8 and pm.in_flight_chunks(cfg, 1) == 7
    # stage 0: 8 gradient receive buffers and 8 kept outputs; its input is the embedding's
    assert buffers.pipeline_buffer_bytes(m.LLAMA3_405B, cfg, 0, FSDP2, 8) == 16 * hidden
    # stage 1: 8 + 8 receive buffers and 8 kept outputs, less the 7 inputs in flight
    # (stashed), plus the input gradient the 1 finished micro-batch left in its buffer
    assert buffers.pipeline_buffer_bytes(m.LLAMA3_405B, cfg, 1, FSDP2, 7) == 18 * hidden
    # the last stage: 8 input buffers less the 1 in flight, the 7 finished ones' input
    # gradients, and all 8 micro-batches' logits
    assert buffers.pipeline_buffer_bytes(m.LLAMA3_405B, cfg, 7, FSDP2, 1) == (
        (7 + 7) * hidden + 8 * logits)
    # PyTorch 2.8 on keeps only the last stage's outputs; Megatron keeps none of these
    torch28 = replace(FSDP2, pipeline_buffers="torch")
    assert buffers.pipeline_buffer_bytes(m.LLAMA3_405B, cfg, 1, torch28, 7) == 10 * hidden
    assert buffers.pipeline_buffer_bytes(m.LLAMA3_405B, cfg, 1, MEGATRON_CORE_2024, 7) == 0
    assert buffers.pipeline_buffer_bytes(m.LLAMA3_405B, replace(cfg, pp=1), 0, FSDP2, 8) == 0
    # interleaved, v = 2: rank 7 runs virtual stages 7 and 15 (the last), 9 chunks in flight
    two = replace(cfg, virtual_stages=2)
    assert pm.in_flight_chunks(two, 7) == 9
    assert buffers.pipeline_buffer_bytes(m.LLAMA3_405B, two, 7, FSDP2, 9) == (
        (8 + 8 + 8) * hidden + 8 * hidden + 8 * logits - 9 * hidden + (16 - 9) * hidden)
    # the planner adds them to the stage's buffers
    transient = replace(FSDP2, pipeline_buffers="transient")
    extra = (pm.stage_memory(m.LLAMA3_405B, cfg, 1, FSDP2).buffers_bytes
             - pm.stage_memory(m.LLAMA3_405B, cfg, 1, transient).buffers_bytes)
    assert extra == 18 * hidden
    with pytest.raises(ValueError, match="pipeline_buffers"):
        replace(FSDP2, pipeline_buffers="megatron")


def test_context_parallelism_gathers_repeated_kv_heads_in_torchtitan() -> None:
    from solutions.planner import buffers
    from solutions.stack import FSDP2
    # Llama 3 405B at 128K over CP 16 and TP 8: 8 K/V heads, 128 query heads. Megatron
    # gathers the GPU's one K/V head; torchtitan repeats it for its 16 query heads first
    long = ParallelConfig(tp=8, cp=16, pp=16, dp=8, seq_len=131072)
    assert buffers.gathered_kv_bytes(m.LLAMA3_405B, long) == 2 * 131072 * 1 * 128 * 2
    assert buffers.gathered_kv_bytes(m.LLAMA3_405B, long, FSDP2) == 2 * 131072 * 16 * 128 * 2


def test_synchronous_sequence_parallel_tp_holds_a_whole_sequence_gradient() -> None:
    from solutions.planner import buffers
    from solutions.stack import FSDP2
    # torchtitan's 70B at TP 8: 16 x 8,192 tokens, h = 8,192; the all-gathered output
    # gradient of a row-parallel GEMM (or a column-parallel input gradient before its
    # reduce-scatter) is the whole sequence in 16 bits
    cfg = ParallelConfig(tp=8, pp=1, dp=32, micro_batch=16, seq_len=8192)
    whole = 16 * 8192 * 8192 * 2
    assert buffers.tp_boundary_gradient_bytes(m.LLAMA3_70B, cfg, FSDP2) == whole
    # fused into the GEMMs (async TP, userbuffers), without TP, or without sequence parallelism
    fused = replace(FSDP2, tp_comm_overlap=True)
    assert buffers.tp_boundary_gradient_bytes(m.LLAMA3_70B, cfg, fused) == 0
    assert buffers.tp_boundary_gradient_bytes(m.LLAMA3_70B, replace(cfg, tp=1), FSDP2) == 0
    no_sp = replace(FSDP2, sequence_parallel=False)
    assert buffers.tp_boundary_gradient_bytes(m.LLAMA3_70B, cfg, no_sp) == 0
    # the planner adds it to every stage's buffers
    assert (pm.stage_memory(m.LLAMA3_70B, cfg, 0, FSDP2).buffers_bytes
            - pm.stage_memory(m.LLAMA3_70B, cfg, 0, fused).buffers_bytes) == whole


def test_the_step_time_model_gathers_the_kv_the_memory_model_holds() -> None:
    from solutions import hardware as hw
    from solutions.performance.comm import CP_COLLECTIVES_PER_LAYER, Links, layer_comm_s
    # Llama 3.1 8B at 262K tokens over CP 8, no TP: 8 K/V heads, repeated to 32 by torchtitan
    cfg = ParallelConfig(tp=1, cp=8, pp=1, dp=1, seq_len=262144)
    links = Links(hw.default_cluster(hw.H100_SXM), cfg)
    for repeated, heads in ((False, 8), (True, 32)):
        whole_kv = 2 * 262144 * heads * 128 * 2  # K and V of the whole sequence, 16-bit
        expected = CP_COLLECTIVES_PER_LAYER * 32 * links.gather_s(
            whole_kv, 8, links.cp_crosses, links.cp_gb_per_s)
        got = layer_comm_s(m.LLAMA3_8B, cfg, links, True, 32, 0, repeats_kv_heads=repeated)
        assert got.cp == pytest.approx(expected)


def test_the_traffic_count_moves_the_kv_the_stack_gathers() -> None:
    from solutions.planner.traffic import cp_bytes
    from solutions.stack import FSDP2
    # 8B at 262K over CP 8: each GPU sends its 32K-token K and V to the 7 others, forward
    # (again under full recomputation) and the gradients back: 3 collectives a layer
    cfg = ParallelConfig(tp=1, cp=8, pp=1, dp=1, seq_len=262144, activation_recompute="full")
    for stack, heads in ((None, 8), (FSDP2, 32)):
        local = 2 * 32768 * heads * 128 * 2
        got = cp_bytes(m.LLAMA3_8B, cfg, 32) if stack is None else cp_bytes(
            m.LLAMA3_8B, cfg, 32, stack)
        assert got == 3 * 7 * local * 32
