"""Chapter 9's challenges beyond the 58: the open design task 9.10 (lay out Llama 3 405B)
and the step-time records 9.11-9.13 (:mod:`workbook.records.ch09_step_time`).

9.10 is graded by constraints: every layout that meets them is right, the paper's among them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Constraints, Rule
from solutions import models, planner
from solutions.layout import ParallelConfig
from solutions.planner.memory import memory_per_gpu
from solutions.stack import LLAMA3
from workbook.records.ch09 import (
    FSDP_DOCS,
    KORTHIKANTI,
    LLAMA3_PAR,
    LLAMA3_SCHEDULE,
    LLAMA3_T4,
    NARAYANAN,
    ZERO,
)
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
        return check not in _violations(tp, pp, dp, tuple(sorted(p.items())))
    return holds


@lru_cache(maxsize=4096)
def _violations(tp: int, pp: int, dp: int, params: tuple[tuple[str, Any], ...],
                ) -> tuple[str, ...]:
    """The planner's failed checks for one layout (once for all the rules that ask)."""
    p = dict(params)
    return tuple(planner.layout_violations(
        models.LLAMA3_405B, tp, pp, dp, n_gpus=p["n_gpus"],
        global_batch_seqs=p["global_batch_seqs"], seq_len=p["seq_len"],
        max_layers_per_stage=p["max_layers_per_stage"],
        max_bubble=p["max_bubble_pct"] / 100, virtual_stages=p["v"],
        gpus_per_node=p["gpus_per_node"], memory_budget_gb=p["memory_budget_gb"],
        recompute="none"))


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
         "most {max_layers_per_stage} layers and needs at least v = {v} layer slots (the end "
         "stages count their embedding or output head as one) to form its interleaved "
         "chunks."),
    Rule("batch splits over DP", _passes("batch"),
         "DP = {dp} does not divide the batch of {global_batch_seqs:,} sequences, so the "
         "replicas would not get the same whole number of micro-batches."),
    Rule("memory fits", _passes("memory"),
         "The busiest GPU needs more than {memory_budget_gb} GB: with Llama 3's FSDP (no "
         "reshard after forward) its stage's BF16 weights stay gathered for the whole step, "
         "beside the sharded FP32 gradients and Adam state and the activations of every "
         "micro-batch in flight, kept whole (no recomputation). More PP or TP shrinks both."),
    Rule("bubble below target", _passes("bubble"),
         "The pipeline bubble (PP-1)/(m v), with m = {global_batch_seqs:,} / DP micro-batches, "
         "is not below {max_bubble_pct}% of compute time: fewer stages or more micro-batches "
         "per replica (smaller DP) shrink it."),
)


