"""How fast each chapter's explorer answers a control: one redraw, in milliseconds.

    .venv/bin/python benchmarks/explorer_redraw.py [--repeats N]

Builds every chapter's explorer outside a kernel (as the tests do), then moves its first
linear slider one step back and forth ``N`` times; each move runs the explorer's whole redraw
(model, figure drawn to the PNG the plot area shows). Reports, per chapter, the median and
slowest redraw and the PNG's size, and the same for chapter 5's largest Gantt chart drawn at
the notebook's resolution and at twice it (``workbook.explorers.view.SHARPNESS``).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from typing import Any

import matplotlib

matplotlib.use("Agg")

CHAPTERS = ("ch00", "ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07", "ch08",
            "ch09_planner_view")


def _views(box: Any) -> list[Any]:
    """Every explorer view in a widget tree (chapter 8 shows two)."""
    if hasattr(box, "view"):
        return [box.view]
    return [v for child in getattr(box, "children", ()) for v in _views(child)]


def _linear_sliders(view: Any) -> list[Any]:
    """The enabled sliders on a linear scale (a log slider's step is an exponent)."""
    return [c for c in view.controls if "Slider" in type(c).__name__
            and "Log" not in type(c).__name__ and not getattr(c, "disabled", False)]


def _neighbour(slider: Any) -> Any:
    """A value one step from the slider's current one, inside its range."""
    if hasattr(slider, "options") and slider.options:
        values = [v for _, v in slider.options] if isinstance(slider.options[0], tuple) \
            else list(slider.options)
        i = values.index(slider.value)
        return values[i + 1] if i + 1 < len(values) else values[i - 1]
    step = getattr(slider, "step", 1) or 1
    up = slider.value + step
    return up if up <= slider.max else slider.value - step


def redraw_ms(chapter: str, repeats: int) -> tuple[float, float, int]:
    module = importlib.import_module(f"workbook.explorers.{chapter}")
    view, slider = next((v, _linear_sliders(v)[0]) for v in _views(module.explorer())
                        if _linear_sliders(v))
    start, other = slider.value, _neighbour(slider)
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        slider.value = other if i % 2 == 0 else start
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), max(times), len(view.out.value)


def gantt_ms(sharpness: float, repeats: int) -> tuple[float, int]:
    from workbook.explorers import ch05, view

    fig = ch05.gantt_figure("1f1b", 8, 32, 2)
    saved = view.SHARPNESS
    view.SHARPNESS = sharpness
    try:
        times, size = [], 0
        for _ in range(repeats):
            t = time.perf_counter()
            size = len(view.figure_html(fig))
            times.append((time.perf_counter() - t) * 1e3)
    finally:
        view.SHARPNESS = saved
    return statistics.median(times), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(f"{'explorer':20s} {'median ms':>10s} {'max ms':>8s} {'plot KB':>8s}")
    for chapter in CHAPTERS:
        median, worst, size = redraw_ms(chapter, args.repeats)
        print(f"{chapter:20s} {median:10.0f} {worst:8.0f} {size / 1024:8.0f}")
    for sharpness in (1, 2):
        median, size = gantt_ms(sharpness, args.repeats)
        print(f"ch05 Gantt p=8 m=32 at {sharpness}x: {median:.0f} ms, {size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
