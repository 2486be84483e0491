"""Chapter 9 explorer: the Llama 3 405B run rebuilt, beside what the paper published.

* :data:`PREDICTION`: how many parameters one 405B layer holds (GQA + SwiGLU).
* :func:`grid_figure`: the 16,384 GPUs as a grid of 8-GPU nodes, in the paper's rank order
  [TP, CP, PP, DP] (innermost first, Dubey et al. 2024, arXiv:2407.21783, §3.3.2).
* :func:`real_runs_table`: published layouts of four real runs from :mod:`solutions.models`.
* :func:`reconstruction`: every figure recomputed with :mod:`solutions.llama3`, beside the
  paper's (Table 4) and the Llama 3.1 model card's 30.84M H100 GPU-hours.
* :func:`explorer`: the 5D planner (:mod:`workbook.explorers.ch09_planner` and its widgets,
  :mod:`workbook.explorers.ch09_planner_view`), opening on a
  layout the paper did not use (:func:`opening_settings`); its "Load published layout" sets
  the paper's run.
* :func:`mfu_scaling_figure`: predicted MFU against GPU count as DP scales out
  (:mod:`workbook.explorers.ch09_speed`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from autograder.markup import no_math
from autograder.prediction import Prediction, nearest_option
from solutions import hardware, models
from solutions import llama3 as l3
from workbook.explorers.ch09_planner import (
    PlannerSettings,
    opening_settings,
    planner_figure,
    planner_messages,
)
from workbook.explorers.ch09_planner_view import explorer
from workbook.explorers.ch09_speed import mfu_scaling_figure
from workbook.explorers.ch09_withheld import answered_ids, listed, placeholder, withheld

__all__ = ["PREDICTION", "PlannerSettings", "Table", "explorer", "grid_figure",
           "mfu_scaling_figure", "opening_settings", "planner_figure", "planner_messages",
           "rank_coordinates", "real_runs_table", "reconstruction", "recommendation"]

_LAYER_CHOICES = {"about 2 billion": 2e9, "about 3 billion": 3e9, "about 4 billion": 4e9}


PREDICTION = Prediction(
    key="ch09",
    question=("One transformer layer of Llama 3 405B: width 16,384, 128 query heads sharing "
              "8 key/value heads, a SwiGLU feed-forward block of width 53,248. How many "
              "parameters does it hold?"),
    actual=lambda: nearest_option(
        l3.layer_params(l3.D_MODEL, l3.N_HEADS, l3.N_KV_HEADS, l3.D_FFN), _LAYER_CHOICES),
    measure=lambda: l3.layer_params(l3.D_MODEL, l3.N_HEADS, l3.N_KV_HEADS, l3.D_FFN) / 1e9,
    options=tuple(_LAYER_CHOICES),
    explanation=("Q and O are 16,384 x 16,384 each (268.4M); K and V only 16,384 x 1,024 "
                 "each (16.8M), because 8 KV heads of 128 serve all 128 query heads: 570.4M "
                 "of attention. The three SwiGLU matrices add 3 x 16,384 x 53,248 = 2,617.2M, "
                 "so a layer holds 3.19 billion. Full multi-head attention would have made it "
                 "3.69 billion, and 126 such layers a 465B model."),
    feedback={
        "about 2 billion": (
            "The feed-forward block alone holds 3 x 16,384 x 53,248 = 2.6 billion: SwiGLU has "
            "three matrices, not two."),
        "about 3 billion": (
            "Right: 3.19 billion, most of it in the three SwiGLU matrices."),
        "about 4 billion": (
            "About 3.7 billion would be full multi-head attention; with 8 shared key/value heads,"
            " K and V are 16 times smaller than Q."),
    },
    reflection=(
        "Of all the numbers you rebuilt for Llama 3 405B, which surprised you most, and which "
        "choice of the published layout would you change first with half the GPUs?"),
)


# -- the 3D grid ------------------------------------------------------------------------

def rank_coordinates(rank: int, tp: int, cp: int, pp: int, dp: int) -> tuple[int, int, int, int]:
    """(tp, cp, pp, dp) indices of a global rank in the order [TP, CP, PP, DP], TP fastest.

    ``rank = t + tp (c + cp (p + pp d))``: the 8 ranks of a TP group are consecutive, so they
    share a node; consecutive TP groups are the stages of one replica.
    """
    if not 0 <= rank < tp * cp * pp * dp:
        raise ValueError(f"rank {rank} is outside 0 .. {tp * cp * pp * dp - 1}")
    t, rest = rank % tp, rank // tp
    c, rest = rest % cp, rest // cp
    return t, c, rest % pp, rest // pp


def grid_figure(tp: int = l3.TP, pp: int = l3.PP, dp: int = l3.DP,
                gpus_per_node: int = 8, show_order: bool = False) -> Any:
    """Two panels: every TP group as one cell (rows: stages, columns: DP replicas), and one
    node's GPUs. Colour shows the pipeline stage; labels say which network each axis uses.

    Which dimension gets the nearer nodes is exercise 9.8, so the corner cells are numbered
    with their nodes in the paper's rank order only with ``show_order`` (shown after it)."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Rectangle

    stage = np.repeat(np.arange(pp)[:, None], dp, axis=1)
    fig, (grid_ax, node_ax) = plt.subplots(1, 2, figsize=(11, 4.2),
                                           gridspec_kw={"width_ratios": [4, 1]})
    grid_ax.imshow(stage, aspect="auto", cmap="viridis", interpolation="nearest")
    grid_ax.add_patch(Rectangle((-0.5, -0.5), 1, pp, fill=False, edgecolor="red", lw=2))
    grid_ax.add_patch(Rectangle((-0.5, -0.5), dp, 1, fill=False, edgecolor="orange", lw=2,
                                linestyle="--"))
    for p, d in {(0, 0), (pp - 1, 0), (0, dp - 1), (pp - 1, dp - 1)} if show_order else ():
        node = (d * pp + p) * tp // gpus_per_node  # of the cell's first rank, order [TP, PP, DP]
        grid_ax.text(d, p, f"node {node:,}", ha="left" if d < dp / 2 else "right",
                     va="center", fontsize=7, color="white" if p < pp / 2 else "black")
    in_node = "one 8-GPU node (NVLink)" if tp == gpus_per_node else f"{tp} GPUs"
    # The degrees stay unprinted: DP and the layers per stage are exercises 9.1 and 9.2.
    grid_ax.set_title(f"{tp * pp * dp:,} GPUs = TP {tp} x PP {pp} x DP: each cell is a "
                      f"TP group, {in_node}", fontsize=10, loc="left")
    grid_ax.set_xlabel("DP replica, one per column; dashed orange: stage 0's DP group, "
                       "its gradient all-reduce spans the whole network")
    grid_ax.set_ylabel("PP stage, one per row")
    grid_ax.set_xticks([])
    grid_ax.set_yticks([])
    replica = ("red column: one model replica,\nits stages on consecutive nodes" if show_order
               else "red column: one model replica,\nall its stages")
    grid_ax.annotate(replica,
                     (0, pp / 2), xytext=(min(dp * 0.15, dp - 1), pp / 2),
                     color="white", fontsize=9, va="center",
                     arrowprops={"arrowstyle": "->", "color": "white"})
    node_ax.imshow(np.arange(tp)[:, None], aspect="auto", cmap="Greys", vmin=-2,
                   vmax=tp + 2, interpolation="nearest")
    for t in range(tp):
        node_ax.text(0, t, f"GPU {t}: TP rank {t}", ha="center", va="center", fontsize=8)
    node_ax.set_xticks([])
    node_ax.set_yticks([])
    node_ax.set_title("inside one cell", fontsize=10)
    node_ax.set_xlabel("1/TP of every matrix;\nall-reduces on NVLink")
    fig.subplots_adjust(left=0.13, right=0.99, bottom=0.14, top=0.92, wspace=0.05)
    plt.close(fig)
    return fig


