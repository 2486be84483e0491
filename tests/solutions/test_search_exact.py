"""The search's and the step model's shortcuts change no result.

recommend()'s shortcuts (``solutions.planner.search`` module doc) are a memo of each
pipeline stage's work, activations and buffers shared by a layout's ZeRO stages, a lower
bound on the step that passes over layouts slower than the ones kept, and the rule that a
layout too large for memory rules out the recomputation modes that keep more.
``exhaustive=True`` turns all three off (every layout judged, every valid one estimated on
its own) and ranks exactly the layouts, with exactly the estimates, that the search ranks.
The step model times only the stages that can be the busiest; timing every stage finds
none slower.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import fields, replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import ParallelConfig
from solutions.performance.comm import Links
from solutions.performance.model import breakdown_s, step_lower_bound_s
from solutions.performance.stage import busiest_stage, per_microbatch_s, stage_time
from solutions.planner.search import _grid, fits_memory, recommend
from solutions.planner.validity import structural_problems
from solutions.stack import FSDP2, LLAMA3, MODERN, Stack, for_layout

#: (name, arch, GPUs, batch, sequence, GPU, stack, ZeRO stages, hybrid sharding)
SEARCHES = [
    # Llama 3's stack: FP32 accumulation per chunk, where a larger micro-batch can need
    # less memory (the case that showed the old micro-batch rule wrong)
    ("llama3-405b", m.LLAMA3_405B, 16384, 2048, 8192, hw.H100_SXM, LLAMA3, (0, 1, 2, 3), False),
    # PyTorch FSDP2 with hybrid sharding: dp_shard varies too
    ("fsdp2-70b-hybrid", m.LLAMA3_70B, 256, 512, 8192, hw.H100_SXM, FSDP2, (0, 1, 3), True),
    # a MoE model: EP searched, every stage checked, the all-to-alls overlapped with
    # compute, which makes a stage's EP time depend on its accumulation pass
    ("deepseek-v3-ep-overlap", m.DEEPSEEK_V3, 512, 1024, 4096, hw.H100_SXM,
     replace(MODERN, ep_comm_overlap=True), (1, 3), False),
]


@pytest.mark.parametrize("top", [1, 40])
@pytest.mark.parametrize(("name", "arch", "gpus", "batch", "seq", "gpu", "stack", "zero",
                          "hybrid"), SEARCHES, ids=[s[0] for s in SEARCHES])
def test_the_shortcuts_rank_what_estimating_everything_ranks(
        name: str, arch: m.Architecture, gpus: int, batch: int, seq: int, gpu: hw.GPU,
        stack: Stack, zero: tuple[int, ...], hybrid: bool, top: int) -> None:
    kwargs = dict(zero_stages=zero, stack=stack, hybrid_sharding=hybrid, top=top)
    fast = recommend(arch, gpus, batch, seq, gpu, **kwargs)  # type: ignore[arg-type]
    every = recommend(arch, gpus, batch, seq, gpu, exhaustive=True,
                      **kwargs)  # type: ignore[arg-type]
    assert every.valid > top  # the ranking has something to choose from
    assert (fast.candidates, fast.valid) == (every.candidates, every.valid)
    assert len(fast.best) == min(top, every.valid)
    # the same layouts, in the same order, with the same estimates and tie groups
    assert fast.best == every.best


def _valid_layouts(arch: m.Architecture, gpus: int, batch: int, seq: int, gpu: hw.GPU,
                   stack: Stack, zero: tuple[int, ...], hybrid: bool,
                   ) -> list[ParallelConfig]:
    node = hw.default_cluster(gpu).gpus_per_node
    return [cfg for cfg in _grid(arch, gpus, batch, seq, node, zero, stack=stack, hybrid=hybrid)
            if not structural_problems(arch, cfg, None, node, stack)
            and fits_memory(arch, cfg, gpu.memory_bytes / 1e9, stack)]


@pytest.mark.parametrize(("name", "arch", "gpus", "batch", "seq", "gpu", "stack", "zero",
                          "hybrid"), SEARCHES, ids=[s[0] for s in SEARCHES])
def test_the_lower_bound_never_exceeds_the_step(
        name: str, arch: m.Architecture, gpus: int, batch: int, seq: int, gpu: hw.GPU,
        stack: Stack, zero: tuple[int, ...], hybrid: bool) -> None:
    cluster = hw.default_cluster(gpu)
    layouts = _valid_layouts(arch, gpus, batch, seq, gpu, stack, zero, hybrid)
    sample = random.Random(31).sample(layouts, min(400, len(layouts)))
    ratios = []
    for cfg in sample:
        step = sum(breakdown_s(arch, cfg, gpu, cluster, stack).values())
        bound = step_lower_bound_s(arch, cfg, gpu, cluster, stack)
        assert 0 < bound <= step * (1 + 1e-12), cfg
        ratios.append(bound / step)
    # a bound far below every step would pass over nothing: it is the bulk of most steps
    assert max(ratios) > 0.8


def test_the_sharding_free_key_reads_every_field_but_the_sharding() -> None:
    base = ParallelConfig(tp=2, pp=4, dp=8, ep=2, cp=2, zero_stage=1, micro_batch=2,
                          grad_accum=8, seq_len=4096, activation_recompute="selective",
                          virtual_stages=2, etp=1, dp_shard=4, pipeline_rounds=2)
    changed = {"tp": 4, "pp": 2, "dp": 16, "ep": 4, "cp": 1, "micro_batch": 1,
               "grad_accum": 16, "seq_len": 8192, "activation_recompute": "full",
               "virtual_stages": 1, "etp": 2, "pipeline_rounds": 4,
               "zero_stage": 3, "dp_shard": 8}
    assert set(changed) == {f.name for f in fields(ParallelConfig)}  # a new field is listed
    for name, value in changed.items():
        other = replace(base, **{name: value})
        same = other.sharding_free_key() == base.sharding_free_key()
        assert same == (name in ("zero_stage", "dp_shard")), name
    # the key of every ZeRO stage and shard group of one layout is the same
    keys = {replace(base, zero_stage=z, dp_shard=s).sharding_free_key()
            for z, s in itertools.product((1, 2, 3), (None, 2, 4, 8))}
    assert len(keys) == 1


@pytest.mark.parametrize(("name", "arch", "gpus", "batch", "seq", "gpu", "stack", "zero",
                          "hybrid"), SEARCHES, ids=[s[0] for s in SEARCHES])
def test_the_busiest_stage_is_the_slowest_of_all(
        name: str, arch: m.Architecture, gpus: int, batch: int, seq: int, gpu: hw.GPU,
        stack: Stack, zero: tuple[int, ...], hybrid: bool) -> None:
    # the step model times only the candidate stages (the most layers of each kind, and
    # the last); every stage, timed, is never slower than the one it picks
    cluster = hw.default_cluster(gpu)
    layouts = _valid_layouts(arch, gpus, batch, seq, gpu, stack, zero, hybrid)
    for cfg in random.Random(7).sample(layouts, min(200, len(layouts))):
        st = for_layout(stack, cfg.pp)
        links = Links(cluster, cfg, st.pp_outermost, st.flat_dp_collectives,
                      st.folded_expert_groups)
        _, busiest = busiest_stage(arch, cfg, gpu, st, links)
        slowest = max(per_microbatch_s(stage_time(arch, cfg, gpu, st, links, i))
                      for i in range(cfg.pp))
        assert slowest == per_microbatch_s(busiest), cfg
