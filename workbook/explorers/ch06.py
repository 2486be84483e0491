"""Chapter 6 · Tensor parallelism: split shapes, compute against TP traffic, and an explorer.

The timing model is deliberately small (and stated in every figure):

* compute per layer, forward plus backward, without recomputation:
  ``72 b s d^2 (1 + s / (6 d))`` FLOPs (Narayanan et al. 2021, SC21, §5.1, whose 96 counts
  the extra forward pass of recomputation), split over TP GPUs and run at 40 % of the
  H100's 989.4 TFLOPS dense BF16 peak (the Llama 3 405B run reached 38-43 %);
* communication per layer: 4 ring AllReduces of the ``[b s, d]`` activation (Megatron-LM,
  Shoeybi et al. 2019, §3), bandwidth term only, at the slowest link in the ring: NVLink
  inside one 8-GPU server, InfiniBand NDR (50 GB/s per GPU each way) once the group
  leaves it.
"""

from __future__ import annotations

import html
import math
from typing import Any

from autograder.prediction import Prediction
from autograder.units import format_rounded as readout
from solutions import hardware as hw
from solutions import models
from solutions import tensor_parallel as tp
from solutions.collectives import ring_allreduce_bandwidth_time_s
from solutions.overlap import compute_time_ms
from solutions.performance import flops as pf
from workbook.explorers.view import themed

GPUS_PER_NODE = hw.H100_SXM.gpus_per_node  # 8 GPUs share one NVLink domain
INTER_NODE = hw.IB_NDR  # one 400 Gb/s NIC per GPU: 50 GB/s each way
ASSUMED_MFU = 0.40
TP_CHOICES = (1, 2, 4, 8, 16, 32)
HEAD_PRESETS: dict[str, tuple[int, int]] = {
    "64 query / 8 K/V heads (Llama 2 70B)": (64, 8),
    "128 query / 8 K/V heads (Llama 3 405B)": (128, 8),
    "32 query / 8 K/V heads (Llama 3 8B)": (32, 8),
    "40 query / 40 K/V heads (Llama 2 13B, no GQA)": (40, 40),
}

PREDICTION = Prediction(
    key="ch06",
    question=("A layer's activation of 4096 tokens x 8192 values in FP16 is summed over TP = 4 "
              "GPUs with a ring AllReduce. How many MB (1 MB = 1e6 bytes) does each GPU send "
              "in that one AllReduce: closer to 25, 100 or 400?"),
    actual=lambda: tp.tp_allreduce_mb_per_gpu(1, 4096, 8192, 4),
    unit="MB",
    explanation=("The tensor holds 4096 x 8192 x 2 bytes = 67.1 MB, and a ring sends 2 x 3/4 "
                 "of it per GPU: 100.7 MB. That volume does not shrink as TP grows, while "
                 "each GPU's share of the work does; four such AllReduces per layer sit on "
                 "the critical path, which is why TP stays inside one NVLink domain: 8 GPUs "
                 "on an H100 server, up to 72 on a GB200 NVL72 rack."),
    reflection=(
        "Tensor parallelism's AllReduce volume does not shrink as TP grows. Where would you place"
        " a TP group of 16 on 8-GPU servers, and what would you expect to happen to the step "
        "time?"),
)


# -- the model behind the pictures --------------------------------------------------------
def gpt_layer(d_model: int) -> models.Architecture:
    """One GPT layer as Narayanan et al. count it: multi-head attention of width d (the head
    count does not change the FLOPs), a 4d GeLU MLP, no biases."""
    return models.Architecture("GPT layer", n_layers=1, d_model=d_model, n_heads=1,
                               n_kv_heads=1, d_ffn=4 * d_model, vocab_size=1, ffn="gelu")


def layer_flops(d_model: int, seq_len: int, micro_batch: int = 1) -> float:
    """Forward + backward FLOPs of one layer, no recomputation, full score matrix:
    3 forwards of :func:`solutions.performance.flops.layer_flops_per_token` for each of the
    ``b s`` tokens, which is ``72 b s d^2 (1 + s / (6 d))``."""
    tp.activation_bytes(micro_batch, seq_len, d_model)  # validates the three sizes
    per_token = pf.layer_flops_per_token(gpt_layer(d_model), seq_len, moe_layer=False,
                                         causal=False)
    return 3.0 * per_token * micro_batch * seq_len


def spans_servers(tp_degree: int, across_servers: bool = False) -> bool:
    """True when the TP ring leaves one NVLink server (more GPUs than a server holds)."""
    return tp_degree > 1 and (across_servers or tp_degree > GPUS_PER_NODE)


def ring_link_gb_per_s(tp_degree: int, nvlink_gb_per_s: float,
                       across_servers: bool = False) -> float:
    """Per-direction bandwidth the ring runs at: its slowest link."""
    if spans_servers(tp_degree, across_servers):
        return min(nvlink_gb_per_s, INTER_NODE.per_direction_gb_per_s)
    return nvlink_gb_per_s


