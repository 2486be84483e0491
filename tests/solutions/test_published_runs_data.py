"""The data set of published training runs (solutions/data/published_runs.json).

Checks what a transcription can get wrong: the schema the loader reads, a source and the
source's own words for every run, layouts whose degrees multiply to the GPUs the source
reports and whose batch arithmetic matches the source's global batch, shapes that build a
valid :class:`solutions.models.Architecture`, reported numbers that are physically possible
on the named GPU, and a fit/held-out split in which the held-out part keeps whole sources.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from typing import Any

import pytest

from solutions import hardware, models

RUNS: list[dict[str, Any]] = json.loads(
    resources.files("solutions").joinpath("data/published_runs.json").read_text("utf-8"))

TOP_KEYS = {"id", "source_id", "source", "url", "quote", "model", "gpu", "n_gpus", "cluster",
            "layout", "stack", "metric", "reported", "split", "assumptions"}
OPTIONAL_TOP_KEYS = {"stack_options", "cross_check", "memory", "attention_flops"}
LAYOUT_KEYS = {"tp", "pp", "dp", "cp", "ep", "zero_stage", "micro_batch", "grad_accum",
               "seq_len", "recompute", "virtual_stages", "global_batch"}
CLUSTER_KEYS = {"gpus_per_node", "nic_gbit_per_gpu", "nics_per_node", "notes"}
MOE_KEYS = {"n_experts", "top_k", "expert_d_ffn", "n_shared_experts", "n_dense_layers"}
ARCH_FIELDS = set(models.Architecture.__dataclass_fields__) - {"moe", "source"}
STACKS = {"megatron-lm-2021", "megatron-lm-2022", "megatron-core-2024", "deepspeed-zero3",
          "deepspeed-pipeline", "deepspeed-pipeline-2020", "fsdp", "fsdp2", "llama3", "nanotron"}
METRICS = {"mfu", "hfu", "tflops_per_gpu_model", "tflops_per_gpu_narayanan",
           "tokens_per_s_per_gpu", "step_time_s"}
GPU_BY_NAME = {gpu.name: gpu for gpu in hardware.GPUS.values()}


def run_ids(run: dict[str, Any]) -> str:
    return str(run["id"])


def architecture(run: dict[str, Any]) -> models.Architecture:
    """The run's model as the library's Architecture (MoE fields folded into MoE)."""
    spec = dict(run["model"])
    moe = None
    if "n_experts" in spec:
        moe = models.MoE(n_routed_experts=spec.pop("n_experts"),
                         n_shared_experts=spec.pop("n_shared_experts", 0),
                         experts_per_token=spec.pop("top_k"),
                         expert_d_ffn=spec.pop("expert_d_ffn"),
                         n_dense_layers=spec.pop("n_dense_layers", 0))
    mla = models.MLA(**spec.pop("mla")) if "mla" in spec else None
    spec.pop("seq_len", None)
    return models.Architecture(moe=moe, mla=mla, **spec)


def tokens_per_step(run: dict[str, Any]) -> int:
    lay = run["layout"]
    return int(lay["dp"] * lay["micro_batch"] * lay["grad_accum"] * lay["seq_len"])


def tokens_per_s_per_gpu(run: dict[str, Any]) -> float | None:
    """The reported number as tokens/s per GPU, where the metric allows it."""
    value = float(run["reported"])
    if run["metric"] == "tokens_per_s_per_gpu":
        return value
    if run["metric"] == "step_time_s":
        return tokens_per_step(run) / run["n_gpus"] / value
    return None


def flops_per_token(run: dict[str, Any], convention: str) -> float:
    """FLOPs per token in a source's convention: ``6N+12lds`` (model FLOPs, attention score and
    value products counted over the full s x s square, forward and backward), ``8N+16lds``
    (the same with the recomputed forward, Narayanan et al. 2021 §5.1) or ``6N+6lds`` (the
    causal half of the square: Megatron-Bridge's ``num_floating_point_operations``, which also
    leaves the input embedding out of N, within the check's tolerance). N = active
    parameters."""
    arch = architecture(run)
    n_params = models.active_params(arch)
    attention = arch.n_layers * arch.d_model * run["layout"]["seq_len"]
    factors = {"6N+12lds": (6, 12), "8N+16lds": (8, 16), "6N+6lds": (6, 6)}
    if convention not in factors:
        raise ValueError(f"unknown FLOP convention {convention!r}; expected one of {list(factors)}")
    per_param, per_attention = factors[convention]
    return float(per_param * n_params + per_attention * attention)


def implied_6n_utilisation(run: dict[str, Any]) -> float:
    """6 x active parameters plus the causal half of the attention scores (``6 l d s``) x
    tokens/s per GPU over the GPU's dense BF16 peak (at its power limit, if the run states
    one): a lower bound on the utilisation the reported number implies (at 32K tokens a 3B
    model's attention is most of its work)."""
    arch = architecture(run)
    per_token = (6 * models.active_params(arch)
                 + 6 * arch.n_layers * arch.d_model * run["layout"]["seq_len"])
    gpu = GPU_BY_NAME[run["gpu"]]
    # under a stated power limit, the peak of the slowest clock physics allows: clock in
    # proportion to power (voltage at its floor)
    peak = gpu.peak_flops * min(1.0, run["cluster"].get("power_limit_w", gpu.tdp_watts)
                                / gpu.tdp_watts)
    value = float(run["reported"])
    tokens = tokens_per_s_per_gpu(run)
    if tokens is not None:
        return per_token * tokens / peak
    if run["metric"] in ("mfu", "hfu"):
        return value
    return value * 1e12 / peak  # TFLOP/s per GPU


# -- the file as a whole -------------------------------------------------------------------

def test_at_least_40_runs_from_8_sources_on_two_generations() -> None:
    assert len(RUNS) >= 40
    assert len({r["source_id"] for r in RUNS}) >= 8
    assert {"A100 SXM4 80GB", "H100 SXM5 80GB"} <= {r["gpu"] for r in RUNS}


def test_ids_are_unique_slugs() -> None:
    ids = [r["id"] for r in RUNS]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert all(i and i == i.lower() and " " not in i for i in ids)


def test_the_families_the_brief_asks_for_are_present() -> None:
    lay = [r["layout"] for r in RUNS]
    assert any(x["zero_stage"] == 3 and x["tp"] == 1 and x["pp"] == 1 for x in lay)  # FSDP
    assert any(x["tp"] > 1 and x["pp"] == 1 and x["zero_stage"] == 0 for x in lay)  # TP only
    assert any(x["pp"] >= 16 for x in lay)  # deep PP
    assert any(x["virtual_stages"] > 1 for x in lay)  # interleaved
    assert any(x["cp"] > 1 or x["ep"] > 1 for x in lay)  # CP or MoE


def test_strong_scaling_series_exist() -> None:
    """Same model, sequence and global batch on a growing number of GPUs, one source."""
    series = Counter((r["source_id"], r["model"]["name"], r["layout"]["seq_len"],
                      r["layout"]["global_batch"]) for r in RUNS
                     if r["layout"]["global_batch"] is not None)
    assert sum(1 for n in series.values() if n >= 3) >= 1


def test_split_fits_on_few_rows_and_held_out_keeps_whole_sources() -> None:
    # enough rows to pin the nine constants two or three times over, but at most 30 % of the
    # rows, and never a whole source: held-out sources added later only lower the share
    fit = [r for r in RUNS if r["split"] == "fit"]
    assert len(fit) >= 20 and len(fit) / len(RUNS) <= 0.30
    assert {r["split"] for r in RUNS} == {"fit", "held_out"}
    fit_sources = {r["source_id"] for r in fit}
    held_only = {r["source_id"] for r in RUNS} - fit_sources
    assert len(fit_sources) >= 3 and len(held_only) >= 3
    assert {"A100 SXM4 80GB", "H100 SXM5 80GB"} <= {r["gpu"] for r in fit}
    held_stacks = {r["stack"] for r in RUNS if r["split"] == "held_out"}
    assert held_stacks - {r["stack"] for r in fit}, "a stack the fit never sees"


def test_families_kept_out_of_the_fit() -> None:
    """MoE runs, FSDP2, the DeepSpeed pipeline engine, hybrid sharding and sequences over 8K
    are judged only, never fitted, but for one run: the power law is fitted on a run that
    states its power limit, and only torchtitan's do."""
    fit = [r for r in RUNS if r["split"] == "fit"]
    assert not [r["id"] for r in fit if "n_experts" in r["model"]]
    assert not [r["id"] for r in fit if r["stack"] == "deepspeed-pipeline"]
    assert [r["id"] for r in fit if r["stack"] == "fsdp2"] == [
        "torchtitan-h100-llama318b-8gpu-fsdp"]
    capped = [r for r in RUNS if "power_limit_w" in r["cluster"]]
    assert [r["id"] for r in capped if r["split"] == "fit"] == [
        "torchtitan-h100-llama318b-8gpu-fsdp"]
    assert len(capped) >= 10  # ... and the rest of them are held out
    assert not [r["id"] for r in fit if r["layout"]["seq_len"] > 8192]
    assert any("n_experts" in r["model"] for r in RUNS)
    assert not [r["id"] for r in fit if "dp_shard" in r["layout"]]
    assert any("dp_shard" in r["layout"] for r in RUNS)


# -- every run -----------------------------------------------------------------------------

@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_schema(run: dict[str, Any]) -> None:
    assert TOP_KEYS <= set(run) <= TOP_KEYS | OPTIONAL_TOP_KEYS
    assert LAYOUT_KEYS <= set(run["layout"]) <= LAYOUT_KEYS | {"etp", "dp_shard",
                                                                "pipeline_rounds"}
    assert CLUSTER_KEYS <= set(run["cluster"]) <= CLUSTER_KEYS | {"power_limit_w"}
    if "memory" in run:  # a measured peak, in GiB, and what the source measured
        assert set(run["memory"]) == {"reported_gib", "what"}
        gpu = next(g for g in hardware.GPUS.values() if g.name == run["gpu"])
        assert 1 < run["memory"]["reported_gib"] <= gpu.memory_gib
    assert set(run["model"]) <= ARCH_FIELDS | MOE_KEYS | {"seq_len"}
    assert run["stack"] in STACKS
    assert run["metric"] in METRICS
    assert run["split"] in ("fit", "held_out")
    assert run["layout"]["recompute"] in ("none", "selective", "full")
    assert run["layout"]["zero_stage"] in (0, 1, 2, 3)
    assert isinstance(run["reported"], float | int) and run["reported"] > 0


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_every_run_has_a_source_a_quote_and_its_assumptions(run: dict[str, Any]) -> None:
    for key in ("source", "quote", "assumptions", "url"):
        assert isinstance(run[key], str) and len(run[key].strip()) > 10, key
    assert run["url"].startswith("https://")


def renderings(value: float) -> set[str]:
    """The ways a table prints ``value`` (a fraction may be printed as a percentage)."""
    forms = {f"{value:g}", f"{value:,.0f}", f"{value:.0f}", f"{value:,g}", f"{value:.2f}",
             f"{value:.1f}"}
    if value < 1:
        forms |= {f"{value * 100:{spec}}" for spec in ("g", ".1f", ".2f", ".0f")}
    return forms


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_the_quote_contains_the_reported_number(run: dict[str, Any]) -> None:
    forms = renderings(float(run["reported"]))
    if run["metric"] == "tokens_per_s_per_gpu":  # a source may print the whole job's rate
        total = float(run["reported"]) * run["n_gpus"]
        forms |= renderings(total) | {f"{total / 1000:g}k"}
    assert any(form in run["quote"] for form in forms), run["quote"]
    if "cross_check" in run:
        check = float(run["cross_check"]["value"])
        assert any(form in run["quote"] for form in renderings(check)), run["quote"]


CROSS_CHECKED = [r for r in RUNS if "cross_check" in r]


@pytest.mark.parametrize("run", CROSS_CHECKED, ids=run_ids)
def test_the_encoding_reproduces_the_sources_second_number(run: dict[str, Any]) -> None:
    """Where a source prints a second figure beside the measured one (its MFU, or TFLOP/s in
    its own FLOP count), our shape, sequence, batch and GPU count must reproduce it from the
    measured throughput: a wrong layer count, sequence length or batch shows up here."""
    check = run["cross_check"]
    tokens = tokens_per_s_per_gpu(run)
    assert tokens is not None, "a cross-check needs a throughput or step-time metric"
    flops = flops_per_token(run, check["flops_per_token"]) * tokens
    peak = GPU_BY_NAME[run["gpu"]].peak_flops
    derived = flops / peak if check["metric"] == "mfu" else flops / 1e12
    # 10 %: sources round throughput to two or three figures and differ in what N counts
    assert derived == pytest.approx(float(check["value"]), rel=0.10)


def test_cross_checks_cover_most_sources() -> None:
    assert len({r["source_id"] for r in CROSS_CHECKED}) >= 6
    assert len(CROSS_CHECKED) >= len(RUNS) // 2


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_gpu_exists_and_cluster_is_consistent(run: dict[str, Any]) -> None:
    assert run["gpu"] in GPU_BY_NAME
    cl = run["cluster"]
    assert cl["gpus_per_node"] == GPU_BY_NAME[run["gpu"]].gpus_per_node
    assert cl["nic_gbit_per_gpu"] > 0 and cl["nics_per_node"] >= 1
    # one GPU's share of the node's ports: between Omni-Path's 4 x 100 Gb/s on 8 GPUs and
    # one 400 Gb/s port per GPU (every cluster here)
    share = cl["nic_gbit_per_gpu"] * cl["nics_per_node"] / cl["gpus_per_node"]
    assert 50 <= share <= 400


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_degrees_multiply_to_the_gpus(run: dict[str, Any]) -> None:
    lay = run["layout"]
    for key in ("tp", "pp", "dp", "cp", "ep", "micro_batch", "grad_accum", "seq_len",
                "virtual_stages"):
        assert isinstance(lay[key], int) and lay[key] >= 1, key
    assert lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == run["n_gpus"]
    etp = lay.get("etp", lay["tp"])
    if run.get("stack_options", {}).get("folded_expert_groups"):
        # MoE parallel folding: expert groups of EP x ETP tile a stage's TP x CP x DP ranks
        assert (lay["tp"] * lay["cp"] * lay["dp"]) % (lay["ep"] * etp) == 0
    else:
        assert lay["dp"] % lay["ep"] == 0 and etp == lay["tp"], "EP is carved out of DP"
    if lay["virtual_stages"] > 1:
        assert lay["pp"] > 1


# Stages sized by hand (Llama 3 §3.3.2), by DeepSpeed's partition method (BLOOM's
# embedding-aware split) or by torch.distributed.pipelining's layers-per-stage rule (AutoModel).
UNEVEN_STAGES_OK = {"llama3", "deepspeed-pipeline", "fsdp2"}


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_layers_divide_evenly_into_virtual_stages_where_the_framework_requires_it(
        run: dict[str, Any]) -> None:
    """Megatron asserts that pp x v divides the layers; only the stacks that split stages by
    hand or by their own partitioner may be uneven, and a 1-stage run is always even."""
    lay = run["layout"]
    chunks = lay["pp"] * lay["virtual_stages"]
    uneven_option = run.get("stack_options", {}).get("uneven_chunks", False)
    if run["stack"] not in UNEVEN_STAGES_OK and not uneven_option:
        assert run["model"]["n_layers"] % chunks == 0, (run["model"]["n_layers"], chunks)


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_global_batch_is_dp_times_micro_batch_times_accumulation(run: dict[str, Any]) -> None:
    lay = run["layout"]
    if lay["global_batch"] is not None:
        assert lay["dp"] * lay["micro_batch"] * lay["grad_accum"] == lay["global_batch"]


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_model_builds_and_layout_fits_its_shape(run: dict[str, Any]) -> None:
    arch = architecture(run)
    lay = run["layout"]
    assert arch.n_heads % lay["tp"] == 0
    assert arch.d_model % arch.n_heads == 0 or arch.head_dim_override
    assert (lay["ep"] > 1) <= arch.is_moe
    if arch.moe is not None:
        assert arch.moe.n_routed_experts % lay["ep"] == 0
    assert lay["pp"] <= arch.n_layers


WITH_COUNT = [r for r in RUNS if "published_params" in r["model"]]


@pytest.mark.parametrize("run", WITH_COUNT, ids=run_ids)
def test_shape_gives_the_parameter_count_the_source_states(run: dict[str, Any]) -> None:
    """The shape we recorded, counted from first principles, is the model the source names."""
    counted = models.total_params(architecture(run))
    assert counted == pytest.approx(run["model"]["published_params"], rel=0.03)


def test_most_models_carry_a_published_parameter_count() -> None:
    assert len(WITH_COUNT) >= len(RUNS) // 2


@pytest.mark.parametrize("run", RUNS, ids=run_ids)
def test_reported_number_is_physically_possible(run: dict[str, Any]) -> None:
    """The work the number implies (6 N per token and the causal half of the attention) is
    between 10 % and 100 % of the GPU's dense BF16 peak (at its power limit): catches a
    wrong GPU, unit or model shape."""
    assert 0.10 < implied_6n_utilisation(run) < 1.0


#: stack_options keys that describe a run without changing the model
DESCRIPTIVE_OPTIONS = {"data_parallel"}
#: options whose value a row must justify from its source in its assumptions
KERNEL_OPTIONS = {"attention_kernel", "selective_recompute", "elementwise", "ep_node_dedup",
                  "linear_precision", "uneven_chunks", "pipeline_buffers", "fp8_all_gather",
                  "bf16_params", "reshard_after_forward", "expert_routing",
                  "expert_gemm_loop"}


@pytest.mark.parametrize("run", [r for r in RUNS if "stack_options" in r], ids=run_ids)
def test_stack_options_are_stack_fields_and_kernel_choices_are_justified(
        run: dict[str, Any]) -> None:
    from solutions.stack import Stack
    options = run["stack_options"]
    unknown = set(options) - set(Stack.__dataclass_fields__) - DESCRIPTIVE_OPTIONS
    assert not unknown, f"{run['id']}: {unknown} are neither Stack fields nor descriptive"
    for key in KERNEL_OPTIONS & set(options):
        value = options[key]
        named = key if isinstance(value, bool) else str(value)
        assert named in run["assumptions"], (
            f"{run['id']}: stack option {key}={value!r} is not explained in assumptions")


@pytest.mark.parametrize("run", [r for r in RUNS if "Recipe read:" in r["assumptions"]],
                         ids=lambda r: r["id"])
def test_settings_read_from_a_recipe_are_the_ones_encoded(run: dict[str, Any]) -> None:
    # a row that quotes its recipe's recomputation or TP-overlap setting encodes that setting
    text, recompute = run["assumptions"], run["layout"]["recompute"]
    options = run.get("stack_options") or {}
    if "activations_checkpoint_granularity: null" in text or "recompute_layers 0" in text:
        assert recompute == "none", run["id"]
    if "activations_checkpoint_granularity: selective" in text:
        assert recompute == "selective", run["id"]
    if "ub_tp_comm_overlap: false" in text or "tp_comm_overlap=False" in text:
        assert options.get("tp_comm_overlap") is False, run["id"]
    if "grad_sync_dtype: bf16" in text:
        assert options.get("grad_accum_bytes") == 2.0, run["id"]
    if run["model"].get("n_experts"):
        # experts as one kernel, or the whole step a CUDA graph: no per-expert launches
        one_launch = ("cutedsl_fused_grouped_mlp=True" in text
                      or "cuda_graph_impl=full_iteration" in text)
        assert options.get("expert_gemm_loop", not one_launch) is not one_launch, run["id"]
