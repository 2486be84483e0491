"""Plain data in, plain log out: how a lab run crosses into (and out of) a sandbox.

A *job* is plain data (JSON-ready) describing one lab case for the learner's function:

* ``{"mode": "cluster", "data": [...], "collectives": bool, "links": {...}}`` runs the
  learner's per-rank program on the simulated cluster, rank r starting with ``data[r]``
  (arrays in :func:`solutions.simcluster.plain` form), and returns the trace's plain log;
* ``{"mode": "call", "args": [...]}`` calls the learner's function with ``args`` and
  returns ``{"value": <its result as plain data>}`` (a schedule, say).

The grader builds the jobs itself, from each case's seed, and reads back only plain
data; this module, :mod:`solutions.simcluster`, :mod:`solutions.simcollectives` and
:mod:`solutions._checks` are all that must exist where the learner's code runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from solutions import simcluster as sim

_DTYPES = ("<i8", "<i4", "<f8", "<f4", "<f2", "|b1", "<u8", "<u4")


def from_plain(tree: Any) -> Any:
    """Arrays back from :func:`solutions.simcluster.plain` form (inside lists and dicts)."""
    if isinstance(tree, dict) and set(tree) == {"dtype", "shape", "values"} \
            and tree["dtype"] in _DTYPES:
        return np.array(tree["values"], dtype=np.dtype(tree["dtype"])).reshape(tree["shape"])
    if isinstance(tree, list):
        return [from_plain(v) for v in tree]
    if isinstance(tree, dict):
        return {k: from_plain(v) for k, v in tree.items()}
    return tree


def cluster_job(data: list[Any], *, collectives: bool = True,
                links: sim.Links | None = None) -> dict[str, Any]:
    """The job that runs a per-rank program on ``data`` (one entry per rank)."""
    chosen = links or sim.Links()
    return {"mode": "cluster", "data": sim.plain(data), "collectives": collectives,
            "links": {"gpus_per_node": chosen.gpus_per_node,
                      "intra_gb_per_s": chosen.intra_gb_per_s,
                      "inter_gb_per_s": chosen.inter_gb_per_s,
                      "intra_latency_us": chosen.intra_latency_us,
                      "inter_latency_us": chosen.inter_latency_us}}


def call_job(*args: Any) -> dict[str, Any]:
    """The job that calls the learner's function with plain ``args``."""
    return {"mode": "call", "args": list(args)}


def run_job(program: Callable[..., Any], job: Any) -> dict[str, Any]:
    """Run one job; the plain log, or {"error": ..., "error_type": ...} if the program broke
    a rule of the simulator ("SimError", "RankAccessError") or raised ("program")."""
    if not isinstance(job, dict) or job.get("mode") not in ("cluster", "call"):
        return {"error": "not a lab job", "error_type": "job"}
    try:
        if job["mode"] == "call":
            return {"value": sim.plain(program(*job["args"]))}
        trace = sim.run(program, from_plain(job["data"]), links=sim.Links(**job["links"]),
                        collectives=bool(job["collectives"]))
    except sim.SimError as error:
        return {"error": str(error), "error_type": type(error).__name__}
    except Exception as error:  # noqa: BLE001 - the learner's own bug, reported as such
        return {"error": f"{type(error).__name__}: {error}", "error_type": "program"}
    return trace.to_plain()
