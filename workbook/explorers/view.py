"""What every explorer shares: controls that wrap, verdicts behind the prediction lock, and a
plot area that never shows stale, garbled or misplaced output.

* Controls sit in a row that wraps (``flex-flow: row wrap``) with their descriptions at
  natural width, so nothing is clipped in a narrow (800 px) window.
* The verdicts (the status lines) stay covered until the chapter's prediction is locked.
* Every redraw runs inside the explorer's own Output widget: a figure, a warning or an
  error raised by a callback lands there, never in JupyterLab's log console.
* An invalid configuration clears the plot and says why in its place (a stale plot next
  to a "✘ invalid" readout would show numbers for a configuration that does not exist).
* Figures sit on their own white background with dark text, readable in light and dark
  themes alike.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from autograder.markup import no_math

GREY = "#808080"  # mid-grey: readable on white and on JupyterLab's dark background
PAPER = "#ffffff"  # every figure's own background, in every theme
STYLE = {"description_width": "initial"}
INVALID_CLASS = "dtw-plot-invalid"


def control_layout() -> Any:
    """A control's layout: natural width, never wider than the page."""
    import ipywidgets as w

    return w.Layout(width="auto", min_width="16em", max_width="100%", margin="2px 12px 2px 0")


def wrapping_row(widgets: Iterable[Any]) -> Any:
    """A row of controls that wraps onto more lines when the page is narrow."""
    import ipywidgets as w

    items = list(widgets)
    for item in items:
        if hasattr(item, "style") and hasattr(item.style, "description_width"):
            item.style.description_width = "initial"
        if hasattr(item, "style") and hasattr(item.style, "button_width"):
            item.style.button_width = "auto"  # toggle buttons as wide as their labels
        is_slider = "Slider" in type(item).__name__
        # A slider's track takes what is left of its width: give it room, never more than
        # the page; everything else takes its natural width.
        item.layout.width = "26em" if is_slider else (item.layout.width or "auto")
        item.layout.max_width = "100%"
    return w.HBox(items, layout=w.Layout(flex_flow="row wrap", width="100%",
                                         align_items="flex-start"))


def themed(fig: Any) -> Any:
    """The figure on its own light card: an opaque white background and dark text, so it
    reads the same in JupyterLab's light and dark themes and in Colab. (A transparent
    figure would leave every black label, annotation and table cell on a dark page.)"""
    fig.patch.set_facecolor(PAPER)
    fig.patch.set_alpha(1.0)
    for ax in fig.get_axes():
        if ax.get_facecolor()[3] == 0:  # a transparent axes would show the page through
            ax.set_facecolor(PAPER)
        legend = ax.get_legend()
        if legend is not None:
            legend.get_frame().set_facecolor(PAPER)
            legend.get_frame().set_alpha(0.9)
    return fig


def invalid_html(reason: str) -> str:
    """What the plot area shows instead of a plot for an invalid configuration."""
    return (f'<div class="{INVALID_CLASS}" role="status" style="opacity:0.75;'
            f"border:1px dashed {GREY};padding:1.5em;text-align:center\">"
            f"<strong>No plot for this configuration.</strong> {html.escape(reason)}</div>")


class View:
    """An explorer's controls, covered verdicts and plot area, and its redraw loop."""

    def __init__(self, key: str, rows: Sequence[Sequence[Any]],
                 extra: Sequence[Any] = (), slot: str = "explorer") -> None:
        import ipywidgets as w

        from workbook.learner.prediction_page import cover_until_locked

        self.status = w.HTML()
        self.out = w.Output(layout=w.Layout(width="100%"))
        self.controls = [c for row in rows for c in row]
        self.box = w.VBox([*(wrapping_row(row) for row in rows), *extra,
                           cover_until_locked(key, self.status, slot=slot), self.out],
                          layout=w.Layout(width="100%"))
        self.box.status, self.box.out, self.box.view = self.status, self.out, self

    def show(self, status_html: str, figures: Sequence[Any] = (), invalid: str = "") -> None:
        """Replace the verdicts and the plot; with ``invalid``, clear the plot and say why."""
        from IPython.display import HTML, clear_output, display

        self.status.value = no_math(status_html)
        with self.out:
            clear_output(wait=not invalid)
            if invalid:
                display(HTML(no_math(invalid_html(invalid))))
                return
            for fig in figures:
                display(themed(fig))

    def watch(self, redraw: Callable[[], None], controls: Iterable[Any] | None = None,
              now: bool = True) -> None:
        """Redraw (now, unless ``now`` is False) and whenever a control changes; an error
        becomes a message in the plot area."""
        def guarded(_: Any = None) -> None:
            try:
                redraw()
            except Exception as exc:  # shown to the learner, never sent to the log console
                self.show(self.status.value, invalid=f"{type(exc).__name__}: {exc}")

        for control in (self.controls if controls is None else controls):
            control.observe(guarded, names="value")
        if now:
            guarded()


def options_slider(values: Sequence[float], value: float, description: str, unit: str = "",
                   label: Callable[[float], str] | None = None) -> Any:
    """A slider over an explicit list of values (so every value the chapter names is on
    it exactly, where a log slider would snap 7 to 7.08), each labelled with its unit."""
    import ipywidgets as w

    from autograder.units import format_quantity

    if value not in values:
        raise ValueError(f"{value!r} is not one of the slider's values {list(values)}")
    name = label or (lambda v: format_quantity(v, unit))
    options = [(name(v), v) for v in values]
    return w.SelectionSlider(options=options, value=value, description=description,
                             style=dict(STYLE), layout=control_layout())
