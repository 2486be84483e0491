"""5D-parallelism planner: the memory one GPU needs for a layout.

A configuration (:class:`solutions.layout.ParallelConfig`) splits ``n_gpus = tp x cp x pp x
dp`` ways (the Llama 3 order, innermost first); :func:`solutions.layout.resolve` places the
layers. Expert parallelism does not add GPUs: a stage's ``tp x cp x dp`` ranks are regrouped
for the MoE layers into groups of ``ep x etp`` that share out the routed experts, each
expert split over ``etp`` of them (MoE parallel folding, :mod:`solutions.layout`).

Memory per GPU = weights + gradients + optimizer state + stashed activations, for the
training software ``stack`` (:class:`solutions.stack.Stack`) the run used; decimal bytes.

**Model state** (Psi = the parameters one GPU of the stage holds, :mod:`solutions.layout`;
n = ``dp x cp``, or ``expert_dp = tp x cp x dp / (ep x etp)`` for routed experts (``dp x cp
/ ep`` when ``etp`` = ``tp``); mixed-precision Adam keeps K = 12
bytes of FP32 master weights, momentum and variance, ZeRO §3.1). ``g`` is the stack's
``grad_accum_bytes`` (4: gradients accumulated across micro-batches in FP32, Megatron's
``main_grad`` buffer, Llama 3 §3.3.2 "Numerical stability").

=================================  =========  ===========  ==========
sharding                           weights    gradients    optimizer
=================================  =========  ===========  ==========
ZeRO-0 (DDP)                       2 Psi      g Psi        K Psi
ZeRO-1 (Megatron distributed opt.) 2 Psi      g Psi        K Psi / n
ZeRO-2                             2 Psi      g Psi / n    K Psi / n
ZeRO-3 / FSDP, resharded           2 Psi / n  g Psi / n    K Psi / n
ZeRO-3, no reshard after forward   2 Psi      g (Psi -     K Psi / n
   (Llama 3's FSDP)                + 2 Psi/n  Psi_c) / n
                                              + g Psi_c
=================================  =========  ===========  ==========

PyTorch's FSDP keeps the shard in FP32 as the master copy, which K counts, and casts it to 16
bits only into each all-gather's input (``Stack.shard_is_master``): no ``2 Psi / n`` term.
With BF16 parameters as their own master (``Stack.bf16_params``) K is Adam's two BF16
moments (4), the shard and the reduced gradients are BF16, and routed experts that no ZeRO
group shards (expert DP = 1) are neither gathered nor accumulated apart from their own
gradient (:func:`experts_in_place`). A stack that keeps each micro-batch's 16-bit gradients
beside the accumulator (``Stack.keeps_16bit_grads``: DeepSpeed's BF16 optimizer) holds
``2 Psi`` more under ZeRO 0-1.

Stages 0-1 accumulate the whole local gradient and reduce it once per step (Megatron's
``main_grad``, DDP ``no_sync``); stage 2 and a resharding stage 3 reduce-scatter each
micro-batch's gradient into the local shard (DeepSpeed ZeRO-2/3; PyTorch FSDP without
``no_sync``), which is what keeps ``g Psi / n``. Llama 3 "shards optimizer states and
gradients, but for model shards we do not reshard after forward computation" (§3.3.2): at
rest its weights are ZeRO-3 shards, but in a 1F1B or interleaved pipeline some micro-batch is
always between its forward and its backward, so the stage's gathered BF16 weights stay
resident for the whole step (2 Psi, beside the 2 Psi / n shard; PyTorch
``ShardingStrategy.SHARD_GRAD_OP`` / FSDP2 ``reshard_after_forward=False``). That is the
memory side of the step-time model gathering them once per step, not twice per
micro-batch (:func:`gathers_per_step`). Its gradients are accumulated in FP32 over the
micro-batches and reduce-scattered in FP32 once per step per model chunk
(:func:`grad_reductions_per_step`): with m <= p every micro-batch's backward of one chunk
runs before the next chunk's begins, so a chunk's gradient is reduce-scattered as soon as it
is complete and only the chunk in progress is held whole, ``g Psi_c`` with ``Psi_c`` the
largest chunk's parameters (the whole stage when v = 1, or when m > p: then the backward of
each chunk recurs in every group of p micro-batches); the chunk being accumulated has no
reduced shard yet (the previous step's were freed by ``zero_grad``), so its ``g Psi_c / n``
is not held beside it. Accumulating the whole stage's
gradient instead would add ``g Psi`` = 12.8 GB on Llama 3's middle stage, and the paper's
8K run would not fit; reducing every micro-batch's gradient would move m times the traffic.
A resharding ZeRO-3 also holds the gathered weights of the unit being computed and the one
being prefetched (two layers, :data:`GATHERED_UNITS`). Measured peaks are the caching
allocator's reserved bytes, and it keeps a pool per stream: where the stack gathers into
flat buffers on a stream of its own and writes the reduce-scatter's output there too
(``Stack.side_stream_buffers``, FSDP2), the flat buffers of those two units and all of the
step's gradient shards (the chunk still accumulating's included: the last step's stay
reserved) are counted beside the compute stream's peak. PyTorch's FSDP reduce-scatters each
unit's gradient as the backward produces it (``Stack.unit_reduce_scatter``), so it also holds
the layer's 16-bit unsharded gradient (2 bytes per parameter) and the reduce-scatter inputs
of the two layers in flight on the reduce-scatter stream, at ``grad_reduce_bytes`` each (FSDP2
``foreach_reduce`` copies the gradients into an FP32 buffer with torchtitan's default
``mixed_precision_reduce = "float32"``; FSDP1 reduce-scatters the flat 16-bit gradient
itself): :func:`reduce_scatter_buffer_bytes`. Other transient buffers (DeepSpeed's reduce
buckets, NCCL's own memory) are not counted.

**Activations** per layer and micro-batch, Korthikanti et al.'s count recounted term by term
for any layer, recomputation mode and library, are :mod:`solutions.planner.activations`; the
output logits and the loss's buffers, and the K/V gathered for context parallelism, are
counted beside them (:mod:`solutions.planner.buffers`).

**In flight** (:func:`in_flight_layers`): a stage holds the activations of every chunk
forward it has run whose backward has not yet run. Megatron-LM's schedules run ``w`` warm-up
chunk forwards and then alternate, so the peak is ``min(w + 1, m v)`` chunk forwards with
``w = 2 (p - i - 1) + (v - 1) N`` on stage i (``forward_backward_pipelining_with_interleaving``,
N = ``microbatch_group_size_per_vp_stage``, p by default, m when m < p); v = 1 gives 1F1B's
``min(p - i, m)`` (Narayanan et al. 2021, §2.2.1), and large m gives Korthikanti's first-stage
factor ``1 + (p - 1)/(p v)`` (§4.2.3). Each chunk forward holds the average chunk's layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions import models, zero
from solutions.layout import RECOMPUTE_MODES as RECOMPUTE_MODES  # re-exported
from solutions.layout import ParallelConfig as ParallelConfig  # re-exported
from solutions.layout import Recompute as Recompute  # re-exported
from solutions.layout import StageParams as StageParams  # re-exported
from solutions.layout import chunk_layers, layers_per_stage, stage_params_of
from solutions.layout import stage_layer_kinds as stage_layer_kinds  # re-exported
from solutions.planner.activations import activation_bytes_per_layer, rebuilt_layer_bytes
from solutions.planner.buffers import transient_bytes
from solutions.stack import MODERN, Stack, for_layout

#: Gathered ZeRO-3 units a resharding implementation holds at once: the layer being computed
#: and the one being prefetched (Zhao et al. 2023, §3.3.2-3.3.3).
GATHERED_UNITS = 2
#: Adam's momentum and variance in BF16, the optimizer's whole state when the BF16
#: parameters are its master (``Stack.bf16_params``; ``torch.optim.Adam``'s ``zeros_like``).
BF16_ADAM_MOMENT_BYTES = 4.0


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one GPU needs, for the stage where the total is largest."""

    stage: int
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    buffers_bytes: float = 0.0  # loss logits, gathered K/V (solutions.planner.buffers)

    @property
    def total_bytes(self) -> float:
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes
                + self.activations_bytes + self.buffers_bytes)

    def as_gb(self) -> dict[str, float]:
        """Each component in decimal GB (1e9 bytes), plus the total."""
        parts = {"weights": self.weights_bytes, "gradients": self.gradients_bytes,
                 "optimizer": self.optimizer_bytes, "activations": self.activations_bytes,
                 "buffers": self.buffers_bytes, "total": self.total_bytes}
        return {k: v / 1e9 for k, v in parts.items()}

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td style='text-align:right'>{v:,.2f} GB</td></tr>"
                       for k, v in self.as_gb().items())
        return f"<table><caption>Memory per GPU (stage {self.stage})</caption>{rows}</table>"


