"""Step-time model: how long one optimizer step of a layout takes, and why.

:func:`estimate` composes the chapters' formulas into the time of one step on the busiest
GPU (the pipeline stage with the most work, :mod:`solutions.performance.stage`) for a
training ``stack`` (:mod:`solutions.stack`), split into named costs that add up to it:

* ``compute``: forward + backward of ``m`` micro-batches (:mod:`solutions.performance.flops`:
  matmuls at the efficiency of their per-GPU shape, fused attention at its kernel's rate
  (its backward 2.5 forwards, :data:`solutions.performance.flops.FUSED_ATTENTION_BACKWARD_RATIO`),
  element-wise kernels at HBM speed, a MoE layer's copies of its tokens to their experts
  and back at HBM speed, :mod:`solutions.performance.routing`), plus a
  gradient-accumulation pass per micro-batch where the stack's GEMMs do not accumulate;
* ``recompute``: the extra forward work of ``"selective"`` or ``"full"`` recomputation;
* ``tp``: per layer and micro-batch, 2 all-reduces forward (again when recomputed) and 2
  backward of the ``[b s/cp, h]`` activation over the TP group, half that for a MoE layer
  whose routed experts are whole on each GPU (Shoeybi et al. 2019, §3;
  with sequence parallelism a reduce-scatter + all-gather of the same volume, Korthikanti
  et al. 2022, §4.2.2), ring alpha-beta time at NVLink speed, on the critical path; with
  ``tp_comm_overlap`` only what the GEMMs cannot cover plus the interference
  (:data:`solutions.performance.stage.OVERLAP_INTERFERENCE`);
* ``cp``: Llama 3's all-gather of K and V (and reduce-scatter of their gradients) over the
  CP group, every layer, "exposed in the critical path" (Dubey et al. 2024, §3.3.2);
* ``ep``: MoE dispatch and combine all-to-alls, forward(s) and backward, and the
  dispatcher's gathers over an expert split across ETP ranks; with
  ``ep_comm_overlap`` only what another micro-batch's computation cannot cover plus the
  interference;
* ``host``: the GPU waiting on the host to launch a MoE layer's routed-expert GEMMs one
  expert at a time, where the stack does (:mod:`solutions.performance.host`);
* ``pp_bubble``: ``(p - 1)/(v m)`` of the per-micro-batch stage time (Narayanan et al.
  2021, §2.2), which includes its TP/CP/EP communication (:func:`pipeline_costs_s`), with
  the v of the layout (:attr:`solutions.layout.Layout.bubble_chunks`: uneven chunks are
  paced by the largest);
* ``pp_send``: each model chunk's activation forward and gradient backward to the next
  stage, ``b s h / (t cp)`` 16-bit values per GPU (scatter/gather, Narayanan §4.1; the whole
  activation, and receives as well as sends, in DeepSpeed's engine), over the network when
  the next stage is on another node; ``(m v + p - 1)`` sends on the critical path (this
  course's count), so interleaving (v > 1) pays v times as many;
* ``dp_exposed``: the gradient reduction (all-reduce or reduce-scatter, plus the
  distributed optimizer's all-gather, over ``dp x cp`` ranks at the group's hierarchical
  bandwidth) minus what hides under compute, bucket by layer (chapter 4's model,
  :func:`solutions.overlap.exposed_comm_ms`);
* ``fsdp_gather``: ZeRO-3/FSDP's parameter all-gathers that do not hide: every micro-batch
  twice when the stack reshards after forward (FSDP FULL_SHARD, DeepSpeed ZeRO-3, which
  hides only half of them), once per step when it does not (Llama 3); how many gathers and
  gradient reductions a step makes (ZeRO-2 and a resharding ZeRO-3 reduce every
  micro-batch's gradients) is the memory model's count
  (:func:`solutions.planner.memory.gathers_per_step`,
  :func:`solutions.planner.memory.grad_reductions_per_step`);
* ``optimizer``: Adam's update, memory-bound, over the parameters each GPU owns.

Everything is in seconds per step. ``model_tflops_per_gpu`` counts 6N-style matmul FLOPs
plus the attention scores, by default causally (half the score matrix, as Megatron-LM
counts it today) or, with ``attention_flops="full"``, all of them (PaLM, Chowdhery et al.
2022, App. B: ``6N + 12 L H Q T``), without recomputation; ``hardware_tflops_per_gpu`` adds the
recomputation (Megatron-LM's "achieved teraFLOP/s"). MFU and HFU divide them by the dense
BF16 peak. How well this predicts published runs: ``docs/validation.md``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from solutions import hardware, models, overlap
from solutions._checks import positive
from solutions.layout import bubble_chunks_of
from solutions.performance import flops as pf
from solutions.performance import stage as ps
from solutions.performance.comm import Links
from solutions.performance.passes import optimizer_s
from solutions.performance.pipeline import pipeline_costs_s, step_time_from_costs
from solutions.performance.stage import Stage, StageMemo, busiest_stage, per_microbatch_s
from solutions.performance.step import StepEstimate
from solutions.planner.memory import (
    ParallelConfig,
    gathers_per_step,
    grad_reductions_per_step,
    stage_gathered_bytes,
    stage_params,
)
from solutions.planner.validity import rejections, split_advice
from solutions.stack import DEEPSPEED_PIPELINE as DEEPSPEED_PIPELINE_STACK
from solutions.stack import DEEPSPEED_ZERO3 as DEEPSPEED_ZERO3_STACK
from solutions.stack import FSDP as FSDP_STACK
from solutions.stack import FSDP2 as FSDP2_STACK
from solutions.stack import LLAMA3, MEGATRON_2021, MODERN, Stack, for_layout

__all__ = ["BREAKDOWN_KEYS", "DEEPSPEED_PIPELINE_STACK", "DEEPSPEED_ZERO3_STACK", "FSDP2_STACK",
           "FSDP_STACK", "LLAMA3", "MEGATRON_2021", "MODERN", "Links", "Stack", "StepEstimate",
           "breakdown_s", "check_inputs", "estimate", "pipeline_costs_s",
           "step_lower_bound_s", "step_time_from_costs", "summarise"]

BREAKDOWN_KEYS: tuple[str, ...] = ("compute", "recompute", "tp", "cp", "ep", "host",
                                   "pp_bubble", "pp_send", "dp_exposed", "fsdp_gather",
                                   "optimizer")


def _hidden(comm_s: float, compute_s: float, buckets: int, hidden_share: float = 1.0,
            ) -> float:
    """Seconds ``comm_s`` of bucketed communication adds to ``compute_s`` it overlaps: the
    bucket model of :func:`solutions.overlap.exposed_comm_ms` on the share that can hide,
    the rest in full, plus :data:`~solutions.performance.stage.OVERLAP_INTERFERENCE` of
    the time that did hide."""
    if comm_s == 0:
        return 0.0
    hideable = comm_s * hidden_share
    exposed = overlap.exposed_comm_ms(buckets, hideable / buckets, compute_s / buckets)
    exposed = min(exposed, hideable)
    return exposed + comm_s - hideable + ps.OVERLAP_INTERFERENCE * (hideable - exposed)


def _dp_seconds(arch: models.Architecture, cfg: ParallelConfig, stack: Stack, links: Links,
                stage: int, st: Stage) -> tuple[float, float]:
    """(exposed gradient reduction, exposed ZeRO-3 gathers) in seconds per step.

    How often the gradients are reduced and the weights gathered comes from the memory
    model (:func:`solutions.planner.memory.grad_reductions_per_step` and
    :func:`solutions.planner.memory.gathers_per_step`), so speed and memory assume the same
    sharding. Each reduction runs under one micro-batch's backward, bucket by layer:
    ZeRO-0 (DDP) all-reduces the accumulated gradients under the last backward (Li et al.
    2020, §3.2.3), ZeRO-1 reduce-scatters them there; ZeRO-2 reduce-scatters every
    micro-batch's gradients as its buckets fill (Rajbhandari et al. 2020, §5.2; DeepSpeed
    ``reduce_scatter`` with ``overlap_comm``), m reductions per step. ZeRO-1/2 then
    all-gather the updated parameters under the next forward with ``param_gather_overlap``,
    exposed otherwise (Megatron-Core ``--overlap-param-gather``). ZeRO-3 resharding after
    forward (FSDP FULL_SHARD, DeepSpeed ZeRO-3) gathers the weights for every micro-batch's
    forward and again for its backward (Zhao et al. 2023, §3.2-3.3; Rajbhandari et al. 2020,
    §7), ``gather_hidden_fraction`` of it able to hide (its prefetch does not depend on
    ``overlap_dp``); without resharding (Llama 3) one gather runs under the first forward.
    Otherwise, without ``overlap_dp`` nothing hides; nor does ZeRO-1 that all-reduces the
    whole gradient after the backward (``Stack.zero1_allreduce``). With hybrid sharding
    (``ParallelConfig.dp_shard``) the collectives run inside a shard group, and each
    reduction adds the all-reduce of the reduced shard across the groups (Zhao et al.
    2023, §3.2.2), hidden or exposed with it.
    """
    if cfg.dp * cfg.cp == 1:
        return 0.0, 0.0
    n = cfg.shard_dp * cfg.cp  # the ranks one copy of the state is sharded over
    params = stage_params(arch, cfg, stage)
    n_expert = cfg.expert_dp

    def collective(bytes_per_element: float) -> float:
        return (links.dp_reduce_scatter_s(params.dense, n, bytes_per_element)
                + links.dp_reduce_scatter_s(params.expert, n_expert, bytes_per_element))

    grad_half = collective(stack.grad_reduce_bytes)  # a reduce-scatter (or all-gather) of grads
    # hybrid sharding: each reduced shard is then all-reduced across the shard groups
    reduce_s = grad_half + links.replica_allreduce_s(params.dense / n, stack.grad_reduce_bytes)
    # the weights gather at the bytes the memory model holds them in (FP8 under fp8_all_gather)
    gather_s = collective(stage_gathered_bytes(arch, cfg, stage, stack) / params.total)
    reductions, gathers = grad_reductions_per_step(cfg, stack), gathers_per_step(cfg, stack)
    # ZeRO-1/2 gather the updated 16-bit weights; ZeRO-0's all-reduce finishes with the
    # all-gather half of its gradients, at their own bytes
    update_gather_s = (grad_half if cfg.zero_stage == 0
                       else gather_s if cfg.zero_stage < 3 else 0.0)
    buckets, h = max(1, st.layers), stack.gather_hidden_fraction
    if cfg.zero_stage == 1 and stack.zero1_allreduce:  # a whole all-reduce, then the gather
        return reduce_s + grad_half + update_gather_s, 0.0
    if gathers > 1:  # resharded: a forward gather, and a backward gather beside the reduction
        rounds = gathers // 2
        fwd = _hidden(gather_s, st.forward, buckets, h)
        bwd = _hidden(gather_s + reduce_s, st.backward, buckets, h)
        grads = _hidden(reduce_s, st.backward, buckets, h)
        return reductions * grads, rounds * max(0.0, fwd + bwd - grads)
    if not stack.overlap_dp:
        return reductions * reduce_s + update_gather_s, gathers * gather_s
    grads = reductions * _hidden(reduce_s, st.backward, buckets)
    if gathers == 1:
        return grads, _hidden(gather_s, st.forward, buckets, h)
    if cfg.zero_stage == 0 or stack.param_gather_overlap:
        under = st.backward if cfg.zero_stage == 0 else st.forward
        return grads + _hidden(update_gather_s, under, buckets), 0.0
    return grads + update_gather_s, 0.0


def breakdown_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                cluster: hardware.Cluster, stack: Stack = MODERN,
                memo: StageMemo | None = None) -> dict[str, float]:
    """Seconds per step per named cost (see the module docstring); no validation. A search
    passes one ``memo`` to all its calls (:func:`solutions.performance.stage.stage_time`)."""
    stack = for_layout(stack, cfg.pp)
    links = Links.of(cluster, cfg, stack)
    stage, st = busiest_stage(arch, cfg, gpu, stack, links, memo)
    m, p, v = cfg.grad_accum, cfg.pp, cfg.virtual_stages
    send = links.pp_send_s(arch, stack.pipeline_scatter_gather,
                           stack.pipeline_grad_scatter_gather)
    send *= 2 if stack.pipeline_blocking_p2p else 1
    paced = bubble_chunks_of(arch.n_layers, p, v)  # = Layout.bubble_chunks, cached
    rounds = cfg.pipeline_rounds  # each run of the schedule fills and drains the pipeline
    bubble, sends = pipeline_costs_s(per_microbatch_s(st), send, p, cfg.schedule_microbatches, v,
                                     stack.interleave_m_below_p, paced)
    bubble, sends = rounds * bubble, rounds * sends
    dp, gathers = _dp_seconds(arch, cfg, stack, links, stage, st)
    return {
        "compute": m * st.compute, "recompute": m * st.recompute,
        "tp": m * st.tp_exposed, "cp": m * st.comm.cp, "ep": m * st.ep_exposed,
        "host": m * st.host_exposed,
        "pp_bubble": bubble, "pp_send": sends,
        "dp_exposed": dp, "fsdp_gather": gathers,
        "optimizer": optimizer_s(arch, cfg, gpu, stage, stack),
    }


def step_lower_bound_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                       cluster: hardware.Cluster, stack: Stack = MODERN,
                       memo: StageMemo | None = None) -> float:
    """Seconds no larger than the step :func:`breakdown_s` adds up to, so that a search can
    pass over a layout that cannot beat the ones it keeps: the micro-batches and the bubble
    at a per-micro-batch time no larger than the busiest stage's (the last stage's
    sharding-free work, :func:`solutions.performance.stage.work_lower_bound_s`; the bubble
    grows with it), every other cost taken as 0 (none is negative)."""
    stack = for_layout(stack, cfg.pp)
    per_mb = ps.work_lower_bound_s(ps.work(arch, cfg, gpu, stack, cluster, cfg.pp - 1, memo))
    bubble, _ = pipeline_costs_s(per_mb, 0.0, cfg.pp, cfg.schedule_microbatches,
                                 cfg.virtual_stages, stack.interleave_m_below_p,
                                 bubble_chunks_of(arch.n_layers, cfg.pp, cfg.virtual_stages))
    return cfg.grad_accum * per_mb + cfg.pipeline_rounds * bubble


#: ``memory_budget_gb`` of :func:`estimate` meaning "the GPU's own capacity".
CAPACITY: Literal["capacity"] = "capacity"
AttentionCount = Literal["causal", "full"]


def estimate(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
             cluster: hardware.Cluster | None = None, stack: Stack | None = None,
             memory_budget_gb: float | Literal["capacity"] | None = CAPACITY,
             attention_flops: AttentionCount = "causal") -> StepEstimate:
    """Predicted step time, throughput, MFU and breakdown of ``cfg`` training ``arch``.

    The global batch is ``dp x micro_batch x grad_accum`` sequences of ``cfg.seq_len``.
    ``cluster`` defaults to :func:`solutions.hardware.default_cluster` of ``gpu``; ``stack``
    (:mod:`solutions.stack`) to Megatron-Core 2024, with a warning saying so.
    ``attention_flops`` chooses how MFU counts the attention scores: ``"causal"`` (half the
    score matrix, Megatron-LM's count) or ``"full"`` (all of it: PaLM App. B, NVIDIA,
    MosaicML, torchtitan); the step time does not depend on it. A stack with
    ``linear_precision="fp8"`` runs the layers' GEMMs in FP8 (ValueError on a GPU without
    FP8 tensor cores); MFU and HFU still divide by the dense BF16 peak, so a layout's MFU in
    BF16 and in FP8 compare directly. Raises ValueError listing
    every problem :func:`solutions.planner.validity.rejections` finds for that stack that
    leaves the step time undefined; the unusual but computable ones (TP across nodes, K/V
    heads not divided by TP, unequal splits, :data:`solutions.planner.validity.ADVISORY`)
    come back as :attr:`StepEstimate.warnings`. Memory is checked against the GPU's capacity
    (``gpu.memory_bytes``, e.g. 80 GiB = 85.9 GB for an H100) unless ``memory_budget_gb``
    gives another budget in decimal GB, or None to skip the check.
    """
    check_inputs(arch, gpu, cfg)
    assumed = [] if stack is not None else [
        f"No stack given: {MODERN.name} assumed; pass stack= (solutions.stack.STACKS) for "
        "the software the run uses."]
    stack = MODERN if stack is None else stack
    if not isinstance(stack, Stack):
        raise ValueError(f"stack must be a solutions.stack.Stack (e.g. solutions.stack.LLAMA3), "
                         f"got {type(stack).__name__}")
    if attention_flops not in ("causal", "full"):
        raise ValueError(f"attention_flops must be 'causal' or 'full', got {attention_flops!r}")
    default_budget = isinstance(memory_budget_gb, str)
    if default_budget and memory_budget_gb != CAPACITY:
        raise ValueError(f"memory_budget_gb must be a number of GB, None or {CAPACITY!r}, "
                         f"got {memory_budget_gb!r}")
    budget = None if memory_budget_gb is None else (
        gpu.memory_bytes / 1e9 if isinstance(memory_budget_gb, str)
        else positive("memory_budget_gb", memory_budget_gb))
    given = cluster
    cluster = cluster or hardware.default_cluster(gpu)
    refusals, warnings = split_advice(rejections(arch, cfg, None, cluster.gpus_per_node, budget,
                                                 None, stack, gpu, given))
    if refusals:
        note = (f" (The budget defaults to the {gpu.name}'s capacity, {gpu.memory_gib:g} GiB "
                f"= {gpu.memory_bytes / 1e9:.1f} GB; pass memory_budget_gb=... to change it "
                "or None to skip the memory check.)") if default_budget else ""
        raise ValueError("invalid layout: " + " ".join(refusals) + note)
    est = summarise(arch, cfg, gpu, breakdown_s(arch, cfg, gpu, cluster, stack),
                    attention_flops)
    warnings = assumed + warnings
    return replace(est, warnings=tuple(warnings)) if warnings else est


def check_inputs(arch: object, gpu: object, cfg: object = None) -> None:
    """ValueError naming the argument that is not the record the model reads (``cfg`` is
    checked only when given)."""
    named = [("arch", arch, models.Architecture), ("gpu", gpu, hardware.GPU)]
    if cfg is not None:
        named.append(("cfg", cfg, ParallelConfig))
    for name, value, kind in named:
        if not isinstance(value, kind):
            raise ValueError(f"{name} must be a {kind.__module__}.{kind.__name__}, got "
                             f"{type(value).__name__} (e.g. models.LLAMA3_405B, "
                             "hardware.H100_SXM, ParallelConfig(tp=8, pp=16, dp=128, ...))")


def summarise(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
              breakdown: dict[str, float],
              attention_flops: AttentionCount = "causal") -> StepEstimate:
    """Turn a breakdown into step time, tokens/s, TFLOP/s per GPU, MFU and HFU, the
    attention scores counted as ``attention_flops`` says (:func:`estimate`)."""
    causal = attention_flops == "causal"
    step = sum(breakdown.values())
    tokens = cfg.tokens_per_step
    model = (pf.model_flops_per_token(arch, cfg.seq_len, causal) * tokens / cfg.n_gpus / step
             / 1e12)
    extra = pf.recompute_flops_per_token(arch, cfg, causal) * tokens / cfg.n_gpus / step / 1e12
    peak = gpu.bf16_dense_tflops
    return StepEstimate(step_time_s=step, tokens_per_s=tokens / step,
                        model_tflops_per_gpu=model, hardware_tflops_per_gpu=model + extra,
                        mfu=model / peak, hfu=(model + extra) / peak, breakdown=breakdown,
                        attention_flops=attention_flops)
