"""Chapter 5's exercise beyond the 58 (record 5.7): what interleaving costs in memory.

Interleaving divides the bubble by v (exercise 5.3) but deepens the warm-up: GPU 0 runs
(p-1) x 2 + (v-1) x p chunk forwards before its first backward, so its peak activations
grow from plain 1F1B's p microbatches to p (1 + (p-1)/(p v)).
"""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Misconception, Numeric
from solutions import pipeline as pl
from workbook.records.ch05 import NARAYANAN

KORTHIKANTI_PP = ("Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer "
                  "Models', MLSys 2023, §4.2.3 (interleaved schedule: activation memory of the "
                  "first stage 1 + (p-1)/(p m) times that of plain 1F1B, m their name for the "
                  "chunks per GPU)")
MEGATRON_INTERLEAVED = ("Megatron-LM, megatron/core/pipeline_parallel/schedules.py, "
                        "forward_backward_pipelining_with_interleaving (warm-up of "
                        "(p - rank - 1) x 2 + (v - 1) x N chunk forwards, N = p by default, "
                        "capped at m v)")


def _vary(rng: random.Random) -> dict[str, Any]:
    pp = rng.choice([2, 4, 6, 8, 12, 16])
    return dict(pp=pp, v=rng.choice([2, 3, 4, 6]), m=pp * rng.choice([2, 4]),
                activation_gb=rng.choice([0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0]))


def _peak_gb(p: Any) -> float:
    return float(p["activation_gb"] * p["pp"] * pl.interleaved_activation_factor(p["pp"], p["v"]))


EX_5_7 = Exercise(
    id="5.7", chapter=5, category="derive", title="The memory price of interleaving",
    prompt=("An interleaved 1F1B pipeline has p = {pp} GPUs, each holding v = {v} model "
            "chunks, and {m} microbatches per batch. A microbatch leaves {activation_gb} GB "
            "of activations on a *whole stage* (all v chunks of one GPU together) until its "
            "backward passes, so one chunk holds {activation_gb} / {v} GB of it. What is the "
            "peak stashed-activation memory on GPU 0, in GB?"),
    notes=("Megatron-LM's interleaved schedule (Narayanan et al. 2021, Fig. 4 bottom): GPU i "
           "runs (p - i - 1) x 2 + (v - 1) x p chunk forwards to warm up, then one more "
           "forward before its first chunk backward, which frees one chunk's activations. "
           "Plain 1F1B (v = 1) holds p microbatches on GPU 0."),
    params=dict(pp=4, v=2, m=8, activation_gb=2.0),
    vary=_vary,
    answer_kind=Numeric(unit="GB", rel_tol=0.002),
    reference=_peak_gb,
    hints=(
        "Count the chunk forwards GPU 0 has run when its first chunk backward starts.",
        "(p - 1) x 2 + (v - 1) x p warm-up forwards, plus one: each holds 1/v of a "
        "microbatch's activations.",
        "(2(p-1) + (v-1)p + 1) / v = p + (p-1)/v = p (1 + (p-1)/(p v)) microbatches, times "
        "{activation_gb} GB.",
    ),
    explanation=(
        "GPU 0 runs ({pp} - 1) x 2 + ({v} - 1) x {pp} warm-up chunk forwards and one more "
        "before its first backward, each holding 1/{v} of a microbatch: {pp} + ({pp} - 1)/{v} "
        "microbatches, i.e. {pp} x (1 + ({pp} - 1)/({pp} x {v})), times {activation_gb} GB "
        "= {expected} GB. Plain 1F1B would hold {pp} microbatches. Interleaving buys a "
        "bubble v times smaller with a factor 1 + (p-1)/(p v) more activation memory on the "
        "first stage (at most 1 + 1/v). The formula holds while m v chunk forwards can fill "
        "that warm-up ({m} x {v} here); with fewer microbatches the warm-up is cut short and "
        "the peak is lower. The zero-bubble schedule ZB-H1 in the explorer shrinks the bubble "
        "at 1F1B's peak instead: at most p microbatches in flight on every GPU, counting "
        "those whose weight-gradient pass W is still waiting."
    ),
    misconceptions=(
        Misconception(lambda p: p["activation_gb"] * p["pp"],
                      "That is plain 1F1B's p microbatches; interleaving's warm-up runs extra "
                      "chunk forwards before the first backward."),
        Misconception(lambda p: p["activation_gb"] * ((p["pp"] - 1) * 2 + (p["v"] - 1) * p["pp"]
                                                      + 1),
                      "That counts every chunk forward as a whole microbatch's activations; "
                      "a chunk holds only 1/v of them."),
        Misconception(lambda p: p["activation_gb"] * pl.interleaved_activation_factor(
                          p["pp"], p["v"]),
                      "1 + (p-1)/(p v) is the factor over plain 1F1B, which itself holds p "
                      "microbatches on GPU 0: multiply by p as well."),
        Misconception(lambda p: p["activation_gb"] * p["m"],
                      "That is GPipe, which stashes every microbatch; 1F1B, interleaved or "
                      "not, releases activations as backwards run."),
    ),
    sources=(KORTHIKANTI_PP, MEGATRON_INTERLEAVED, NARAYANAN),
)

CHALLENGES: tuple[Exercise, ...] = (EX_5_7,)
