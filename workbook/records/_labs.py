"""What the lab records share: an answer kind built from a lab in ``solutions``, and variants.

A lab's cases, its data and its verifier (the grader's replay of the log) all live in
``solutions``; the record only names the lab, as "module:NAME" of its ``LabSpec``, so that a
trusted process can import it afresh.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from autograder.kinds import Lab

LAB_TAG = "lab"
SIMULATOR = ("The simulated cluster (solutions/simchannel.py): alpha-beta link model after "
             "Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005")


def lab_kind(lab: ModuleType, signature: str, stub_body: str) -> Lab:
    """The answer kind for the lab module ``lab`` (its ``SPEC``): the learner writes
    ``SPEC.name`` with ``signature``."""
    return Lab(function_name=lab.SPEC.name, signature=signature,
               spec=f"{lab.__name__}:SPEC", stub_body=stub_body)


def seed_variant(rng: random.Random) -> dict[str, Any]:
    """A fresh variant: the same shapes with new random data."""
    return dict(seed=rng.randrange(1, 1_000_000))
