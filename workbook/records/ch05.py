"""Chapter 5: Pipeline parallelism: the bubble and its two normalisations, activation
memory under GPipe and 1F1B, interleaving, point-to-point traffic."""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Debug, Function, Misconception, Numeric
from solutions import pipeline as pl

NARAYANAN = ("Narayanan et al., 'Efficient Large-Scale Language Model Training on GPU Clusters "
             "Using Megatron-LM', SC21, 2021, §2.2 (bubble time fraction (p-1)/m for GPipe "
             "and 1F1B, (p-1)/(m v) interleaved)")
NARAYANAN_MEM = ("Narayanan et al. 2021 (SC21), §2.2.1: 1F1B limits in-flight microbatches to "
                 "the pipeline depth p")
NARAYANAN_INT = ("Narayanan et al. 2021 (SC21), §2.2.2: interleaving multiplies the "
                 "point-to-point communication by v")
GPIPE = ("Huang et al., 'GPipe: Efficient Training of Giant Neural Networks using Pipeline "
         "Parallelism', NeurIPS 2019 (all forwards, then all backwards)")
PIPEDREAM = ("Harlap et al., 'PipeDream: Fast and Efficient Pipeline Parallel DNN Training', "
             "arXiv:1806.03377, 2018 (one-forward-one-backward scheduling)")
MEGATRON_DIVISIBLE = ("Megatron-LM, megatron/core/pipeline_parallel/schedules.py: the "
                      "interleaved schedule requires the number of microbatches to be "
                      "divisible by the pipeline-parallel size")


def _vary_pm(rng: random.Random) -> dict[str, Any]:
    pp = rng.choice([2, 4, 8, 16])
    return dict(pp=pp, m=pp * rng.choice([2, 3, 4, 8]))


# -- 5.1 --------------------------------------------------------------------------------

EX_5_1 = Exercise(
    id="5.1", chapter=5, category="derive", title="The pipeline bubble",
    prompt=("A 1F1B pipeline has {pp} stages and processes {m} microbatches per batch. "
            "Express the bubble (the time stages sit idle while the pipeline fills and "
            "drains) as a percentage of the **ideal compute time** m (t_f + t_b), the "
            "definition of Narayanan et al. (2021)."),
    params=dict(pp=4, m=12),
    vary=_vary_pm,
    answer_kind=Numeric(unit="%", rel_tol=0.005),
    reference=lambda p: 100 * pl.bubble_over_compute(p["pp"], p["m"]),
    hints=(
        "The fill and drain cost (p-1) forward and (p-1) backward slots on every stage.",
        "The ideal compute time of a stage is m forwards and m backwards.",
        "Bubble over compute = (p-1)(t_f+t_b) / (m (t_f+t_b)) = (p-1)/m.",
    ),
    explanation=(
        "(p-1)/m = ({pp}-1)/{m} = {expected} %. The same bubble divided by the whole "
        "iteration time, (p-1)/(m+p-1), is smaller: for p = 4, m = 12 it is 3/15 = 20% of the "
        "wall-clock time, so each stage computes 80% of the time (not 75%). Both are in use; "
        "always say which denominator you mean."
    ),
    misconceptions=(
        Misconception(lambda p: 100 * pl.bubble_over_total(p["pp"], p["m"]),
                      "That divides by the whole iteration time (m + p - 1); the question "
                      "asks for the bubble over ideal compute time, (p-1)/m."),
        Misconception(lambda p: 100 * p["pp"] / p["m"],
                      "The bubble has p - 1 fill slots, not p."),
        Misconception(lambda p: 100 * (1 - pl.bubble_over_compute(p["pp"], p["m"])),
                      "That is one minus the bubble, not the bubble."),
    ),
    sources=(NARAYANAN,),
)


# -- 5.2 --------------------------------------------------------------------------------

