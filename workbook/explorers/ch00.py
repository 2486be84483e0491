"""Chapter 0 · Ring AllReduce: the ring's chunk-by-chunk steps, its time, and an explorer.

The cost model is the alpha-beta model of :mod:`solutions.collectives`: a ring AllReduce
takes ``2(N-1)`` steps, each paying the latency alpha and sending one chunk of ``M/N`` at
the per-direction link bandwidth B (Thakur, Rabenseifner & Gropp 2005, §4). The simple
tree it is compared with is the unpipelined binomial tree of exercise 0.4, a teaching
model, not NCCL's pipelined double binary tree.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from autograder.prediction import Prediction, nearest_option
from autograder.units import format_rounded as readout
from solutions import collectives as col
from solutions import hardware as hw
from workbook.explorers.view import themed

MAX_DRAWN_GPUS = 8  # beyond 8 GPUs the per-step panels become too small to read
N_AXIS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)

# -- the prediction --------------------------------------------------------------------

_VOLUME_FACTORS = {"About the same amount": 1.0, "Roughly 8x more": 8.0,
                   "Roughly 100x more": 100.0}
VOLUME_OPTIONS = tuple(_VOLUME_FACTORS)


def volume_ratio(small_n: int = 8, large_n: int = 1000, message_gb: float = 1.0) -> float:
    """How many times more each GPU sends on a ring of ``large_n`` than of ``small_n`` GPUs."""
    return (col.ring_allreduce_gb_per_gpu(message_gb, large_n)
            / col.ring_allreduce_gb_per_gpu(message_gb, small_n))


def closest_volume_option(ratio: float) -> str:
    """The prediction option whose factor is nearest to ``ratio`` (compared on a log scale)."""
    return nearest_option(ratio, _VOLUME_FACTORS, log_scale=True)


PREDICTION = Prediction(
    key="ch00",
    question=("Eight GPUs all-reduce a 2 GB gradient with a ring. Now a ring of 1,000 GPUs "
              "all-reduces the same 2 GB gradient. Compared with the 8-GPU ring, how much "
              "data does each GPU send?"),
    actual=lambda: closest_volume_option(volume_ratio(8, 1000, 2.0)),
    measure=lambda: volume_ratio(8, 1000, 2.0),
    options=VOLUME_OPTIONS,
    explanation=("Each GPU sends 2(N-1)/N x M: 2 x 7/8 x 2 GB = 3.5 GB on 8 GPUs and "
                 "2 x 999/1000 x 2 GB = 3.996 GB on 1,000, only 14% more. What grows with N "
                 "is the number of steps, 2(N-1): 14 against 1,998. With equal links the "
                 "bandwidth time hardly changes, but every step pays the latency once, so a "
                 "large ring is slower for small messages."),
    feedback={
        "About the same amount": (
            "Right: 2(N-1)/N x M creeps towards 2M and never passes it. What grows with N is the "
            "number of steps."),
        "Roughly 8x more": (
            "The ring has more GPUs but each sends chunks of M/N: more chunks, each smaller, so "
            "the bytes per GPU stay just under 2M."),
        "Roughly 100x more": (
            "About 140x is how much the number of steps grows (14 to 1,998), not the bytes: every"
            " step moves a chunk of M/N, which shrinks as N grows."),
    },
    reflection=(
        "Your ring grew from 8 to 1,000 GPUs and the AllReduce got slower although each GPU sends"
        " barely more. Which term of the cost model did that, and what would you change to win "
        "the time back?"),
)


# -- the ring, step by step --------------------------------------------------------------

@dataclass(frozen=True)
class RingStep:
    """The state after one step: ``counts[gpu][chunk]`` is how many GPUs' data that chunk
    holds on that GPU; ``sends`` lists (from_gpu, to_gpu, chunk) moved in this step."""

    phase: str  # "start", "reduce-scatter" or "all-gather"
    number: int  # 1-based step number within the phase (0 for the start)
    counts: tuple[tuple[int, ...], ...]
    sends: tuple[tuple[int, int, int], ...]


def ring_steps(n_gpus: int) -> list[RingStep]:
    """Simulate a ring AllReduce on ``n_gpus`` GPUs, chunk by chunk.

    Reduce-scatter step s (0-based): GPU g sends chunk (g - s) mod N to GPU g+1, which adds
    it to its own copy. After N-1 steps GPU g owns the full sum of chunk (g + 1) mod N.
    All-gather step s: GPU g forwards chunk (g + 1 - s) mod N, which the receiver keeps.
    """
    col.ring_allreduce_steps(n_gpus)  # ValueError unless n_gpus is a whole number >= 1
    n = int(n_gpus)
    held = [[frozenset({g}) for _ in range(n)] for g in range(n)]
    steps = [RingStep("start", 0, _counts(held), ())]
    for phase, first in (("reduce-scatter", 0), ("all-gather", 1)):
        for s in range(n - 1):
            sends = tuple((g, (g + 1) % n, (g + first - s) % n) for g in range(n))
            new = [row[:] for row in held]
            for src, dst, chunk in sends:
                merged = held[dst][chunk] | held[src][chunk]
                new[dst][chunk] = merged if phase == "reduce-scatter" else held[src][chunk]
            held = new
            steps.append(RingStep(phase, s + 1, _counts(held), sends))
    return steps


def _counts(held: list[list[frozenset[int]]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(len(cell) for cell in row) for row in held)


def ring_steps_figure(n_gpus: int = 4) -> Any:
    """Every step of the ring in one picture: a GPU-by-chunk grid per step.

    Top row: the start and the N-1 reduce-scatter steps; bottom row: the N-1 all-gather
    steps. Each number is how many GPUs' gradients are summed into that chunk on that GPU
    (✔ = all N); outlined cells are the chunk each GPU received in that step.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Rectangle

    if not 2 <= n_gpus <= MAX_DRAWN_GPUS:
        raise ValueError(f"n_gpus must be between 2 and {MAX_DRAWN_GPUS} to draw, got {n_gpus}")
    n, pitch = n_gpus, n_gpus + 1  # one blank row/column between panels
    grid = np.full((2 * pitch - 1, n * pitch - 1), np.nan)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.42 * grid.shape[1] + 1.0),
                                    0.42 * grid.shape[0] + 1.0))
    for index, step in enumerate(ring_steps(n)):
        row, col_ = (0, index) if index < n else (1, index - n + 1)
        y0, x0 = row * pitch, col_ * pitch
        grid[y0:y0 + n, x0:x0 + n] = step.counts
        for g, counts in enumerate(step.counts):
            for c, count in enumerate(counts):
                ax.text(x0 + c, y0 + g, "✔" if count == n else str(count), ha="center",
                        va="center", fontsize=8, color="white" if count == n else "black")
        for _, dst, chunk in step.sends:
            ax.add_patch(Rectangle((x0 + chunk - 0.5, y0 + dst - 0.5), 1, 1, fill=False,
                                   edgecolor="darkorange", linewidth=2))
        label = "start" if step.phase == "start" else f"{step.phase} {step.number}"
        ax.text(x0 + (n - 1) / 2, y0 - 0.75, label, ha="center", va="bottom", fontsize=8)
    cmap = plt.get_cmap("Blues").with_extremes(bad="white")  # NaN = the gaps between grids
    ax.imshow(grid, cmap=cmap, vmin=0, vmax=1.3 * n)
    ax.set_ylim(grid.shape[0] - 0.5, -1.6)  # room above the top row for the step labels
    ax.set_yticks([row * pitch + g for row in (0, 1) for g in range(n)],
                  [f"GPU {g}" for _ in (0, 1) for g in range(n)], fontsize=7)
    ax.set_xticks([])
    ax.set_xlabel("in each grid: columns = the N chunks of the gradient, rows = GPUs",
                  fontsize=8)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(f"Ring AllReduce on {n} GPUs. Numbers: GPUs' gradients summed into a chunk "
                 "(✔ = all).\nOutlined: the chunk each GPU received in that step.", fontsize=9)
    fig.subplots_adjust(left=0.09, right=0.99, top=0.84, bottom=0.07)
    plt.close(fig)
    return themed(fig)


