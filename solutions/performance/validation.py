"""Step-time model: published training runs, and the model's prediction of each.

The runs live in ``solutions/data/published_runs.json`` (its README gives the schema, the
sources and the split): one object per measured run with its layout, cluster, training
software (a :mod:`solutions.stack` preset), the number the source reports in the source's
own convention, the source's words and what had to be assumed. :func:`load_runs` turns each
into a :class:`PublishedRun`; :meth:`PublishedRun.predicted` converts the model's step time
into the source's metric:

* ``mfu`` / ``hfu``: :attr:`StepEstimate.mfu` / ``hfu``, the attention scores counted as
  the row's ``attention_flops`` says (``"causal"``, the default, or ``"full"``);
* ``tflops_per_gpu_narayanan``: Megatron-LM 2021's "achieved teraFLOP/s per GPU", ``F = 96 B
  s l h^2 (1 + s/6h + V/16lh)``, recomputed forward and full score matrix counted
  (:func:`narayanan_tflops_per_gpu`; Narayanan et al. 2021, §5.1);
* ``tflops_per_gpu_model``: the model FLOPs of :mod:`solutions.performance.flops` per GPU;
* ``tokens_per_s_per_gpu`` and ``step_time_s``: no FLOP convention at all.

Each run is ``fit`` (constants may be fitted on it) or ``held_out`` (only measured), and the
errors of the two parts are reported separately (:func:`summary`), beside the best constant
%-of-peak baseline fitted on the same ``fit`` rows (:func:`baseline_fraction`).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from solutions import hardware, models
from solutions.layout import ParallelConfig
from solutions.performance import fit as fitting
from solutions.performance import flops as pf
from solutions.performance.model import StepEstimate, estimate
from solutions.stack import STACKS, Stack, stack_named

DATA_PATH = Path(__file__).parents[1] / "data" / "published_runs.json"
METRICS = ("mfu", "hfu", "tflops_per_gpu_model", "tflops_per_gpu_narayanan",
           "tokens_per_s_per_gpu", "step_time_s")
#: Share of a run's prediction allowed off before it counts as a miss in :func:`summary`.
WITHIN = 0.15


@dataclass(frozen=True)
class PublishedRun:
    """One published measurement and the layout behind it."""

    label: str
    source: str
    arch: models.Architecture
    config: ParallelConfig
    cluster: hardware.Cluster
    stack: Stack
    metric: str
    reported: float
    fitted: bool  # True when the row may be used to fit a constant
    source_id: str = ""
    attention_flops: str = "causal"  # how the source's MFU counts the attention scores
    memory_gib: float | None = None  # the source's measured peak memory per GPU

    @property
    def family(self) -> str:
        """The software family: the library of the :mod:`solutions.stack` preset the run's
        software is, its releases together (``deepspeed-pipeline-2020`` and
        ``deepspeed-pipeline`` are one family, ``megatron-lm-2021`` is ``megatron-lm``)."""
        key = next((k for k, v in STACKS.items() if v.name == self.stack.name),
                   self.stack.name)
        return re.sub(r"-\d{4}$", "", key)

    @property
    def power_limited(self) -> bool:
        """Whether the source states a power limit the run's GPUs ran under."""
        return self.cluster.gpu.power_limit_watts is not None

    def estimate(self) -> StepEstimate:
        """The model's estimate of this run (memory not checked: the run really ran), MFU
        counted as the source counts it."""
        return estimate(self.arch, self.config, self.cluster.gpu, self.cluster, self.stack,
                        memory_budget_gb=None,
                        attention_flops="full" if self.attention_flops == "full" else "causal")

    def predicted(self) -> float:
        """The model's prediction in the source's convention."""
        return metric_value(self, self.estimate())

    def error(self) -> float:
        """Signed relative error (predicted - reported) / reported."""
        return self.predicted() / self.reported - 1.0


def metric_value(run: PublishedRun, est: StepEstimate) -> float:
    """``est`` expressed in ``run.metric``."""
    cfg = run.config
    if run.metric == "tflops_per_gpu_narayanan":
        return narayanan_tflops_per_gpu(run.arch, cfg, est.step_time_s)
    if run.metric == "tflops_per_gpu_model":
        return est.model_tflops_per_gpu
    if run.metric == "tokens_per_s_per_gpu":
        return est.tokens_per_s / cfg.n_gpus
    return float(getattr(est, run.metric))


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
        published_params=params_b * 1e9, source="Narayanan et al. 2021 (SC21), Table 1")


# -- loading the data file -----------------------------------------------------------------

_MOE_KEYS = {"n_experts": "n_routed_experts", "top_k": "experts_per_token",
             "expert_d_ffn": "expert_d_ffn", "n_shared_experts": "n_shared_experts",
             "n_dense_layers": "n_dense_layers"}


