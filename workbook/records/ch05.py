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
                 "point-to-point communication by about v (exactly (p v - 1)/(p - 1))")
GPIPE = ("Huang et al., 'GPipe: Efficient Training of Giant Neural Networks using Pipeline "
         "Parallelism', NeurIPS 2019 (all forwards, then all backwards)")
PIPEDREAM = ("Harlap et al., 'PipeDream: Fast and Efficient Pipeline Parallel DNN Training', "
             "arXiv:1806.03377, 2018 (one-forward-one-backward scheduling)")
MEGATRON_DIVISIBLE = ("Megatron-Core, megatron/core/pipeline_parallel/schedules.py "
                      "(forward_backward_pipelining_with_interleaving): microbatch groups of "
                      "N in [PP, M], and M mod N must be 0 or at least PP, so any m >= p "
                      "runs; older Megatron-LM releases required m divisible by p")


def _vary_pm(rng: random.Random) -> dict[str, Any]:
    pp = rng.choice([2, 4, 6, 8, 10, 12, 16, 24, 32])
    return dict(pp=pp, m=pp * rng.randint(2, 16))


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
    return dict(pp=pp, m=pp * rng.choice([2, 3, 4]), stage=rng.randrange(pp),
                activation_gb=rng.choice([0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0]))


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
    pp = rng.choice([2, 4, 6, 8, 12, 16])
    return dict(pp=pp, m=pp * rng.choice([2, 3, 4, 6, 8]), v=rng.choice([2, 3, 4, 6]))


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
        "Start from the plain bubble (p-1)/m: what does interleaving change about the fill "
        "and drain?",
        "Each chunk is 1/v of a stage, so each fill/drain slot is v times shorter.",
        "Bubble over compute = (p-1) / (m v) = ({pp}-1) / ({m} x {v}), as a percentage.",
    ),
    explanation=(
        "(p-1)/(m v) = ({pp}-1)/({m} x {v}) = {expected} %. The price: p v - 1 chunk "
        "boundaries instead of p - 1, so (p v - 1)/(p - 1) times the point-to-point traffic, "
        "a little more than v (exercise 5.4), and Megatron-Core's implementation needs at "
        "least p microbatches (older releases: a multiple of p). Over the whole iteration "
        "time the same bubble is (p-1)/(m v + p - 1)."
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
    pp = rng.choice([2, 4, 8, 16])
    return dict(pp=pp, m=pp * rng.choice([2, 3, 4, 6, 8]), v=rng.choice([1, 2, 3, 4]),
                activation_gb=rng.choice([0.125, 0.25, 0.5, 1.0, 2.0]))


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
        "+ {activation_gb} GB backward; times {m} microbatches: {expected} GB. Without "
        "interleaving there are only p - 1 boundaries, so interleaving multiplies the traffic "
        "by (p v - 1)/(p - 1), a little more than v. With the printed numbers (p = 4, v = 4, "
        "m = 12, 0.5 GB): 2 x 15 x 12 x 0.5 GB = 180 GB against 2 x 3 x 12 x 0.5 GB = 36 GB, "
        "15/3 = 5 times as much. The total is spread over the GPUs' links, which run in "
        "parallel and mostly overlap with compute; dividing it by one link's bandwidth "
        "overstates the cost."
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


def _bubble_listing(bubble: str, compute: str, result: str) -> str:
    """The bubble calculator with its three formula lines (4-6) as given."""
    return ('def bubble_over_compute(pp, m, v=1):\n    """Pipeline bubble time divided by the '
            'ideal compute time\n    (Narayanan et al. 2021, Sec. 2.2): (pp - 1) / (m * v)."""\n'
            f"    {bubble}\n    {compute}\n    {result}\n")


#: the buggy programs of 5.5, each computing something other than its docstring's
#: (p-1)/(m v): (listing, buggy line, v of the example call, what the line does)
PROGRAMS_5_5: tuple[tuple[str, int, int, str], ...] = (
    (BUGGY_5_5, 6, 1, "bubble / (bubble + compute) = (p-1)/(m v + p - 1) is the bubble as "
     "a share of the whole iteration time; the docstring promises bubble over ideal "
     "compute. Fix: `return bubble_slots / compute_slots`"),
    (_bubble_listing("bubble_slots = pp - 1", "compute_slots = m * v + bubble_slots",
                     "return bubble_slots / compute_slots"), 5, 1,
     "adding the bubble to the compute slots makes the denominator the whole iteration "
     "time, (p-1)/(m v + p - 1); the ideal compute time is m v alone. Fix: "
     "`compute_slots = m * v`"),
    (_bubble_listing("bubble_slots = pp", "compute_slots = m * v",
                     "return bubble_slots / compute_slots"), 4, 1,
     "the pipeline fills and drains through p - 1 stages, not p, so the bubble is p - 1 "
     "slots. Fix: `bubble_slots = pp - 1`"),
    (_bubble_listing("bubble_slots = pp - 1", "compute_slots = m",
                     "return bubble_slots / compute_slots"), 5, 2,
     "with v chunks per GPU each fill and drain slot is v times shorter, so the "
     "denominator is m v, as the docstring says; `m` alone ignores v. Fix: "
     "`compute_slots = m * v`"),
)


def _params_5_5(program: int, pp: int, m: int) -> dict[str, Any]:
    listing, line, v, why = PROGRAMS_5_5[program]
    namespace: dict[str, Any] = {}
    exec(listing, namespace)  # the buggy program's own output, for the symptom
    return dict(program=program, pp=pp, m=m, v=v, bug_line=line, why=why,
                wrong=namespace["bubble_over_compute"](pp, m, v),
                right=pl.bubble_over_compute(pp, m, v))


def _vary_5_5(rng: random.Random) -> dict[str, Any]:
    pp = rng.choice([2, 4, 8, 16])
    return _params_5_5(rng.randrange(len(PROGRAMS_5_5)), pp, pp * rng.choice([2, 3, 4]))


def _cases_5_5(rng: random.Random) -> tuple[int, int, int]:
    return (rng.choice([1, 2, 4, 8, 16, 32]), rng.choice([1, 4, 8, 12, 32, 64, 128]),
            rng.choice([1, 1, 2, 3, 4]))


EX_5_5 = Exercise(
    id="5.5", chapter=5, category="debug", title="A bubble calculator that breaks its docstring",
    prompt=("The docstring promises the bubble as a fraction of the ideal compute time, "
            "(pp - 1)/(m v), but bubble_over_compute({pp}, {m}, v={v}) returns {wrong:.4g} "
            "instead of {right:.4g}. Which line is wrong? Give the line number (the `def` line "
            "is 1) and the fixed function."),
    params=_params_5_5(0, 8, 16),
    vary=_vary_5_5,
    answer_kind=Debug(
        code=BUGGY_5_5,
        programs=tuple(listing for listing, *_ in PROGRAMS_5_5[1:]),
        fix=Function(
            function_name="bubble_over_compute",
            signature="(pp, m, v=1)",
            cases=_cases_5_5,
            edge_cases=((8, 16, 1), (8, 16, 4), (1, 8, 1), (8, 1, 1), (2, 3, 2)),
        ),
    ),
    reference=lambda p: (p["bug_line"], pl.bubble_over_compute),
    hints=(
        "Check each line against the formula in the docstring: which numerator, which "
        "denominator?",
        "Work the call through by hand: what should bubble_slots and compute_slots be for "
        "pp = {pp}, m = {m}, v = {v}, and what does the code make them?",
        "Line {bug_line} is the first line whose value disagrees with (pp - 1)/(m v).",
    ),
    explanation=(
        "Line {bug_line} is the bug: {why}. Then bubble_over_compute({pp}, {m}, v={v}) = "
        "({pp} - 1)/({m} x {v}) = {right:.4g}, Narayanan et al.'s bubble time fraction. The "
        "other normalisation, bubble over the whole iteration time, is not wrong in itself; "
        "the bug is that the code and its contract disagree."
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
    vary=lambda rng: dict(pp=rng.choice([2, 4, 6, 8, 10, 12, 16, 24, 32]),
                          target_pct=rng.choice([1, 2, 3, 4, 5, 8, 10, 15, 20])),
    answer_kind=Numeric(unit="microbatches", rel_tol=0.0, abs_tol=0.0),
    reference=lambda p: pl.min_microbatches(p["pp"], p["target_pct"] / 100),
    hints=(
        "Solve (p-1)/m < target for m.",
        "m > (p-1)/target. Watch the boundary: does m = (p-1)/target itself satisfy a strict "
        "inequality?",
        "If (p-1)/target is a whole number, that m gives exactly the target, so the answer is "
        "the next integer.",
    ),
    explanation=(
        "m > ({pp}-1) / ({target_pct} / 100); the smallest integer strictly above that bound "
        "is {expected}. Watch the boundary: with the printed numbers (p = 8, 5 %) m = 140 "
        "gives exactly 5 %, which is not below 5 %, so the next integer is the answer. "
        "Interleaving divides the bubble by v: for those printed numbers v = 2 needs m = 71 "
        "and v = 4 needs m = 36 (again one more than the exact-5% points 70 and 35). Current "
        "Megatron-Core runs both (any m >= p, with microbatch groups of N in [p, m]); older "
        "Megatron-LM releases required a multiple of p = 8 when interleaving, which gave 72 "
        "and 40."
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
