"""Chapter 8 · Mixed precision: number lines of the training formats and a loss-scale trace.

Format limits follow IEEE 754-2008 (§3.4) and, for FP8, Micikevicius et al. 2022
(arXiv:2209.05433, Table 1); the scaler follows ``torch.amp.GradScaler`` (growth x2 after
``growth_interval`` clean steps, x0.5 and a skipped step on inf/NaN).
"""

from __future__ import annotations

import html
import math
from typing import Any

from autograder.prediction import Prediction
from autograder.units import format_rounded as readout
from solutions import loss_scaler as ls
from solutions import precision as pr
from workbook.explorers.view import themed

# Top to bottom on the number lines: widest range first.
LINE_FORMATS = (pr.FP32, pr.BF16, pr.FP16, pr.FP8_E5M2, pr.FP8_E4M3)
SCALE_OPTIONS = {1.0: "the same as at the start", 0.25: "a quarter of it", 2.0: "double it"}
PREDICTION_FLAGS = [False, True, False, True, False]

PREDICTION = Prediction(
    key="ch08",
    question=("A GradScaler starts at scale 65536 with growth_interval 2000. Five steps follow: "
              "no overflow, overflow, no overflow, overflow, no overflow. After the fifth "
              "step, what is the scale?"),
    actual=lambda: scale_ratio_option(
        ls.dynamic_loss_scale(PREDICTION_FLAGS, 65536.0, 2000) / 65536.0),
    measure=lambda: ls.dynamic_loss_scale(PREDICTION_FLAGS, 65536.0, 2000),
    options=tuple(SCALE_OPTIONS.values()),
    explanation=("Each overflow halves the scale and skips its step: 65536 -> 32768 -> 16384, "
                 "a quarter. Growing it back needs 2000 clean steps in a row, which five "
                 "steps never reach."),
    feedback={
        "the same as at the start": (
            "The scaler does not average out: each overflow halves the scale, and only "
            "growth_interval (2000) clean steps in a row grow it back."),
        "a quarter of it": (
            "Right: two overflows, two halvings."),
        "double it": (
            "Growing needs 2000 clean steps in a row, which five steps never reach; the two "
            "overflows halve it twice."),
    },
    reflection=(
        "Your run's loss scale keeps falling step after step. What does that tell you about the "
        "gradients, and what would you check before blaming the initial scale?"),
)


def scale_ratio_option(ratio: float) -> str:
    """The prediction option for a final/initial scale ratio of 1, 1/4 or 2."""
    if ratio not in SCALE_OPTIONS:
        raise ValueError(f"no option for a scale ratio of {ratio!r}")
    return SCALE_OPTIONS[ratio]


# -- where a number lands in a format ------------------------------------------------------
def classify(value: float, fmt: pr.FloatFormat) -> str:
    """"normal", "subnormal", "zero" (rounds to 0) or "overflow" for ``|value|`` in ``fmt``.

    Round to nearest: below half the smallest subnormal a value becomes 0; anything above
    the largest finite value counts as an overflow here.
    """
    magnitude = abs(value)
    if magnitude > fmt.max_normal:
        return "overflow"
    if magnitude >= fmt.min_normal:
        return "normal"
    return "subnormal" if magnitude > fmt.min_subnormal / 2 else "zero"


def significant_bits(value: float, fmt: pr.FloatFormat) -> int:
    """Bits of precision left: ``m + 1`` for a normal, fewer for a subnormal, 0 if flushed."""
    kind = classify(value, fmt)
    if kind == "normal":
        return fmt.mantissa_bits + 1
    if kind == "subnormal":
        return max(1, math.floor(math.log2(abs(value) / fmt.min_subnormal)) + 1)
    return 0


