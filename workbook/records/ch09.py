"""Chapter 9: Capstone: the Llama 3 405B training run, number by number.

The figures are those of Dubey et al. 2024 (arXiv:2407.21783): Table 3 (architecture),
Table 4 (parallelism: 16,384 H100s, TP 8, CP 1, PP 16, DP 128, 16 sequences of 8,192
tokens per DP group) and §3.3 (infrastructure). The extra design record 9.10 (in
``workbook.records.ch09_challenge``) is graded by constraints: several layouts are right.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Misconception, Numeric, Ordering
from autograder.template import Earlier
from solutions import llama3 as l3
from solutions.layout import pipeline_bubble_over_compute
from solutions.pipeline import bubble_over_compute, bubble_over_total

LLAMA3_T3 = "Dubey et al. 2024, The Llama 3 Herd of Models, arXiv:2407.21783, Table 3"
LLAMA3_T4 = ("Dubey et al. 2024, arXiv:2407.21783, Table 4 (16,384 GPUs: TP 8, CP 1, PP 16, "
             "DP 128, batch size per DP 16, sequence 8,192)")
LLAMA3_PAR = ("Dubey et al. 2024, arXiv:2407.21783, §3.3.2 (4D parallelism, order "
              "[TP, CP, PP, DP]; one layer fewer on the first and last stages)")
KAPLAN = ("Kaplan et al. 2020, Scaling Laws for Neural Language Models, arXiv:2001.08361, "
          "§2.1 (C = 6ND)")
H100 = "NVIDIA H100 Architecture whitepaper (2022), Table 3: BF16 989.4 TFLOPS dense"
NARAYANAN = ("Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU "
             "Clusters Using Megatron-LM, SC21, §2.2.2 (interleaved bubble (p-1)/(m v))")
RING = ("Patarasuk & Yuan 2009, Bandwidth optimal all-reduce algorithms, JPDC 69(2); NCCL "
        "tests doc/PERFORMANCE.md (2(n-1)/n)")
LLAMA3_SCHEDULE = ("Dubey et al. 2024, arXiv:2407.21783, §3.3.2 and Figure 6 (interleaved "
                   "schedule with fewer micro-batches than stages; first and last chunks "
                   "hold only the embedding and the output head)")
KORTHIKANTI = ("Korthikanti et al. 2022, Reducing Activation Recomputation in Large "
               "Transformer Models, arXiv:2205.05198, Table 2 and §4.2.3")
ZERO = ("Rajbhandari et al. 2020, ZeRO, SC20, §5.3 and Figure 1 (P_os+g+p: (2 + 2 + 12)/N "
        "bytes per parameter)")
FSDP_DOCS = ("PyTorch FSDP documentation: ShardingStrategy.SHARD_GRAD_OP and FSDP2 "
             "reshard_after_forward=False (weights kept gathered between forward and "
             "backward)")

# Model shapes learners meet in the variants: (d_model, heads, kv heads, d_ffn), Table 3.
SHAPES = ((4096, 32, 8, 14336), (8192, 64, 8, 28672), (16384, 128, 8, 53248))


def _only_if(condition: bool, value: float) -> float:
    """A misconception that exists only for some params (skipped when it would be right)."""
    if not condition:
        raise ValueError("not a distinct wrong answer for these params")
    return value


# -- 9.1 ---------------------------------------------------------------------------------

def _vary_9_1(rng: random.Random) -> dict[str, Any]:
    tp, pp, cp = rng.choice([2, 4, 8]), rng.choice([4, 8, 16, 32]), rng.choice([1, 1, 2, 4])
    return dict(n_gpus=tp * pp * cp * rng.choice([8, 16, 32, 64, 128, 256]), tp=tp, pp=pp, cp=cp)


EX_9_1 = Exercise(
    id="9.1", chapter=9, category="derive", title="The data-parallel degree",
    prompt=("A cluster of {n_gpus:,} GPUs trains with tensor parallelism TP = {tp}, context "
            "parallelism CP = {cp} and pipeline parallelism PP = {pp}. Every GPU belongs to "
            "exactly one TP x CP x PP model replica. How many data-parallel replicas (DP) "
            "are there?"),
    params=dict(n_gpus=16384, tp=8, pp=16, cp=1),
    vary=_vary_9_1,
    answer_kind=Numeric(unit="", rel_tol=1e-9),
    reference=lambda p: l3.dp_degree(p["n_gpus"], p["tp"], p["pp"], p["cp"]),
    hints=("The four degrees multiply to the GPU count: TP x CP x PP x DP = N.",
           "One model replica uses TP x CP x PP GPUs.",
           "DP = N / (TP x CP x PP)."),
    explanation=("DP = {n_gpus:,} / ({tp} x {cp} x {pp}) = {expected}. The printed numbers are "
                 "Llama 3 405B's at 8K context (Table 4); for the 128K-context phase CP = 16 "
                 "and DP drops to 8 (the table prints DP = 4, which does not multiply out: "
                 "8 is what 16,384 GPUs and 16M tokens per step require)."),
    misconceptions=(
        Misconception(lambda p: p["n_gpus"] / p["tp"],
                      "That only divides by TP; each replica also spans PP (and CP) GPUs."),
        Misconception(lambda p: p["n_gpus"] / p["pp"],
                      "That only divides by PP; each replica also spans the TP GPUs."),
        Misconception(lambda p: _only_if(p["cp"] > 1, p["n_gpus"] / (p["tp"] * p["pp"])),
                      "Context parallelism also uses GPUs: divide by CP = {cp} too."),
    ),
    sources=(LLAMA3_T4,),
)


# -- 9.2 ---------------------------------------------------------------------------------

def _vary_9_2(rng: random.Random) -> dict[str, Any]:
    """A layer count that PP does not divide (the question is about rounding up)."""
    pp = rng.choice([4, 8, 16])
    return dict(n_layers=rng.choice([n for n in (30, 40, 60, 61, 94, 118, 126)
                                     if n > pp and n % pp]), pp=pp)


EX_9_2 = Exercise(
    id="9.2", chapter=9, category="derive", title="Layers per pipeline stage",
    prompt=("A {n_layers}-layer model is split over PP = {pp} pipeline stages as evenly as "
            "possible (stage sizes differ by at most one layer; {pp} does not divide "
            "{n_layers}). How many layers does the most heavily loaded stage hold?"),
    notes=("Llama 3 405B has 126 layers on 16 stages. The paper (§3.3.2) removes one layer "
           "from the first and from the last stage, which also carry the embedding and the "
           "output head, so the middle stages are the full ones."),
    params=dict(n_layers=126, pp=16),
    vary=_vary_9_2,
    answer_kind=Numeric(unit="layers", rel_tol=1e-9),
    reference=lambda p: l3.max_layers_per_stage(p["n_layers"], p["pp"]),
    hints=("Divide the layers by the stages and look at the remainder.",
           "A stage holds whole layers: the stages that take the remainder get the quotient "
           "rounded up.",
           "The heaviest stage holds ceil(layers / PP) (exactly layers / PP when PP divides "
           "them)."),
    explanation=("PP = {pp} does not divide {n_layers} layers, so some stages hold one layer "
                 "more than others: the heaviest hold ceil({n_layers} / {pp}) = {expected}. "
                 "For Llama 3: 126 = 14 x 8 + 2 x 7, with the two 7-layer stages first and "
                 "last (16 x 8 - 2 = 126)."),
    misconceptions=(
        Misconception(lambda p: _only_if(p["n_layers"] % p["pp"] != 0,
                                         p["n_layers"] / p["pp"]),
                      "A stage holds whole layers; round up for the heaviest stage."),
        Misconception(lambda p: _only_if(p["n_layers"] % p["pp"] != 0,
                                         p["n_layers"] // p["pp"]),
                      "That is the lighter stages' count; the question asks for the heaviest."),
    ),
    sources=(LLAMA3_PAR, LLAMA3_T3),
)


# -- 9.3 ---------------------------------------------------------------------------------

def _vary_shape(rng: random.Random) -> dict[str, Any]:
    d, h, kv, f = rng.choice(SHAPES)
    return dict(d_model=d, n_heads=h, n_kv_heads=kv, d_ffn=f)


def _vary_9_3(rng: random.Random) -> dict[str, Any]:
    return dict(**_vary_shape(rng), layers_on_stage=rng.choice([2, 4, 8, 10]),
                tp=rng.choice([2, 4, 8]))


def _weights_gb(p: Mapping[str, Any], layer_params: float, bytes_per_param: float = 2) -> float:
    return l3.weight_gb_per_gpu(layer_params, p["layers_on_stage"], p["tp"], bytes_per_param)


def _gqa_layer(p: Mapping[str, Any]) -> int:
    return l3.layer_params(p["d_model"], p["n_heads"], p["n_kv_heads"], p["d_ffn"])


def _mha_layer(p: Mapping[str, Any]) -> int:
    return int(4 * p["d_model"] ** 2 + 3 * p["d_model"] * p["d_ffn"])


EX_9_3 = Exercise(
    id="9.3", chapter=9, category="derive", title="Weight memory per GPU with GQA and SwiGLU",
    prompt=("Each layer has model width d = {d_model:,}, {n_heads} query heads and "
            "{n_kv_heads} key/value heads (grouped-query attention, head size d / heads), "
            "and a SwiGLU FFN of width {d_ffn:,}. Ignore norm weights. One pipeline stage "
            "holds {layers_on_stage} layers, split over TP = {tp} GPUs. How many GB "
            "(1 GB = 1e9 bytes) of BF16 weights does each GPU of that stage hold?"),
    params=dict(d_model=16384, n_heads=128, n_kv_heads=8, d_ffn=53248, layers_on_stage=8,
                tp=8),
    vary=_vary_9_3,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: _weights_gb(p, _gqa_layer(p)),
    hints=("Q and O are d x d; with GQA, K and V are only d x (kv_heads x head size) each.",
           "SwiGLU has three d x d_ffn matrices: gate, up and down.",
           "Per layer: 2d^2 + 2d(kv_heads x d/heads) + 3 d d_ffn; multiply by the layers, "
           "divide by TP, times 2 bytes."),
    explanation=("Attention 2 x d^2 + 2 x d x (kv_heads x d / heads), FFN 3 x d x d_ffn: for "
                 "Llama 3 405B 570.4M + 2,617.2M = 3.188B per layer (126 of them plus "
                 "2 x 128,256 x 16,384 embedding weights make the published 405B). "
                 "{layers_on_stage} layers / TP {tp} x 2 bytes = {expected} GB."),
    misconceptions=(
        Misconception(lambda p: _weights_gb(p, _mha_layer(p)),
                      "4d^2 is multi-head attention; with {n_kv_heads} KV heads, K and V are "
                      "much smaller than Q and O."),
        Misconception(lambda p: _weights_gb(p, _gqa_layer(p)) * p["tp"],
                      "TP = {tp} splits every weight matrix; divide by it."),
        Misconception(lambda p: _weights_gb(p, _gqa_layer(p), 4),
                      "BF16 is 2 bytes per parameter, not 4."),
        Misconception(lambda p: _weights_gb(p, _gqa_layer(p)) * 1e9 / 2**30,
                      "That is GiB; the question asks for decimal GB."),
    ),
    sources=(LLAMA3_T3, "Ainslie et al. 2023, GQA, arXiv:2305.13245",
             "Shazeer 2020, GLU Variants Improve Transformer, arXiv:2002.05202"),
)


# -- 9.4 and 9.5 ------------------------------------------------------------------------

RUNS = ((8.0, 15.0), (70.0, 15.0), (405.0, 15.6), (175.0, 0.3), (540.0, 0.78))


def _vary_9_4(rng: random.Random) -> dict[str, Any]:
    n, d = rng.choice(RUNS)
    return dict(n_params_b=n, tokens_t=d)


def _flops(p: Mapping[str, Any]) -> float:
    return l3.training_flops(p["n_params_b"] * 1e9, p["tokens_t"] * 1e12)


EX_9_4 = Exercise(
    id="9.4", chapter=9, category="derive", title="Training compute in petaFLOP-days",
    prompt=("A dense model of {n_params_b} billion parameters is trained on {tokens_t} "
            "trillion tokens. Using the estimate of 6 FLOPs per parameter per token, how "
            "many petaFLOP/s-days (1 PF-day = 1e15 FLOP/s for 86,400 s) does training take?"),
    params=dict(n_params_b=405.0, tokens_t=15.6),
    vary=_vary_9_4,
    answer_kind=Numeric(unit="PF-days", rel_tol=0.005),
    reference=lambda p: l3.pf_days(_flops(p)),
    hints=("C = 6 N D: 2N FLOPs per token forward, 4N backward.",
           "One PF-day is 1e15 x 86,400 = 8.64e19 FLOPs.",
           "Divide 6 x N x D by 8.64e19."),
    explanation=("C = 6 x {n_params_b}e9 x {tokens_t}e12 FLOPs; divided by 8.64e19 FLOPs per "
                 "PF-day that is {expected} PF-days. The printed numbers are "
                 "Llama 3 405B's: 3.79e25 FLOPs, which the paper quotes as 3.8e25."),
    misconceptions=(
        Misconception(lambda p: l3.pf_days(_flops(p) / 3),
                      "2ND counts only the forward pass; training adds the backward (4ND)."),
        Misconception(lambda p: _flops(p) / (1e15 * 3600),
                      "That is PF-hours: a day has 86,400 seconds."),
    ),
    sources=(KAPLAN, LLAMA3_T3),
)


def _vary_9_5(rng: random.Random) -> dict[str, Any]:
    return dict(**_vary_9_4(rng), n_gpus=rng.choice([2048, 8192, 16384]), peak_tflops=989.4,
                mfu_pct=rng.choice([30, 35, 38, 40, 43, 45]))


def _days(p: Mapping[str, Any], peak: float | None = None, mfu_pct: float | None = None) -> float:
    peak_tflops = p["peak_tflops"] if peak is None else peak
    mfu = (p["mfu_pct"] if mfu_pct is None else mfu_pct) / 100
    return l3.training_days(_flops(p), p["n_gpus"], peak_tflops, mfu)


EX_9_5 = Exercise(
    id="9.5", chapter=9, category="derive", title="Training time at a given MFU",
    prompt=("Training needs 6 x N x D FLOPs with N = {n_params_b} billion parameters and "
            "D = {tokens_t} trillion tokens. It runs on {n_gpus:,} H100 GPUs whose dense BF16 "
            "peak is {peak_tflops} TFLOPS, at {mfu_pct}% model FLOPs utilisation (MFU), with "
            "no downtime. How many days does it take?"),
    notes=("The Llama 3 paper reports 38-43% MFU (Table 4). Its \"54 days\" is a snapshot "
           "period in which 419 unexpected interruptions were logged (§3.3.4), not the length "
           "of pre-training. The Llama 3.1 model card's 30.84M GPU-hours for the 405B model "
           "imply an average of about 35% MFU over the whole run, presumably downtime "
           "included (the card does not say)."),
    params=dict(n_params_b=405.0, tokens_t=15.6, n_gpus=16384, peak_tflops=989.4, mfu_pct=40),
    vary=_vary_9_5,
    answer_kind=Numeric(unit="days", rel_tol=0.005),
    reference=_days,
    hints=("Achieved FLOP/s = GPUs x peak x MFU.",
           "Time in seconds = total FLOPs / achieved FLOP/s.",
           "Divide the seconds by 86,400."),
    explanation=("Achieved rate = {n_gpus:,} x {peak_tflops}e12 x {mfu_pct}% FLOP/s; "
                 "6ND divided by that rate, over 86,400 s per day, is {expected} days. "
                 "MFU is measured against the dense peak; the 1,979 TFLOPS figure assumes 2:4 "
                 "sparsity and would halve the answer."),
    misconceptions=(
        Misconception(lambda p: _days(p, peak=2 * p["peak_tflops"]),
                      "That uses the 2:4-sparsity peak; MFU is always relative to the dense "
                      "peak."),
        Misconception(lambda p: _days(p, mfu_pct=100),
                      "That assumes 100% utilisation; scale by the MFU."),
        Misconception(lambda p: _days(p) * 24,
                      "That is hours; the question asks for days."),
    ),
    sources=(KAPLAN, H100, LLAMA3_T4),
)


# -- 9.6 ---------------------------------------------------------------------------------

def _schedule_words(pp: int, m: int, v: int) -> str:
    if v == 1:
        return "plain 1F1B (v = 1 model chunk per GPU: not interleaved)"
    if m >= pp:
        return f"interleaved 1F1B with v = {v} model chunks per GPU"
    return (f"Llama 3's interleaved schedule with v = {v} model chunks per GPU, which runs "
            "fewer micro-batches than stages in breadth-first rounds")


def _regime_words(pp: int, m: int, v: int) -> str:
    """The sentence of the explanation that depends on m against p (true for every draw)."""
    if m >= pp:
        return (f"m = {m} micro-batches, at least the {pp} stages, so the bubble is "
                f"({pp} - 1)/({m} x {v}) of the ideal compute time")
    if v == 1:
        return (f"m = {m} micro-batches, fewer than the {pp} stages: the pipeline never "
                f"fills, and the bubble is ({pp} - 1)/{m} of the ideal compute time")
    rounds = ("the second round leaves" if v == 2
              else f"each of the {v - 1} rounds after the first leaves")
    return (f"m = {m} micro-batches, fewer than the {pp} stages: {rounds} {pp - m} chunk "
            "slots idle, so the bubble is "
            f"(({pp} - 1) + {v - 1} x {pp - m})/({m} x {v}) of the ideal compute time; "
            f"interleaving still helps, but only toward the floor ({pp} - {m})/{m}")


def _with_words_9_6(p: dict[str, Any]) -> dict[str, Any]:
    m = p["batch_per_dp"] // p["micro_batch"]
    return dict(p, schedule=_schedule_words(p["pp"], m, p["v"]),
                regime=_regime_words(p["pp"], m, p["v"]))


def _vary_9_6(rng: random.Random) -> dict[str, Any]:
    micro = rng.choice([1, 1, 2])
    return _with_words_9_6(dict(pp=rng.choice([4, 8, 16]),
                                batch_per_dp=micro * rng.choice([4, 8, 16, 32, 64]),
                                micro_batch=micro, v=rng.choice([1, 2, 4, 8])))


def _m(p: Mapping[str, Any]) -> int:
    return int(p["batch_per_dp"] // p["micro_batch"])


def _bubble_pct(p: Mapping[str, Any]) -> float:
    return 100 * pipeline_bubble_over_compute(p["pp"], _m(p), p["v"])


EX_9_6 = Exercise(
    id="9.6", chapter=9, category="derive",
    title="The pipeline bubble of the 405B layout with few chunks",
    prompt=("Each data-parallel group processes {batch_per_dp} sequences per step in "
            "micro-batches of {micro_batch} sequence(s), through PP = {pp} pipeline stages with "
            "{schedule}. What is the pipeline bubble as a percentage of the **ideal compute "
            "time** (Narayanan et al. 2021: bubble time / (m x (t_f + t_b)))?"),
    notes=("Llama 3 405B (Table 4): batch size per DP group 16 at sequence length 8,192; "
           "assuming micro-batches of one sequence (the paper does not publish the size), "
           "m = 16 micro-batches per step; PP = 16. The paper does not state v either, but its "
           "end stages (a first chunk holding only the embedding, a last one only the output "
           "head, §3.3.2) imply one layer per chunk: v = 8. With fewer micro-batches than "
           "stages, Llama 3's schedule runs breadth-first rounds; current Megatron-Core needs "
           "m >= p to interleave."),
    params=_with_words_9_6(dict(pp=16, batch_per_dp=16, micro_batch=1, v=2)),
    vary=_vary_9_6,
    answer_kind=Numeric(unit="%", rel_tol=0.005),
    reference=_bubble_pct,
    hints=("The number of micro-batches is m = batch per DP group / micro-batch size.",
           "1F1B leaves (p-1)/m of the compute time idle; with m >= p interleaving divides it "
           "by v.",
           "With m < p, each interleaving round after the first also leaves p - m chunk slots "
           "idle: [(p-1) + (v-1)(p-m)]/(m v)."),
    explanation=("{regime}: {expected}%. As a share of the whole step it is smaller, bubble / "
                 "(compute + bubble). For Llama 3 with m = 16 on 16 stages: 94% for v = 1, 47% "
                 "for v = 2, 23% for v = 4 and 11.7% for v = 8, the one-layer chunks the "
                 "paper's description implies."),
    misconceptions=(
        Misconception(lambda p: _only_if(p["v"] > 1, 100 * bubble_over_compute(p["pp"], _m(p))),
                      "That is plain 1F1B; interleaving with v = {v} shrinks the bubble."),
        Misconception(lambda p: _only_if(p["v"] > 1 and _m(p) < p["pp"],
                                         100 * bubble_over_compute(p["pp"], _m(p), p["v"])),
                      "(p-1)/(m v) assumes at least p micro-batches; with m = {batch_per_dp} / "
                      "{micro_batch} < {pp} each later round leaves p - m chunk slots idle."),
        Misconception(lambda p: _only_if(_m(p) >= p["pp"],
                                         100 * bubble_over_total(p["pp"], _m(p), p["v"])),
                      "That divides by the whole step time; the question asks for bubble over "
                      "ideal compute time, (p-1)/(m v)."),
        Misconception(lambda p: _only_if(_m(p) != 4,
                                         100 * bubble_over_compute(p["pp"], 4, p["v"])),
                      "m = 4 is not this run's micro-batch count: m = batch per DP group / "
                      "micro-batch size."),
    ),
    sources=(NARAYANAN, LLAMA3_T4, LLAMA3_SCHEDULE),
)


# -- 9.7 ---------------------------------------------------------------------------------

def _vary_9_7(rng: random.Random) -> dict[str, Any]:
    d, h, kv, f = rng.choice(SHAPES)
    return dict(params_per_layer=l3.layer_params(d, h, kv, f),
                layers_on_stage=rng.choice([4, 8, 10]), tp=rng.choice([4, 8]),
                n_dp=rng.choice([8, 32, 64, 128, 256]), bytes_per_grad=2)


def _dp_gb(p: Mapping[str, Any], tp: int | None = None) -> float:
    per_gpu = p["params_per_layer"] * p["layers_on_stage"] / (p["tp"] if tp is None else tp)
    return l3.dp_allreduce_gb_per_gpu(per_gpu, p["n_dp"], p["bytes_per_grad"])


EX_9_7 = Exercise(
    id="9.7", chapter=9, category="derive", title="Data-parallel gradient all-reduce volume",
    prompt=("A pipeline stage holds {layers_on_stage} layers of {params_per_layer:,} parameters "
            "each, split over TP = {tp} GPUs. Each GPU all-reduces its gradient shard "
            "({bytes_per_grad} bytes per gradient) with the other GPUs of its data-parallel "
            "group, DP = {n_dp} GPUs in all, using a ring. How many GB (1e9 bytes) does each "
            "GPU send per step?"),
    notes=("3,187,671,040 is the Llama 3 405B layer of exercise 9.3. The paper reduce-scatters "
           "gradients in FP32 (§3.3.2); this exercise uses BF16 gradients to keep the ring "
           "arithmetic in focus."),
    params=dict(params_per_layer=3187671040, layers_on_stage=8, tp=8,
                n_dp=Earlier(128, "9.1", "GPUs"),  # the run's data-parallel degree
                bytes_per_grad=2),
    vary=_vary_9_7,
    answer_kind=Numeric(unit="GB", rel_tol=0.0025),
    reference=_dp_gb,
    hints=("The gradient each GPU reduces is its own shard: layers x params / TP x bytes.",
           "A ring all-reduce is a reduce-scatter plus an all-gather.",
           "Each GPU sends 2 x (N-1)/N x S bytes."),
    explanation=("S = {layers_on_stage} x {params_per_layer:,} / {tp} x {bytes_per_grad} "
                 "bytes; the ring sends 2 x (N-1)/N times that, with N = {n_dp}: {expected} "
                 "GB per GPU per step, overlapped with the backward pass. That is a BF16 "
                 "all-reduce of the shard, as the notes simplify it; Llama 3's own FSDP "
                 "reduce-scatters FP32 gradients (12.65 GB) and all-gathers BF16 weights "
                 "(6.33 GB), 18.98 GB per GPU per step in the planner."),
    misconceptions=(
        Misconception(lambda p: _dp_gb(p) / 2,
                      "That is one phase; a ring all-reduce is reduce-scatter plus all-gather."),
        Misconception(lambda p: _dp_gb(p) * p["n_dp"] / (p["n_dp"] - 1),
                      "2S is the large-N limit; with N = {n_dp} the factor is 2(N-1)/N."),
        Misconception(lambda p: _dp_gb(p, tp=1),
                      "Each GPU only holds 1/TP of the stage's parameters; divide by TP = {tp}."),
    ),
    sources=(RING, LLAMA3_T4, LLAMA3_PAR),
)


# -- 9.8 ---------------------------------------------------------------------------------

def _order_9_8(p: Mapping[str, Any]) -> tuple[str, ...]:
    """The paper's order, innermost first; reversed when the question runs outermost first."""
    order = tuple(l3.PARALLELISM_ORDER)
    return order if p["first"] == "innermost" else order[::-1]


