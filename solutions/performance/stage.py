"""Step-time model: the seconds one micro-batch takes on one pipeline stage, and which stage
is the busiest (:mod:`solutions.performance.model` composes the step from it).

A stage's work per micro-batch is its layers' forward and backward (matmuls at the
efficiency of their per-GPU shape, fused attention at its kernel's rate, element-wise
kernels and a MoE layer's token copies at HBM speed, the FP8 casts), the recomputation the
layout asks for, and the TP, CP and EP communication of its layers; the model module's
docstring says where each comes from.

**What the sharding of the state changes.** Of all that, only the separate
gradient-accumulation pass (:func:`solutions.performance.passes.grad_accumulation_s`)
depends on how the model state is sharded (the ZeRO stage and hybrid sharding's
``dp_shard``): a stage that reduce-scatters every micro-batch's gradient accumulates none.
So the rest, :class:`Work`, is the same for the four ZeRO stages of a layout, and a search
that judges them all may compute it once: :func:`stage_time` takes a ``memo`` (a dict owned
by one search, so that constants the fit sets between searches never meet a stale entry)
keyed by everything else the work reads
(:meth:`solutions.layout.ParallelConfig.sharding_free_key`);
``tests/solutions/test_search_exact.py`` checks that the search ranks exactly what
estimating every layout does.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions import hardware, models
from solutions.llama3 import layers_per_stage
from solutions.performance import flops as pf
from solutions.performance.comm import LayerComm, Links, layer_comm_s
from solutions.performance.host import expert_launch_s
from solutions.performance.passes import fp8_cast_s, grad_accumulation_s
from solutions.performance.routing import routing_bytes_per_token
from solutions.planner.memory import ParallelConfig, stage_layer_kinds
from solutions.stack import Stack

#: Share of overlapped communication time that still slows the computation it hides under:
#: NCCL kernels occupy SMs and HBM bandwidth while a GEMM runs (Megatron-Core's TP overlap
#: reserves SMs for communication, ``--tp-comm-overlap-cfg``; Jangda et al. 2022, CoCoNet,
#: §2 measure the contention). Fitted on the fitting third of the validation set.
OVERLAP_INTERFERENCE = 0.35

#: A memo of :class:`Work` for :func:`stage_time`, owned by one search.
StageMemo = dict[tuple[object, ...], "Work"]

@dataclass(frozen=True)
class Work:
    """Seconds per micro-batch on one stage that do not depend on the state's sharding."""

    forward: float
    attn_bwd_extra: float
    recompute: float
    #: the FP8 casts' and the MoE routing's backward minus twice their forward (the
    #: backward casts and routes once, not twice the forward's bytes)
    backward_passes: float
    comm: LayerComm
    layers: int
    tp_exposed: float
    #: waiting on the host to launch the experts' GEMMs (:mod:`solutions.performance.host`)
    host_exposed: float = 0.0


@dataclass(frozen=True)
class Stage:
    """Seconds per micro-batch on one stage (whole stage, all v chunks)."""

    compute: float
    recompute: float
    backward: float
    forward: float
    comm: LayerComm
    layers: int
    tp_exposed: float
    ep_exposed: float
    host_exposed: float = 0.0


def overlapped(comm_s: float, under_s: float) -> float:
    """Seconds ``comm_s`` of communication run under ``under_s`` of computation adds: what
    the computation cannot cover, plus :data:`OVERLAP_INTERFERENCE` of the part it does."""
    return max(0.0, comm_s - under_s) + OVERLAP_INTERFERENCE * min(comm_s, under_s)


