"""What the lab records share: an answer kind built from a lab in ``solutions``, and variants.

A lab's cases, its data and its verifier (the grader's replay of the log) all live in
``solutions``; the record only names the lab, as "module:NAME" of its ``LabSpec``, so that a
trusted process can import it afresh.
"""

from __future__ import annotations

import random
from typing import Any

from autograder.kinds import Lab
from solutions.simlab import LabSpec

LAB_TAG = "lab"
SIMULATOR = ("The simulated cluster (solutions/simchannel.py): alpha-beta link model after "
             "Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005")


def lab_kind(spec: LabSpec, signature: str, stub_body: str) -> Lab:
    """The answer kind for ``spec`` (the ``SPEC`` of its lab module): the learner writes
    ``spec.name`` with ``signature``."""
    module = spec.verify.__module__
    spec_ref = f"{module}:SPEC"
    if getattr(__import__(module, fromlist=["SPEC"]), "SPEC", None) is not spec:
        raise ValueError(f"{spec_ref} does not name the lab it is given")
    return Lab(function_name=spec.name, signature=signature, spec=spec_ref,
               stub_body=stub_body)


def seed_variant(rng: random.Random) -> dict[str, Any]:
    """A fresh variant: the same shapes with new random data."""
    return dict(seed=rng.randrange(1, 1_000_000))
