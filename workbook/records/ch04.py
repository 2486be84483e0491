"""Chapter 4: Communication overhead: gradient AllReduce time, overlap with the backward
pass, the inter-node bottleneck, and the communication/compute ratio."""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Function, Misconception, Numeric
from autograder.kinds.base import Params
from autograder.template import Earlier
from solutions import overlap as ov

NCCL_PERF = ("NVIDIA nccl-tests, doc/PERFORMANCE.md (AllReduce: each rank sends 2(n-1)/n x S; "
             "busbw = algbw x 2(n-1)/n)")
DDP_PAPER = ("Li et al., 'PyTorch Distributed: Experiences on Accelerating Data Parallel "
             "Training', PVLDB 13(12), 2020, §3.2.2-3.2.3 (gradient bucketing, overlapping "
             "AllReduce with the backward pass)")
DDP_DOCS = ("PyTorch docs, torch.nn.parallel.DistributedDataParallel (bucket_cap_mb, "
            "default 25)")
GOYAL_COMM = ("Goyal et al., 'Accurate, Large Minibatch SGD', arXiv:1706.02677, 2017, §4 "
              "(three-phase AllReduce: sum inside each server, AllReduce across servers, "
              "broadcast inside each server)")
H100_WHITEPAPER = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 989.4 "
                   "dense BF16 TFLOPS)")
PALM_MFU = "Chowdhery et al., 'PaLM', arXiv:2204.02311, 2022, Appendix B (model FLOPs utilisation)"


# -- 4.1 --------------------------------------------------------------------------------

EX_4_1 = Exercise(
    id="4.1", chapter=4, category="derive", title="Gradient AllReduce of a large model",
    prompt=("A {params_billion}B-parameter model keeps FP16 gradients (2 bytes per parameter; "
            "1 GB = 10^9 bytes). {n_gpus} GPUs all-reduce them in one ring in which every "
            "GPU sends to its neighbour at {link_gb_per_s} GB/s in each direction. Ignoring "
            "latency, how many ms does the AllReduce take?"),
    notes=("A hypothetical fabric: NVLink domains are 8 GPUs in a DGX/HGX server (H100: "
           "900 GB/s total NVLink bandwidth per GPU, i.e. 450 GB/s per direction; A100: 600 "
           "GB/s total, 300 GB/s per direction) and 72 GPUs in a GB200 NVL72 rack (1.8 TB/s "
           "total per GPU). Here every ring link is assumed to carry the stated figure per "
           "direction."),
    params=dict(params_billion=10.0, n_gpus=64, link_gb_per_s=600.0),
    vary=lambda rng: dict(params_billion=rng.choice([1.0, 7.0, 10.0, 13.0, 70.0]),
                          n_gpus=rng.choice([8, 16, 32, 64, 128]),
                          link_gb_per_s=rng.choice([50.0, 100.0, 300.0, 450.0, 600.0])),
    answer_kind=Numeric(unit="ms", rel_tol=0.0025),
    reference=lambda p: ov.dp_allreduce_time_ms(p["params_billion"], p["n_gpus"],
                                                p["link_gb_per_s"]),
    hints=(
        "First the gradient size S in GB: parameters x 2 bytes.",
        "Each GPU sends 2(N-1)/N x S in a ring AllReduce, all links at once.",
        "T = 2 S (N-1) / (N B); convert seconds to ms.",
    ),
    explanation=(
        "S = {params_billion} x 10^9 x 2 B. Each GPU sends 2 x ({n_gpus}-1)/{n_gpus} x "
        "{params_billion} x 2 GB at "
        "{link_gb_per_s} GB/s per direction, so T = {expected} ms. The factor 2(N-1)/N is "
        "almost 2, so the time hardly depends on N; it is set by the gradient size and the "
        "per-direction link speed."
    ),
    misconceptions=(
        Misconception(lambda p: 1000 * 2 * ov.gradient_gb(p["params_billion"])
                      / p["link_gb_per_s"],
                      "2S/B is the many-GPU limit; use the exact factor 2(N-1)/N."),
        Misconception(lambda p: ov.dp_allreduce_time_ms(p["params_billion"], p["n_gpus"],
                                                        p["link_gb_per_s"]) / 2,
                      "That is one phase (reduce-scatter or all-gather); the AllReduce runs "
                      "both."),
        Misconception(lambda p: ov.dp_allreduce_time_ms(p["params_billion"], p["n_gpus"],
                                                        p["link_gb_per_s"], bytes_per_grad=4),
                      "The gradients are FP16: 2 bytes per parameter, not 4."),
        Misconception(lambda p: ov.dp_allreduce_time_ms(p["params_billion"], p["n_gpus"],
                                                        p["link_gb_per_s"]) / 1000,
                      "That is in seconds; the answer is asked in ms."),
    ),
    sources=(NCCL_PERF,),
)


