"""Chapter 7: Checkpoint and recovery. Records 7.1-7.5."""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Function, Misconception, Numeric
from autograder.template import Earlier
from solutions import checkpointing as ck
from workbook.records._models import SIZES_B

YOUNG = "Young 1974, A first order approximation to the optimum checkpoint interval, CACM 17(9)"
ZERO = "Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), §3.1: mixed-precision Adam state"
DALY = "Daly 2006, A higher order estimate of the optimum checkpoint interval, FGCS 22(3)"


# -- 7.1 ---------------------------------------------------------------------------------
def _vary_7_1(rng: random.Random) -> dict[str, Any]:
    return dict(n_params_b=rng.choice(SIZES_B))


def _size_gb(p: Any, bytes_per_param: float) -> float:
    return float(p["n_params_b"] * 1e9 * bytes_per_param / 1e9)


EX_7_1 = Exercise(
    id="7.1", chapter=7, category="derive", title="Checkpoint size",
    prompt=("A {n_params_b}B-parameter model trains with mixed-precision Adam. A full "
            "checkpoint saves the FP16 weights, the FP32 master weights, Adam's FP32 momentum "
            "and FP32 variance, and a step counter and learning rate (8 bytes together). "
            "Gradients are not saved. How many GB (1e9 bytes) is one checkpoint?"),
    params=dict(n_params_b=70),
    vary=_vary_7_1,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: ck.checkpoint_size_gb(p["n_params_b"] * 1e9, extra_bytes=8),
    hints=("List the bytes per parameter of each saved tensor.",
           "FP16 weights 2, FP32 master 4, momentum 4, variance 4.",
           "14 bytes per parameter; the 8 bytes of counters are negligible."),
    explanation=("Per parameter: 2 (FP16 weights) + 4 (FP32 master) + 4 (momentum) + 4 "
                 "(variance) = 14 bytes. {n_params_b}B x 14 bytes = {expected} GB; the step "
                 "counter and learning rate add 8 bytes, nothing at this scale."),
    misconceptions=(
        Misconception(lambda p: _size_gb(p, 16), "That includes 2 bytes of FP16 gradients; "
                      "gradients are recomputed after a restart and are not saved."),
        Misconception(lambda p: _size_gb(p, 12), "That leaves out the FP16 weights the "
                      "question asks you to include."),
        Misconception(lambda p: _size_gb(p, 14) * 1e9 / 2**30, "That is in GiB (2^30 bytes); "
                      "the question asks for GB (1e9 bytes)."),
    ),
    sources=(ZERO,),
)


# -- 7.2 ---------------------------------------------------------------------------------
def _vary_7_2(rng: random.Random) -> dict[str, Any]:
    # 14 bytes per parameter (exercise 7.1) of a published model of at least 1B parameters.
    return dict(size_gb=round(14 * rng.choice([s for s in SIZES_B if s >= 1.0]), 1),
                write_gb_per_s=rng.choice([5.0, 10.0, 20.0, 25.0, 50.0, 100.0, 200.0]))


EX_7_2 = Exercise(
    id="7.2", chapter=7, category="derive", title="Checkpoint write time",
    prompt=("The checkpoint ({size_gb} GB) is written to a shared file system whose aggregate "
            "write bandwidth is {write_gb_per_s} GB/s (bytes, not bits). Training pauses "
            "while it writes. How many seconds does one checkpoint take?"),
    params=dict(size_gb=Earlier(EX_7_1.expected(), "7.1", "GB"), write_gb_per_s=10.0),
    vary=_vary_7_2,
    answer_kind=Numeric(unit="s", rel_tol=0.005),
    reference=lambda p: ck.checkpoint_write_time_s(p["size_gb"], p["write_gb_per_s"]),
    hints=("Which limits the write: the GPUs, or the file system they all write to?",
           "Time = size / aggregate bandwidth: more writers cannot beat the aggregate.",
           "{size_gb} GB / {write_gb_per_s} GB/s; both are in GB, so the answer is in seconds."),
    explanation=("{size_gb} GB / {write_gb_per_s} GB/s = {expected} s. Writing shards from "
                 "many ranks at once helps only up to the file system's aggregate bandwidth, "
                 "which is the figure given here; asynchronous checkpointing (copy to host "
                 "memory, write in the background) hides most of the pause."),
    misconceptions=(
        Misconception(lambda p: p["size_gb"] * 8 / p["write_gb_per_s"], "That treats the "
                      "bandwidth as gigabits per second; it is gigabytes per second."),
        Misconception(lambda p: p["size_gb"] / p["write_gb_per_s"] / 60, "That is in minutes; "
                      "the question asks for seconds."),
    ),
    sources=("Definition: time = bytes / bandwidth",),
)


