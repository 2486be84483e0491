"""5D-parallelism planner: what one layout costs, and the capstone's checks.

* :func:`step_time_s`, :func:`training_days` and :func:`training_cost_usd` use the step
  time :mod:`solutions.performance` predicts for the layout at hand (the time
  :func:`solutions.planner.search.recommend` ranks layouts by), so a slow layout costs
  more. Each takes an optional ``mfu``: a what-if that replaces the prediction by model
  FLOPs / (n x peak x MFU), with model FLOPs counted as
  :class:`solutions.performance.StepEstimate` counts them (6 x matmul weights + causal
  attention per token).
* :func:`mfu` turns a measured throughput into MFU with 6 N_active FLOPs per token, no
  attention (Kaplan et al. 2020; for MoE only the activated experts compute).
* :func:`layout_violations` runs the capstone's design checks on a bare (TP, PP, DP) choice;
  :func:`plan` gathers one layout's problems (:func:`solutions.planner.validity.rejections`),
  memory, traffic and bubble in one record.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions import hardware, llama3, models
from solutions._checks import fraction, positive, positive_int
from solutions.layout import Recompute, pipeline_bubble_over_compute, resolve, stage_slots
from solutions.performance.flops import model_flops_per_token
from solutions.performance.model import estimate
from solutions.planner.memory import MemoryBreakdown, ParallelConfig, memory_per_gpu
from solutions.planner.traffic import CommVolume, comm_per_step
from solutions.planner.validity import DEFAULT_BUDGET_GB, rejections
from solutions.stack import LLAMA3, MODERN, Stack


def bubble(cfg: ParallelConfig, arch: models.Architecture | None = None) -> float:
    """Pipeline bubble over ideal compute time, ``(p-1)/(m v)`` for m >= p and
    ``[(p-1) + (v-1)(p-m)]/(m v)`` below (:func:`solutions.layout.pipeline_bubble_over_compute`);
    0 without pipelining. With ``arch`` the v is the layout's effective one (uneven chunks
    pace the bubble by the largest chunk, :attr:`solutions.layout.Layout.bubble_chunks`)."""
    v: float = cfg.virtual_stages
    if arch is not None and cfg.pp > 1:
        v = resolve(arch, cfg).bubble_chunks
    return pipeline_bubble_over_compute(cfg.pp, cfg.schedule_microbatches, v)


# -- the capstone's design checks ------------------------------------------------------

LAYOUT_CHECKS: tuple[str, ...] = ("gpus", "tp_in_node", "stages", "batch", "memory", "bubble")


def layout_violations(arch: models.Architecture, tp: int, pp: int, dp: int, n_gpus: int,
                      global_batch_seqs: int, seq_len: int, max_layers_per_stage: int,
                      max_bubble: float, virtual_stages: int = 1, gpus_per_node: int = 8,
                      memory_budget_gb: float = DEFAULT_BUDGET_GB,
                      recompute: Recompute = "none", stack: Stack = LLAMA3) -> list[str]:
    """Names (from LAYOUT_CHECKS) of the checks a (TP, PP, DP) layout fails.

    Micro-batch 1, CP 1, Llama 3's FSDP (``zero_stage=3`` on the :data:`LLAMA3` stack: the
    stage's BF16 weights gathered for the whole step, FP32 gradients and Adam state sharded
    over DP; :mod:`solutions.planner.memory`), ``recompute`` (none by default: Llama 3
    trained at 8K "without activation checkpointing", §3.3.2).
    "gpus": tp x pp x dp = n_gpus; "tp_in_node": tp divides gpus_per_node; "stages": every
    stage holds at most ``max_layers_per_stage`` layers and at least ``virtual_stages`` layer
    slots (an end stage one layer short counts its embedding or head as a slot, Llama 3);
    "batch": dp divides the batch; "memory": the busiest GPU fits the budget; "bubble":
    (pp-1)/(m v) with m = batch / dp is strictly below ``max_bubble`` (a fraction). Memory and
    bubble are only judged when the layout they need exists (they stay silent when an
    earlier check fails).
    """
    tp, pp, dp = positive_int("tp", tp), positive_int("pp", pp), positive_int("dp", dp)
    failed = []
    if tp * pp * dp != n_gpus:
        failed.append("gpus")
    if gpus_per_node % tp:
        failed.append("tp_in_node")
    counts = llama3.layers_per_stage(arch.n_layers, pp) if pp <= arch.n_layers else ()
    slots = stage_slots(arch.n_layers, pp) if counts else ()
    if not counts or max(counts) > max_layers_per_stage or min(slots) < virtual_stages:
        failed.append("stages")
    if global_batch_seqs % dp:
        failed.append("batch")
    if counts and "batch" not in failed:
        cfg = ParallelConfig(tp=tp, pp=pp, dp=dp, grad_accum=global_batch_seqs // dp,
                             seq_len=seq_len, activation_recompute=recompute,
                             virtual_stages=virtual_stages, zero_stage=3)
        mem = memory_per_gpu(arch, cfg, stack).total_bytes
        if not failed and mem > memory_budget_gb * 1e9:
            failed.append("memory")
        if bubble(cfg) >= max_bubble:
            failed.append("bubble")
    return failed


# -- speed and cost ---------------------------------------------------------------------

def _what_if_step_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                    mfu: float) -> float:
    """A step at a chosen MFU: model FLOPs (6 x matmul weights + causal attention, the
    convention of :class:`solutions.performance.StepEstimate`) over n x peak x MFU."""
    flops = model_flops_per_token(arch, cfg.seq_len) * cfg.tokens_per_step
    return flops / (cfg.n_gpus * gpu.peak_flops * fraction("mfu", mfu))


def step_time_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                mfu: float | None = None, cluster: hardware.Cluster | None = None,
                stack: Stack = MODERN) -> float:
    """Seconds per optimizer step as the step-time model predicts it for this layout
    (:func:`solutions.performance.estimate`; ValueError if the layout is invalid).

    ``mfu`` is a what-if override: the step then lasts model FLOPs / (n x peak x mfu),
    whatever the layout, which is what the step would take *if* the run reached that MFU.
    """
    if mfu is not None:
        return _what_if_step_s(arch, cfg, gpu, mfu)
    return estimate(arch, cfg, gpu, cluster, stack).step_time_s


def mfu(arch: models.Architecture, tokens_per_s: float, n_gpus: int, gpu: hardware.GPU) -> float:
    """MFU of a whole job from its measured throughput: ``6 N_active x tokens/s / (n_gpus x
    dense peak)``. Counts the 6N matmul FLOPs only, **not attention** (PaLM App. B adds
    ``12 L H Q T``; :class:`solutions.performance.StepEstimate` adds its causal half)."""
    per_gpu = positive("tokens_per_s", tokens_per_s) / positive_int("n_gpus", n_gpus)
    return llama3.model_flops_utilisation(models.active_params(arch), per_gpu,
                                          gpu.bf16_dense_tflops)


def training_days(arch: models.Architecture, n_tokens: float, cfg: ParallelConfig,
                  gpu: hardware.GPU, mfu: float | None = None,
                  cluster: hardware.Cluster | None = None, stack: Stack = MODERN) -> float:
    """Days to train on ``n_tokens``: steps of ``cfg.tokens_per_step`` tokens at the
    predicted step time of this layout (or at the what-if ``mfu``), with no downtime."""
    steps = positive("n_tokens", n_tokens) / cfg.tokens_per_step
    return steps * step_time_s(arch, cfg, gpu, mfu, cluster, stack) / llama3.SECONDS_PER_DAY


def training_cost_usd(arch: models.Architecture, n_tokens: float, cfg: ParallelConfig,
                      gpu: hardware.GPU, usd_per_gpu_hour: float, mfu: float | None = None,
                      cluster: hardware.Cluster | None = None, stack: Stack = MODERN) -> float:
    """GPU rental for the run: ``n_gpus x days x 24 x price`` (days as in training_days)."""
    days = training_days(arch, n_tokens, cfg, gpu, mfu, cluster, stack)
    return llama3.gpu_hours_cost_usd(cfg.n_gpus, days, usd_per_gpu_hour)


@dataclass(frozen=True)
class Plan:
    """A layout with its problems, memory, traffic and bubble, shown as a table."""

    config: ParallelConfig
    problems: tuple[str, ...]
    memory: MemoryBreakdown
    comm: CommVolume
    bubble: float

    def _repr_html_(self) -> str:
        c = self.config
        head = (f"TP {c.tp} x CP {c.cp} x PP {c.pp} x DP {c.dp} (EP {c.ep} x ETP "
                f"{c.expert_tp}) = {c.n_gpus:,} GPUs; bubble {self.bubble:.1%} of compute")
        issues = "".join(f"<li>{p}</li>" for p in self.problems) or "<li>no problems</li>"
        traffic = "".join(f"<tr><td>{k}</td><td>{v:,.2f} GB</td></tr>"
                          for k, v in self.comm.as_gb().items())
        return (f"<p>{head}</p><ul>{issues}</ul>{self.memory._repr_html_()}"
                f"<table><caption>Sent per GPU per step</caption>{traffic}</table>")


def plan(arch: models.Architecture, cfg: ParallelConfig, n_gpus: int | None = None,
         gpus_per_node: int = 8, memory_budget_gb: float = DEFAULT_BUDGET_GB,
         stack: Stack = MODERN) -> Plan:
    """Everything the planner knows about ``cfg`` on ``stack``, in one record."""
    found = rejections(arch, cfg, n_gpus, gpus_per_node, memory_budget_gb, stack=stack)
    problems = [text for _, text in found]
    buildable = not any(reason in ("stages", "chunks") for reason, _ in found)
    return Plan(cfg, tuple(problems), memory_per_gpu(arch, cfg, stack),
                comm_per_step(arch, cfg, stack.grad_reduce_bytes, stack),
                bubble(cfg, arch) if buildable else bubble(cfg))