# -- 4.2 --------------------------------------------------------------------------------

def _overlap_pct(p: Params) -> float:
    per_layer_ms = p["backward_ms"] / p["n_layers"]
    return 100 * ov.overlapped_comm_fraction(p["n_layers"], p["comm_per_layer_ms"],
                                             per_layer_ms)


def _vary_4_2(rng: random.Random) -> dict[str, Any]:
    # Layer counts of published models (GPT-2/3, Llama 1-3, Mistral, Falcon, ...).
    n_layers = rng.choice([24, 28, 32, 36, 40, 48, 60, 64, 70, 80, 96, 126])
    per_layer_ms = rng.choice([2.0, 4.0, 5.0])
    # Some variants have more communication than computation per layer.
    return dict(n_layers=n_layers, backward_ms=n_layers * per_layer_ms,
                comm_per_layer_ms=per_layer_ms * rng.choice([0.1, 0.3, 0.5, 0.8, 1.1, 1.2,
                                                             1.25, 1.4, 1.5, 1.75, 2.0,
                                                             2.5, 3.0]))


EX_4_2 = Exercise(
    id="4.2", chapter=4, category="derive", title="How much AllReduce hides behind backward",
    prompt=("The backward pass takes {backward_ms} ms over {n_layers} equal layers. Each "
            "layer's gradients form one bucket whose AllReduce takes {comm_per_layer_ms} ms. "
            "Under the model in the notes, what percentage of the total AllReduce time is "
            "hidden behind the backward computation?"),
    notes=("Overlap model (as in PyTorch DDP): a bucket's AllReduce starts as soon as its "
           "gradients are ready **and** the previous AllReduce has finished (one "
           "communication stream, buckets in the order they become ready). Communication "
           "does not slow the computation. The backward pass produces the last layer's "
           "gradients first, so the bucket that finishes last belongs to the first layer."),
    params=dict(n_layers=40, backward_ms=200.0, comm_per_layer_ms=1.5),
    vary=_vary_4_2,
    answer_kind=Numeric(unit="%", rel_tol=0.005),
    reference=_overlap_pct,
    hints=(
        "Compare one layer's compute time with one bucket's AllReduce time.",
        "If an AllReduce is shorter than the next layer's backward, it finishes before the "
        "next bucket is ready; only the final bucket sticks out after the backward ends.",
        "If it is longer, the AllReduces queue up: the exposed time is "
        "c + (L-1)(c - b). Hidden share = 1 - exposed / (L c).",
    ),
    explanation=(
        "Per layer, compute b = {backward_ms} / {n_layers} ms and communication c = "
        "{comm_per_layer_ms} ms. With c <= b every AllReduce ends before the next bucket is "
        "ready, so only the last one (c) is exposed; with c > b they queue and "
        "c + (L-1)(c - b) is exposed. Hidden share: 1 - exposed / (L c) = {expected} %. With "
        "the printed numbers only the last 1.5 ms of the 60 ms of communication is exposed: "
        "1.5 ms added to a 200 ms backward. Bucketing is done by PyTorch DDP (bucket_cap_mb, "
        "default 25), "
        "not by NCCL, which only executes each AllReduce it is given."
    ),
    misconceptions=(
        Misconception(lambda p: 100 - _overlap_pct(p),
                      "That is the exposed share; the question asks for the hidden share."),
        Misconception(lambda p: 100 * (1 - p["n_layers"] * p["comm_per_layer_ms"]
                                       / p["backward_ms"]),
                      "That compares the total communication with the backward time; the "
                      "overlap is decided bucket by bucket."),
    ),
    sources=(DDP_PAPER, DDP_DOCS),
)


