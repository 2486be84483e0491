"""Chapter 4 explorer: the gradient AllReduce against the backward pass, on one time axis.

The model is the one of :func:`solutions.overlap.exposed_comm_ms`, after PyTorch DDP's
design (Li et al., PVLDB 13(12), 2020, §3.2.3): one bucket per layer; the backward pass
produces layer L's gradients first; a bucket's AllReduce starts when its gradients are
ready *and* the previous AllReduce has finished (one communication stream, in order);
communication does not slow computation. Only what runs past the end of the backward
pass, the *exposed* communication, adds to the step time.
"""

from __future__ import annotations

import html
from typing import Any

from autograder.prediction import Prediction, nearest_option
from autograder.units import format_rounded as readout
from solutions import overlap as ov
from workbook.explorers.view import themed

#: toggle label -> (per-direction bandwidth in GB/s, link kind). H100 SXM: 900 GB/s NVLink
#: in total, 450 GB/s per direction (H100 datasheet); one ConnectX-7 NDR port per GPU:
#: 400 Gb/s = 50 GB/s per direction (DGX H100 user guide).
LINKS: dict[str, tuple[float, str]] = {
    "Inside a server (NVLink)": (450.0, "nvlink"),
    "Between servers (InfiniBand)": (50.0, "network"),
}
NVLINK_DOMAIN_GPUS = 8  # GPUs per DGX/HGX H100 server, the reach of NVLink
GPU_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

_CHOICES = {"nearly all of it": 0.9, "about half of it": 0.5, "only a small sliver": 0.05}


def _exposed_share(n_layers: int, layer_ms: float, comm_ms: float) -> float:
    return ov.exposed_comm_ms(n_layers, comm_ms, layer_ms) / (n_layers * comm_ms)


PREDICTION = Prediction(
    key="ch04",
    question=("A backward pass takes 240 ms over 24 equal layers, and each layer's gradient "
              "AllReduce takes 3 ms once that layer is done. How much of the total "
              "communication time shows up as extra step time?"),
    actual=lambda: nearest_option(_exposed_share(24, 240 / 24, 3.0), _CHOICES),
    measure=lambda: _exposed_share(24, 240 / 24, 3.0),
    options=tuple(_CHOICES),
    explanation=("Each AllReduce (3 ms) ends before the next layer's backward (10 ms) does, so "
                 "only the very last one, for the first layer, sticks out: 3 ms of the 72 ms "
                 "of communication. At 15 ms per AllReduce they would queue instead, and "
                 "15 + 23 x (15 - 10) = 130 ms of the 360 ms would be exposed."),
    feedback={
        "nearly all of it": (
            "That is what happens without overlap, when every AllReduce waits for the whole "
            "backward pass. Here each 3 ms AllReduce runs while the next layer's 10 ms backward "
            "computes."),
        "about half of it": (
            "Half would need the AllReduces to take about as long as a layer's backward; at 3 "
            "ms against 10 ms each one ends long before the next is ready."),
        "only a small sliver": (
            "Right: only the last AllReduce, after the first layer's backward, has nothing left "
            "to hide behind."),
    },
    reflection=(
        "Overlap hid almost all of the communication here. What change to the model or the "
        "cluster would make the AllReduces queue up, and how would you notice it in a profile?"),
)


# -- the timeline ---------------------------------------------------------------------

def timeline(n_layers: int, layer_ms: float, comm_ms: float) -> tuple[list[tuple[float, float]],
                                                                       list[tuple[float, float]]]:
    """(backward spans, AllReduce spans), each (start ms, length ms), in bucket order.

    Bucket k (the k-th to finish, layer L - k) is ready at (k + 1) b and starts at
    max(ready, end of bucket k - 1).
    """
    ov.exposed_comm_ms(n_layers, comm_ms, layer_ms)  # validates the inputs
    compute = [(k * layer_ms, layer_ms) for k in range(n_layers)]
    comm: list[tuple[float, float]] = []
    free_at = 0.0
    for k in range(n_layers):
        start = max((k + 1) * layer_ms, free_at)
        comm.append((start, comm_ms))
        free_at = start + comm_ms
    return compute, comm