def layer_times_ms(d_model: int, seq_len: int, tp_degree: int, nvlink_gb_per_s: float = 450.0,
                   across_servers: bool = False, micro_batch: int = 1) -> tuple[float, float]:
    """(compute ms, TP communication ms) of one layer's forward and backward pass."""
    flops = layer_flops(d_model, seq_len, micro_batch) / tp_degree
    compute = compute_time_ms(flops / 1e12, hw.H100_SXM.bf16_dense_tflops, ASSUMED_MFU)
    message_gb = tp.activation_bytes(micro_batch, seq_len, d_model) / 1e9
    link = ring_link_gb_per_s(tp_degree, nvlink_gb_per_s, across_servers)
    one_ms = 1000.0 * ring_allreduce_bandwidth_time_s(message_gb, tp_degree, link)
    return compute, tp.tp_allreduces_per_layer() * one_ms


def tp_problems(d_model: int, tp_degree: int, n_heads: int, n_kv_heads: int,
                across_servers: bool = False) -> list[str]:
    """Everything wrong with a TP layout, in words (an empty list when it is sound)."""
    problems: list[str] = []
    if d_model % tp_degree:
        problems.append(f"✘ d = {d_model} is not divisible by TP = {tp_degree}: the weight "
                        "matrices cannot be split evenly.")
    if n_heads % tp_degree:
        problems.append(f"✘ {n_heads} query heads do not divide among TP = {tp_degree} GPUs: "
                        "a head cannot be cut in two.")
    try:
        tp.kv_heads_per_gpu(n_kv_heads, tp_degree)
    except ValueError:
        problems.append(f"✘ {n_kv_heads} K/V heads do not divide evenly among TP = "
                        f"{tp_degree} GPUs.")
    if tp_degree > GPUS_PER_NODE:
        servers = math.ceil(tp_degree / GPUS_PER_NODE)
        problems.append(f"✘ TP = {tp_degree} spans {servers} {GPUS_PER_NODE}-GPU servers: "
                        "every AllReduce crosses the inter-node network.")
    elif across_servers and tp_degree > 1:
        problems.append(f"✘ The TP group of {tp_degree} GPUs is spread across servers: every "
                        "AllReduce runs at the inter-node speed.")
    return problems


# -- pictures -----------------------------------------------------------------------------
def _draw_split(ax: Any, rows: int, cols: int, tp_degree: int, by_columns: bool) -> None:
    from matplotlib.patches import Rectangle

    shape = (tp.column_parallel_shard_shape(rows, cols, tp_degree) if by_columns
             else tp.row_parallel_shard_shape(rows, cols, tp_degree))
    for gpu in range(tp_degree):
        x, y = (gpu / tp_degree, 0.0) if by_columns else (0.0, 1 - (gpu + 1) / tp_degree)
        w, h = (1 / tp_degree, 1.0) if by_columns else (1.0, 1 / tp_degree)
        ax.add_patch(Rectangle((x, y), w, h, facecolor=f"C{gpu % 10}", alpha=0.35,
                               edgecolor="black", hatch="//" if gpu % 2 else ""))
        if tp_degree <= 8:
            ax.text(x + w / 2, y + h / 2, f"GPU {gpu}", ha="center", va="center", fontsize=8,
                    rotation=90 if by_columns and tp_degree > 4 else 0)
    kind = "Column-parallel" if by_columns else "Row-parallel"
    ax.set_title(f"{kind}: each GPU holds [{shape[0]}, {shape[1]}]", fontsize=10)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(f"{cols} output columns")
    ax.set_ylabel(f"{rows} input rows")


