"""What the lab records share: the simulator's side of a lab, handed to its answer kind.

A lab's cases, its data and its verifier all live in ``solutions``; the record names the
lab module, and :class:`SimRuntime` is what the answer kind (:class:`autograder.kinds.Lab`,
which knows no simulator) calls to pack a learner's function and to run and verify it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from autograder.kinds import Lab
from solutions.sim import bundle as simbundle
from solutions.sim import lab as simlab
from solutions.sim import process as simprocess

LAB_TAG = "lab"
SIMULATOR = ("The simulated cluster (solutions/sim/channel.py): ranks advance in lockstep "
             "steps, a message sent in one step can be received from the next; traffic, steps "
             "and memory are counted from its message log")


@dataclass(frozen=True)
class SimRuntime:
    """The simulator's side of one lab (see :class:`autograder.kinds.lab.LabRuntime`)."""

    spec: simlab.LabSpec
    pack_entry: tuple[tuple[str, ...], str] = (("solutions.sim.classes", "solutions.sim.bundle"),
                                               "solutions.sim.bundle:pack_job")
    trusted_module: str = "workbook.lab_trusted"

    def pack(self, function: Any) -> Any:
        return simbundle.pack(function)  # BundleError is a ValueError

    def pack_file(self, source: str, filename: str, name: str) -> Any:
        return simbundle.source_bundle(source, filename, name)

    def prestart(self, prepare: Any) -> None:
        simprocess.prestart(prepare, self.spec.collectives)

    def run(self, bundle: Any, seed: int, time_limit_s: float,
            launch: Any) -> tuple[str, list[Any]]:
        reports = simlab.grade_bundle(self.spec, bundle, self.spec.graded(seed), launch,
                                      time_limit_s)
        return self.spec.evidence, [replace(r, problem=explained(r.problem)) if r.problem
                                    else r for r in reports]


# numpy's words for arrays whose shapes do not fit a product or an elementwise operation
_SHAPE_ERROR = re.compile(r"mismatch in its core dimension|could not be broadcast together|"
                          r"shapes \([^)]*\) and \([^)]*\) not aligned")
SHAPE_ADVICE = ("Two arrays' shapes do not fit this product or sum: print each array's "
                ".shape on one rank (the starting cell's comments say what each should be) "
                "and check which you multiply with which.")


def explained(problem: str) -> str:
    """A case's problem as the learner reads it: numpy's shape errors, whose words name
    gufunc signatures, get what they mean and what to do first."""
    if not _SHAPE_ERROR.search(problem):
        return problem
    return f"{problem.rstrip('.')}. {SHAPE_ADVICE}"


def lab_kind(lab: ModuleType, exercise: str, signature: str, stub_body: str) -> Lab:
    """The answer kind of exercise ``exercise``, the lab module ``lab`` (its ``SPEC``): the
    learner writes ``SPEC.name`` with ``signature``."""
    return Lab(function_name=lab.SPEC.name, signature=signature, runtime=SimRuntime(lab.SPEC),
               exercise=exercise, stub_body=stub_body)


def seed_variant(rng: random.Random) -> dict[str, Any]:
    """A fresh variant: the same shapes with new random data."""
    return dict(seed=rng.randrange(1, 1_000_000))