def comm_per_bucket_ms(params_billion: float, n_gpus: int, link_gb_per_s: float,
                       n_layers: int) -> float:
    """One bucket's AllReduce: the whole FP16 gradient's ring AllReduce time / L buckets."""
    return ov.dp_allreduce_time_ms(params_billion, n_gpus, link_gb_per_s) / n_layers


# -- failure states in words -----------------------------------------------------------

def overlap_messages(n_layers: int, layer_ms: float, params_billion: float, n_gpus: int,
                     link_gb_per_s: float, link: str = "nvlink") -> list[str]:
    """What is wrong with a configuration, in words (an empty list when nothing is).

    ``link`` is "nvlink" (inside one server) or "network" (between servers).
    """
    messages = []
    if link == "nvlink" and n_gpus > NVLINK_DOMAIN_GPUS:
        messages.append(f"✘ An NVLink ring of {n_gpus} GPUs does not exist: NVLink reaches the "
                        f"{NVLINK_DOMAIN_GPUS} GPUs of one DGX/HGX H100 server, so this ring "
                        "would cross the network between servers. Switch the link.")
    comm_ms = comm_per_bucket_ms(params_billion, n_gpus, link_gb_per_s, n_layers)
    if comm_ms > layer_ms:
        exposed = ov.exposed_comm_ms(n_layers, comm_ms, layer_ms)
        messages.append(f"✘ Each bucket's AllReduce ({readout(comm_ms, 'ms')}) takes longer than "
                        "one "
                        f"layer's backward ({readout(layer_ms, 'ms')}): the AllReduces queue up "
                        f"and {readout(exposed, 'ms')} run past the end of the backward pass.")
    return messages


def summary_lines(n_layers: int, layer_ms: float, params_billion: float, n_gpus: int,
                  link_gb_per_s: float) -> list[str]:
    """The numbers the explorer reports beside the chart, as sentences."""
    comm_ms = comm_per_bucket_ms(params_billion, n_gpus, link_gb_per_s, n_layers)
    total_ms = comm_ms * n_layers
    backward_ms = layer_ms * n_layers
    exposed = ov.exposed_comm_ms(n_layers, comm_ms, layer_ms)
    return [
        f"Gradient: {ov.gradient_gb(params_billion):g} GB (FP16); ring AllReduce over "
        f"{n_gpus} GPUs at {link_gb_per_s:g} GB/s: {readout(total_ms, 'ms')}, or "
        f"{readout(comm_ms, 'ms')} "
        f"for each of {n_layers} buckets.",
        f"Communication / backward compute = {total_ms / backward_ms:.2f}.",
        f"Exposed: {readout(exposed, 'ms')} of {readout(total_ms, 'ms')} "
        f"({1 - ov.overlapped_comm_fraction(n_layers, comm_ms, layer_ms):.1%}); "
        f"backward + exposed = {readout(backward_ms + exposed, 'ms')}.",
    ]


# -- plots --------------------------------------------------------------------------

def _draw_overlap(ax: Any, n_layers: int, layer_ms: float, comm_ms: float) -> None:
    compute, comm = timeline(n_layers, layer_ms, comm_ms)
    backward_end = n_layers * layer_ms
    comm_end = comm[-1][0] + comm[-1][1]
    ax.broken_barh(compute, (1.6, 0.8), facecolors="#4C72B0", edgecolor="white")
    ax.broken_barh(comm, (0.6, 0.8), facecolors="#55A868", edgecolor="white")
    exposed = comm_end - backward_end
    ax.axvspan(backward_end, comm_end, color="#C44E52", alpha=0.15, hatch="xx")
    ax.axvline(backward_end, color="black", linestyle="--", linewidth=1)
    ax.text(backward_end, 2.65, " backward ends", fontsize=8, va="bottom")
    ax.text(comm_end, 0.35, f"exposed: {readout(exposed, 'ms')} ", ha="right", va="top", fontsize=9,
            color="#8B0000")
    ax.set_yticks([1.0, 2.0], ["AllReduce\n(per bucket)", "backward\n(layer L ... 1)"])
    ax.set_ylim(0, 3.2)
    ax.set_xlim(0, max(comm_end, backward_end) * 1.02)
    ax.set_title(f"{n_layers} layers x {layer_ms:g} ms backward, {comm_ms:g} ms AllReduce per "
                 f"bucket: {readout(exposed, 'ms')} of {readout(n_layers * comm_ms, 'ms')} exposed",
                 fontsize=10, loc="left")