EX_9_8 = Exercise(
    id="9.8", chapter=9, category="design", title="Order the four parallelism dimensions",
    prompt=("Llama 3 405B combines tensor (TP), context (CP), pipeline (PP) and data (DP) "
            "parallelism. Innermost means ranks placed on the closest, fastest-connected "
            "GPUs; outermost, ranks spread furthest apart across the network. Order the four "
            "as the paper places them, from **{first}** to **{last}**."),
    notes=("TP exchanges activations several times inside every layer (blocking); CP "
           "all-gathers keys and values in every layer, exposed on the critical path (Llama 3 "
           "§3.3.2), and small because GQA makes K and V 16 times smaller than Q; PP sends one "
           "activation per micro-batch and chunk to the next stage; DP reduces gradients once "
           "per step, overlapped with the backward pass."),
    params=dict(first="innermost", last="outermost"),
    vary=lambda rng: dict(first="outermost", last="innermost"),  # the other direction
    answer_kind=Ordering(items=("PP", "DP", "TP", "CP"), first_label="first", last_label="last"),
    reference=_order_9_8,
    hints=("Put the most frequent, latency-critical communication on NVLink inside a node.",
           "TP fits inside the 8-GPU node; DP traffic happens once per step.",
           "Between them, CP talks once per layer and PP once per micro-batch."),
    explanation=("Innermost to outermost the paper's order is TP, CP, PP, DP, so from {first} to "
                 "{last} it is {expected}. TP needs NVLink; CP's per-layer K/V all-gathers come "
                 "next; "
                 "PP only sends point-to-point activations between stages; DP's gradient "
                 "reduction is the least frequent and overlaps with compute, so it tolerates "
                 "the slowest, furthest links (Llama 3 §3.3.2)."),
    sources=(LLAMA3_PAR,),
)


