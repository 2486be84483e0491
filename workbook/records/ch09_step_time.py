"""Chapter 9 records beyond the 58 (9.11-9.13): MFU, a step from a cost table, and a layout
within a margin of the fastest, graded by the step-time model of :mod:`solutions.performance`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Constraints, Function, Rule
from solutions import hardware, llama3, models, performance
from solutions._checks import non_negative
from solutions.planner.memory import ParallelConfig
from solutions.planner.search import Ranked, fits_memory, recommend
from solutions.planner.validity import structural_problems

PALM_B = "Chowdhery et al. 2022, PaLM, arXiv:2204.02311, Appendix B (MFU)"
NARAYANAN = ("Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU "
             "Clusters Using Megatron-LM, SC21, §2.2 (bubble, interleaving)")
VALIDATION = "docs/validation.md (the step-time model against Megatron-LM 2021 and Llama 3)"

# -- 9.11: MFU from throughput ------------------------------------------------------------

def _cases_9_11(rng: random.Random) -> tuple[Any, ...]:
    """A model size, a GPU's dense peak (A100 or H100 BF16) and a throughput that a real
    run could reach: one giving an MFU between 15 % and 60 %."""
    n_params = rng.choice([7e9, 8e9, 70e9, 175e9, 405e9]) * rng.uniform(0.9, 1.1)
    peak_tflops = rng.choice([312.0, 989.4])
    tokens_per_s = rng.uniform(0.15, 0.60) * peak_tflops * 1e12 / (6 * n_params)
    return (n_params, tokens_per_s, peak_tflops)


EX_9_11 = Exercise(
    id="9.11", chapter=9, category="build", title="MFU from measured throughput",
    prompt=("Write `model_flops_utilisation(n_params, tokens_per_s_per_gpu, peak_tflops)`: "
            "the model FLOPs utilisation of a run, as a fraction, from its parameter count, "
            "the tokens each GPU processes per second and the GPU's dense peak in TFLOPS. "
            "Count 6 FLOPs per parameter per token (forward + backward) and nothing for "
            "attention. Raise ValueError for a non-positive parameter count or peak, or a "
            "negative throughput."),
    notes=("Llama 3 405B at 400 TFLOPS per GPU: if the 400 counts 6N only, that is 400e12 / "
           "(6 x 405e9) = 164.6 tokens/s per GPU; with PaLM's attention term, which the "
           "paper's MFU definition cites (12 x 126 layers x 128 heads x 128 x 8,192 = 0.20e12 "
           "more FLOPs per token, 2.63e12 in all), about 152. The H100's dense BF16 peak is "
           "989.4 TFLOPS (not the 2:4-sparse 1,979)."),
    params={}, vary=lambda rng: {},
    answer_kind=Function(
        function_name="model_flops_utilisation",
        signature="(n_params, tokens_per_s_per_gpu, peak_tflops)",
        cases=_cases_9_11,
        edge_cases=(
            (405e9, 164.6, 989.4),   # Llama 3 405B, Table 4: 40.4 %
            (8e9, 0.0, 989.4),       # nothing processed: 0
            (0.0, 100.0, 989.4),     # no parameters: ValueError
            (405e9, -1.0, 989.4),    # negative throughput: ValueError
            (405e9, 100.0, 0.0),     # no peak: ValueError
        ),
    ),
    reference=lambda p: llama3.model_flops_utilisation,
    hints=("FLOPs per second one GPU does for the model: 6 x N x tokens/s per GPU.",
           "Divide by the peak in FLOP/s: peak_tflops x 1e12.",
           "Check the inputs before dividing."),
    explanation=("MFU = 6 N x tokens/s per GPU / (peak x 1e12). Throughput per GPU already "
                 "contains every stall (bubble, communication), so nothing else is divided "
                 "out. 6 x 405e9 x 164.6 / 989.4e12 = 0.404. This count leaves attention "
                 "out; the step-time model's MFU adds its causal half."),
    sources=(PALM_B, "Dubey et al. 2024, The Llama 3 Herd of Models, §3.3.2 (MFU as in "
             "Chowdhery et al.) and Table 4"),
)

# -- 9.12: a step from a cost table ---------------------------------------------------------

def _cases_9_12(rng: random.Random) -> tuple[Any, ...]:
    pp = rng.choice([1, 2, 4, 8, 16])
    v = rng.choice([1, 1, 2, 4]) if pp > 1 else 1
    m = max(1, pp * rng.choice([1, 2, 4]) // rng.choice([1, 1, 4])) if v > 1 else rng.choice(
        [1, 4, 16, 64])
    return (rng.uniform(0.05, 1.0), rng.uniform(0.0, 0.02), pp, m, v, rng.uniform(0.0, 0.5))


def step_time_from_costs(work_s: float, send_s: float, pp: int, m: int, v: int,
                         dp_exposed_s: float) -> float:
    """The reference of 9.12: :func:`solutions.performance.step_time_from_costs` with a
    schedule that accepts m < p when interleaving (Llama 3's, breadth-first rounds)."""
    bubble, sends = performance.pipeline_costs_s(work_s, send_s, pp, m, v, m_below_p=True)
    return m * work_s + bubble + sends + non_negative("dp_exposed_s", dp_exposed_s)


EX_9_12 = Exercise(
    id="9.12", chapter=9, category="build", title="A training step from its cost table",
    prompt=("Write `step_time_from_costs(work_s, send_s, pp, m, v, dp_exposed_s)`: the seconds "
            "one optimizer step takes on the busiest pipeline stage. `work_s` is that stage's "
            "time per micro-batch (compute, recomputation and its TP/CP traffic), `send_s` the "
            "time of one chunk's activation send plus gradient receive, `pp` stages, `m` "
            "micro-batches, `v` chunks per GPU (interleaving), `dp_exposed_s` the part of the "
            "gradient reduction that does not hide behind the backward pass. Add the m "
            "micro-batches, the bubble of their work, the sends on the critical path (none "
            "with one stage) and the exposed reduction. The bubble is (p-1)/(m v) of the work "
            "when m >= p; with fewer micro-batches than stages the schedule runs breadth-first "
            "rounds (Llama 3's), each round after the first leaving p - m chunk slots idle: "
            "[(p-1) + (v-1)(p-m)]/(m v). This course's model puts (m v + p - 1) sends on the "
            "critical path, every chunk's send of the m micro-batches plus the fill (a "
            "modelling choice; Narayanan et al. give the bubble, not a send count). Raise "
            "ValueError for negative times or degrees below 1."),
    notes=("Example: 16 micro-batches of 0.3 s on 16 stages with v = 2, sends of 5 ms, 0.1 s "
           "exposed: 4.8 + 2.25 + 0.235 + 0.1 = 7.385 s. With only 4 micro-batches: 1.2 + "
           "(15 + 12)/2 x 0.3 + 23 x 0.005 + 0.1 = 5.465 s."),
    params={}, vary=lambda rng: {},
    answer_kind=Function(
        function_name="step_time_from_costs",
        signature="(work_s, send_s, pp, m, v, dp_exposed_s)",
        cases=_cases_9_12,
        edge_cases=(
            (0.3, 0.005, 16, 16, 2, 0.1),   # the example: 7.385 s
            (0.3, 0.005, 1, 16, 1, 0.0),    # no pipeline: no bubble, no sends
            (0.3, 0.0, 16, 4, 1, 0.0),      # m < p without interleaving: bubble 375 %
            (0.3, 0.005, 16, 4, 2, 0.1),    # interleaving with m < p: 5.465 s
            (-0.3, 0.005, 16, 16, 2, 0.1),  # negative time: ValueError
            (0.3, 0.005, 0, 16, 1, 0.1),    # no stages: ValueError
        ),
    ),
    reference=lambda p: step_time_from_costs,
    hints=("Busy time: m x work_s. With m >= p the bubble adds (p-1)/(m v) of it: "
           "(p-1)/v x work_s.",
           "With m < p add (v-1)(p-m)/v x work_s more: the idle chunk slots of the later "
           "rounds.",
           "Each of the m v chunk passes sends once, and filling the pipeline adds p - 1 more; "
           "with pp = 1 there is no bubble and nothing to send."),
    explanation=("step = m w + [(p-1) + (v-1) max(0, p-m)]/v x w + (m v + p - 1) x send + "
                 "exposed DP. With m >= p the bubble is Narayanan et al.'s (p-1)/(m v) of the "
                 "busy time m w; interleaving divides it by v but multiplies the sends by about "
                 "v. With m < p interleaving still helps, but only toward (p-m)/m. The "
                 "step-time model composes its breakdown this way."),
    sources=(NARAYANAN, VALIDATION),
)

# -- 9.13: a layout within a margin of the fastest ------------------------------------------

FIELDS: tuple[str, ...] = ("tp", "cp", "pp", "dp", "v", "micro_batch")
_ADVICE: dict[str, str] = {
    "recompute": "recomputation: selective recomputation repeats the attention core; more "
                 "TP or CP shrinks each GPU's share of it",
    "tp": "TP all-reduces: four per layer per micro-batch on NVLink; less TP (more PP or DP) "
          "or larger micro-batches per GPU cut their share",
    "cp": "CP all-gathers of K and V, exposed in every layer: use less CP at this sequence "
          "length",
    "pp_bubble": "the pipeline bubble, (PP-1)/(m v) of the work: more micro-batches per "
                 "pipeline (smaller DP or micro-batch), more chunks v, or fewer stages",
    "pp_send": "stage-to-stage sends, (m v + PP - 1) of them on the critical path in this "
               "course's model: fewer chunks v or fewer stages",
    "dp_exposed": "the gradient reduction that does not hide behind the last backward pass: "
                  "more layers per stage or more micro-batch work to hide it behind",
    "optimizer": "the optimizer step: shard it over more data-parallel ranks",
}


def _layout(answer: Mapping[str, Any], p: Mapping[str, Any]) -> ParallelConfig | None:
    """The answered layout, or None when the fields do not make one for this batch."""
    values = [answer.get(k) for k in FIELDS]
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in values):
        return None
    tp, cp, pp, dp, v, micro = (int(x) for x in values)  # type: ignore[arg-type]
    if p["global_batch_seqs"] % (dp * micro):
        return None
    return ParallelConfig(tp=tp, cp=cp, pp=pp, dp=dp, zero_stage=1, micro_batch=micro,
                          grad_accum=p["global_batch_seqs"] // (dp * micro),
                          seq_len=p["seq_len"], activation_recompute="selective",
                          virtual_stages=v)