def _architecture(fields: dict[str, Any]) -> models.Architecture:
    if "preset" in fields:
        return models.MODELS[fields["preset"]]
    plain = {k: v for k, v in fields.items() if k not in _MOE_KEYS}
    moe = {_MOE_KEYS[k]: v for k, v in fields.items() if k in _MOE_KEYS}
    if moe:
        plain["moe"] = models.MoE(**{"n_shared_experts": 0, **moe})
    if isinstance(plain.get("mla"), dict):
        plain["mla"] = models.MLA(**plain["mla"])
    return models.Architecture(**plain)


def _gpu(name: str, power_limit_w: float | None = None) -> hardware.GPU:
    """The preset called ``name``, run under ``power_limit_w`` watts when the source gives a
    power limit (:meth:`solutions.hardware.GPU.capped`)."""
    for gpu in hardware.GPUS.values():
        if gpu.name == name:
            return gpu if power_limit_w is None else gpu.capped(power_watts=power_limit_w)
    raise ValueError(f"unknown gpu {name!r}; expected one of "
                     f"{sorted(g.name for g in hardware.GPUS.values())}")


def _cluster(gpu: hardware.GPU, fields: dict[str, Any]) -> hardware.Cluster:
    """Datasheet NVLink of ``gpu``; each GPU's share of the node's network ports."""
    per_node = int(fields.get("gpus_per_node", gpu.gpus_per_node))
    ports = float(fields.get("nics_per_node", per_node))
    share = hardware.gbit_to_gbyte_per_s(float(fields["nic_gbit_per_gpu"])) * ports / per_node
    return hardware.Cluster(
        name=f"{gpu.name} x {per_node}, {fields['nic_gbit_per_gpu']} Gb/s x {ports:g} ports",
        gpu=gpu, gpus_per_node=per_node, nvlink_gb_per_s=gpu.nvlink_per_direction_gb_per_s,
        inter_node_gb_per_s=share, nvlink_latency_us=hardware.NVLINK_LATENCY_US,
        inter_node_latency_us=hardware.NETWORK_LATENCY_US,
        collective_efficiency=hardware.COLLECTIVE_EFFICIENCY,
        source=str(fields.get("notes", "")))


def _stack(name: str, options: dict[str, Any]) -> Stack:
    """The preset ``name`` with the options that are :class:`Stack` fields applied; other
    options describe the run without changing the model (e.g. the DP implementation's
    name) and are ignored."""
    fields = set(Stack.__dataclass_fields__)
    return replace(stack_named(name), **{k: v for k, v in options.items() if k in fields})


def _config(layout: dict[str, Any]) -> ParallelConfig:
    return ParallelConfig(
        tp=layout["tp"], pp=layout["pp"], dp=layout["dp"], cp=layout.get("cp", 1),
        ep=layout.get("ep", 1), zero_stage=layout["zero_stage"],
        micro_batch=layout["micro_batch"], grad_accum=layout["grad_accum"],
        seq_len=layout["seq_len"], activation_recompute=layout["recompute"],
        virtual_stages=layout.get("virtual_stages", 1), etp=layout.get("etp"),
        dp_shard=layout.get("dp_shard"), pipeline_rounds=layout.get("pipeline_rounds", 1))


def run_from_record(record: dict[str, Any]) -> PublishedRun:
    """One :class:`PublishedRun` from one object of the data file (ValueError naming the
    run when a field is missing or wrong)."""
    try:
        if record["metric"] not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {record['metric']!r}")
        if record["split"] not in ("fit", "held_out"):
            raise ValueError(f"split must be 'fit' or 'held_out', got {record['split']!r}")
        gpu = _gpu(record["gpu"], record["cluster"].get("power_limit_w"))
        stack = _stack(record["stack"], record.get("stack_options", {}))
        return PublishedRun(
            label=record["id"], source=record["source"], arch=_architecture(record["model"]),
            config=_config(record["layout"]), cluster=_cluster(gpu, record["cluster"]),
            stack=stack, metric=record["metric"], reported=float(record["reported"]),
            fitted=record["split"] == "fit", source_id=record.get("source_id", ""),
            attention_flops=record.get("attention_flops", "causal"),
            memory_gib=record["memory"]["reported_gib"] if "memory" in record else None)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"published run {record.get('id', '?')!r}: {err!r}") from err


def load_runs(path: Path = DATA_PATH) -> tuple[PublishedRun, ...]:
    """Every run of the data file at ``path``, in file order."""
    records = json.loads(Path(path).read_text())
    return tuple(run_from_record(r) for r in records)


PUBLISHED_RUNS: tuple[PublishedRun, ...] = load_runs()


