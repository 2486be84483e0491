"""Chapter 5 explorer: GPipe, 1F1B and interleaved 1F1B as Gantt charts, with the bubble marked.

Time is counted in *slots*: one slot is one forward (or one backward) of a whole stage,
as in :mod:`solutions.pipeline` (t_f = t_b = 1). The bubble fractions do not depend on that
choice. With v chunks per GPU, each chunk's forward or backward lasts 1/v slot.

:mod:`solutions.pipeline` generates the GPipe and 1F1B schedules. The interleaved schedule
is generated here, following the order of Megatron-LM's
``forward_backward_pipelining_with_interleaving`` (megatron/core/pipeline_parallel/
schedules.py): stage i first runs (p - i - 1) x 2 + (v - 1) x p chunk forwards, then
alternates one forward and one backward, then drains; microbatches go through the chunks
in groups of p. Narayanan et al., SC21, §2.2.2 and Fig. 4 (bottom).
"""

from __future__ import annotations

import html
from fractions import Fraction
from typing import Any

from autograder.prediction import Prediction
from solutions import pipeline as pl

#: dropdown label -> schedule name
SCHEDULES: dict[str, str] = {"GPipe": "gpipe", "1F1B": "1f1b", "Interleaved 1F1B": "interleaved"}
#: one drawn operation: (start slot, duration in slots, "F" or "B", microbatch, chunk)
Span = tuple[float, float, str, int, int]

_CHOICES = {"about 5%": 0.05, "about a quarter": 0.25, "about half": 0.5}


def _closest_choice(value: float) -> str:
    return min(_CHOICES, key=lambda label: abs(_CHOICES[label] - value))


PREDICTION = Prediction(
    key="ch05",
    question=("Four pipeline stages process 12 microbatches with the 1F1B schedule. What share "
              "of the ideal compute time is lost to the bubble?"),
    actual=lambda: _closest_choice(pl.bubble_over_compute(4, 12)),
    options=tuple(_CHOICES),
    explanation=("The bubble is (p-1)/m = 3/12 = 25% of the ideal compute time (3/15 = 20% of "
                 "the whole step). GPipe has exactly the same bubble; what 1F1B changes is "
                 "memory: stage 0 holds 4 microbatches' activations instead of all 12."),
    feedback={
        "about 5%": (
            "5% would take about 60 microbatches for 4 stages; with 12 the bubble is (p-1)/m = "
            "3/12."),
        "about a quarter": (
            "Right: (p-1)/m = 3/12."),
        "about half": (
            "Half is (p-1)/m with only 6 microbatches; 12 halve it again. 1F1B changes memory, "
            "not the bubble."),
    },
    reflection=(
        "To shrink the bubble you can add microbatches or interleave stages. What does each of "
        "them cost you, and which would you try first on your own cluster?"),
)


# -- the interleaved schedule ---------------------------------------------------------

