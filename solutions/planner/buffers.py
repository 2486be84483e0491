"""5D-parallelism planner: the buffers a GPU holds at its peak besides the model state and
the stashed activations, in decimal bytes.

* **Loss buffers** (last pipeline stage): the output logits of one micro-batch, ``b s / cp``
  tokens by ``V / t`` vocabulary entries (the output layer is vocabulary-parallel over TP),
  at ``Stack.loss_bytes_per_logit`` bytes each at the peak of the loss's forward and
  backward. Eager PyTorch (``F.cross_entropy(logits.float(), ...)``, FSDP, torchtitan,
  DeepSpeed): ``log_softmax`` saves its FP32 output (4), and its backward holds the FP32
  gradient it receives from ``nll_loss`` (4) beside the FP32 gradient it produces (4): 12
  bytes (PyTorch ``aten/src/ATen/native/SoftMax.cpp``: ``log_softmax_backward_data`` takes
  the saved output and the incoming gradient and returns a new tensor). Megatron's
  vocabulary-parallel cross entropy (``megatron/core/tensor_parallel/cross_entropy.py``)
  exponentiates the FP32 logits in place, saves that one buffer and writes the gradient into
  it: the 16-bit logits (2) and the FP32 buffer (4), 6 bytes. PyTorch's ``loss_parallel``
  (torchtitan with TP) holds 16 at its backward's peak (``Stack.tp_loss_bytes_per_logit``).
  At a 32K-token micro-batch and
  Llama 3's 128,256-entry vocabulary that is 16.8 GB of FP32 per 4 bytes.
* **Gathered K/V** (context parallelism): the full-sequence keys and values of the layer
  being computed, ``2 b s (n_kv / t) d_head`` 16-bit values, held while its attention runs
  (Llama 3 §3.3.2: "we first all-gather the key (K) and value (V) tensors, and then compute
  attention output for the local query (Q) tensor chunk"). They are freed after the layer
  and gathered again for its backward (the step-time model charges that third collective,
  :func:`solutions.performance.comm.layer_comm_s`), so one layer's worth is resident, not
  one per layer in flight; a ring implementation holds less (two K/V blocks), which this
  upper bound covers. torchtitan repeats each K/V head for its query heads before
  attention (``repeat_kv`` ahead of ``F.scaled_dot_product_attention``, ``models/llama/
  model.py``, December 2024) and PyTorch's context parallelism all-gathers those tensors
  (``context_parallel_rotate_method`` default ``"allgather"``, ``config_manager.py``), so
  there the gathered width is the query heads' (``Stack.repeats_kv_heads``).
* **A TP boundary's whole-sequence gradient** (sequence parallelism, TP > 1, collectives not
  fused with the GEMMs): in a layer's backward the row-parallel GEMM needs its output's
  gradient all-gathered over the whole sequence, and the column-parallel GEMM produces its
  input's gradient whole before the reduce-scatter (Korthikanti et al. 2022, §4.2.2: ``g``
  is an all-gather in the backward, ``g-bar`` a reduce-scatter), ``b s / cp x h x 2`` bytes,
  one at a time beside the rebuilt or stashed activations. With the collectives fused into
  the GEMMs (``Stack.tp_comm_overlap``: PyTorch's async TP in symmetric memory outside the
  caching allocator, Transformer Engine's userbuffers allocated once) the planner counts
  none: torchtitan's 70B run reads 4.3 GiB less with async TP than without
  (:func:`tp_boundary_gradient_bytes`).
* **Pipeline buffers** (``Stack.pipeline_buffers``): PyTorch's
  ``torch.distributed.pipelining`` (torchtitan's pipeline) gives each stage a receive
  buffer per micro-batch for its input and one for the gradient of its output, allocated
  once and reused every step (``_prepare_forward_infra``, ``_prepare_backward_infra``:
  one ``_RecvInfo`` buffer per micro-batch), and keeps every micro-batch's output until the
  step ends (``output_chunks``, for ``merge_output_chunks``; kept on every stage until
  PyTorch PR #153383 of May 2025 kept it on the last stage only, PR #138504 of October 2024
  detached it there after the backward). A stage's input and output are the hidden states
  of ``b s / cp`` tokens, split ``t`` ways under sequence parallelism, in 16 bits; the last
  stage's output is the model's 16-bit logits, ``V / t`` per token. The forward receive
  buffers of the micro-batches in flight are the first layer's stashed input, already
  counted among the activations, so they are not counted again; the backward accumulates
  each input's gradient into its receive buffer (``.grad``), kept until the next step
  clears it (``clear_runtime_states``), so a buffer whose micro-batch is done holds two
  tensors (:func:`pipeline_buffer_bytes`).
"""

from __future__ import annotations

from solutions import models
from solutions.layout import ParallelConfig
from solutions.precision import BYTES_16BIT
from solutions.stack import MODERN, Stack
from solutions.tensor_parallel import activation_bytes, kv_heads_per_gpu


def loss_buffer_bytes(arch: models.Architecture, cfg: ParallelConfig,
                      stack: Stack = MODERN) -> float:
    """Bytes of the output logits and the loss's buffers of one micro-batch on a GPU of the
    last stage: ``b s / cp x V / t x loss_bytes_per_logit`` (module doc)."""
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp
    per_logit = stack.loss_bytes_per_logit
    if cfg.tp > 1 and stack.tp_loss_bytes_per_logit:
        per_logit = stack.tp_loss_bytes_per_logit
    return tokens * arch.vocab_size / cfg.tp * per_logit


