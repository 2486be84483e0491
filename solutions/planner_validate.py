"""5D-parallelism planner, part 3: is a layout possible at all?

:func:`validate` returns a list of human-readable problems (empty = the layout works).
It checks that the GPUs multiply out (``tp x cp x pp x dp = n_gpus``), that each TP group
sits inside one NVLink node, that heads, KV heads, FFN width, sequence and batch split
evenly, that expert parallelism fits inside data parallelism, and that the busiest GPU's
memory (:mod:`solutions.planner_memory`) fits the budget. The step-time model
(:mod:`solutions.performance`) and the planner (:mod:`solutions.planner`) both use it.
"""

from __future__ import annotations

from solutions import llama3, models
from solutions._checks import positive, positive_int
from solutions.planner_memory import ParallelConfig, memory_per_gpu

DEFAULT_BUDGET_GB = 80.0  # decimal GB; an "80GB" H100 holds 80 GiB = 85.9 GB (see hardware)


def _layout_problems(arch: models.Architecture, cfg: ParallelConfig,
                     n_gpus: int | None, gpus_per_node: int) -> list[str]:
    problems = []
    if n_gpus is not None and cfg.n_gpus != n_gpus:
        problems.append(f"TP x CP x PP x DP = {cfg.tp} x {cfg.cp} x {cfg.pp} x {cfg.dp} = "
                        f"{cfg.n_gpus:,} GPUs, but the cluster has {n_gpus:,}.")
    if cfg.tp > gpus_per_node or gpus_per_node % cfg.tp:
        problems.append(f"TP={cfg.tp} does not fit inside one {gpus_per_node}-GPU node: its "
                        "all-reduces (4 per layer per micro-batch) would cross the slower "
                        "inter-node network.")
    if cfg.pp > arch.n_layers:
        problems.append(f"PP={cfg.pp} stages but only {arch.n_layers} layers: some stages "
                        "would be empty.")
    elif min(llama3.layers_per_stage(arch.n_layers, cfg.pp)) < cfg.virtual_stages:
        problems.append(f"With PP={cfg.pp} some stage has fewer than virtual_stages="
                        f"{cfg.virtual_stages} layers to split into interleaved chunks.")
    if cfg.virtual_stages > 1 and cfg.grad_accum < cfg.pp:
        problems.append(f"Interleaving (virtual_stages={cfg.virtual_stages}) needs at least "
                        f"PP={cfg.pp} micro-batches per step to fill the pipeline, but m = "
                        f"{cfg.grad_accum} (Narayanan et al. 2021, §2.2.2).")
    return problems


def _split_problems(arch: models.Architecture, cfg: ParallelConfig) -> list[str]:
    problems = []
    for what, size in (("query heads", arch.n_heads), ("FFN columns", arch.d_ffn)):
        if size % cfg.tp:
            problems.append(f"TP={cfg.tp} does not divide the {size:,} {what}.")
    if arch.n_kv_heads % cfg.tp and cfg.tp % arch.n_kv_heads:
        problems.append(f"TP={cfg.tp} and the {arch.n_kv_heads} KV heads: neither divides the "
                        "other, so KV heads cannot be split or replicated evenly.")
    chunks = cfg.tp * cfg.cp * (2 if cfg.cp > 1 else 1)
    if cfg.seq_len % chunks:
        why = ("TP x CP x 2: each CP rank takes two chunks for load balance, Llama 3 §3.3.2"
               if cfg.cp > 1 else "sequence parallelism splits it TP ways")
        problems.append(f"Sequence length {cfg.seq_len:,} does not split into {chunks} equal "
                        f"chunks ({why}).")
    return problems


def _expert_problems(arch: models.Architecture, cfg: ParallelConfig) -> list[str]:
    if arch.moe is None:
        return [f"EP={cfg.ep} but {arch.name} is dense: it has no experts."] if cfg.ep > 1 else []
    problems = []
    if arch.moe.n_routed_experts % cfg.ep:
        problems.append(f"EP={cfg.ep} does not divide the {arch.moe.n_routed_experts} routed "
                        "experts.")
    if cfg.dp % cfg.ep:
        problems.append(f"EP={cfg.ep} does not divide DP={cfg.dp}: expert-parallel groups are "
                        "carved out of the data-parallel group.")
    return problems


def _memory_problems(arch: models.Architecture, cfg: ParallelConfig,
                     budget_gb: float) -> list[str]:
    mem = memory_per_gpu(arch, cfg).as_gb()
    if mem["total"] <= budget_gb:
        return []
    detail = ", ".join(f"{k} {v:.1f}" for k, v in mem.items() if k != "total")
    return [f"Needs {mem['total']:.1f} GB per GPU ({detail}) but the budget is "
            f"{budget_gb:g} GB."]


def structural_problems(arch: models.Architecture, cfg: ParallelConfig,
                        n_gpus: int | None = None, gpus_per_node: int = 8) -> list[str]:
    """The problems of :func:`validate` that do not depend on memory: GPU count, TP inside
    a node, stages, even splits of heads, FFN, sequence and experts."""
    problems = _layout_problems(arch, cfg, n_gpus, gpus_per_node)
    return problems + _split_problems(arch, cfg) + _expert_problems(arch, cfg)


def validate(arch: models.Architecture, cfg: ParallelConfig, n_gpus: int | None = None,
             gpus_per_node: int = 8, memory_budget_gb: float = DEFAULT_BUDGET_GB,
             global_batch_seqs: int | None = None) -> list[str]:
    """Every reason ``cfg`` cannot train ``arch``; an empty list means it can.

    The Llama 3 405B layout (TP 8, CP 1, PP 16, DP 128, 16 micro-batches of one 8,192-token
    sequence, ZeRO-1, full recomputation) on 16,384 GPUs returns ``[]``.
    """
    positive_int("gpus_per_node", gpus_per_node)
    positive("memory_budget_gb", memory_budget_gb)
    problems = structural_problems(arch, cfg, n_gpus, gpus_per_node)
    if global_batch_seqs is not None and cfg.global_batch_seqs != global_batch_seqs:
        problems.append(f"DP x micro-batch x grad-accum = {cfg.dp} x {cfg.micro_batch} x "
                        f"{cfg.grad_accum} = {cfg.global_batch_seqs:,} sequences, but the "
                        f"batch is {global_batch_seqs:,}.")
    if cfg.pp <= arch.n_layers:
        problems += _memory_problems(arch, cfg, memory_budget_gb)
    return problems