# -- tables -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Table:
    """A small table that renders itself: HTML in a notebook, plain text elsewhere."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    footnotes: tuple[str, ...] = ()

    def __str__(self) -> str:
        lines = [self.caption, " | ".join(self.header)]
        lines += [" | ".join(row) for row in self.rows]
        return "\n".join(lines + list(self.footnotes))

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                       for row in self.rows)
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.footnotes)
        # no_math: "$5.576M at an assumed $2" is money, not LaTeX
        # its own horizontal scroll: the columns do not fit a narrow notebook
        # table-layout auto: front ends that fix the layout would cut long cells short
        return no_math(f"<div style='overflow-x:auto;max-width:100%'>"
                       f"<table style='table-layout:auto'><caption>"
                       f"{html.escape(self.caption)}</caption><thead><tr>{head}</tr></thead>"
                       f"<tbody>{body}</tbody></table></div><ol>{notes}</ol>")


RUN_ARCHITECTURES: dict[str, models.Architecture] = {
    "Llama 3 405B": models.LLAMA3_405B, "DeepSeek-V3": models.DEEPSEEK_V3,
    "PaLM 540B": models.PALM_540B, "GPT-3 175B": models.GPT3_175B,
}


def _degree(value: int | None) -> str:
    return "n/p" if value is None else f"{value:,}"


def _params(arch: models.Architecture) -> str:
    text = f"{models.total_params(arch) / 1e9:,.1f}B (paper {arch.published_params / 1e9:g}B)"
    if arch.is_moe:
        text += f", {models.active_params(arch) / 1e9:.1f}B active"
    return text


#: The DP column is exercise 9.1's question; the runs' notes state 9.1's, 9.4's and 9.8's
#: answers (DP, training FLOPs, rank order). Each stays withheld until those are answered.
RUNS_DP_AFTER: tuple[str, ...] = ("9.1",)
RUNS_NOTES_AFTER: tuple[str, ...] = ("9.1", "9.4", "9.8")


def real_runs_table(done: frozenset[str] | None = None) -> Table:
    """The four published runs: parameters counted from the architecture beside the paper's,
    the layout, tokens, accelerator-hours and MFU, each with its source (n/p: not published).

    ``done``: the exercises answered (default: read from the progress log); the DP degrees
    and the runs' notes are withheld until the exercises they answer are among them."""
    done = answered_ids() if done is None else done
    dp_open = not withheld(RUNS_DP_AFTER, done)
    notes_missing = withheld(RUNS_NOTES_AFTER, done)
    rows, notes = [], []
    for i, run in enumerate(models.TRAINING_RUNS, start=1):
        hours = "n/p" if run.accelerator_hours is None else f"{run.accelerator_hours / 1e6:.2f}M"
        rows.append((
            f"{run.model} [{i}]", _params(RUN_ARCHITECTURES[run.model]),
            f"{_degree(run.n_accelerators)} x {run.accelerator}",
            " / ".join(_degree(d) if dp_open or k != 2 or d is None else "?"
                       for k, d in enumerate((run.tp, run.pp, run.dp, run.cp, run.ep))),
            f"{run.tokens / 1e12:g}T x {run.seq_len:,}", hours,
            "n/p" if run.mfu is None else f"{run.mfu:.1%}"))
        notes.append(f"{run.model}: {run.source}."
                     + (f" {run.notes}" if not notes_missing
                        else f" (Notes {placeholder(notes_missing)}.)"))
    if not dp_open:
        notes.append(f"DP (?) is exercise {RUNS_DP_AFTER[0]}'s question: run the cell again "
                     "once you have answered it.")
    header = ("Model", "Parameters (counted)", "Accelerators", "TP / PP / DP / CP / EP",
              "Tokens x sequence", "Accelerator-hours", "MFU")
    return Table("Published training runs", header, tuple(rows), tuple(notes))