# -- time: bandwidth part and latency part ------------------------------------------------

@dataclass(frozen=True)
class RingTime:
    """Ring AllReduce time in ms, split into its two terms, and the simple tree's time."""

    bandwidth_ms: float
    latency_ms: float
    tree_ms: float

    @property
    def total_ms(self) -> float:
        return self.bandwidth_ms + self.latency_ms


def ring_time(message_gb: float, n_gpus: int, link_gb_per_s: float,
              latency_us: float) -> RingTime:
    """Both terms of 2(N-1) x (alpha + M/(N B)), and 2 ceil(log2 N) x (alpha + M/B)."""
    bandwidth = col.ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, 0.0)
    total = col.ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)
    tree = col.tree_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)
    return RingTime(bandwidth, total - bandwidth, tree)


def crossover_message_mb(n_gpus: int, link_gb_per_s: float, latency_us: float) -> float:
    """Message size (MB) at which the ring's two terms are equal: M = N x B x alpha.

    From 2(N-1) x M/(N B) = 2(N-1) x alpha.
    """
    return n_gpus * link_gb_per_s * latency_us * 1e-6 * 1e3


def allreduce_time_figure(message_gb: float = 1.0, link_gb_per_s: float = 50.0,
                          latency_us: float = 5.0, n_gpus: int = 8) -> Any:
    """Ring time against the number of GPUs (log-log): its two terms, and the simple tree."""
    import matplotlib.pyplot as plt

    times = [ring_time(message_gb, n, link_gb_per_s, latency_us) for n in N_AXIS]
    fig, ax = plt.subplots(figsize=(7.2, 4.0))
    ax.plot(N_AXIS, [t.bandwidth_ms for t in times], "-", label="ring: bandwidth part")
    ax.plot(N_AXIS, [t.latency_ms for t in times], "--", label="ring: latency part")
    ax.plot(N_AXIS, [t.total_ms for t in times], "-", linewidth=2.5, color="black",
            label="ring: total")
    ax.plot(N_AXIS, [t.tree_ms for t in times], ":", linewidth=2,
            label="simple binomial tree (exercise 0.4)")
    ax.axvline(n_gpus, color="grey", linewidth=1, label=f"N = {n_gpus}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(N_AXIS, [str(n) for n in N_AXIS], fontsize=8)
    ax.minorticks_off()
    ax.set_yscale("log", nonpositive="mask")
    ax.set_xlabel("GPUs in the ring, N")
    ax.set_ylabel("AllReduce time (ms)")
    ax.set_title(f"All-reducing {_size(message_gb)} at {link_gb_per_s:g} GB/s per direction, "
                 f"{latency_us:g} µs per step", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.92, bottom=0.13)
    plt.close(fig)
    return themed(fig)


def _size(message_gb: float) -> str:
    for scale, unit in ((1.0, "GB"), (1e-3, "MB"), (1e-6, "KB")):
        if message_gb >= scale:
            return f"{message_gb / scale:.3g} {unit}"
    return f"{message_gb * 1e9:.3g} bytes"


# -- failure states, in words -------------------------------------------------------------

def ring_messages(message_gb: float, n_gpus: int, link_gb_per_s: float,
                  latency_us: float) -> list[str]:
    """What goes wrong with this ring, in words; an empty list when nothing does."""
    t = ring_time(message_gb, n_gpus, link_gb_per_s, latency_us)
    problems: list[str] = []
    if t.latency_ms > t.bandwidth_ms:
        steps = col.ring_allreduce_steps(n_gpus)
        problems.append(f"✘ Latency-bound: {steps} steps x {latency_us:g} µs = "
                        f"{readout(t.latency_ms, 'ms')} of latency outweigh the "
                        f"{t.bandwidth_ms:.3g} "
                        "ms of bandwidth time. The message is too small for this many steps.")
    if t.tree_ms < t.total_ms:
        problems.append(f"✘ The ring loses: the simple tree takes {readout(t.tree_ms, 'ms')}, the "
                        f"ring {readout(t.total_ms, 'ms')}. Fewer, larger steps win here.")
    return problems


def ring_summary(message_gb: float, n_gpus: int, link_gb_per_s: float,
                 latency_us: float) -> list[str]:
    """The numbers behind the plot, one sentence each."""
    t = ring_time(message_gb, n_gpus, link_gb_per_s, latency_us)
    sent = col.ring_allreduce_gb_per_gpu(message_gb, n_gpus)
    root = col.naive_allreduce_root_gb(message_gb, n_gpus)
    crossover = crossover_message_mb(n_gpus, link_gb_per_s, latency_us)
    return [
        f"Each GPU sends 2 x ({n_gpus}-1)/{n_gpus} x {_size(message_gb)} = {_size(sent)} "
        f"in {col.ring_allreduce_steps(n_gpus)} steps (a gather-to-one-GPU scheme would make "
        f"that GPU receive {_size(root)}).",
        f"Ring time {readout(t.total_ms, 'ms')} = bandwidth {readout(t.bandwidth_ms, 'ms')} + "
        f"latency {readout(t.latency_ms, 'ms')}; the simple tree: {readout(t.tree_ms, 'ms')}.",
        "The two ring terms are equal for a message of N x B x alpha = "
        f"{readout(crossover, 'MB')}.",
    ]


MESSAGE_SIZES_GB = (1e-6, 1e-5, 1e-4, 1e-3, 2e-3, 1e-2, 0.1, 1.0, 10.0, 100.0)


def explorer() -> Any:
    """Sliders for N, message size, link and latency; the time plot and readout redraw.

    It starts at 16 GPUs and a 10 GB gradient, numbers no exercise asks about, so its
    readout never answers one before the learner does."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View, options_slider

    links = [(f"{link.name}: {link.per_direction_gb_per_s:g} GB/s", link.per_direction_gb_per_s)
             for link in (hw.NVLINK_4, hw.NVLINK_3, hw.IB_NDR, hw.IB_HDR, hw.ROCE_100G)]
    controls = dict(
        n_gpus=w.BoundedIntText(value=16, min=2, max=4096, description="GPUs N", style=STYLE),
        message_gb=options_slider(MESSAGE_SIZES_GB, 10.0, "gradient", label=_size),
        link_gb_per_s=w.Dropdown(options=links, value=hw.IB_NDR.per_direction_gb_per_s,
                                 description="link, each way", style=STYLE),
        latency_us=w.FloatSlider(value=5.0, min=0.0, max=50.0, step=0.5,
                                 description="latency (µs/step)", style=STYLE),
    )
    view = View("ch00", [list(controls.values())])
    state: dict[str, Any] = {}

    def redraw() -> None:
        args = {name: control.value for name, control in controls.items()}
        lines = (ring_messages(**args)
                 or ["✔ Bandwidth-bound: the ring is the right algorithm for this message."])
        lines += ring_summary(**args)
        state["figure"] = allreduce_time_figure(args["message_gb"], args["link_gb_per_s"],
                                                args["latency_us"], args["n_gpus"])
        view.show("<br>".join(html.escape(line) for line in lines), [state["figure"]])

    view.watch(redraw)
    box = view.box
    box.controls, box.state = controls, state
    return box