def interleaved_order(pp: int, m: int, v: int, stage: int) -> list[tuple[str, int, int]]:
    """The order in which ``stage`` runs its chunk operations: (phase, chunk, microbatch).

    Virtual microbatch k (0 <= k < m v) belongs to group k // (p v); inside a group, p
    consecutive microbatches pass through chunk 0, then the same p through chunk 1, and
    so on. Backwards visit the chunks in reverse.
    """
    total = m * v

    def chunk(k: int, forward: bool) -> int:
        c = (k % (pp * v)) // pp
        return c if forward else v - 1 - c

    def microbatch(k: int) -> int:
        return (k // (pp * v)) * pp + k % pp

    warmup = min((pp - stage - 1) * 2 + (v - 1) * pp, total)
    order = [("F", chunk(k, True), microbatch(k)) for k in range(warmup)]
    for i in range(total - warmup):
        order += [("F", chunk(warmup + i, True), microbatch(warmup + i)),
                  ("B", chunk(i, False), microbatch(i))]
    order += [("B", chunk(k, False), microbatch(k)) for k in range(total - warmup, total)]
    return order


def schedule_interleaved(pp: int, m: int, v: int) -> list[list[Span]]:
    """Interleaved 1F1B, simulated: per stage, its spans in start order (slots of 1/v).

    Chunk c of GPU s is virtual stage c p + s. A forward needs the previous virtual
    stage's forward of the same microbatch; a backward needs the next virtual stage's
    backward (the last one needs its own forward). Each operation starts as soon as its
    GPU is free and its input has arrived (communication is free). Megatron-LM requires
    m to be a multiple of p; the order above deadlocks otherwise.
    """
    pl.bubble_over_compute(pp, m, v)  # validates pp, m, v
    if m % pp:
        raise ValueError(f"the interleaved schedule needs m to be a multiple of pp: "
                         f"m = {m} is not a multiple of pp = {pp}")
    orders = [interleaved_order(pp, m, v, s) for s in range(pp)]
    last = pp * v - 1
    end: dict[tuple[str, int, int], int] = {}
    spans: list[list[Span]] = [[] for _ in range(pp)]
    free_at, cursor = [0] * pp, [0] * pp
    while any(cursor[s] < len(orders[s]) for s in range(pp)):
        progressed = False
        for s in range(pp):
            while cursor[s] < len(orders[s]):
                phase, c, mb = orders[s][cursor[s]]
                virtual = c * pp + s
                if phase == "F":
                    dep = ("F", virtual - 1, mb) if virtual > 0 else None
                else:
                    dep = ("B", virtual + 1, mb) if virtual < last else ("F", virtual, mb)
                if dep is not None and dep not in end:
                    break
                start = max(free_at[s], end[dep] if dep is not None else 0)
                spans[s].append((start / v, 1 / v, phase, mb, c))
                end[(phase, virtual, mb)] = free_at[s] = start + 1
                cursor[s] += 1
                progressed = True
        if not progressed:
            raise RuntimeError("interleaved schedule deadlocked")
    return spans


def stage_spans(schedule: str, pp: int, m: int, v: int = 1) -> list[list[Span]]:
    """Per stage, the spans of ``schedule`` ("gpipe", "1f1b" or "interleaved")."""
    if schedule == "interleaved":
        return schedule_interleaved(pp, m, v)
    generators = {"gpipe": pl.schedule_gpipe, "1f1b": pl.schedule_1f1b}
    if schedule not in generators:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES.values())}, "
                         f"got {schedule!r}")
    return [[(float(t), 1.0, phase, mb, 0) for t, phase, mb in ops]
            for ops in generators[schedule](pp, m)]


def makespan(spans: list[list[Span]]) -> float:
    """The end of the last operation, in slots."""
    return max(start + length for ops in spans for start, length, *_ in ops)


def idle_spans(ops: list[Span], span: float) -> list[tuple[float, float]]:
    """The gaps of one stage between time 0 and ``span``: (start, length) each."""
    gaps, t = [], 0.0
    for start, length, *_ in sorted(ops):
        if start > t + 1e-9:
            gaps.append((t, start - t))
        t = max(t, start + length)
    if span > t + 1e-9:
        gaps.append((t, span - t))
    return gaps


def peak_activations(ops: list[Span]) -> float:
    """Most microbatches' worth of activations one stage holds at once.

    A chunk holds 1/v of a stage's layers, so each chunk forward not yet matched by its
    backward counts as ``length`` (1/v) of a microbatch.
    """
    held = peak = 0.0
    for _, length, phase, _, _ in sorted(ops):
        held += length if phase == "F" else -length
        peak = max(peak, held)
    return peak


# -- failure states in words -----------------------------------------------------------

