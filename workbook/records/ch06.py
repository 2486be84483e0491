"""Chapter 6: Tensor parallelism. Records 6.1-6.5."""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Misconception, Numeric
from autograder.template import Earlier
from solutions import tensor_parallel as tp
from workbook.records._models import D_MODELS, SHAPES

MEGATRON = "Shoeybi et al. 2019, Megatron-LM (arXiv:1909.08053), §3 and Figure 4"
GQA = "Ainslie et al. 2023, GQA (arXiv:2305.13245), §2"
RING = "NCCL tests, doc/PERFORMANCE.md (ring AllReduce: 2(n-1)/n x S per rank)"
MEGATRON_CORE_GQA = ("NVIDIA Megatron-LM, megatron/core/transformer/attention.py: "
                     "num_query_groups_per_partition = divide(num_query_groups, tp); TP "
                     "larger than the K/V heads only since PR #2565 (Dec 2025), by splitting "
                     "the QKV weights and all-gathering the projected activations")
NVL72 = ("NVIDIA GB200 NVL72 (2025): 72 Blackwell GPUs in one NVLink domain; HGX/DGX H100: "
         "8 GPUs, 900 GB/s of NVLink per GPU (450 GB/s per direction)")


# -- 6.1 ---------------------------------------------------------------------------------
def _vary_6_1(rng: random.Random) -> dict[str, Any]:
    return dict(d_model=rng.choice(D_MODELS), tp=rng.choice([2, 4, 8, 16]))


EX_6_1 = Exercise(
    id="6.1", chapter=6, category="derive", title="Column-parallel shard shape",
    prompt=("A [d, d] weight matrix with d = {d_model} is split column-parallel over TP = {tp} "
            "GPUs. Each GPU holds a [rows, columns] shard. How many columns does one shard "
            "have?"),
    params=dict(d_model=8192, tp=8),
    vary=_vary_6_1,
    answer_kind=Numeric(unit="columns", rel_tol=0.0, abs_tol=0.5),
    reference=lambda p: tp.column_parallel_shard_shape(p["d_model"], p["d_model"], p["tp"])[1],
    hints=("A column split leaves every row on every GPU.",
           "Only the output dimension is divided among the TP GPUs.",
           "The shard is [d, d / TP]."),
    explanation=("Column-parallel keeps all d = {d_model} rows and gives each GPU d / TP = "
                 "{expected} columns, so in the forward pass each GPU computes its own slice "
                 "of the output without talking to the others. The backward pass does "
                 "communicate: every GPU holds a partial gradient of the shared input, and "
                 "an AllReduce sums them (Megatron's f operator). For attention this is the "
                 "head split: each GPU gets whole heads."),
    misconceptions=(
        Misconception(lambda p: p["d_model"], "That is the number of rows; a column split "
                      "divides the columns."),
        Misconception(lambda p: p["d_model"] ** 2 // p["tp"], "That is the number of "
                      "parameters in the shard (rows x columns); the question asks for columns."),
    ),
    sources=(MEGATRON + ", Eq. (3)",),
)


# -- 6.2 ---------------------------------------------------------------------------------
def _vary_6_2(rng: random.Random) -> dict[str, Any]:
    return dict(tp=rng.choice([2, 4, 8]), d_model=rng.choice(D_MODELS),
                seq_len=rng.choice([1024, 2048, 4096, 8192]), micro_batch=rng.choice([1, 2, 4]))


def _activation_mb(p: Any) -> float:
    return tp.activation_bytes(p["micro_batch"], p["seq_len"], p["d_model"]) / 1e6


def _tensor_mb_if_wrong(p: Any) -> float:
    # With TP = 2 the ring sends exactly the tensor size, so this is no misconception.
    if p["tp"] == 2:
        raise ValueError("2 x (N-1)/N = 1 when N = 2")
    return _activation_mb(p)


def _ring_mb(p: Any) -> float:
    return tp.tp_allreduce_mb_per_gpu(p["micro_batch"], p["seq_len"], p["d_model"], p["tp"])


