"""Chapter 5 explorer: GPipe, 1F1B, interleaved 1F1B and zero-bubble ZB-H1 as Gantt charts,
with the bubble marked, and DualPipe's bubble beside them. Also 1F1B with every W deferred
to idle time: ZB-H1's bubble without its memory bound, shown for contrast.

Every schedule is played by the one simulator in :mod:`solutions.pipeline_simulator`
(:func:`~solutions.pipeline_simulator.schedule_spans`); this module only draws and explains. Time is
counted in *slots*: one slot is one forward (or one backward) of a whole stage
(t_f = t_b = 1); for ZB-H1 the backward is split into an input-gradient pass B and a
weight-gradient pass W of one slot each (t_f = t_b = t_w = 1, Qi et al., ICLR 2024), and
a microbatch stays in flight until its W has run (W needs each linear layer's input and
output gradient, so its stash is counted like the forward's). Numbers are written by the
course's one formatter, :func:`autograder.units.format_quantity`.
"""

from __future__ import annotations

import html
from fractions import Fraction
from typing import Any

from autograder.prediction import Prediction, nearest_option
from autograder.units import format_quantity, format_value
from solutions import pipeline as pl
from solutions.pipeline_schedules import microbatch_group
from solutions.pipeline_simulator import (
    Span,
    idle_spans,
    makespan,
    peak_activations,
    schedule_spans,
)

#: dropdown label -> schedule name
SCHEDULES: dict[str, str] = {"GPipe": "gpipe", "1F1B": "1f1b", "Interleaved 1F1B": "interleaved",
                             "Zero bubble (ZB-H1)": "zb-h1",
                             "1F1B, all W deferred (not ZB-H1)": "1f1b-lazy-w"}
#: (t_f, t_b, t_w) in slots: the split schedules run B and W apart, the others whole
TIMES: dict[str, tuple[float, float, float]] = {"zb-h1": (1, 1, 1), "1f1b-lazy-w": (1, 1, 1)}
SPLIT_W = ("zb-h1", "1f1b-lazy-w")


def _pct(fraction: float) -> str:
    """A fraction as a percentage to one decimal, by the course's formatter: "37.5%"."""
    return format_quantity(round(100 * fraction, 1), "%")

_CHOICES = {"about 5%": 0.05, "about a quarter": 0.25, "about half": 0.5}


PREDICTION = Prediction(
    key="ch05",
    question=("Six pipeline stages process 10 microbatches with the 1F1B schedule. What share "
              "of the ideal compute time is lost to the bubble?"),
    actual=lambda: nearest_option(pl.bubble_over_compute(6, 10), _CHOICES),
    measure=lambda: pl.bubble_over_compute(6, 10),
    options=tuple(_CHOICES),
    explanation=("The bubble is (p-1)/m = 5/10 = 50% of the ideal compute time (5/15 = 33% of "
                 "the whole step). GPipe has exactly the same bubble; what 1F1B changes is "
                 "memory: stage 0 holds 6 microbatches' activations instead of all 10."),
    feedback={
        "about 5%": (
            "5% would take about 100 microbatches for 6 stages; with 10 the bubble is (p-1)/m = "
            "5/10."),
        "about a quarter": (
            "A quarter would take 20 microbatches for 6 stages; with 10 the bubble is (p-1)/m = "
            "5/10. 1F1B changes memory, not the bubble."),
        "about half": (
            "Right: (p-1)/m = 5/10."),
    },
    reflection=(
        "To shrink the bubble you can add microbatches or interleave stages. What does each of "
        "them cost you, and which would you try first on your own cluster?"),
)


# -- the schedules, from the simulator -------------------------------------------------

def stage_spans(schedule: str, pp: int, m: int, v: int = 1) -> list[list[Span]]:
    """Per GPU, the spans of ``schedule`` as
    :func:`solutions.pipeline_simulator.schedule_spans` plays it."""
    return schedule_spans(schedule, pp, m, v, *TIMES.get(schedule, (1, 1, 0)))


def split_w_formula_applies(pp: int, m: int) -> bool:
    """Whether ZB-H1's (p-1)(t_F+t_B-t_W)/(m(t_F+t_B+t_W)) holds: it is derived for the
    steady 1F1B pattern, whose deferred W passes fill the drain only with m >= p (Qi et al.
    2024, §2.1); with fewer microbatches each stage has at most m W's and idles longer."""
    return m >= pp