def _arch(p: Mapping[str, Any]) -> models.Architecture:
    return models.MODELS[p["model"]]


def _builds(cfg: ParallelConfig, p: Mapping[str, Any]) -> bool:
    """Every structural rule but the GPU count (a rule of its own)."""
    return not structural_problems(_arch(p), cfg, None)


@lru_cache(maxsize=32)
def _fastest(model: str, n_gpus: int, batch: int, seq_len: int) -> Ranked:
    """The fastest layout the model finds (ZeRO-1, selective recomputation), cached."""
    found = recommend(models.MODELS[model], n_gpus, batch, seq_len, hardware.H100_SXM,
                      zero_stages=(1,), recompute_modes=("selective",), top=1,
                      memory_budget_gb=80.0)
    if not found.best:
        raise ValueError(f"no layout of {model} fits {n_gpus} GPUs")
    return found.best[0]


def _slow_estimate(answer: Mapping[str, Any], p: Mapping[str, Any],
                   ) -> performance.StepEstimate | None:
    """The answer's estimate when it is a valid layout that misses the margin, else None."""
    cfg = _layout(answer, p)
    if cfg is None or cfg.n_gpus != p["n_gpus"] or not _builds(cfg, p) or not fits_memory(
            _arch(p), cfg, 80.0):
        return None
    est = performance.summarise(_arch(p), cfg, hardware.H100_SXM, performance.breakdown_s(
        _arch(p), cfg, hardware.H100_SXM, hardware.LLAMA3_H100))
    best = _fastest(p["model"], p["n_gpus"], p["global_batch_seqs"], p["seq_len"]).estimate
    return est if est.step_time_s > best.step_time_s * (1 + p["margin_pct"] / 100) else None


