"""What every explorer shares: controls that wrap, verdicts behind the prediction lock, and a
plot area that never shows stale, garbled or misplaced output.

* Controls sit in a row that wraps (``flex-flow: row wrap``) with their descriptions at
  natural width, so nothing is clipped in a narrow (800 px) window.
* The verdicts (the status lines) stay covered until the chapter's prediction is locked.
* The plot area is an HTML widget whose value each redraw replaces: a figure is drawn to a
  PNG in the kernel and sent as part of that value, with its titles as alternative text.
  A callback therefore produces no kernel output at all, so nothing can miss its place
  and land in JupyterLab's log console (an Output widget's capture depends on the front
  end having seen its message id before the output arrives, which a busy page does not
  always guarantee). An error, a warning or a print in a redraw becomes a note in the
  plot area.
* An invalid configuration clears the plot and says why in its place (a stale plot next
  to a "✘ invalid" readout would show numbers for a configuration that does not exist).
* Figures sit on their own white background with dark text, readable in light and dark
  themes alike.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from autograder.markup import no_math

GREY = "#808080"  # mid-grey: readable on white and on JupyterLab's dark background
PAPER = "#ffffff"  # every figure's own background, in every theme
STYLE = {"description_width": "initial"}
INVALID_CLASS = "dtw-plot-invalid"
PLOT_CLASS = "dtw-plot"
#: Pixels drawn per pixel shown. 1, as a notebook's inline figures: a slider redraws on
#: every step, and twice the resolution costs half again the drawing time (about 0.29 s
#: against 0.19 s for chapter 5's largest Gantt chart) and twice the bytes per redraw.
SHARPNESS = 1


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


def figure_alt(fig: Any) -> str:
    """A figure's alternative text: its title, else its axes' titles, else "Figure"."""
    suptitle = getattr(fig, "_suptitle", None)
    titles = [suptitle.get_text()] if suptitle is not None and suptitle.get_text() else []
    titles += [ax.get_title() for ax in fig.get_axes() if ax.get_title()]
    return "; ".join(titles) or "Figure"


def figure_html(fig: Any) -> str:
    """The figure as an inline PNG ``<img>``, sized as a notebook would show it (the
    figure's own dpi, tight bounding box) and drawn at ``SHARPNESS`` times that, with the
    fastest compression (the redraw, not the bytes, is what a learner waits for)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi * SHARPNESS, bbox_inches="tight",
                facecolor=fig.get_facecolor(), pil_kwargs={"compress_level": 1})
    png = buffer.getvalue()
    width = int.from_bytes(png[16:20], "big") // SHARPNESS  # the PNG header's IHDR width
    data = base64.b64encode(png).decode("ascii")
    return (f'<img src="data:image/png;base64,{data}" width="{width}" '
            f'alt="{html.escape(figure_alt(fig))}" style="max-width:100%;height:auto">')


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
        self.out = w.HTML(layout=w.Layout(width="100%"))
        self.out.add_class(PLOT_CLASS)
        self.controls = [c for row in rows for c in row]
        self.box = w.VBox([*(wrapping_row(row) for row in rows), *extra,
                           cover_until_locked(key, self.status, slot=slot), self.out],
                          layout=w.Layout(width="100%"))
        self.box.status, self.box.out, self.box.view = self.status, self.out, self

    def show(self, status_html: str, figures: Sequence[Any] = (), invalid: str = "") -> None:
        """Replace the verdicts and the plot; with ``invalid``, clear the plot and say why."""
        self.status.value = no_math(status_html)
        if invalid:
            self.out.value = no_math(invalid_html(invalid))
            return
        self.out.value = no_math("".join(figure_html(themed(fig)) for fig in figures))

    def watch(self, redraw: Callable[[], None], controls: Iterable[Any] | None = None,
              now: bool = True) -> None:
        """Redraw (now, unless ``now`` is False) and whenever a control changes. An error
        becomes a message in the plot area; a warning or printed text a note below it."""
        def guarded(_: Any = None) -> None:
            said = io.StringIO()
            try:
                with (warnings.catch_warnings(record=True) as caught,
                      contextlib.redirect_stdout(said), contextlib.redirect_stderr(said)):
                    redraw()
            except Exception as exc:  # shown to the learner, never sent to the log console
                self.show(self.status.value, invalid=f"{type(exc).__name__}: {exc}")
                return
            notes = [str(w.message) for w in caught] + [said.getvalue().strip()]
            if any(notes):
                self.out.value += no_math("".join(
                    f"<p><small>{html.escape(n)}</small></p>" for n in notes if n))

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