def precision_report(gradient: float, loss_scale: float = 1.0,
                     formats: tuple[pr.FloatFormat, ...] = LINE_FORMATS) -> list[str]:
    """One line per format saying what happens to ``gradient x loss_scale`` when stored."""
    value = gradient * loss_scale
    lines = []
    for fmt in formats:
        kind, full = classify(value, fmt), fmt.mantissa_bits + 1
        if kind == "normal":
            lines.append(f"✔ {fmt.name} stores {value:.2e} as a normal number ({full} "
                         "significant bits).")
        elif kind == "subnormal":
            lines.append(f"⚠ {fmt.name} stores {value:.2e} only as a subnormal: "
                         f"{significant_bits(value, fmt)} significant bits instead of {full}.")
        elif kind == "zero":
            lines.append(f"✘ {fmt.name} flushes {value:.2e} to zero (its smallest subnormal "
                         f"is {fmt.min_subnormal:.2e}).")
        else:
            lines.append(f"✘ {fmt.name} overflows: {value:.2e} is above its largest value "
                         f"{fmt.max_normal:g}.")
    return lines


def precision_problems(gradient: float, loss_scale: float = 1.0,
                       formats: tuple[pr.FloatFormat, ...] = LINE_FORMATS) -> list[str]:
    """Only the formats that lose the value or its precision (empty when all store it)."""
    return [line for line in precision_report(gradient, loss_scale, formats)
            if not line.startswith("✔")]


def overflow_pattern(n_steps: int, burst: int = 0, every: int = 0) -> list[bool]:
    """Overflow flags: the first ``burst`` steps, and every ``every``-th step (0 = never)."""
    return [i < burst or (every > 0 and (i + 1) % every == 0) for i in range(n_steps)]


def loss_scale_problems(overflows: list[bool], init_scale: float = 65536.0,
                        growth_interval: int = 2000) -> list[str]:
    """What the trace cost, in words (empty when no step overflowed)."""
    problems: list[str] = []
    skipped = ls.skipped_steps(overflows)
    if skipped:
        problems.append(f"✘ {skipped} of {len(overflows)} optimizer steps skipped "
                        f"({readout(100 * skipped / len(overflows), '%')}): their updates are "
                        "lost.")
    final = ls.dynamic_loss_scale(overflows, init_scale, growth_interval)
    if final < 1.0:
        problems.append(f"✘ The scale fell below 1 (to {final:g}): the loss is now scaled "
                        "down, and small gradients underflow sooner.")
    return problems


# -- pictures -----------------------------------------------------------------------------
def _plain_ticks(axis: Any, ticks: list[float], label: Any) -> None:
    # Plain-text labels: matplotlib's default 10^k labels go through mathtext, which
    # costs most of the drawing time of a log axis.
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FixedFormatter([label(t) for t in ticks]))
    axis.set_minor_locator(NullLocator())


