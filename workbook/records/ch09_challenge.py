"""Chapter 9's challenges beyond the 58: the open design task 9.10 (lay out Llama 3 405B)
and the step-time records 9.11-9.13 (:mod:`workbook.records.ch09_step_time`).

9.10 is graded by constraints: every layout that meets them is right, the paper's among them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Constraints, Rule
from solutions import models, planner
from workbook.records.ch09 import KORTHIKANTI, LLAMA3_PAR, LLAMA3_T4, NARAYANAN, ZERO
from workbook.records.ch09_step_time import STEP_TIME_CHALLENGES

# -- 9.10 (challenge): design a layout, graded by constraints -----------------------------

def _field(answer: Mapping[str, Any], name: str) -> int | None:
    """The answer's whole-number field ``name`` if it is >= 1, else None."""
    value = answer.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


def _passes(check: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    """A rule that holds when the planner's ``check`` passes for the answered layout."""
    def holds(answer: Mapping[str, Any], p: Mapping[str, Any]) -> bool:
        tp, pp, dp = (_field(answer, k) for k in ("tp", "pp", "dp"))
        if tp is None or pp is None or dp is None:
            return False  # not a layout at all
        return check not in planner.layout_violations(
            models.LLAMA3_405B, tp, pp, dp, n_gpus=p["n_gpus"],
            global_batch_seqs=p["global_batch_seqs"], seq_len=p["seq_len"],
            max_layers_per_stage=p["max_layers_per_stage"],
            max_bubble=p["max_bubble_pct"] / 100, virtual_stages=p["v"],
            gpus_per_node=p["gpus_per_node"], memory_budget_gb=p["memory_budget_gb"])
    return holds


DESIGN_RULES = (
    Rule("gpus multiply out", _passes("gpus"),
         "TP x PP x DP = {tp} x {pp} x {dp} must equal the {n_gpus:,} GPUs exactly: no GPU "
         "may sit idle and none may be counted twice."),
    Rule("TP inside a node", _passes("tp_in_node"),
         "TP = {tp} does not fit inside one {gpus_per_node}-GPU node (it must divide "
         "{gpus_per_node}): tensor-parallel all-reduces happen inside every layer and need "
         "NVLink."),
    Rule("layers per stage", _passes("stages"),
         "With PP = {pp} the {n_layers} layers do not fit the limit: every stage may hold at "
         "most {max_layers_per_stage} layers and needs at least v = {v} of them to form its "
         "interleaved chunks."),
    Rule("batch splits over DP", _passes("batch"),
         "DP = {dp} does not divide the batch of {global_batch_seqs:,} sequences, so the "
         "replicas would not get the same whole number of micro-batches."),
    Rule("memory fits", _passes("memory"),
         "The busiest GPU needs more than {memory_budget_gb} GB: weights, gradients, ZeRO-1 "
         "optimizer state and in-flight activations of its stage. More PP or TP shrinks the "
         "per-GPU share of the model."),
    Rule("bubble below target", _passes("bubble"),
         "The pipeline bubble (PP-1)/(m v), with m = {global_batch_seqs:,} / DP micro-batches, "
         "is not below {max_bubble_pct}% of compute time: fewer stages or more micro-batches "
         "per replica (smaller DP) shrink it."),
)


def _design_reference(p: Mapping[str, Any]) -> dict[str, int]:
    """One valid layout: the paper's (8, 16, DP) when it passes, else the first that does."""
    n = p["n_gpus"]
    options = [(8, 16)] + [(t, q) for t in (8, 4, 2, 1) for q in range(1, p["n_layers"] + 1)]
    for tp, pp in options:
        if n % (tp * pp):
            continue
        answer = dict(tp=tp, pp=pp, dp=n // (tp * pp))
        if all(rule.holds(answer, p) for rule in DESIGN_RULES):
            return answer
    raise ValueError(f"no layout satisfies every rule for {dict(p)}")


def _vary_9_10(rng: random.Random) -> dict[str, Any]:
    return dict(n_gpus=rng.choice([8192, 16384]), gpus_per_node=8, n_layers=126,
                max_layers_per_stage=rng.choice([8, 10, 16]),
                global_batch_seqs=rng.choice([2048, 4096]), seq_len=8192,
                v=rng.choice([2, 4]), max_bubble_pct=rng.choice([50, 60]),
                memory_budget_gb=80)


EX_9_10 = Exercise(
    id="9.10", chapter=9, category="design", title="Lay out Llama 3 405B on the cluster",
    prompt=("Choose TP, PP and DP for Llama 3 405B ({n_layers} layers) on {n_gpus:,} H100s "
            "with {gpus_per_node} GPUs per node, a batch of {global_batch_seqs:,} sequences "
            "of {seq_len:,} tokens in micro-batches of 1 (CP = 1). Requirements: "
            "TP x PP x DP = {n_gpus:,}; TP divides {gpus_per_node}; every stage holds at most "
            "{max_layers_per_stage} and at least v = {v} layers; DP divides the batch; the "
            "busiest GPU fits in {memory_budget_gb} GB; and the interleaved bubble "
            "(PP-1)/(m v), m = batch / DP, stays below {max_bubble_pct}% of compute time."),
    notes=("Memory model (the planner's): BF16 weights and gradients (2 + 2 bytes per "
           "parameter) and Adam state (12 bytes) sharded over DP (ZeRO-1), for the stage's "
           "layers (3.188B parameters each, split over TP) plus the embedding or output head "
           "(128,256 x 16,384 / TP) on the end stages; activations with full recomputation, "
           "2 x s x h / TP bytes per layer per micro-batch, with up to min(PP - stage, m) "
           "micro-batches in flight times 1 + (PP-1)/(PP v) for interleaving. Answer a dict "
           "such as dict(tp=..., pp=..., dp=...)."),
    params=dict(n_gpus=16384, gpus_per_node=8, n_layers=126, max_layers_per_stage=8,
                global_batch_seqs=2048, seq_len=8192, v=2, max_bubble_pct=50,
                memory_budget_gb=80),
    vary=_vary_9_10,
    answer_kind=Constraints(fields=("tp", "pp", "dp"), rules=DESIGN_RULES),
    reference=_design_reference,
    hints=("Start from the node: TP can be at most {gpus_per_node}.",
           "The layer limit sets the smallest PP: ceil({n_layers} / PP) <= "
           "{max_layers_per_stage}.",
           "DP follows from TP and PP; check m = batch / DP and the bubble (PP-1)/(m v)."),
    explanation=("The paper's layout TP 8, PP 16, DP 128 works for the canonical numbers: "
                 "8 x 16 x 128 = 16,384; 126 layers as 7 + 14 x 8 + 7; m = 2048 / 128 = 16 "
                 "micro-batches, bubble 15 / (16 x 2) = 46.9% < 50%; about 19 GB per GPU "
                 "with full recomputation. TP 8, PP 32, DP 64 also passes (bubble 31/64 = "
                 "48.4%). TP 4 fails the bubble: halving TP doubles DP, halving m."),
    sources=(LLAMA3_T4, LLAMA3_PAR, NARAYANAN, KORTHIKANTI, ZERO),
)

CHALLENGES: tuple[Exercise, ...] = (EX_9_10, *STEP_TIME_CHALLENGES)
