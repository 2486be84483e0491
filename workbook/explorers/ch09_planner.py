"""Chapter 9 explorer, part 2: the 5D planner as sliders, with its verdicts in words.

Everything here is a view on :mod:`solutions.planner`, :mod:`solutions.planner.memory` and
:mod:`solutions.planner.traffic`: a :class:`PlannerSettings` record holds what the widgets show
(the layout itself as a :class:`solutions.layout.ParallelConfig`, the training software as a
:mod:`solutions.stack` preset),
:func:`planner_messages` lists what is wrong with it (the validator's problems plus a bubble
target), :func:`plan_numbers` gathers the memory, traffic, bubble and cost, and
:func:`planner_figure` draws them. Step time, MFU, days and cost are the step-time model's
prediction for the layout (:func:`solutions.performance.estimate`); ticking "What-if MFU"
replaces the prediction by the MFU slider, and the summary says so.

Communication times assume no overlap: TP+SP runs over NVLink at the per-direction rate
(half the datasheet's two-way total) when TP fits in a node, everything else over one
400 Gb/s NIC per GPU, 50 GB/s each way (the Llama 3 405B RoCE fabric, §3.3.1).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from solutions import hardware, models, planner
from solutions.planner.memory import ParallelConfig, memory_per_gpu
from solutions.planner.traffic import comm_per_step, comm_time_s
from solutions.stack import Stack, stack_named
from workbook.explorers.ch09_speed import speed_line, speed_numbers

#: the software a published layout of another model is judged on
OTHER_MODELS_STACK = "megatron-core-2024"

GPU_COUNTS: tuple[int, ...] = (8, 64, 256, 512, 1024, 2048, 4096, 6144, 8192, 16384)
SEQ_LENS: tuple[int, ...] = (2048, 4096, 8192, 32768, 131072)
BATCHES: tuple[int, ...] = (256, 512, 1024, 1536, 2048, 4096, 15360)
NETWORK_GB_PER_S = hardware.ROCE_400G.per_direction_gb_per_s  # 50 GB/s each way
MEMORY_PARTS: tuple[str, ...] = ("weights", "gradients", "optimizer", "activations")
MODEL_LABELS: dict[str, str] = {arch.name: key for key, arch in models.MODELS.items()}


#: The widgets that set the layout, and the :class:`ParallelConfig` field each one sets.
LAYOUT_CONTROLS: dict[str, str] = {
    "tp": "tp", "cp": "cp", "pp": "pp", "dp": "dp", "ep": "ep", "zero_stage": "zero_stage",
    "micro_batch": "micro_batch", "seq_len": "seq_len", "recompute": "activation_recompute",
    "virtual_stages": "virtual_stages"}

#: Llama 3 405B as published (Table 4, 16,384 GPUs; §3.3.2): FSDP without reshard after
#: forward (zero_stage 3 on the "llama3" stack), no activation checkpointing at 8K, and one
#: layer per chunk (v = 8), which the paper's end stages imply; micro-batch 1 (assumed).
PAPER_LAYOUT = ParallelConfig(tp=8, cp=1, pp=16, dp=128, zero_stage=3, micro_batch=1,
                              grad_accum=16, seq_len=8192, activation_recompute="none",
                              virtual_stages=8)


@dataclass(frozen=True)
class PlannerSettings:
    """One state of the planner: the cluster, the software, the layout and the prices.
    Defaults: Llama 3 405B as the paper ran it (:data:`PAPER_LAYOUT`)."""

    model: str = "llama3-405b"
    gpu: str = "H100"
    n_gpus: int = 16384
    stack: str = "llama3"
    global_batch_seqs: int = 2048
    layout: ParallelConfig = PAPER_LAYOUT
    mfu_pct: float = 41.0
    what_if_mfu: bool = False
    usd_per_gpu_hour: float = 2.0
    tokens_t: float = 15.6
    max_bubble_pct: float = 50.0
    memory_budget_gb: float = planner.DEFAULT_BUDGET_GB

    @property
    def arch(self) -> models.Architecture:
        return models.MODELS[self.model]

    @property
    def gpu_spec(self) -> hardware.GPU:
        return hardware.GPUS[self.gpu]

    @property
    def software(self) -> Stack:
        return stack_named(self.stack)

    def config(self) -> ParallelConfig:
        """The layout with m = batch / (DP x micro-batch) micro-batches (at least 1)."""
        c = self.layout
        return replace(c, grad_accum=max(1, self.global_batch_seqs // (c.dp * c.micro_batch)))


#: Where the chapter's planner opens: Llama 3 405B on the paper's cluster, batch and software,
#: laid out as the paper did not (PP 32, DP 64, four one-layer chunks). Its readouts answer
#: none of the chapter's exercises (the paper's DP and its weights per GPU are 9.1 and 9.3);
#: "Load published layout" sets the paper's run as published.
OPENING_LAYOUT = replace(PAPER_LAYOUT, pp=32, dp=64, grad_accum=32, virtual_stages=4)


def with_layout(s: PlannerSettings, **changes: Any) -> PlannerSettings:
    """``s`` with layout fields changed (``recompute`` names ``activation_recompute``)."""
    fields = {LAYOUT_CONTROLS.get(k, k): v for k, v in changes.items()}
    return replace(s, layout=replace(s.layout, **fields))


def planner_messages(s: PlannerSettings) -> list[str]:
    """Every reason the layout fails, in words ("✘ ..."); an empty list when it works."""
    cfg = s.config()
    problems = planner.validate(s.arch, cfg, s.n_gpus, s.gpu_spec.gpus_per_node,
                                s.memory_budget_gb, s.global_batch_seqs, stack=s.software)
    messages = [("✘ Out of memory: " if p.startswith("Needs ") else "✘ ") + p
                for p in problems]
    group = cfg.tp * cfg.cp * cfg.pp
    if cfg.n_gpus != s.n_gpus and s.n_gpus % group == 0:
        messages.append(f"✘ DP = {s.n_gpus:,} / (TP x CP x PP) = {s.n_gpus // group:,} "
                        "would use every GPU exactly once.")
    bubble = _bubble(s)
    if bubble >= s.max_bubble_pct / 100:
        messages.append(f"✘ Bubble {bubble:.1%} of compute time is not below your "
                        f"{s.max_bubble_pct:g}% target: more micro-batches per pipeline "
                        "(smaller DP), more chunks v, or fewer stages shrink it.")
    return messages


def _bubble(s: PlannerSettings) -> float:
    """The bubble of the layout, by the largest chunk when chunks are uneven."""
    try:
        return planner.bubble(s.config(), s.arch)
    except ValueError:  # no chunk layout at all: the plain formula
        return planner.bubble(s.config())


def plan_numbers(s: PlannerSettings) -> dict[str, Any]:
    """Memory (GB), traffic (GB and ms per dimension), bubble, step time, days and cost.

    Memory and traffic are None when the layout cannot be laid out at all (more stages
    than layers, or heads that do not split).
    """
    cfg, gpu = s.config(), s.gpu_spec
    numbers: dict[str, Any] = {
        "bubble": _bubble(s), "m": cfg.grad_accum, "n_gpus": cfg.n_gpus,
        "tokens_per_step": cfg.tokens_per_step, "memory": None, "comm_gb": None,
        "comm_ms": None, **speed_numbers(s, planner_messages(replace(s, max_bubble_pct=1e9))),
    }
    try:
        memory = memory_per_gpu(s.arch, cfg, s.software)
        comm = comm_per_step(s.arch, cfg, s.software.grad_reduce_bytes, s.software)
    except ValueError:
        return numbers
    tp_link = (gpu.nvlink_per_direction_gb_per_s if cfg.tp <= gpu.gpus_per_node
               else NETWORK_GB_PER_S)
    comm_gb = comm.as_gb()
    numbers["memory"] = memory.as_gb()
    numbers["comm_gb"] = comm_gb
    numbers["comm_ms"] = {k: 1e3 * comm_time_s(v * 1e9, tp_link if k == "TP+SP"
                                               else NETWORK_GB_PER_S)
                          for k, v in comm_gb.items()}
    return numbers


def summary_lines(s: PlannerSettings, numbers: dict[str, Any]) -> list[str]:
    """The planner's numbers as sentences (shown beside the chart)."""
    b, c = numbers["bubble"], s.config()
    lines = [
        f"{s.arch.name}: {models.total_params(s.arch) / 1e9:,.1f}B parameters "
        f"({models.active_params(s.arch) / 1e9:,.1f}B active per token).",
        f"Layout TP {c.tp} x CP {c.cp} x PP {c.pp} x DP {c.dp} (EP {c.ep}) = "
        f"{numbers['n_gpus']:,} GPUs; m = {numbers['m']} micro-batches of {c.micro_batch}; "
        f"{numbers['tokens_per_step'] / 1e6:,.2f}M tokens per step; software: "
        f"{s.software.name}.",
        f"Bubble {b:.1%} of compute ((p-1)/(m v) when m >= p): it alone caps the busy share "
        f"of a step at 1/(1+b) = {1 / (1 + b):.0%}.",
    ]
    lines.append(speed_line(s, numbers))
    if numbers["estimate"] is not None:
        parts = numbers["estimate"].breakdown
        lines.append("Where a step goes: " + ", ".join(
            f"{k} {v:,.2f} s" for k, v in parts.items() if v >= 0.005) + ".")
    if numbers["memory"] is not None:
        mem = numbers["memory"]
        lines.append(f"Busiest GPU: {mem['total']:,.1f} GB of {s.memory_budget_gb:g} GB ("
                     + ", ".join(f"{k} {mem[k]:,.1f}" for k in MEMORY_PARTS) + ").")
        lines.append("Sent per GPU per step (ms if nothing overlapped): " + ", ".join(
            f"{k} {v:,.2f} GB ({numbers['comm_ms'][k]:,.0f} ms)"
            for k, v in numbers["comm_gb"].items() if v > 0) + ".")
    return lines


