"""Step-time model: the memory traffic of routing a MoE layer's tokens to their experts.

A mixture-of-experts layer copies each token to the ``k`` experts the router chose and
back. The copies are data movement, not arithmetic: kernels that read and write rows of
``h`` values through HBM, about as many bytes as the expert GEMMs' own operands when the
experts are narrow (Qwen3-30B-A3B: ``k`` = 8 copies of ``h`` = 2,048 values against experts
768 wide). This module counts those bytes, per token, as Megatron-Core moves them; the
model charges them at the HBM bandwidth (:func:`solutions.performance.flops.hbm_seconds`).

Megatron-Core's all-to-all dispatcher (``megatron/core/transformer/moe/token_dispatcher.py``,
``MoEAlltoAllTokenDispatcher``; its docstring lists the workflow) runs, per MoE layer:

1. ``permute``: each token's row is copied to its ``k`` destinations, grouped by EP rank
   (the fused kernel, ``moe_permute_fusion``, reads the row once and writes it ``k``
   times: ``(1 + k) h`` values);
2. the EP all-to-all (:mod:`solutions.performance.comm`);
3. ``sort_chunks_by_idxs``: the received chunks re-ordered by local expert, whenever the
   GPU holds more than one expert (``k h`` read and written per token, ``etp`` times that
   when the expert is split over ``etp`` ranks, which all receive the token);
4. the expert GEMMs and their activation (:mod:`solutions.performance.flops`);
5. the inverse sort (``2 k h``), the all-to-all back, and ``unpermute``: the ``k`` copies
   read, weighted by their router probabilities and summed into one row (``(k + 1) h``).

The backward runs each step's adjoint, moving the same rows: ``unpermute``'s adjoint writes
the ``k`` gradient copies and reads the ``k`` forward outputs again for the gradient of
the probabilities (``(1 + 2 k) h``); the sorts' are sorts; ``permute``'s sums the ``k``
gradient copies into one row (``(k + 1) h``).

DeepEP's dispatcher (``_DeepepManager``, ``ep_node_dedup`` in the model) sends each token
once to every EP rank that holds one of its experts and builds the expert-sorted copies
on the receiving rank (``get_permuted_hidden_states_by_experts``: one ``permute`` from the
``r`` rows received per token, ``r`` the expected number of distinct ranks its ``k``
experts sit on, :func:`solutions.performance.comm.ranks_reached`); its combine sums them
back (``unpermute``): ``(r + k) h`` each way forward, ``(2 k + r)`` and ``(k + r) h``
backward. The buffer copies inside DeepEP's own kernels are part of its communication.

Values are 16-bit (the dispatchers move the layer's BF16 activations; the probabilities,
``k`` FP32 numbers per token, are left out as ``h`` is thousands).
"""

from __future__ import annotations

from solutions import models
from solutions.layout import ParallelConfig
from solutions.performance.comm import ranks_reached
from solutions.precision import BYTES_16BIT


def routing_values_per_token(arch: models.Architecture, cfg: ParallelConfig,
                             dedup: bool = False, expert_routing: str = "balanced",
                             ) -> tuple[float, float]:
    """(forward, backward) 16-bit values one MoE layer's token routing reads and writes in
    HBM per token of the GPU's share (``b s / (cp tp)``), by the dispatcher: DeepEP's when
    ``dedup``, else Megatron-Core's all-to-all one (module docstring). ``(0, 0)`` for a
    dense model."""
    moe = arch.moe
    if moe is None:
        return 0.0, 0.0
    k, h, etp = moe.experts_per_token, arch.d_model, cfg.expert_tp
    if dedup:
        r = ranks_reached(cfg, moe, expert_routing)
        return 2 * (r + k) * etp * h, (3 * k + 2 * r) * etp * h
    sorts = 4 * k * etp * h if moe.n_routed_experts > cfg.ep else 0.0
    return 2 * (k + 1) * h + sorts, (3 * k + 2) * h + sorts


def routing_bytes_per_token(arch: models.Architecture, cfg: ParallelConfig,
                            dedup: bool = False, expert_routing: str = "balanced",
                            ) -> tuple[float, float]:
    """(forward, backward) HBM bytes of :func:`routing_values_per_token`."""
    fwd, bwd = routing_values_per_token(arch, cfg, dedup, expert_routing)
    return BYTES_16BIT * fwd, BYTES_16BIT * bwd
