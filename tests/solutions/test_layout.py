"""One resolved layout, and only buildable layouts: chunks, groups, bubble, rejections, and
the memory model against the published runs that really trained."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from importlib import resources
from typing import Any

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import planner as pl
from solutions.layout import (
    ParallelConfig,
    chunk_layers,
    pipeline_bubble_over_compute,
    resolve,
    stage_slots,
)
from solutions.pipeline_schedules import PipelineOp
from solutions.pipeline_simulator import makespan, simulate
from solutions.planner import search as ps
from solutions.planner.memory import memory_per_gpu
from solutions.stack import LLAMA3, MODERN, stack_named
from solutions.stack import Stack as LoadedStack

PAPER = ParallelConfig(tp=8, pp=16, dp=128, zero_stage=3, grad_accum=16,
                       activation_recompute="none", virtual_stages=8)


def test_llama3_end_stages_hold_the_embedding_and_head_as_a_chunk() -> None:
    # 126 layers on 16 stages: (7, 8 x 14, 7); with v = 8 every chunk holds one layer, except
    # the first chunk of stage 0 (embedding only) and the last of stage 15 (head and loss)
    assert stage_slots(126, 16) == (8,) * 16
    chunks = chunk_layers(126, 16, 8)
    assert chunks[0] == (0,) + (1,) * 7 and chunks[15] == (1,) * 7 + (0,)
    assert all(c == (1,) * 8 for c in chunks[1:15])
    layout = resolve(m.LLAMA3_405B, PAPER)
    assert layout.chunks_even and layout.bubble_chunks == 8


def test_uneven_chunks_pace_the_bubble_by_the_largest_chunk() -> None:
    # Llama 3 70B, PP 4: 20 layers per stage; v = 8 gives chunks of 3, 3, 3, 3, 2, 2, 2, 2,
    # so the fill and drain run at the pace of 3-layer chunks: v_eff = 20 / 3, 20 % more bubble
    cfg = ParallelConfig(tp=8, pp=4, dp=2, grad_accum=16, virtual_stages=8)
    layout = resolve(m.LLAMA3_70B, cfg)
    assert not layout.chunks_even and layout.largest_chunk_layers == 3
    assert pl.bubble(cfg, m.LLAMA3_70B) == pytest.approx(3 / (16 * 20 / 3))
    assert pl.bubble(cfg, m.LLAMA3_70B) / pl.bubble(cfg) == pytest.approx(1.2)
    found = dict(pl.rejections(m.LLAMA3_70B, cfg, memory_budget_gb=None))
    assert "uneven_chunks" in found and "v=8" in found["uneven_chunks"]
    assert "uneven_chunks" not in dict(pl.rejections(m.LLAMA3_70B, cfg, memory_budget_gb=None,
                                              stack=replace(MODERN, uneven_chunks=True)))


def test_groups_know_which_links_they_cross() -> None:
    groups = resolve(m.LLAMA3_405B, PAPER).groups
    assert not groups["tp"].crosses_nodes and groups["tp"].per_node == 8
    assert groups["pp"].crosses_nodes and groups["pp"].nodes == 16      # a node per stage
    assert groups["dp"].nodes == 128 and groups["dp"].stride == 128
    small = resolve(m.GENERIC_7B, ParallelConfig(tp=2, pp=1, dp=8))
    assert small.groups["dp"].per_node == 4 and small.groups["dp"].nodes == 2


def _bfs_order(pp: int, mb: int, v: int, stage: int) -> list[PipelineOp]:
    """Breadth-first interleaving (rounds of all m micro-batches per chunk), Llama 3's
    schedule for m < p; warm-up as Megatron's with N = m."""
    fwd = [PipelineOp("F", j, c) for c in range(v) for j in range(mb)]
    bwd = [PipelineOp("B", j, v - 1 - c) for c in range(v) for j in range(mb)]
    warm = min((pp - stage - 1) * 2 + (v - 1) * mb, mb * v)
    order = fwd[:warm]
    for i in range(mb * v - warm):
        order += [fwd[warm + i], bwd[i]]
    return order + bwd[mb * v - warm:]


@pytest.mark.parametrize("pp,mb", [(16, 4), (8, 4), (4, 2), (8, 8), (8, 16)])
@pytest.mark.parametrize("v", [1, 2, 4, 8])
def test_bubble_formula_follows_the_simulator(pp: int, mb: int, v: int) -> None:
    spans = simulate(pp, v, [_bfs_order(pp, mb, v, s) for s in range(pp)])
    measured = (makespan(spans) - 2 * mb) / (2 * mb)
    assert pipeline_bubble_over_compute(pp, mb, v) == pytest.approx(measured)


