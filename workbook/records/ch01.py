"""Chapter 1: ZeRO stages: model-state memory per GPU and communication volume."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Choice, Misconception, Numeric, Option
from autograder.kinds.base import Params
from solutions import zero
from workbook.records._models import SIZES_B

ZERO_MEM = ("Rajbhandari et al., 'ZeRO: Memory Optimizations Toward Training Trillion Parameter "
            "Models', SC20 (arXiv:1910.02054), §3.1 (16 bytes per parameter) and §5, Figure 1 "
            "(per-stage memory)")
ZERO_COMM = ("Rajbhandari et al., 'ZeRO', SC20 (arXiv:1910.02054), §7 (DP and ZeRO stages 1-2 "
             "move 2 Psi per GPU, stage 3 moves 3 Psi)")
NCCL_PERF = "NVIDIA nccl-tests, doc/PERFORMANCE.md (ring factor (n-1)/n per collective)"

# Up to 128: beyond that the small shards (12/N, 2/N bytes) fall inside the 0.5 % tolerance
# and the misconceptions that drop them could no longer be told apart.
DP_DEGREES = (8, 16, 32, 64, 128)

ADAM_NOTE = (
    "Mixed-precision Adam keeps, for every parameter: FP16 weights (2 bytes), FP16 gradients "
    "(2 bytes), and FP32 master weights, momentum and variance (4 + 4 + 4 = 12 bytes). "
    "*Model states* means these three kinds of data; activations are not included. "
    "1 GB = 10^9 bytes."
)


def _gb(stage: int) -> Callable[[Params], float]:
    """Reference for a 'model-state GB per GPU at this stage' exercise."""
    return lambda p: zero.model_state_gb_per_gpu(p["n_params_b"] * 1e9, stage, p["n_gpus"])


def _vary_memory(rng: random.Random) -> dict[str, Any]:
    return dict(n_params_b=rng.choice(SIZES_B), n_gpus=rng.choice(DP_DEGREES))


def _bytes(p: Params, per_param: float) -> float:
    """GB for ``per_param`` bytes per parameter (for misconceptions)."""
    return float(p["n_params_b"] * per_param)


# -- 1.1 --------------------------------------------------------------------------------

EX_1_1 = Exercise(
    id="1.1", chapter=1, category="derive", title="Model states without ZeRO",
    prompt=("A {n_params_b}B-parameter model is trained with mixed-precision Adam and plain "
            "data parallelism (no ZeRO). How many GB of model states does each GPU hold?"),
    notes=ADAM_NOTE,
    params=dict(n_params_b=7.0),
    vary=lambda rng: dict(n_params_b=rng.choice(SIZES_B)),
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: zero.model_state_gb_per_gpu(p["n_params_b"] * 1e9, 0, 1),
    hints=(
        "Add up the bytes every parameter needs: weights, gradients, optimizer.",
        "2 + 2 + 12 = 16 bytes per parameter.",
        "16 bytes x the number of parameters, divided by 10^9 for GB.",
    ),
    explanation=(
        "2 (FP16 weights) + 2 (FP16 gradients) + 12 (FP32 master, momentum, variance) = 16 "
        "bytes per parameter; 16 x {n_params_b} x 10^9 = {expected} GB on every GPU, because "
        "plain data parallelism replicates everything. An 80 GB GPU cannot even hold the "
        "model states of a model above 5B parameters this way, before a single activation "
        "is stored."
    ),
    misconceptions=(
        Misconception(lambda p: _bytes(p, 2), "That is the FP16 weights only; add the "
                      "gradients (2 bytes) and Adam's 12 bytes of FP32 state per parameter."),
        Misconception(lambda p: _bytes(p, 4), "Weights and gradients only: the optimizer "
                      "state (FP32 master weights, momentum, variance) is the largest part."),
        Misconception(lambda p: _bytes(p, 12), "That is the optimizer state alone; add the "
                      "FP16 weights and gradients."),
        Misconception(lambda p: _bytes(p, 14), "14 bytes per parameter leaves out either the "
                      "FP16 weights or the FP16 gradients; every GPU keeps both: 16 bytes."),
        Misconception(lambda p: _bytes(p, 16) * 1e9 / 2**30,
                      "That is in GiB (2^30 bytes); the answer is asked in GB (10^9 bytes)."),
    ),
    sources=(ZERO_MEM,),
)


# -- 1.2 to 1.4 -------------------------------------------------------------------------

EX_1_2 = Exercise(
    id="1.2", chapter=1, category="derive", title="ZeRO stage 1",
    prompt=("The same mixed-precision Adam training of a {n_params_b}B-parameter model now uses "
            "ZeRO stage 1 (optimizer states sharded) over {n_gpus} data-parallel GPUs. How "
            "many GB of model states does each GPU hold?"),
    notes=ADAM_NOTE,
    params=dict(n_params_b=7.0, n_gpus=64),
    vary=_vary_memory,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=_gb(1),
    hints=(
        "Stage 1 splits only the 12 bytes of optimizer state across the GPUs.",
        "Weights and gradients stay whole: 2 + 2 + 12/N bytes per parameter.",
        "(4 + 12/N) bytes x the number of parameters, divided by 10^9 for GB.",
    ),
    explanation=(
        "Each GPU keeps full FP16 weights and gradients (4 bytes per parameter) and 1/N of "
        "the optimizer state: 4 + 12/{n_gpus} bytes per parameter, times {n_params_b} x 10^9 "
        "= {expected} GB. (ZeRO Figure 1 shows the same for 7.5B on 64 GPUs: 31.4 GB.)"
    ),
    misconceptions=(
        Misconception(lambda p: _bytes(p, 16 / p["n_gpus"]),
                      "Stage 1 shards only the optimizer state; dividing all 16 bytes by N is "
                      "stage 3."),
        Misconception(lambda p: _bytes(p, 4),
                      "You dropped the optimizer state; its shard is 12/N bytes per parameter, "
                      "small but not zero."),
        Misconception(lambda p: _bytes(p, 2 + 14 / p["n_gpus"]),
                      "That is stage 2, which also shards the gradients."),
    ),
    sources=(ZERO_MEM,),
)

EX_1_3 = Exercise(
    id="1.3", chapter=1, category="derive", title="ZeRO stage 2",
    prompt=("Same {n_params_b}B-parameter model and mixed-precision Adam, now ZeRO stage 2 "
            "(optimizer states and gradients sharded) over {n_gpus} data-parallel GPUs. How "
            "many GB of model states does each GPU hold?"),
    notes=ADAM_NOTE,
    params=dict(n_params_b=7.0, n_gpus=64),
    vary=_vary_memory,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=_gb(2),
    hints=(
        "Stage 2 adds the gradients to what is split across GPUs.",
        "Only the FP16 weights stay whole: 2 + (2 + 12)/N bytes per parameter.",
        "(2 + 14/N) bytes x the number of parameters, divided by 10^9 for GB.",
    ),
    explanation=(
        "Full FP16 weights (2 bytes) plus 1/N of gradients and optimizer state (14/N): "
        "2 + 14/{n_gpus} bytes per parameter, times {n_params_b} x 10^9 = {expected} GB. "
        "(ZeRO Figure 1: 16.6 GB for 7.5B on 64 GPUs.)"
    ),
    misconceptions=(
        Misconception(lambda p: _bytes(p, 4 + 12 / p["n_gpus"]),
                      "That is stage 1; stage 2 also shards the 2 bytes of gradients."),
        Misconception(lambda p: _bytes(p, 16 / p["n_gpus"]),
                      "That is stage 3; stage 2 keeps the full FP16 weights on every GPU."),
        Misconception(lambda p: _bytes(p, 2 + 12 / p["n_gpus"]),
                      "You dropped the gradient shard: 2/N bytes per parameter remain."),
    ),
    sources=(ZERO_MEM,),
)

EX_1_4 = Exercise(
    id="1.4", chapter=1, category="derive", title="ZeRO stage 3",
    prompt=("Same {n_params_b}B-parameter model and mixed-precision Adam, now ZeRO stage 3 "
            "(optimizer states, gradients and weights sharded) over {n_gpus} data-parallel "
            "GPUs. How many GB of model states does each GPU hold between layers (not counting "
            "the layer weights it gathers temporarily)?"),
    notes=ADAM_NOTE,
    params=dict(n_params_b=7.0, n_gpus=64),
    vary=_vary_memory,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=_gb(3),
    hints=(
        "Stage 3 splits all three kinds of model state.",
        "All 16 bytes per parameter are divided by N.",
        "16/N bytes x the number of parameters, divided by 10^9 for GB.",
    ),
    explanation=(
        "Every kind of model state is split: 16/{n_gpus} bytes per parameter, times "
        "{n_params_b} x 10^9 = {expected} GB. The price is communication: before each "
        "layer's forward and backward pass its weights are all-gathered, used and freed "
        "(ZeRO Figure 1: 1.9 GB for 7.5B on 64 GPUs)."
    ),
    misconceptions=(
        Misconception(lambda p: _bytes(p, 2 + 14 / p["n_gpus"]),
                      "That is stage 2; stage 3 also shards the FP16 weights."),
        Misconception(lambda p: _bytes(p, 14 / p["n_gpus"]),
                      "You left out the weight shard: all 16 bytes are divided by N."),
        Misconception(lambda p: _bytes(p, 16),
                      "That is the memory without ZeRO; stage 3 divides all of it by N."),
    ),
    sources=(ZERO_MEM,),
)


# -- 1.5 --------------------------------------------------------------------------------

def _comm(stage: int) -> Callable[[Params], float]:
    return lambda p: zero.comm_gb_per_gpu(p["n_params_b"] * 1e9, stage, p["n_gpus"])


EX_1_5 = Exercise(
    id="1.5", chapter=1, category="derive", title="ZeRO-3 communication per step",
    prompt=("ZeRO stage 3 trains a {n_params_b}B-parameter model on {n_gpus} data-parallel "
            "GPUs; weights and gradients are FP16 (2 bytes per parameter). Every training "
            "step, each GPU takes part in three ring collectives over the whole model: an "
            "all-gather of the weights for the forward pass, another for the backward pass, "
            "and a reduce-scatter of the gradients. How many GB does each GPU **send** in "
            "these three collectives per step (it receives as much)?"),
    params=dict(n_params_b=7.0, n_gpus=64),
    # At most 64 GPUs, so that 3S, the large-N limit, stays outside the tolerance.
    vary=lambda rng: dict(n_params_b=rng.choice(SIZES_B), n_gpus=rng.choice([8, 16, 32, 64])),
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=_comm(3),
    hints=(
        "First the size of the full FP16 weight (or gradient) tensor in GB.",
        "A ring all-gather or reduce-scatter of an S-GB tensor sends S(N-1)/N per GPU.",
        "3 collectives x S x (N-1)/N, with S = 2 bytes x the number of parameters.",
    ),
    explanation=(
        "The FP16 tensor is S = 2 x {n_params_b} GB. Each of the three ring collectives sends "
        "S(N-1)/N per GPU, so each GPU sends 3 x 2 x {n_params_b} GB x ({n_gpus}-1)/{n_gpus} "
        "= {expected} GB. "
        "Plain data parallelism (and ZeRO-1/2) sends 2 x S(N-1)/N for its gradient "
        "AllReduce, so ZeRO-3 moves 1.5x as much, in return for dividing all model states "
        "by N."
    ),
    misconceptions=(
        Misconception(lambda p: 3 * 2 * p["n_params_b"],
                      "3 x S is the large-N limit (the paper's 3 Psi); with N = {n_gpus} each "
                      "ring collective sends S(N-1)/N."),
        Misconception(_comm(2),
                      "That is the 2 x S(N-1)/N of a plain data-parallel gradient AllReduce; "
                      "ZeRO-3 adds a second parameter all-gather."),
        Misconception(lambda p: _comm(3)(p) / 3,
                      "That is one collective, or the extra over plain data parallelism; the "
                      "question asks for all three."),
        Misconception(lambda p: 2 * _comm(3)(p),
                      "You added sent and received bytes; the question asks for the bytes sent."),
    ),
    sources=(ZERO_COMM, NCCL_PERF),
)


# -- 1.6 --------------------------------------------------------------------------------

def _min_stage(p: Params) -> str:
    stage = zero.min_zero_stage_that_fits(p["n_params_b"] * 1e9, p["n_gpus"], p["budget_gb"],
                                          p["activations_gb"])
    return "E" if stage is None else "ABCD"[stage]


EX_1_6 = Exercise(
    id="1.6", chapter=1, category="trace", title="The lowest ZeRO stage that fits",
    prompt=("You train a {n_params_b}B-parameter model with mixed-precision Adam on {n_gpus} "
            "data-parallel GPUs. Activations take {activations_gb} GB per GPU, and each GPU "
            "has {budget_gb} GB usable for model states plus activations. Which is the lowest "
            "ZeRO stage whose model states plus activations are at most {budget_gb} GB per "
            "GPU?"),
    notes=(ADAM_NOTE + " An 80 GB-class GPU such as the A100 80GB has 80 GiB = 85.9 GB of "
           "memory, of which the CUDA context and the allocator's reserve take a few GB; the "
           "usable budget is given so there is no doubt. Lower stages communicate less, so "
           "the lowest stage that fits is the one to choose."),
    params=dict(n_params_b=30.0, n_gpus=8, activations_gb=20.0, budget_gb=84.0),
    vary=lambda rng: dict(n_params_b=rng.choice([7.0, 13.0, 20.0, 30.0, 40.0, 70.0]),
                          n_gpus=rng.choice([8, 16, 32, 64]),
                          activations_gb=rng.choice([8.0, 12.0, 20.0, 30.0]),
                          budget_gb=rng.choice([38.0, 76.0, 84.0])),
    answer_kind=Choice(options=(
        Option("A", "Stage 0 (plain data parallelism)",
               "Without ZeRO every GPU holds 16 bytes per parameter, far above the budget for "
               "a model of this size.",
               "Plain data parallelism already fits: 16 bytes per parameter plus the "
               "activations are within the budget, with the least communication."),
        Option("B", "ZeRO stage 1",
               "Stage 1 still keeps full FP16 weights and gradients: (4 + 12/N) bytes per "
               "parameter. With the activations that is over the budget here.",
               "Stage 0 is over the budget, and stage 1's (4 + 12/N) bytes per parameter plus "
               "the activations are within it."),
        Option("C", "ZeRO stage 2",
               "Stage 2 needs (2 + 14/N) bytes per parameter. Either that plus the "
               "activations is over the budget, or stage 1 already fits: check the stages in "
               "order.",
               "Stages 0 and 1 are over the budget, and stage 2's (2 + 14/N) bytes per "
               "parameter plus the activations are within it."),
        Option("D", "ZeRO stage 3",
               "Stage 3 needs 16/N bytes per parameter. Check whether a lower stage already "
               "fits, and whether stage 3 plus activations is really within the budget.",
               "Every lower stage is over the budget; stage 3's 16/N bytes per parameter plus "
               "the activations are within it."),
        Option("E", "No stage fits: even stage 3 is over the budget",
               "Compute stage 3: 16/N bytes per parameter plus the activations. At least one "
               "stage fits here.",
               "Even stage 3's 16/N bytes per parameter plus the activations exceed the "
               "budget: more GPUs or smaller activations are needed."),
    )),
    reference=_min_stage,
    hints=(
        "Work out model states per GPU for stages 0, 1, 2, 3 in turn and add the activations.",
        "Bytes per parameter: 16, 4 + 12/N, 2 + 14/N, 16/N.",
        "Multiply each by {n_params_b} (billions of parameters) with N = {n_gpus} for GB of model "
        "states, add {activations_gb} GB, and compare with {budget_gb} GB.",
    ),
    explanation=(
        "Model states per GPU are {n_params_b} x (16, 4 + 12/N, 2 + 14/N, 16/N) GB for stages "
        "0-3 with N = {n_gpus}; add {activations_gb} GB of activations and keep the first "
        "total <= {budget_gb} GB: answer {expected}. For 30B on 8 GPUs: 500, 185, 132.5 and "
        "80 GB, so only stage 3 fits, with 4 GB to spare. Activation checkpointing (smaller "
        "activations) or more GPUs (smaller shards) would give more headroom."
    ),
    sources=(ZERO_MEM,),
)


EXERCISES: tuple[Exercise, ...] = (EX_1_1, EX_1_2, EX_1_3, EX_1_4, EX_1_5, EX_1_6)