def _vary_5_2(rng: random.Random) -> dict[str, Any]:
    pp = rng.choice([4, 8, 16])
    return dict(pp=pp, m=pp * rng.choice([2, 3, 4]), stage=rng.choice([0, 0, 1, pp // 2]),
                activation_gb=rng.choice([0.5, 1.0, 2.0, 3.0]))


EX_5_2 = Exercise(
    id="5.2", chapter=5, category="derive", title="Activation memory under 1F1B",
    prompt=("A 1F1B pipeline has {pp} stages and {m} microbatches per batch. Each microbatch "
            "leaves {activation_gb} GB of activations stashed on a stage until its backward "
            "pass there. What is the peak stashed-activation memory, in GB, on stage "
            "{stage} (stages are numbered from 0, and stage 0 is the first)?"),
    notes=("In 1F1B (Narayanan et al. 2021, Fig. 4 top), stage i first runs p - i - 1 "
           "warm-up forwards, then alternates one forward and one backward, then drains "
           "the remaining backwards."),
    params=dict(pp=4, m=12, stage=0, activation_gb=2.0),
    vary=_vary_5_2,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: pl.activation_memory_gb(p["activation_gb"], p["pp"], p["m"],
                                                "1f1b", p["stage"]),
    hints=(
        "Count the forwards stage i has run when it starts its first backward.",
        "Warm-up forwards, plus the steady-state forward that comes just before the first "
        "backward.",
        "Stage i holds (p - i - 1) + 1 = p - i microbatches at its peak; stage 0 holds p.",
    ),
    explanation=(
        "Stage {stage} runs {pp} - {stage} - 1 warm-up forwards and one more forward before "
        "its first backward, so it holds {pp} - {stage} microbatches at once: {expected} GB. "
        "For the canonical case, stage 0 holds p = 4 microbatches = 8 GB; GPipe would stash "
        "all m = 12 (24 GB), three times as much. The bubble is the same for both schedules; "
        "1F1B's gain is memory."
    ),
    misconceptions=(
        Misconception(lambda p: (p["pp"] - p["stage"] - 1) * p["activation_gb"],
                      "That counts only the warm-up forwards (p - i - 1, the often-quoted "
                      "'p - 1' on the first stage): the stage runs one more forward before its "
                      "first backward frees anything."),
        Misconception(lambda p: pl.activation_memory_gb(p["activation_gb"], p["pp"], p["m"],
                                                        "gpipe", p["stage"]),
                      "That is GPipe, which stashes all m microbatches; 1F1B caps it at the "
                      "pipeline depth."),
    ),
    sources=(NARAYANAN_MEM, PIPEDREAM, GPIPE),
)


# -- 5.3 --------------------------------------------------------------------------------

def _vary_5_3(rng: random.Random) -> dict[str, Any]:
    pp = rng.choice([4, 8, 16])
    return dict(pp=pp, m=pp * rng.choice([2, 3, 4]), v=rng.choice([2, 3, 4]))


EX_5_3 = Exercise(
    id="5.3", chapter=5, category="derive", title="Interleaved 1F1B",
    prompt=("Same kind of pipeline: {pp} stages, {m} microbatches, but each GPU now holds "
            "v = {v} model chunks (interleaved 1F1B). What is the bubble as a percentage of "
            "the ideal compute time?"),
    params=dict(pp=4, m=12, v=4),
    vary=_vary_5_3,
    answer_kind=Numeric(unit="%", rel_tol=0.005),
    reference=lambda p: 100 * pl.bubble_over_compute(p["pp"], p["m"], p["v"]),
    hints=(
        "Each chunk is 1/v of a stage, so each fill/drain slot is v times shorter.",
        "Bubble over compute = (p-1) / (m v).",
    ),
    explanation=(
        "(p-1)/(m v) = ({pp}-1)/({m} x {v}) = {expected} %. The price: v times more "
        "point-to-point transfers (exercise 5.4), and Megatron-LM's implementation needs m to "
        "be a multiple of p. Over the whole iteration time the same bubble is "
        "(p-1)/(m v + p - 1)."
    ),
    misconceptions=(
        Misconception(lambda p: 100 * pl.bubble_over_compute(p["pp"], p["m"]),
                      "That ignores the interleaving; the bubble shrinks by the factor v."),
        Misconception(lambda p: 100 * pl.bubble_over_total(p["pp"], p["m"], p["v"]),
                      "That divides by the total time; the question asks for the bubble over "
                      "ideal compute time."),
    ),
    sources=(NARAYANAN, MEGATRON_DIVISIBLE),
)


# -- 5.4 --------------------------------------------------------------------------------

def _vary_5_4(rng: random.Random) -> dict[str, Any]:
    pp = rng.choice([2, 4, 8])
    return dict(pp=pp, m=pp * rng.choice([2, 3, 4]), v=rng.choice([1, 2, 4]),
                activation_gb=rng.choice([0.25, 0.5, 1.0]))


EX_5_4 = Exercise(
    id="5.4", chapter=5, category="derive",
    title="Point-to-point traffic of an interleaved pipeline",
    prompt=("A pipeline of {pp} GPUs, each holding v = {v} model chunks, processes {m} "
            "microbatches per batch. At every chunk boundary, one microbatch sends "
            "{activation_gb} GB of activations forward and receives a gradient of the same "
            "size backward. How many GB cross between GPUs per batch, summed over all GPUs "
            "and both directions?"),
    notes=("The model is cut into p x v chunks placed round-robin: chunk j lives on GPU "
           "j mod p, so every one of the p v - 1 chunk boundaries is a transfer between two "
           "different GPUs."),
    params=dict(pp=4, m=12, v=4, activation_gb=0.5),
    vary=_vary_5_4,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: pl.p2p_total_gb_per_step(p["activation_gb"], p["pp"], p["m"], p["v"]),
    hints=(
        "How many chunk boundaries does one microbatch cross on its way through the model?",
        "p v chunks have p v - 1 boundaries; each is crossed once forward and once backward.",
        "Total = 2 x (p v - 1) x m x activation size.",
    ),
    explanation=(
        "Boundaries: {pp} x {v} - 1; per microbatch and boundary, {activation_gb} GB forward "
        "+ {activation_gb} GB backward; times {m} microbatches: {expected} GB. Canonical: "
        "15 x 12 x 1 GB = 180 GB, against 3 x 12 x 1 = 36 GB without interleaving. The 180 GB "
        "is spread over the 4 GPUs' links, which run in parallel and mostly overlap with "
        "compute; dividing it by one link's bandwidth overstates the cost."
    ),
    misconceptions=(
        Misconception(lambda p: p["activation_gb"] * (p["pp"] * p["v"] - 1) * p["m"],
                      "That counts the forward activations only; each boundary also carries "
                      "the gradient backward."),
        Misconception(lambda p: pl.p2p_total_gb_per_step(p["activation_gb"], p["pp"], p["m"]),
                      "That is the plain pipeline (p - 1 boundaries); with v chunks per GPU "
                      "there are p v - 1."),
        Misconception(lambda p: 2 * p["activation_gb"] * p["pp"] * p["v"] * p["m"],
                      "p v chunks have p v - 1 boundaries between them, not p v."),
    ),
    sources=(NARAYANAN_INT,),
)


# -- 5.5 --------------------------------------------------------------------------------

BUGGY_5_5 = '''def bubble_over_compute(pp, m, v=1):
    """Pipeline bubble time divided by the ideal compute time
    (Narayanan et al. 2021, Sec. 2.2): (pp - 1) / (m * v)."""
    bubble_slots = pp - 1
    compute_slots = m * v
    return bubble_slots / (bubble_slots + compute_slots)
'''


def _cases_5_5(rng: random.Random) -> tuple[int, int, int]:
    return (rng.choice([1, 2, 4, 8, 16, 32]), rng.choice([1, 4, 8, 12, 32, 64, 128]),
            rng.choice([1, 1, 2, 3, 4]))


EX_5_5 = Exercise(
    id="5.5", chapter=5, category="debug", title="The bubble with the wrong denominator",
    prompt=("The docstring promises the bubble as a fraction of the ideal compute time, but "
            "for pp = {pp}, m = {m} the function returns 0.2 instead of 0.25. Which line is "
            "wrong? Give the line number (the `def` line is 1) and the fixed function."),
    notes="```python\n" + BUGGY_5_5 + "```",
    params=dict(pp=4, m=12),
    vary=lambda rng: dict(pp=4, m=12),
    answer_kind=Debug(
        code=BUGGY_5_5,
        fix=Function(
            function_name="bubble_over_compute",
            signature="(pp, m, v=1)",
            cases=_cases_5_5,
            edge_cases=((4, 12, 1), (4, 12, 4), (1, 8, 1), (8, 1, 1), (2, 3, 2)),
        ),
    ),
    reference=lambda p: (6, pl.bubble_over_compute),
    hints=(
        "Check each line against the formula in the docstring.",
        "Which denominator does the docstring name, and which one does the code use?",
        "Line 6 divides by bubble + compute (the total time); the promise is compute alone.",
    ),
    explanation=(
        "Line 6 is the bug: bubble / (bubble + compute) = (p-1)/(m v + p - 1) is the bubble "
        "as a share of the whole iteration time (3/15 = 0.2 here). The docstring promises "
        "Narayanan et al.'s bubble time fraction, bubble over ideal compute: "
        "`return bubble_slots / compute_slots`, (p-1)/(m v) = 3/12 = 0.25. Neither formula "
        "is wrong in itself; the bug is that the code and its contract disagree."
    ),
    sources=(NARAYANAN,),
)


# -- 5.6 --------------------------------------------------------------------------------

EX_5_6 = Exercise(
    id="5.6", chapter=5, category="trace", title="Fewest microbatches for a small bubble",
    prompt=("A pipeline has {pp} stages and no interleaving. What is the smallest number of "
            "microbatches m for which the bubble over ideal compute time, (p-1)/m, is "
            "**strictly below** {target_pct} %?"),
    params=dict(pp=8, target_pct=5),
    vary=lambda rng: dict(pp=rng.choice([4, 8, 12, 16]), target_pct=rng.choice([2, 5, 10])),
    answer_kind=Numeric(unit="microbatches", rel_tol=0.0, abs_tol=0.0),
    reference=lambda p: pl.min_microbatches(p["pp"], p["target_pct"] / 100),
    hints=(
        "Solve (p-1)/m < target for m.",
        "m > (p-1)/target. Watch the boundary: does m = (p-1)/target itself satisfy a strict "
        "inequality?",
        "(p-1)/target = 7/0.05 = 140 gives exactly 5%, so the answer is the next integer.",
    ),
    explanation=(
        "m > ({pp}-1) / ({target_pct} / 100); the smallest integer strictly above that bound "
        "is {expected}. With the canonical numbers m = 140 gives exactly 5%, which is not "
        "below 5%, so m = 141. Interleaving divides the bubble by v: v = 2 needs m = 71 and "
        "v = 4 needs m = 36 (again one more than the exact-5% points 70 and 35); Megatron-LM "
        "also requires m to be a multiple of p = 8 when interleaving, giving 72 and 40."
    ),
    misconceptions=(
        Misconception(lambda p: (p["pp"] - 1) / (p["target_pct"] / 100),
                      "At m = (p-1)/target the bubble equals the target exactly; it must be "
                      "strictly below, so take the next integer."),
        Misconception(lambda p: pl.min_microbatches(p["pp"] + 1, p["target_pct"] / 100),
                      "The bubble has p - 1 fill slots, not p."),
        Misconception(lambda p: (p["pp"] - 1) * (100 - p["target_pct"]) // p["target_pct"] + 1,
                      "That solves the over-total-time version, (p-1)/(m+p-1) < target. This "
                      "question uses the bubble over ideal compute time."),
    ),
    sources=(NARAYANAN, MEGATRON_DIVISIBLE),
)


EXERCISES: tuple[Exercise, ...] = (EX_5_1, EX_5_2, EX_5_3, EX_5_4, EX_5_5, EX_5_6)