# -- the figure -------------------------------------------------------------------------

_PART_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52")


def _draw_memory(ax: Any, s: PlannerSettings, memory: dict[str, float] | None) -> None:
    if memory is None:
        ax.text(0.5, 0.5, "no memory estimate:\nthe layout cannot be built",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    left = 0.0
    for part, colour in zip(MEMORY_PARTS, _PART_COLOURS, strict=True):
        ax.barh([0], [memory[part]], left=left, color=colour,
                label=f"{part} {memory[part]:.1f} GB")
        left += memory[part]
    ax.axvline(s.memory_budget_gb, color="black", linestyle="--", label="budget")
    fits = memory["total"] <= s.memory_budget_gb
    verdict = "fits" if fits else "OUT OF MEMORY"
    ax.set_title(f"Busiest GPU: {memory['total']:.1f} GB of {s.memory_budget_gb:g} GB "
                 f"({verdict})", fontsize=10, loc="left")
    ax.set_yticks([])
    ax.set_ylim(-0.6, 1.4)
    ax.set_xlabel("GB per GPU (1 GB = 1e9 bytes)")
    ax.set_xlim(0, max(memory["total"], s.memory_budget_gb) * 1.1)
    ax.legend(loc="upper left", ncol=3, fontsize=8, frameon=False)


def _draw_comm(ax: Any, comm_gb: dict[str, float] | None, comm_ms: dict[str, float] | None
               ) -> None:
    if comm_gb is None or comm_ms is None:
        ax.set_axis_off()
        return
    names = list(comm_gb)
    bars = ax.bar(names, [comm_gb[k] for k in names], color="#8172B2")
    for bar, name in zip(bars, names, strict=True):
        label = f"{comm_ms[name]:,.0f} ms" if comm_gb[name] else "none"
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("GB sent per GPU per step")
    ax.set_title("Traffic per dimension (time if not overlapped)", fontsize=10, loc="left")


def planner_figure(s: PlannerSettings | None = None) -> Any:
    """Two panels: the busiest GPU's memory against the budget, and traffic per dimension."""
    import matplotlib.pyplot as plt

    s = s or PlannerSettings()
    numbers = plan_numbers(s)
    fig, (mem_ax, comm_ax) = plt.subplots(1, 2, figsize=(11, 3.0),
                                          gridspec_kw={"width_ratios": [1.2, 1]})
    _draw_memory(mem_ax, s, numbers["memory"])
    _draw_comm(comm_ax, numbers["comm_gb"], numbers["comm_ms"])
    fig.subplots_adjust(left=0.03, right=0.99, bottom=0.18, top=0.9, wspace=0.15)
    plt.close(fig)
    return fig


# -- published layouts and limits ------------------------------------------------------

def published_settings(s: PlannerSettings) -> PlannerSettings | None:
    """``s`` with the layout a paper published for its model, or None when there is none."""
    name = s.arch.name
    run = next((r for r in models.TRAINING_RUNS if r.model == name), None)
    if run is None or run.n_accelerators is None or run.tp is None or run.pp is None \
            or run.dp is None:
        return None
    if name == models.LLAMA3_405B.name:  # the whole run as published, not the degrees alone
        return replace(s, gpu="H100", n_gpus=run.n_accelerators, tokens_t=run.tokens / 1e12,
                       stack="llama3", global_batch_seqs=PlannerSettings.global_batch_seqs,
                       layout=PAPER_LAYOUT)
    gpu = "H800" if run.accelerator.startswith("H800") else s.gpu
    # Only the degrees are published: nothing of Llama 3's software carries over. No
    # interleaving (v = 1), ZeRO-1 (DeepSeek-V3's own, §3.2; the distributed optimizer of
    # a Megatron-style stack), on the generic Megatron-Core preset.
    return replace(with_layout(s, tp=run.tp, pp=run.pp, dp=run.dp, cp=run.cp or 1,
                               ep=run.ep or 1, seq_len=run.seq_len, virtual_stages=1,
                               zero_stage=1),
                   gpu=gpu, n_gpus=run.n_accelerators, tokens_t=run.tokens / 1e12,
                   stack=OTHER_MODELS_STACK)


#: token budgets (trillions) on the slider: every published run's, and round numbers between
TOKENS_T: tuple[float, ...] = tuple(sorted(
    {0.3, 1.0, 2.0, 3.0, 10.0, 15.0, 30.0, 100.0}
    | {r.tokens / 1e12 for r in models.TRAINING_RUNS}))


def invalid_reason(s: PlannerSettings, numbers: dict[str, Any]) -> str:
    """Why there is nothing to plot for ``s`` ("" when the layout can be drawn)."""
    if s.config().n_gpus != s.n_gpus:
        return (f"TP x CP x PP x DP = {s.config().n_gpus:,} GPUs, but the cluster has "
                f"{s.n_gpus:,}.")
    if numbers["memory"] is None:
        return "the model cannot be split this way (more stages than layers, or heads " \
               "that do not divide)."
    return ""


def opening_settings() -> PlannerSettings:
    """The planner as the chapter opens it: :data:`OPENING_LAYOUT`, everything else the
    paper's (:class:`PlannerSettings` defaults)."""
    return replace(PlannerSettings(), layout=OPENING_LAYOUT)
