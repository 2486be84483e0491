"""Dynamic loss scaling, step by step, with the semantics of PyTorch's GradScaler.

FP16 gradients smaller than ``2^-24`` flush to zero. Multiplying the loss by a scale
``S`` before the backward pass multiplies every gradient by ``S`` and lifts them into
range; the optimizer sees them divided by ``S`` again (Micikevicius et al. 2018, "Mixed
Precision Training", arXiv:1710.03740, §3.2). Too large an ``S`` overflows to inf/NaN,
so the scale is adjusted every step (``torch.amp.GradScaler.update``, which calls
``torch._amp_update_scale_``):

- overflow found: the optimizer step is **skipped**, ``S *= backoff_factor`` and the
  growth tracker is reset to 0;
- no overflow: the tracker grows by one; when it *reaches* ``growth_interval``,
  ``S *= growth_factor`` and the tracker is reset to 0. (The scale is kept in an FP32
  tensor and PyTorch refuses a growth that would make it infinite.)

Defaults as in PyTorch: ``init_scale = 2**16``, ``growth_factor = 2.0``,
``backoff_factor = 0.5``, ``growth_interval = 2000``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from solutions._checks import positive, positive_int

# Largest finite FP32 value: (2 - 2^-23) * 2^127.
_FP32_MAX = (2.0 - 2.0**-23) * 2.0**127

#: One trace row: (scale after this step's update, growth tracker after it, step skipped?)
TraceRow = tuple[float, int, bool]


@dataclass
class LossScaler:
    """The scale and growth tracker of one GradScaler, updated once per step."""

    scale: float = 65536.0
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000
    growth_tracker: int = 0

    def __post_init__(self) -> None:
        positive("init_scale", self.scale)
        positive_int("growth_interval", self.growth_interval)
        # GradScaler's own checks: growth must grow, backoff must shrink.
        if not positive("growth_factor", self.growth_factor) > 1.0:
            raise ValueError(f"growth_factor must be > 1.0, got {self.growth_factor!r}")
        if not 0.0 < positive("backoff_factor", self.backoff_factor) < 1.0:
            raise ValueError(f"backoff_factor must be in (0, 1), got {self.backoff_factor!r}")

    def update(self, found_inf: bool) -> bool:
        """Apply one step's outcome; return True when the optimizer step is skipped."""
        if found_inf:
            self.scale *= self.backoff_factor
            self.growth_tracker = 0
            return True
        successful = self.growth_tracker + 1
        if successful == self.growth_interval:
            grown = self.scale * self.growth_factor
            if grown <= _FP32_MAX:  # an FP32 scale may not become inf
                self.scale = grown
            self.growth_tracker = 0
        else:
            self.growth_tracker = successful
        return False


def loss_scale_trace(overflows: Iterable[bool], init_scale: float = 65536.0,
                     growth_interval: int = 2000, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5) -> list[TraceRow]:
    """One row per step: ``(scale, good_count, skipped)`` after that step's update.

    ``overflows[i]`` is True when step ``i``'s gradients contained inf/NaN. ``scale`` is
    the scale the *next* step will use; ``good_count`` is GradScaler's growth tracker.
    """
    scaler = LossScaler(float(init_scale), growth_factor, backoff_factor, growth_interval)
    rows: list[TraceRow] = []
    for overflow in overflows:
        skipped = scaler.update(bool(overflow))
        rows.append((scaler.scale, scaler.growth_tracker, skipped))
    return rows


def dynamic_loss_scale(overflows: list[bool], init_scale: float = 65536.0,
                       growth_interval: int = 2000) -> float:
    """The loss scale after processing ``overflows`` (growth x2, backoff x0.5).

    An empty list returns ``init_scale``. ``init_scale <= 0`` or ``growth_interval < 1``
    raise ValueError. Semantics of ``torch.amp.GradScaler`` (see the module docstring).
    """
    scaler = LossScaler(float(positive("init_scale", init_scale)),
                        growth_interval=positive_int("growth_interval", growth_interval))
    for overflow in overflows:
        scaler.update(bool(overflow))
    return scaler.scale


def skipped_steps(overflows: Iterable[bool]) -> int:
    """Optimizer steps skipped: exactly the steps whose gradients overflowed."""
    return sum(1 for overflow in overflows if overflow)