def stage_params(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> StageParams:
    """Parameters held by one GPU of ``stage`` (0-based), split into dense and expert."""
    return stage_params_of(arch, cfg.pp, cfg.tp, cfg.ep, stage, cfg.expert_tp)


def warmup_chunks(pp: int, m: int, v: int, stage: int) -> int:
    """Chunk forwards before the first backward on ``stage``: ``2 (p - i - 1) + (v - 1) N``
    with N = p (N = m when m < p), capped at m v (Megatron-LM's interleaved schedule)."""
    group = pp if m >= pp else m
    warm = (pp - stage - 1) * (2 if v > 1 else 1) + (v - 1) * group
    return min(warm, m * v)


def in_flight_layers(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> float:
    """Layer-micro-batches whose activations ``stage`` holds at its peak: chunk forwards in
    flight, ``min(w + 1, m v)``, times the stage's average layers per chunk."""
    v = cfg.virtual_stages
    layers = sum(chunk_layers(arch.n_layers, cfg.pp, v)[stage])
    return in_flight_chunks(cfg, stage) * layers / v


def in_flight_chunks(cfg: ParallelConfig, stage: int) -> int:
    """Chunk forwards ``stage`` holds at its peak: ``min(w + 1, m v)``."""
    v = cfg.virtual_stages
    m = cfg.schedule_microbatches
    return min(warmup_chunks(cfg.pp, m, v, stage) + 1, m * v)


def in_flight(cfg: ParallelConfig, stage: int) -> float:
    """Micro-batches (whole-stage equivalents) ``stage`` holds at its peak."""
    return in_flight_chunks(cfg, stage) / cfg.virtual_stages


def stage_activation_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                           stack: Stack = MODERN) -> float:
    """Peak stashed activations of one GPU of ``stage``: in-flight layers x bytes each, plus
    (full recomputation) the one layer rebuilt during the backward."""
    dense_layers, moe_layers = stage_layer_kinds(arch, cfg.pp)[stage]
    layers = dense_layers + moe_layers
    if layers == 0:
        return 0.0
    share = in_flight_layers(arch, cfg, stage) / layers
    total = share * dense_layers * activation_bytes_per_layer(arch, cfg, stack)
    if moe_layers:
        total += share * moe_layers * activation_bytes_per_layer(arch, cfg, stack, True)
    if cfg.activation_recompute == "full":
        total += rebuilt_layer_bytes(arch, cfg, stack, moe_layers > 0)
    return total


def experts_in_place(cfg: ParallelConfig, stack: Stack) -> bool:
    """Whether the routed experts are used where they lie under ZeRO-3: BF16 parameters
    (``Stack.bf16_params``) that no ZeRO group shards (expert DP = 1), so they are neither
    gathered nor accumulated apart from their own BF16 gradient."""
    return stack.bf16_params and cfg.zero_stage == 3 and cfg.expert_dp == 1


def gathered_params(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                    stack: Stack) -> float:
    """Parameters of ``stage`` on one GPU that ZeRO-3 gathers and accumulates whole: all of
    them, less routed experts used in place (:func:`experts_in_place`)."""
    params = stage_params(arch, cfg, stage)
    return params.total - (params.expert if experts_in_place(cfg, stack) else 0.0)


def accumulating_share(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                       stack: Stack) -> float:
    """Llama 3's FSDP: the share of ``stage``'s layers in its largest chunk, whose gradient
    its micro-batches' backward passes accumulate into whole (module doc); 0 otherwise.
    With more micro-batches than one group of N = p (m > p), every chunk's accumulation
    spans the groups, so the whole stage's gradient is held (share 1), as it is when the
    step runs the schedule more than once (``pipeline_rounds``)."""
    if cfg.zero_stage < 3 or stack.reshard_after_forward:
        return 0.0
    layers = layers_per_stage(arch.n_layers, cfg.pp)[stage]
    if layers == 0:
        return 0.0
    if cfg.grad_accum > cfg.pp or cfg.pipeline_rounds > 1:
        return 1.0
    return max(chunk_layers(arch.n_layers, cfg.pp, cfg.virtual_stages)[stage]) / layers


def accumulating_params(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                        stack: Stack) -> float:
    """Parameters of ``stage``'s largest chunk whose unsharded gradient is accumulated at
    ``grad_accum_bytes`` (:func:`accumulating_share`): the ZeRO-sharded ones."""
    return gathered_params(arch, cfg, stage, stack) * accumulating_share(arch, cfg, stage, stack)


def state_bytes_per_param(zero_stage: int, n: int, stack: Stack) -> zero.ModelStateBytes:
    """Weights, gradients and optimizer bytes per parameter under this sharding (module doc
    table); ``n`` the data-parallel ranks that share the parameter."""
    g = stack.grad_accum_bytes
    k = zero.ADAM_OPTIMIZER_BYTES
    w = zero.WEIGHT_BYTES
    if stack.bf16_params:  # no master, BF16 moments, gradients in the parameters' dtype
        g, k = zero.GRADIENT_BYTES, BF16_ADAM_MOMENT_BYTES
    if zero_stage <= 1:  # the 16-bit gradients too, where the stack keeps them (module doc)
        held = g + (zero.GRADIENT_BYTES if stack.keeps_16bit_grads else 0.0)
        return zero.ModelStateBytes(w, held, k / n if zero_stage == 1 else k)
    if zero_stage == 2:
        return zero.ModelStateBytes(w, g / n, k / n)
    shard = 0.0 if stack.shard_is_master and not stack.bf16_params else w / n
    return zero.ModelStateBytes(shard, g / n, k / n)  # gathered copies: stage_memory


def grad_reductions_per_step(cfg: ParallelConfig, stack: Stack = MODERN) -> int:
    """Reductions of each gradient over the data-parallel group per step: one for ZeRO
    stages 0-1 (the local gradient is accumulated first) and for Llama 3's FSDP (each
    chunk's FP32 gradient once, when its last micro-batch is done); one per micro-batch for
    stage 2 and a resharding stage 3 (each micro-batch's gradient into the shard)."""
    if cfg.zero_stage <= 1 or (cfg.zero_stage == 3
                               and not for_layout(stack, cfg.pp).reshard_after_forward):
        return 1
    return cfg.grad_accum


def gathers_per_step(cfg: ParallelConfig, stack: Stack = MODERN) -> int:
    """ZeRO-3 parameter all-gathers of a layer per step: two per micro-batch (forward and
    backward) when resharded after the forward, one per step when the gathered weights stay
    resident until the optimizer updates the shards (Llama 3); none below stage 3."""
    if cfg.zero_stage < 3:
        return 0
    return 1 if not for_layout(stack, cfg.pp).reshard_after_forward else 2 * cfg.grad_accum


def largest_layers_params(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                          stack: Stack = MODERN) -> list[float]:
    """Parameters one GPU gathers of each of the :data:`GATHERED_UNITS` largest layers of
    ``stage`` (routed experts split over EP x ETP unless used in place, the rest over TP),
    largest first."""
    dense_layers, moe_layers = stage_layer_kinds(arch, cfg.pp)[stage]
    sizes: list[float] = [models.dense_layer_params(arch) / cfg.tp] * dense_layers
    if arch.moe is not None and moe_layers:
        routed = arch.moe.n_routed_experts * models.expert_params(arch)
        gathered = 0.0 if experts_in_place(cfg, stack) else routed / (cfg.ep * cfg.expert_tp)
        sizes += [(models.moe_layer_params(arch) - routed) / cfg.tp + gathered] * moe_layers
    return sorted(sizes, reverse=True)[:GATHERED_UNITS]


def units_in_flight_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                          stack: Stack = MODERN) -> float:
    """Gathered weights of the :data:`GATHERED_UNITS` largest layers of ``stage`` on one GPU,
    at ``stack.layer_gather_bytes``: the units a ZeRO-3 gather has in flight at once."""
    return sum(largest_layers_params(arch, cfg, stage, stack)) * stack.layer_gather_bytes


