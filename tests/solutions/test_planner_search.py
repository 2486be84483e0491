"""The planner's search: ties within the model's error, its printed table, expert
parallelism searched for MoE models."""

from __future__ import annotations

from dataclasses import replace

from solutions import hardware as hw
from solutions import models as m
from solutions import planner as pl
from solutions.performance.validation import PUBLISHED_RUNS
from solutions.planner import search as ps
from solutions.stack import MODERN


def test_tie_groups_start_where_the_model_error_is_exceeded() -> None:
    # 6 % tolerance: 100, 105 and 106 lie within 6 % of 100; 107 starts group 2, and
    # 112 is within 6 % of 107 (113.42) but 114 is not
    assert ps.tie_groups([100.0, 105.0, 106.0, 107.0, 112.0, 114.0]) == [1, 1, 1, 2, 2, 3]
    assert ps.tie_groups([]) == []


def test_recommend_prints_a_table_and_groups_its_ties() -> None:
    found = pl.recommend(m.LLAMA3_70B, 64, 512, 8192, hw.H100_SXM, top=6)
    times = [r.estimate.step_time_s for r in found.best]
    for r in found.best:  # a layout shares group 1 exactly when within 6 % of the fastest
        assert (r.group == 1) == (r.estimate.step_time_s <= times[0] * 1.06)
    lines = str(found).splitlines()
    assert lines[2].split()[:3] == ["#", "group", "layout"]
    assert len(lines) == 3 + len(found.best)
    assert found.best[0].label() in lines[3] and "Ranked(" not in str(found)


def test_recommend_searches_expert_parallelism_for_moe() -> None:
    found = pl.recommend(m.MODELS["deepseek-v3"], 2048, 3840, 4096, hw.H800_SXM, top=3,
                         zero_stages=(1,))
    assert found.best and all(r.config.ep > 1 for r in found.best)
    assert {c.ep for c in ps._grid(m.LLAMA3_8B, 64, 64, 4096, 8, (1,))} == {1}


def test_a_folding_stack_searches_expert_groups_wider_than_dp() -> None:
    # Qwen3-235B-A22B (128 experts of width 1,536) on 256 H100s with TP 2: without folding
    # EP must divide DP; with it EP x ETP tiles TP x CP x DP, ETP = TP or 1
    arch = next(r.arch for r in PUBLISHED_RUNS if "qwen3-235b" in r.label)
    folded = replace(MODERN, folded_expert_groups=True)
    plain_grid = set(ps._grid(arch, 256, 2048, 4096, 8, (1,), ("none",), MODERN))
    folded_grid = set(ps._grid(arch, 256, 2048, 4096, 8, (1,), ("none",), folded))
    assert plain_grid < folded_grid  # every traditional layout, and more
    assert all(c.dp % c.ep == 0 and c.expert_tp == c.tp for c in plain_grid)
    assert any(c.ep > c.dp for c in folded_grid)
    assert all((c.tp * c.cp * c.dp) % (c.ep * c.expert_tp) == 0 and c.expert_tp in (1, c.tp)
               for c in folded_grid)
    # TP 2 x PP 8 x DP 16 (the published preset): EP up to 32 with whole experts
    pairs = {(c.ep, c.expert_tp) for c in folded_grid if (c.tp, c.pp, c.cp) == (2, 8, 1)}
    assert {(32, 1), (16, 2), (16, 1), (1, 2)} <= pairs and (32, 2) not in pairs
    # the folded search can only find an equal or faster best layout: it judges a superset,
    # and its EP groups sit no farther apart
    best = [pl.recommend(arch, 256, 2048, 4096, hw.H100_SXM, top=1, zero_stages=(1,),
                         recompute_modes=("none", "full"), stack=s).best[0]
            for s in (MODERN, folded)]
    assert best[1].estimate.step_time_s <= best[0].estimate.step_time_s