def _work(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU, stack: Stack,
          links: Links, stage: int) -> Work:
    dense_layers, moe_layers = stage_layer_kinds(arch, cfg.pp)[stage]
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp / cfg.tp  # per GPU share of the work
    eff = pf.matmul_efficiency(gpu, *pf.layer_gemm_shape(arch, cfg))
    linear = stack.linear_precision  # the layers' GEMMs; the output head stays 16-bit
    linear_eff = (eff if linear == "bf16" else
                  pf.matmul_efficiency(gpu, *pf.layer_gemm_shape(arch, cfg), precision=linear))
    attn = pf.attention_flops_per_token(arch, cfg.seq_len, causal=stack.fused_attention)
    matmul = (dense_layers * 2 * pf.matmul_params_per_token(arch, False)
              + moe_layers * 2 * (pf.matmul_params_per_token(arch, True) if moe_layers else 0))
    routed = moe_layers * 2 * pf.routed_params_per_token(arch)
    layers = dense_layers + moe_layers
    logits = pf.logits_flops_per_token(arch) if stage == cfg.pp - 1 else 0.0
    flops_s = tokens / (gpu.peak_flops * eff)
    linear_s = tokens / (gpu.peak_flops * linear_eff)
    # routed experts run at the efficiency of their own, smaller GEMMs
    expert_s = (tokens / (gpu.peak_flops * pf.matmul_efficiency(
        gpu, *pf.expert_gemm_shape(arch, cfg), precision=linear)) if routed else 0.0)
    gemm_s = (matmul - routed) * linear_s + routed * expert_s
    host = (expert_launch_s(arch, cfg, moe_layers, routed * expert_s)
            if stack.expert_gemm_loop else 0.0)
    cast_fwd, cast_bwd = fp8_cast_s(arch, cfg, gpu, stack, dense_layers, moe_layers)
    route_fwd, route_bwd = (pf.hbm_seconds(gpu, moe_layers * tokens * b) for b in
                            routing_bytes_per_token(arch, cfg, stack.ep_node_dedup,
                                                    stack.expert_routing))
    passes = pf.ELEMENTWISE_PASSES[stack.elementwise]
    elementwise = pf.hbm_seconds(gpu, passes * layers
                                 * pf.elementwise_bytes_per_layer(
                                     arch, cfg, stack.sequence_parallel, stack.fused_attention))
    attn_s = tokens / (gpu.peak_flops * (pf.attention_efficiency(gpu, stack.attention_kernel,
                                                                   cfg.seq_len)
                                         if stack.fused_attention
                                         else eff))
    attn_fwd = layers * attn * attn_s
    # a fused kernel's backward recomputes the scores: 2.5x the forward's FLOPs, not 2x
    attn_bwd_extra = ((pf.FUSED_ATTENTION_BACKWARD_RATIO - 2.0) * attn_fwd
                      if stack.fused_attention else 0.0)
    layer_fwd = gemm_s + attn_fwd + elementwise / 3 + cast_fwd + route_fwd
    forward = layer_fwd + logits * flops_s
    if cfg.activation_recompute == "full":
        recompute = layer_fwd
    elif cfg.activation_recompute == "selective" and stack.selective_recompute == "attention":
        recompute = layers * attn * attn_s
    elif cfg.activation_recompute == "selective":  # every second matmul, all element-wise ops
        alternate = (dense_layers * 2 * pf.alternate_matmul_params_per_token(arch, False)
                     + moe_layers * 2 * pf.alternate_matmul_params_per_token(arch, True))
        recompute = alternate * linear_s + elementwise / 3
    else:
        recompute = 0.0
    comm = layer_comm_s(arch, cfg, links, stack.sequence_parallel, dense_layers, moe_layers,
                        stack.ep_node_dedup, stack.repeats_kv_heads, stack.expert_routing)
    tp = comm.tp
    if stack.tp_comm_overlap:  # chunks of the TP collectives run under the GEMMs they feed
        gemm = gemm_s * (3 + (cfg.activation_recompute == "full"))
        tp = overlapped(tp, gemm)
    # the backward is twice the forward's FLOPs but casts only the output gradients, and
    # routes the tokens' gradients once (its own byte count)
    return Work(forward=forward, attn_bwd_extra=attn_bwd_extra, recompute=recompute,
                backward_passes=cast_bwd - 2 * cast_fwd + route_bwd - 2 * route_fwd,
                comm=comm, layers=layers, tp_exposed=tp, host_exposed=host)


def work(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU, stack: Stack,
         cluster: hardware.Cluster, stage: int, memo: StageMemo | None = None,
         links: Links | None = None) -> Work:
    """The sharding-free seconds of ``stage`` (:class:`Work`), from ``memo`` when a layout
    that differs only in how the state is sharded put them there (module doc)."""
    def compute() -> Work:
        return _work(arch, cfg, gpu, stack, links or Links.of(cluster, cfg, stack), stage)
    if memo is None:
        return compute()
    key = (arch, gpu, stack, cluster, stage, cfg.sharding_free_key())
    found = memo.get(key)
    if found is None:
        found = memo[key] = compute()
    return found


def stage_time(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
               stack: Stack, links: Links, stage: int, memo: StageMemo | None = None) -> Stage:
    """Seconds per micro-batch on ``stage`` (module doc); ``memo`` shares the sharding-free
    :class:`Work` between layouts that differ only in how the state is sharded."""
    w = work(arch, cfg, gpu, stack, links.cluster, stage, memo, links)
    accumulate = grad_accumulation_s(arch, cfg, gpu, stack, stage) + w.backward_passes
    compute = 3 * w.forward + w.attn_bwd_extra + accumulate
    ep = w.comm.ep
    if stack.ep_comm_overlap:  # under another micro-batch's forward and backward
        ep = overlapped(ep, compute)
    return Stage(compute=compute, recompute=w.recompute,
                 backward=2 * w.forward + w.attn_bwd_extra + w.recompute + accumulate,
                 forward=w.forward, comm=w.comm,
                 layers=w.layers, tp_exposed=w.tp_exposed, ep_exposed=ep,
                 host_exposed=w.host_exposed)


def work_lower_bound_s(w: Work) -> float:
    """Seconds per micro-batch no larger than :func:`per_microbatch_s` of the stage whose
    work ``w`` is: all of it but the accumulation pass and the EP all-to-alls, both >= 0."""
    return (3 * w.forward + w.attn_bwd_extra + w.backward_passes + w.recompute
            + w.tp_exposed + w.comm.cp + w.host_exposed)


def per_microbatch_s(st: Stage) -> float:
    """Seconds of one micro-batch on the stage: compute, recompute, exposed communication,
    waiting on the host."""
    return (st.compute + st.recompute + st.tp_exposed + st.comm.cp + st.ep_exposed
            + st.host_exposed)


def busiest_stage(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                  stack: Stack, links: Links, memo: StageMemo | None = None,
                  ) -> tuple[int, Stage]:
    """The stage with the most work per micro-batch: among the stages with the most layers,
    the first of each (dense, MoE) mix, and the last stage (it adds the output head)."""
    counts = layers_per_stage(arch.n_layers, cfg.pp)
    kinds = stage_layer_kinds(arch, cfg.pp)
    most = max(counts)
    first_of_kind = {kinds[i]: i for i in reversed(range(cfg.pp)) if counts[i] == most}
    candidates = sorted(set(first_of_kind.values()) | {cfg.pp - 1})
    times = {i: stage_time(arch, cfg, gpu, stack, links, i, memo) for i in candidates}
    best = max(times, key=lambda i: per_microbatch_s(times[i]))
    return best, times[best]