# -- measuring ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ErrorSummary:
    """How far a set of predictions is from the reported numbers."""

    n: int
    median: float  # median |error|
    within: float  # share of runs with |error| <= WITHIN
    worst: float  # largest |error|
    worst_label: str


def summarise_errors(labels: Sequence[str], errors: Sequence[float]) -> ErrorSummary:
    """Median and worst |error| and the share within :data:`WITHIN` (ValueError if empty)."""
    if not errors:
        raise ValueError("no runs to summarise")
    absolute = [abs(e) for e in errors]
    worst = max(range(len(absolute)), key=absolute.__getitem__)
    return ErrorSummary(len(absolute), statistics.median(absolute),
                        sum(a <= WITHIN for a in absolute) / len(absolute), absolute[worst],
                        labels[worst])


def error_summary(runs: Iterable[PublishedRun] = PUBLISHED_RUNS) -> tuple[float, float]:
    """(median |error|, worst |error|) over ``runs``, as fractions."""
    runs = tuple(runs)
    s = summarise_errors([r.label for r in runs], [r.error() for r in runs])
    return s.median, s.worst


def implied_mfu(run: PublishedRun, est: StepEstimate) -> float:
    """The MFU the reported number means for this run, causal attention counted whatever
    the source's convention (so that one constant baseline compares like with like)."""
    ratio = metric_value(run, est) / run.reported
    mfu = est.mfu
    if est.attention_flops == "full":
        seq = run.config.seq_len
        mfu *= (pf.model_flops_per_token(run.arch, seq, causal=True)
                / pf.model_flops_per_token(run.arch, seq, causal=False))
    return mfu * (ratio if run.metric == "step_time_s" else 1 / ratio)


def _baseline_error(run: PublishedRun, implied: float, fraction: float) -> float:
    """Error, in the run's metric, of predicting it at ``fraction`` of peak."""
    return implied / fraction - 1 if run.metric == "step_time_s" else fraction / implied - 1


def baseline_errors(runs: Iterable[PublishedRun], fraction: float) -> list[float]:
    """Signed errors of predicting every run at ``fraction`` of peak."""
    return [_baseline_error(r, implied_mfu(r, r.estimate()), fraction) for r in runs]


def baseline_fraction(runs: Iterable[PublishedRun]) -> float:
    """The constant MFU that best predicts ``runs``: the one (among the runs' own implied
    MFUs) minimising the median |error| of "every run at that share of peak"."""
    runs = tuple(runs)
    implied = [implied_mfu(r, r.estimate()) for r in runs]
    return min(implied, key=lambda c: statistics.median(
        abs(_baseline_error(r, x, c)) for r, x in zip(runs, implied, strict=True)))


@dataclass(frozen=True)
class ValidationReport:
    """Model and baseline errors on the fitted and held-out parts, and per source."""

    fitted: ErrorSummary
    held_out: ErrorSummary
    baseline_fraction: float
    baseline_fitted: ErrorSummary
    baseline_held_out: ErrorSummary
    per_source: dict[str, ErrorSummary]


def summary(runs: Sequence[PublishedRun] = PUBLISHED_RUNS) -> ValidationReport:
    """The whole validation: model and constant baseline (fitted on the fit rows), each on
    the fit and the held-out rows, and the model per source."""
    fit = [r for r in runs if r.fitted]
    held = [r for r in runs if not r.fitted]
    errors = {r.label: r.error() for r in runs}

    def part(rows: Sequence[PublishedRun],
             errs: Callable[[Sequence[PublishedRun]], list[float]]) -> ErrorSummary:
        return summarise_errors([r.label for r in rows], errs(rows))

    def model(rows: Sequence[PublishedRun]) -> list[float]:
        return [errors[r.label] for r in rows]

    c = baseline_fraction(fit)
    sources = sorted({r.source for r in runs})
    return ValidationReport(
        fitted=part(fit, model), held_out=part(held, model), baseline_fraction=c,
        baseline_fitted=part(fit, lambda rows: baseline_errors(rows, c)),
        baseline_held_out=part(held, lambda rows: baseline_errors(rows, c)),
        per_source={s: part([r for r in runs if r.source == s], model) for s in sources})


@dataclass(frozen=True)
class CrossValidation:
    """Leave-one-source-out: every run predicted with constants fitted on the other sources."""

    errors: dict[str, float]  # run label -> signed error with its own source left out
    overall: ErrorSummary
    per_source: dict[str, ErrorSummary]  # source_id -> its runs, fitted without them
    constants: dict[str, dict[str, float]]  # source_id -> the constants fitted without it


