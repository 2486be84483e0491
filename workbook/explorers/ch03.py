"""Chapter 3 explorer: learning-rate schedules after a batch-size change, and the critical batch.

Every curve is warmup + cosine decay from :func:`solutions.lr_scaling.lr_at_step`; the peak
comes from the linear rule (Goyal et al., arXiv:1706.02677, §2.1), the square-root rule
(Krizhevsky, arXiv:1404.5997) or no scaling at all. The critical-batch plot draws
McCandlish et al.'s step and data costs (arXiv:1812.06162, §2).
"""

from __future__ import annotations

import html
from typing import Any

from autograder.prediction import Prediction, nearest_option
from autograder.units import format_rounded as readout
from solutions import lr_scaling as lr
from workbook.explorers.view import themed

#: dropdown label -> how the peak rate follows the batch
RULES: dict[str, str] = {"linear": "linear", "square root": "sqrt", "none (keep the base rate)":
                         "none"}
#: dropdown label -> what the cosine decay spans
DECAYS: dict[str, str] = {"the steps of this run": "run",
                          "the base-batch run's steps (k x more)": "base"}
_POINTS = 241  # samples per curve: smooth enough, cheap to draw

_CHOICES = {"about 2x": 2.0, "about 3x": 3.0, "8x": 8.0}


PREDICTION = Prediction(
    key="ch03",
    question=("A learning rate was tuned at a batch of 256; the new batch is 2048. Under the "
              "square-root rule, by what factor does the learning rate grow?"),
    actual=lambda: nearest_option(lr.sqrt_scaled_lr(1.0, 256, 2048), _CHOICES, log_scale=True),
    measure=lambda: lr.sqrt_scaled_lr(1.0, 256, 2048),
    options=tuple(_CHOICES),
    explanation=("k = 2048 / 256 = 8, and sqrt(8) = 2.83, so about 3x (the linear rule would "
                 "give the full 8x). The second question, over how many steps the cosine "
                 "should decay, comes back as exercise 3.5."),
    feedback={
        "about 2x": (
            "2x is the square root of 4, not of 8: k = 2048 / 256 = 8, and sqrt(8) = 2.83."),
        "about 3x": (
            "Right: sqrt(8) = 2.83."),
        "8x": (
            "8x is the linear rule; the square-root rule grows the rate by sqrt(k) only."),
    },
    reflection=(
        "When would you choose the linear rule over the square-root rule, and what would you "
        "watch in the first thousand steps to know the choice was wrong?"),
)


def peak_lr(rule: str, base_lr: float, base_batch: float, new_batch: float) -> float:
    """The peak rate at the new batch under ``rule`` ("linear", "sqrt" or "none")."""
    if rule == "linear":
        return lr.linear_scaled_lr(base_lr, base_batch, new_batch)
    if rule == "sqrt":
        return lr.sqrt_scaled_lr(base_lr, base_batch, new_batch)
    if rule == "none":
        return base_lr
    raise ValueError(f"rule must be 'linear', 'sqrt' or 'none', got {rule!r}")


def decay_steps(decay: str, base_batch: float, new_batch: float, total_steps: int,
                warmup_steps: int) -> int:
    """Where the cosine reaches its minimum: this run's T, or the base run's k T steps
    (the same tokens at the smaller batch), never before the warmup ends."""
    if decay == "run":
        return total_steps
    if decay != "base":
        raise ValueError(f"decay must be 'run' or 'base', got {decay!r}")
    return max(round(total_steps * new_batch / base_batch), warmup_steps + 1)


def schedule(rule: str, base_lr: float, base_batch: float, new_batch: float,
             warmup_steps: int, total_steps: int, decay: str = "run") -> tuple[list[int],
                                                                              list[float]]:
    """(steps, learning rates) of the run's T steps, sampled at about 240 points."""
    peak = peak_lr(rule, base_lr, base_batch, new_batch)
    horizon = decay_steps(decay, base_batch, new_batch, total_steps, warmup_steps)
    steps = sorted({round(i * total_steps / (_POINTS - 1)) for i in range(_POINTS)}
                   | {min(warmup_steps, total_steps)})
    return steps, [lr.lr_at_step(s, peak, warmup_steps, horizon) for s in steps]