# -- 4.3 --------------------------------------------------------------------------------

def _inter_node_ms(p: Params) -> float:
    return ov.inter_node_allreduce_time_ms(ov.gradient_gb(p["params_billion"]), p["n_nodes"],
                                           p["ib_gb_per_s"], links_per_node=1)


EX_4_3 = Exercise(
    id="4.3", chapter=4, category="derive", title="The inter-node step of a hierarchical AllReduce",
    prompt=("{n_nodes} nodes of {gpus_per_node} GPUs train a {params_billion}B-parameter "
            "model with FP16 gradients (2 bytes per parameter). The AllReduce is done in "
            "three phases: sum inside each node over NVLink, AllReduce the node sums across "
            "nodes in a ring, broadcast inside each node. Each node sends its cross-node "
            "traffic through **one** InfiniBand link of {ib_gb_per_s} GB/s per direction. "
            "Ignoring latency, how many ms does the cross-node phase alone take?"),
    notes=("This is the three-phase scheme of Goyal et al. (2017, §4). Real servers have one "
           "network link per GPU (a DGX H100 has 8 x 400 Gb/s = 8 x 50 GB/s); when each GPU "
           "reduces its own 1/8 of the gradient over its own link, the cross-node phase "
           "moves 8 times less per link."),
    params=dict(params_billion=10.0, n_nodes=8, gpus_per_node=8, ib_gb_per_s=100.0),
    vary=lambda rng: dict(params_billion=rng.choice([1.0, 1.3, 2.7, 7.0, 8.0, 10.0, 13.0,
                                                     20.0, 30.0]),
                          n_nodes=rng.choice([4, 8, 12, 16, 24, 32, 64]),
                          gpus_per_node=8,
                          # HDR 200 Gb/s, NDR 400 Gb/s, two bonded NDR links
                          ib_gb_per_s=rng.choice([25.0, 50.0, 100.0])),
    answer_kind=Numeric(unit="ms", rel_tol=0.01),
    reference=_inter_node_ms,
    hints=(
        "After the in-node sum, each node holds one full gradient S. How many members does "
        "the cross-node ring have?",
        "The ring has one member per node: n = number of nodes, not number of GPUs.",
        "T = 2 S (n-1) / (n B) with n = nodes and B = the IB link's per-direction bandwidth.",
    ),
    explanation=(
        "S = {params_billion} x 2 GB; the ring has n = {n_nodes} members, one per node, each "
        "sending 2(n-1)/n x S through one {ib_gb_per_s} GB/s link: {expected} ms. The two "
        "in-node phases are not free: over NVLink at 600 GB/s per direction (the 4.1 "
        "fabric) they move (g-1)/g x S each, about 58 ms for the canonical 20 GB. With one "
        "50 GB/s link per GPU (8 rails), the cross-node phase of the canonical case drops "
        "from 350 ms to 2 x 2.5 GB x 7/8 / 50 GB/s = 87.5 ms."
    ),
    misconceptions=(
        Misconception(lambda p: ov.dp_allreduce_time_ms(
            p["params_billion"], p["n_nodes"] * p["gpus_per_node"], p["ib_gb_per_s"]),
            "The cross-node ring has one member per node ({n_nodes}), not one per GPU."),
        Misconception(lambda p: _inter_node_ms(p) / 2,
                      "That is one phase of the ring; the cross-node AllReduce is a "
                      "reduce-scatter plus an all-gather."),
        Misconception(lambda p: ov.inter_node_allreduce_time_ms(
            ov.gradient_gb(p["params_billion"]), p["n_nodes"], p["ib_gb_per_s"],
            links_per_node=p["gpus_per_node"]),
            "That assumes one link per GPU; the question gives each node a single link."),
        Misconception(lambda p: 1000 * 2 * ov.gradient_gb(p["params_billion"])
                      / p["ib_gb_per_s"],
                      "2S/B is the many-node limit; with n = {n_nodes} the factor is "
                      "2(n-1)/n."),
    ),
    sources=(GOYAL_COMM, NCCL_PERF),
)