def gathered_layers_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                          stack: Stack = MODERN) -> float:
    """The units in flight (:func:`units_in_flight_bytes`) and ``stage``'s end tables
    (16-bit): what a resharding ZeRO-3/FSDP holds gathered at once."""
    tables = end_tables_params(arch, cfg, stage) / cfg.tp
    return units_in_flight_bytes(arch, cfg, stage, stack) + tables * zero.WEIGHT_BYTES


def stage_gathered_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                         stack: Stack = MODERN) -> float:
    """Bytes of all of ``stage``'s gathered weights on one GPU, what one ZeRO-3 all-gather of
    the stage delivers and what a stack that does not reshard keeps: the layers at
    ``stack.layer_gather_bytes`` (2, or 1 under FP8 all-gather), the end tables at 2."""
    tables = end_tables_params(arch, cfg, stage) / cfg.tp
    layer_bytes = stack.layer_gather_bytes
    return (gathered_params(arch, cfg, stage, stack) * layer_bytes
            + tables * (zero.WEIGHT_BYTES - layer_bytes))


def reduce_scatter_buffer_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                                stack: Stack) -> float:
    """Bytes of PyTorch FSDP's per-unit gradient reduce-scatter on one GPU of ``stage``: the
    largest layer's 16-bit unsharded gradient as it is produced, and the reduce-scatter
    inputs of the :data:`GATHERED_UNITS` largest layers at ``grad_reduce_bytes`` (module
    doc); 0 for a stack that does not reduce-scatter per unit or does not reshard."""
    if cfg.zero_stage < 3 or not stack.unit_reduce_scatter or not stack.reshard_after_forward:
        return 0.0
    layers = largest_layers_params(arch, cfg, stage, stack)
    return layers[0] * zero.WEIGHT_BYTES + sum(layers) * stack.grad_reduce_bytes