EX_6_2 = Exercise(
    id="6.2", chapter=6, category="derive", title="Data sent per TP AllReduce",
    prompt=("TP = {tp}, hidden size d = {d_model}, sequence length s = {seq_len}, "
            "micro-batch b = {micro_batch}, activations in FP16 (2 bytes). Each TP AllReduce "
            "sums an activation tensor of shape [b x s, d]. With a ring AllReduce, how many "
            "MB (1 MB = 1e6 bytes) does each GPU send in one such AllReduce (it receives "
            "the same amount)?"),
    params=dict(tp=8, d_model=8192, seq_len=4096, micro_batch=1),
    vary=_vary_6_2,
    answer_kind=Numeric(unit="MB", rel_tol=0.005),
    reference=_ring_mb,
    hints=("First find the size of the tensor: b x s x d elements at 2 bytes each.",
           "A ring AllReduce is a reduce-scatter followed by an all-gather.",
           "Each phase sends (N-1)/N of the tensor per GPU: 2 x (N-1)/N x size in total."),
    explanation=("The tensor holds b x s x d x 2 bytes = {micro_batch} x {seq_len} x {d_model} "
                 "x 2 bytes. In a ring AllReduce each GPU sends (N-1)/N of it during the "
                 "reduce-scatter and the same again during the all-gather: "
                 "2 x (N-1)/N x size = {expected} MB per GPU. There is no further halving: "
                 "that figure already counts both phases once."),
    misconceptions=(
        Misconception(lambda p: _ring_mb(p) * 1e6 / 2**20 / 2,
                      "That halves the ring volume and counts in MiB. 2 x (N-1)/N x size is "
                      "already what one GPU sends in one AllReduce; do not divide it again, "
                      "and use MB (1e6 bytes)."),
        Misconception(_tensor_mb_if_wrong, "That is the size of the tensor itself. A ring "
                      "AllReduce sends 2 x (N-1)/N times that per GPU."),
        Misconception(lambda p: 2 * _activation_mb(p), "2 x size is the large-N limit; with "
                      "TP = {tp} the factor is (N-1)/N."),
        Misconception(lambda p: _ring_mb(p) / 2, "That is one phase only (or the ring "
                      "volume halved); AllReduce = reduce-scatter + all-gather, and "
                      "2 x (N-1)/N x size already counts each phase once."),
        Misconception(lambda p: _ring_mb(p) * 1e6 / 2**20,
                      "That is in MiB (2^20 bytes); the question asks for MB (1e6 bytes)."),
    ),
    sources=(RING, MEGATRON),
)


# -- 6.3 ---------------------------------------------------------------------------------
def _vary_6_3(rng: random.Random) -> dict[str, Any]:
    d_model, n_layers = rng.choice(SHAPES)
    return dict(d_model=d_model, n_layers=n_layers, tp=rng.choice([2, 4, 8, 16]))


def _all_layers_gb(p: Any) -> float:
    return float(tp.layer_params_12d2(p["d_model"]) * p["n_layers"] * 2 / 1e9)


EX_6_3 = Exercise(
    id="6.3", chapter=6, category="derive", title="Weight memory per GPU under TP",
    prompt=("Approximate each transformer layer by 12 d^2 parameters (no GQA, a 4d MLP, no "
            "biases) with d = {d_model} and {n_layers} layers, weights in FP16 (2 bytes). "
            "With TP = {tp}, how many GB (1e9 bytes) of layer weights does each GPU hold? "
            "Ignore embeddings."),
    params=dict(d_model=8192, n_layers=80, tp=8),
    vary=_vary_6_3,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: tp.tp_weight_gb_per_gpu(tp.layer_params_12d2(p["d_model"]),
                                                p["n_layers"], p["tp"]),
    hints=("Parameters per layer: 12 x d^2.",
           "Multiply by the number of layers and by 2 bytes.",
           "Every weight matrix is split TP ways, so divide by TP."),
    explanation=("12 x {d_model}^2 parameters per layer x {n_layers} layers x 2 bytes, "
                 "divided by TP = {tp}: {expected} GB per GPU. Each GPU keeps its shard for "
                 "the whole run; unlike ZeRO-3 there is nothing to gather before computing. "
                 "(12 d^2 is only an approximation: a Llama 2 70B layer, with GQA and a "
                 "SwiGLU MLP, has about 856M parameters, not 805M.)"),
    misconceptions=(
        Misconception(_all_layers_gb, "That is the whole model; with TP = {tp} each GPU "
                      "holds 1/{tp} of every layer."),
        Misconception(lambda p: tp.tp_weight_gb_per_gpu(
            tp.layer_params_12d2(p["d_model"]), p["n_layers"], p["tp"]) * 1e9 / 2**30,
            "That is in GiB (2^30 bytes); the question asks for GB (1e9 bytes)."),
        Misconception(lambda p: _all_layers_gb(p) * 2 / p["tp"], "FP16 uses 2 bytes per "
                      "parameter, not 4."),
    ),
    sources=(MEGATRON, "Kaplan et al. 2020 (arXiv:2001.08361), Table 1: 12 d^2 per layer"),
)