def test_interleaving_with_fewer_micro_batches_than_stages_needs_a_schedule_for_it() -> None:
    cfg = ParallelConfig(tp=8, pp=16, dp=512, grad_accum=4, virtual_stages=2,
                         activation_recompute="full")
    found = dict(pl.rejections(m.LLAMA3_405B, cfg, memory_budget_gb=None))
    assert "interleave_m" in found and "m >= p" in found["interleave_m"]
    assert "interleave_m" not in dict(pl.rejections(m.LLAMA3_405B, cfg, memory_budget_gb=None,
                                                    stack=LLAMA3))
    # and it still helps, toward the floor (p - m)/m: 375 % -> 337.5 % at v = 2
    assert pl.bubble(cfg) == pytest.approx(3.375)
    assert pl.bubble(replace(cfg, virtual_stages=1)) == pytest.approx(3.75)


def test_named_rejections() -> None:
    arch = m.LLAMA3_405B
    assert "kv_heads" in dict(pl.rejections(arch, ParallelConfig(tp=16, pp=8, dp=128),
                                         gpus_per_node=16, memory_budget_gb=None))
    odd = replace(arch, d_model=16380, name="odd")
    assert any("not divisible by the 128 heads" in t
               for r, t in pl.rejections(odd, ParallelConfig(tp=1, pp=16, dp=1),
                                         memory_budget_gb=None) if r == "heads")
    wrong = dict(pl.rejections(arch, PAPER, gpu=hw.A100_SXM_80GB,
                               cluster=hw.default_cluster(hw.H100_SXM), memory_budget_gb=None))
    assert "gpu" in wrong
    with pytest.raises(ValueError, match="must be an int"):
        ParallelConfig(tp=8.5, pp=16, dp=128)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seq_len must be an int"):
        ParallelConfig(tp=8, pp=16, dp=128, seq_len=8192.0)  # type: ignore[arg-type]
    # a memory budget given where the GPU count goes is named, not read as 80 GPUs
    with pytest.raises(ValueError, match="n_gpus is a count of GPUs"):
        pl.validate(arch, PAPER, 80.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cluster"):
        pl.recommend(arch, 16384, 2048, 8192, hw.A100_SXM_80GB,
                     cluster=hw.default_cluster(hw.H100_SXM))


ARCHS = (m.LLAMA3_8B, m.LLAMA3_70B, m.LLAMA3_405B, m.GPT3_175B, m.GENERIC_7B)


@pytest.mark.parametrize("seed", range(6))
def test_nothing_recommend_returns_fails_validation(seed: int) -> None:
    rng = random.Random(seed)
    arch = rng.choice(ARCHS)
    n = rng.choice([64, 256, 1024, 4096])
    stack = rng.choice([MODERN, LLAMA3])
    batch = n // rng.choice([1, 2, 4]) * rng.choice([1, 2])
    found = pl.recommend(arch, n, batch, 4096, hw.H100_SXM, top=20, stack=stack)
    for ranked in found.best:
        cfg = ranked.config
        assert pl.validate(arch, cfg, n, global_batch_seqs=batch, stack=stack,
                           memory_budget_gb=hw.H100_SXM.memory_bytes / 1e9) == [], cfg
        layout = resolve(arch, cfg)
        assert layout.chunks_even  # searched even when the stack would accept uneven
        assert cfg.virtual_stages == 1 or cfg.grad_accum >= cfg.pp or stack.interleave_m_below_p


def test_llama3_paper_layout_is_first_with_its_own_stack() -> None:
    found = pl.recommend(m.LLAMA3_405B, 16384, 2048, 8192, hw.H100_SXM, stack=LLAMA3, top=3,
                         zero_stages=(1, 3))
    best = found.best[0].config
    assert (best.tp, best.cp, best.pp, best.dp, best.virtual_stages) == (8, 1, 16, 128, 8)
    assert best.activation_recompute == "none" and best.zero_stage == 3


RUNS: list[dict[str, Any]] = json.loads(
    resources.files("solutions").joinpath("data/published_runs.json").read_text("utf-8"))
FIELDS = set(m.Architecture.__dataclass_fields__) - {"moe", "mla", "source"}
GPUS = {gpu.name: gpu for gpu in hw.GPUS.values()}


def _published(run: dict[str, Any]) -> tuple[m.Architecture, ParallelConfig]:
    arch = m.Architecture(**{k: v for k, v in run["model"].items() if k in FIELDS})
    lay = run["layout"]
    cfg = ParallelConfig(tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], cp=lay["cp"],
                         ep=lay["ep"], zero_stage=lay["zero_stage"],
                         micro_batch=lay["micro_batch"], grad_accum=lay["grad_accum"],
                         seq_len=lay["seq_len"], activation_recompute=lay["recompute"],
                         virtual_stages=lay["virtual_stages"])
    return arch, cfg


#: Runs the memory model cannot fit, each with the reason (strict: a fix must remove it).
_NEMOTRON_DP2 = ("DP = 2 leaves 6 bytes of Adam state per parameter on each GPU; with FP32 "
                 "main gradients the stage needs about 97 GB (85 GB with BF16 gradient "
                 "reduction, which NeMo 24.07's page does not state; the dgxc recipe of the "
                 "same layout sets grad_sync_dtype bf16, and that row fits)")
_OFFLOADED = ("Megatron-FSDP without recomputation at 2 x 8,192 tokens: the recipe moves 40 of "
              "the 80 layers' activations to host memory (cpu_offloading_num_layers=40), which "
              "the planner does not model, so it counts 330 GB on a 186 GB GPU")
