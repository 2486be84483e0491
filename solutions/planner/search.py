"""5D-parallelism planner: search every layout and rank them by predicted step time.

:func:`recommend` enumerates TP (within a node), CP, PP, DP, EP (for models with experts;
with ETP 1 beside ETP = TP where the stack folds its expert groups),
interleaving depth v, micro-batch size and recomputation mode (and, if asked, ZeRO stages,
and hybrid sharding: the ZeRO state sharded over the data-parallel ranks of one node and
replicated across nodes, ``ParallelConfig.dp_shard``) for a fixed cluster and global
batch, drops what cannot be built or does not fit in memory (the rules of
:func:`solutions.planner.validity.validate`), predicts the step time of the rest with
:func:`solutions.performance.breakdown_s`, and returns the fastest few with their
breakdowns. The global batch is fixed, so the fastest step is also the highest throughput.

Speed: checks run cheapest first (divisibility, then memory, then the model). A layout that
does not fit rules out, unevaluated, the same layout with a recomputation mode that keeps
more (memory only grows that way). The memory
check evaluates only the stages that can be the fullest (stage 0 holds the most
micro-batches in flight and the embedding, stage 1 is the first of the stages with an extra
layer, the last holds the output head); MoE models, whose stages differ in kind, check
every stage. A layout's ZeRO stages share each pipeline stage's work, activations and
buffers, which do not depend on how the state is sharded
(:meth:`solutions.layout.ParallelConfig.sharding_free_key`), and once the
search keeps ``top`` layouts, one whose lower bound on the step
(:func:`solutions.performance.model.step_lower_bound_s`) is slower than the slowest kept is
counted valid but not estimated. These three change no result:
``recommend(..., exhaustive=True)`` ranks every valid layout without them, and
``tests/solutions/test_search_exact.py`` checks that the two agree.
benchmarks/recommend_speed.py times it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from solutions import hardware, models
from solutions._checks import positive, positive_int
from solutions.layout import dp_stride, stage_slots
from solutions.performance.model import (
    StepEstimate,
    breakdown_s,
    check_inputs,
    step_lower_bound_s,
    summarise,
)
from solutions.performance.stage import StageMemo
from solutions.planner.memory import RECOMPUTE_MODES, ParallelConfig, Recompute, stage_memory
from solutions.planner.validity import structural_problems
from solutions.stack import MODERN, Stack

TP_CHOICES: tuple[int, ...] = (1, 2, 4, 8)
CP_CHOICES: tuple[int, ...] = (1, 2, 4, 8, 16)
VIRTUAL_CHOICES: tuple[int, ...] = (1, 2, 4, 8)
MICRO_BATCH_CHOICES: tuple[int, ...] = (1, 2, 4, 8)
ZERO_CHOICES: tuple[int, ...] = (1, 3)  # Megatron's distributed optimizer, and FSDP
_RECOMPUTE_MEMORY_RANK = {"full": 0, "selective": 1, "none": 2}  # least memory first
#: Relative margin a lower bound must clear before it rules a layout out: the bound and the
#: step add the same terms in different orders, which may round them a few ulps apart.
_BOUND_ROUNDING = 1e-9


#: Relative step-time difference below which two layouts count as tied: the model's median
#: error on published runs it was not fitted on (``docs/validation.md``, held-out rows,
#: about 6 %). Two predictions closer than that are not known to be in that order.
MODEL_ERROR = 0.06


@dataclass(frozen=True)
class Ranked:
    """A layout and its predicted step; ``rank`` 1 is the fastest. ``group`` numbers the
    ties: layouts of one group are predicted within :data:`MODEL_ERROR` of the group's
    fastest, so the model cannot order them."""

    rank: int
    config: ParallelConfig
    estimate: StepEstimate
    group: int = 1

    def label(self) -> str:
        c = self.config
        ep = f" EP{c.ep}" if c.ep > 1 else ""
        ep += f" ETP{c.etp}" if c.etp is not None and c.etp != c.tp else ""
        ep += f" shard{c.dp_shard}" if c.dp_shard is not None and c.dp_shard < c.dp else ""
        return (f"TP{c.tp} CP{c.cp} PP{c.pp} DP{c.dp}{ep} v{c.virtual_stages} "
                f"b{c.micro_batch} m{c.grad_accum} {c.activation_recompute} "
                f"ZeRO-{c.zero_stage}")

    def _repr_html_(self) -> str:
        return (f"<p>#{self.rank} (group {self.group}): {self.label()}</p>"
                f"{self.estimate._repr_html_()}")


@dataclass(frozen=True)
class Search:
    """What :func:`recommend` looked at: candidates judged, how many fit, the best ones."""

    candidates: int
    valid: int
    best: tuple[Ranked, ...]

    def table(self) -> str:
        """The best layouts as a text table: rank, tie group, layout, step time, MFU, the
        largest cost besides compute; a note says what a group means."""
        head = (f"{self.candidates:,} layouts judged, {self.valid:,} valid and fit memory.\n"
                f"Layouts in one group are within {MODEL_ERROR:.0%} (the model's validated "
                "error) of the group's fastest: their order is not known.\n")
        rows = [("#", "group", "layout", "step (s)", "MFU", "largest other cost")]
        for r in self.best:
            e = r.estimate
            rows.append((str(r.rank), str(r.group), r.label(), f"{e.step_time_s:,.2f}",
                         f"{e.mfu:.1%}", f"{e.biggest_cost} {e.breakdown[e.biggest_cost]:,.2f} s"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                 for row in rows]
        return head + "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        head = f"<p>{self.candidates:,} layouts judged, {self.valid:,} valid and fit memory.</p>"
        return head + "".join(r._repr_html_() for r in self.best)


def tie_groups(times: list[float], tolerance: float = MODEL_ERROR) -> list[int]:
    """Group numbers for ``times`` sorted fastest first: a new group starts at the first time
    more than ``tolerance`` (relative) slower than its group's fastest."""
    groups: list[int] = []
    lead = None
    for t in times:
        if lead is None or t > lead * (1 + tolerance):
            lead = t
            groups.append((groups[-1] + 1) if groups else 1)
        else:
            groups.append(groups[-1])
    return groups