# -- 9.9 ---------------------------------------------------------------------------------

def _vary_9_9(rng: random.Random) -> dict[str, Any]:
    return dict(n_gpus=rng.choice([2048, 8192, 16384]), watts=rng.choice([400, 700]),
                days=rng.choice([30, 54, 60, 77, 90]),
                usd_per_kwh=rng.choice([0.04, 0.05, 0.08, 0.10]))


def _power_cost(p: Mapping[str, Any], pue: float = 1.0) -> float:
    return l3.electricity_cost_usd(p["n_gpus"], p["watts"], p["days"], p["usd_per_kwh"], pue)


EX_9_9 = Exercise(
    id="9.9", chapter=9, category="derive", title="The GPUs' electricity bill",
    prompt=("{n_gpus:,} GPUs each draw {watts} W for {days} days, around the clock. At "
            "${usd_per_kwh} per kWh, what does the GPUs' own electricity cost in dollars "
            "(no cooling or facility overhead)?"),
    notes=("H100 SXM TDP is 700 W (Llama 3 §3.3.1). Multiply by a facility PUE for the whole "
           "data centre. Once you have the answer, set it beside the GPU rental: at $2 per "
           "GPU-hour, 16,384 GPUs for 77 days cost 16,384 x 77 x 24 x $2 = $60.6M."),
    params=dict(n_gpus=16384, watts=700, days=77, usd_per_kwh=0.05),
    vary=_vary_9_9,
    answer_kind=Numeric(unit="$", rel_tol=0.0005),
    reference=_power_cost,
    hints=("Power in kW = GPUs x watts / 1000.",
           "Energy in kWh = kW x days x 24 hours.",
           "Cost = kWh x price."),
    explanation=("{n_gpus:,} GPUs x {watts} W / 1,000 gives the kW; x {days} days x 24 h "
                 "gives the kWh; x ${usd_per_kwh} per kWh gives the dollars. For Llama 3: "
                 "11,468.8 kW x 1,848 h = 21,194,342.4 kWh, so $1,059,717."),
    misconceptions=(
        Misconception(lambda p: _power_cost(p) * 1000,
                      "Watts must be divided by 1,000 to get kW before multiplying by hours."),
        Misconception(lambda p: _power_cost(p) / 24,
                      "That multiplies kW by days; energy in kWh needs hours (x 24)."),
        Misconception(lambda p: _power_cost(p, pue=1.4),
                      "The question asks for the GPUs' own power, without a PUE factor."),
    ),
    sources=("Dubey et al. 2024, arXiv:2407.21783, §3.3.1 (H100 at 700 W TDP)",
             "NVIDIA H100 datasheet (SXM: up to 700 W)"),
)

EXERCISES: tuple[Exercise, ...] = (
    EX_9_1, EX_9_2, EX_9_3, EX_9_4, EX_9_5, EX_9_6, EX_9_7, EX_9_8, EX_9_9,
)
