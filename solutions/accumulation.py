"""Gradient accumulation: effective batch, step time, throughput and recomputation.

With data parallelism over ``dp_degree`` GPUs, each GPU runs ``accum_steps`` micro-batches
of ``micro_batch`` sequences, adding their gradients locally, and the replicas synchronise
once per optimizer step. The effective (global) batch is therefore

    B_eff = micro_batch x accum_steps x dp_degree.

In PyTorch DDP the deferral is explicit: backward passes inside ``model.no_sync()`` skip
the gradient AllReduce, which then runs once on the last micro-batch (PyTorch
``DistributedDataParallel.no_sync`` documentation). Without it, every backward pass
all-reduces. With sharded gradients (ZeRO-2/3, FSDP) skipping the per-micro-batch
reduce-scatter means keeping full unsharded gradients until the last micro-batch, so the
saving is paid for in memory (PyTorch FSDP2 ``set_requires_gradient_sync``, PR #126166).
DeepSpeed requires train_batch_size = micro batch x accumulation steps x GPUs
exactly (DeepSpeed configuration documentation, "Batch Size Related Parameters").

Times are in ms; throughput in sequences per second for the whole data-parallel group.
"""

from __future__ import annotations

from solutions._checks import non_negative, positive, positive_int

# Recomputing activations re-runs the forward pass once during the backward pass. With the
# backward pass costing about twice the forward pass, the forward is 1/3 of forward +
# backward, so full recomputation multiplies compute by 4/3: Narayanan et al., "Efficient
# Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC21, §5.1
# (96 B s l h^2 FLOPs per iteration with recomputation against 72 without).
FORWARD_FRACTION_OF_STEP = 1.0 / 3.0


def effective_batch(micro_batch: int, accum_steps: int, dp_degree: int) -> int:
    """Sequences per optimizer step: micro_batch x accum_steps x dp_degree."""
    return (positive_int("micro_batch", micro_batch) * positive_int("accum_steps", accum_steps)
            * positive_int("dp_degree", dp_degree))


def required_accumulation_steps(target_batch: int, micro_batch: int, dp_degree: int) -> int:
    """Fewest accumulation steps whose effective batch reaches ``target_batch``.

    ceil(target_batch / (micro_batch x dp_degree)). When the target is not a multiple of
    micro_batch x dp_degree we round *up*, so the effective batch slightly exceeds the
    target (1000 with micro-batch 4 on 8 GPUs: 32 steps, effective batch 1024) rather than
    falling short of it; a target below micro_batch x dp_degree needs 1 step. All three
    inputs must be whole numbers >= 1, else ValueError.
    """
    target = positive_int("target_batch", target_batch)
    per_step = positive_int("micro_batch", micro_batch) * positive_int("dp_degree", dp_degree)
    # Integer ceiling: math.ceil(a / b) goes through a float and can be off for huge ints.
    return -(-target // per_step)


def accumulation_plan(target_batch: int, micro_batch: int, dp_degree: int) -> tuple[int, int]:
    """(accumulation steps, effective batch in sequences) for reaching ``target_batch``.

    The steps are :func:`required_accumulation_steps` (rounded up); the effective batch is
    what those steps really give, micro_batch x steps x dp_degree, which exceeds the target
    when the target is not a multiple of micro_batch x dp_degree (1000 with micro-batch 4
    on 8 GPUs: (32, 1024)). That batch, not the target, is the one the learning rate must
    be scaled for. ValueError for inputs that are not whole numbers >= 1.
    """
    steps = required_accumulation_steps(target_batch, micro_batch, dp_degree)
    return steps, effective_batch(micro_batch, steps, dp_degree)


def comm_time_saved_ms(accum_steps: int, allreduce_ms: float) -> float:
    """AllReduce time saved per optimizer step by accumulating instead of syncing each micro-batch.

    Syncing after every micro-batch costs accum_steps x allreduce_ms; accumulating costs one
    AllReduce, so the saving is (accum_steps - 1) x allreduce_ms.
    """
    steps = positive_int("accum_steps", accum_steps)
    non_negative("allreduce_ms", allreduce_ms)
    return (steps - 1) * allreduce_ms


def step_time_ms(
    accum_steps: int, micro_batch_ms: float, allreduce_ms: float, optimizer_ms: float = 0.0
) -> float:
    """Wall time of one optimizer step with no overlap of communication and compute.

    accum_steps x micro_batch_ms (forward + backward, run one after another on each GPU,
    all GPUs in parallel) + one gradient AllReduce + the optimizer update.
    """
    steps = positive_int("accum_steps", accum_steps)
    positive("micro_batch_ms", micro_batch_ms)
    non_negative("allreduce_ms", allreduce_ms)
    non_negative("optimizer_ms", optimizer_ms)
    return steps * micro_batch_ms + allreduce_ms + optimizer_ms


def throughput_seq_per_s(
    micro_batch: int, accum_steps: int, dp_degree: int, micro_batch_ms: float,
    allreduce_ms: float, optimizer_ms: float = 0.0,
) -> float:
    """Sequences per second over all data-parallel GPUs: B_eff / step time."""
    batch = effective_batch(micro_batch, accum_steps, dp_degree)
    return batch / (step_time_ms(accum_steps, micro_batch_ms, allreduce_ms, optimizer_ms) / 1e3)


def comm_fraction_of_step(accum_steps: int, micro_batch_ms: float, allreduce_ms: float) -> float:
    """Fraction (0..1) of the step spent in the (non-overlapped) AllReduce."""
    return allreduce_ms / step_time_ms(accum_steps, micro_batch_ms, allreduce_ms)


def checkpointed_micro_batch_ms(
    micro_batch_ms: float, forward_fraction: float = FORWARD_FRACTION_OF_STEP
) -> float:
    """Time of one micro-batch with full activation checkpointing.

    The forward pass is recomputed once during backward: micro_batch_ms x (1 + f), where
    f is the forward pass's share of forward + backward (1/3 by default, so x 4/3).
    """
    positive("micro_batch_ms", micro_batch_ms)
    non_negative("forward_fraction", forward_fraction)
    return micro_batch_ms * (1.0 + forward_fraction)


def compute_ms_per_optimizer_step(
    target_batch: int, micro_batch: int, dp_degree: int, micro_batch_ms: float
) -> float:
    """Forward + backward time per optimizer step: required accumulation steps x micro_batch_ms."""
    positive("micro_batch_ms", micro_batch_ms)
    return required_accumulation_steps(target_batch, micro_batch, dp_degree) * micro_batch_ms