# -- 7.3 ---------------------------------------------------------------------------------
def _vary_7_3(rng: random.Random) -> dict[str, Any]:
    # Llama 3 405B saw 419 unexpected interruptions in 54 days: an MTBF of about 3 hours.
    return dict(mtbf_h=rng.choice([1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 36.0,
                                   48.0, 72.0]),
                checkpoint_s=rng.choice([10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 98.0,
                                         120.0, 180.0, 300.0]))


def _young_min(p: Any) -> float:
    return ck.young_interval_s(p["checkpoint_s"], p["mtbf_h"] * 3600) / 60


EX_7_3 = Exercise(
    id="7.3", chapter=7, category="derive", title="Young's optimal checkpoint interval",
    prompt=("A cluster's mean time between failures (MTBF) is M = {mtbf_h} hours and one "
            "checkpoint takes C = {checkpoint_s} s. Using Young's first-order formula "
            "tau = sqrt(2 C M), how many minutes should pass between checkpoints?"),
    params=dict(mtbf_h=24.0, checkpoint_s=Earlier(EX_7_2.expected(), "7.2", "s")),
    vary=_vary_7_3,
    answer_kind=Numeric(unit="min", rel_tol=0.01),
    reference=_young_min,
    hints=("Put C and M in the same unit first (seconds is easiest).",
           "M = hours x 3600 s.",
           "tau = sqrt(2 x C x M) seconds; divide by 60 for minutes."),
    explanation=("M = {mtbf_h} h = {mtbf_h} x 3600 s. tau = sqrt(2 x {checkpoint_s} s x M) "
                 "= {expected} minutes. Checkpointing more often wastes time writing; less "
                 "often loses more work per crash; at tau the two costs are equal."),
    misconceptions=(
        Misconception(lambda p: _young_min(p) / 2**0.5, "You dropped the factor 2: "
                      "tau = sqrt(2 C M), not sqrt(C M)."),
        Misconception(lambda p: _young_min(p) / 60, "That is in hours; the question asks for "
                      "minutes."),
        Misconception(lambda p: _young_min(p) * 2**0.5, "That is sqrt(4 C M); Young's "
                      "interval is sqrt(2 C M)."),
    ),
    sources=(YOUNG, DALY + " (higher-order refinement)"),
)


# -- 7.4 ---------------------------------------------------------------------------------
def _vary_7_4(rng: random.Random) -> dict[str, Any]:
    return dict(n_gpus=rng.choice([256, 512, 1024, 2048, 4096]),
                usd_per_gpu_hour=rng.choice([1.5, 2.0, 2.5, 3.0]),
                interval_min=rng.choice([30, 45, 60, 68, 90, 120]),
                recovery_min=rng.choice([2, 5, 10, 15]))


