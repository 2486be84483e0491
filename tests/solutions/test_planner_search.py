"""The planner's search: ties within the model's error, its printed table, expert
parallelism searched for MoE models."""

from __future__ import annotations

from solutions import hardware as hw
from solutions import models as m
from solutions import planner as pl
from solutions.planner import search as ps


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
