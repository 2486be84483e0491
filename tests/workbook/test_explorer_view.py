"""An explorer's plot area and a card's output are widget state, never kernel output.

A redraw or a button press runs in a widget callback. Output sent from there (a figure
``display``-ed, a warning, a print) has no cell to land in; a front end that has not yet
seen an Output widget's message id files it in JupyterLab's log console instead. These
tests run the callbacks with IPython's display and the process's stdout and stderr
replaced by recorders, and check that nothing reaches them while the widget shows
everything.
"""

from __future__ import annotations

import base64
import contextlib
import io
import struct
import warnings
from collections.abc import Iterator
from typing import Any

import matplotlib

matplotlib.use("Agg")

import ipywidgets as w  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from autograder.widgets import OUTPUT_CLASS  # noqa: E402
from workbook.explorers import view as V  # noqa: E402
from workbook.learner import widgets  # noqa: E402


@contextlib.contextmanager
def nothing_sent() -> Iterator[list[Any]]:
    """Record every display call and everything written to stdout or stderr."""
    import IPython.display as display

    sent: list[Any] = []
    original = display.display
    display.display = lambda *objs, **kw: sent.extend(objs)  # type: ignore[assignment]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield sent
    finally:
        display.display = original
    sent += [text for text in (out.getvalue(), err.getvalue()) if text]


def _figure(title: str) -> Any:
    fig, ax = plt.subplots(figsize=(4.0, 2.0))
    ax.plot([0, 1], [0, 1])
    ax.set_title(title)
    plt.close(fig)
    return fig


def _png_of(img_html: str) -> bytes:
    data = img_html.split("base64,", 1)[1].split('"', 1)[0]
    return base64.b64decode(data)


def test_a_figure_is_an_image_in_the_plot_area_with_its_title_as_alt_text() -> None:
    slider = w.IntSlider(value=1, min=1, max=3)
    view = V.View("test", [[slider]])
    with nothing_sent() as sent:
        view.watch(lambda: view.show("<b>ok</b>", [_figure(f"m = {slider.value}")]))
        slider.value = 2
    assert sent == []
    assert view.out.value.count("<img") == 1 and 'alt="m = 2"' in view.out.value
    png = _png_of(view.out.value)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # drawn at SHARPNESS times the size it is shown: 4 inches at the figure's dpi, give or
    # take the tight bounding box
    shown = int(view.out.value.split('width="', 1)[1].split('"', 1)[0])
    drawn = struct.unpack(">I", png[16:20])[0]
    assert shown == drawn // V.SHARPNESS
    assert 0.8 * 4.0 * 100 < shown < 1.2 * 4.0 * 100
    assert V.PLOT_CLASS in view.out._dom_classes


def test_an_invalid_configuration_replaces_the_plot_with_the_reason() -> None:
    slider = w.IntSlider(value=1, min=1, max=3)
    view = V.View("test", [[slider]])

    def redraw() -> None:
        if slider.value > 2:
            view.show("status", invalid="too many")
        else:
            view.show("status", [_figure("fine")])

    with nothing_sent() as sent:
        view.watch(redraw)
        slider.value = 3
    assert sent == []
    assert "<img" not in view.out.value and V.INVALID_CLASS in view.out.value
    assert "too many" in view.out.value


def test_an_error_a_warning_or_a_print_in_a_redraw_stays_in_the_plot_area() -> None:
    slider = w.IntSlider(value=1, min=1, max=3)
    view = V.View("test", [[slider]])

    def redraw() -> None:
        if slider.value == 2:
            raise ZeroDivisionError("no microbatches")
        print("printed by a redraw")
        warnings.warn("a library's warning", UserWarning, stacklevel=1)
        view.show("status", [_figure("fine")])

    with nothing_sent() as sent:
        view.watch(redraw)
        text = view.out.value
        slider.value = 2
        error = view.out.value
    assert sent == []
    assert "<img" in text and "printed by a redraw" in text and "a library&#x27;s warning" in text
    assert "ZeroDivisionError: no microbatches" in error and "<img" not in error


@pytest.mark.parametrize("answer", ["128", "3"])
def test_a_card_shows_its_feedback_as_state_and_sends_no_output(answer: str) -> None:
    card = widgets.widget("0.1")
    with nothing_sent() as sent:
        card.write(answer)
        card.check()
    assert sent == []
    assert "dtw-result" in card.output.value
    assert OUTPUT_CLASS in card.output._dom_classes


def test_an_error_in_a_card_action_is_a_message_on_the_card() -> None:
    card = widgets.widget("0.1")

    def broken(answer: Any, params: Any) -> Any:
        raise RuntimeError("the store is unreadable")

    card.actions.check = broken
    with nothing_sent() as sent:
        card.check()
    assert sent == []
    assert "RuntimeError: the store is unreadable" in card.output.value
