"""5D-parallelism planner: the short-lived buffers a GPU holds at its peak besides the
stashed activations, in decimal bytes.

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
  upper bound covers.
"""

from __future__ import annotations

from solutions import models
from solutions.layout import ParallelConfig
from solutions.precision import BYTES_16BIT
from solutions.stack import MODERN, Stack
from solutions.tensor_parallel import kv_heads_per_gpu


def loss_buffer_bytes(arch: models.Architecture, cfg: ParallelConfig,
                      stack: Stack = MODERN) -> float:
    """Bytes of the output logits and the loss's buffers of one micro-batch on a GPU of the
    last stage: ``b s / cp x V / t x loss_bytes_per_logit`` (module doc)."""
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp
    per_logit = stack.loss_bytes_per_logit
    if cfg.tp > 1 and stack.tp_loss_bytes_per_logit:
        per_logit = stack.tp_loss_bytes_per_logit
    return tokens * arch.vocab_size / cfg.tp * per_logit


def gathered_kv_bytes(arch: models.Architecture, cfg: ParallelConfig) -> float:
    """Bytes of one layer's all-gathered K and V on a GPU when ``cp > 1``: ``2 b s
    (n_kv / t) d_head x 2`` (the K/V heads this GPU's TP rank holds, the whole sequence);
    0 without context parallelism (module doc). Llama 3 405B at 131,072 tokens, TP 8, one
    K/V head per GPU: 2 x 131,072 x 128 x 2 = 67 MB."""
    if cfg.cp == 1:
        return 0.0
    width = kv_heads_per_gpu(arch.n_kv_heads, cfg.tp) * arch.head_dim
    return 2 * cfg.micro_batch * cfg.seq_len * width * BYTES_16BIT


def transient_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                    stack: Stack = MODERN) -> float:
    """The buffers of ``stage`` at its peak: the loss's on the last stage, one layer's
    gathered K/V on every stage (module doc)."""
    loss = loss_buffer_bytes(arch, cfg, stack) if stage == cfg.pp - 1 else 0.0
    return loss + gathered_kv_bytes(arch, cfg)