# -- the reconstruction -----------------------------------------------------------------

def stage_text(stages: tuple[int, ...]) -> str:
    """Layers per stage, runs of equal stages collapsed: (7, 8, 8, 8, 7) -> "7 + 8 x 3 + 7"."""
    runs: list[list[int]] = []
    for n in stages:
        if runs and runs[-1][0] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    return " + ".join(str(n) if k == 1 else f"{n} x {k}" for n, k in runs)


@dataclass(frozen=True)
class Comparison:
    """One reconstructed figure against the published one (``published`` None: not given)."""

    quantity: str
    ours: float
    published: float | None
    shown_ours: str
    shown_published: str
    source: str
    asked_in: str = ""  # the exercise whose answer this row is ("" when none)

    @property
    def verdict(self) -> str:
        if self.published is None:
            return "not published"
        gap = (self.ours - self.published) / self.published
        if abs(gap) < 0.001:
            return "✔ agrees"
        if abs(gap) <= 0.02:
            return f"✔ within {abs(gap):.1%}"
        return f"✘ {'above' if gap > 0 else 'below'} by {abs(gap):.0%}"


def comparisons(mfu: float = 0.41, n_gpus: int = l3.N_GPUS, tp: int = l3.TP, pp: int = l3.PP,
                cp: int = l3.CP, n_tokens: float = l3.N_TOKENS,
                peak_tflops: float = hardware.H100_SXM.bf16_dense_tflops) -> list[Comparison]:
    """The run rebuilt from the assumptions given (defaults: the paper's layout, 41% MFU)."""
    dp = l3.dp_degree(n_gpus, tp, pp, cp)
    stages = l3.layers_per_stage(l3.N_LAYERS, pp)
    n_params = models.total_params(models.LLAMA3_405B)
    flops = l3.training_flops(n_params, n_tokens)
    days = l3.training_days(flops, n_gpus, peak_tflops, mfu)
    hours = l3.gpu_hours(n_gpus, days)
    tokens_step = dp * l3.BATCH_PER_DP * l3.SEQ_LEN
    t4 = "Table 4"
    rows = [
        Comparison("DP = GPUs / (TP x CP x PP)", dp, 128, f"{dp:,}", "128", t4, "9.1"),
        Comparison("Layers on the heaviest stage", max(stages), 8, stage_text(stages),
                   "7 + 8 x 14 + 7", "§3.3.2", "9.2"),
        Comparison("Parameters", n_params, 405e9, f"{n_params / 1e9:,.2f}B", "405B",
                   "Table 3"),
        Comparison("Tokens per step", tokens_step, 2048 * 8192, f"{tokens_step / 1e6:,.2f}M",
                   "16M (2,048 sequences of 8,192)", t4),
        Comparison("Training FLOPs, 6 N D", flops, 3.8e25, f"{flops:.3g}", "3.8e25", "§1",
                   "9.4"),
    ]
    for tflops, paper_mfu, label in ((430, 0.43, "8,192 GPUs"), (400, 0.41, "16,384 GPUs"),
                                     (380, 0.38, "16,384 GPUs, CP 16")):
        value = l3.mfu_from_tflops(tflops, peak_tflops)
        rows.append(Comparison(f"MFU at {tflops} TFLOPs/GPU ({label})", value, paper_mfu,
                               f"{value:.1%}", f"{paper_mfu:.0%}", t4))
    implied = l3.implied_mfu(flops, l3.PUBLISHED_GPU_HOURS, peak_tflops)
    rows += [
        Comparison(f"Days at {mfu:.0%} MFU (6ND FLOPs), no downtime", days, None,
                   f"{days:,.1f}",
                   "not given (54 days is a snapshot window, §3.3.4)", "§3.3.4"),
        Comparison(f"GPU-hours at {mfu:.0%} MFU", hours, l3.PUBLISHED_GPU_HOURS,
                   f"{hours / 1e6:,.2f}M", "30.84M", "Llama 3.1 model card"),
        Comparison("Average MFU implied by 30.84M GPU-hours", implied, 0.41, f"{implied:.1%}",
                   "38-43% in steady state", "model card, Table 4"),
    ]
    return rows


