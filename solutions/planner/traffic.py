"""5D-parallelism planner: bytes each GPU sends per training step, per dimension.

All volumes are bytes **sent by one GPU** of the busiest pipeline stage (the one holding
the most layers, then the most parameters) during one optimizer step of m = ``grad_accum``
micro-batches, with ring collectives (a ring all-gather or reduce-scatter of M bytes sends
``(n-1)/n x M`` per GPU; an all-reduce twice that: Patarasuk & Yuan 2009, NCCL
doc/PERFORMANCE.md). Activations travel in 16-bit (2 bytes). Notation: ``b`` micro-batch,
``s_l = seq_len / cp`` the local sequence chunk, ``h`` = d_model, ``t`` = tp, L the stage's
layers.

* TP (+SP): Megatron-LM puts 2 all-reduces of the ``[s, b, h]`` activation in each layer's
  forward pass and 2 in its backward (Shoeybi et al. 2019, §3). With sequence parallelism
  each all-reduce becomes a reduce-scatter plus an all-gather of the same total volume
  (Korthikanti et al. 2022, §4.2.2), so SP adds nothing and is counted here:
  ``4 x 2 (t-1)/t x s_l b h x 2`` bytes per layer per micro-batch, plus the forward pair
  again under full recomputation (``6`` instead of ``4``).
* PP: a stage sends its output activation forward and the gradient of its input backward,
  ``s_l b h x 2 / t`` each (the activation is already split t ways by SP, or by Megatron's
  scatter/gather optimisation: Narayanan et al. 2021, §4.1): ``2 x v x m x s_l b h x 2 / t``
  for a middle stage; interleaving multiplies the boundaries by v (§2.2.2).
* DP (Rajbhandari et al. 2020, §7), with Psi the GPU's parameters, n = ``dp x cp`` for dense
  weights and ``expert_dp`` (:attr:`solutions.layout.ParallelConfig.expert_dp`) for expert
  weights, ring factor ``(n-1)/n``, gradients of
  ``grad_bytes`` and 16-bit weights: ZeRO-0 all-reduces the accumulated gradient once
  (``2 (n-1)/n Psi g``); stage 1 reduce-scatters it once and all-gathers the updated weights
  (``(n-1)/n Psi (g + 2)``); stage 2 and a resharding stage 3 reduce-scatter every
  micro-batch's gradient, and stage 3 gathers the weights for every forward and backward
  (``(n-1)/n Psi (m g + 2 x gathers)``); Llama 3's FSDP (no reshard after forward) gathers
  once per step and reduce-scatters each chunk's FP32 gradient once
  (``(n-1)/n Psi (4 + 2)``, §3.3.2). The counts come from
  :func:`solutions.planner.memory.grad_reductions_per_step` and
  :func:`solutions.planner.memory.gathers_per_step`, the same functions the memory model's
  sharding reads.
* EP: each MoE layer dispatches every local token to its k experts with an all-to-all and
  combines the results with another; ``(ep-1)/ep`` of the traffic leaves the GPU. Local tokens
  ``s_l b / t`` (sequence-parallel): ``2 x T k h x 2 x (ep-1)/ep`` forward, the same again
  backward, plus the forward again under full recomputation.
* CP: Llama 3 uses an all-gather of K and V across the CP group in the forward pass and a
  reduce-scatter of their gradients in the backward (§3.3.2, "all-gather based" context
  parallelism, not ring attention): ``2 x (cp-1) x 2 s_l b (kv_heads_per_gpu x head_dim) x 2``
  per layer per micro-batch (+ the forward again under full recomputation); a stack that
  repeats K/V for the query heads before attention gathers those (torchtitan).
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions import models
from solutions._checks import non_negative, positive
from solutions.layout import layers_per_stage
from solutions.planner.buffers import gathered_kv_heads
from solutions.planner.memory import (
    ParallelConfig,
    gathers_per_step,
    grad_reductions_per_step,
    stage_gathered_bytes,
    stage_layer_kinds,
    stage_params,
)
from solutions.precision import BYTES_16BIT
from solutions.stack import MODERN, Stack


@dataclass(frozen=True)
class CommVolume:
    """Bytes one GPU sends per step, per parallelism dimension (SP is inside TP)."""

    tp_bytes: float
    pp_bytes: float
    dp_bytes: float
    ep_bytes: float
    cp_bytes: float

    def as_gb(self) -> dict[str, float]:
        """Per dimension in decimal GB; the key "TP+SP" reminds that SP is counted there."""
        return {"TP+SP": self.tp_bytes / 1e9, "PP": self.pp_bytes / 1e9,
                "DP": self.dp_bytes / 1e9, "EP": self.ep_bytes / 1e9,
                "CP": self.cp_bytes / 1e9}

    @property
    def total_bytes(self) -> float:
        return self.tp_bytes + self.pp_bytes + self.dp_bytes + self.ep_bytes + self.cp_bytes


def busiest_stage(arch: models.Architecture, cfg: ParallelConfig) -> int:
    """The stage with the most layers, then the most parameters (the first on a tie)."""
    counts = layers_per_stage(arch.n_layers, cfg.pp)
    keys = [(counts[i], stage_params(arch, cfg, i).total) for i in range(cfg.pp)]
    return keys.index(max(keys))


def _forward_passes(cfg: ParallelConfig) -> int:
    """Forward passes per micro-batch: 2 with full recomputation, else 1."""
    return 2 if cfg.activation_recompute == "full" else 1


def _activation_bytes(arch: models.Architecture, cfg: ParallelConfig) -> float:
    """One micro-batch's ``[s_l, b, h]`` activation in 16-bit."""
    return cfg.seq_len / cfg.cp * cfg.micro_batch * arch.d_model * BYTES_16BIT


