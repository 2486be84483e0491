"""Chapter 9 explorer, part 3: the 5D planner's widgets.

:class:`PlannerExplorer` sets a :class:`~workbook.explorers.ch09_planner.PlannerSettings`
from its controls and shows what :mod:`workbook.explorers.ch09_planner` makes of it: the
verdicts, the speed line and the figure. Two buttons answer exercises and wait until those
are answered (the progress log says so): "Recommend a layout" searches for the fastest
layout, and "Load published layout" sets Llama 3's run as published.
"""

from __future__ import annotations

import html
from dataclasses import replace
from typing import Any

from solutions import hardware, models, planner
from solutions.planner.memory import RECOMPUTE_MODES
from solutions.planner.search import Ranked
from solutions.stack import STACKS
from workbook.explorers.ch09_planner import (
    BATCHES,
    GPU_COUNTS,
    LAYOUT_CONTROLS,
    MODEL_LABELS,
    PAPER_LAYOUT,
    SEQ_LENS,
    TOKENS_T,
    PlannerSettings,
    invalid_reason,
    opening_settings,
    plan_numbers,
    planner_figure,
    planner_messages,
    published_settings,
    summary_lines,
)
from workbook.explorers.ch09_speed import versus_best
from workbook.explorers.ch09_withheld import answered_ids, listed, placeholder, withheld

#: what "Recommend a layout" answers: the fastest layout (9.13), which for the paper's
#: settings is a layout of 9.10 with 9.1's data-parallel degree
SEARCH_ANSWERS = ("9.1", "9.10", "9.13")
#: what loading Llama 3's published layout answers: its data-parallel degree, its weights
#: per GPU and the layout itself
PUBLISHED_ANSWERS = ("9.1", "9.3", "9.10")

# -- the explorer -----------------------------------------------------------------------

def report_html(messages: list[str], lines: list[str]) -> str:
    verdict = ("<p><strong>✔ This layout works: the GPUs multiply out, every split is even, "
               "memory fits and the bubble meets your target.</strong></p>" if not messages
               else "".join(f"<p><strong>{html.escape(m)}</strong></p>" for m in messages))
    details = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f'<div role="status">{verdict}<ul>{details}</ul></div>'


def _with_option(control: Any, value: Any) -> None:
    """Set a control to ``value``: a list gains the value if it is missing, a slider's range
    stretches to hold it (a published layout may lie outside the defaults)."""
    options = getattr(control, "options", None)
    if options and not isinstance(options[0], tuple) and value not in options:
        control.options = sorted([*options, value])
    elif isinstance(getattr(control, "max", None), (int, float)) and value > control.max:
        control.max = value
    control.value = value