# -- failure states in words -----------------------------------------------------------

def lr_messages(base_batch: float, new_batch: float, warmup_steps: int, total_steps: int,
                rule: str = "linear", decay: str = "run") -> list[str]:
    """What is wrong with a schedule, in words (an empty list when nothing is).

    ✘ marks a schedule that cannot do its job; ⚠ a departure from this course's heuristic.
    """
    k = new_batch / base_batch
    if warmup_steps >= total_steps:
        return [f"✘ The warmup ({warmup_steps:,} steps) is as long as the whole run "
                f"({total_steps:,} steps): the rate never reaches its peak, let alone decays."]
    messages = []
    heuristic = lr.warmup_steps_heuristic(base_batch, new_batch)
    if rule != "none" and k > 1 and warmup_steps < heuristic:
        messages.append(f"⚠ A warmup of {warmup_steps:,} steps is shorter than this course's "
                        f"heuristic, k x 1000 = {readout(heuristic, 'steps')} for k = {k:g} (a "
                        "rule of thumb, not a published result).")
    if rule == "none" and k > 1:
        messages.append(f"⚠ Keeping the base rate while the batch grows {k:g}-fold: each "
                        "example now moves the weights about k times less, so reaching the "
                        "same loss takes more epochs.")
    horizon = decay_steps(decay, base_batch, new_batch, total_steps, warmup_steps)
    if horizon > total_steps:
        left = lr.lr_at_step(total_steps, 1.0, warmup_steps, horizon)
        messages.append(f"✘ The cosine decays over {horizon:,} steps but the run stops at "
                        f"{total_steps:,}: the rate ends at {left:.0%} of its peak instead of "
                        "annealing.")
    elif horizon < total_steps:
        messages.append(f"✘ The cosine reaches its minimum at step {horizon:,} and the last "
                        f"{total_steps - horizon:,} steps run at the minimum rate.")
    return messages


# -- plots --------------------------------------------------------------------------

_STYLES = {"linear": ("#C44E52", "-"), "sqrt": ("#4C72B0", "--"), "none": ("#555555", ":")}


def lr_schedule_figure(base_lr: float = 3e-4, base_batch: int = 256, new_batch: int = 2048,
                       warmup_steps: int = 8000, total_steps: int = 100_000,
                       highlight: str = "linear", decay: str = "run") -> Any:
    """Warmup + cosine under the three rules (one line each); ``highlight`` drawn boldest."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.8))
    names = {value: key for key, value in RULES.items()}
    for rule, (colour, style) in _STYLES.items():
        steps, rates = schedule(rule, base_lr, base_batch, new_batch, warmup_steps,
                                total_steps, decay)
        peak = peak_lr(rule, base_lr, base_batch, new_batch)
        ax.plot(steps, rates, color=colour, linestyle=style,
                linewidth=2.8 if rule == highlight else 1.3,
                label=f"{names[rule]}: peak {peak:.2e}")
    ax.set_xlim(0, total_steps)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"optimizer step (warmup {warmup_steps:,}, run {total_steps:,})")
    ax.set_ylabel("learning rate")
    ax.set_title(f"Batch {base_batch} -> {new_batch} (k = {new_batch / base_batch:g}), base "
                 f"rate {base_lr:.1e}", fontsize=10, loc="left")
    ax.legend(fontsize=8, frameon=False)
    fig.subplots_adjust(left=0.1, right=0.96, bottom=0.15, top=0.9)
    plt.close(fig)
    return themed(fig)


def _ratio_label(value: float, _: Any = None) -> str:
    return f"{value:g}" if value >= 1 else f"1/{1 / value:g}"


def critical_batch_figure(marked: tuple[float, ...] = (1 / 8, 8.0)) -> Any:
    """Steps and tokens needed (over their minimums) against B / B_crit, on log axes.

    Two lines: S / S_min = 1 + B_crit / B and E / E_min = 1 + B / B_crit. The ``marked``
    ratios are labelled with what doubling the batch does there.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    ratios = [2 ** (i / 8) for i in range(-48, 49)]  # B / B_crit from 1/64 to 64
    fig, ax = plt.subplots(figsize=(9, 3.8))
    ax.plot(ratios, [lr.steps_over_minimum(r, 1.0) for r in ratios], color="#4C72B0",
            label="optimizer steps, S / S_min")
    ax.plot(ratios, [lr.examples_over_minimum(r, 1.0) for r in ratios], color="#DD8452",
            linestyle="--", label="tokens (compute), E / E_min")
    for r in marked:
        steps, tokens = lr.doubling_effect(r, 1.0)
        ax.annotate(f"B = {_ratio_label(r)} B_crit: doubling B\n"
                    f"steps x {steps:.2f}, tokens x {tokens:.2f}",
                    (r, lr.steps_over_minimum(r, 1.0)), textcoords="offset points",
                    xytext=(8, 12), fontsize=8)
    ax.scatter(list(marked), [lr.steps_over_minimum(r, 1.0) for r in marked], color="black",
               zorder=3, s=18)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_ratio_label))
    ax.yaxis.set_major_formatter(FuncFormatter(_ratio_label))
    ax.set_xlabel("batch size over the critical batch, B / B_crit")
    ax.set_ylabel("cost over its minimum")
    ax.set_title("Below B_crit a bigger batch saves steps; above it, it costs tokens",
                 fontsize=10, loc="left")
    ax.legend(fontsize=8, frameon=False, loc="upper center")
    fig.subplots_adjust(left=0.1, right=0.96, bottom=0.15, top=0.9)
    plt.close(fig)
    return themed(fig)


