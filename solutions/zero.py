"""Model-state memory and communication of ZeRO data parallelism (stages 0-3).

Source: Rajbhandari, Rasley, Ruwase & He, "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", SC20 (arXiv:1910.02054).

* §3.1: mixed-precision Adam keeps, per parameter, FP16 weights (2 bytes), FP16
  gradients (2 bytes) and K = 12 bytes of optimizer state (FP32 master weights,
  momentum and variance, 4 bytes each): 2 + 2 + K = 16 bytes.
* §5 and Figure 1, with N data-parallel GPUs, per GPU and per parameter:
  stage 0 (plain DP)            2 + 2 + K
  stage 1 (P_os, optimizer)     2 + 2 + K/N
  stage 2 (P_os+g, + gradients) 2 + (2 + K)/N
  stage 3 (P_os+g+p, + weights) (2 + 2 + K)/N
* §7: plain DP all-reduces the gradients, 2 Psi elements sent per GPU (reduce-scatter +
  all-gather); stages 1 and 2 move the same 2 Psi; stage 3 adds a parameter all-gather in
  the backward pass, 3 Psi in total (1.5x). With a ring each collective carries the exact
  factor (N-1)/N, which the paper rounds to 1.

GB are decimal (1e9 bytes). ``n_params`` is a plain count (7e9 for a 7B model).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from solutions._checks import non_negative, positive, positive_int

WEIGHT_BYTES = 2.0  # FP16/BF16 working copy of the weights
GRADIENT_BYTES = 2.0  # FP16/BF16 gradients
ADAM_OPTIMIZER_BYTES = 12.0  # K: FP32 master weights + momentum + variance (ZeRO §3.1)
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)


class ModelStateBytes(NamedTuple):
    """Bytes per parameter held on one GPU, split by kind."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def _stage(zero_stage: int) -> int:
    if isinstance(zero_stage, bool) or zero_stage not in ZERO_STAGES:
        raise ValueError(f"zero_stage must be one of {ZERO_STAGES}, got {zero_stage!r}")
    return int(zero_stage)


@lru_cache(maxsize=4096, typed=True)  # pure; planners ask it for every layout
def model_state_breakdown(
    zero_stage: int, n_dp: int, optimizer_bytes: float = ADAM_OPTIMIZER_BYTES
) -> ModelStateBytes:
    """Per-GPU bytes per parameter for weights, gradients and optimizer state.

    Stage s shards the optimizer state (s >= 1), the gradients (s >= 2) and the weights
    (s = 3) over the ``n_dp`` data-parallel GPUs (ZeRO §5, Figure 1).
    ``optimizer_bytes`` is K (12 for mixed-precision Adam).
    """
    stage = _stage(zero_stage)
    n = positive_int("n_dp", n_dp)
    non_negative("optimizer_bytes", optimizer_bytes)
    return ModelStateBytes(
        weights=WEIGHT_BYTES / n if stage >= 3 else WEIGHT_BYTES,
        gradients=GRADIENT_BYTES / n if stage >= 2 else GRADIENT_BYTES,
        optimizer=optimizer_bytes / n if stage >= 1 else optimizer_bytes,
    )


def model_state_bytes_per_param(
    zero_stage: int, n_dp: int, optimizer_bytes: float = ADAM_OPTIMIZER_BYTES
) -> float:
    """Total per-GPU model-state bytes per parameter: 16, 4 + 12/N, 2 + 14/N or 16/N.

    Values for K = 12 (mixed-precision Adam); ZeRO §5, Figure 1.
    """
    return model_state_breakdown(zero_stage, n_dp, optimizer_bytes).total


def model_state_gb_per_gpu(
    n_params: float, zero_stage: int, n_dp: int, optimizer_bytes: float = ADAM_OPTIMIZER_BYTES
) -> float:
    """Model-state memory per GPU in GB: n_params x bytes per parameter / 1e9.

    Weights, gradients and optimizer state only (no activations, buffers or
    fragmentation). Example from ZeRO Figure 1: 7.5B parameters, N = 64: 120, 31.4, 16.6
    and 1.9 GB for stages 0-3.
    """
    non_negative("n_params", n_params)
    return n_params * model_state_bytes_per_param(zero_stage, n_dp, optimizer_bytes) / 1e9


def comm_volume_multiple(zero_stage: int) -> int:
    """Elements sent per GPU per step in units of Psi (large-N limit): 2, 2, 2 or 3 (ZeRO §7)."""
    return 3 if _stage(zero_stage) == 3 else 2


def comm_gb_per_gpu(
    n_params: float, zero_stage: int, n_dp: int, bytes_per_element: float = GRADIENT_BYTES
) -> float:
    """GB each GPU sends per training step for data-parallel synchronisation.

    Stages 0-2: one reduce-scatter and one all-gather of Psi elements (the gradient
    AllReduce, or in stage 2 the gradient reduce-scatter plus the parameter all-gather):
    2 x Psi x (N-1)/N. Stage 3: a parameter all-gather in the forward pass, another in
    the backward pass and a gradient reduce-scatter: 3 x Psi x (N-1)/N. Ring collectives,
    ``bytes_per_element`` bytes per element (2 for FP16/BF16). ZeRO §7.
    """
    non_negative("n_params", n_params)
    positive("bytes_per_element", bytes_per_element)
    n = positive_int("n_dp", n_dp)
    psi_gb = n_params * bytes_per_element / 1e9
    return comm_volume_multiple(zero_stage) * psi_gb * (n - 1) / n


def min_zero_stage_that_fits(
    n_params: float, n_dp: int, budget_gb: float, other_gb: float = 0.0,
    optimizer_bytes: float = ADAM_OPTIMIZER_BYTES,
) -> int | None:
    """The lowest ZeRO stage whose model states plus ``other_gb`` fit in ``budget_gb``.

    "Fits" means model_state_gb_per_gpu + other_gb <= budget_gb (both per GPU, decimal GB;
    ``other_gb`` is typically activations). Returns None when even stage 3 does not fit.
    Lower stages are preferred because they communicate less (stage 3 moves 1.5x).
    """
    positive("budget_gb", budget_gb)
    non_negative("other_gb", other_gb)
    for stage in ZERO_STAGES:
        need = model_state_gb_per_gpu(n_params, stage, n_dp, optimizer_bytes) + other_gb
        if need <= budget_gb * (1 + 1e-12):  # tolerate float rounding at an exact fit
            return stage
    return None
