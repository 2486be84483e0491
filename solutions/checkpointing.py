"""Checkpoint and recovery: checkpoint size, write time, the best interval and its cost.

The model of failures is the classic first-order one (Young 1974, "A first order
approximation to the optimum checkpoint interval", CACM 17(9):530-531):

- failures arrive at random with mean time between failures ``M`` (MTBF);
- writing one checkpoint stops training for ``C`` seconds;
- a checkpoint is written every ``tau`` seconds of work; a crash loses, on average, half
  an interval of work (``tau / 2``), plus a fixed recovery time ``R`` (restart, reload).

The expected fraction of time wasted is then, to first order in ``C / M`` and ``tau / M``,

    waste(tau) = C / tau + (tau / 2 + R) / M

and setting its derivative to zero gives Young's interval ``tau* = sqrt(2 C M)`` (``R``
does not move the optimum). At ``tau*`` the two terms ``C / tau`` and ``tau / (2M)`` are
equal, so the waste excluding recovery is ``sqrt(2 C / M)``. The approximation holds
when ``C`` is much smaller than ``M``; Daly 2006 gives a higher-order correction.

Sizes are decimal (1 GB = 1e9 bytes).
"""

from __future__ import annotations

import math

from solutions._checks import non_negative, positive, positive_int


# -- what a checkpoint holds ------------------------------------------------------------
def checkpoint_components_gb(n_params: float, weight_bytes: float = 2.0,
                             master_bytes: float = 4.0,
                             optimizer_bytes: float = 8.0) -> dict[str, float]:
    """GB per component of a mixed-precision Adam checkpoint.

    Per parameter: the 16-bit model weights (2 bytes), the FP32 master weights
    (4 bytes) and Adam's two FP32 moments (4 + 4 = 8 bytes): 14 bytes in all. The 16-bit
    gradients are *not* saved; they are recomputed by the next backward pass. Source for
    the byte counts: Rajbhandari et al. 2020 (ZeRO, arXiv:1910.02054), §3.1.
    """
    positive("n_params", n_params)
    non_negative("weight_bytes", weight_bytes)
    non_negative("master_bytes", master_bytes)
    non_negative("optimizer_bytes", optimizer_bytes)
    return {
        "weights": n_params * weight_bytes / 1e9,
        "master_weights": n_params * master_bytes / 1e9,
        "optimizer_states": n_params * optimizer_bytes / 1e9,
    }


def checkpoint_size_gb(n_params: float, weight_bytes: float = 2.0, master_bytes: float = 4.0,
                       optimizer_bytes: float = 8.0, extra_bytes: float = 0.0) -> float:
    """Total checkpoint size in GB: the components plus ``extra_bytes`` (step, LR, RNG).

    Formula: ``(n_params * (weight + master + optimizer bytes) + extra_bytes) / 1e9``.
    """
    parts = checkpoint_components_gb(n_params, weight_bytes, master_bytes, optimizer_bytes)
    return sum(parts.values()) + non_negative("extra_bytes", extra_bytes) / 1e9


def checkpoint_write_time_s(size_gb: float, write_gb_per_s: float) -> float:
    """Seconds to write ``size_gb`` at an aggregate storage bandwidth of ``write_gb_per_s``.

    Writing shards from many GPUs in parallel only helps up to the storage system's
    aggregate bandwidth; pass that aggregate figure here.
    """
    return positive("size_gb", size_gb) / positive("write_gb_per_s", write_gb_per_s)


# -- the optimal interval -----------------------------------------------------------------
def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's optimal checkpoint interval ``sqrt(2 C M)`` in seconds.

    ``C`` = checkpoint time, ``M`` = mean time between failures, both in seconds.
    Source: Young 1974, CACM 17(9):530-531.
    """
    return math.sqrt(2.0 * positive("checkpoint_s", checkpoint_s) * positive("mtbf_s", mtbf_s))


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimal interval (seconds of work between checkpoints).

    For ``C < 2M``: ``sqrt(2 C M) * (1 + sqrt(C / 2M) / 3 + (C / 2M) / 9) - C``;
    otherwise ``M``. Source: Daly 2006, "A higher order estimate of the optimum
    checkpoint interval for restart dumps", Future Gener. Comput. Syst. 22(3):303-312.
    """
    c, m = positive("checkpoint_s", checkpoint_s), positive("mtbf_s", mtbf_s)
    if c >= 2.0 * m:
        return m
    ratio = c / (2.0 * m)
    return math.sqrt(2.0 * c * m) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - c


def expected_waste_fraction(interval_s: float, checkpoint_s: float, mtbf_s: float,
                            recovery_s: float = 0.0) -> float:
    """Expected fraction of time lost: ``C / tau + (tau / 2 + R) / M`` (first order).

    ``C / tau`` is time spent writing checkpoints; ``(tau / 2 + R) / M`` is the work
    redone after a crash (half an interval on average) plus recovery, once per MTBF.
    Source: Young 1974 (the cost function his optimum minimises).
    """
    tau = positive("interval_s", interval_s)
    c, m = positive("checkpoint_s", checkpoint_s), positive("mtbf_s", mtbf_s)
    return c / tau + (tau / 2.0 + non_negative("recovery_s", recovery_s)) / m


def optimal_checkpoint_interval(mtbf_hours: float, checkpoint_s: float) -> tuple[float, float]:
    """Young's interval in minutes and the expected waste at that interval in percent.

    Returns ``(interval_min, waste_percent)`` where ``interval_min = sqrt(2 C M) / 60``
    and ``waste_percent = 100 * (C / tau + tau / (2 M))`` at ``tau = sqrt(2 C M)``:
    the expected share of wall-clock time spent writing checkpoints plus redoing the
    work lost at crashes (half an interval per crash, one crash per MTBF on average),
    recovery time not included. At the optimum it equals ``100 * sqrt(2 C / M)``.
    ``mtbf_hours`` and ``checkpoint_s`` must be > 0 (ValueError otherwise).
    """
    mtbf_s = positive("mtbf_hours", mtbf_hours) * 3600.0
    tau_s = young_interval_s(checkpoint_s, mtbf_s)
    return tau_s / 60.0, 100.0 * expected_waste_fraction(tau_s, checkpoint_s, mtbf_s)


# -- the price of a crash ----------------------------------------------------------------
def lost_minutes_per_crash(interval_min: float, recovery_min: float = 0.0) -> float:
    """Expected minutes lost per crash: half an interval of work plus recovery.

    A crash is equally likely anywhere in the interval, so on average ``interval / 2`` of
    work since the last checkpoint is redone (Young 1974).
    """
    return positive("interval_min", interval_min) / 2.0 + non_negative("recovery_min",
                                                                       recovery_min)


def cost_per_crash_usd(n_gpus: int, usd_per_gpu_hour: float, interval_min: float,
                       recovery_min: float = 0.0) -> float:
    """Dollars of GPU time lost per crash: ``n_gpus * price * lost_hours``.

    ``lost_hours = (interval / 2 + recovery) / 60``; every GPU of the job sits in the lost
    time, so all of them are billed.
    """
    lost_h = lost_minutes_per_crash(interval_min, recovery_min) / 60.0
    return positive_int("n_gpus", n_gpus) * non_negative("usd_per_gpu_hour",
                                                         usd_per_gpu_hour) * lost_h