# -- 6.4 ---------------------------------------------------------------------------------
_DIVIDES_6_4 = ("", "With TP <= n_kv_heads the K/V heads split like the query heads: "
                "n_kv_heads / TP per GPU.",
                "while TP divides the {n_kv_heads} K/V heads each GPU holds {n_kv_heads} / TP "
                "of them, as the query heads split. Training frameworks require exactly this "
                "(Megatron-Core divides the K/V groups by TP)")
_REPLICATES_6_4 = (" The model is served by an inference engine (vLLM), which copies a K/V "
                   "head to several GPUs when there are fewer K/V heads than GPUs; count the "
                   "copy a GPU holds.",
                   "With TP > n_kv_heads an inference engine such as vLLM replicates each K/V "
                   "head on TP / n_kv_heads GPUs.",
                   "TP = {tp} is more than the {n_kv_heads} K/V heads, and a head is not cut in "
                   "two: vLLM gives each GPU one whole K/V head, replicated on {tp} / "
                   "{n_kv_heads} GPUs. Training frameworks instead require TP to divide the "
                   "K/V heads (Megatron-Core until late 2025); newer Megatron-Core splits each "
                   "K/V head's weights and all-gathers the projected Q, K and V, so no weights "
                   "are copied")


def _scenario_6_4(n_heads: int, n_kv_heads: int, tp_degree: int) -> dict[str, Any]:
    setting, hint, rule = _REPLICATES_6_4 if tp_degree > n_kv_heads else _DIVIDES_6_4
    return dict(n_heads=n_heads, n_kv_heads=n_kv_heads, tp=tp_degree, setting=setting,
                kv_hint=hint, kv_rule=rule.format(tp=tp_degree, n_kv_heads=n_kv_heads))


def _vary_6_4(rng: random.Random) -> dict[str, Any]:
    # (query heads, K/V heads) of GQA models: Llama 3 8B and Mistral 7B (32, 8), Llama 2/3 70B
    # and Qwen2.5-72B (64, 8), Llama 3 405B (128, 8), Qwen2.5-14B/32B (40, 8), Qwen2.5-7B
    # (28, 4), Gemma 2 9B (16, 8), Gemma 2 27B (32, 16), ChatGLM2-6B (32, 2), and the
    # course's (48, 4) and (96, 8). TP divides the query heads and divides, or is a multiple
    # of, the K/V heads.
    n_heads, n_kv_heads = rng.choice([(32, 8), (64, 8), (128, 8), (40, 8), (28, 4), (16, 8),
                                      (32, 16), (32, 2), (48, 4), (96, 8)])
    return _scenario_6_4(n_heads, n_kv_heads, rng.choice(
        [t for t in (2, 4, 8, 16) if n_heads % t == 0
         and (n_kv_heads % t == 0 or t % n_kv_heads == 0)]))


def _fractional_kv_heads(p: Any) -> float:
    # Only a misconception when it differs from the right answer (TP > n_kv_heads).
    if p["tp"] <= p["n_kv_heads"]:
        raise ValueError("n_kv_heads / tp is the right answer here")
    return float(p["n_kv_heads"] / p["tp"])


EX_6_4 = Exercise(
    id="6.4", chapter=6, category="trace", title="Attention heads per GPU with GQA",
    prompt=("A model uses grouped-query attention with {n_heads} query heads and {n_kv_heads} "
            "key/value heads. Attention is split over TP = {tp} GPUs by whole heads.{setting} "
            "How many distinct K/V heads does each GPU hold?"),
    params=_scenario_6_4(128, 8, 8),  # Llama 3 405B (Table 3)
    vary=_vary_6_4,
    answer_kind=Numeric(unit="heads", rel_tol=0.0, abs_tol=0.01),
    reference=lambda p: tp.kv_heads_per_gpu(p["n_kv_heads"], p["tp"]),
    hints=("Query heads split as n_heads / TP. Do K/V heads split the same way?",
           "A head is never cut in two: it lives whole on a GPU.",
           "{kv_hint}"),
    explanation=("Each GPU gets {n_heads} / {tp} query heads. The K/V projections are "
                 "column-parallel too: {kv_rule}. Answer: {expected}. The query heads on a "
                 "GPU are exactly the ones that share its K/V heads, so the GQA grouping "
                 "stays local and attention itself needs no communication."),
    misconceptions=(
        Misconception(_fractional_kv_heads, "A K/V head cannot be split "
                      "across GPUs; with more GPUs than K/V heads, each head is replicated."),
        Misconception(lambda p: p["n_kv_heads"], "K/V projections are split across the TP "
                      "GPUs as well; they are not kept whole on every GPU."),
        Misconception(lambda p: p["n_heads"] // p["tp"], "That is the number of query heads "
                      "per GPU; the question asks about K/V heads."),
    ),
    sources=(GQA, MEGATRON, MEGATRON_CORE_GQA,
             "vLLM QKVParallelLinear (K/V heads replicated when TP > n_kv)"),
)


