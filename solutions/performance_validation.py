"""Step-time model, part 4: published training runs, and the model's prediction of each.

Each :class:`PublishedRun` is one row of a paper's table, with the layout that produced it
and the number the paper reports, in the paper's own convention:

* Megatron-LM 2021 (Narayanan et al., SC21, arXiv:2104.04473), Table 1: "achieved
  teraFLOP/s per GPU", computed with ``F = 96 B s l h^2 (1 + s/6h + V/16lh)``, which counts
  the recomputed forward pass and the full score matrix (:func:`narayanan_tflops_per_gpu`). The
  models are GPT with V = 51,200 and s = 2,048 (§5.1). Micro-batch size, interleaving
  (``--num-layers-per-virtual-pipeline-stage``), full ("uniform") recomputation, FP16 and the
  data-parallel implementation (PyTorch DDP, which overlaps, or Megatron's "local" DDP,
  which reduces after the backward pass) are those of the authors' script
  ``examples/sc21/run_table_1.sh`` in github.com/NVIDIA/Megatron-LM (removed in 2023).
* Llama 3 (Dubey et al. 2024, arXiv:2407.21783), Table 4: BF16 MFU, compared with ``mfu``.
  Layout, sequence, batch per DP group and GPUs are from the table; the paper does not
  publish the micro-batch size, the interleaving depth, the recomputation policy or whether
  its MFU counts attention. Assumed here: micro-batch 1 (so m = batch per DP), v = 4 (two
  layers per chunk), selective recomputation, FSDP (ZeRO-3, §3.3.2) with the reduce-scatter
  in FP32, and MFU with causal attention counted. v and the recomputation policy were
  chosen with the table in view (full recomputation would need a GEMM efficiency above
  100 % to reach 41 % MFU); they are assumptions, not facts.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from solutions import hardware, models
from solutions import performance_flops as pf
from solutions.performance import LLAMA3, MEGATRON_2021, Stack, estimate
from solutions.planner_memory import ParallelConfig

MEGATRON_TABLE1 = "Narayanan et al. 2021 (SC21), Table 1"
LLAMA3_TABLE4 = "Dubey et al. 2024 (Llama 3), Table 4"


@dataclass(frozen=True)
class PublishedRun:
    """One published measurement and the layout behind it."""

    label: str
    source: str
    arch: models.Architecture
    config: ParallelConfig
    cluster: hardware.Cluster
    stack: Stack
    metric: str  # "narayanan_tflops_per_gpu" or "mfu"
    reported: float
    fitted: bool  # True when the row was used to fit a constant

    def predicted(self) -> float:
        """The model's prediction in the paper's convention."""
        result = estimate(self.arch, self.config, self.cluster.gpu, self.cluster, self.stack,
                          memory_budget_gb=None)
        if self.metric == "narayanan_tflops_per_gpu":
            return narayanan_tflops_per_gpu(self.arch, self.config, result.step_time_s)
        return float(getattr(result, self.metric))

    def error(self) -> float:
        """Signed relative error (predicted - reported) / reported."""
        return self.predicted() / self.reported - 1.0


def narayanan_tflops_per_gpu(arch: models.Architecture, cfg: ParallelConfig,
                             step_s: float) -> float:
    """Megatron-LM 2021's "achieved teraFLOP/s per GPU": FLOPs of the batch with the full
    score matrix and the recomputed forward counted, over GPUs x step time."""
    per_token = (pf.model_flops_per_token(arch, cfg.seq_len, causal=False)
                 + pf.recompute_flops_per_token(arch, cfg, causal=False))
    return per_token * cfg.tokens_per_step / cfg.n_gpus / step_s / 1e12


def gpt(params_b: float, n_layers: int, d_model: int, n_heads: int) -> models.Architecture:
    """A Megatron-LM 2021 GPT: 4h GeLU MLP, multi-head attention, V = 51,200, s = 2,048."""
    return models.Architecture(
        f"GPT {params_b:g}B", n_layers=n_layers, d_model=d_model, n_heads=n_heads,
        n_kv_heads=n_heads, d_ffn=4 * d_model, vocab_size=51200, ffn="gelu",
        tied_embeddings=True, linear_biases=True, norm_bias=True, learned_positions=2048,
        published_params=params_b * 1e9, source=MEGATRON_TABLE1)


# (billions, heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU) from Table 1;
# (micro-batch, layers per virtual stage or 0, PyTorch DDP?) from run_table_1.sh.
_TABLE1: tuple[tuple[float, int, int, int, int, int, int, int, float, int, int, bool], ...] = (
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 16, 0, True),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 16, 0, True),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 16, 0, True),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 0, True),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 0, False),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 5, False),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 5, False),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 3, False),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 1, False),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 0, False),
)
#: Rows (1-based) of Table 1 used to fit MATMUL_PEAK_FRACTION["A100"] and ELEMENTWISE_PASSES.
MEGATRON_FIT_ROWS: tuple[int, ...] = (1, 3, 5, 7, 9)


def _megatron_row(i: int, row: tuple[float, int, int, int, int, int, int, int, float, int,
                                     int, bool]) -> PublishedRun:
    params_b, heads, hidden, layers, tp, pp, gpus, batch, tflops, mbs, per_chunk, torch = row
    dp = gpus // (tp * pp)
    v = layers // pp // per_chunk if per_chunk else 1
    cfg = ParallelConfig(tp=tp, pp=pp, dp=dp, zero_stage=0, micro_batch=mbs,
                         grad_accum=batch // (dp * mbs), seq_len=2048,
                         activation_recompute="full", virtual_stages=v)
    stack = replace(MEGATRON_2021, overlap_dp=torch)
    label = f"GPT {params_b:g}B, TP{tp} PP{pp} DP{dp} v{v} b{mbs} m{cfg.grad_accum}"
    return PublishedRun(label, MEGATRON_TABLE1, gpt(params_b, layers, hidden, heads), cfg,
                        hardware.SELENE_A100, stack, "narayanan_tflops_per_gpu", tflops,
                        fitted=i in MEGATRON_FIT_ROWS)


# (GPUs, TP, CP, PP, DP, sequence, batch per DP, BF16 MFU) from Table 4.
_TABLE4: tuple[tuple[int, int, int, int, int, int, int, float], ...] = (
    (8192, 8, 1, 16, 64, 8192, 32, 0.43),
    (16384, 8, 1, 16, 128, 8192, 16, 0.41),
    (16384, 8, 16, 16, 8, 131072, 16, 0.38),
)
#: Rows (1-based) of Table 4 used to fit MATMUL_PEAK_FRACTION["H100"].
LLAMA3_FIT_ROWS: tuple[int, ...] = (2,)
LLAMA3_VIRTUAL_STAGES = 4  # not published: an assumption (see the module docstring)


def _llama_row(i: int, row: tuple[int, int, int, int, int, int, int, float]) -> PublishedRun:
    gpus, tp, cp, pp, dp, seq, per_dp, mfu = row
    cfg = ParallelConfig(tp=tp, cp=cp, pp=pp, dp=dp, zero_stage=3, micro_batch=1,
                         grad_accum=per_dp, seq_len=seq, activation_recompute="selective",
                         virtual_stages=LLAMA3_VIRTUAL_STAGES)
    label = f"Llama 3 405B, {gpus:,} GPUs, TP{tp} CP{cp} PP{pp} DP{dp}, s={seq:,}"
    return PublishedRun(label, LLAMA3_TABLE4, models.LLAMA3_405B, cfg, hardware.LLAMA3_H100,
                        LLAMA3, "mfu", mfu, fitted=i in LLAMA3_FIT_ROWS)


PUBLISHED_RUNS: tuple[PublishedRun, ...] = (
    tuple(_megatron_row(i, r) for i, r in enumerate(_TABLE1, start=1))
    + tuple(_llama_row(i, r) for i, r in enumerate(_TABLE4, start=1)))


def error_summary(runs: tuple[PublishedRun, ...] = PUBLISHED_RUNS) -> tuple[float, float]:
    """(median |error|, worst |error|) over ``runs``, as fractions."""
    errors = [abs(r.error()) for r in runs]
    return statistics.median(errors), max(errors)


def _format(run: PublishedRun, value: float) -> str:
    return f"{value:.1%}" if run.metric == "mfu" else f"{value:.1f}"


def validation_table_markdown(runs: tuple[PublishedRun, ...] = PUBLISHED_RUNS) -> str:
    """The comparison as a Markdown table, one row per run, then median and worst error."""
    lines = ["| Run | Source | Metric | Reported | Predicted | Error | Used in fit |",
             "|---|---|---|---|---|---|---|"]
    for run in runs:
        metric = "BF16 MFU" if run.metric == "mfu" else "TFLOP/s per GPU (with recompute)"
        lines.append(f"| {run.label} | {run.source} | {metric} | {_format(run, run.reported)} "
                     f"| {_format(run, run.predicted())} | {run.error():+.1%} "
                     f"| {'yes' if run.fitted else 'no'} |")
    median, worst = error_summary(runs)
    held_out = tuple(r for r in runs if not r.fitted)
    median_out, worst_out = error_summary(held_out)
    lines += ["", f"Median |error| {median:.1%}, worst {worst:.1%} over {len(runs)} runs; "
              f"on the {len(held_out)} runs not used in the fit: median {median_out:.1%}, "
              f"worst {worst_out:.1%}."]
    return "\n".join(lines)
