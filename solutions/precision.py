"""Floating-point formats for training, and what mixed precision saves in memory.

A binary floating-point format with ``e`` exponent bits, ``m`` mantissa (fraction) bits
and bias ``b = 2^(e-1) - 1`` represents (IEEE 754-2008, §3.4):

- normals ``(1 + f / 2^m) * 2^(E - b)`` for stored exponents ``E = 1 .. 2^e - 2``;
- subnormals ``(f / 2^m) * 2^(1 - b)`` for ``E = 0``;
- infinities and NaNs for ``E = 2^e - 1``.

So the largest normal is ``(2 - 2^-m) * 2^(2^e - 2 - b)``, the smallest normal
``2^(1 - b)`` and the smallest subnormal ``2^(1 - b - m)``.

FP8 E4M3 is the exception (Micikevicius et al. 2022, "FP8 Formats for Deep Learning",
arXiv:2209.05433, §3 and Table 1): it has **no infinities**; the all-ones exponent
still holds normal numbers and only the all-ones exponent *and* all-ones mantissa is
NaN. Its largest value is therefore ``1.75 * 2^8 = 448`` rather than the IEEE-style
``1.875 * 2^7 = 240``. E5M2 follows the IEEE conventions (largest 57344).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solutions._checks import non_negative, positive, positive_int


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format.

    ``ieee_specials`` is True when the all-ones exponent is reserved for inf/NaN (IEEE
    754 style); False for E4M3, whose all-ones exponent holds normals except the single
    all-ones-mantissa NaN pattern.
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    ieee_specials: bool = True

    def __post_init__(self) -> None:
        positive_int("exponent_bits", self.exponent_bits)
        non_negative("mantissa_bits", self.mantissa_bits)

    @property
    def bias(self) -> int:
        """Exponent bias ``2^(e-1) - 1`` (15 for FP16, 127 for FP32 and BF16, 7 for E4M3)."""
        return int(2 ** (self.exponent_bits - 1) - 1)

    @property
    def bits(self) -> int:
        """Total width: sign + exponent + mantissa."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def max_normal(self) -> float:
        """The largest finite value."""
        top_exponent = 2**self.exponent_bits - 1 - self.bias
        if self.ieee_specials:
            # All-ones exponent reserved: top usable exponent is one lower, full mantissa.
            return float((2.0 - 2.0**-self.mantissa_bits) * 2.0 ** (top_exponent - 1))
        # All-ones exponent usable; its all-ones mantissa is NaN, so drop one ulp more.
        return float((2.0 - 2.0 ** (1 - self.mantissa_bits)) * 2.0**top_exponent)

    @property
    def min_normal(self) -> float:
        """The smallest positive normal value ``2^(1 - bias)``."""
        return 2.0 ** (1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        """The smallest positive (subnormal) value ``2^(1 - bias - m)``."""
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def epsilon(self) -> float:
        """Gap between 1 and the next value, ``2^-m``: the relative precision."""
        return 2.0**-self.mantissa_bits

    @property
    def dynamic_range_binades(self) -> float:
        """``log2(max_normal / min_subnormal)``: how many powers of two the format spans."""
        return math.log2(self.max_normal / self.min_subnormal)


FP32 = FloatFormat("FP32", exponent_bits=8, mantissa_bits=23)
FP16 = FloatFormat("FP16", exponent_bits=5, mantissa_bits=10)
BF16 = FloatFormat("BF16", exponent_bits=8, mantissa_bits=7)
FP8_E4M3 = FloatFormat("FP8 E4M3", exponent_bits=4, mantissa_bits=3, ieee_specials=False)
FP8_E5M2 = FloatFormat("FP8 E5M2", exponent_bits=5, mantissa_bits=2)

FORMATS: dict[str, FloatFormat] = {f.name: f for f in (FP32, FP16, BF16, FP8_E4M3, FP8_E5M2)}
#: Bytes of one 16-bit (BF16 or FP16) value: weights, activations and gradients in the
#: planner's and the step-time model's byte counts.
BYTES_16BIT = BF16.bits // 8


def fp16_min_normal() -> float:
    """FP16's smallest positive normal: ``2^(1 - 15) = 2^-14 = 6.103515625e-5``."""
    return FP16.min_normal


def format_by_name(name: str) -> FloatFormat:
    """Look a format up by name ("FP16", "BF16", "FP8 E4M3", ...); ValueError if unknown."""
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[name]


# -- memory -----------------------------------------------------------------------------
def training_bytes_per_param(weight_bytes: float, grad_bytes: float, master_bytes: float,
                             optimizer_bytes: float) -> float:
    """Bytes of model state per parameter: weights + gradients + master copy + optimizer."""
    return (non_negative("weight_bytes", weight_bytes) + non_negative("grad_bytes", grad_bytes)
            + non_negative("master_bytes", master_bytes)
            + non_negative("optimizer_bytes", optimizer_bytes))


def mixed_precision_adam_bytes_per_param() -> float:
    """16 bytes: FP16 weights 2 + FP16 grads 2 + FP32 master 4 + Adam moments 4 + 4.

    Source: Rajbhandari et al. 2020 (ZeRO), §3.1: ``2Ψ + 2Ψ + KΨ`` with ``K = 12``.
    """
    return training_bytes_per_param(2.0, 2.0, 4.0, 8.0)


def fp32_adam_bytes_per_param() -> float:
    """16 bytes: FP32 weights 4 + FP32 grads 4 + Adam moments 4 + 4 (no master copy needed)."""
    return training_bytes_per_param(4.0, 4.0, 0.0, 8.0)


def mixed_to_fp32_state_ratio() -> float:
    """Model-state memory of mixed-precision Adam over pure-FP32 Adam: 16 / 16 = 1.0."""
    return mixed_precision_adam_bytes_per_param() / fp32_adam_bytes_per_param()


def stored_activation_elements(micro_batch: int, seq_len: int, d_model: int, n_layers: int,
                               tensors_per_layer: int = 2) -> int:
    """Elements kept for backward in a simplified model: ``k * b * s * d * L``.

    ``k = 2`` keeps only the inputs to attention and to the MLP of each layer (what full
    activation recomputation stores, give or take). Without recomputation a layer stores
    far more: ``s b h (34 + 5 a s / h)`` bytes (Korthikanti et al. 2022, Table 2).
    """
    return (positive_int("tensors_per_layer", tensors_per_layer)
            * positive_int("micro_batch", micro_batch) * positive_int("seq_len", seq_len)
            * positive_int("d_model", d_model) * positive_int("n_layers", n_layers))


def activation_gb(n_elements: float, bytes_per_element: float) -> float:
    """GB (1e9 bytes) for ``n_elements`` stored at ``bytes_per_element`` each."""
    return non_negative("n_elements", n_elements) * positive("bytes_per_element",
                                                             bytes_per_element) / 1e9


def fp8_activation_saving_gb(micro_batch: int, seq_len: int, d_model: int,
                             n_layers: int, tensors_per_layer: int = 2) -> float:
    """GB saved by storing the activations in FP8 (1 byte) instead of FP16 (2 bytes)."""
    n = stored_activation_elements(micro_batch, seq_len, d_model, n_layers, tensors_per_layer)
    return activation_gb(n, 2.0) - activation_gb(n, 1.0)
