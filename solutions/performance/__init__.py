"""The step-time model: how long one optimizer step of a layout takes, and why.

    from solutions.performance import estimate
    est = estimate(models.LLAMA3_405B, ParallelConfig(tp=8, pp=16, dp=128, ...), H100_SXM)
    est.step_time_s, est.mfu, est.breakdown      # seconds, utilisation, named costs

One module per part, lowest first (each imports only those above it):

* :mod:`.flops`       the floating-point work of a step and how fast a GPU does it;
* :mod:`.comm`        the time of each collective a layout runs (ring alpha-beta, by link);
* :mod:`.routing`     the HBM traffic of copying a MoE layer's tokens to their experts;
* :mod:`.passes`      the HBM passes outside the layers: FP8 casts, gradient accumulation,
  the optimizer step;
* :mod:`.host`        the GPU waiting on the host to launch a MoE layer's experts;
* :mod:`.pipeline`    the bubble and sends of a pipeline, given a stage's costs;
* :mod:`.step`        :class:`StepEstimate`, the record of one predicted step;
* :mod:`.model`       :func:`estimate`: the parts composed into the busiest GPU's step,
  split into named costs (:data:`BREAKDOWN_KEYS`);
* :mod:`.fit`         the few constants fitted to published runs, and the fit itself;
* :mod:`.validation`  the published runs and the model's error on each
  (``docs/validation.md``);
* :mod:`.families`    validation by software family, rankings within sweeps, memory.

This package holds the names of :mod:`.model`; the fit and the validation load the data
set of published runs and are imported by their own paths
(``from solutions.performance.validation import PUBLISHED_RUNS``). The fitted constants
live in :mod:`.flops` and :mod:`.model` and are read there at every call, so that
:func:`solutions.performance.fit.constants_set` can change them for a block.

The model reads the planner's memory and validity rules (:mod:`solutions.planner.memory`,
:mod:`solutions.planner.validity`), and the planner's search and costs read the model. So
this package loads :mod:`solutions.planner` first, which loads the modules of this one by
their own paths as it needs them: whichever package is imported first, no module is met
half-loaded.
"""

# Load order (see above): the planner first, then the names of this package.
import solutions.planner  # noqa: F401
from solutions.performance.comm import Links
from solutions.performance.model import (
    BREAKDOWN_KEYS,
    DEEPSPEED_PIPELINE_STACK,
    DEEPSPEED_ZERO3_STACK,
    FSDP2_STACK,
    FSDP_STACK,
    LLAMA3,
    MEGATRON_2021,
    MODERN,
    Stack,
    StepEstimate,
    breakdown_s,
    check_inputs,
    estimate,
    pipeline_costs_s,
    step_time_from_costs,
    summarise,
)

__all__ = [
    "BREAKDOWN_KEYS", "DEEPSPEED_PIPELINE_STACK", "DEEPSPEED_ZERO3_STACK", "FSDP2_STACK",
    "FSDP_STACK", "LLAMA3", "MEGATRON_2021", "MODERN", "Links", "Stack", "StepEstimate",
    "breakdown_s", "check_inputs", "estimate", "pipeline_costs_s", "step_time_from_costs",
    "summarise",
]
