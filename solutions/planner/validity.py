"""5D-parallelism planner: can a layout be built at all, and does it fit?

:func:`rejections` names every reason a layout cannot train a model on the given software
(``stack``), each with a sentence that says what was expected; :func:`validate` returns the
sentences (empty = the layout works). The step-time model (:mod:`solutions.performance`),
:func:`solutions.planner.search.recommend` and the capstone all use it. Reasons:

* ``gpus``: ``tp x cp x pp x dp`` is not the cluster's GPU count;
* ``gpu``: the GPU named is not the cluster's GPU;
* ``tp_in_node``: a TP group leaves its NVLink domain (TP must divide the GPUs per node);
* ``stages``: more pipeline stages than layers;
* ``chunks``: the interleaved schedule's v chunks do not divide each stage's layer slots
  (:mod:`solutions.layout`; Megatron-LM asserts it, ``megatron/training/arguments.py``),
  unless the stack builds uneven chunks (then the bubble is paced by the largest one), or a
  stage has fewer slots than chunks;
* ``interleave_m``: interleaving with fewer micro-batches than stages; current Megatron-Core
  needs m >= p (micro-batch groups of N in [p, m],
  ``megatron/core/pipeline_parallel/schedules.py``; older releases needed m to be a multiple
  of p); Llama 3's modified schedule accepts m < p (§3.3.2), so a stack may allow it;
* ``heads``: d_model not divisible by the query heads; TP not dividing the query heads, or
  the K/V heads: training frameworks split K/V heads over TP and require TP to divide them
  (Megatron-Core ``attention.py``: ``divide(num_query_groups, tp_size)``); replicating K/V
  heads when TP is larger is what inference engines (vLLM) do;
* ``ffn``, ``sequence``, ``experts``: the FFN, the sequence (TP x CP chunks, two per CP
  rank) or the experts do not split evenly, or the expert groups do not tile the stage (EP
  dividing DP, or with MoE parallel folding EP x ETP dividing TP x CP x DP,
  ``Stack.folded_expert_groups``);
* ``batch``: ``dp x micro_batch x grad_accum`` is not the global batch;
* ``memory``: the fullest GPU (:mod:`solutions.planner.memory`) exceeds the budget.

Some of these are advice, not impossibility: published runs trained with TP across two
nodes (BigScience and Megatron-DeepSpeed TP = 16 sweeps), with K/V heads replicated over
TP, with FFN or sequence splits that are not equal, with chunks of unequal size. The
step-time model can still price such a layout (a TP group that crosses nodes pays the
network; unequal chunks pace the bubble by the largest), so
:func:`solutions.performance.estimate` reports the :data:`ADVISORY` reasons as warnings
and refuses only the rest (:func:`split_advice`).
"""

from __future__ import annotations

from solutions import hardware, models
from solutions._checks import positive, positive_int
from solutions.layout import ParallelConfig, layers_per_stage, stage_slots
from solutions.planner.memory import memory_per_gpu
from solutions.stack import MODERN, Stack

DEFAULT_BUDGET_GB = 80.0  # decimal GB; an "80GB" H100 holds 80 GiB = 85.9 GB (see hardware)

Problems = list[tuple[str, str]]

#: Reasons a layout is unusual but still has a step time: a framework's rule or an
#: inefficiency, not a missing quantity (module doc).
ADVISORY: frozenset[str] = frozenset({"tp_in_node", "kv_heads", "ffn", "sequence",
                                      "uneven_chunks"})


def split_advice(problems: Problems) -> tuple[list[str], list[str]]:
    """(refusals, warnings): the sentences of ``problems`` whose reason is not in
    :data:`ADVISORY`, and those whose reason is."""
    refusals = [text for reason, text in problems if reason not in ADVISORY]
    return refusals, [text for reason, text in problems if reason in ADVISORY]


