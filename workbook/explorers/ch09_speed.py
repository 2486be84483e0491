"""Chapter 9 explorer, part 3: the planner's speed, days and cost, and the fastest layout.

Predicted by :func:`solutions.performance.estimate` for the layout on the sliders; with
"What-if MFU" ticked, computed at the MFU slider instead (and labelled so). After a search,
:func:`versus_best` says how much more the current layout costs than the fastest one and
which costs of the step make the difference (:func:`solutions.planner.search.why_faster`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from solutions import performance, planner
from solutions.planner.search import Ranked, why_faster


def speed_numbers(s: Any, problems: list[str]) -> dict[str, Any]:
    """Step time, MFU, days, GPU-hours and cost: the model's prediction for the layout, or,
    with ``what_if_mfu``, what they would be at the MFU slider. All None when there is no
    prediction (``problems`` is not empty and no what-if is asked for). ``s`` is the
    planner's :class:`~workbook.explorers.ch09_planner.PlannerSettings`."""
    cfg, gpu = s.config(), s.gpu_spec
    estimate = None
    if not s.what_if_mfu and not problems:
        estimate = performance.estimate(s.arch, cfg, gpu, stack=s.software,
                                        memory_budget_gb=s.memory_budget_gb)
    if estimate is None and not s.what_if_mfu:
        return {"estimate": None, "step_s": None, "mfu": None, "days": None,
                "gpu_hours": None, "cost_usd": None}
    mfu = None if estimate is not None else s.mfu_pct / 100
    tokens = s.tokens_t * 1e12
    days = planner.training_days(s.arch, tokens, cfg, gpu, mfu, stack=s.software)
    step_s = estimate.step_time_s if estimate else planner.step_time_s(
        s.arch, cfg, gpu, mfu, stack=s.software)
    return {"estimate": estimate, "step_s": step_s,
            "mfu": estimate.mfu if estimate is not None else mfu, "days": days,
            "gpu_hours": cfg.n_gpus * days * 24,
            "cost_usd": planner.training_cost_usd(s.arch, tokens, cfg, gpu,
                                                  s.usd_per_gpu_hour, mfu, stack=s.software)}


def speed_line(s: Any, numbers: dict[str, Any]) -> str:
    """One sentence on speed and cost, saying whether it is predicted or a what-if."""
    if numbers["days"] is None:
        return ("No speed prediction: the layout above cannot train (tick What-if MFU to "
                "cost it at a chosen MFU anyway).")
    how = (f"Predicted for this layout on {s.gpu_spec.name}: MFU {numbers['mfu']:.1%} "
           "(6N plus causal attention FLOPs)"
           if numbers["estimate"] is not None else
           f"What-if at {s.mfu_pct:g}% MFU on {s.gpu_spec.name} (not this layout's prediction)")
    return (f"{how}; {numbers['step_s']:,.2f} s per step, {numbers['days']:,.1f} days for "
            f"{s.tokens_t:g}T tokens, {numbers['gpu_hours'] / 1e6:,.2f}M GPU-hours, "
            f"${numbers['cost_usd'] / 1e6:,.1f}M at ${s.usd_per_gpu_hour:g} per GPU-hour "
            "(no downtime).")


def versus_best(numbers: dict[str, Any], best: Ranked) -> str:
    """How much more this layout costs than the fastest one found, and where the time goes."""
    if numbers["estimate"] is None:
        return f"Fastest layout found: {best.label()} ({best.estimate.step_time_s:,.2f} s)."
    ratio = numbers["estimate"].step_time_s / best.estimate.step_time_s
    extra_days = numbers["days"] * (1 - 1 / ratio)
    extra_usd = numbers["cost_usd"] * (1 - 1 / ratio)
    if extra_days <= 1e-9:
        return f"This is as fast as the fastest layout found ({best.label()})."
    reasons = ", ".join(f"{k} +{v:,.2f} s" for k, v in why_faster(best.estimate,
                                                                  numbers["estimate"]))
    return (f"This layout costs ${extra_usd / 1e6:,.1f}M more and takes {extra_days:,.1f} days "
            f"longer than the fastest found, {best.label()}; per step it pays {reasons}.")


# -- MFU against GPU count ----------------------------------------------------------------

DP_SWEEP: tuple[int, ...] = tuple(2**k for k in range(12))  # 1 ... 2,048 replicas


def mfu_by_gpu_count(s: Any) -> list[tuple[int, float, str]]:
    """(GPUs, predicted MFU, largest cost after compute) for ``s``'s layout as DP grows and
    each replica keeps its batch (weak scaling, as a data-parallel scale-out runs): only
    the data-parallel traffic changes. Layouts the validator rejects are skipped."""
    base = s.config()
    rows = []
    for dp in DP_SWEEP:
        cfg = replace(base, dp=dp)
        try:
            est = performance.estimate(s.arch, cfg, s.gpu_spec, stack=s.software,
                                       memory_budget_gb=s.memory_budget_gb)
        except ValueError:
            continue
        rows.append((cfg.n_gpus, est.mfu, est.biggest_cost))
    return rows


def mfu_scaling_figure(s: Any) -> Any:
    """MFU against GPU count for the planner's layout, the current GPU count marked."""
    import matplotlib.pyplot as plt

    rows = mfu_by_gpu_count(s)
    fig, ax = plt.subplots(figsize=(7, 3.0))
    if rows:
        ax.plot([r[0] for r in rows], [100 * r[1] for r in rows], marker="o", color="#4C72B0",
                label="predicted MFU (batch per replica fixed)")
        here = [r for r in rows if r[0] == s.config().n_gpus]
        if here:
            ax.plot([here[0][0]], [100 * here[0][1]], marker="D", markersize=10,
                    color="#C44E52", linestyle="none", label="this layout")
        ax.legend(loc="lower left", fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "no valid layout at any GPU count", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs (TP x CP x PP fixed, DP grows)")
    ax.set_ylabel("MFU (%)")
    ax.set_ylim(0, 70)
    ax.set_title(f"{s.arch.name}: MFU as data parallelism scales out", fontsize=10, loc="left")
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.2, top=0.88)
    plt.close(fig)
    return fig
