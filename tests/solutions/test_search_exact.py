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
from dataclasses import dataclass, fields, replace

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions.layout import ParallelConfig
from solutions.performance.comm import Links
from solutions.performance.model import breakdown_s, step_lower_bound_s
from solutions.performance.stage import busiest_stage, per_microbatch_s, stage_time
from solutions.planner.search import Search, _grid, fits_memory, recommend
from solutions.planner.validity import structural_problems
from solutions.stack import FSDP2, LLAMA3, MODERN, Stack, for_layout


@dataclass(frozen=True)
class Case:
    """One search: a model on a cluster of one GPU, for one stack and set of ZeRO stages."""

    name: str
    arch: m.Architecture
    gpus: int
    batch: int
    seq: int
    stack: Stack
    zero: tuple[int, ...]
    hybrid: bool
    gpu: hw.GPU = hw.H100_SXM

    def recommend(self, top: int, exhaustive: bool = False) -> Search:
        return recommend(self.arch, self.gpus, self.batch, self.seq, self.gpu,
                         zero_stages=self.zero, stack=self.stack, top=top,
                         hybrid_sharding=self.hybrid, exhaustive=exhaustive)

    def sample(self, n: int, seed: int) -> list[ParallelConfig]:
        """``n`` of the search's valid layouts (those that build and fit), drawn at random."""
        node = hw.default_cluster(self.gpu).gpus_per_node
        valid = [cfg for cfg in _grid(self.arch, self.gpus, self.batch, self.seq, node,
                                      self.zero, stack=self.stack, hybrid=self.hybrid)
                 if not structural_problems(self.arch, cfg, None, node, self.stack)
                 and fits_memory(self.arch, cfg, self.gpu.memory_bytes / 1e9, self.stack)]
        return random.Random(seed).sample(valid, min(n, len(valid)))


CASES = [
    # Llama 3's stack: FP32 accumulation per chunk, where a larger micro-batch can need
    # less memory (the case that showed the old micro-batch rule wrong)
    Case("llama3-405b", m.LLAMA3_405B, 16384, 2048, 8192, LLAMA3, (0, 1, 2, 3), False),
    # PyTorch FSDP2 with hybrid sharding: dp_shard varies too
    Case("fsdp2-70b-hybrid", m.LLAMA3_70B, 256, 512, 8192, FSDP2, (0, 1, 3), True),
    # a MoE model: EP searched, every stage checked, the all-to-alls overlapped with
    # compute, which makes a stage's EP time depend on its accumulation pass
    Case("deepseek-v3-ep-overlap", m.DEEPSEEK_V3, 512, 1024, 4096,
         replace(MODERN, ep_comm_overlap=True), (1, 3), False),
]
each_case = pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])


@pytest.mark.parametrize("top", [1, 40])
@each_case
def test_the_shortcuts_rank_what_estimating_everything_ranks(case: Case, top: int) -> None:
    fast, every = case.recommend(top), case.recommend(top, exhaustive=True)
    assert every.valid > top  # the ranking has something to choose from
    assert (fast.candidates, fast.valid) == (every.candidates, every.valid)
    assert len(fast.best) == min(top, every.valid)
    # the same layouts, in the same order, with the same estimates and tie groups
    assert fast.best == every.best


@each_case
def test_the_lower_bound_never_exceeds_the_step(case: Case) -> None:
    cluster = hw.default_cluster(case.gpu)
    ratios = []
    for cfg in case.sample(400, seed=31):
        step = sum(breakdown_s(case.arch, cfg, case.gpu, cluster, case.stack).values())
        bound = step_lower_bound_s(case.arch, cfg, case.gpu, cluster, case.stack)
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


@each_case
def test_the_busiest_stage_is_the_slowest_of_all(case: Case) -> None:
    # the step model times only the candidate stages (the most layers of each kind, and
    # the last); every stage, timed, is never slower than the one it picks
    cluster = hw.default_cluster(case.gpu)
    for cfg in case.sample(200, seed=7):
        st = for_layout(case.stack, cfg.pp)
        links = Links.of(cluster, cfg, st)
        _, busiest = busiest_stage(case.arch, cfg, case.gpu, st, links)
        slowest = max(per_microbatch_s(stage_time(case.arch, cfg, case.gpu, st, links, i))
                      for i in range(cfg.pp))
        assert slowest == per_microbatch_s(busiest), cfg