def _chunk_choices(arch: models.Architecture, pp: int) -> tuple[int, ...]:
    """The v every stack can build on ``pp`` stages: v dividing every stage's layer slots
    (:func:`solutions.layout.stage_slots`); 1 without PP. Uneven chunks, which some stacks
    accept (:func:`solutions.planner.validity.validate` allows them there), are not
    searched: their fill and drain are paced by the largest chunk, which the step-time
    model's bubble (p - 1)/(m v) does not charge."""
    if pp == 1:
        return (1,)
    slots = stage_slots(arch.n_layers, pp)
    return tuple(v for v in VIRTUAL_CHOICES if v <= min(slots) and all(s % v == 0 for s in slots))


def _expert_choices(arch: models.Architecture, tp: int, cp: int, dp: int,
                    folded: bool) -> tuple[tuple[int, int | None], ...]:
    """(EP, ETP) pairs to search, ETP None meaning TP: (1, None) for a dense model; for a MoE
    model every power of two EP that divides the routed experts and DP (the traditional
    groups, carved out of DP) or, with ``folded`` (``Stack.folded_expert_groups``), whose
    expert group of EP x ETP ranks tiles the stage's TP x CP x DP, for ETP = TP and, when
    TP > 1, ETP = 1 (every expert whole on one GPU, the Megatron-Bridge presets' choice)."""
    if arch.moe is None:
        return ((1, None),)
    experts, width = arch.moe.n_routed_experts, arch.moe.expert_d_ffn
    powers = [2**i for i in range(13)]
    if not folded:
        return tuple((e, None) for e in powers if e <= dp and dp % e == 0
                     and experts % e == 0)
    ranks = tp * cp * dp
    splits = [tp] + ([1] if tp > 1 else [])
    return tuple((e, None if etp == tp else etp) for etp in splits if width % etp == 0
                 for e in powers if e <= experts and experts % e == 0
                 and ranks % (e * etp) == 0)


def _shard_choices(tp: int, cp: int, pp: int, dp: int, zero: int, gpus_per_node: int,
                   stack: Stack, hybrid: bool) -> tuple[int | None, ...]:
    """``dp_shard`` values to search: None (the state sharded over all of DP) and, with
    ``hybrid`` and ZeRO, the DP ranks of one node when DP spans more than a node (the
    shard group's gathers then stay on NVLink; one rank a node would shard nothing)."""
    per_node = gpus_per_node // dp_stride(tp, cp, pp, stack.pp_outermost)
    if not hybrid or zero == 0 or per_node < 2 or per_node >= dp or dp % per_node:
        return (None,)
    return (None, per_node)