def split_shapes_figure(d_model: int = 8192, tp_degree: int = 8) -> Any:
    """A ``[d, d]`` weight cut column-wise and row-wise over TP GPUs: two axes, TP patches each."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4))
    _draw_split(left, d_model, d_model, tp_degree, by_columns=True)
    _draw_split(right, d_model, d_model, tp_degree, by_columns=False)
    fig.suptitle(f"A [{d_model}, {d_model}] weight over TP = {tp_degree} GPUs. Column split: "
                 "no forward communication. Row split: partial sums, one AllReduce.",
                 fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return themed(fig)


def layer_time_figure(d_model: int = 8192, seq_len: int = 4096,
                      tp_values: tuple[int, ...] = TP_CHOICES, nvlink_gb_per_s: float = 450.0,
                      across_servers: bool = False, highlight: int | None = None) -> Any:
    """Stacked bars per TP degree: compute ms (bottom) and TP communication ms (top)."""
    import matplotlib.pyplot as plt

    times = [layer_times_ms(d_model, seq_len, t, nvlink_gb_per_s, across_servers)
             for t in tp_values]
    compute = [c for c, _ in times]
    comm = [m for _, m in times]
    xs = list(range(len(tp_values)))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    ax.bar(xs, compute, color="C0", label="compute (fwd + bwd)")
    ax.bar(xs, comm, bottom=compute, color="C3", hatch="xx", label="TP AllReduces (4 per layer)")
    for x, c, m in zip(xs, compute, comm, strict=True):
        label = f"comm {readout(100 * m / c, '%')}" if m else "no TP comm"
        ax.text(x, c + m, label, ha="center", va="bottom", fontsize=8)
    top = max(c + m for c, m in times)
    ax.set_ylim(0, 1.25 * top)
    labels = [f"TP={t}" + ("\n(yours)" if t == highlight else "") for t in tp_values]
    ax.set_xticks(xs)
    ax.set_xticklabels(labels)
    boundary = [i for i, t in enumerate(tp_values) if t > GPUS_PER_NODE]
    if boundary and boundary[0] > 0:
        ax.axvline(boundary[0] - 0.5, color="black", linestyle="--")
        ax.text(boundary[0] - 0.45, 0.6 * top, "TP group leaves\nthe 8-GPU server",
                fontsize=8)
    ax.set_ylabel("ms per layer (one micro-batch)")
    where = "spread across servers" if across_servers else "packed 8 per server"
    ax.set_title(f"d = {d_model}, s = {seq_len}, b = 1, H100 at {ASSUMED_MFU:.0%} MFU; "
                 f"NVLink {nvlink_gb_per_s:g} GB/s, IB {INTER_NODE.per_direction_gb_per_s:g} "
                 f"GB/s per direction; GPUs {where}", fontsize=9)
    ax.legend(loc="upper center", fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return themed(fig)


# -- the explorer -------------------------------------------------------------------------
def status_html(d_model: int, seq_len: int, tp_degree: int, heads: tuple[int, int],
                nvlink_gb_per_s: float, across_servers: bool) -> str:
    """The explorer's verdict in words: failures first, then the figures that hold."""
    n_heads, n_kv = heads
    problems = tp_problems(d_model, tp_degree, n_heads, n_kv, across_servers)
    lines = problems or ["✔ A sound layout: every matrix and head splits evenly inside one "
                         "server."]
    compute, comm = layer_times_ms(d_model, seq_len, tp_degree, nvlink_gb_per_s,
                                   across_servers)
    mb = tp.tp_allreduce_mb_per_gpu(1, seq_len, d_model, tp_degree)
    lines.append(f"Each AllReduce: {readout(mb, 'MB')} sent per GPU. Per layer: compute "
                 f"{compute:.2f} "
                 f"ms, TP communication {readout(comm, 'ms')} "
                 f"({readout(100 * comm / compute, '%')} of "
                 "compute).")
    if n_heads % tp_degree == 0 and (n_kv % tp_degree == 0 or tp_degree % n_kv == 0):
        copies = tp.kv_head_replicas(n_kv, tp_degree)
        note = f", each K/V head copied on {copies} GPUs" if copies > 1 else ""
        lines.append(f"Per GPU: {n_heads // tp_degree} query heads and "
                     f"{tp.kv_heads_per_gpu(n_kv, tp_degree)} K/V head(s){note}.")
    return "<br>".join(html.escape(line) for line in lines)


def explorer() -> Any:
    """Sliders for d, s, TP and NVLink bandwidth; split shapes and per-layer times redraw."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View

    controls = dict(
        d_model=w.IntSlider(value=6144, min=1024, max=16384, step=1024,
                            description="hidden size d", style=STYLE),
        seq_len=w.IntSlider(value=2048, min=1024, max=32768, step=1024,
                            description="sequence length s", style=STYLE),
        tp_degree=w.IntSlider(value=4, min=1, max=32, description="TP degree", style=STYLE),
        nvlink=w.FloatSlider(value=450.0, min=100.0, max=900.0, step=50.0,
                             description="NVLink GB/s each way", style=STYLE),
        heads=w.Dropdown(options=list(HEAD_PRESETS), description="attention heads",
                         style=STYLE),
        placement=w.ToggleButtons(options=["one server", "across servers"],
                                  description="placement", style=STYLE),
    )
    view = View("ch06", [list(controls.values())])

    def redraw() -> None:
        v = {name: control.value for name, control in controls.items()}
        d_model, tp_degree = v["d_model"], v["tp_degree"]
        across = v["placement"] == "across servers"
        status = status_html(d_model, v["seq_len"], tp_degree, HEAD_PRESETS[v["heads"]],
                             v["nvlink"], across)
        figures = [split_shapes_figure(d_model, tp_degree)] if d_model % tp_degree == 0 else []
        values = tuple(sorted(set(TP_CHOICES) | {tp_degree}))
        figures.append(layer_time_figure(d_model, v["seq_len"], values, v["nvlink"], across,
                                         tp_degree))
        view.show(status, figures)

    view.watch(redraw)
    box = view.box
    box.controls = controls  # lets tests (and curious learners) move the sliders
    return box
