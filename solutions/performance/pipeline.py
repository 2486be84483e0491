"""Step-time model: the pipeline's share of a step, given the busiest stage's costs.

:func:`pipeline_costs_s` turns the seconds one stage spends per micro-batch and per send
into the bubble and the sends of a step (Narayanan et al. 2021, §2.2; Dubey et al. 2024,
§3.3.2); :func:`step_time_from_costs` adds them to the micro-batches' work and the exposed
data-parallel time, the composition :func:`solutions.performance.model.breakdown_s` uses.
"""

from __future__ import annotations

from solutions._checks import non_negative, positive_int
from solutions.layout import pipeline_bubble_over_compute


def pipeline_costs_s(work_s: float, send_s: float, pp: int, m: int, v: int = 1,
                     m_below_p: bool = False, bubble_v: float | None = None,
                     ) -> tuple[float, float]:
    """(bubble, sends) in seconds per step for a pipeline of ``pp`` stages, ``m``
    micro-batches and ``v`` chunks per GPU, given the busiest stage's ``work_s`` per
    micro-batch and ``send_s`` per chunk (activation out + gradient back).

    Bubble ``(p - 1)/v x work`` (Narayanan et al. 2021, §2.2: (p-1)/(v m) of the compute);
    sends ``(m v + p - 1) x send`` on the critical path (this course's count: every chunk's
    send of the ``m`` micro-batches plus the fill), none when ``pp = 1``. Interleaving needs
    at least ``pp`` micro-batches (ValueError otherwise) unless the schedule accepts fewer
    (``m_below_p``, Llama 3's modified schedule, Dubey et al. 2024 §3.3.2): a breadth-first
    interleaved order then leaves ``p - m`` chunk slots idle in each of its ``v - 1`` later
    rounds, bubble ``((p - 1) + (v - 1)(p - m)) / v x work``
    (:func:`solutions.pipeline_simulator.simulate` reproduces it). ``bubble_v`` is the v the
    bubble divides by when it differs from the chunk count: uneven chunks pace the fill and drain
    by the largest chunk (:attr:`solutions.layout.Layout.bubble_chunks`); the sends still
    cross all ``v`` chunk boundaries.
    """
    non_negative("work_s", work_s)
    non_negative("send_s", send_s)
    p, m, v = positive_int("pp", pp), positive_int("m", m), positive_int("v", v)
    if v > 1 and m < p and not m_below_p:
        raise ValueError(f"interleaving (v={v}) needs at least pp={p} micro-batches, got m={m}")
    if p == 1:
        return 0.0, 0.0
    paced = float(v) if bubble_v is None else bubble_v
    if not 1 <= paced <= v:
        raise ValueError(f"bubble_v must lie between 1 and v={v}, got {bubble_v!r}")
    return m * work_s * pipeline_bubble_over_compute(p, m, paced), (m * v + p - 1) * send_s


def step_time_from_costs(work_s: float, send_s: float, pp: int, m: int, v: int,
                         dp_exposed_s: float) -> float:
    """One step from a cost table: ``m x work + bubble + sends + exposed DP`` seconds
    (:func:`pipeline_costs_s`); the composition :func:`breakdown_s` uses."""
    bubble, sends = pipeline_costs_s(work_s, send_s, pp, m, v)
    return m * work_s + bubble + sends + non_negative("dp_exposed_s", dp_exposed_s)
