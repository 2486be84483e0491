"""5D-parallelism planner, part 4: recommend a layout and cost the run.

:func:`validate` returns a list of human-readable problems (empty = the layout works).
It checks that the GPUs multiply out (``tp x cp x pp x dp = n_gpus``), that each TP group
sits inside one NVLink node, that heads, KV heads, FFN width, sequence and batch split
evenly, that expert parallelism fits inside data parallelism, and that the busiest GPU's
memory (:mod:`solutions.planner_memory`) fits the budget.

:func:`recommend` searches TP in {1, 2, 4, 8} (within a node) and every PP that splits the
cluster, keeps the valid layouts, and returns the one with the smallest pipeline bubble
(Narayanan et al. 2021: (p-1)/m over ideal compute time), then the smallest model-parallel
group ``tp x pp`` (more data parallelism, less activation traffic on the critical path),
then the least memory.

:func:`layout_violations` runs the capstone's design checks on a bare (TP, PP, DP) choice.

MFU, step time, days and cost use the dense BF16 peak and ``6 x active parameters`` FLOPs per
token (Kaplan et al. 2020; for MoE only the activated experts compute).
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions import hardware, llama3, models
from solutions._checks import fraction, positive, positive_int
from solutions.pipeline import bubble_over_compute
from solutions.planner_comm import CommVolume, comm_per_step
from solutions.planner_memory import MemoryBreakdown, ParallelConfig, Recompute, memory_per_gpu
from solutions.planner_validate import DEFAULT_BUDGET_GB, validate

__all__ = ["DEFAULT_BUDGET_GB", "validate"]  # re-exported: the planner's public checks

TP_CHOICES: tuple[int, ...] = (1, 2, 4, 8)


def bubble(cfg: ParallelConfig) -> float:
    """Pipeline bubble over ideal compute time, ``(p-1)/(m v)``; 0 without pipelining."""
    return bubble_over_compute(cfg.pp, cfg.grad_accum, cfg.virtual_stages)


def candidate_layouts(arch: models.Architecture, n_gpus: int, global_batch_seqs: int,
                      seq_len: int, gpus_per_node: int = 8, zero_stage: int = 1,
                      micro_batch: int = 1, activation_recompute: Recompute = "selective",
                      ) -> list[ParallelConfig]:
    """All (TP, PP, DP) layouts with TP in {1, 2, 4, 8} within a node, 1 <= PP <= layers,
    DP whole, and the batch split into whole micro-batches (m = batch / (DP x micro))."""
    n = positive_int("n_gpus", n_gpus)
    batch = positive_int("global_batch_seqs", global_batch_seqs)
    micro = positive_int("micro_batch", micro_batch)
    layouts = []
    for tp in (t for t in TP_CHOICES if t <= gpus_per_node):
        for pp in range(1, arch.n_layers + 1):
            if n % (tp * pp) or batch % (n // (tp * pp) * micro):
                continue
            dp = n // (tp * pp)
            layouts.append(ParallelConfig(
                tp=tp, pp=pp, dp=dp, zero_stage=zero_stage, micro_batch=micro,
                grad_accum=batch // (dp * micro), seq_len=seq_len,
                activation_recompute=activation_recompute))
    return layouts


def recommend(arch: models.Architecture, n_gpus: int, global_batch_seqs: int, seq_len: int,
              gpus_per_node: int = 8, memory_budget_gb: float = DEFAULT_BUDGET_GB,
              zero_stage: int = 1, micro_batch: int = 1,
              activation_recompute: Recompute = "selective") -> ParallelConfig | None:
    """The valid layout with the least bubble, then the smallest TP x PP, then least memory.

    Returns None when no layout fits.
    """
    layouts = candidate_layouts(arch, n_gpus, global_batch_seqs, seq_len, gpus_per_node,
                                zero_stage, micro_batch, activation_recompute)
    valid = [c for c in layouts if not validate(arch, c, n_gpus, gpus_per_node, memory_budget_gb)]
    if not valid:
        return None
    return min(valid, key=lambda c: (bubble(c), c.tp * c.pp,
                                     memory_per_gpu(arch, c).total_bytes))


# -- the capstone's design checks ------------------------------------------------------

LAYOUT_CHECKS: tuple[str, ...] = ("gpus", "tp_in_node", "stages", "batch", "memory", "bubble")


def layout_violations(arch: models.Architecture, tp: int, pp: int, dp: int, n_gpus: int,
                      global_batch_seqs: int, seq_len: int, max_layers_per_stage: int,
                      max_bubble: float, virtual_stages: int = 1, gpus_per_node: int = 8,
                      memory_budget_gb: float = DEFAULT_BUDGET_GB) -> list[str]:
    """Names (from LAYOUT_CHECKS) of the checks a (TP, PP, DP) layout fails.

    Micro-batch 1, CP 1, ZeRO-1, full recomputation. "gpus": tp x pp x dp = n_gpus;
    "tp_in_node": tp divides gpus_per_node; "stages": every stage holds at most
    ``max_layers_per_stage`` and at least ``virtual_stages`` layers; "batch": dp divides the
    batch; "memory": the busiest GPU fits the budget; "bubble": (pp-1)/(m v) with
    m = batch / dp is strictly below ``max_bubble`` (a fraction). Memory and bubble are only
    judged when the layout they need exists (they stay silent when an earlier check fails).
    """
    tp, pp, dp = positive_int("tp", tp), positive_int("pp", pp), positive_int("dp", dp)
    failed = []
    if tp * pp * dp != n_gpus:
        failed.append("gpus")
    if gpus_per_node % tp:
        failed.append("tp_in_node")
    counts = llama3.layers_per_stage(arch.n_layers, pp) if pp <= arch.n_layers else ()
    if not counts or max(counts) > max_layers_per_stage or min(counts) < virtual_stages:
        failed.append("stages")
    if global_batch_seqs % dp:
        failed.append("batch")
    if counts and "batch" not in failed:
        cfg = ParallelConfig(tp=tp, pp=pp, dp=dp, grad_accum=global_batch_seqs // dp,
                             seq_len=seq_len, activation_recompute="full",
                             virtual_stages=virtual_stages)
        if not failed and memory_per_gpu(arch, cfg).total_bytes > memory_budget_gb * 1e9:
            failed.append("memory")
        if bubble(cfg) >= max_bubble:
            failed.append("bubble")
    return failed


# -- speed and cost ---------------------------------------------------------------------

def step_time_s(arch: models.Architecture, cfg: ParallelConfig, gpu: hardware.GPU,
                mfu: float) -> float:
    """Seconds per optimizer step: ``6 N_active x tokens_per_step / (n_gpus x peak x mfu)``."""
    flops = 6 * models.active_params(arch) * cfg.tokens_per_step
    return flops / (cfg.n_gpus * gpu.peak_flops * fraction("mfu", mfu))


def mfu(arch: models.Architecture, tokens_per_s: float, n_gpus: int, gpu: hardware.GPU) -> float:
    """MFU of a whole job: ``6 N_active x tokens/s / (n_gpus x dense peak)``."""
    per_gpu = positive("tokens_per_s", tokens_per_s) / positive_int("n_gpus", n_gpus)
    return llama3.model_flops_utilisation(models.active_params(arch), per_gpu,
                                          gpu.bf16_dense_tflops)


def training_days(arch: models.Architecture, n_tokens: float, n_gpus: int,
                  gpu: hardware.GPU, mfu: float) -> float:
    """Days for ``n_tokens`` at ``mfu``: 6 N_active D over the cluster's dense peak x MFU."""
    flops = llama3.training_flops(models.active_params(arch), n_tokens)
    return llama3.training_days(flops, n_gpus, gpu.bf16_dense_tflops, mfu)


