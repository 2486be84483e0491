"""Which family a GPU belongs to, and how fast it runs under a power limit.

The step-time model reads its GEMM ceilings, SM counts and attention rates by GPU family
(:mod:`solutions.performance.flops`). :func:`family_of` names the family of a
:class:`solutions.hardware.GPU` or refuses: a GPU whose family is not known is never given
another family's speed. :func:`clock_fraction_at_power` is the clock a power limit leaves
(:meth:`solutions.hardware.GPU.capped`).
"""

from __future__ import annotations

from typing import Protocol

from solutions._checks import positive


class NamedGPU(Protocol):
    """What this module reads of a GPU (:class:`solutions.hardware.GPU` has it; a protocol,
    so that this module, which the hardware module imports, imports nothing back)."""

    @property
    def name(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def tdp_watts(self) -> float: ...

#: Families the step-time model has tables for, in the order a GPU's name is matched
#: (GB200 before B200 and GB300 before B300, whose names they contain).
FAMILIES: tuple[str, ...] = ("GB300", "GB200", "B300", "B200", "H200", "H800", "H100",
                             "A100")


def family_of(gpu: NamedGPU) -> str:
    """The GPU family the step-time model reads its tables by: ``gpu.family`` when set, else
    the first of :data:`FAMILIES` the name contains. ValueError for any other GPU: its
    GEMM ceiling and attention rates are not known, and borrowing another family's would
    be a guess (make one with ``dataclasses.replace(preset, name=..., family=...)``)."""
    if gpu.family:
        if gpu.family not in FAMILIES:
            raise ValueError(f"GPU family {gpu.family!r} is not one of {FAMILIES}")
        return gpu.family
    for family in FAMILIES:
        if family in gpu.name:
            return family
    raise ValueError(f"no GPU family in the name {gpu.name!r}: set family= to one of "
                     f"{FAMILIES} (the step-time model does not guess a GPU's speed)")


#: Exponent of the power law relating a GPU's power draw to its tensor-core clock under a
#: power limit, ``P ~ f^k``. Physics bounds it: dynamic power is ``C V^2 f``, so ``k = 3``
#: where the voltage tracks the frequency along the DVFS curve (Weste & Harris, *CMOS VLSI
#: Design*, §5.1) and ``k = 1`` where the voltage is already at its floor; power that does
#: not scale with the SM clock (HBM, leakage) makes a cap bite harder still. A GEMM
#: measured under a deep cap sits at ``k = 1`` (the search's prior,
#: :data:`solutions.performance.fit.START`); fitted (:mod:`solutions.performance.fit`) on
#: one run at a stated limit, torchtitan's Llama 3.1 8B on 500 W H100s, it moves one grid
#: step from there, to 1.25; its other tables at that limit (70B with TP, 405B with PP,
#: context parallelism) are held out. Replace it with a measured clock where one is known
#: (``GPU.capped(clock_fraction=...)``).
POWER_CLOCK_EXPONENT = 1.25


def clock_fraction_at_power(gpu: NamedGPU, power_watts: float) -> float:
    """Tensor-core clock under a power limit, as a fraction of the boost clock:
    ``min(1, (P / TDP) ^ (1/k))`` with ``k`` = :data:`POWER_CLOCK_EXPONENT`, read when
    called (so the fit can move it); 500 W on a 700 W H100 gives 0.714 at ``k = 1``."""
    positive("power_watts", power_watts)
    return min(1.0, float((power_watts / gpu.tdp_watts) ** (1.0 / POWER_CLOCK_EXPONENT)))