def pipeline_messages(schedule: str, pp: int, m: int, v: int, target_pct: float) -> list[str]:
    """What is wrong with a configuration, in words (an empty list when nothing is).

    ``target_pct`` is the largest acceptable bubble, in percent of the ideal compute time
    (Narayanan et al.'s bubble time fraction); the bubble must be strictly below it.
    """
    chunks = v if schedule == "interleaved" else 1
    messages = []
    if schedule == "interleaved" and m % pp:
        messages.append(f"✘ The interleaved schedule needs m to be a multiple of PP: m = {m} "
                        f"is not a multiple of {pp} (a Megatron-LM requirement).")
    if m < pp:
        messages.append(f"✘ Only {m} microbatch{'es' if m > 1 else ''} for {pp} stages: the "
                        "pipeline never fills, so no moment has every stage busy.")
    bubble = Fraction(pp - 1, m * chunks)
    target = Fraction(str(target_pct)) / 100
    if bubble >= target:
        fix = pl.min_microbatches(pp, float(target), chunks,
                                  multiple_of=pp if schedule == "interleaved" else 1)
        where = "above" if bubble > target else "exactly at, not below,"
        messages.append(f"✘ Bubble {float(bubble):.1%} of ideal compute is {where} your "
                        f"{target_pct:g}% target; m = {fix} microbatches would meet it.")
    return messages


def summary_lines(schedule: str, pp: int, m: int, v: int) -> list[str]:
    """The numbers the explorer reports beside the chart, as sentences."""
    chunks = v if schedule == "interleaved" else 1
    spans = stage_spans(schedule, pp, m, chunks)
    idle = makespan(spans) - 2 * m
    held = ", ".join(f"{peak_activations(ops):g}" for ops in spans)
    return [
        f"Step: {makespan(spans):g} slots; each stage computes {2 * m} and idles {idle:g}.",
        f"Bubble: (p-1)/(m·v) = {pl.bubble_over_compute(pp, m, chunks):.1%} of ideal compute, "
        f"{pl.bubble_over_total(pp, m, chunks):.1%} of the step.",
        f"Activations held at the peak, in microbatches, GPU 0 to {pp - 1}: {held} "
        f"(GPipe: m = {m} on every GPU; 1F1B: min(p - i, m) on GPU i).",
    ]


# -- plots --------------------------------------------------------------------------

_COLOURS = {"F": "#4C72B0", "B": "#DD8452", "idle": "#EEEEEE"}


def _shade(colour: str, chunk: int) -> Any:
    """Later model chunks in lighter tints of the same colour (their labels say the rest)."""
    from matplotlib.colors import to_rgb

    mix = min(0.2 * chunk, 0.6)
    return tuple(c + (1 - c) * mix for c in to_rgb(colour))


def _draw_gantt(ax: Any, spans: list[list[Span]], title: str) -> None:
    from matplotlib.patches import Patch

    span = makespan(spans)
    # Labels cost more to draw than the bars: only for whole-stage ops on small charts.
    label = sum(len(ops) for ops in spans) <= 64 and min(
        length for ops in spans for _, length, *_ in ops) >= 1
    for s, ops in enumerate(spans):
        for phase, hatch in (("F", ""), ("B", "//")):
            mine = [op for op in ops if op[2] == phase]
            ax.broken_barh([(start, length) for start, length, *_ in mine], (s - 0.4, 0.8),
                           facecolors=[_shade(_COLOURS[phase], op[4]) for op in mine],
                           edgecolor="white", hatch=hatch)
        ax.broken_barh(idle_spans(ops, span), (s - 0.4, 0.8), facecolors=_COLOURS["idle"],
                       edgecolor="#999999", hatch="xx")
        for start, length, phase, mb, _ in ops if label else ():
            ax.text(start + length / 2, s, f"{phase}{mb + 1}", ha="center", va="center",
                    fontsize=7, color="white" if phase == "F" else "black")
    ax.set_yticks(range(len(spans)), [f"GPU {s}" for s in range(len(spans))])
    ax.set_ylim(len(spans) - 0.5, -0.5)
    ax.set_xlim(0, span)
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(handles=[Patch(facecolor=_COLOURS["F"], label="forward"),
                       Patch(facecolor=_COLOURS["B"], hatch="//", label="backward"),
                       Patch(facecolor=_COLOURS["idle"], hatch="xx", edgecolor="#999999",
                             label="idle (bubble)")],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)