def _count(name: str, value: object) -> None:
    """ValueError unless ``value`` is a whole count (an int, not a bool or a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} is a count of GPUs and must be an int, got {value!r} "
                         "(a memory budget goes in memory_budget_gb=...)")


def _layout_problems(arch: models.Architecture, cfg: ParallelConfig, n_gpus: int | None,
                     gpus_per_node: int) -> Problems:
    problems = []
    if n_gpus is not None and cfg.n_gpus != n_gpus:
        problems.append(("gpus", f"TP x CP x PP x DP = {cfg.tp} x {cfg.cp} x {cfg.pp} x "
                         f"{cfg.dp} = {cfg.n_gpus:,} GPUs, but the cluster has {n_gpus:,}."))
    if cfg.tp > gpus_per_node or gpus_per_node % cfg.tp:
        problems.append(("tp_in_node", f"TP={cfg.tp} does not fit inside one "
                         f"{gpus_per_node}-GPU node: its all-reduces (4 per layer per "
                         "micro-batch) cross the slower inter-node network."))
    if cfg.pp > arch.n_layers:
        problems.append(("stages", f"PP={cfg.pp} stages but only {arch.n_layers} layers: "
                         "some stages would be empty."))
    return problems


def _chunk_problems(arch: models.Architecture, cfg: ParallelConfig, stack: Stack) -> Problems:
    v, p, m = cfg.virtual_stages, cfg.pp, cfg.schedule_microbatches
    if v == 1 or p > arch.n_layers:
        return []
    problems = []
    if p == 1:
        problems.append(("chunks", f"virtual_stages={v} needs a pipeline: with PP=1 there "
                         "is nothing to interleave."))
    slots = stage_slots(arch.n_layers, p)
    if min(slots) < v:
        problems.append(("chunks", f"With PP={p} a stage holds "
                         f"{min(layers_per_stage(arch.n_layers, p))} layers, fewer than "
                         f"virtual_stages={v} chunks."))
    elif any(s % v for s in slots) and not stack.uneven_chunks:
        problems.append(("uneven_chunks", f"v={v} does not divide the layers of each stage "
                         f"(layer slots per stage {sorted(set(slots))}): the chunks are "
                         "unequal, which Megatron-LM rejects; choose v dividing them."))
    if p > 1 and m < p and not stack.interleave_m_below_p:
        problems.append(("interleave_m", f"Interleaving (v={v}) with m = {m} micro-batches "
                         f"and PP={p}: Megatron-Core's interleaved schedule needs m >= p "
                         "(Llama 3's modified schedule allows fewer)."))
    return problems


def _split_problems(arch: models.Architecture, cfg: ParallelConfig) -> Problems:
    problems = []
    if arch.head_dim_override is None and arch.d_model % arch.n_heads:
        problems.append(("heads", f"d_model={arch.d_model:,} is not divisible by the "
                         f"{arch.n_heads} heads."))
    if arch.n_heads % cfg.tp:
        problems.append(("heads", f"TP={cfg.tp} does not divide the {arch.n_heads} query "
                         "heads."))
    if arch.mla is None and arch.n_kv_heads % cfg.tp:
        problems.append(("kv_heads", f"TP={cfg.tp} does not divide the {arch.n_kv_heads} K/V "
                         "heads: training frameworks split K/V heads over TP (replication "
                         "is an inference-engine technique)."))
    if arch.d_ffn % cfg.tp:
        problems.append(("ffn", f"TP={cfg.tp} does not divide the {arch.d_ffn:,} FFN columns."))
    chunks = cfg.tp * cfg.cp * (2 if cfg.cp > 1 else 1)
    if cfg.seq_len % chunks:
        why = ("TP x CP x 2: each CP rank takes two chunks for load balance, Llama 3 §3.3.2"
               if cfg.cp > 1 else "sequence parallelism splits it TP ways")
        problems.append(("sequence", f"Sequence length {cfg.seq_len:,} does not split into "
                         f"{chunks} equal chunks ({why})."))
    return problems


def _expert_problems(arch: models.Architecture, cfg: ParallelConfig,
                     folded: bool) -> Problems:
    if arch.moe is None:
        return [("experts", f"EP={cfg.ep} but {arch.name} is dense: it has no experts.")
                ] if cfg.ep > 1 else []
    problems = []
    if arch.moe.n_routed_experts % cfg.ep:
        problems.append(("experts", f"EP={cfg.ep} does not divide the "
                         f"{arch.moe.n_routed_experts} routed experts."))
    if not folded:
        if cfg.dp % cfg.ep:
            problems.append(("experts", f"EP={cfg.ep} does not divide DP={cfg.dp}: without "
                             "MoE parallel folding (Stack.folded_expert_groups, Megatron-Core "
                             "from 2025) expert-parallel groups are carved out of the "
                             "data-parallel group."))
        if cfg.expert_tp != cfg.tp:
            problems.append(("experts", f"ETP={cfg.expert_tp} differs from TP={cfg.tp}: "
                             "without MoE parallel folding (Stack.folded_expert_groups) "
                             "experts are split over the layer's TP group."))
    span, ranks = cfg.ep * cfg.expert_tp, cfg.tp * cfg.cp * cfg.dp
    if folded and ranks % span:
        problems.append(("experts", f"EP x ETP = {cfg.ep} x {cfg.expert_tp} = {span} does not "
                         f"divide TP x CP x DP = {ranks}: each stage's ranks are regrouped "
                         "for its MoE layers into expert groups of EP x ETP ranks "
                         "(Megatron-Core's MoE parallel folding)."))
    if arch.moe.expert_d_ffn % cfg.expert_tp:
        problems.append(("experts", f"ETP={cfg.expert_tp} does not divide the "
                         f"{arch.moe.expert_d_ffn:,} columns of an expert's FFN."))
    return problems


def _hardware_problems(gpu: hardware.GPU | None, cluster: hardware.Cluster | None) -> Problems:
    if gpu is None or cluster is None or cluster.gpu == gpu:
        return []
    return [("gpu", f"The GPU is {gpu.name} but the cluster {cluster.name!r} is built of "
             f"{cluster.gpu.name}.")]


def structural_rejections(arch: models.Architecture, cfg: ParallelConfig,
                          n_gpus: int | None = None, gpus_per_node: int = 8,
                          stack: Stack = MODERN) -> Problems:
    """(reason, sentence) for every problem that does not depend on memory or the batch."""
    positive_int("gpus_per_node", gpus_per_node)
    if n_gpus is not None:
        _count("n_gpus", n_gpus)
    _count("gpus_per_node", gpus_per_node)
    return (_layout_problems(arch, cfg, n_gpus, gpus_per_node)
            + _chunk_problems(arch, cfg, stack) + _split_problems(arch, cfg)
            + _expert_problems(arch, cfg, stack.folded_expert_groups))


def structural_problems(arch: models.Architecture, cfg: ParallelConfig,
                        n_gpus: int | None = None, gpus_per_node: int = 8,
                        stack: Stack = MODERN) -> list[str]:
    """The sentences of :func:`structural_rejections`."""
    return [text for _, text in structural_rejections(arch, cfg, n_gpus, gpus_per_node, stack)]


def _memory_problems(arch: models.Architecture, cfg: ParallelConfig, budget_gb: float,
                     stack: Stack) -> Problems:
    mem = memory_per_gpu(arch, cfg, stack).as_gb()
    if mem["total"] <= budget_gb:
        return []
    detail = ", ".join(f"{k} {v:.1f}" for k, v in mem.items() if k != "total")
    return [("memory", f"Needs {mem['total']:.1f} GB per GPU ({detail}) but the budget is "
             f"{round(budget_gb, 1):g} GB.")]


def rejections(arch: models.Architecture, cfg: ParallelConfig, n_gpus: int | None = None,
               gpus_per_node: int = 8, memory_budget_gb: float | None = DEFAULT_BUDGET_GB,
               global_batch_seqs: int | None = None, stack: Stack = MODERN,
               gpu: hardware.GPU | None = None,
               cluster: hardware.Cluster | None = None) -> Problems:
    """Every (reason, sentence) why ``cfg`` cannot train ``arch`` on ``stack``; memory is
    judged only when the layout exists (its stages and chunks can be built) and
    ``memory_budget_gb`` is not None."""
    problems = structural_rejections(arch, cfg, n_gpus, gpus_per_node, stack)
    problems += _hardware_problems(gpu, cluster)
    if global_batch_seqs is not None and cfg.global_batch_seqs != global_batch_seqs:
        problems.append(("batch", f"DP x micro-batch x grad-accum = {cfg.dp} x "
                         f"{cfg.micro_batch} x {cfg.grad_accum} = {cfg.global_batch_seqs:,} "
                         f"sequences, but the batch is {global_batch_seqs:,}."))
    buildable = not any(reason in ("stages", "chunks") for reason, _ in problems)
    if memory_budget_gb is not None and buildable:
        problems += _memory_problems(arch, cfg, positive("memory_budget_gb", memory_budget_gb),
                                     stack)
    return problems


def validate(arch: models.Architecture, cfg: ParallelConfig, n_gpus: int | None = None,
             gpus_per_node: int = 8, memory_budget_gb: float | None = DEFAULT_BUDGET_GB,
             global_batch_seqs: int | None = None, stack: Stack = MODERN,
             gpu: hardware.GPU | None = None,
             cluster: hardware.Cluster | None = None) -> list[str]:
    """Every reason ``cfg`` cannot train ``arch``; an empty list means it can.

    Llama 3 405B as published (TP 8, CP 1, PP 16, DP 128, 16 micro-batches of one 8,192-token
    sequence, v = 8, no recomputation, Llama 3's FSDP, ``stack=solutions.stack.LLAMA3``) on
    16,384 GPUs returns ``[]``.
    """
    return [text for _, text in rejections(arch, cfg, n_gpus, gpus_per_node, memory_budget_gb,
                                           global_batch_seqs, stack, gpu, cluster)]