def tp_bytes(arch: models.Architecture, cfg: ParallelConfig, layers: int) -> float:
    """TP+SP: ``(2 fwd + 2 bwd) all-reduce equivalents x 2 (t-1)/t x M`` per layer, x m."""
    t = cfg.tp
    collectives = 2 * _forward_passes(cfg) + 2
    per_layer = collectives * 2 * (t - 1) / t * _activation_bytes(arch, cfg)
    return per_layer * layers * cfg.grad_accum


def pp_bytes(arch: models.Architecture, cfg: ParallelConfig) -> float:
    """PP: one activation forward and one gradient backward per micro-batch and chunk."""
    if cfg.pp == 1:
        return 0.0
    return 2 * cfg.virtual_stages * cfg.grad_accum * _activation_bytes(arch, cfg) / cfg.tp


def dp_bytes_per_param(cfg: ParallelConfig, grad_bytes: float, stack: Stack = MODERN,
                       gather_bytes: float = BYTES_16BIT) -> float:
    """Bytes one GPU sends per parameter per step over DP, before the ring factor; the
    weights gather at ``gather_bytes`` each (:func:`dp_bytes` passes the memory model's)."""
    positive("grad_bytes", grad_bytes)
    if cfg.zero_stage == 0:
        return 2 * grad_bytes
    if cfg.zero_stage == 1 and stack.zero1_allreduce:  # all-reduce, then the update gather
        return 2 * grad_bytes + gather_bytes
    reductions = grad_reductions_per_step(cfg, stack)
    gathers = max(1, gathers_per_step(cfg, stack))  # stages 1-2 gather the update once
    return reductions * grad_bytes + gathers * gather_bytes


def dp_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
             grad_bytes: float = 2.0, stack: Stack = MODERN) -> float:
    """DP: the per-step gradient and parameter traffic of the stage's parameters. With
    hybrid sharding (``dp_shard``) the collectives run inside a shard group of ``n``
    ranks, and each reduced ``1/n`` shard is then all-reduced across the ``r`` groups
    (a ring all-reduce sends ``2 (r-1)/r`` of it)."""
    params = stage_params(arch, cfg, stage)
    # the weights gather at the bytes the memory model holds them in (FP8 all-gather: 1)
    gathered = stage_gathered_bytes(arch, cfg, stage, stack) / params.total
    per_param = dp_bytes_per_param(cfg, grad_bytes, stack, gathered)
    n_dense = cfg.shard_dp * cfg.cp
    n_expert = cfg.expert_dp
    r = cfg.replicas
    across = (grad_reductions_per_step(cfg, stack) * 2 * grad_bytes * (r - 1) / r / n_dense
              if cfg.zero_stage >= 1 else 0.0)
    return (per_param * (params.dense * (n_dense - 1) / n_dense
                         + params.expert * (n_expert - 1) / n_expert)
            + across * params.dense)


def ep_bytes(arch: models.Architecture, cfg: ParallelConfig, moe_layers: int) -> float:
    """EP: dispatch + combine all-to-alls, forward(s) and backward, per MoE layer."""
    if arch.moe is None or cfg.ep == 1 or moe_layers == 0:
        return 0.0
    tokens = cfg.seq_len / cfg.cp * cfg.micro_batch / cfg.tp
    one_way = tokens * arch.moe.experts_per_token * arch.d_model * BYTES_16BIT
    leaving = (cfg.ep - 1) / cfg.ep
    all_to_alls = 2 * _forward_passes(cfg) + 2
    return all_to_alls * one_way * leaving * moe_layers * cfg.grad_accum


def cp_bytes(arch: models.Architecture, cfg: ParallelConfig, layers: int,
             stack: Stack = MODERN) -> float:
    """CP: all-gather K,V forward (again if recomputed), reduce-scatter dK,dV backward, at
    the heads the stack gathers (:func:`solutions.planner.buffers.gathered_kv_heads`)."""
    if cfg.cp == 1:
        return 0.0
    kv_width = gathered_kv_heads(arch, cfg.tp, stack.repeats_kv_heads) * arch.head_dim
    local_kv = 2 * (cfg.seq_len / cfg.cp) * cfg.micro_batch * kv_width * BYTES_16BIT
    collectives = _forward_passes(cfg) + 1
    return collectives * (cfg.cp - 1) * local_kv * layers * cfg.grad_accum


def comm_per_step(arch: models.Architecture, cfg: ParallelConfig,
                  grad_bytes: float = 2.0, stack: Stack = MODERN) -> CommVolume:
    """Bytes one GPU of the busiest stage sends per optimizer step, per dimension, on
    ``stack`` (its sharding decides how often DP gathers and reduces)."""
    stage = busiest_stage(arch, cfg)
    layers = layers_per_stage(arch.n_layers, cfg.pp)[stage]
    moe_layers = stage_layer_kinds(arch, cfg.pp)[stage][1]
    return CommVolume(
        tp_bytes=tp_bytes(arch, cfg, layers),
        pp_bytes=pp_bytes(arch, cfg),
        dp_bytes=dp_bytes(arch, cfg, stage, grad_bytes, stack),
        ep_bytes=ep_bytes(arch, cfg, moe_layers),
        cp_bytes=cp_bytes(arch, cfg, layers, stack),
    )


def comm_time_s(volume_bytes: float, per_direction_gb_per_s: float) -> float:
    """Seconds to send ``volume_bytes`` at a link's per-direction bandwidth (no overlap)."""
    non_negative("volume_bytes", volume_bytes)
    return volume_bytes / (positive("per_direction_gb_per_s", per_direction_gb_per_s) * 1e9)
