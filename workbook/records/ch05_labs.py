"""Chapter 5's lab (record 5.8, beyond the 58): write the 1F1B and interleaved schedules."""

from __future__ import annotations

from typing import Any

from autograder.exercise import Exercise
from solutions.sim import pipeline_lab as simpipeline
from workbook.records._labs import LAB_TAG, lab_kind
from workbook.records.ch05 import NARAYANAN, NARAYANAN_INT, NARAYANAN_MEM

STUB = '''    # One list per stage, in the order that stage runs its actions:
    # ("F", microbatch) / ("B", microbatch) when v == 1,
    # ("F", chunk, microbatch) / ("B", chunk, microbatch) when v > 1.
    return [[] for stage in range(pp)]'''


def _vary_5_8(rng: Any) -> dict[str, Any]:
    """Fresh shapes: four 1F1B cases (m below, at and above p) and two interleaved ones
    (m a multiple of p, the grouping older Megatron-LM required; current Megatron-Core
    also runs other m >= p with larger microbatch groups)."""
    plain = [(rng.randint(2, 5), rng.randint(1, 9), 1) for _ in range(4)]
    interleaved = []
    for _ in range(2):
        pp = rng.randint(2, 4)
        interleaved.append((pp, pp * rng.randint(1, 3), rng.choice([2, 3])))
    return dict(cases=tuple(plain + interleaved))


EX_5_8 = Exercise(
    id="5.8", chapter=5, category="build", title="Lab: write the 1F1B and interleaved schedules",
    prompt=("Write `pipeline_schedule(pp, m, v)`: for each of the pp stages, the list of "
            "actions it runs, in order, for m microbatches and v model chunks per stage. Each "
            "action takes one slot; the simulator starts it as soon as its stage is free and "
            "its input is ready, and rejects the first action that can never start. Graded "
            "for 1F1B cases (v = 1) and interleaved ones (v > 1): the makespan must be the "
            "minimum 2mv + 2(pp-1) slots (bubble (pp-1)/(mv)) and no stage may hold more "
            "microbatches in flight than (interleaved) 1F1B does: min(pp - s, m) on stage s "
            "for v = 1, and for v > 1 the peak of Megatron-LM's interleaved order, which is "
            "higher."),
    notes=("A forward of microbatch j on stage s needs the forward of j on stage s-1; a "
           "backward needs the backward of j on stage s+1 (the last stage: its own forward). "
           "With v chunks, chunk c of stage s is virtual stage c x pp + s."),
    params=dict(cases=((4, 8, 1), (3, 3, 1), (4, 2, 1), (2, 5, 1), (2, 4, 2), (4, 8, 2),
                       (3, 6, 3))),
    vary=_vary_5_8,
    answer_kind=lab_kind(simpipeline, "5.8", "(pp, m, v)", STUB),
    reference=lambda p: simpipeline.pipeline_schedule,
    hints=(
        "1F1B: stage s first runs min(pp - s - 1, m) forwards (the warm-up), then alternates "
        "one forward and one backward, then runs the remaining backwards.",
        "GPipe (all forwards, then all backwards) has the same makespan but holds all m "
        "microbatches on stage 0.",
        "Interleaved: warm up with (pp - s - 1) x 2 + (v - 1) x pp chunk forwards; "
        "microbatches pass through the chunks in groups of pp.",
    ),
    explanation=("The reference is solutions.sim.pipeline_lab.pipeline_schedule: "
                 "solutions.pipeline_schedules.one_f_one_b_order for v = 1 and Megatron-LM's "
                 "interleaved order (solutions.pipeline_schedules.interleaved_order) for v > 1."),
    sources=(NARAYANAN, NARAYANAN_MEM, NARAYANAN_INT),
    tags=(LAB_TAG,),
)

LABS: tuple[Exercise, ...] = (EX_5_8,)
