"""What the lab records share: an answer kind built from a lab in ``solutions``, and variants.

A lab's cases, its runner (the learner's program on the simulated cluster) and its verifier
(the grader's replay of the log) all live in ``solutions``; the record only names them.
"""

from __future__ import annotations

import random
from typing import Any

from autograder.kinds import Lab
from solutions.simlab import LabSpec
from solutions.simwire import run_job

LAB_TAG = "lab"
# What runs where the learner's code runs (the grader ships these modules' source to the
# sandbox): the simulated cluster and its plain-data entry point, nothing of the labs.
RUNTIME_MODULES = ("solutions._checks", "solutions.simcluster", "solutions.simcollectives",
                   "solutions.simwire")
RUNTIME_ENTRY = "solutions.simwire:run_job"
SIMULATOR = ("The simulated cluster (solutions/simcluster.py): alpha-beta link model after "
             "Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005")


def lab_kind(spec: LabSpec, signature: str, stub_body: str) -> Lab:
    """The answer kind for ``spec``: the learner writes ``spec.name`` with ``signature``."""
    modules = RUNTIME_MODULES if spec.collectives else tuple(
        m for m in RUNTIME_MODULES if m != "solutions.simcollectives")  # a lab that asks for them
    return Lab(function_name=spec.name, signature=signature, cases=spec.cases, job=spec.job,
               run_job=run_job, verify=spec.verify, stub_body=stub_body,
               sandbox_modules=modules, sandbox_entry=RUNTIME_ENTRY)


def seed_variant(rng: random.Random) -> dict[str, Any]:
    """A fresh variant: the same shapes with new random data."""
    return dict(seed=rng.randrange(1, 1_000_000))