def overlap_figure(n_layers: int = 40, layer_ms: float = 5.0, comm_ms: float = 1.5) -> Any:
    """Backward pass and bucket AllReduces on one time axis, the exposed tail marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 2.6))
    _draw_overlap(ax, n_layers, layer_ms, comm_ms)
    ax.set_xlabel("time since the backward pass started (ms)")
    fig.subplots_adjust(left=0.13, right=0.98, bottom=0.22, top=0.87)
    plt.close(fig)
    return themed(fig)


def compare_figure(n_layers: int = 40, layer_ms: float = 5.0,
                   comm_ms: tuple[float, float] = (1.5, 10.0)) -> Any:
    """Two AllReduce speeds on the same backward pass: one hides, one queues."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(10, 4.8), sharex=True)
    for ax, c in zip(axes, comm_ms, strict=True):
        _draw_overlap(ax, n_layers, layer_ms, c)
    longest = max(timeline(n_layers, layer_ms, c)[1][-1][0] + c for c in comm_ms)
    axes[0].set_xlim(0, max(longest, n_layers * layer_ms) * 1.02)
    axes[-1].set_xlabel("time since the backward pass started (ms)")
    fig.subplots_adjust(left=0.13, right=0.98, bottom=0.11, top=0.93, hspace=0.35)
    plt.close(fig)
    return themed(fig)


# -- the explorer -------------------------------------------------------------------

def _report_html(messages: list[str], lines: list[str]) -> str:
    verdict = ("<p><strong>✔ The communication hides behind the backward pass, except the "
               "last bucket.</strong></p>" if not messages else
               "".join(f"<p><strong>{html.escape(msg)}</strong></p>" for msg in messages))
    details = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f'<div role="status">{verdict}<ul>{details}</ul></div>'


#: link bandwidths (GB/s per direction) the chapter names: RoCE/IB 50, NVLink 3 and 4, ...
BANDWIDTHS = (12.5, 25.0, 50.0, 100.0, 200.0, 300.0, 450.0, 900.0)
#: model sizes in billions of parameters
PARAM_SIZES_B = (0.1, 0.35, 1.0, 1.3, 3.0, 7.0, 10.0, 13.0, 30.0, 70.0, 175.0, 405.0)


def explorer() -> Any:
    """Sliders for layers, backward time, model size, GPUs and bandwidth; a live timeline."""
    import ipywidgets as w

    from workbook.explorers.view import STYLE, View, options_slider

    layers = w.IntSlider(value=32, min=4, max=96, description="Layers (= buckets)", style=STYLE)
    layer_ms = w.FloatSlider(value=6.0, min=0.5, max=20.0, step=0.5, style=STYLE,
                             description="Backward per layer (ms)")
    params = options_slider(PARAM_SIZES_B, 7.0, "Model", label=lambda v: f"{v:g}B params")
    gpus = w.Dropdown(options=list(GPU_COUNTS), value=8, description="GPUs", style=STYLE)
    link = w.ToggleButtons(options=list(LINKS), value="Inside a server (NVLink)",
                           description="Link", style=STYLE)
    bandwidth = options_slider(BANDWIDTHS, 450.0, "GB/s per direction", "GB/s")
    view = View("ch04", [[layers, layer_ms, params], [gpus, bandwidth], [link]])

    def redraw() -> None:
        args = (layers.value, layer_ms.value, params.value, gpus.value, bandwidth.value)
        messages = overlap_messages(*args, link=LINKS[link.value][1])
        comm_ms = comm_per_bucket_ms(params.value, gpus.value, bandwidth.value, layers.value)
        view.show(_report_html(messages, summary_lines(*args)),
                  [overlap_figure(layers.value, layer_ms.value, comm_ms)])

    def pick_link() -> None:
        if bandwidth.value == LINKS[link.value][0]:
            redraw()  # the link's kind changed, not the bandwidth
        bandwidth.value = LINKS[link.value][0]  # otherwise the bandwidth observer redraws

    view.watch(redraw, [layers, layer_ms, params, gpus, bandwidth])
    view.watch(pick_link, [link], now=False)
    return view.box
