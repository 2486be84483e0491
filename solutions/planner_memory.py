"""5D-parallelism planner, part 1: the configuration and the memory one GPU needs.

A configuration splits ``n_gpus = tp x cp x pp x dp`` ways (the Llama 3 order, innermost
first). Expert parallelism does not add GPUs: the ``ep`` ranks that share out the routed
experts are carved out of the data-parallel group, so ``ep`` must divide ``dp`` (as in
DeepSeek-V3: 2,048 H800s = PP 16 x DP 128, with EP 64 inside DP).

Memory per GPU = weights + gradients + optimizer state (ZeRO stage over the data-parallel
group, :mod:`solutions.zero`) + stashed activations. Conventions, all stated so that a hand
calculation can reproduce every number:

* Parameters per GPU: the stage's layers (:func:`solutions.llama3.layers_per_stage`) divided
  by ``tp``; the first stage adds the embedding and the last the output head (``V x d / tp``
  each). MoE: a GPU holds ``E / ep`` routed experts of each of its MoE layers (experts also
  split ``tp`` ways, Megatron-Core's default expert-TP = TP); attention, router and shared
  experts count as dense weights.
* ZeRO shards dense weights over ``dp x cp`` GPUs (context-parallel ranks hold the same
  weights and take part in the gradient reduction, as Megatron-Core's DP-with-CP group does)
  and expert weights over ``dp x cp / ep``.
* Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models", arXiv:2205.05198, §4, Table 2), 16-bit, per layer and micro-batch,
  with tensor + sequence parallelism over ``t`` GPUs, ``s`` the full sequence, ``s_l = s/cp``
  the local chunk, ``b`` the micro-batch, ``h`` = d_model and ``a`` the heads:
  ``"none"``: ``s_l b h (34 + 5 a s / h) / t``; ``"selective"`` (attention core recomputed):
  ``34 s_l b h / t``; ``"full"`` (only each layer's input kept): ``2 s_l b h / t`` (Table 2
  lists ``2 s b h`` without sequence parallelism; with it the stored input is split t ways).
  The coefficients 34 and 5 were derived for a GPT layer (4h GeLU MLP, multi-head attention);
  for GQA/SwiGLU layers they are an approximation. Output logits are not counted.
* In flight: with 1F1B, stage i stashes ``min(p - i, m)`` micro-batches (Narayanan et al.
  2021, §2.2.1); the interleaved schedule (``virtual_stages = v > 1``) makes the first stage
  hold ``1 + (p - 1)/(p v)`` times the 1F1B amount (Korthikanti et al. 2022, §4.2.3), which
  this module applies to every stage as an upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions import models, zero
from solutions.layout import RECOMPUTE_MODES as RECOMPUTE_MODES  # re-exported
from solutions.layout import ParallelConfig as ParallelConfig  # re-exported
from solutions.layout import Recompute as Recompute  # re-exported
from solutions.layout import StageParams as StageParams  # re-exported
from solutions.layout import layers_per_stage, stage_params_of
from solutions.layout import stage_layer_kinds as stage_layer_kinds  # re-exported
from solutions.pipeline import in_flight_microbatches

BYTES_16BIT = 2


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one GPU needs, for the stage where the total is largest."""

    stage: int
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float

    @property
    def total_bytes(self) -> float:
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes
                + self.activations_bytes)

    def as_gb(self) -> dict[str, float]:
        """Each component in decimal GB (1e9 bytes), plus the total."""
        parts = {"weights": self.weights_bytes, "gradients": self.gradients_bytes,
                 "optimizer": self.optimizer_bytes, "activations": self.activations_bytes,
                 "total": self.total_bytes}
        return {k: v / 1e9 for k, v in parts.items()}

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td style='text-align:right'>{v:,.2f} GB</td></tr>"
                       for k, v in self.as_gb().items())
        return f"<table><caption>Memory per GPU (stage {self.stage})</caption>{rows}</table>"


def stage_params(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> StageParams:
    """Parameters held by one GPU of ``stage`` (0-based), split into dense and expert."""
    return stage_params_of(arch, cfg.pp, cfg.tp, cfg.ep, stage)


def activation_bytes_per_layer(arch: models.Architecture, cfg: ParallelConfig) -> float:
    """Stashed activation bytes of one layer for one micro-batch (Korthikanti Table 2)."""
    s, s_local = cfg.seq_len, cfg.seq_len / cfg.cp
    sbh = s_local * cfg.micro_batch * arch.d_model
    if cfg.activation_recompute == "full":
        return BYTES_16BIT * sbh / cfg.tp
    if cfg.activation_recompute == "selective":
        return 34 * sbh / cfg.tp
    return sbh * (34 + 5 * arch.n_heads * s / arch.d_model) / cfg.tp


def in_flight(cfg: ParallelConfig, stage: int) -> float:
    """Micro-batches whose activations ``stage`` holds at peak (1F1B, interleaving factor)."""
    count = float(in_flight_microbatches(cfg.pp, cfg.grad_accum, "1f1b", stage))
    if cfg.virtual_stages > 1 and cfg.pp > 1:
        count *= 1 + (cfg.pp - 1) / (cfg.pp * cfg.virtual_stages)
    return count


def stage_memory(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> MemoryBreakdown:
    """Weights, gradients, optimizer state and activations of one GPU of ``stage``."""
    params = stage_params(arch, cfg, stage)
    n_dense = cfg.dp * cfg.cp
    dense = zero.model_state_breakdown(cfg.zero_stage, n_dense)
    # Expert weights are replicated over dp*cp/ep GPUs only; ep must divide dp (validator).
    expert = zero.model_state_breakdown(cfg.zero_stage, max(1, n_dense // cfg.ep))
    layers = layers_per_stage(arch.n_layers, cfg.pp)[stage]
    acts = layers * in_flight(cfg, stage) * activation_bytes_per_layer(arch, cfg)
    return MemoryBreakdown(
        stage=stage,
        weights_bytes=params.dense * dense.weights + params.expert * expert.weights,
        gradients_bytes=params.dense * dense.gradients + params.expert * expert.gradients,
        optimizer_bytes=params.dense * dense.optimizer + params.expert * expert.optimizer,
        activations_bytes=acts,
    )


def memory_per_gpu(arch: models.Architecture, cfg: ParallelConfig) -> MemoryBreakdown:
    """The largest per-GPU memory over all pipeline stages (the one that must fit)."""
    layers_per_stage(arch.n_layers, cfg.pp)  # raises if pp exceeds the layer count
    return max((stage_memory(arch, cfg, i) for i in range(cfg.pp)),
               key=lambda m: m.total_bytes)
