"""Chapter 1 · ZeRO stages: memory bars per stage, memory against GPU count, an explorer.

Model states follow :mod:`solutions.zero` (ZeRO, Rajbhandari et al. 2020, §3.1 and §5):
per parameter, 2 bytes of FP16 weights, 2 of FP16 gradients and 12 of FP32 optimizer state,
of which stage 1 shards the optimizer state, stage 2 also the gradients and stage 3 also the
weights over the N data-parallel GPUs. Activations are a single number the learner sets;
the budget is the usable memory per GPU in decimal GB.
"""

from __future__ import annotations

import html
from typing import Any

from autograder.prediction import Prediction
from autograder.units import format_rounded as readout
from solutions import zero
from workbook.explorers.view import themed

STAGE_NAMES = ("no ZeRO (plain DP)", "ZeRO-1", "ZeRO-2", "ZeRO-3")
LAYERS = ("weights (FP16)", "gradients (FP16)", "optimizer state (FP32)", "activations")
HATCHES = ("", "//", "..", "xx")  # layers differ by pattern as well as by colour
GPU_AXIS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

PREDICTION = Prediction(
    key="ch01",
    question=("A 13B-parameter model is trained with mixed-precision Adam on 128 GPUs using "
              "ZeRO stage 3. How many GB of model states (weights, gradients and optimizer "
              "state) does each GPU hold: closer to 1, to 10 or to 30?"),
    actual=lambda: zero.model_state_gb_per_gpu(13e9, 3, 128),
    unit="GB",
    explanation=("Stage 3 divides all 16 bytes per parameter by N: 16/128 = 0.125 bytes x "
                 "13e9 = 1.6 GB. Plain data parallelism would hold 16 bytes per parameter, "
                 "208 GB, on every GPU whatever the number of GPUs: doubling the GPUs without "
                 "ZeRO saves no memory at all."),
    reflection=(
        "ZeRO stage 3 divided the model states by the number of GPUs. What did it cost in "
        "communication, and when would you stop at stage 1 or 2 instead?"),
)


def stage_layers_gb(n_params_b: float, zero_stage: int, n_gpus: int,
                    activations_gb: float = 0.0) -> tuple[float, float, float, float]:
    """GB per GPU of weights, gradients, optimizer state and activations at one stage."""
    parts = zero.model_state_breakdown(zero_stage, n_gpus)
    scale = n_params_b  # bytes per parameter x 1e9 parameters / 1e9 bytes per GB
    return (parts.weights * scale, parts.gradients * scale, parts.optimizer * scale,
            activations_gb)


def stage_totals_gb(n_params_b: float, n_gpus: int,
                    activations_gb: float = 0.0) -> list[float]:
    """Model states plus activations per GPU, in GB, for stages 0 to 3."""
    return [zero.model_state_gb_per_gpu(n_params_b * 1e9, s, n_gpus) + activations_gb
            for s in zero.ZERO_STAGES]


# -- failure states, in words -------------------------------------------------------------

def memory_messages(n_params_b: float, n_gpus: int, activations_gb: float,
                    budget_gb: float) -> list[str]:
    """One "out of memory" line per stage over the budget; an empty list when all fit."""
    totals = stage_totals_gb(n_params_b, n_gpus, activations_gb)
    problems = [f"✘ {STAGE_NAMES[s]}: out of memory, {readout(need, 'GB')} needed, {budget_gb:g} "
                "GB available" for s, need in enumerate(totals) if need > budget_gb]
    if len(problems) == len(totals):
        problems.append("✘ No ZeRO stage fits. Add GPUs (smaller shards), shrink the "
                        "activations (checkpointing), or split the model with tensor or "
                        "pipeline parallelism.")
    return problems


def memory_summary(n_params_b: float, n_gpus: int, activations_gb: float,
                   budget_gb: float) -> list[str]:
    """The lowest stage that fits and what each choice communicates."""
    stage = zero.min_zero_stage_that_fits(n_params_b * 1e9, n_gpus, budget_gb, activations_gb)
    lines = []
    if stage is not None:
        need = stage_totals_gb(n_params_b, n_gpus, activations_gb)[stage]
        lines.append(f"✔ Lowest stage that fits: {STAGE_NAMES[stage]}, {need:.1f} of "
                     f"{budget_gb:g} GB.")
    low = zero.comm_gb_per_gpu(n_params_b * 1e9, 0, n_gpus)
    high = zero.comm_gb_per_gpu(n_params_b * 1e9, 3, n_gpus)
    lines.append(f"Sent per GPU per step: {readout(low, 'GB')} for no ZeRO, ZeRO-1 and ZeRO-2; "
                 f"{readout(high, 'GB')} for ZeRO-3 (1.5x).")
    return lines


# -- pictures ---------------------------------------------------------------------------

