"""Chapter 7 · Checkpoint and recovery: what a checkpoint holds, and the waste curve.

Waste model (Young 1974, CACM 17(9)): with a checkpoint every ``tau`` of work, a write
of ``C`` and failures every ``M`` on average, the expected share of time lost is
``C / tau + (tau / 2 + R) / M``, where ``R`` is the restart time. Its minimum is at
Young's ``tau* = sqrt(2 C M)``; Daly 2006 refines it when ``C`` is not small next to ``M``.
"""

from __future__ import annotations

import html
from typing import Any

from autograder.prediction import Prediction
from autograder.units import format_rounded as readout
from solutions import checkpointing as ck
from workbook.explorers.view import themed

BUCKETS = ("every few minutes", "roughly every hour", "every few hours")
DALY_TOLERANCE = 0.10  # beyond this gap the first-order formula is no longer a good guide

PREDICTION = Prediction(
    key="ch07",
    question=("Writing one checkpoint takes 2 minutes, and the cluster fails on average once "
              "every 12 hours. Balancing the time spent writing against the work lost at a "
              "failure, how often should the run checkpoint?"),
    actual=lambda: interval_bucket(ck.young_interval_s(120.0, 12 * 3600.0) / 60.0),
    measure=lambda: ck.young_interval_s(120.0, 12 * 3600.0) / 60.0,
    measure_unit="min",
    options=BUCKETS,
    explanation=("Young's interval is sqrt(2 x 120 s x 43,200 s) = 3,220 s, about 54 minutes: "
                 "roughly every hour. At that interval writing and lost work cost the same, "
                 "3.7 % each, 7.5 % in all."),
    feedback={
        "every few minutes": (
            "That often, the 2-minute write eats a large share of every interval: more time goes "
            "to writing than a failure would ever cost."),
        "roughly every hour": (
            "Right: the balance point sqrt(2 x 2 min x 12 h) is about 54 minutes."),
        "every few hours": (
            "Every few hours, each failure loses on average half an interval of work, which "
            "outweighs the writes saved."),
    },
    reflection=(
        "The best interval grows with the square root of the MTBF. If your cluster doubled in "
        "size, what would happen to its MTBF and to the interval you should choose?"),
)


def interval_bucket(interval_min: float) -> str:
    """Name the interval the way the prediction asks: under 20 min, under 2 h, or longer."""
    if interval_min < 20.0:
        return BUCKETS[0]
    return BUCKETS[1] if interval_min < 120.0 else BUCKETS[2]


def waste_percent(interval_min: float, checkpoint_s: float, mtbf_h: float,
                  recovery_min: float = 0.0) -> float:
    """Expected share of time lost, in percent: ``100 (C / tau + (tau / 2 + R) / M)``."""
    return 100.0 * ck.expected_waste_fraction(interval_min * 60.0, checkpoint_s,
                                              mtbf_h * 3600.0, recovery_min * 60.0)


def _percent(value: float) -> str:
    # Past 100 % the first-order model has broken down; a bigger number would mislead.
    return "over 100 %" if value > 100.0 else f"{readout(value, '%')}"


def checkpoint_problems(checkpoint_s: float, mtbf_h: float, interval_min: float,
                        recovery_min: float = 0.0,
                        target_waste_pct: float | None = None) -> list[str]:
    """Everything wrong with a checkpoint plan, in words (an empty list when it is sound)."""
    problems: list[str] = []
    interval_s, mtbf_s = interval_min * 60.0, mtbf_h * 3600.0
    if interval_s <= checkpoint_s:
        problems.append(f"✘ The interval ({readout(interval_min, 'min')}) is no longer than one "
                        f"checkpoint write ({readout(checkpoint_s / 60, 'min')}): writing alone "
                        "would take at least half of the wall-clock time.")
    if interval_s >= mtbf_s:
        problems.append(f"✘ The interval ({readout(interval_min / 60, 'h')}) is as long as the "
                        f"MTBF ({readout(mtbf_h, 'h')}) or longer: most intervals end in a failure "
                        "before their checkpoint is written.")
    young = ck.young_interval_s(checkpoint_s, mtbf_s)
    daly = ck.daly_interval_s(checkpoint_s, mtbf_s)
    if abs(young - daly) > DALY_TOLERANCE * daly:
        problems.append(f"✘ One write ({readout(checkpoint_s / 60, 'min')}) is not small next to "
                        f"the MTBF ({readout(mtbf_h, 'h')}): Young's interval "
                        f"({readout(young / 60, 'min')}) is "
                        f"off by {readout(100 * abs(young - daly) / daly, '%')}; Daly's "
                        f"higher-order estimate is {readout(daly / 60, 'min')}.")
    waste = waste_percent(interval_min, checkpoint_s, mtbf_h, recovery_min)
    if target_waste_pct is not None and waste > target_waste_pct:
        problems.append(f"✘ Expected waste {_percent(waste)} at your interval (restarts "
                        f"included) is above your {target_waste_pct:g} % target.")
    return problems