def _grid(arch: models.Architecture, n_gpus: int, batch: int, seq_len: int,
          gpus_per_node: int, zero_stages: tuple[int, ...],
          recompute_modes: tuple[str, ...] = RECOMPUTE_MODES,
          stack: Stack = MODERN, hybrid: bool = False) -> Iterator[ParallelConfig]:
    """Every layout whose degrees multiply out, whose batch splits into micro-batches and
    whose chunks can be built (even chunks, :func:`_chunk_choices`; m >= p when
    interleaving, unless the stack's schedule accepts fewer); with ``hybrid``, each ZeRO
    layout also with its state sharded per node (:func:`_shard_choices`)."""
    modes = sorted(recompute_modes, key=_RECOMPUTE_MEMORY_RANK.__getitem__)  # least memory first
    for tp, cp in itertools.product(TP_CHOICES, CP_CHOICES):
        if tp > gpus_per_node or n_gpus % (tp * cp) or seq_len % (tp * cp * (2 if cp > 1 else 1)):
            continue
        for pp in range(1, arch.n_layers + 1):
            if n_gpus % (tp * cp * pp):
                continue
            dp = n_gpus // (tp * cp * pp)
            for micro, v, zero, recompute, (ep, etp) in itertools.product(
                    MICRO_BATCH_CHOICES, _chunk_choices(arch, pp), zero_stages, modes,
                    _expert_choices(arch, tp, cp, dp, stack.folded_expert_groups)):
                if batch % (dp * micro):
                    continue
                if v > 1 and batch // (dp * micro) < pp and not stack.interleave_m_below_p:
                    continue
                mode: Recompute = recompute  # type: ignore[assignment]
                for shard in _shard_choices(tp, cp, pp, dp, zero, gpus_per_node, stack,
                                            hybrid):
                    yield ParallelConfig(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, zero_stage=zero,
                                         micro_batch=micro, grad_accum=batch // (dp * micro),
                                         seq_len=seq_len, activation_recompute=mode,
                                         virtual_stages=v, etp=etp, dp_shard=shard)


def fits_memory(arch: models.Architecture, cfg: ParallelConfig, budget_gb: float,
                stack: Stack = MODERN,
                memo: dict[tuple[object, ...], tuple[float, float]] | None = None) -> bool:
    """True when the fullest GPU fits ``budget_gb``, checking only the stages that can be
    fullest (see the module docstring); equal to ``memory_per_gpu(...) <= budget``.
    ``memo``: :func:`solutions.planner.memory.stage_memory`'s, shared by one search."""
    stages = range(cfg.pp) if arch.moe is not None else {0, min(1, cfg.pp - 1), cfg.pp - 1}
    return all(stage_memory(arch, cfg, i, stack, memo).total_bytes <= budget_gb * 1e9
               for i in stages)


class _TooBig:
    """Layouts already known not to fit. For a fixed layout and micro-batch the fullest GPU
    never needs less memory with a recomputation mode that keeps more (only the stashed
    activations change), so one failure rules out the modes that keep more, without
    computing them. A larger micro-batch is not ruled out with it: it stashes more per
    micro-batch but makes fewer of them, and a stack that accumulates each chunk's gradient
    in FP32 until its last micro-batch holds fewer such chunks at the peak (Llama 3's
    interleaved layouts on 16,384 GPUs fit at micro-batch 2 but not 1)."""

    def __init__(self) -> None:
        self.failed: dict[tuple[int, ...], list[tuple[int, int]]] = {}

    @staticmethod
    def _key(cfg: ParallelConfig) -> tuple[int, ...]:
        return (cfg.tp, cfg.cp, cfg.pp, cfg.dp, cfg.ep, cfg.expert_tp, cfg.virtual_stages,
                cfg.zero_stage, cfg.shard_dp)

    def rules_out(self, cfg: ParallelConfig) -> bool:
        rank = _RECOMPUTE_MEMORY_RANK[cfg.activation_recompute]
        return any(rank >= r and cfg.micro_batch == b
                   for r, b in self.failed.get(self._key(cfg), ()))

    def add(self, cfg: ParallelConfig) -> None:
        rank = _RECOMPUTE_MEMORY_RANK[cfg.activation_recompute]
        self.failed.setdefault(self._key(cfg), []).append((rank, cfg.micro_batch))


