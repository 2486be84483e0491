"""Step-time model: the record of one predicted step (:func:`solutions.performance.estimate`).

Its breakdown's keys are :data:`solutions.performance.model.BREAKDOWN_KEYS`; the MFU counts
the attention scores as ``attention_flops`` says; ``warnings`` are the unusual but
computable features of the layout (:data:`solutions.planner.validity.ADVISORY`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class StepEstimate:
    """One step of one layout: time, throughput, utilisation and where the time goes."""

    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    breakdown: Mapping[str, float]
    attention_flops: str = "causal"
    warnings: tuple[str, ...] = ()

    @property
    def biggest_cost(self) -> str:
        """The breakdown entry, other than compute, that costs the most time."""
        return max((k for k in self.breakdown if k != "compute"), key=self.breakdown.__getitem__)

    def _repr_html_(self) -> str:
        colours = ("#4C72B0", "#8DA0CB", "#DD8452", "#E5C494", "#B3B3B3", "#937860",
                   "#C44E52", "#FC8D62", "#55A868", "#A6D854", "#8172B2")
        bar = rows = ""
        for (key, seconds), colour in zip(self.breakdown.items(), colours, strict=True):
            share = seconds / self.step_time_s
            bar += (f"<div title='{key}' style='width:{100 * share:.2f}%;background:{colour};"
                    "height:18px;display:inline-block'></div>")
            rows += (f"<tr><td><span style='color:{colour}'>&#9632;</span> {key}</td>"
                     f"<td style='text-align:right'>{seconds:,.3f} s</td>"
                     f"<td style='text-align:right'>{share:.1%}</td></tr>")
        head = (f"{self.step_time_s:,.2f} s per step, {self.tokens_per_s:,.0f} tokens/s, "
                f"MFU {self.mfu:.1%}, HFU {self.hfu:.1%} ({self.attention_flops} attention "
                f"counted), {self.model_tflops_per_gpu:,.0f} model TFLOP/s per GPU")
        head += "".join(f"<br>&#9888; {w}" for w in self.warnings)
        return (f"<div><p>{head}</p><div style='width:100%;white-space:nowrap'>{bar}</div>"
                f"<table>{rows}</table></div>")