def _shown(c: Comparison, done: frozenset[str]) -> tuple[str, ...]:
    """One row of the reconstruction; a row that answers an unanswered exercise says so."""
    if c.asked_in and c.asked_in not in done:
        wait = placeholder([c.asked_in])
        return (c.quantity, wait, wait, wait, c.source)
    return (c.quantity, c.shown_ours, c.shown_published, c.verdict, c.source)


def reconstruction(mfu: float = 0.41, n_gpus: int = l3.N_GPUS, tp: int = l3.TP,
                   pp: int = l3.PP, cp: int = l3.CP, n_tokens: float = l3.N_TOKENS,
                   done: frozenset[str] | None = None) -> Table:
    """Your reconstruction beside the paper's figures, one row per quantity. ``done``: the
    exercises answered (default: read from the progress log); a row that is an exercise's
    answer is withheld until that exercise is among them."""
    done = answered_ids() if done is None else done
    rows = tuple(_shown(c, done) for c in comparisons(mfu, n_gpus, tp, pp, cp, n_tokens))
    notes = ("GPU-hours and the implied MFU include what a steady-state measurement leaves "
             "out: 466 job interruptions in a 54-day snapshot alone (§3.3.4), restarts from "
             "checkpoints, the batch ramp (§3.4.1) and the long-context phase at 38% MFU "
             "(the 8,192-GPU phase ran at 43%, above the average, so it is not among the "
             "causes). That gap, not a wrong formula, is why the last rows disagree.",
             "Peak: H100 SXM dense BF16, 989.4 TFLOPS (H100 whitepaper, Table 3).")
    header = ("Quantity", "Reconstruction", "Published", "Verdict", "Source")
    return Table("Llama 3 405B: reconstruction vs. Dubey et al. 2024 (arXiv:2407.21783)",
                 header, rows, notes)