def gathered_kv_heads(arch: models.Architecture, tp: int, repeated: bool) -> int:
    """K/V heads per GPU that context parallelism gathers: the GPU's own K/V heads, or its
    query heads when the stack repeats K/V for them first (``Stack.repeats_kv_heads``); the
    step-time model's CP collectives move the same (module doc)."""
    return arch.n_heads // tp if repeated else kv_heads_per_gpu(arch.n_kv_heads, tp)


def gathered_kv_bytes(arch: models.Architecture, cfg: ParallelConfig,
                      stack: Stack = MODERN) -> float:
    """Bytes of one layer's all-gathered K and V on a GPU when ``cp > 1``: ``2 b s
    (n_kv / t) d_head x 2`` (the K/V heads this GPU's TP rank holds, the whole sequence;
    ``n / t`` heads when the stack repeats them for the query heads first); 0 without
    context parallelism (module doc). Llama 3 405B at 131,072 tokens, TP 8, one K/V head
    per GPU: 2 x 131,072 x 128 x 2 = 67 MB; repeated for its 16 query heads, 1.07 GB."""
    if cfg.cp == 1:
        return 0.0
    heads = gathered_kv_heads(arch, cfg.tp, stack.repeats_kv_heads)
    return 2 * cfg.micro_batch * cfg.seq_len * heads * arch.head_dim * BYTES_16BIT


def tp_boundary_gradient_bytes(arch: models.Architecture, cfg: ParallelConfig,
                               stack: Stack) -> float:
    """Bytes of one whole-sequence activation gradient at a TP boundary in a layer's
    backward, ``b s / cp x h x 2``, under sequence parallelism with TP > 1 and collectives not
    fused into the GEMMs; 0 otherwise (module doc)."""
    if cfg.tp == 1 or not stack.sequence_parallel or stack.tp_comm_overlap:
        return 0.0
    return activation_bytes(cfg.micro_batch, cfg.seq_len, arch.d_model) / cfg.cp


def boundary_bytes(arch: models.Architecture, cfg: ParallelConfig, stack: Stack) -> float:
    """Bytes of one micro-batch's hidden states passed between pipeline stages on one GPU:
    ``b s / cp x h x 2``, split ``t`` ways under sequence parallelism (module doc)."""
    split = cfg.tp if stack.sequence_parallel else 1
    return activation_bytes(cfg.micro_batch, cfg.seq_len, arch.d_model) / cfg.cp / split


def pipeline_buffer_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                          stack: Stack, in_flight_chunks: float) -> float:
    """Bytes of ``torch.distributed.pipelining``'s per-micro-batch buffers on one GPU of
    pipeline rank ``stage`` (module doc): for each of its ``v`` model chunks (virtual stage
    ``stage + c p``), m input receive buffers unless it is the first virtual stage, m
    output-gradient receive buffers unless it is the last, and m kept outputs: the 16-bit
    logits, ``V / t`` per token, on the last, the hidden states on the others under
    ``"torch-2.7"``; less the ``in_flight_chunks`` receive buffers
    that are the first layer's stashed input, plus the input gradients of the others, which
    the backward accumulates into the receive buffers (``torch.autograd.backward`` into leaf
    tensors) and the next step's ``clear_runtime_states`` frees (PyTorch PR #164329 of
    October 2025 frees them earlier). 0 without a pipeline or for another library."""
    if cfg.pp == 1 or stack.pipeline_buffers == "transient":
        return 0.0
    every_stage_output = stack.pipeline_buffers == "torch-2.7"
    m, v = cfg.schedule_microbatches, cfg.virtual_stages  # per run of the schedule
    last = cfg.pp * v - 1
    hidden = boundary_bytes(arch, cfg, stack)
    logits = cfg.micro_batch * cfg.seq_len / cfg.cp * arch.vocab_size / cfg.tp * BYTES_16BIT
    total = 0.0
    receiving = 0  # input receive buffers
    for virtual in (stage + c * cfg.pp for c in range(v)):
        receiving += m * (virtual > 0)
        total += m * hidden * (virtual < last)  # output-gradient receive buffers
        if virtual == last:
            total += m * logits
        elif every_stage_output:
            total += m * hidden
    # an input buffer not in flight holds its micro-batch's input and, once its backward has
    # run, that input's gradient (both at the step's last forward); one in flight is stashed
    idle = receiving - min(in_flight_chunks, receiving)
    return total + 2 * idle * hidden


def transient_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                    stack: Stack = MODERN, in_flight_chunks: float = 0.0) -> float:
    """The buffers of ``stage`` at its peak: the loss's on the last stage, one layer's
    gathered K/V and TP boundary gradient on every stage, the pipeline library's
    per-micro-batch buffers with ``in_flight_chunks`` chunk forwards stashed (module doc)."""
    loss = loss_buffer_bytes(arch, cfg, stack) if stage == cfg.pp - 1 else 0.0
    return (loss + gathered_kv_bytes(arch, cfg, stack)
            + tp_boundary_gradient_bytes(arch, cfg, stack)
            + pipeline_buffer_bytes(arch, cfg, stage, stack, in_flight_chunks))
