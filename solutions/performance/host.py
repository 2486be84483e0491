"""Step-time model: the time the GPU waits for the host to launch a MoE layer's experts.

Everything else in the model is GPU time: it assumes the host queues kernels faster than
the GPU runs them, so that launching is hidden. That fails where a stack launches one GEMM
per routed expert from the host (``Stack.expert_gemm_loop``):

* Transformer Engine's ``GroupedLinear``, Megatron-Core's routed experts with
  ``moe_grouped_gemm`` (``TEGroupedMLP``), runs a "grouped" GEMM as a loop of cuBLASLt
  GEMMs, one per local expert, spread over several streams (``general_grouped_gemm``,
  ``transformer_engine/pytorch/module/grouped_linear.py``; TE pull request #853, May 2024,
  "Grouped GEMM via multi-stream cuBLAS"). Per layer and micro-batch each local expert costs
  one GEMM per linear in the forward and two in the backward (data and weight gradients),
  for the two linears ``fc1`` (gate and up projections together) and ``fc2``:
  :data:`FORWARD_GEMMS` and :data:`BACKWARD_GEMMS`, so 6 GEMMs, 8 with full recomputation.
* Before the loop the host must know how many tokens each expert got (``m_splits`` is a
  host list), so the dispatcher waits for the router's counts: nothing is queued ahead of
  the loop, and its launches cannot hide under earlier work.

So a MoE layer's routed-expert GEMMs take at least the host's time to launch them, and the
model charges ``max(0, host - GPU)`` per MoE layer and micro-batch, with ``host = E/ep x 2 x
passes x`` :data:`EXPERT_GEMM_FLOOR_S` and ``GPU`` the same GEMMs' time at their efficiency
(:func:`solutions.performance.flops.expert_gemm_shape`). Many small experts per GPU (fine-
grained MoE: Qwen3-30B-A3B's 128 experts of width 768 on 8 GPUs, 16 each) make the host the
bottleneck; a few large ones (DeepSeek-V3 at EP 64: 4 per GPU) hide it.

A stack that launches the experts as one kernel (a true grouped GEMM: CUTLASS, cuteDSL's
fused grouped MLP, ``torch._grouped_mm``) or replays the whole step as a CUDA graph has no
such floor (``expert_gemm_loop=False``). The host's other per-expert work, the PyTorch ops
that TE's maintainers name as the rest of ``GroupedLinear``'s CPU time (``torch.split``, two
``torch.empty`` per GEMM for the FP8 casts; TE issue #1499, February 2025), is not counted:
this is a floor, not a host model.
"""

from __future__ import annotations

from solutions import models
from solutions.layout import ParallelConfig

#: Seconds one GEMM of Transformer Engine's multi-stream grouped GEMM takes when the GEMM
#: itself is tiny, i.e. the loop's cost per expert: 8 experts x 128 tokens, N = K = 2,048
#: (about 1 GFLOP each), 0.267 ms for the 8 on SM100 (Blackwell), where a single-launch
#: CUTLASS kernel does the same 8 in 0.069 ms (TE pull request #3134, June 2026,
#: ``benchmarks/linear/benchmark_grouped_linear.py``, TN fprop, "pure" timing: the GEMMs
#: only, operands prepared beforehand). A measurement on one host and one GPU generation,
#: used for all; not fitted.
EXPERT_GEMM_FLOOR_S = 0.267e-3 / 8
#: GEMMs per local expert and linear in a forward pass (1) and a backward pass (2: data and
#: weight gradients): ``_GroupedLinear.forward`` and ``.backward``.
FORWARD_GEMMS, BACKWARD_GEMMS = 1, 2
#: Linears per expert: ``linear_fc1`` (gate and up projections in one GEMM) and ``linear_fc2``.
LINEARS_PER_EXPERT = 2


def expert_launch_s(arch: models.Architecture, cfg: ParallelConfig, moe_layers: int,
                    expert_forward_s: float) -> float:
    """Seconds per micro-batch the GPU waits on the host for ``moe_layers`` MoE layers whose
    routed-expert GEMMs take ``expert_forward_s`` seconds in one forward pass (all those
    layers together): ``moe_layers x max(0, host - GPU)`` (module doc), counted over the
    forward, the backward and a full recomputation."""
    if moe_layers == 0 or arch.moe is None:
        return 0.0
    # passes over a layer, counted in forwards: the backward does twice the forward's GEMMs
    # (and twice its work), a full recomputation the forward's again
    recomputed = FORWARD_GEMMS if cfg.activation_recompute == "full" else 0
    passes = FORWARD_GEMMS + BACKWARD_GEMMS + recomputed
    # the experts one GPU holds; splitting each over etp ranks adds no launches
    experts = arch.moe.n_routed_experts / cfg.ep
    host = experts * LINEARS_PER_EXPERT * passes * EXPERT_GEMM_FLOOR_S
    gpu = passes * expert_forward_s / moe_layers
    return moe_layers * max(0.0, host - gpu)