# -- 6.5 ---------------------------------------------------------------------------------
#: H100 NVLink, per direction (900 GB/s per GPU in both directions together)
H100_NVLINK_GB_PER_S = 450.0


def _params_6_5(n_layers: int, allreduce_ms: float, compute_ms: float) -> dict[str, Any]:
    """The numbers, and the MB a ring AllReduce of that duration sends per GPU on H100."""
    return dict(n_layers=n_layers, allreduce_ms=allreduce_ms, compute_ms=compute_ms,
                sent_mb=allreduce_ms * 1e-3 * H100_NVLINK_GB_PER_S * 1e3)


def _vary_6_5(rng: random.Random) -> dict[str, Any]:
    return _params_6_5(rng.choice([32, 40, 60, 80, 96]),
                       rng.choice([0.05, 0.1, 0.15, 0.26, 0.4]),
                       rng.choice([150.0, 200.0, 300.0, 450.0, 600.0]))


def _comm_ms(p: Any) -> float:
    return float(tp.tp_allreduces_per_step(p["n_layers"]) * p["allreduce_ms"])


EX_6_5 = Exercise(
    id="6.5", chapter=6, category="derive", title="TP communication overhead",
    prompt=("A model with {n_layers} layers runs with Megatron-style TP inside one NVLink "
            "domain. One TP AllReduce takes {allreduce_ms} ms. The forward plus backward "
            "compute of one micro-batch takes {compute_ms} ms, and no communication overlaps "
            "it. Count every TP AllReduce of that forward and backward pass. What is the TP "
            "communication time as a percentage of the compute time?"),
    params={**_params_6_5(80, 0.26, 300.0),  # 0.26 ms: 6.2's AllReduce on H100 NVLink
            "sent_mb": Earlier(EX_6_2.expected(), "6.2", "MB")},
    vary=_vary_6_5,
    answer_kind=Numeric(unit="%", rel_tol=0.005),
    reference=lambda p: tp.tp_comm_overhead_percent(
        tp.tp_allreduces_per_step(p["n_layers"]), p["allreduce_ms"], p["compute_ms"]),
    notes=("{allreduce_ms} ms is what sending {sent_mb:.0f} MB per GPU takes at H100 NVLink's "
           "450 GB/s per direction, before latency."),
    hints=("How many AllReduces does one layer need in the forward pass? And in the backward?",
           "Megatron: 2 forward (after attention and after the MLP) + 2 backward = 4 per layer.",
           "Overhead = layers x 4 x time per AllReduce / compute time x 100."),
    explanation=("{n_layers} layers x 4 AllReduces x {allreduce_ms} ms, divided by "
                 "{compute_ms} ms of compute: {expected} %. Each AllReduce sits between two "
                 "dependent matrix multiplies, so it is on the critical path unless the "
                 "implementation splits the GEMMs to overlap it; this is why TP stays inside "
                 "the NVLink domain: 8 GPUs on an HGX/DGX H100 server, up to 72 on a GB200 "
                 "NVL72 rack."),
    misconceptions=(
        Misconception(lambda p: 50 * _comm_ms(p) / p["compute_ms"], "That counts the forward "
                      "pass only; the backward pass needs 2 more AllReduces per layer."),
        Misconception(lambda p: 100 * _comm_ms(p) / (p["compute_ms"] + _comm_ms(p)),
                      "That is a share of the whole step (compute + communication); the "
                      "question asks relative to the compute time."),
    ),
    sources=(MEGATRON, NVL72),
)

EXERCISES: tuple[Exercise, ...] = (EX_6_1, EX_6_2, EX_6_3, EX_6_4, EX_6_5)