def _draw_bars(ax: Any, n_params_b: float, n_gpus: int, activations_gb: float,
               budget_gb: float) -> None:
    layers = [stage_layers_gb(n_params_b, s, n_gpus, activations_gb) for s in zero.ZERO_STAGES]
    totals = [sum(parts) for parts in layers]
    top = max(1.2 * budget_gb, min(max(totals), 3 * budget_gb)) * 1.08
    bottoms = [0.0] * len(layers)
    for k, name in enumerate(LAYERS):
        heights = [parts[k] for parts in layers]
        ax.bar(STAGE_NAMES, heights, bottom=bottoms, label=name, hatch=HATCHES[k],
               edgecolor="black", linewidth=0.6)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    ax.axhline(budget_gb, color="firebrick", linestyle="--", linewidth=1.5,
               label=f"budget {budget_gb:g} GB")
    for x, total in enumerate(totals):
        verdict = "✘ out of memory" if total > budget_gb else "✔ fits"
        clipped = total > 0.9 * top  # the bar runs off the chart: label it inside
        label = f"{readout(total, 'GB')}{' ↑' if clipped else ''}\n{verdict}"
        ax.text(x, 0.8 * top if clipped else total, label, ha="center", va="bottom", fontsize=8,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.85) if clipped else None)
    ax.set_ylim(0, top)
    ax.set_ylabel("memory per GPU (GB)")
    ax.set_title(f"{n_params_b:g}B parameters on {n_gpus} GPUs", fontsize=10)
    ax.tick_params(axis="x", labelsize=8)
    ax.legend(fontsize=7, loc="upper right")


def _draw_curves(ax: Any, n_params_b: float, activations_gb: float, budget_gb: float,
                 n_gpus: int) -> None:
    gpus = sorted(set(GPU_AXIS) | {n_gpus})
    styles = ("-", "--", "-.", ":")
    for s, name in enumerate(STAGE_NAMES):
        values = [stage_totals_gb(n_params_b, n, activations_gb)[s] for n in gpus]
        ax.plot(gpus, values, styles[s], linewidth=2, label=name)
    ax.axhline(budget_gb, color="firebrick", linestyle="--", linewidth=1.5,
               label=f"budget {budget_gb:g} GB")
    ax.axvline(n_gpus, color="grey", linewidth=1, label=f"N = {n_gpus}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(GPU_AXIS, [str(n) for n in GPU_AXIS], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("data-parallel GPUs, N")
    ax.set_ylabel("memory per GPU (GB)")
    ax.set_title("Only ZeRO-3 keeps falling as 1/N", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def memory_bars_figure(n_params_b: float = 7.0, n_gpus: int = 64, activations_gb: float = 0.0,
                       budget_gb: float = 80.0) -> Any:
    """One stacked bar per stage (weights, gradients, optimizer, activations) and the budget."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    _draw_bars(ax, n_params_b, n_gpus, activations_gb, budget_gb)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.92, bottom=0.1)
    plt.close(fig)
    return themed(fig)


def memory_vs_gpus_figure(n_params_b: float = 7.0, activations_gb: float = 0.0,
                          budget_gb: float = 80.0, n_gpus: int = 64) -> Any:
    """Memory per GPU against N for each stage (log-log), with the budget line."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    _draw_curves(ax, n_params_b, activations_gb, budget_gb, n_gpus)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.92, bottom=0.12)
    plt.close(fig)
    return themed(fig)


def dashboard_figure(n_params_b: float, n_gpus: int, activations_gb: float,
                     budget_gb: float) -> Any:
    """The explorer's picture: the bars and the curves side by side."""
    import matplotlib.pyplot as plt

    fig, (bars, curves) = plt.subplots(1, 2, figsize=(12.0, 4.4))
    _draw_bars(bars, n_params_b, n_gpus, activations_gb, budget_gb)
    _draw_curves(curves, n_params_b, activations_gb, budget_gb, n_gpus)
    fig.subplots_adjust(left=0.06, right=0.99, top=0.92, bottom=0.12, wspace=0.22)
    plt.close(fig)
    return themed(fig)


#: every model size the chapter and its exercises name, and the usual public sizes between
PARAM_SIZES_B = (1.0, 1.3, 3.0, 7.0, 7.5, 8.0, 13.0, 30.0, 34.0, 65.0, 70.0, 175.0, 405.0, 1000.0)


def explorer() -> Any:
    """Sliders for model size, GPUs, activations and budget; bars, curves and verdicts redraw.

    It starts at 34B on 8 GPUs: not the 7B model of the exercises nor the prediction's 13B,
    so its bars never show their answers before the learner works them out."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View, options_slider

    controls = dict(
        n_params_b=options_slider(PARAM_SIZES_B, 34.0, "parameters", label=lambda v: f"{v:g}B"),
        n_gpus=w.IntSlider(value=8, min=1, max=1024, description="data-parallel GPUs",
                           style=STYLE),
        activations_gb=w.FloatSlider(value=0.0, min=0.0, max=80.0, step=1.0,
                                     description="activations (GB)", style=STYLE),
        budget_gb=w.FloatSlider(value=80.0, min=16.0, max=192.0, step=1.0,
                                description="usable GB per GPU", style=STYLE),
    )
    view = View("ch01", [list(controls.values())])
    state: dict[str, Any] = {}

    def redraw() -> None:
        args = {name: control.value for name, control in controls.items()}
        lines = memory_messages(**args) + memory_summary(**args)
        state["figure"] = dashboard_figure(**args)
        view.show("<br>".join(html.escape(line) for line in lines), [state["figure"]])

    view.watch(redraw)
    box = view.box
    box.controls, box.state = controls, state
    return box