def _multiplies(answer: Mapping[str, Any], p: Mapping[str, Any]) -> bool:
    values = [answer.get(k) for k in ("tp", "cp", "pp", "dp")]
    return all(isinstance(x, int) for x in values) and (
        values[0] * values[1] * values[2] * values[3] == p["n_gpus"])  # type: ignore[operator]


def _splits(answer: Mapping[str, Any], p: Mapping[str, Any]) -> bool:
    return _layout(answer, p) is not None


def _rule_builds(answer: Mapping[str, Any], p: Mapping[str, Any]) -> bool:
    cfg = _layout(answer, p)
    return cfg is None or _builds(cfg, p)  # silent when the batch does not split


def _rule_memory(answer: Mapping[str, Any], p: Mapping[str, Any]) -> bool:
    cfg = _layout(answer, p)
    return cfg is None or not _builds(cfg, p) or fits_memory(_arch(p), cfg, 80.0)


def _not_biggest(cost: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
    def holds(answer: Mapping[str, Any], p: Mapping[str, Any]) -> bool:
        est = _slow_estimate(answer, p)
        return est is None or est.biggest_cost != cost
    return holds


STEP_RULES = (
    Rule("GPUs multiply out", _multiplies,
         "TP x CP x PP x DP = {tp} x {cp} x {pp} x {dp} must equal the {n_gpus:,} GPUs."),
    Rule("batch splits", _splits,
         "DP x micro-batch = {dp} x {micro_batch} must divide the {global_batch_seqs:,} "
         "sequences, and every field must be a whole number >= 1."),
    Rule("layout builds", _rule_builds,
         "The layout cannot be built: TP must fit an 8-GPU node and split the heads and FFN, "
         "the sequence must split into TP x CP (x 2 with CP) chunks, every stage needs a "
         "layer, v must divide each stage's layers, and interleaving needs m >= PP "
         "micro-batches (current Megatron-Core)."),
    Rule("memory fits", _rule_memory,
         "The busiest GPU needs more than 80 GB (ZeRO-1, selective recomputation): more TP, "
         "PP or CP, or smaller micro-batches, shrink it."),
    Rule("within the margin", lambda a, p: _slow_estimate(a, p) is None,
         "The model predicts a step more than {margin_pct}% slower than the fastest layout it "
         "finds for these settings; `solutions.performance.estimate` (or the planner above) "
         "shows where your step goes."),
    *(Rule(f"largest cost is not {cost}", _not_biggest(cost),
           f"Your layout's largest cost after compute is {advice}.", advice=True)
      for cost, advice in _ADVICE.items()),
)


def _with_fastest(p: dict[str, Any]) -> dict[str, Any]:
    """``p`` with the fastest layout's description, for the explanation."""
    best = _fastest(p["model"], p["n_gpus"], p["global_batch_seqs"], p["seq_len"])
    c = best.config
    return dict(p, fastest=(f"TP {c.tp}, CP {c.cp}, PP {c.pp}, DP {c.dp}, v = "
                            f"{c.virtual_stages}, micro-batch {c.micro_batch} "
                            f"({best.estimate.step_time_s:.2f} s per step)"))


def _reference_9_13(p: Mapping[str, Any]) -> dict[str, int]:
    """The fastest layout the model finds: the largest margin any answer can have."""
    c = _fastest(p["model"], p["n_gpus"], p["global_batch_seqs"], p["seq_len"]).config
    return dict(tp=c.tp, cp=c.cp, pp=c.pp, dp=c.dp, v=c.virtual_stages, micro_batch=c.micro_batch)


EX_9_13 = Exercise(
    id="9.13", chapter=9, category="design", title="A layout within reach of the fastest",
    prompt=("Lay out {model_name} on {n_gpus:,} H100s (8 per node, 400 Gb/s per GPU) for a "
            "batch of {global_batch_seqs:,} sequences of {seq_len:,} tokens, with ZeRO-1 and "
            "selective recomputation: choose TP, CP, PP, DP, chunks per GPU v and the "
            "micro-batch size. It must build, fit in 80 GB, and its predicted step time must "
            "be within {margin_pct}% of the fastest layout the step-time model finds. Answer "
            "dict(tp=..., cp=..., pp=..., dp=..., v=..., micro_batch=...)."),
    notes=("The model is `solutions.performance.estimate` on the Llama 3 cluster preset; the "
           "planner explorer above predicts any layout you try. A slow layout's feedback "
           "names its largest cost after compute."),
    params=_with_fastest(dict(model="llama3-70b", model_name="Llama 3 70B", n_gpus=512,
                              global_batch_seqs=512, seq_len=8192, margin_pct=10)),
    vary=lambda rng: _with_fastest(dict(model="llama3-70b", model_name="Llama 3 70B",
                                        n_gpus=rng.choice([256, 512, 1024]),
                                        global_batch_seqs=rng.choice([512, 1024]),
                                        seq_len=8192, margin_pct=rng.choice([5, 10]))),
    answer_kind=Constraints(fields=FIELDS, rules=STEP_RULES),
    reference=_reference_9_13,
    hints=("Keep TP inside a node; 80 layers must split over PP stages.",
           "The bubble (PP-1)/(m v) shrinks with more micro-batches per pipeline and more "
           "chunks; TP all-reduces grow with TP.",
           "Try a few layouts in the planner and read each breakdown."),
    explanation=("The fastest layout the step-time model finds for these numbers is "
                 "{fastest}; any layout that builds, fits and comes within {margin_pct}% of "
                 "its step passes. Only chunk counts v that divide every stage's layers build "
                 "(Megatron-LM asserts it). Too much TP pays all-reduces on every layer; too "
                 "few micro-batches per pipeline pay the bubble."),
    sources=(NARAYANAN, VALIDATION,
             "Dubey et al. 2024, The Llama 3 Herd of Models, §3.3 (cluster and layout)"),
)

STEP_TIME_CHALLENGES: tuple[Exercise, ...] = (EX_9_11, EX_9_12, EX_9_13)