# -- the explorer -------------------------------------------------------------------

def _report_html(messages: list[str], peaks: dict[str, float]) -> str:
    verdict = ("<p><strong>✔ Warmup and decay fit the run.</strong></p>" if not messages else
               "".join(f"<p><strong>{html.escape(msg)}</strong></p>" for msg in messages))
    names = {value: key for key, value in RULES.items()}
    details = "".join(f"<li>{html.escape(names[rule])}: peak {peak:.3e}</li>"
                      for rule, peak in peaks.items())
    return f'<div role="status">{verdict}<ul>{details}</ul></div>'


BASE_LRS = (1e-5, 3e-5, 6e-5, 1e-4, 1.5e-4, 3e-4, 6e-4, 1e-3, 3e-3, 1e-2)


def explorer() -> Any:
    """Sliders for both batches, the base rate, warmup and run length; a live schedule plot.

    It starts from a batch of 4096 (k = 16) and a base rate of 1e-4, not the exercises' 2048
    and 3e-4, so its peaks and warmup never answer 3.1 to 3.3 before the learner does, not
    even once one slider is moved to an exercise's number."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View, options_slider

    base_batch = w.IntSlider(value=256, min=32, max=4096, step=32, description="Base batch",
                             style=STYLE)
    new_batch = w.IntSlider(value=4096, min=32, max=32768, step=32, description="New batch",
                            style=STYLE)
    base_lr = options_slider(BASE_LRS, 1e-4, "Base learning rate", label=lambda v: f"{v:.1e}")
    warmup = w.IntSlider(value=16_000, min=0, max=40_000, step=500, description="Warmup steps",
                         style=STYLE)
    total = w.IntSlider(value=100_000, min=5000, max=500_000, step=5000, style=STYLE,
                        description="Total steps")
    rule = w.Dropdown(options=list(RULES), value="linear", description="Rule", style=STYLE)
    decay = w.Dropdown(options=list(DECAYS), value="the steps of this run", style=STYLE,
                       description="Cosine decays over")
    view = View("ch03", [[base_batch, new_batch, base_lr, rule], [warmup, total, decay]])

    def redraw() -> None:
        batches = (base_batch.value, new_batch.value)
        args = (*batches, warmup.value, total.value)
        messages = lr_messages(*args, RULES[rule.value], DECAYS[decay.value])
        peaks = {r: peak_lr(r, base_lr.value, *batches) for r in _STYLES}
        if warmup.value >= total.value:
            view.show(_report_html(messages, peaks),
                      invalid=f"warmup ({warmup.value:,} steps) must end before the run does "
                              f"({total.value:,} steps).")
            return
        view.show(_report_html(messages, peaks),
                  [lr_schedule_figure(base_lr.value, *args, RULES[rule.value],
                                      DECAYS[decay.value])])

    view.watch(redraw)
    return view.box