# -- pictures -----------------------------------------------------------------------------
def checkpoint_size_figure(model_params_b: tuple[float, ...] = (7.0, 70.0, 405.0)) -> Any:
    """Stacked bars per model: 16-bit weights, FP32 master weights, Adam's two moments."""
    import matplotlib.pyplot as plt

    parts = [ck.checkpoint_components_gb(n * 1e9) for n in model_params_b]
    names = (("weights", "16-bit weights (2 B)", ""), ("master_weights", "FP32 master (4 B)",
             "//"), ("optimizer_states", "Adam m and v (8 B)", "xx"))
    xs = list(range(len(model_params_b)))
    bottoms = [0.0] * len(xs)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i, (key, label, hatch) in enumerate(names):
        heights = [p[key] for p in parts]
        ax.bar(xs, heights, bottom=bottoms, color=f"C{i}", hatch=hatch, label=label)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, total in zip(xs, bottoms, strict=True):
        ax.text(x, total, f"{readout(total, 'GB')}", ha="center", va="bottom", fontsize=9)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{n:g}B params" for n in model_params_b])
    ax.set_ylim(0, 1.12 * max(bottoms))
    ax.set_ylabel("GB per checkpoint")
    ax.set_title("A full mixed-precision Adam checkpoint: 14 bytes per parameter", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    plt.close(fig)
    return themed(fig)


def _plain_minute_ticks(axis: Any, low: float, high: float) -> None:
    # 1-2-5 ticks with plain labels: the default 10^k labels go through mathtext, which
    # costs most of the drawing time.
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    ticks = [m * 10.0**k for k in range(-2, 6) for m in (1, 2, 5) if low <= m * 10.0**k <= high]
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FixedFormatter([f"{t:g}" for t in ticks]))
    axis.set_minor_locator(NullLocator())


