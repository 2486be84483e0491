"""Chapter 4 explorer: the prediction, the overlap timeline, the figures and the widget."""

from __future__ import annotations

from typing import Any

import matplotlib
import pytest

from workbook.explorers import ch04

matplotlib.use("Agg")


def controls(box: Any) -> dict[str, Any]:
    """Every widget below ``box`` that has a description, keyed by it."""
    found: dict[str, Any] = {}
    for child in getattr(box, "children", ()):
        if getattr(child, "description", ""):
            found[child.description] = child
        found.update(controls(child))
    return found


def status_of(box: Any) -> str:
    return str(box.status.value)


# -- prediction ---------------------------------------------------------------------------

def test_prediction_is_a_small_sliver() -> None:
    # b = 200/40 = 5 ms > c = 1.5 ms: only the last bucket is exposed, 1.5 of 40 x 1.5 = 60 ms
    assert ch04.PREDICTION.actual() == "only a small sliver"
    assert ch04.PREDICTION.actual() in ch04.PREDICTION.options


# -- timeline -----------------------------------------------------------------------------

def test_timeline_queues_when_comm_is_longer_than_compute() -> None:
    # 3 layers of 5 ms, 7 ms per AllReduce: ready at 5, 10, 15; starts 5, 12, 19; ends 26.
    # Exposed 26 - 15 = 11 = 7 + 2 x (7 - 5).
    compute, comm = ch04.timeline(3, 5.0, 7.0)
    assert compute == [(0.0, 5.0), (5.0, 5.0), (10.0, 5.0)]
    assert comm == [(5.0, 7.0), (12.0, 7.0), (19.0, 7.0)]


def test_timeline_hides_all_but_the_last_bucket() -> None:
    # 1.5 ms AllReduces after 5 ms layers start the moment each bucket is ready
    _, comm = ch04.timeline(4, 5.0, 1.5)
    assert comm == [(5.0, 1.5), (10.0, 1.5), (15.0, 1.5), (20.0, 1.5)]


def test_comm_per_bucket() -> None:
    # 10B params -> 20 GB; 2 x 20 x 7/8 / 450 s = 77.78 ms; / 40 buckets = 1.944 ms
    assert ch04.comm_per_bucket_ms(10.0, 8, 450.0, 40) == pytest.approx(1.94444, rel=1e-4)


def test_summary_lines() -> None:
    lines = ch04.summary_lines(40, 5.0, 10.0, 8, 450.0)
    assert "77.8 ms" in lines[0] and "1.94 ms for each of 40 buckets" in lines[0]
    assert lines[1] == "Communication / backward compute = 0.39."  # 77.78 / 200
    assert "Exposed: 1.94 ms of 77.8 ms (2.5%)" in lines[2]  # one bucket of 40


# -- failure states in words ---------------------------------------------------------------

def test_good_configuration_has_no_message() -> None:
    assert ch04.overlap_messages(40, 5.0, 10.0, 8, 450.0, "nvlink") == []


def test_nvlink_ring_beyond_one_server() -> None:
    (message,) = ch04.overlap_messages(40, 5.0, 10.0, 64, 450.0, "nvlink")
    assert message.startswith("✘ An NVLink ring of 64 GPUs does not exist")
    # the same ring over the network is allowed (and slow, but 2 x 20 x 63/64 / 450 GB/s
    # = 87.5 ms / 40 = 2.19 ms per bucket still hides behind 5 ms layers)
    assert ch04.overlap_messages(40, 5.0, 10.0, 64, 450.0, "network") == []


def test_allreduce_longer_than_a_layer_queues() -> None:
    # 50 GB/s: 2 x 20 x 7/8 / 50 = 700 ms, 17.5 ms per bucket > 5 ms per layer.
    # Exposed 17.5 + 39 x 12.5 = 505 ms.
    (message,) = ch04.overlap_messages(40, 5.0, 10.0, 8, 50.0, "network")
    assert "(17.5 ms)" in message and "(5 ms)" in message and "505 ms" in message


# -- figures ------------------------------------------------------------------------------

def test_overlap_figure_has_two_rows_and_marks_the_exposed_tail() -> None:
    fig = ch04.overlap_figure(40, 5.0, 1.5)
    (ax,) = fig.axes
    bars = [c for c in ax.collections if len(c.get_paths()) == 40]
    assert len(bars) == 2  # 40 backward blocks, 40 AllReduce blocks
    assert any(t.get_text().strip() == "exposed: 1.5 ms" for t in ax.texts)


def test_compare_figure_has_two_panels() -> None:
    fig = ch04.compare_figure(40, 5.0, (1.5, 10.0))
    assert len(fig.axes) == 2
    # second panel: 10 + 39 x 5 = 205 ms of 400 ms exposed
    assert "205 ms of 400 ms exposed" in fig.axes[1].get_title(loc="left")


# -- the explorer ---------------------------------------------------------------------------

def test_explorer_reports_and_redraws(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[tuple[Any, ...]] = []
    real = ch04.overlap_figure

    def spy(*args: Any) -> Any:
        drawn.append(args)
        return real(*args)

    monkeypatch.setattr(ch04, "overlap_figure", spy)
    box = ch04.explorer()
    widgets = controls(box)
    assert len(drawn) == 1
    assert "✔" in status_of(box)

    widgets["Link"].value = "Between servers (InfiniBand)"
    assert widgets["GB/s per direction"].value == pytest.approx(50.0)
    # a 7B model's FP16 gradient, 14 GB, at 50 GB/s: 2 x 7/8 x 14 GB / 50 GB/s = 490 ms over
    # 32 buckets
    assert drawn[-1][2] == pytest.approx(15.3125)
    assert "✘ Each bucket's AllReduce (15.3 ms)" in status_of(box).replace("&#x27;", "'")

    widgets["Link"].value = "Inside a server (NVLink)"
    widgets["GPUs"].value = 64
    assert "✘ An NVLink ring of 64 GPUs" in status_of(box)

    count = len(drawn)
    widgets["Layers (= buckets)"].value = 80
    assert len(drawn) == count + 1