# -- 4.4 --------------------------------------------------------------------------------

def _ratio_4_4(p: Params) -> float:
    compute_ms = ov.compute_time_ms(p["flops_tflop"], p["peak_tflops"], p["mfu"])
    return ov.comm_to_compute_ratio(p["comm_ms"], compute_ms)


EX_4_4 = Exercise(
    id="4.4", chapter=4, category="trace", title="Communication over compute",
    prompt=("One training step makes each GPU execute {flops_tflop} TFLOP (forward and "
            "backward). The GPU peaks at {peak_tflops} dense BF16 TFLOPS and runs at "
            "{mfu:.0%} MFU. The gradient AllReduce takes {comm_ms} ms and does not overlap "
            "with compute. What is the ratio of communication time to compute time?"),
    notes=("Give a plain number (for example 0.8). With no overlap, the step lasts compute + "
           "communication, so the effective MFU becomes MFU x T_compute / (T_compute + "
           "T_comm)."),
    params=dict(flops_tflop=120.0, peak_tflops=989.4, mfu=0.5,
                comm_ms=Earlier(350.0, "4.3", "ms")),  # 4.3's cross-node phase
    vary=lambda rng: dict(flops_tflop=rng.choice([60.0, 90.0, 120.0, 180.0, 240.0, 360.0,
                                                  480.0]),
                          peak_tflops=rng.choice([312.0, 989.4]),
                          mfu=rng.choice([0.3, 0.35, 0.4, 0.45, 0.5]),
                          comm_ms=rng.choice([50.0, 87.5, 175.0, 350.0])),
    answer_kind=Numeric(unit="", rel_tol=0.003),
    reference=_ratio_4_4,
    hints=(
        "Compute time = FLOPs / achieved FLOP/s, and achieved = peak x MFU.",
        "{flops_tflop} TFLOP at {mfu} x {peak_tflops} TFLOPS: divide, and keep the time in ms.",
        "Ratio = T_comm / T_compute.",
    ),
    explanation=(
        "T_compute = {flops_tflop} TFLOP / ({mfu} x {peak_tflops} TFLOPS); ratio = "
        "{comm_ms} ms / T_compute = {expected}. For the canonical numbers T_compute = "
        "242.6 ms and the ratio is 1.44: communication takes longer than compute, and "
        "without overlap the effective MFU falls from 50% to 50% x 242.6 / (242.6 + "
        "{comm_ms}) = 20.5%. The cures: overlap (4.2), fewer bytes across the slow links "
        "(more links per node, tensor parallelism inside the node) or more compute per "
        "AllReduce "
        "(gradient accumulation)."
    ),
    misconceptions=(
        Misconception(lambda p: 1 / _ratio_4_4(p),
                      "That is compute over communication; the question asks the inverse."),
        Misconception(lambda p: p["comm_ms"] / (1000 * p["flops_tflop"] / p["peak_tflops"]),
                      "The GPU does not run at its peak: divide by peak x MFU."),
        Misconception(lambda p: ov.effective_mfu_no_overlap(
            p["mfu"], ov.compute_time_ms(p["flops_tflop"], p["peak_tflops"], p["mfu"]),
            p["comm_ms"]),
            "That is the effective MFU; the question asks for T_comm / T_compute."),
    ),
    sources=(H100_WHITEPAPER, PALM_MFU),
)


# -- 4.5 --------------------------------------------------------------------------------