def recommend(arch: models.Architecture, n_gpus: int, global_batch_seqs: int, seq_len: int,
              gpu: hardware.GPU = hardware.H100_SXM, cluster: hardware.Cluster | None = None,
              memory_budget_gb: float | None = None,
              zero_stages: tuple[int, ...] = ZERO_CHOICES,
              top: int = 5, stack: Stack = MODERN,
              recompute_modes: tuple[str, ...] = RECOMPUTE_MODES,
              hybrid_sharding: bool = False, exhaustive: bool = False) -> Search:
    """The ``top`` fastest valid layouts for ``arch`` on ``n_gpus`` of ``gpu``, by predicted
    step time, with the number of layouts judged. ``best`` is empty when nothing fits.
    ``hybrid_sharding`` also searches each ZeRO layout with its state sharded over one
    node's data-parallel ranks and replicated across nodes (FSDP's ``HYBRID_SHARD``).
    ``exhaustive`` judges every layout and estimates every valid one from scratch, with
    neither the recomputation rule, the sharing nor the bound of the module doc: the same
    result, slower; the reference they are checked and timed against."""
    positive_int("n_gpus", n_gpus)
    positive_int("global_batch_seqs", global_batch_seqs)
    positive_int("seq_len", seq_len)
    positive_int("top", top)
    check_inputs(arch, gpu)
    budget = (gpu.memory_bytes / 1e9 if memory_budget_gb is None
              else positive("memory_budget_gb", memory_budget_gb))
    if not zero_stages or not set(zero_stages) <= {0, 1, 2, 3}:
        raise ValueError("zero_stages must be a non-empty choice among 0, 1, 2, 3, "
                         f"got {zero_stages!r}")
    cluster = cluster or hardware.default_cluster(gpu)
    if cluster.gpu != gpu:
        raise ValueError(f"the GPU is {gpu.name} but the cluster {cluster.name!r} is built "
                         f"of {cluster.gpu.name}")
    judged, valid = 0, 0
    kept: list[tuple[float, int, int, ParallelConfig, dict[str, float]]] = []  # a heap
    bad = set(recompute_modes) - set(RECOMPUTE_MODES)
    if bad:
        raise ValueError(f"recompute_modes must be among {RECOMPUTE_MODES}, got {sorted(bad)}")
    too_big = _TooBig()
    # what a layout's ZeRO stages share: each stage's work, activations and buffers
    memo: StageMemo | None = None if exhaustive else {}
    held: dict[tuple[object, ...], tuple[float, float]] | None = None if exhaustive else {}
    for cfg in _grid(arch, n_gpus, global_batch_seqs, seq_len, cluster.gpus_per_node,
                     zero_stages, recompute_modes, stack, hybrid_sharding):
        judged += 1
        if ((not exhaustive and too_big.rules_out(cfg))
                or structural_problems(arch, cfg, None, cluster.gpus_per_node, stack)):
            continue
        if not fits_memory(arch, cfg, budget, stack, held):
            too_big.add(cfg)
            continue
        valid += 1
        # a layout whose bound is already slower than the slowest one kept cannot enter
        if (memo is not None and len(kept) == top and -kept[0][0] < step_lower_bound_s(
                arch, cfg, gpu, cluster, stack, memo) * (1 - _BOUND_ROUNDING)):
            continue
        seconds = breakdown_s(arch, cfg, gpu, cluster, stack, memo)
        # the fastest first; equal times: fewer model-parallel GPUs, then the grid's order
        item = (-sum(seconds.values()), -cfg.tp * cfg.pp, -judged, cfg, seconds)
        if len(kept) < top:
            heapq.heappush(kept, item)
        elif item[:3] > kept[0][:3]:
            heapq.heapreplace(kept, item)
    ranked = sorted(kept, key=lambda item: item[:3], reverse=True)
    groups = tie_groups([-item[0] for item in ranked])
    best = tuple(Ranked(i, cfg, summarise(arch, cfg, gpu, seconds), group)
                 for i, ((_, _, _, cfg, seconds), group) in enumerate(
                     zip(ranked, groups, strict=True), start=1))
    return Search(candidates=judged, valid=valid, best=best)


def why_faster(fast: StepEstimate, slow: StepEstimate,
               top: int = 3) -> list[tuple[str, float]]:
    """The costs that make ``slow`` slower than ``fast``: (name, extra seconds per step),
    largest first, only those where ``slow`` pays more."""
    extra = {k: slow.breakdown[k] - fast.breakdown[k] for k in fast.breakdown}
    return sorted(((k, v) for k, v in extra.items() if v > 0), key=lambda kv: -kv[1])[:top]