class PlannerExplorer:
    """The widgets; ``box`` is what a notebook shows and ``controls`` drive it."""

    def __init__(self, settings: PlannerSettings | None = None) -> None:
        import ipywidgets as w

        from workbook.explorers.view import STYLE, View, options_slider

        s = settings or PlannerSettings()
        lay, st = s.layout, STYLE

        def islider(label: str, value: int, lo: int, hi: int) -> Any:
            return w.IntSlider(value=value, min=lo, max=hi, description=label, style=st)

        self.controls: dict[str, Any] = {
            "model": w.Dropdown(options=list(MODEL_LABELS.items()), value=s.model,
                                description="Model", style=st),
            "gpu": w.Dropdown(options=list(hardware.GPUS), value=s.gpu, description="GPU",
                              style=st),
            "n_gpus": w.Dropdown(options=list(GPU_COUNTS), value=s.n_gpus,
                                 description="GPUs", style=st),
            "stack": w.Dropdown(options=list(STACKS), value=s.stack, description="Software",
                                style=st),
            "tp": islider("TP", lay.tp, 1, 16), "cp": islider("CP", lay.cp, 1, 16),
            "pp": islider("PP", lay.pp, 1, 128), "dp": islider("DP", lay.dp, 1, 2048),
            "ep": islider("EP", lay.ep, 1, 256),
            "zero_stage": w.ToggleButtons(options=[0, 1, 2, 3], value=lay.zero_stage,
                                          description="ZeRO stage", style=st),
            "micro_batch": islider("Micro-batch", lay.micro_batch, 1, 8),
            "global_batch_seqs": w.Dropdown(options=list(BATCHES), value=s.global_batch_seqs,
                                            description="Batch (seqs)", style=st),
            "seq_len": w.Dropdown(options=list(SEQ_LENS), value=lay.seq_len,
                                  description="Sequence", style=st),
            "recompute": w.Dropdown(options=list(RECOMPUTE_MODES),
                                    value=lay.activation_recompute, description="Recompute",
                                    style=st),
            "virtual_stages": islider("Chunks v", lay.virtual_stages, 1, 8),
            "what_if_mfu": w.Checkbox(value=s.what_if_mfu, description="What-if MFU",
                                      style=st),
            "mfu_pct": w.FloatSlider(value=s.mfu_pct, min=5, max=70, step=0.5,
                                     description="MFU (%)", style=st),
            "usd_per_gpu_hour": w.FloatSlider(value=s.usd_per_gpu_hour, min=0.5, max=8,
                                              step=0.25, description="\\$ / GPU-hour",
                                              style=st),
            "tokens_t": options_slider(TOKENS_T, s.tokens_t, "Tokens",
                                       label=lambda v: f"{v:g}T"),
            "max_bubble_pct": w.FloatSlider(value=s.max_bubble_pct, min=1, max=100, step=1,
                                            description="Bubble target %", style=st),
        }
        wide = w.Layout(width="auto")
        self.recommend_button = w.Button(description="Recommend a layout", layout=wide)
        self.published_button = w.Button(description="Load published layout", layout=wide)
        self.note, self.bar = w.HTML(), w.HTML()
        c = self.controls
        rows = [[c[k] for k in ("model", "gpu", "n_gpus", "seq_len", "global_batch_seqs")],
                [c[k] for k in ("tp", "cp", "pp", "dp", "ep", "virtual_stages")],
                [c[k] for k in ("stack", "zero_stage", "micro_batch", "recompute",
                                "max_bubble_pct")],
                [c[k] for k in ("what_if_mfu", "mfu_pct", "usd_per_gpu_hour", "tokens_t")],
                [self.recommend_button, self.published_button]]
        self.view = View("ch09", rows, extra=[self.note, self.bar])
        self.status, self.out, self.box = self.view.status, self.view.out, self.view.box
        self._hold = False
        self.best: tuple[tuple[Any, ...], Ranked] | None = None  # (search key, fastest)
        self.view.watch(self.redraw, list(self.controls.values()))
        self.recommend_button.on_click(lambda _: self._guarded(self.recommend))
        self.published_button.on_click(lambda _: self._guarded(self.load_published))
        waiting = withheld(SEARCH_ANSWERS, answered_ids())
        if waiting:  # the search's fastest layout answers them: rerun the cell once answered
            self.recommend_button.disabled = True
            self.recommend_button.description = f"Recommend a layout ({placeholder(waiting)})"

    def _guarded(self, action: Any) -> None:
        try:
            action()
        except Exception as exc:  # shown on the page, never in the log console
            self.note.value = f"<p>✘ {html.escape(type(exc).__name__)}: {html.escape(str(exc))}</p>"

    def settings(self) -> PlannerSettings:
        values = {k: c.value for k, c in self.controls.items()}
        layout = {LAYOUT_CONTROLS[k]: values.pop(k) for k in LAYOUT_CONTROLS}
        s = PlannerSettings(**values, layout=replace(PAPER_LAYOUT, **layout))
        return replace(s, layout=s.config())

    def apply(self, s: PlannerSettings) -> None:
        """Set every control from ``s`` and redraw once."""
        self._hold = True
        try:
            for key, control in self.controls.items():
                source = s.layout if key in LAYOUT_CONTROLS else s
                _with_option(control, getattr(source, LAYOUT_CONTROLS.get(key, key)))
        finally:
            self._hold = False
        self.redraw()

    def recommend(self) -> None:
        """Search every layout, load the fastest and keep it to compare against (once the
        exercises the search answers are answered)."""
        waiting = withheld(SEARCH_ANSWERS, answered_ids())
        if waiting:
            self.note.value = (f"<p>The search's fastest layout is the answer of "
                               f"{listed(waiting)}: answer them first, then rerun this cell."
                               "</p>")
            return
        s = self.settings()
        found = planner.recommend(s.arch, s.n_gpus, s.global_batch_seqs, s.layout.seq_len,
                                  s.gpu_spec, memory_budget_gb=s.memory_budget_gb, top=3,
                                  stack=s.software)
        if not found.best:
            self.note.value = (f"<p>✘ None of the {found.candidates:,} layouts searched fits "
                               "these settings: try more GPUs or a smaller batch.</p>")
            return
        top = found.best[0]
        self.best = (self._search_key(s), top)
        others = "; ".join(f"{r.label()}: {r.estimate.step_time_s:,.2f} s"
                           for r in found.best[1:])
        self.note.value = "<p>" + html.escape(
            f"Recommended: the fastest of {found.valid:,} valid layouts ({found.candidates:,} "
            f"searched) by predicted step time, {top.estimate.step_time_s:,.2f} s. Next: "
            f"{others}.") + "</p>"
        self.apply(replace(s, layout=top.config, what_if_mfu=False))

    @staticmethod
    def _search_key(s: PlannerSettings) -> tuple[Any, ...]:
        return (s.model, s.gpu, s.n_gpus, s.global_batch_seqs, s.layout.seq_len, s.stack,
                s.memory_budget_gb)

    def load_published(self) -> None:
        s = published_settings(self.settings())
        if s is None:
            self.note.value = "<p>No published layout for this model.</p>"
            return
        waiting = withheld(PUBLISHED_ANSWERS, answered_ids())
        if s.arch.name == models.LLAMA3_405B.name and waiting:
            self.note.value = (f"<p>Llama 3's published layout is the answer of "
                               f"{listed(waiting)}: answer them first, then rerun this cell."
                               "</p>")
            return
        run = models.training_run(s.arch.name)
        note = "Loaded the published layout (see the table of real runs)."
        if run.accelerator.split()[0] not in hardware.GPUS:
            note += (f" {run.model} trained on {run.accelerator} chips, which have no 8-GPU "
                     f"nodes; the planner judges the layout as if it ran on {s.gpu}s.")
        self.note.value = f"<p>{html.escape(note)}</p>"
        self.apply(s)

    def redraw(self) -> None:
        if self._hold:
            return
        from workbook.explorers.ch09_status import status_bar_html, status_cells

        s = self.settings()
        numbers = plan_numbers(s)
        lines = summary_lines(s, numbers)
        if self.best is not None and self.best[0] == self._search_key(s):
            lines.append(versus_best(numbers, self.best[1]))
        report = report_html(planner_messages(s), lines)
        invalid = invalid_reason(s, numbers)
        if invalid or numbers["days"] is None:
            self.bar.value = ""
        else:
            self.bar.value = status_bar_html(status_cells(
                numbers, s.memory_budget_gb, s.max_bubble_pct, 100 * numbers["mfu"]))
        if invalid:
            self.view.show(report, invalid=invalid)
        else:
            self.view.show(report, [planner_figure(s)])


def explorer(settings: PlannerSettings | None = None) -> Any:
    """The 5D planner: model, GPU, cluster, five degrees, ZeRO, batch, MFU, price; it opens
    on :func:`opening_settings` unless given others."""
    return PlannerExplorer(settings or opening_settings()).box