def _cases_4_5(rng: random.Random) -> tuple[float, int, float, float, float]:
    return (rng.choice([0.125, 1.0, 7.0, 10.0, 70.0, 405.0]),
            rng.choice([1, 2, 3, 8, 64, 512, 16384]),
            rng.choice([12.5, 25.0, 50.0, 100.0, 450.0]),
            rng.choice([1.0, 60.0, 120.0, 1000.0]),
            rng.choice([100.0, 156.0, 400.0, 494.7]))


EX_4_5 = Exercise(
    id="4.5", chapter=4, category="build", title="Write comm_compute_ratio",
    prompt=("Write `comm_compute_ratio(params_billion, n_gpus, link_gb_per_s, "
            "flops_per_step_tflop, achieved_tflops)`: the ratio of the gradient AllReduce "
            "time to the compute time of one data-parallel step. The gradients are FP16 "
            "(2 bytes per parameter); the AllReduce is a ring over `n_gpus` GPUs at "
            "`link_gb_per_s` per direction, bandwidth term only; each GPU executes "
            "`flops_per_step_tflop` TFLOP per step at `achieved_tflops` (peak x MFU). For "
            "example, {params_billion}B parameters, {n_gpus} GPUs, {link_gb_per_s} GB/s, "
            "{flops_per_step_tflop} TFLOP at {achieved_tflops} TFLOPS gives 2.333."),
    notes=("Rules: one GPU has nothing to all-reduce, so the ratio is 0. Raise `ValueError` "
           "when `n_gpus` is not a whole number >= 1, or when any of `params_billion`, "
           "`link_gb_per_s`, `flops_per_step_tflop`, `achieved_tflops` is not > 0."),
    params=dict(params_billion=7.0, n_gpus=16, link_gb_per_s=50.0,
                flops_per_step_tflop=90.0, achieved_tflops=400.0),
    vary=lambda rng: dict(params_billion=7.0, n_gpus=16, link_gb_per_s=50.0,
                          flops_per_step_tflop=90.0, achieved_tflops=400.0),
    answer_kind=Function(
        function_name="comm_compute_ratio",
        signature=("(params_billion, n_gpus, link_gb_per_s, flops_per_step_tflop, "
                   "achieved_tflops)"),
        cases=_cases_4_5,
        edge_cases=(
            (7.0, 16, 50.0, 90.0, 400.0),      # the worked example: 2.333
            (7.0, 1, 50.0, 90.0, 400.0),       # one GPU: 0
            (7.0, 2, 50.0, 90.0, 400.0),       # two GPUs: factor 2(N-1)/N = 1
            (10.0, 0, 100.0, 120.0, 494.7),    # no GPUs: ValueError
            (10.0, 8, 0.0, 120.0, 494.7),      # zero bandwidth: ValueError
            (10.0, 8, -100.0, 120.0, 494.7),   # negative bandwidth: ValueError
            (10.0, 8, 100.0, 0.0, 494.7),      # no compute: ValueError
            (10.0, 8, 100.0, 120.0, 0.0),      # zero throughput: ValueError
            (-1.0, 8, 100.0, 120.0, 494.7),    # negative model: ValueError
        ),
    ),
    reference=lambda p: ov.comm_compute_ratio,
    hints=(
        "Two times, same unit: the AllReduce time and the compute time.",
        "T_comm = 2 S (N-1) / (N B) with S = 2 x params_billion GB.",
        "T_compute = flops_per_step_tflop / achieved_tflops (seconds). Validate inputs first; "
        "N = 1 gives T_comm = 0.",
    ),
    explanation=(
        "S = 2 x {params_billion} = 14 GB; T_comm = 2 x 14 x 15/16 / {link_gb_per_s} = "
        "0.525 s; T_compute = {flops_per_step_tflop} / {achieved_tflops} = 0.225 s; ratio "
        "2.333. "
        "Naming the throughput `achieved_tflops` (not the GPU's peak) keeps the MFU out of "
        "the function: pass peak x MFU."
    ),
    sources=(NCCL_PERF, PALM_MFU),
)

EXERCISES: tuple[Exercise, ...] = (EX_4_1, EX_4_2, EX_4_3, EX_4_4, EX_4_5)
