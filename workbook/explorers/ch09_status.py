"""The capstone planner's status bar: memory, bubble, MFU, days and cost at a glance.

Each of the five cells carries a symbol and words as well as a colour (✔ good, ⚠ worth a
look, ✘ a problem), so it reads the same without colour. This module only displays the
numbers :func:`workbook.explorers.ch09_planner.plan_numbers` computed; the thresholds
below are reading aids for a learner, not limits from a paper:

* memory: the busiest GPU against the budget (over it is out of memory);
* bubble: against the learner's own bubble target;
* MFU: the Llama 3 405B run measured 38-43 % (Dubey et al. 2024, Table 4); below 30 % is
  a poorly used cluster, above 55 % is more than published dense runs report;
* days: up to three months is a usual pre-training run, beyond six is a long bet;
* cost: in dollars at the learner's price per GPU-hour, graded by order of magnitude.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from autograder.markup import NO_MATH_CLASS
from autograder.units import format_quantity

COLOURS = {"good": "#3a9a3f", "warn": "#c77c00", "bad": "#d83a3a"}  # mid tones: light and dark
SYMBOLS = {"good": "✔", "warn": "⚠", "bad": "✘"}


@dataclass(frozen=True)
class Cell:
    """One cell of the bar: what it measures, its level ("good"/"warn"/"bad"), in words."""

    name: str
    level: str
    words: str


def _sig(value: float, digits: int = 3) -> float:
    return float(f"{value:.{digits}g}")


def memory_cell(memory: dict[str, float] | None, budget_gb: float) -> Cell:
    if memory is None:
        return Cell("Memory", "bad", "cannot lay out this model")
    used = format_quantity(_sig(memory["total"]), "GB")
    budget = format_quantity(budget_gb, "GB")
    if memory["total"] > budget_gb:
        return Cell("Memory", "bad", f"out of memory: {used} of {budget}")
    level = "warn" if memory["total"] > 0.9 * budget_gb else "good"
    return Cell("Memory", level, f"fits: {used} of {budget}")


def bubble_cell(bubble: float, target_pct: float) -> Cell:
    shown = format_quantity(_sig(100 * bubble), "%")
    if 100 * bubble >= target_pct:
        return Cell("Bubble", "bad", f"{shown}, over your {format_quantity(target_pct, '%')}")
    return Cell("Bubble", "good", f"{shown}, under your {format_quantity(target_pct, '%')}")


def mfu_cell(mfu_pct: float) -> Cell:
    shown = format_quantity(mfu_pct, "%")
    if mfu_pct < 30:
        return Cell("MFU", "warn", f"{shown}: a poorly used cluster")
    if mfu_pct > 55:
        return Cell("MFU", "warn", f"{shown}: above what published dense runs report")
    return Cell("MFU", "good", f"{shown}: in the published range")


def days_cell(days: float) -> Cell:
    shown = format_quantity(_sig(days), "days")
    if days <= 90:
        return Cell("Time", "good", f"{shown}: within three months")
    if days <= 180:
        return Cell("Time", "warn", f"{shown}: three to six months")
    return Cell("Time", "bad", f"{shown}: over six months")


def cost_cell(cost_usd: float) -> Cell:
    millions = _sig(cost_usd / 1e6)
    shown = format_quantity(millions, "$") + "M"
    if cost_usd < 10e6:
        return Cell("Cost", "good", f"{shown}: under ten million")
    if cost_usd < 100e6:
        return Cell("Cost", "warn", f"{shown}: tens of millions")
    return Cell("Cost", "bad", f"{shown}: over a hundred million")


def status_cells(numbers: dict[str, Any], budget_gb: float, target_pct: float,
                 mfu_pct: float) -> list[Cell]:
    """The five cells for one plan."""
    return [memory_cell(numbers["memory"], budget_gb),
            bubble_cell(numbers["bubble"], target_pct), mfu_cell(mfu_pct),
            days_cell(numbers["days"]), cost_cell(numbers["cost_usd"])]


def status_bar_html(cells: list[Cell]) -> str:
    """The cells as a wrapping row of coloured, worded chips."""
    chips = "".join(
        f'<span class="dtw-chip dtw-{c.level}" style="display:inline-block;margin:2px 6px 2px 0;'
        f"padding:2px 8px;border-radius:10px;border:2px solid {COLOURS[c.level]};"
        f'color:{COLOURS[c.level]}"><strong>{SYMBOLS[c.level]} {html.escape(c.name)}</strong>'
        f" {html.escape(c.words)}</span>" for c in cells)
    return (f'<div class="dtw-status-bar {NO_MATH_CLASS}" role="status" '
            f'style="display:flex;flex-wrap:wrap">{chips}</div>')