def bubble_fraction(schedule: str, pp: int, m: int, v: int = 1) -> Fraction:
    """Idle time over ideal compute time: (p-1)/(m v); for ZB-H1 (and the lazy-W 1F1B) with
    t_f = t_b = t_w, (p-1)/(3m) where that formula holds (m >= p), else the simulated
    schedule's own idle over busy time."""
    if schedule in SPLIT_W:
        if split_w_formula_applies(pp, m):
            return Fraction(pp - 1, 3 * m)
        spans = stage_spans(schedule, pp, m)
        busy = m * sum(TIMES[schedule])
        return Fraction(str(makespan(spans) - busy)) / Fraction(str(busy))
    return Fraction(pp - 1, m * (v if schedule == "interleaved" else 1))


# -- failure states in words -----------------------------------------------------------

def pipeline_messages(schedule: str, pp: int, m: int, v: int, target_pct: float) -> list[str]:
    """What is wrong with a configuration, in words (an empty list when nothing is).

    ``target_pct`` is the largest acceptable bubble, in percent of the ideal compute time
    (Narayanan et al.'s bubble time fraction); the bubble must be strictly below it.
    """
    chunks = v if schedule == "interleaved" else 1
    messages = []
    if schedule == "interleaved" and m < pp:
        messages.append(f"✘ The interleaved schedule needs at least PP microbatches: m = {m} "
                        f"is below {pp} (Megatron-Core's rule; Llama 3 changed its own "
                        "schedule to allow fewer).")
    if m < pp:
        messages.append(f"✘ Only {m} microbatch{'es' if m > 1 else ''} for {pp} stages: the "
                        "pipeline never fills, so no moment has every stage busy.")
    bubble = bubble_fraction(schedule, pp, m, v)
    target = Fraction(str(target_pct)) / 100
    if bubble >= target:
        # ZB-H1's (p-1)/(3m) has the form of an interleaved bubble with v = 3
        fix = pl.min_microbatches(pp, float(target), 3 if schedule in SPLIT_W else chunks)
        if schedule == "interleaved":
            fix = max(fix, pp)
        where = "above" if bubble > target else "exactly at, not below,"
        messages.append(f"✘ Bubble {_pct(float(bubble))} of ideal compute is {where} your "
                        f"{format_quantity(target_pct, '%')} target; m = {fix} microbatches "
                        "would meet it.")
    return messages


def interleaved_formula_applies(pp: int, m: int, v: int) -> bool:
    """True when GPU 0's interleaved peak is Korthikanti's p(1 + (p-1)/(p v)): microbatch
    groups of p, and a warm-up of (p-1) x 2 + (v-1) x p chunk forwards that m v chunks can
    fill. Otherwise the warm-up is cut short (fewer in flight) or the groups are longer."""
    return microbatch_group(pp, m) == pp and (pp - 1) * 2 + (v - 1) * pp < m * v


def _peak_note(schedule: str, pp: int, m: int, v: int) -> str:
    """Where the peak figures come from, for ``schedule`` only."""
    if schedule == "gpipe":
        return f"GPipe holds all m = {m} on every GPU"
    if schedule == "1f1b":
        return "1F1B holds min(p - i, m) on GPU i"
    if schedule == "zb-h1":
        return ("ZB-H1 holds min(p, m) on every GPU: p - i between F and B, and up to i "
                "microbatches whose W waits (each W stash counted as a forward's)")
    if schedule == "1f1b-lazy-w":
        return ("every W waits for idle time, so the W stashes pile up: up to m on every "
                "GPU, growing with m like GPipe")
    if interleaved_formula_applies(pp, m, v):
        return ("interleaved GPU 0: p(1 + (p-1)/(p v)) = "
                f"{format_value(pp * pl.interleaved_activation_factor(pp, v))}")
    return ("interleaved: the warm-up is cut short by m v or run in longer groups, so "
            "p(1 + (p-1)/(p v)) does not apply; the figures are simulated")


