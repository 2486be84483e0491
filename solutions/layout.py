"""A parallel layout, resolved once: stages, chunks, what each GPU holds, which groups
cross nodes. The memory model (:mod:`solutions.planner.memory`), the traffic model
(:mod:`solutions.planner.traffic`), the step-time model and the validator
(:mod:`solutions.planner.validity`) take stages, chunk sizes and per-GPU parameters from
this module (:func:`resolve` gathers them into one :class:`Layout`), so they cannot
disagree about where a layer lives.

* :class:`ParallelConfig` is the layout as chosen (degrees, micro-batching, sharding,
  recomputation); :func:`resolve` turns it into a :class:`Layout` for one architecture.
* Ranks are ordered innermost (fastest network) first, by default [TP, CP, PP, DP] as in
  Llama 3 (Dubey et al. 2024, §3.3.2): TP groups are consecutive ranks, CP groups have
  stride ``tp``, PP groups stride ``tp x cp``, DP groups stride ``tp x cp x pp``. The MoE
  layers have groups of their own (Megatron-Core's "MoE parallel folding",
  ``megatron/core/transformer/moe/README.md``: "a parallel group generator with
  ``tp-cp-dp-pp`` for Attention, and another with ``tp-ep-dp-pp`` for MoE. The EPxTP group
  in MoE is a sub-group of DPxCPxTP in Attention"; ``Stack.folded_expert_groups``): each
  routed expert is split over ``etp`` consecutive ranks (``--expert-tensor-parallel-size``,
  TP by default), the ``ep`` ranks that share out the experts are ``etp`` apart, and
  ``expert_dp`` groups of them, the rest of a stage's ``tp x cp x dp`` ranks, hold the same
  experts. Without folding the ``ep`` ranks are carved out of the DP group (EP divides DP,
  ETP is TP), which gives the same counts. Megatron-LM's default
  puts the pipeline outermost (``order=("tp", "cp", "dp", "pp")``,
  ``megatron/core/parallel_state.py``).
* Stages: :func:`layers_per_stage` spreads ``n_layers`` as evenly as possible, extras to the
  middle stages first (the end stages also hold the embedding and the output head).
* Chunks (interleaved schedule, ``virtual_stages = v``): a stage holds ``v`` model chunks;
  chunk ``c`` of stage ``s`` is virtual stage ``c p + s`` (Narayanan et al. 2021, §2.2.2).
  An end stage that holds one layer fewer than the heaviest stage counts its embedding
  (first stage) or output head and loss (last stage) as one layer *slot*, as Llama 3 does:
  "we reduce one Transformer layer each from the first and the last stages ... the first
  model chunk on the first stage has only the embedding, and the last model chunk on the last
  stage has only output projection and loss calculation" (§3.3.2); Megatron-Core's
  ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``
  build the same. Chunks are *even* when ``v`` divides every stage's slots; Megatron-LM
  asserts that (``num_layers_per_pipeline_stage % num_layers_per_virtual_pipeline_stage``,
  ``megatron/training/arguments.py``). A stack that allows uneven chunks pays for them: the
  fill and drain of the pipeline are paced by the largest chunk (:attr:`Layout.bubble_chunks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from solutions import models, zero
from solutions._checks import positive_int

Recompute = Literal["none", "selective", "full"]
RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")


@dataclass(frozen=True)
class ParallelConfig:
    """A training layout. ``grad_accum`` is the number of micro-batches m per step per
    pipeline; the global batch is ``dp x micro_batch x grad_accum`` sequences.
    ``zero_stage`` is the sharding over the data-parallel group at rest (0-3, ZeRO,
    Rajbhandari et al. 2020); whether ZeRO-3/FSDP weights are re-sharded after the forward
    pass is a property of the training software (``Stack.reshard_after_forward``).
    ``etp`` splits each routed expert over that many ranks (None: ``tp``, Megatron-Core's
    default); with MoE parallel folding (``Stack.folded_expert_groups``) ``ep x etp`` must
    divide ``tp x cp x dp``, without it EP divides DP and ETP is TP (module doc).
    ``dp_shard`` shards the ZeRO state over groups of that many consecutive data-parallel
    ranks and replicates it across the ``dp / dp_shard`` groups (None: over all of DP).
    That is hybrid sharding: PyTorch FSDP's ``ShardingStrategy.HYBRID_SHARD`` and FSDP2's
    2-D mesh (``dp_replicate x dp_shard``; Zhao et al. 2023, arXiv:2304.11277, §3.2.2
    "hybrid sharding"), DeepSpeed's MiCS, Megatron-Core's
    ``--num-distributed-optimizer-instances``. Gradients are reduce-scattered inside a
    shard group and the shards all-reduced across the groups; weights are gathered
    inside a group only. It needs ``zero_stage`` >= 1 and must divide ``dp``.
    ``pipeline_rounds`` runs the pipeline schedule that many times a step, each over
    ``grad_accum / pipeline_rounds`` micro-batches (:attr:`schedule_microbatches`), the
    gradients accumulating across the rounds: a training loop that accumulates around the
    schedule's ``step`` (NeMo AutoModel's ``benchmark.py``) fills and drains the pipeline
    once a round. It must divide ``grad_accum``."""

    tp: int
    pp: int
    dp: int
    ep: int = 1
    cp: int = 1
    zero_stage: int = 1
    micro_batch: int = 1
    grad_accum: int = 1
    seq_len: int = 8192
    activation_recompute: Recompute = "selective"
    virtual_stages: int = 1
    etp: int | None = None
    dp_shard: int | None = None
    pipeline_rounds: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "ep", "cp", "micro_batch", "grad_accum", "seq_len",
                     "virtual_stages", "etp", "dp_shard", "pipeline_rounds"):
            value = getattr(self, name)
            if type(value) is int and value >= 1:  # the common case, first
                continue
            if name in ("etp", "dp_shard") and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an int (a count of GPUs, sequences or "
                                 f"tokens), got {value!r}")
            object.__setattr__(self, name, positive_int(name, value))
        if self.zero_stage not in zero.ZERO_STAGES or isinstance(self.zero_stage, bool):
            raise ValueError(f"zero_stage must be one of {zero.ZERO_STAGES}, "
                             f"got {self.zero_stage!r}")
        if self.activation_recompute not in RECOMPUTE_MODES:
            raise ValueError(f"activation_recompute must be one of {RECOMPUTE_MODES}, "
                             f"got {self.activation_recompute!r}")
        if self.dp_shard is not None:
            if self.dp % self.dp_shard:
                raise ValueError(f"dp_shard={self.dp_shard} must divide dp={self.dp}: the "
                                 "data-parallel ranks split into equal shard groups")
            if self.zero_stage == 0 and self.dp_shard < self.dp:
                raise ValueError("dp_shard shards the ZeRO state; with zero_stage=0 "
                                 "nothing is sharded (use zero_stage >= 1)")
        if self.grad_accum % self.pipeline_rounds:
            raise ValueError(f"pipeline_rounds={self.pipeline_rounds} must divide "
                             f"grad_accum={self.grad_accum}: each run of the pipeline "
                             "schedule takes the same number of micro-batches")

    def sharding_free_key(self) -> tuple[object, ...]:
        """Every field but how the model state is sharded (``zero_stage``, ``dp_shard``):
        all that a stage's work per micro-batch, its activations and its buffers read, so
        a search may compute them once for a layout's ZeRO stages."""
        return (self.tp, self.pp, self.dp, self.ep, self.cp, self.micro_batch,
                self.grad_accum, self.seq_len, self.activation_recompute,
                self.virtual_stages, self.etp, self.pipeline_rounds)

    @property
    def schedule_microbatches(self) -> int:
        """Micro-batches one run of the pipeline schedule takes, ``grad_accum /
        pipeline_rounds`` (all of them when the step runs the schedule once)."""
        return self.grad_accum // self.pipeline_rounds

    @property
    def n_gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def expert_tp(self) -> int:
        """Ranks one routed expert is split over: ``etp``, or ``tp`` when it is None."""
        return self.tp if self.etp is None else self.etp

    @property
    def shard_dp(self) -> int:
        """Data-parallel ranks one copy of the ZeRO state is sharded over: ``dp_shard``,
        or all of ``dp`` when it is None."""
        return self.dp if self.dp_shard is None else self.dp_shard

    @property
    def replicas(self) -> int:
        """Copies of the sharded state, ``dp / shard_dp`` (1 without hybrid sharding)."""
        return self.dp // self.shard_dp

    @property
    def expert_dp(self) -> int:
        """Ranks of a stage that hold the same routed experts, ``tp x cp x dp / (ep x
        expert_tp)`` (at least 1): ``dp x cp / ep`` when the experts are split like the rest
        of the layer (``etp`` = ``tp``)."""
        return max(1, self.tp * self.cp * self.dp // (self.ep * self.expert_tp))

    @property
    def global_batch_seqs(self) -> int:
        return self.dp * self.micro_batch * self.grad_accum

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch_seqs * self.seq_len


@lru_cache(maxsize=4096, typed=True)  # pure, and called for every layout a search judges
def layers_per_stage(n_layers: int, pp: int) -> tuple[int, ...]:
    """Layers on each pipeline stage, first to last, as even as possible.

    ``n_layers = q pp + r``: r stages carry q + 1 layers and the rest q. The extra layers go
    to the middle stages first, because the first stage also holds the embedding and the
    last the output head and loss. Llama 3: 126 over 16 -> (7, 8 x 14, 7), exactly the
    paper's "one layer fewer on the first and last stages" (§3.3.2).
    """
    n, p = positive_int("n_layers", n_layers), positive_int("pp", pp)
    if p > n:
        raise ValueError(f"pp={p} stages cannot each hold a layer of a {n}-layer model")
    base, extra = divmod(n, p)
    middle = list(range(1, p - 1))
    order = middle + [i for i in (0, p - 1) if i not in middle]
    heavy = set(order[:extra])
    return tuple(base + (1 if i in heavy else 0) for i in range(p))


@lru_cache(maxsize=4096, typed=True)
def stage_slots(n_layers: int, pp: int) -> tuple[int, ...]:
    """Layer slots per stage: its layers, plus one for the embedding on the first stage and
    one for the output head on the last when that stage is one layer short (Llama 3)."""
    counts = layers_per_stage(n_layers, pp)
    heaviest = max(counts)
    slots = list(counts)
    if pp > 1:
        for end in (0, pp - 1):
            if counts[end] < heaviest:
                slots[end] += 1
    return tuple(slots)


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@lru_cache(maxsize=4096, typed=True)
def chunk_layers(n_layers: int, pp: int, v: int) -> tuple[tuple[int, ...], ...]:
    """Transformer layers in each of the ``v`` chunks of each stage (empty chunks allowed
    only where a chunk's one slot is the embedding or the output head)."""
    counts, slots = layers_per_stage(n_layers, pp), stage_slots(n_layers, pp)
    result = []
    for s in range(pp):
        sizes = _split(slots[s], v)
        if slots[s] > counts[s] and s == 0:
            sizes[0] -= 1  # the embedding takes a slot of the first chunk
        if slots[s] > counts[s] and s == pp - 1:
            sizes[-1] -= 1  # the output head takes a slot of the last chunk
        result.append(tuple(sizes))
    return tuple(result)


@lru_cache(maxsize=4096, typed=True)
def bubble_chunks_of(n_layers: int, pp: int, v: int) -> float:
    """The v the pipeline bubble divides by: the heaviest stage's layers over the largest
    chunk's (= v for even chunks; less when uneven chunks pace the fill and drain)."""
    chunks = chunk_layers(n_layers, pp, v)
    return max(layers_per_stage(n_layers, pp)) / max(1, max(max(c) for c in chunks))


@lru_cache(maxsize=8192, typed=True)
def stage_layer_kinds(arch: models.Architecture, pp: int) -> tuple[tuple[int, int], ...]:
    """(dense layers, MoE layers) on each stage; MoE models put their dense layers first."""
    n_dense_first = arch.n_layers - models.n_moe_layers(arch)
    kinds, start = [], 0
    for count in layers_per_stage(arch.n_layers, pp):
        dense = max(0, min(start + count, n_dense_first) - start)
        kinds.append((dense, count - dense))
        start += count
    return tuple(kinds)


@dataclass(frozen=True)
class StageParams:
    """Parameters one GPU of a stage holds: ``dense`` (replicated over DP) and ``expert``."""

    dense: float
    expert: float

    @property
    def total(self) -> float:
        return self.dense + self.expert


@lru_cache(maxsize=8192)
def stage_params_of(arch: models.Architecture, pp: int, tp: int, ep: int,
                    stage: int, etp: int) -> StageParams:
    """Parameters held by one GPU of ``stage``: its layers over ``tp``, routed experts over
    ``ep x etp`` (:attr:`ParallelConfig.expert_tp`); the first stage adds the embedding (and
    learned positions), the last the output head (a copy of the table when tied)."""
    dense_layers, moe_layers = stage_layer_kinds(arch, pp)[stage]
    dense = dense_layers * models.dense_layer_params(arch)
    expert = 0.0
    if arch.moe is not None and moe_layers:
        routed = arch.moe.n_routed_experts * models.expert_params(arch)
        dense += moe_layers * (models.moe_layer_params(arch) - routed)
        expert = moe_layers * routed / ep
    table = arch.vocab_size * arch.d_model
    if stage == 0:
        dense += table + arch.learned_positions * arch.d_model
    if stage == pp - 1 and not (arch.tied_embeddings and pp == 1):
        dense += table
    return StageParams(dense=dense / tp, expert=expert / etp)


@dataclass(frozen=True)
class Group:
    """One parallel group as rank 0 sees it: ``size`` ranks ``stride`` apart, placed on
    ``nodes`` nodes with ``per_node`` members in each (a group spanning whole nodes can use
    every NIC of a node at once)."""

    size: int
    stride: int
    nodes: int
    per_node: int

    @property
    def crosses_nodes(self) -> bool:
        return self.nodes > 1


def dp_stride(tp: int, cp: int, pp: int, pp_outermost: bool = True) -> int:
    """Ranks between two neighbours of a DP group: ``tp x cp`` when the pipeline is the
    outermost dimension (Megatron-LM's ``tp-cp-ep-dp-pp``), ``tp x cp x pp`` in Llama 3's
    ``[TP, CP, PP, DP]`` (module doc)."""
    return tp * cp * (1 if pp_outermost else pp)


def expert_stride(cfg: ParallelConfig, dp_stride: int, folded: bool) -> int:
    """Ranks between two members of an EP group: ``etp`` when the MoE layers have groups of
    their own (MoE parallel folding, module doc), else the DP group's ``dp_stride``."""
    return cfg.expert_tp if folded else dp_stride


def group(size: int, stride: int, gpus_per_node: int) -> Group:
    """Where a group of ``size`` ranks at ``stride`` lands on nodes of ``gpus_per_node``."""
    per_node = 1 if stride >= gpus_per_node else max(1, min(size, gpus_per_node // stride))
    return Group(size=size, stride=stride, nodes=-(-size // per_node), per_node=per_node)


@dataclass(frozen=True)
class Layout:
    """A :class:`ParallelConfig` resolved for one architecture and node size."""

    arch: models.Architecture
    cfg: ParallelConfig
    gpus_per_node: int
    stage_layers: tuple[int, ...]
    chunk_layers: tuple[tuple[int, ...], ...]
    groups: dict[str, Group]

    @property
    def chunks_even(self) -> bool:
        """True when ``v`` divides every stage's layer slots (all chunks the same size)."""
        return all(s % self.cfg.virtual_stages == 0
                   for s in stage_slots(self.arch.n_layers, self.cfg.pp))

    @property
    def largest_chunk_layers(self) -> int:
        return max(max(c) for c in self.chunk_layers)

    @property
    def bubble_chunks(self) -> float:
        """The v the bubble divides by (:func:`bubble_chunks_of`)."""
        return bubble_chunks_of(self.arch.n_layers, self.cfg.pp, self.cfg.virtual_stages)

    def stage_params(self, stage: int) -> StageParams:
        return stage_params_of(self.arch, self.cfg.pp, self.cfg.tp, self.cfg.ep, stage,
                               self.cfg.expert_tp)

    def stage_kinds(self, stage: int) -> tuple[int, int]:
        return stage_layer_kinds(self.arch, self.cfg.pp)[stage]


LLAMA3_ORDER: tuple[str, ...] = ("tp", "cp", "pp", "dp")


def resolve(arch: models.Architecture, cfg: ParallelConfig, gpus_per_node: int = 8,
            order: tuple[str, ...] = LLAMA3_ORDER, folded_experts: bool = False) -> Layout:
    """Resolve ``cfg`` for ``arch`` with ranks in ``order`` (innermost first), the EP ranks
    ``etp`` apart with ``folded_experts`` (MoE parallel folding) and members of the DP group
    otherwise; ValueError
    when PP exceeds the layers, v exceeds the slots of some stage (no chunk layout exists
    at all) or ``order`` is not a permutation of tp, cp, pp, dp."""
    g = positive_int("gpus_per_node", gpus_per_node)
    if sorted(order) != sorted(LLAMA3_ORDER):
        raise ValueError(f"order must list tp, cp, pp and dp once each, got {order!r}")
    v = cfg.virtual_stages
    if v > min(stage_slots(arch.n_layers, cfg.pp)):
        raise ValueError(f"virtual_stages={v} chunks do not fit a stage of "
                         f"{min(layers_per_stage(arch.n_layers, cfg.pp))} layers")
    sizes = {"tp": cfg.tp, "cp": cfg.cp, "pp": cfg.pp, "dp": cfg.dp}
    groups, stride = {}, 1
    for dim in order:
        groups[dim] = group(sizes[dim], stride, g)
        stride *= sizes[dim]
    groups["ep"] = group(cfg.ep, expert_stride(cfg, groups["dp"].stride, folded_experts), g)
    return Layout(arch=arch, cfg=cfg, gpus_per_node=g,
                  stage_layers=layers_per_stage(arch.n_layers, cfg.pp),
                  chunk_layers=chunk_layers(arch.n_layers, cfg.pp, v), groups=groups)


def pipeline_bubble_over_compute(pp: int, m: int, v: float) -> float:
    """Bubble over ideal compute of an interleaved pipeline with ``v`` (possibly effective,
    :attr:`Layout.bubble_chunks`) chunks per GPU.

    m >= p: ``(p - 1)/(m v)`` (Narayanan et al. 2021, §2.2.2). m < p (Llama 3's schedule,
    §3.3.2, breadth-first rounds): ``[(p - 1) + (v - 1)(p - m)]/(m v)``, because each of the
    v - 1 later rounds leaves p - m chunk slots idle; it is what
    :func:`solutions.pipeline_simulator.simulate` measures for those orders and tends to
    ``(p - m)/m``.
    """
    p, m = positive_int("pp", pp), positive_int("m", m)
    if not v >= 1:
        raise ValueError(f"v must be >= 1, got {v!r}")
    if p == 1:
        return 0.0
    idle = (p - 1) + (v - 1) * max(0, p - m)
    return idle / (m * v)
