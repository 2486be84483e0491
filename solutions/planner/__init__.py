"""The 5D-parallelism planner: what a layout needs, whether it works, and the best one.

    from solutions.planner import recommend, validate
    validate(models.LLAMA3_405B, cfg, n_gpus=16384)     # [] when the layout works
    recommend(models.LLAMA3_405B, n_gpus=16384, global_batch_seqs=2048, seq_len=8192)

One module per concept, lowest first (each imports only those above it, and the step-time
model of :mod:`solutions.performance`, which sits between the two halves):

* :mod:`.memory`    the memory one GPU needs: weights, gradients, optimizer state,
  activations (:func:`memory_per_gpu`);
* :mod:`.traffic`   the bytes each GPU sends per step, per parallel dimension
  (:func:`comm_per_step`);
* :mod:`.validity`  whether a layout can be built and fits, each reason in words
  (:func:`validate`, :func:`rejections`);
* :mod:`.search`    every layout, ranked by the step time the model predicts
  (:func:`recommend`, :func:`why_faster`);
* :mod:`.costs`     one layout's step time, days and dollars, MFU from a throughput, and
  the capstone's design checks (:func:`step_time_s`, :func:`plan`,
  :func:`layout_violations`).

The step-time model reads :mod:`.memory` and :mod:`.validity`; :mod:`.search` and
:mod:`.costs` read the model. Every module imports its neighbours by their own paths
(``solutions.planner.memory``, ``solutions.performance.model``), never through a package,
so loading either package first meets no module half-loaded.
"""

# isort: off
# Dependency order: the model's inputs, then what the model is used for.
from solutions.planner.memory import MemoryBreakdown, memory_per_gpu
from solutions.planner.traffic import CommVolume, comm_per_step, comm_time_s
from solutions.planner.validity import DEFAULT_BUDGET_GB, rejections, validate
from solutions.planner.search import Ranked, Search, recommend, why_faster
from solutions.planner.costs import (
    LAYOUT_CHECKS,
    Plan,
    bubble,
    layout_violations,
    mfu,
    plan,
    step_time_s,
    training_cost_usd,
    training_days,
)
# isort: on

__all__ = [
    "DEFAULT_BUDGET_GB", "LAYOUT_CHECKS", "CommVolume", "MemoryBreakdown", "Plan", "Ranked",
    "Search", "bubble", "comm_per_step", "comm_time_s", "layout_violations", "memory_per_gpu",
    "mfu", "plan", "recommend", "rejections", "step_time_s", "training_cost_usd",
    "training_days", "validate", "why_faster",
]