def waste_curve_figure(checkpoint_s: float = 98.0, mtbf_h: float = 24.0,
                       recovery_min: float = 0.0, chosen_min: float | None = None) -> Any:
    """Writing cost, lost work and their total against the interval; Young's optimum marked.

    Lines: writing, lost work, total, Young's interval (and the chosen interval if given).
    """
    import matplotlib.pyplot as plt
    import numpy as np

    young_min = ck.young_interval_s(checkpoint_s, mtbf_h * 3600.0) / 60.0
    low, high = young_min / 30.0, young_min * 30.0
    if chosen_min is not None:
        low, high = min(low, chosen_min / 2), max(high, chosen_min * 2)
    tau_min = np.geomspace(max(low, checkpoint_s / 600.0), high, 240)
    writing = 100.0 * checkpoint_s / (tau_min * 60.0)
    lost = 100.0 * (tau_min / 2.0 + recovery_min) / (mtbf_h * 60.0)
    best = waste_percent(young_min, checkpoint_s, mtbf_h, recovery_min)
    fig, ax = plt.subplots(figsize=(10, 3.8))
    ax.plot(tau_min, writing, "--", color="C0", label="writing checkpoints: C / tau")
    ax.plot(tau_min, lost, ":", color="C1", label="lost work + restarts: (tau/2 + R) / M")
    ax.plot(tau_min, writing + lost, "-", color="black", lw=2, label="total waste")
    ax.axvline(young_min, color="C2", lw=1.5,
               label=f"Young: {readout(young_min, 'min')}, {readout(best, '%')} waste")
    if chosen_min is not None:
        chosen = waste_percent(chosen_min, checkpoint_s, mtbf_h, recovery_min)
        ax.axvline(chosen_min, color="C3", linestyle="-.",
                   label=f"yours: {readout(chosen_min, 'min')}, {readout(chosen, '%')} waste")
    ax.set_xscale("log")
    _plain_minute_ticks(ax.xaxis, float(tau_min[0]), float(tau_min[-1]))
    ax.set_ylim(0, min(100.0, 4 * best))
    ax.set_xlabel("checkpoint interval tau (minutes of work, log scale)")
    ax.set_ylabel("expected waste (% of time)")
    ax.set_title(f"C = {readout(checkpoint_s, 's')} per checkpoint, MTBF M = "
                 f"{readout(mtbf_h, 'h')}, "
                 f"restart R = {readout(recovery_min, 'min')}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    plt.close(fig)
    return themed(fig)


# -- the explorer -------------------------------------------------------------------------
def status_html(size_gb: float, write_gb_per_s: float, mtbf_h: float, recovery_min: float,
                interval_min: float, n_gpus: int, usd_per_gpu_hour: float,
                target_waste_pct: float) -> str:
    """The explorer's verdict in words: failures first, then the interval and its price."""
    c = ck.checkpoint_write_time_s(size_gb, write_gb_per_s)
    lines = checkpoint_problems(c, mtbf_h, interval_min, recovery_min, target_waste_pct)
    young_min = ck.young_interval_s(c, mtbf_h * 3600.0) / 60.0
    waste = waste_percent(interval_min, c, mtbf_h, recovery_min)
    lost = ck.lost_minutes_per_crash(interval_min, recovery_min)
    cost = ck.cost_per_crash_usd(n_gpus, usd_per_gpu_hour, interval_min, recovery_min)
    if not lines:
        lines.append(f"✔ Waste {readout(waste, '%')} is within your {target_waste_pct:g} % target.")
    lines += [
        f"One checkpoint: {readout(size_gb, 'GB')} at {write_gb_per_s:g} GB/s = "
        f"{readout(c, 's')}. Young's "
        f"interval: {readout(young_min, 'min')} "
        f"({waste_percent(young_min, c, mtbf_h, recovery_min):.2f}"
        " % waste).",
        f"Your interval, {readout(interval_min, 'min')}: {_percent(waste)} waste. Each failure "
        f"costs {readout(interval_min / 2, 'min')} of lost work + {recovery_min:g} min restart = "
        f"{lost:.3g} "
        f"min on {n_gpus:,} GPUs: {readout(cost, '$')}; about {24 / mtbf_h:.2g} failures a day.",
    ]
    return "<br>".join(html.escape(line) for line in lines)


#: the slider stops: every value the chapter and its exercises use is one of them
SIZES_GB = (10.0, 18.2, 98.0, 112.0, 182.0, 490.0, 2000.0, 5670.0, 10000.0)
WRITE_GB_PER_S = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
MTBF_H = (0.5, 1.0, 2.0, 3.0, 6.0, 12.0, 24.0, 48.0, 100.0, 500.0)
INTERVAL_MIN = (1.0, 2.0, 5.0, 10.0, 15.0, 22.0, 30.0, 45.0, 60.0, 68.0, 69.0, 90.0, 120.0,
                180.0, 240.0, 480.0, 1440.0, 3000.0)


def explorer() -> Any:
    """Sliders for size, bandwidth, MTBF, restart and interval; the waste curve redraws.

    It starts from a 2 TB checkpoint at 20 GB/s and a 12-hour MTBF on 2048 GPUs, not the
    exercises' numbers, so its readout never answers 7.1 to 7.4 before the learner does."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View, options_slider

    controls = dict(
        size_gb=options_slider(SIZES_GB, 2000.0, "checkpoint size", "GB"),
        write_gb_per_s=options_slider(WRITE_GB_PER_S, 20.0, "write bandwidth", "GB/s"),
        mtbf_h=options_slider(MTBF_H, 12.0, "MTBF", "h"),
        recovery_min=w.FloatSlider(value=2.0, min=0.0, max=30.0, step=1.0,
                                   description="restart minutes", style=STYLE),
        interval_min=options_slider(INTERVAL_MIN, 60.0, "your interval", "min"),
        n_gpus=w.Dropdown(options=[64, 512, 2048, 16384], value=2048, description="GPUs",
                          style=STYLE),
        usd_per_gpu_hour=w.FloatSlider(value=2.0, min=0.5, max=6.0, step=0.25,
                                       description="\\$ per GPU-hour", style=STYLE),
        target_waste_pct=w.FloatSlider(value=10.0, min=1.0, max=30.0, step=1.0,
                                       description="waste target %", style=STYLE),
    )
    view = View("ch07", [list(controls.values())])

    def redraw() -> None:
        v = {name: control.value for name, control in controls.items()}
        c = ck.checkpoint_write_time_s(v["size_gb"], v["write_gb_per_s"])
        view.show(status_html(**v),
                  [waste_curve_figure(c, v["mtbf_h"], v["recovery_min"], v["interval_min"])])

    view.watch(redraw)
    box = view.box
    box.controls = controls  # lets tests (and curious learners) move the sliders
    return box
