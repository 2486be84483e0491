"""Every grading of a lab meets the shapes that tell common wrong programs from right ones, so
no wrong program passes by the luck of the draw (a GPipe order passed 1F1B's lab whenever no
drawn case had more micro-batches than stages)."""

from __future__ import annotations

from typing import Any

import pytest

from solutions.pipeline_schedules import gpipe_order
from solutions.sim import pipeline_lab as simpipeline
from solutions.sim import ring_lab as simring
from solutions.sim import tp_lab as simtp
from solutions.sim import zero_lab as simzero
from solutions.sim.lab import LabSpec

SEEDS = range(400)
# The regimes written out again here, from the labs' texts, not read from the specs.
TELLING = {
    "ring_allreduce": [lambda c: c["m"] % c["n"] != 0, lambda c: c["n"] >= 4],
    "zero3_forward": [lambda c: c["d"] ** 2 % c["n"] != 0, lambda c: c["n"] >= 3],
    "tp_mlp_forward": [lambda c: c["f"] % c["n"] != 0, lambda c: c["n"] >= 3],
    "pipeline_schedule": [lambda c: c["v"] == 1 and c["m"] > c["pp"],
                          lambda c: c["v"] == 1 and c["m"] < c["pp"],
                          lambda c: c["v"] > 1],
}


@pytest.mark.parametrize("spec", [simring.SPEC, simzero.SPEC, simtp.SPEC, simpipeline.SPEC],
                         ids=lambda spec: spec.name)
def test_every_grading_meets_every_telling_shape(spec: LabSpec) -> None:
    for seed in SEEDS:
        cases = spec.graded(seed)
        assert len(cases) == spec.n_graded
        for k, telling in enumerate(TELLING[spec.name]):
            assert any(telling(case) for case in cases), (seed, k, cases)


def test_gradings_stay_fresh_and_reproducible() -> None:
    assert simring.SPEC.graded(7) == simring.SPEC.graded(7)
    shapes = {tuple((c["n"], c["m"]) for c in simring.SPEC.graded(seed)) for seed in SEEDS}
    assert len(shapes) == len(SEEDS)


def _gpipe(pp: int, m: int, v: int) -> list[list[list[Any]]]:
    """GPipe's order for 1F1B cases, the reference for interleaved ones (so only a 1F1B
    case with more micro-batches than stages can catch it), as lists: what the wire gives."""
    if v > 1:
        return [[list(a) for a in order] for order in simpipeline.pipeline_schedule(pp, m, v)]
    return [[[op.phase, op.microbatch] for op in gpipe_order(pp, m, stage)]
            for stage in range(pp)]


def test_a_gpipe_order_fails_every_grading() -> None:
    spec = simpipeline.SPEC
    assert spec.call_args is not None
    for seed in SEEDS:
        reports = [spec.verify(case, {"value": _gpipe(*spec.call_args(case))})
                   for case in spec.graded(seed)]
        assert any(not r.passed for r in reports), seed
        assert all(r.passed or "holds" in r.problem for r in reports), reports


def test_a_regime_the_draw_cannot_meet_is_an_error_not_a_silent_pass() -> None:
    from dataclasses import replace

    impossible = replace(simring.SPEC, regimes=(("N above 100", lambda c: c["n"] > 100),))
    with pytest.raises(ValueError, match="N above 100"):
        impossible.graded(1)