def summary_lines(schedule: str, pp: int, m: int, v: int) -> list[str]:
    """The numbers the explorer reports beside the chart, as sentences: one peak-activation
    figure per GPU, from the simulator, and the formula only where it applies."""
    chunks = v if schedule == "interleaved" else 1
    spans = stage_spans(schedule, pp, m, chunks)
    busy = m * sum(TIMES.get(schedule, (1, 1, 0)))
    idle = makespan(spans) - busy
    held = ", ".join(format_value(round(peak_activations(ops), 6)) for ops in spans)
    bubble = bubble_fraction(schedule, pp, m, v)
    formula = "(p-1)/(m·v)"
    if schedule in SPLIT_W:
        formula = ("(p-1)(t_F+t_B-t_W)/(m(t_F+t_B+t_W))" if split_w_formula_applies(pp, m)
                   else "simulated (the zero-bubble formula needs m ≥ p)")
    return [
        f"Step: {format_value(makespan(spans))} slots; each stage computes "
        f"{format_value(busy)} and idles {format_value(idle)}.",
        f"Bubble: {formula} = {_pct(float(bubble))} of ideal compute, "
        f"{_pct(float(bubble / (1 + bubble)))} of the step.",
        f"Activations held at the peak, in microbatches, GPU 0 to {pp - 1}: {held} "
        f"({_peak_note(schedule, pp, m, chunks)}).",
    ]


def beyond_1f1b_rows(pp: int) -> list[tuple[str, str, float, str, str]]:
    """DeepSeek-V3's Table 2 for ``pp`` stages with t_F = 1, a whole backward t_B = 2 and
    its weight part t_W = 1, and no overlap (t_F&B = t_F + t_B = 3, DualPipe's worst
    case), and the V-shaped zero-bubble schedule as Qi et al. publish it: (schedule, bubble
    formula, bubble in slots, parameters, activations in microbatches)."""
    rows = [
        ("1F1B", "(p-1)(F+B)", (pp - 1) * 3.0, "1x", "p"),
        ("ZB1P (automatic; ZB-H1's bubble)", "(p-1)(F+B-2W)", pl.zb_h1_bubble_slots(pp, 1, 1, 1),
         "1x", "p"),
    ]
    if pp % 2 == 0:
        rows.append(("DualPipe", "(p/2-1)(F&B+B-3W)", pl.dualpipe_bubble(pp, 3, 2, 1), "2x",
                     "p + 1"))
    # Qi et al. 2024 (arXiv:2405.15362): two chunks per GPU in a V, about no bubble for m >> p
    rows.append(("V-ZB / ZB-V (V-shape)", "about 0", pl.v_shape_bubble_rate(pp, 64, "v-zb"),
                 "1x", f"{pl.v_shape_peak_microbatches(pp, 'v-zb')} = p"))
    return rows


def beyond_1f1b_table(pp: int = 8) -> Any:
    """The rows of :func:`beyond_1f1b_rows` as an HTML table for the notebook."""
    from IPython.display import HTML

    cells = "".join(f"<tr><td>{name}</td><td><code>{formula}</code></td>"
                    f"<td>{format_value(value)}</td>"
                    f"<td>{params}</td><td>{acts}</td></tr>"
                    for name, formula, value, params, acts in beyond_1f1b_rows(pp))
    # its own horizontal scroll: six columns do not fit a narrow notebook
    return HTML("<div style='overflow-x:auto'>"
                f"<table><caption>p = {pp}; F = 1, B = 2 (whole backward), W = 1 slot"
                "</caption><tr><th>schedule</th><th>bubble</th><th>slots</th>"
                f"<th>parameters</th><th>activations</th></tr>{cells}</table></div>")


# -- plots --------------------------------------------------------------------------

_COLOURS = {"F": "#4C72B0", "B": "#DD8452", "W": "#55A868", "idle": "#EEEEEE"}


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
        placed.duration for ops in spans for placed in ops) >= 1
    for s, ops in enumerate(spans):
        for phase, hatch in (("F", ""), ("B", "//"), ("W", "..")):
            mine = [placed for placed in ops if placed.op.phase == phase]
            if not mine and phase == "W":
                continue
            ax.broken_barh([(placed.start, placed.duration) for placed in mine],
                           (s - 0.4, 0.8), edgecolor="white", hatch=hatch,
                           facecolors=[_shade(_COLOURS[phase], p.op.chunk) for p in mine])
        ax.broken_barh(idle_spans(ops, span), (s - 0.4, 0.8), facecolors=_COLOURS["idle"],
                       edgecolor="#999999", hatch="xx")
        for placed in ops if label else ():
            op = placed.op
            ax.text(placed.start + placed.duration / 2, s, f"{op.phase}{op.microbatch + 1}",
                    ha="center", va="center", fontsize=7,
                    color="white" if op.phase == "F" else "black")
    ax.set_yticks(range(len(spans)), [f"GPU {s}" for s in range(len(spans))])
    ax.set_ylim(len(spans) - 0.5, -0.5)
    ax.set_xlim(0, span)
    ax.set_title(title, fontsize=10, loc="left")
    handles = [Patch(facecolor=_COLOURS["F"], label="forward"),
               Patch(facecolor=_COLOURS["B"], hatch="//", label="backward")]
    if any(placed.op.phase == "W" for ops in spans for placed in ops):
        handles += [Patch(facecolor=_COLOURS["W"], hatch="..", label="weight gradient (W)")]
    ax.legend(handles=[*handles, Patch(facecolor=_COLOURS["idle"], hatch="xx",
                                       edgecolor="#999999", label="idle (bubble)")],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)


