"""Step-time model: the passes over HBM a step makes besides the layers' own work.

* :func:`fp8_cast_s`: casting FP8 GEMMs' 16-bit inputs and output gradients;
* :func:`grad_accumulation_s`: a separate pass that adds each micro-batch's 16-bit weight
  gradient into the accumulator, when the GEMM does not accumulate;
* :func:`optimizer_s`: the optimizer step over the parameters a GPU updates.

Each is bytes over the GPU's HBM bandwidth (:func:`solutions.performance.flops.hbm_seconds`);
:mod:`solutions.performance.model` adds them to the step.
"""

from __future__ import annotations

from solutions import hardware, models
from solutions.performance import flops as pf
from solutions.planner.memory import ParallelConfig, grad_reductions_per_step, stage_params
from solutions.precision import BYTES_16BIT
from solutions.stack import Stack

#: Bytes Adam touches per parameter it updates: FP32 master, momentum, variance read and
#: written (24), the gradient read (4), the 16-bit weight written (2) (ZeRO §3.1 states).
OPTIMIZER_BYTES_PER_PARAM = 30.0
#: The same with BF16 parameters as the master (``Stack.bf16_params``): the parameter and
#: Adam's two BF16 moments read and written (12), the BF16 gradient read (2).
BF16_OPTIMIZER_BYTES_PER_PARAM = 14.0


def fp8_cast_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
               stack: Stack, dense_layers: int, moe_layers: int) -> tuple[float, float]:
    """(forward, backward) seconds per micro-batch of casting the FP8 GEMMs' 16-bit inputs
    and output gradients on one GPU of the stage (:data:`pf.FP8_CAST_BYTES` per element of
    :func:`pf.fp8_cast_elements_per_token`); (0, 0) for 16-bit linear layers. The weights'
    own casts (once per step: Transformer Engine keeps them across micro-batches, torchao
    casts the shard before FSDP's FP8 all-gather) are left out."""
    if stack.linear_precision != "fp8":
        return 0.0, 0.0
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp
    fwd = bwd = 0.0
    for count, moe in ((dense_layers, False), (moe_layers, True)):
        if count:
            f, b = pf.fp8_cast_elements_per_token(arch, cfg.tp, stack.sequence_parallel, moe)
            fwd += count * f
            bwd += count * b
    return (pf.hbm_seconds(gpu, pf.FP8_CAST_BYTES * fwd * tokens),
            pf.hbm_seconds(gpu, pf.FP8_CAST_BYTES * bwd * tokens))


def grad_accumulation_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                        stack: Stack, stage: int) -> float:
    """Seconds per micro-batch of a separate gradient-accumulation pass: the 16-bit gradient
    read and the ``grad_accum_bytes`` accumulator read and written (and a copy of the
    gradient at that precision written and read, ``Stack.accumulation_copies``), for every
    parameter the GPU holds unsharded (none when the GEMM accumulates,
    ``fused_grad_accumulation``, when there is one micro-batch, or when every micro-batch's
    gradient is reduce-scattered into the shard,
    :func:`solutions.planner.memory.grad_reductions_per_step`: ZeRO-2 and a resharding
    ZeRO-3)."""
    if (stack.fused_grad_accumulation or cfg.grad_accum == 1
            or grad_reductions_per_step(cfg, stack) > 1):
        return 0.0
    params = stage_params(arch, cfg, stage)
    local = params.dense + params.expert
    copies = 2 if stack.accumulation_copies else 1
    return pf.hbm_seconds(gpu, local * (BYTES_16BIT + 2 * copies * stack.grad_accum_bytes))


def optimizer_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                stage: int, stack: Stack) -> float:
    """Seconds of the optimizer step on one GPU of ``stage``: Adam's bytes (at ``stack``'s
    parameter precision) for each parameter it updates, its ``1/(shard group x cp)`` share
    of the dense parameters with ZeRO (its shard group's under hybrid sharding) and its
    expert group's share of the experts'."""
    params = stage_params(arch, cfg, stage)
    owners = (cfg.shard_dp * cfg.cp) if cfg.zero_stage >= 1 else 1
    local = params.dense / owners + params.expert / (cfg.expert_dp if cfg.zero_stage else 1)
    per_param = (BF16_OPTIMIZER_BYTES_PER_PARAM if stack.bf16_params
                 else OPTIMIZER_BYTES_PER_PARAM)
    return pf.hbm_seconds(gpu, local * per_param)