def number_lines_figure(value: float | None = None,
                        formats: tuple[pr.FloatFormat, ...] = LINE_FORMATS) -> Any:
    """Each format's subnormal range (thin, dashed) and normal range (thick) on a log axis.

    Two lines per format, plus one vertical line at ``value`` when given.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.6))
    for row, fmt in enumerate(reversed(formats)):
        ax.plot([fmt.min_subnormal, fmt.min_normal], [row, row], "--", color=f"C{row}",
                lw=1.5, marker="|", markersize=10)
        ax.plot([fmt.min_normal, fmt.max_normal], [row, row], "-", color=f"C{row}", lw=6,
                solid_capstyle="butt")
        ax.text(fmt.min_subnormal, row + 0.22, f"{fmt.min_subnormal:.1e}", ha="center",
                fontsize=7)
        ax.text(fmt.max_normal, row + 0.22, f"{fmt.max_normal:.3g}", ha="center", fontsize=7)
    if value is not None:
        ax.axvline(abs(value), color="black", linestyle=":", lw=1.5,
                   label=f"stored value {abs(value):.2e}")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xscale("log")
    _plain_ticks(ax.xaxis, [10.0**k for k in range(-40, 40, 10)], lambda v: f"{v:.0e}")
    ax.set_yticks(range(len(formats)))
    # no "min normal" beside each name: FP16's is exercise 8.1's answer; the thick bar's
    # left end shows where each format's normal numbers start
    ax.set_yticklabels([f"{f.name} (1-{f.exponent_bits}-{f.mantissa_bits})"
                        for f in reversed(formats)], fontsize=8)
    ax.set_ylim(-0.6, len(formats) - 0.3)
    ax.set_xlabel("magnitude (log scale); dashed = subnormals, thick = normal numbers")
    ax.set_title("Where each format can store a number (sign-exponent-mantissa bits)",
                 fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return themed(fig)


def loss_scale_figure(overflows: list[bool], init_scale: float = 65536.0,
                      growth_interval: int = 2000) -> Any:
    """The scale after every step (a step line) with each overflow marked: two lines."""
    import matplotlib.pyplot as plt

    rows = ls.loss_scale_trace(overflows, init_scale, growth_interval)
    scales = [init_scale] + [scale for scale, _, _ in rows]
    steps = list(range(len(scales)))
    hits = [i + 1 for i, flag in enumerate(overflows) if flag]
    fig, ax = plt.subplots(figsize=(10, 3.4))
    ax.step(steps, scales, where="post", color="C0", label="loss scale after the step")
    ax.plot(hits, [scales[i - 1] for i in hits], "x", color="C3", markersize=8,
            label="overflow: step skipped, scale halved")
    ax.set_yscale("log", base=2)
    low, high = math.floor(math.log2(min(scales))), math.ceil(math.log2(max(scales)))
    stride = max(1, (high - low) // 8)
    _plain_ticks(ax.yaxis, [2.0**k for k in range(low, high + 1, stride)], lambda v: f"{v:g}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale")
    ax.set_title(f"Start {init_scale:g}, growth_interval {growth_interval}: ends at "
                 f"{scales[-1]:g} after {len(overflows)} steps, {len(hits)} skipped",
                 fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    plt.close(fig)
    return themed(fig)


# -- the explorer -------------------------------------------------------------------------
def _lines_html(lines: list[str]) -> str:
    return "<br>".join(html.escape(line) for line in lines)


def explorer() -> Any:
    """Two views: a gradient on the number lines, and a dynamic loss-scale trace."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View

    number = dict(
        gradient=w.FloatLogSlider(value=1e-6, base=10, min=-12, max=6, step=0.1,
                                  readout_format=".2e",  # "1.00e-06" fits its readout box
                                  description="gradient magnitude", style=STYLE),
        loss_scale=w.FloatLogSlider(value=1.0, base=2, min=0, max=24, step=1,
                                    description="loss scale", style=STYLE),
    )
    trace = dict(
        n_steps=w.IntSlider(value=60, min=10, max=200, description="steps", style=STYLE),
        burst=w.IntSlider(value=3, min=0, max=20, description="overflows at start",
                          style=STYLE),
        every=w.IntSlider(value=0, min=0, max=30, description="then one every (0 = never)",
                          style=STYLE),
        growth_interval=w.IntSlider(value=10, min=1, max=40, description="growth_interval",
                                    style=STYLE),
        init_scale=w.Dropdown(options=[("2^10", 1024.0), ("2^16", 65536.0),
                                       ("2^24", 2.0**24)], value=65536.0,
                              description="initial scale", style=STYLE),
    )
    number_view = View("ch08", [list(number.values())], slot="explorer-number")
    trace_view = View("ch08", [list(trace.values())], slot="explorer-trace")

    def draw_number() -> None:
        gradient, loss_scale = number["gradient"].value, number["loss_scale"].value
        number_view.show(_lines_html(precision_report(gradient, loss_scale)),
                         [number_lines_figure(gradient * loss_scale)])

    def draw_trace() -> None:
        v = {name: control.value for name, control in trace.items()}
        flags = overflow_pattern(v["n_steps"], v["burst"], v["every"])
        problems = loss_scale_problems(flags, v["init_scale"], v["growth_interval"])
        trace_view.show(_lines_html(problems or ["✔ No overflow: no step skipped."]),
                        [loss_scale_figure(flags, v["init_scale"], v["growth_interval"])])

    number_view.watch(draw_number)
    trace_view.watch(draw_trace)
    box = w.VBox([w.HTML("<h4>1 · Where does a gradient land?</h4>"), number_view.box,
                  w.HTML("<h4>2 · Dynamic loss scaling, step by step</h4>"), trace_view.box],
                 layout=w.Layout(width="100%"))
    box.controls = {**number, **trace}  # lets tests (and curious learners) move the sliders
    box.status = (number_view.status, trace_view.status)
    return box