MISFITS = {
    "nemo2407-nemotron-340b-128gpu-fp8": _NEMOTRON_DP2,
    "mbridge-260401-gb200-llama3-70b-64gpu-fp8cs": _OFFLOADED,
    "mbridge-2511-gb200-llama3-70b-64gpu-fp8cs": _OFFLOADED,
    "llama3-t4-8192gpu-s8192": "m = 32 = 2p micro-batches without recomputation: Megatron's "
    "groups of p keep every chunk's FP32 gradient across both groups (95 GB), a breadth-first "
    "order keeps both groups' activations; the paper's 8K run without checkpointing fits as "
    "the 16,384-GPU layout (m = p, 77 GB); how §3.3.2's tunable schedule ran m = 2p is not "
    "published",
}


def _fit_cases() -> list[Any]:
    cases = []
    for run in RUNS:
        if "n_experts" in run["model"]:  # _published builds dense layers only
            continue
        marks = ([pytest.mark.xfail(strict=True, reason=MISFITS[run["id"]])]
                 if run["id"] in MISFITS else [])
        cases.append(pytest.param(run, id=str(run["id"]), marks=marks))
    return cases


def test_most_published_runs_fit_and_the_misfits_are_named() -> None:
    fitting = [r for r in RUNS if "n_experts" not in r["model"] and r["id"] not in MISFITS]
    assert len(fitting) >= 40 and len(MISFITS) <= len(RUNS) // 10
    totals = sorted(memory_per_gpu(*_published(r), stack_named(r["stack"])).total_bytes
                    for r in fitting if r["stack"] != "llama3")
    assert 25e9 < totals[len(totals) // 2] < 80e9  # the memory is real, not vacuous


@pytest.mark.parametrize("run", _fit_cases())
def test_published_layouts_fit_the_gpu_they_ran_on(run: dict[str, Any]) -> None:
    # a run that trained fits its GPU's memory (80 GiB = 85.9 GB on an 80 GB part) with the
    # software it used; fused attention keeps no s^2 term, so none needs 10x the memory.
    # Llama 3's rows carry the paper's layout (v = 8, no recomputation), as read from the data
    arch, cfg = _published(run)
    stack = replace(stack_named(run["stack"]), **{
        k: v for k, v in run.get("stack_options", {}).items()
        if k in LoadedStack.__dataclass_fields__})
    capacity = GPUS[run["gpu"]].memory_bytes
    assert memory_per_gpu(arch, cfg, stack).total_bytes <= capacity


#: Mixture-of-experts runs the planner cannot hold to the GPU they trained on, with why.
MOE_MISFITS: dict[str, str] = {}


def _moe_cases() -> list[Any]:
    from solutions.performance.validation import PUBLISHED_RUNS
    return [pytest.param(r, id=r.label, marks=(
        [pytest.mark.xfail(strict=True, reason=MOE_MISFITS[r.label])]
        if r.label in MOE_MISFITS else []))
        for r in PUBLISHED_RUNS if r.arch.moe is not None]


def test_every_published_moe_run_is_held_to_its_gpu() -> None:
    assert len(_moe_cases()) >= 20 and len(MOE_MISFITS) <= 2


@pytest.mark.parametrize("run", _moe_cases())
def test_published_moe_layouts_fit_the_gpu_they_ran_on(run: Any) -> None:
    # the same check with the experts: the run's own architecture and stack, options included
    used = memory_per_gpu(run.arch, run.config, run.stack).total_bytes
    assert used <= run.cluster.gpu.memory_bytes


def test_search_judges_ten_thousand_layouts_and_ranks_the_valid_ones() -> None:
    # how fast it does so is benchmarks/recommend_speed.py's to measure, not a test's
    found = ps.recommend(m.LLAMA3_405B, 16384, 2048, 8192, hw.H100_SXM,
                         zero_stages=(0, 1, 2, 3))
    assert found.candidates >= 10_000 and 0 < found.valid < found.candidates
    times = [r.estimate.step_time_s for r in found.best]
    assert len(times) == 5 and times == sorted(times)


def test_llama3_rows_are_the_run_as_published() -> None:
    # §3.3.2: end stages one layer short, a first chunk of only the embedding and a last of
    # only the head: 126 layers + 2 slots = 128 = 16 stages x 8 one-layer chunks; 8K trained
    # "without activation checkpointing"; the data file says so, no test overrides it
    rows = [r for r in RUNS if r["source_id"] == "llama3-2024"]
    assert len(rows) == 3
    for run in rows:
        arch, cfg = _published(run)
        assert run["stack"] == "llama3" and cfg.zero_stage == 3
        assert (arch.n_layers + 2) / cfg.pp == cfg.virtual_stages == 8
        assert max(max(c) for c in chunk_layers(arch.n_layers, cfg.pp, 8)) == 1
        assert cfg.activation_recompute == "none"
        assert "without activation checkpointing" in run["assumptions"]