def training_cost_usd(arch: models.Architecture, n_tokens: float, n_gpus: int,
                      gpu: hardware.GPU, mfu: float, usd_per_gpu_hour: float) -> float:
    """GPU rental for the run: ``n_gpus x days x 24 x price``."""
    days = training_days(arch, n_tokens, n_gpus, gpu, mfu)
    return llama3.gpu_hours_cost_usd(n_gpus, days, usd_per_gpu_hour)


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
        head = (f"TP {c.tp} x CP {c.cp} x PP {c.pp} x DP {c.dp} (EP {c.ep}) = {c.n_gpus:,} "
                f"GPUs; bubble {self.bubble:.1%} of compute")
        issues = "".join(f"<li>{p}</li>" for p in self.problems) or "<li>no problems</li>"
        traffic = "".join(f"<tr><td>{k}</td><td>{v:,.2f} GB</td></tr>"
                          for k, v in self.comm.as_gb().items())
        return (f"<p>{head}</p><ul>{issues}</ul>{self.memory._repr_html_()}"
                f"<table><caption>Sent per GPU per step</caption>{traffic}</table>")


def plan(arch: models.Architecture, cfg: ParallelConfig, n_gpus: int | None = None,
         gpus_per_node: int = 8, memory_budget_gb: float = DEFAULT_BUDGET_GB) -> Plan:
    """Everything the planner knows about ``cfg``, in one record."""
    problems = validate(arch, cfg, n_gpus, gpus_per_node, memory_budget_gb)
    return Plan(cfg, tuple(problems), memory_per_gpu(arch, cfg), comm_per_step(arch, cfg),
                bubble(cfg))