def leave_one_source_out(runs: Sequence[PublishedRun] = PUBLISHED_RUNS) -> CrossValidation:
    """For each source (``source_id``): fit the constants of
    :mod:`solutions.performance.fit` on every run of the other sources, fit and held-out
    rows alike, and predict that source's runs with them. No run is ever predicted by
    constants that saw it or any run of its source, so the errors measure how the model
    carries to software, hardware and authors it was not tuned on (ValueError with fewer
    than two sources). The module's constants are left as they were."""
    sources = sorted({r.source_id or r.source for r in runs})
    if len(sources) < 2:
        raise ValueError("leave-one-source-out needs runs from at least two sources")
    errors: dict[str, float] = {}
    constants: dict[str, dict[str, float]] = {}
    per_source: dict[str, ErrorSummary] = {}
    for source in sources:
        own = [r for r in runs if (r.source_id or r.source) == source]
        rest = [replace(r, fitted=True) for r in runs if (r.source_id or r.source) != source]
        constants[source] = fitting.fit(rest)
        with fitting.constants_set(constants[source]):
            mine = {r.label: r.error() for r in own}
        errors.update(mine)
        per_source[source] = summarise_errors(list(mine), list(mine.values()))
    ordered = [r.label for r in runs]
    return CrossValidation(errors=errors,
                           overall=summarise_errors(ordered, [errors[k] for k in ordered]),
                           per_source=per_source, constants=constants)


def cross_validation_markdown(cv: CrossValidation) -> str:
    """The leave-one-source-out table: each source's runs predicted by constants fitted
    without it, and those constants."""
    names = {"SUSTAINED_FRACTION['A100']": "A100", "SUSTAINED_FRACTION['H100']": "H100",
             "SUSTAINED_FRACTION['B200']": "Blackwell",
             "ELEMENTWISE_PASSES['eager']": "eager", "ELEMENTWISE_PASSES['megatron']":
             "megatron", "ELEMENTWISE_PASSES['fused']": "fused",
             "OVERLAP_INTERFERENCE": "interference", "POWER_CLOCK_EXPONENT": "power exponent",
             "TRITON_FA_SLOWDOWN": "Triton attention slowdown"}
    lines = ["| Source left out | Runs | Median \\|error\\| | Within 15 % | Worst "
             "| Constants fitted without it |", "|---|---|---|---|---|---|"]
    for source, s in cv.per_source.items():
        fitted = ", ".join(f"{names.get(k, k)} {v:g}" for k, v in cv.constants[source].items())
        lines.append(f"{_line(source, s)} {fitted} |")
    return "\n".join(lines)


def _format(run: PublishedRun, value: float) -> str:
    if run.metric in ("mfu", "hfu"):
        return f"{value:.1%}"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def _line(name: str, s: ErrorSummary) -> str:
    return (f"| {name} | {s.n} | {s.median:.1%} | {s.within:.0%} | {s.worst:.1%} "
            f"({s.worst_label}) |")


def summary_markdown(report: ValidationReport, cv: CrossValidation | None = None) -> str:
    """The summary tables: model vs baseline on each part (and leave-one-source-out when
    ``cv`` is given), then the model per source."""
    loso = ([_line("Model, each source left out of the fit", cv.overall)] if cv else [])
    lines = ["| Part | Runs | Median \\|error\\| | Within 15 % | Worst |", "|---|---|---|---|---|",
             _line("Model, fit rows", report.fitted),
             _line("Model, held-out rows", report.held_out), *loso,
             _line(f"Constant {report.baseline_fraction:.1%} MFU, fit rows",
                   report.baseline_fitted),
             _line(f"Constant {report.baseline_fraction:.1%} MFU, held-out rows",
                   report.baseline_held_out),
             "", "| Source | Runs | Median \\|error\\| | Within 15 % | Worst |",
             "|---|---|---|---|---|"]
    lines += [_line(src, s) for src, s in report.per_source.items()]
    return "\n".join(lines)


def validation_table_markdown(runs: Sequence[PublishedRun] = PUBLISHED_RUNS) -> str:
    """The comparison as Markdown: one row per run (with its error when its source was left
    out of the fit), the summary tables, then leave-one-source-out per source."""
    cv = leave_one_source_out(runs)
    lines = ["| Run | Stack | Metric | Reported | Predicted | Error | Split "
             "| Error, source left out |", "|---|---|---|---|---|---|---|---|"]
    for run in runs:
        fp8 = ", FP8 linear layers" if run.stack.linear_precision == "fp8" else ""
        lines.append(f"| {run.label} | {run.stack.name}{fp8} | {run.metric} "
                     f"| {_format(run, run.reported)} | {_format(run, run.predicted())} "
                     f"| {run.error():+.1%} | {'fit' if run.fitted else 'held out'} "
                     f"| {cv.errors[run.label]:+.1%} |")
    return ("\n".join(lines) + "\n\n" + summary_markdown(summary(runs), cv) + "\n\n"
            + cross_validation_markdown(cv))