def _title(schedule: str, pp: int, m: int, v: int) -> str:
    name = {value: key for key, value in SCHEDULES.items()}[schedule]
    chunks = v if schedule == "interleaved" else 1
    extra = f", v = {v}" if schedule == "interleaved" else ""
    bubble = bubble_fraction(schedule, pp, m, chunks)
    return (f"{name}, p = {pp}, m = {m}{extra}: bubble "
            f"{_pct(float(bubble))} of compute, {_pct(float(bubble / (1 + bubble)))} of the step")


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
    for ax, schedule in zip(axes, ("gpipe", "1f1b", "interleaved"), strict=True):
        spans = stage_spans(schedule, pp, m, v if schedule == "interleaved" else 1)
        _draw_gantt(ax, spans, _title(schedule, pp, m, v))
        longest = max(longest, makespan(spans))
    axes[0].set_xlim(0, longest)  # shared: the shorter interleaved step shows as white space
    axes[-1].set_xlabel("time (slots: one forward or one backward of a whole stage)")
    plt.close(fig)
    return fig


def zero_bubble_figure(pp: int = 4, m: int = 8) -> Any:
    """1F1B, ZB-H1 and 1F1B with every W deferred, t_f = t_b = t_w = 1 slot, on one time
    axis: ZB-H1's delayed W passes fill the drain at 1F1B's peak memory; deferring every W
    fills it too, but holds W stashes for up to m microbatches."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(10, 1.35 * pp + 3), sharex=True)
    whole = schedule_spans("1f1b", pp, m, 1, 1, 1, 1)
    split = schedule_spans("zb-h1", pp, m, 1, 1, 1, 1)
    lazy = schedule_spans("1f1b-lazy-w", pp, m, 1, 1, 1, 1)
    bubble = format_value(pl.zb_h1_bubble_slots(pp, 1, 1, 1))
    _draw_gantt(axes[0], whole, f"1F1B, p = {pp}, m = {m}, backward = B + W = 2 slots: "
                f"idle {format_value((pp - 1) * 3)} slots per GPU, peak "
                f"{_peaks(whole)} microbatches")
    _draw_gantt(axes[1], split, f"ZB-H1: W delayed by i on GPU i, idle {bubble} slots per "
                f"GPU, peak {_peaks(split)} in flight (1F1B's p)")
    _draw_gantt(axes[2], lazy, f"1F1B, every W deferred to idle time: idle {bubble} slots, "
                f"peak {_peaks(lazy)} in flight (grows with m)")
    axes[0].set_xlim(0, makespan(whole))
    axes[-1].set_xlabel("time (slots: F, B and W one slot each)")
    plt.close(fig)
    return fig


def _peaks(spans: list[list[Span]]) -> str:
    """The largest per-GPU peak, by the formatter."""
    return format_value(round(max(peak_activations(ops) for ops in spans), 6))


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
    pp = w.IntSlider(value=5, min=1, max=16, description="PP (stages)", style=STYLE)
    m = w.IntSlider(value=6, min=1, max=64, description="Microbatches (m)", style=STYLE)
    v = w.IntSlider(value=2, min=1, max=4, description="Chunks per GPU (v)", style=STYLE)
    target = w.FloatSlider(value=10.0, min=1.0, max=50.0, step=0.5, style=STYLE,
                           description="Bubble target (%)")
    view = View("ch05", [[schedule, pp, m], [v, target]])

    def redraw() -> None:
        name = SCHEDULES[schedule.value]
        v.disabled = name != "interleaved"
        messages = pipeline_messages(name, pp.value, m.value, v.value, target.value)
        if name == "interleaved" and m.value < pp.value:
            view.show(_report_html(messages, []),
                      invalid=f"the interleaved schedule needs at least as many microbatches "
                              f"(m = {m.value}) as stages (PP = {pp.value}).")
            return
        view.show(_report_html(messages, summary_lines(name, pp.value, m.value, v.value)),
                  [gantt_figure(name, pp.value, m.value, v.value)])

    view.watch(redraw)
    return view.box