def end_tables_params(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> float:
    """Parameters of the embedding (first stage) and output head (last stage) ``stage``
    holds, before TP: the root unit of a stage's FSDP wrapping (torchtitan
    ``parallelize_llama``: ``fully_shard`` per block, then on the model for the rest),
    gathered from the embedding's forward until the head's backward, so resident at the
    activations' peak."""
    tables = 0.0
    if stage == 0:
        tables += (arch.vocab_size + arch.learned_positions) * arch.d_model
    if stage == cfg.pp - 1 and not (arch.tied_embeddings and cfg.pp == 1):
        tables += arch.vocab_size * arch.d_model
    return tables


def stage_memory(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                 stack: Stack = MODERN, memo: dict[tuple[object, ...], tuple[float, float]]
                 | None = None) -> MemoryBreakdown:
    """Weights, gradients, optimizer state and activations of one GPU of ``stage``. The
    activations and buffers do not depend on how the state is sharded: a search passes one
    ``memo`` so that a layout's ZeRO stages count them once."""
    stack = for_layout(stack, cfg.pp)
    key = (arch, stack, stage, cfg.sharding_free_key()) if memo is not None else ()
    held = memo.get(key) if memo is not None else None
    if held is None:
        held = (stage_activation_bytes(arch, cfg, stage, stack),
                transient_bytes(arch, cfg, stage, stack, in_flight_chunks(cfg, stage)))
        if memo is not None:
            memo[key] = held
    params = stage_params(arch, cfg, stage)
    n_dense = cfg.shard_dp * cfg.cp  # hybrid sharding keeps a copy per shard group
    dense = state_bytes_per_param(cfg.zero_stage, n_dense, stack)
    expert = state_bytes_per_param(cfg.zero_stage, cfg.expert_dp, stack)
    weights = params.dense * dense.weights + params.expert * expert.weights
    share = accumulating_share(arch, cfg, stage, stack)
    if cfg.zero_stage == 3:
        weights += (gathered_layers_bytes(arch, cfg, stage, stack) if stack.reshard_after_forward
                    else stage_gathered_bytes(arch, cfg, stage, stack))
        if stack.side_stream_buffers:  # pools of their own (Stack.side_stream_buffers)
            weights += units_in_flight_bytes(arch, cfg, stage, stack)  # the flat buffers
            share = 0.0  # the last step's shards stay reserved in the reduce-scatter's pool
    # the chunk being accumulated has no reduced shard yet (module doc); experts used in
    # place keep their own BF16 gradient, their shard's
    expert_share = 0.0 if experts_in_place(cfg, stack) else share
    shards = (params.dense * dense.gradients * (1 - share)
              + params.expert * expert.gradients * (1 - expert_share))
    accumulating = accumulating_params(arch, cfg, stage, stack)
    return MemoryBreakdown(
        stage=stage, weights_bytes=weights,
        gradients_bytes=(shards + accumulating * stack.grad_accum_bytes
                         + reduce_scatter_buffer_bytes(arch, cfg, stage, stack)),
        optimizer_bytes=params.dense * dense.optimizer + params.expert * expert.optimizer,
        activations_bytes=held[0], buffers_bytes=held[1],
    )


def memory_per_gpu(arch: models.Architecture, cfg: ParallelConfig,
                   stack: Stack = MODERN) -> MemoryBreakdown:
    """The largest per-GPU memory over all pipeline stages (the one that must fit)."""
    layers_per_stage(arch.n_layers, cfg.pp)  # raises if pp exceeds the layer count
    return max((stage_memory(arch, cfg, i, stack) for i in range(cfg.pp)),
               key=lambda m: m.total_bytes)