def _title(schedule: str, pp: int, m: int, v: int) -> str:
    name = {value: key for key, value in SCHEDULES.items()}[schedule]
    chunks = v if schedule == "interleaved" else 1
    extra = f", v = {v}" if schedule == "interleaved" else ""
    return (f"{name}, p = {pp}, m = {m}{extra}: bubble "
            f"{pl.bubble_over_compute(pp, m, chunks):.1%} of compute, "
            f"{pl.bubble_over_total(pp, m, chunks):.1%} of the step")


def gantt_figure(schedule: str = "1f1b", pp: int = 4, m: int = 8, v: int = 2) -> Any:
    """One schedule as a Gantt chart: a row per GPU, idle slots hatched as the bubble."""
    import matplotlib.pyplot as plt

    chunks = v if schedule == "interleaved" else 1
    spans = stage_spans(schedule, pp, m, chunks)
    fig, ax = plt.subplots(figsize=(10, 0.45 * pp + 1.4))
    _draw_gantt(ax, spans, _title(schedule, pp, m, v))
    ax.set_xlabel("time (slots: one forward or one backward of a whole stage)")
    plt.close(fig)
    return fig


def compare_figure(pp: int = 4, m: int = 8, v: int = 2) -> Any:
    """GPipe, 1F1B and interleaved 1F1B on one time axis: same work, where is the idle?"""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(10, 1.35 * pp + 3), sharex=True)
    longest = 0.0
    for ax, schedule in zip(axes, SCHEDULES.values(), strict=True):
        spans = stage_spans(schedule, pp, m, v if schedule == "interleaved" else 1)
        _draw_gantt(ax, spans, _title(schedule, pp, m, v))
        longest = max(longest, makespan(spans))
    axes[0].set_xlim(0, longest)  # shared: the shorter interleaved step shows as white space
    axes[-1].set_xlabel("time (slots: one forward or one backward of a whole stage)")
    plt.close(fig)
    return fig


# -- the explorer -------------------------------------------------------------------

def _report_html(messages: list[str], lines: list[str]) -> str:
    verdict = ("<p><strong>✔ Bubble below your target.</strong></p>" if not messages else
               "".join(f"<p><strong>{html.escape(msg)}</strong></p>" for msg in messages))
    details = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f'<div role="status">{verdict}<ul>{details}</ul></div>'


def explorer() -> Any:
    """Sliders for PP, microbatches, chunks per GPU and a bubble target; a live Gantt chart."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View

    schedule = w.Dropdown(options=list(SCHEDULES), value="1F1B", description="Schedule",
                          style=STYLE)
    pp = w.IntSlider(value=4, min=1, max=16, description="PP (stages)", style=STYLE)
    m = w.IntSlider(value=4, min=1, max=64, description="Microbatches (m)", style=STYLE)
    v = w.IntSlider(value=2, min=1, max=4, description="Chunks per GPU (v)", style=STYLE)
    target = w.FloatSlider(value=10.0, min=1.0, max=50.0, step=0.5, style=STYLE,
                           description="Bubble target (%)")
    view = View("ch05", [[schedule, pp, m], [v, target]])

    def redraw() -> None:
        name = SCHEDULES[schedule.value]
        v.disabled = name != "interleaved"
        messages = pipeline_messages(name, pp.value, m.value, v.value, target.value)
        if name == "interleaved" and m.value % pp.value:
            view.show(_report_html(messages, []),
                      invalid=f"the interleaved schedule needs the microbatches (m = {m.value})"
                              f" to be a multiple of the stages (PP = {pp.value}).")
            return
        view.show(_report_html(messages, summary_lines(name, pp.value, m.value, v.value)),
                  [gantt_figure(name, pp.value, m.value, v.value)])

    view.watch(redraw)
    return view.box