EX_7_4 = Exercise(
    id="7.4", chapter=7, category="derive", title="Cost of one crash",
    prompt=("A run uses {n_gpus} GPUs at ${usd_per_gpu_hour} per GPU-hour and checkpoints "
            "at an interval of {interval_min} minutes. A crash is equally likely at any "
            "moment of the interval, and recovery (restart and reload) takes {recovery_min} "
            "minutes during which every GPU is idle but billed. How many dollars does one "
            "crash cost on average (lost work plus recovery)?"),
    params=dict(n_gpus=512, usd_per_gpu_hour=2.0, recovery_min=2,
                interval_min=Earlier(EX_7_3.expected(), "7.3", "minutes")),
    vary=_vary_7_4,
    # 1 %: the printed question takes the interval from the learner's rounded answer to 7.3
    answer_kind=Numeric(unit="$", rel_tol=0.01),
    reference=lambda p: ck.cost_per_crash_usd(p["n_gpus"], p["usd_per_gpu_hour"],
                                              p["interval_min"], p["recovery_min"]),
    hints=("On average a crash lands halfway through an interval.",
           "Lost time = interval / 2 + recovery, in hours.",
           "Cost = GPUs x price per GPU-hour x lost hours."),
    explanation=("Lost time = {interval_min} / 2 + {recovery_min} minutes, converted to "
                 "hours, x {n_gpus} GPUs x ${usd_per_gpu_hour} = ${expected}."),
    misconceptions=(
        Misconception(lambda p: ck.cost_per_crash_usd(p["n_gpus"], p["usd_per_gpu_hour"],
                                                      2 * p["interval_min"],
                                                      p["recovery_min"]),
                      "That loses the whole interval; on average a crash lands halfway, so "
                      "half the interval is lost."),
        Misconception(lambda p: ck.cost_per_crash_usd(p["n_gpus"], p["usd_per_gpu_hour"],
                                                      p["interval_min"]),
                      "You left out the {recovery_min} minutes of recovery."),
        Misconception(lambda p: ck.cost_per_crash_usd(1, p["usd_per_gpu_hour"],
                                                      p["interval_min"], p["recovery_min"]),
                      "That is for one GPU; all {n_gpus} GPUs lose the time."),
    ),
    sources=(YOUNG + " (expected loss of half an interval per failure)",),
)


# -- 7.5 ---------------------------------------------------------------------------------
def _cases_7_5(rng: random.Random) -> tuple[float, float]:
    return (rng.choice([1.0, 4.0, 12.0, 24.0, 72.0, 500.0]) * rng.uniform(0.5, 2.0),
            rng.uniform(5.0, 600.0))


EX_7_5 = Exercise(
    id="7.5", chapter=7, category="build", title="optimal_checkpoint_interval()",
    prompt=("Write optimal_checkpoint_interval(mtbf_hours, checkpoint_s) returning "
            "(interval_min, waste_percent): Young's interval tau = sqrt(2 C M) in minutes, and "
            "the expected waste at that interval, 100 x (C / tau + tau / (2 M)) percent: time "
            "spent writing checkpoints plus work redone after crashes (half an interval per "
            "crash, one crash per MTBF), recovery not included. Raise ValueError when either "
            "input is not > 0."),
    params=dict(),
    vary=lambda rng: dict(),
    answer_kind=Function(
        "optimal_checkpoint_interval",
        "(mtbf_hours: float, checkpoint_s: float) -> tuple[float, float]",
        cases=_cases_7_5,
        edge_cases=((24.0, 98.0), (1.0, 1.0), (10_000.0, 600.0), (0.5, 30.0),
                    (24.0, 0.0), (0.0, 98.0), (-24.0, 98.0), (24.0, -1.0)),
        rel_tol=1e-9,
    ),
    reference=lambda p: ck.optimal_checkpoint_interval,
    hints=("Convert both inputs to seconds before combining them.",
           "tau = sqrt(2 x C x M); the interval in minutes is tau / 60.",
           "Waste = C / tau + tau / (2 M); at the optimum the two terms are equal, so it is "
           "sqrt(2 C / M)."),
    explanation=("With C and M in seconds, tau = sqrt(2 C M). Writing costs C once per "
                 "interval (C / tau of the time); a crash, once per M on average, throws "
                 "away tau / 2 of work (tau / (2 M)). Minimising the sum gives Young's tau, "
                 "where both terms equal sqrt(C / (2 M)). For M = 12 h and C = 60 s: "
                 "37.9 minutes and 5.27 % waste."),
    sources=(YOUNG, DALY),
)

EXERCISES: tuple[Exercise, ...] = (EX_7_1, EX_7_2, EX_7_3, EX_7_4, EX_7_5)