def _valid_layouts(p: Mapping[str, Any]) -> list[dict[str, int]]:
    """Every (TP, PP, DP) that meets every rule, TP descending then PP ascending."""
    n, found = p["n_gpus"], []
    for tp in (8, 4, 2, 1):
        for pp in range(1, p["n_layers"] + 1):
            if n % (tp * pp):
                continue
            answer = dict(tp=tp, pp=pp, dp=n // (tp * pp))
            if all(rule.holds(answer, p) for rule in DESIGN_RULES):
                found.append(answer)
    return found


def _design_reference(p: Mapping[str, Any]) -> dict[str, int]:
    """One valid layout: the paper's (TP 8, PP 16) when it passes, else the first that does."""
    valid = _valid_layouts(p)
    if not valid:
        raise ValueError(f"no layout satisfies every rule for {dict(p)}")
    paper = [a for a in valid if (a["tp"], a["pp"]) == (8, 16)]
    return (paper or valid)[0]


def _solution_words(p: Mapping[str, Any]) -> str:
    """The worked solution for these numbers: every layout that passes, its memory and
    bubble, and why half the pipeline depth fails."""
    valid = _valid_layouts(p)
    listed = "; ".join(f"TP {a['tp']}, PP {a['pp']}, DP {a['dp']}" for a in valid)
    ref = _design_reference(p)
    m = p["global_batch_seqs"] // ref["dp"]
    cfg = ParallelConfig(tp=ref["tp"], pp=ref["pp"], dp=ref["dp"], grad_accum=m,
                                 seq_len=p["seq_len"], zero_stage=3,
                                 activation_recompute="none", virtual_stages=p["v"])
    mem = memory_per_gpu(models.LLAMA3_405B, cfg, LLAMA3).as_gb()
    words = (f"Layouts that meet every requirement: {listed}. For TP {ref['tp']}, PP "
             f"{ref['pp']}, DP {ref['dp']}: {m} micro-batches per pipeline, a bubble of "
             f"{planner.bubble(cfg):.1%} of compute (below {p['max_bubble_pct']}%), and "
             f"{mem['total']:.1f} GB on the busiest GPU ({mem['weights']:.1f} GB of gathered "
             f"weights, {mem['activations']:.1f} GB of activations)")
    return words + _neighbour_words(p, ref) + "."


def _neighbour_words(p: Mapping[str, Any], ref: Mapping[str, int]) -> str:
    """Why half the pipeline depth (twice the DP) fails, when it does."""
    if ref["pp"] % 2:
        return ""
    half = dict(tp=ref["tp"], pp=ref["pp"] // 2, dp=ref["dp"] * 2)
    broken = [rule.name for rule in DESIGN_RULES if not rule.holds(half, p)]
    if not broken:
        return ""
    return f"; halving PP to {half['pp']} (DP {half['dp']}) breaks: " + ", ".join(broken)


def _with_words_9_10(p: dict[str, Any]) -> dict[str, Any]:
    return dict(p, solution=_solution_words(p))


#: Variants that admit at least one layout: (GPUs, batch, v, GPU name, memory budget in GB).
#: An H200 holds 141 GB of HBM3e (NVIDIA H200 datasheet); it is priced like an H100 here.
_SCENARIOS_9_10 = ((16384, 2048, 8, "H100", 80), (16384, 2048, 4, "H100", 80),
                   (16384, 2048, 2, "H100", 80), (8192, 1024, 8, "H100", 80),
                   (8192, 1024, 4, "H100", 80), (8192, 2048, 4, "H200", 141),
                   (16384, 4096, 8, "H200", 141), (8192, 4096, 2, "H200", 141))


def _vary_9_10(rng: random.Random) -> dict[str, Any]:
    n, batch, v, gpu, budget = rng.choice(_SCENARIOS_9_10)
    return _with_words_9_10(dict(
        n_gpus=n, gpus_per_node=8, n_layers=126, max_layers_per_stage=rng.choice([8, 10, 16]),
        global_batch_seqs=batch, seq_len=8192, v=v, max_bubble_pct=rng.choice([50, 60]),
        gpu=gpu, memory_budget_gb=budget))


EX_9_10 = Exercise(
    id="9.10", chapter=9, category="design", title="Lay out Llama 3 405B on the cluster",
    prompt=("Choose TP, PP and DP for Llama 3 405B ({n_layers} layers) on {n_gpus:,} {gpu}s "
            "with {gpus_per_node} GPUs per node, a batch of {global_batch_seqs:,} sequences "
            "of {seq_len:,} tokens in micro-batches of 1 (CP = 1). Requirements: "
            "TP x PP x DP = {n_gpus:,}; TP divides {gpus_per_node}; every stage holds at most "
            "{max_layers_per_stage} layers and at least v = {v} layer slots (a first or last "
            "stage one layer short counts its embedding or output head as a slot, as Llama 3 "
            "arranges its end stages); DP divides the batch; the "
            "busiest GPU fits in {memory_budget_gb} GB; and the interleaved bubble "
            "(PP-1)/(m v), m = batch / DP, stays below {max_bubble_pct}% of compute time."),
    notes=("Memory model (the planner's, `solutions.planner.memory` with the Llama 3 stack): "
           "Llama 3's FSDP, which shards optimizer state and gradients but does not reshard "
           "the weights after the forward pass, so a stage's BF16 weights (2 bytes per "
           "parameter) stay gathered for the whole step beside their 2-byte shard, FP32 "
           "gradients (4 bytes) and Adam state (12 bytes) sharded over DP, plus the FP32 "
           "gradient of the one chunk whose micro-batches are being accumulated (a stage's "
           "layers / v; the whole stage's when m > PP, since each chunk's backward then "
           "recurs in every group of PP micro-batches); the stage's layers "
           "(3.188B parameters each, split over TP) plus the embedding or output head "
           "(128,256 x 16,384 / TP) on the end stages. Activations as the paper trained, "
           "without recomputation and with flash attention: 31.8 x s x h / TP bytes per layer "
           "per micro-batch, for every chunk forward whose backward has not run, at most "
           "2 (PP - 1 - stage) + (v - 1) PP + 1 of them and never more than m v. Answer a dict "
           "such as dict(tp=..., pp=..., dp=...)."),
    params=_with_words_9_10(dict(
        n_gpus=16384, gpus_per_node=8, n_layers=126, max_layers_per_stage=8,
        global_batch_seqs=2048, seq_len=8192, v=8, max_bubble_pct=50, gpu="H100",
        memory_budget_gb=80)),
    vary=_vary_9_10,
    answer_kind=Constraints(fields=("tp", "pp", "dp"), rules=DESIGN_RULES),
    reference=_design_reference,
    hints=("Start from the node: TP can be at most {gpus_per_node}.",
           "The layer limit sets the smallest PP: ceil({n_layers} / PP) <= "
           "{max_layers_per_stage}.",
           "DP follows from TP and PP; check m = batch / DP and the bubble (PP-1)/(m v)."),
    explanation=("{solution} TP below 8 doubles DP, which halves the micro-batches per "
                 "pipeline and raises the bubble, and doubles each GPU's share of the weights "
                 "and activations."),
    sources=(LLAMA3_T4, LLAMA3_PAR, LLAMA3_SCHEDULE, NARAYANAN, KORTHIKANTI, ZERO, FSDP_DOCS),
)

CHALLENGES: tuple[Exercise, ...] = (EX_9_10, *STEP_TIME_CHALLENGES)
