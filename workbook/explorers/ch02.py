"""Chapter 2 · Gradient accumulation: the timeline of one optimizer step, and an explorer.

The timing model is :mod:`solutions.accumulation`'s: each GPU runs its micro-batches one
after another (all GPUs in parallel), then one gradient AllReduce that does not overlap
with compute, then the optimizer update. The comparison row is the same step without
``no_sync()`` in PyTorch DDP: an AllReduce after every micro-batch, one update at the end.
Full activation checkpointing re-runs the forward pass, 1/3 of forward + backward
(Narayanan et al. 2021, SC21, §5.1), so each micro-batch takes 4/3 as long.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from autograder.prediction import Prediction
from autograder.units import format_rounded as readout
from solutions import accumulation as acc
from workbook.explorers.view import themed

MAX_DRAWN_BLOCKS = 128  # more micro-batches than this are drawn as one merged block
COMM_TARGET_PCT = 10.0  # the share of the step the explorer calls too much communication

PREDICTION = Prediction(
    key="ch02",
    question=("Each GPU runs 128 micro-batches per optimizer step, each taking 120 ms of "
              "forward + backward, and then one 50 ms gradient AllReduce that does not "
              "overlap with compute. What percentage of the step is communication: about a "
              "third, about a tenth, or under 1%?"),
    actual=lambda: 100 * acc.comm_fraction_of_step(128, 120.0, 50.0),
    unit="%",
    explanation=("One AllReduce against 128 micro-batches: 50 / (128 x 120 + 50) = 50 / 15,410 "
                 "= 0.32%. Without no_sync() every micro-batch would all-reduce, and 50 of "
                 "every 170 ms would be communication: 29%. Accumulating does not make one "
                 "AllReduce cheaper; it makes it rare."),
    reflection=(
        "Accumulation made the AllReduce rare. What does it not change about a training run, and "
        "when would you still rather add GPUs than micro-batches?"),
)


@dataclass(frozen=True)
class StepPlan:
    """One optimizer step: how many micro-batches, and how long each piece takes (ms)."""

    accum_steps: int
    micro_batch_ms: float  # forward + backward, including recomputation if checkpointing
    recompute_ms: float  # the part of micro_batch_ms spent recomputing the forward pass
    allreduce_ms: float
    optimizer_ms: float

    def step_ms(self, sync_every_micro_batch: bool = False) -> float:
        allreduces = self.accum_steps if sync_every_micro_batch else 1
        return acc.step_time_ms(self.accum_steps, self.micro_batch_ms,
                                allreduces * self.allreduce_ms, self.optimizer_ms)

    def comm_pct(self, sync_every_micro_batch: bool = False) -> float:
        allreduces = self.accum_steps if sync_every_micro_batch else 1
        return 100 * allreduces * self.allreduce_ms / self.step_ms(sync_every_micro_batch)


def make_plan(accum_steps: int, micro_batch_ms: float, allreduce_ms: float,
              optimizer_ms: float = 0.0, checkpointing: bool = False) -> StepPlan:
    """A step of ``accum_steps`` micro-batches; checkpointing makes each one 4/3 as long."""
    acc.step_time_ms(accum_steps, micro_batch_ms, allreduce_ms, optimizer_ms)  # validates
    per_micro = (acc.checkpointed_micro_batch_ms(micro_batch_ms) if checkpointing
                 else micro_batch_ms)
    return StepPlan(accum_steps, per_micro, per_micro - micro_batch_ms, allreduce_ms,
                    optimizer_ms)


def step_plan(target_batch: int, micro_batch: int, dp_degree: int, micro_batch_ms: float,
              allreduce_ms: float, optimizer_ms: float = 0.0,
              checkpointing: bool = False) -> StepPlan:
    """The step that reaches ``target_batch`` (rounding the accumulation steps up)."""
    steps = acc.required_accumulation_steps(target_batch, micro_batch, dp_degree)
    return make_plan(steps, micro_batch_ms, allreduce_ms, optimizer_ms, checkpointing)


# -- failure states, in words -------------------------------------------------------------

def accumulation_messages(target_batch: int, micro_batch: int, dp_degree: int,
                          micro_batch_ms: float, allreduce_ms: float,
                          checkpointing: bool = False,
                          max_comm_pct: float = COMM_TARGET_PCT) -> list[str]:
    """What is wrong with this configuration, in words; an empty list when nothing is."""
    per_step = micro_batch * dp_degree
    plan = step_plan(target_batch, micro_batch, dp_degree, micro_batch_ms, allreduce_ms,
                     checkpointing=checkpointing)
    reached = acc.effective_batch(micro_batch, plan.accum_steps, dp_degree)
    problems: list[str] = []
    if per_step > target_batch:
        problems.append(f"✘ One accumulation step already processes {micro_batch} x "
                        f"{dp_degree} = {per_step:,} sequences, more than the target of "
                        f"{target_batch:,}.")
    elif reached != target_batch:
        problems.append(f"✘ {target_batch:,} is not a multiple of micro-batch x GPUs = "
                        f"{per_step:,}: {plan.accum_steps} steps give an effective batch of "
                        f"{reached:,}. DeepSpeed would reject this configuration.")
    if plan.comm_pct() > max_comm_pct:
        problems.append(f"✘ Communication is {readout(plan.comm_pct(), '%')} of the step, above "
                        f"the {max_comm_pct:g}% target: accumulate more micro-batches per step "
                        "or overlap the AllReduce with the backward pass.")
    return problems


def accumulation_summary(target_batch: int, micro_batch: int, dp_degree: int,
                         micro_batch_ms: float, allreduce_ms: float, optimizer_ms: float,
                         checkpointing: bool) -> list[str]:
    """The numbers behind the timeline, one sentence each."""
    plan = step_plan(target_batch, micro_batch, dp_degree, micro_batch_ms, allreduce_ms,
                     optimizer_ms, checkpointing)
    batch = acc.effective_batch(micro_batch, plan.accum_steps, dp_degree)
    lines = [
        f"{plan.accum_steps} accumulation steps of {micro_batch} x {dp_degree} GPUs: "
        f"effective batch {batch:,} sequences.",
        f"Accumulating: {readout(plan.step_ms(), 'ms')} per step, communication "
        f"{readout(plan.comm_pct(), '%')}, {readout(1e3 * batch / plan.step_ms(), 'sequences/s')}.",
        f"AllReduce after every micro-batch: {readout(plan.step_ms(True), 'ms')}, communication "
        f"{readout(plan.comm_pct(True), '%')}; accumulating saves "
        f"{readout(acc.comm_time_saved_ms(plan.accum_steps, allreduce_ms), 'ms')}.",
    ]
    if checkpointing:
        lines.append(f"Checkpointing: each micro-batch takes {readout(plan.micro_batch_ms, 'ms')} "
                     f"instead of {readout(micro_batch_ms, 'ms')} (x 4/3, the forward pass again).")
    return lines


# -- the timeline -----------------------------------------------------------------------

def _row_blocks(plan: StepPlan, sync_every: bool) -> dict[str, list[tuple[float, float]]]:
    """(start, width) blocks of one timeline row, by kind."""
    compute, recompute, comm = [], [], []
    merged = plan.accum_steps > MAX_DRAWN_BLOCKS
    count, factor = (1, plan.accum_steps) if merged else (plan.accum_steps, 1)
    t = 0.0
    for _ in range(count):
        forward_backward = factor * (plan.micro_batch_ms - plan.recompute_ms)
        compute.append((t, forward_backward))
        if plan.recompute_ms:
            recompute.append((t + forward_backward, factor * plan.recompute_ms))
        t += factor * plan.micro_batch_ms
        if sync_every:
            comm.append((t, factor * plan.allreduce_ms))
            t += factor * plan.allreduce_ms
    if not sync_every:
        comm.append((t, plan.allreduce_ms))
        t += plan.allreduce_ms
    return {"compute": compute, "recompute": recompute, "comm": comm,
            "optimizer": [(t, plan.optimizer_ms)]}


def timeline_figure(accum_steps: int = 8, micro_batch_ms: float = 120.0,
                    allreduce_ms: float = 50.0, optimizer_ms: float = 0.0,
                    checkpointing: bool = False) -> Any:
    """Two rows: accumulate then one AllReduce; or an AllReduce after every micro-batch."""
    import matplotlib.pyplot as plt

    plan = make_plan(accum_steps, micro_batch_ms, allreduce_ms, optimizer_ms, checkpointing)
    styles = {"compute": ("tab:blue", "", "forward + backward"),
              "recompute": ("tab:purple", "..", "recomputed forward"),
              "comm": ("tab:orange", "//", "gradient AllReduce"),
              "optimizer": ("tab:green", "xx", "optimizer update")}
    fig, ax = plt.subplots(figsize=(9.0, 2.8))
    rows = ((1, "accumulate, then\none AllReduce", False),  # (y, label, sync every time)
            (0, "AllReduce after\nevery micro-batch", True))
    for y, _, sync_every in rows:
        for kind, blocks in _row_blocks(plan, sync_every).items():
            if kind == "recompute" and not checkpointing:
                continue
            color, hatch, label = styles[kind]
            ax.broken_barh(blocks, (y - 0.35, 0.7), facecolors=color, hatch=hatch,
                           edgecolor="white", linewidth=0.5, label=label if y == 1 else None)
        end = plan.step_ms(sync_every)
        ax.text(end, y, f"  {readout(end, 'ms')}\n  comm {readout(plan.comm_pct(sync_every), '%')}",
                va="center", fontsize=8)
    ax.set_yticks([y for y, _, _ in rows], [label for _, label, _ in rows], fontsize=8)
    ax.set_xlim(0, plan.step_ms(True) * 1.18)
    ax.set_xlabel("time within one optimizer step (ms)")
    merged = " (drawn merged)" if accum_steps > MAX_DRAWN_BLOCKS else ""
    ax.set_title(f"One optimizer step: {accum_steps} micro-batches{merged}", fontsize=10)
    ax.legend(fontsize=7, loc="upper right", ncol=2)
    ax.set_ylim(-0.6, 2.1)
    fig.subplots_adjust(left=0.17, right=0.98, top=0.88, bottom=0.18)
    plt.close(fig)
    return themed(fig)


def explorer() -> Any:
    """Sliders for the batch, the GPUs and the timings; timeline and verdicts redraw.

    It starts from a step of its own (a batch of 1024 on 16 GPUs, 200 ms micro-batches, a
    40 ms AllReduce), not from the exercises' numbers, so its readouts never answer them
    before the learner does, not even once one slider is moved to an exercise's number."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View

    controls = dict(
        target_batch=w.IntSlider(value=1024, min=32, max=16384, step=32,
                                 description="target effective batch", style=STYLE),
        micro_batch=w.IntSlider(value=4, min=1, max=64, description="micro-batch per GPU",
                                style=STYLE),
        dp_degree=w.IntSlider(value=16, min=1, max=512, description="data-parallel GPUs",
                              style=STYLE),
        micro_batch_ms=w.FloatSlider(value=200.0, min=10.0, max=1000.0, step=10.0,
                                     description="fwd + bwd per micro-batch (ms)",
                                     style=STYLE),
        allreduce_ms=w.FloatSlider(value=40.0, min=0.0, max=500.0, step=5.0,
                                   description="one AllReduce (ms)", style=STYLE),
        optimizer_ms=w.FloatSlider(value=0.0, min=0.0, max=200.0, step=5.0,
                                   description="optimizer update (ms)", style=STYLE),
        checkpointing=w.ToggleButtons(options=["off", "on"], value="off",
                                      description="activation checkpointing", style=STYLE),
    )
    view = View("ch02", [list(controls.values())])
    state: dict[str, Any] = {}

    def redraw() -> None:
        v = {name: control.value for name, control in controls.items()}
        ckpt = v["checkpointing"] == "on"
        batch = (v["target_batch"], v["micro_batch"], v["dp_degree"])
        lines = accumulation_messages(*batch, v["micro_batch_ms"], v["allreduce_ms"], ckpt)
        lines += accumulation_summary(*batch, v["micro_batch_ms"], v["allreduce_ms"],
                                      v["optimizer_ms"], ckpt)
        steps = acc.required_accumulation_steps(*batch)
        state["figure"] = timeline_figure(steps, v["micro_batch_ms"], v["allreduce_ms"],
                                          v["optimizer_ms"], ckpt)
        view.show("<br>".join(html.escape(line) for line in lines), [state["figure"]])

    view.watch(redraw)
    box = view.box
    box.controls, box.state = controls, state
    return box