# -- what the search recommends -------------------------------------------------------------

#: Every layout the search ranks prints its DP (9.1), and on 16,384 GPUs at the paper's batch
#: its best layouts answer the design task 9.10: the table waits for both.
SEARCH_AFTER: tuple[str, ...] = ("9.1", "9.10")


def recommendation(stack: str = "llama3", top: int = 5,
                   done: frozenset[str] | None = None) -> Table:
    """The ``top`` layouts :func:`solutions.planner.recommend` finds for Llama 3 405B on
    16,384 H100s at the paper's batch (2,048 sequences of 8,192 tokens) on the software
    preset ``stack`` (a key of :data:`solutions.stack.STACKS`), each beside the paper's run
    as published (:data:`~workbook.explorers.ch09_planner.PAPER_LAYOUT`): the seconds per
    step it saves or costs, cost by cost. ``done``: the exercises answered (default: read
    from the progress log); until :data:`SEARCH_AFTER` are among them the table says so."""
    missing = withheld(SEARCH_AFTER, answered_ids() if done is None else done)
    caption = "Llama 3 405B on 16,384 H100s, batch 2,048 x 8,192: the fastest layouts"
    header = ("Rank", "Layout", "Step", "MFU", "Against the paper's layout")
    if missing:
        return Table(caption, header, (), (
            f"The layouts found answer {listed(missing)}: run the cell again once you have "
            "answered " + ("them." if len(missing) > 1 else "it."),))
    from solutions import performance, planner
    from solutions.planner.search import why_faster
    from solutions.stack import stack_named
    from workbook.explorers.ch09_planner import PAPER_LAYOUT

    software, gpu = stack_named(stack), hardware.H100_SXM
    found = planner.recommend(models.LLAMA3_405B, l3.N_GPUS, 2048, l3.SEQ_LEN, gpu,
                              stack=software, top=top, memory_budget_gb=80.0)
    paper = performance.estimate(models.LLAMA3_405B, PAPER_LAYOUT, gpu, stack=software,
                                 memory_budget_gb=None)
    rows = []
    for ranked in found.best:
        est = ranked.estimate
        saves, costs = why_faster(est, paper, top=4), why_faster(paper, est, top=4)
        diff = "; ".join([f"saves {k} {v:.2f} s" for k, v in saves if v >= 0.005]
                         + [f"pays {k} {v:.2f} s" for k, v in costs if v >= 0.005]
                         ) or "the same step"
        rows.append((f"#{ranked.rank}", ranked.label(), f"{est.step_time_s:.2f} s",
                     f"{est.mfu:.1%}", diff))
    notes = (f"The paper's layout on this software: {paper.step_time_s:.2f} s per step, "
             f"MFU {paper.mfu:.1%}; {found.valid:,} of {found.candidates:,} layouts searched "
             "can be built and fit 80 GB.",
             f"Software: {software.name}.")
    return Table(caption, header, tuple(rows), notes)
