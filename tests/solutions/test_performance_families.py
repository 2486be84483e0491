"""Validation by software family, ranking within sweeps, and memory against measured peaks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from solutions.performance import families as fam
from solutions.performance import fit
from solutions.performance import validation as pv

RUNS = pv.PUBLISHED_RUNS
DOC = Path(__file__).resolve().parents[2] / "docs" / "validation.md"


def test_kendall_tau_by_counting_pairs() -> None:
    # (1,2,3) against (1,3,2): pairs (1,2) +, (1,3) +, (2,3) - -> (2 - 1) / 3
    assert fam.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert fam.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert fam.kendall_tau([1, 2], [5, 9]) == 1.0
    assert fam.kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 3)  # a tie scores 0
    # equal up to rounding is a tie too: 0.1 + 0.2 is not 0.3 in floating point
    assert fam.kendall_tau([0.1 + 0.2, 0.3, 1.0], [2, 1, 3]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        fam.kendall_tau([1.0], [1.0])


def test_a_family_is_the_stack_preset_the_run_used() -> None:
    # releases of one library are one family
    assert {r.family for r in RUNS} == {"megatron-lm", "megatron-core", "deepspeed-zero3",
                                        "deepspeed-pipeline", "fsdp", "fsdp2", "llama3"}


def test_a_family_left_out_is_predicted_by_constants_that_never_saw_it() -> None:
    # second path: fit by hand on the other families' fit rows, then predict the family
    family = "megatron-lm"
    result = next(r for r in fam.leave_one_family_out(RUNS) if r.family == family)
    others = [r for r in RUNS if r.family != family and r.fitted]
    before = fit.current()
    with fit.constants_set(fit.fit(others)):
        errors = sorted(abs(r.error()) for r in RUNS if r.family == family)
    assert fit.current() == before
    assert result.fit_rows == len(others)
    assert result.model.median == pytest.approx((errors[4] + errors[5]) / 2)


def test_zero3_scaling_rows_fall_with_scale_and_stay_within_30_percent() -> None:
    # Narayanan et al. 2021, Table 2: ZeRO-3 per-GPU throughput falls as GPUs are added
    # (144, 88, 44 TFLOP/s at 384, 768, 1,536 GPUs); the model must fall with them
    rows = [r for r in RUNS if r.source_id == "narayanan2021-zero3"]
    assert len(rows) == 6
    for model in ("GPT 174.6B", "GPT 529.6B"):
        series = sorted((r for r in rows if r.arch.name == model),
                        key=lambda r: r.config.n_gpus)
        predicted = [r.predicted() for r in series]
        assert predicted == sorted(predicted, reverse=True)
        assert predicted[0] > 2.2 * predicted[-1]  # measured: 3.3x and 2.9x
    assert all(abs(r.error()) <= 0.30 for r in rows)


def test_llama3_rows_meet_the_family_goal_with_the_kernel_of_their_time() -> None:
    # Table 4's rows (MFU under PaLM's full count, none fitted on): the family left out is
    # within 10 % at the median with FlashAttention-2's rate, the kernel PyTorch ran on H100
    # while Llama 3 405B pre-trained; the Hopper kernels' rate put the 128K row at +38 %
    rows = [r for r in RUNS if r.family == "llama3"]
    assert len(rows) == 3 and not any(r.fitted for r in rows)
    assert all(r.stack.attention_kernel == "flash2" for r in rows)
    errors = sorted(abs(r.error()) for r in rows)
    assert errors[1] <= 0.10 and errors[2] <= 0.15
    hopper = [replace(r, stack=replace(r.stack, attention_kernel="hopper")) for r in rows]
    assert max(abs(r.error()) for r in hopper) > 0.30  # the row the kernel decides


#: Measured peaks the planner misses by more than 10 %, and what is known of why.
_PIPELINE_405B = (
    "the planner is 15-16 % below the measured peaks of torchtitan's 405B pipeline runs (23 % "
    "for 1F1B), counting model states as FSDP2 holds them (FP32 master shard, 1-byte "
    "FP8-gathered weights kept for the step, the FP32 accumulator of the chunk in progress), "
    "the flat gather buffers and last step's shards its side streams keep reserved, "
    "in-flight layer inputs and the rebuilt layer, torch.distributed.pipelining's "
    "per-micro-batch receive buffers and kept outputs, loss_parallel's buffers, the repeated "
    "K/V gathered under CP. The five runs other than 1F1B miss by one amount, 11-13 GiB, "
    "whatever the schedule and CP degree, and CP 8's 7.8 GiB jump over CP 4 is its gathered "
    "weights staying 16-bit (torchao's float8 all-gather is off at FSDP degree 1): a term of "
    "that size is not counted. The figures are the allocator's reserved peak, whose reserve "
    "beyond what its pools held no published row measures apart")
MEMORY_MISSES = {r.label: _PIPELINE_405B for r in RUNS
                 if r.memory_gib is not None and r.arch.n_layers == 126 and r.config.pp == 8}
assert len(MEMORY_MISSES) == 6


def test_memory_of_measured_runs_within_ten_percent_when_allocation_is_lean() -> None:
    # torchtitan's measured peaks are the allocator's reserved memory; the compiled runs
    # keep fewer eager intermediates. The planner predicts allocated bytes.
    # Table 2's long-context runs (8B, 32K-262K tokens, CP 1-8) among them: their peak is
    # the 32K-token micro-batch's loss buffers (4.2e9 logits x 12 bytes = 50 GB)
    errors = {m.label: m.error for m in fam.memory_errors(RUNS) if m.label not in MEMORY_MISSES}
    compiled = {r.label for r in RUNS if r.stack.elementwise == "fused"}
    assert len(errors) >= 10 and len(compiled & set(errors)) >= 7
    assert all(-0.15 <= e <= 0.05 for e in errors.values())
    assert all(abs(e) <= 0.10 for k, e in errors.items() if k in compiled)


@pytest.mark.parametrize("label", [pytest.param(k, marks=pytest.mark.xfail(
    strict=True, reason=v)) for k, v in MEMORY_MISSES.items()])
def test_memory_misses_are_known(label: str) -> None:
    error = next(m.error for m in fam.memory_errors(RUNS) if m.label == label)
    assert abs(error) <= 0.10


def test_sweeps_rank_better_than_the_constant_baseline() -> None:
    sweeps = fam.sweep_ranking(RUNS)
    assert len(sweeps) >= 8
    model = sum(s.model_tau for s in sweeps) / len(sweeps)
    base = sum(s.baseline_tau for s in sweeps) / len(sweeps)
    assert model > base and model > 0.7


def test_docs_families_block_is_what_the_model_predicts_now() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- validation-families:start -->") + len(
        "<!-- validation-families:start -->")
    end = text.index("<!-- validation-families:end -->")
    assert text[start:end].strip() == fam.families_markdown(RUNS).strip()


def test_a_constant_no_fitted_row_depends_on_keeps_its_starting_value() -> None:
    # MosaicML's and IBM's FSDP rows run eager PyTorch: nothing in them reads Megatron-LM's
    # hand-fused passes or Transformer Engine's, so a fit on them alone leaves Transformer
    # Engine's where the search starts, not at the bottom of its grid.
    fsdp = [r for r in RUNS if r.family == "fsdp" and r.fitted]
    assert fsdp and all(r.stack.elementwise == "eager" for r in fsdp)
    constants = fit.fit(fsdp, rounds=1)
    # ... and no fitted FSDP row ran under a power limit, so the power law keeps its prior
    assert not any(r.power_limited for r in fsdp)
    for name in ("ELEMENTWISE_PASSES['fused']", fit.POWER_LAW):
        assert constants[name] == fit.START[name]
    # eager PyTorch's passes, which every one of these rows reads, are informed: their grid
    # values score differently (where the search ends may happen to be where it started)
    eager = constants["ELEMENTWISE_PASSES['eager']"]
    spec = next(c for c in fit.CONSTANTS if c.name == "ELEMENTWISE_PASSES['eager']")
    scores = set()
    for value in spec.grid:
        with fit.constants_set({**constants, spec.name: value}):
            scores.add(round(fit.score(fsdp), 9))
    assert len(scores) > 1
    # Megatron-LM's partly fused kernels, unread, sit midway between their two neighbours
    fused = fit.START["ELEMENTWISE_PASSES['fused']"]
    assert constants["ELEMENTWISE_PASSES['megatron']"] == (eager + fused) / 2


def test_the_fit_ends_where_no_two_constants_moved_together_do_better() -> None:
    # checked here by brute force, independently of the search: on the runs at full power,
    # every move of one or two of their constants by one grid step scores no better than
    # the fitted values; on the capped runs, no other value of the power law does
    best = fit.fit(RUNS)
    stages = ([r for r in RUNS if r.fitted and not r.power_limited],
              [c for c in fit.CONSTANTS if c.name != fit.POWER_LAW]), (
             [r for r in RUNS if r.fitted and r.power_limited],
             [c for c in fit.CONSTANTS if c.name == fit.POWER_LAW])
    for rows, constants in stages:
        with fit.constants_set(best):
            fitted_score = fit.score(rows)
        for i, first in enumerate(constants):
            for second in constants[i:]:
                for a in (-1, 1):
                    for b in (-1, 0, 1):
                        trial = dict(best)
                        for constant, step in ((first, a), (second, b)):
                            grid = constant.grid
                            k = grid.index(trial[constant.name]) + step
                            trial[constant.name] = grid[min(max(k, 0), len(grid) - 1)]
                        with fit.constants_set(trial):
                            assert fit.score(rows) >= fitted_score - 1e-12, (
                                first.name, second.name, a, b)


def test_a_capped_run_moves_the_power_law_and_nothing_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a run under a power limit cannot tell a slower clock from a lower sustained share:
    # the constants of the runs at full power are the same with it in the fit or out
    capped = [r for r in RUNS if r.fitted and r.power_limited]
    assert capped
    without = [replace(r, fitted=False) if r in capped else r for r in RUNS]
    with_it, without_it = fit.fit(RUNS), fit.fit(without)
    assert without_it[fit.POWER_LAW] == fit.START[fit.POWER_LAW]  # no capped run: the prior
    assert {k: v for k, v in with_it.items() if k != fit.POWER_LAW} == {
        k: v for k, v in without_it.items() if k != fit.POWER_LAW}
    # the capped run does move the law: one grid step off the measured prior (k = 1), and
    # searched from the cubic law instead it lands on the same value, where without the
    # capped run it would stay cubic
    assert with_it[fit.POWER_LAW] == 1.25
    monkeypatch.setitem(fit.START, fit.POWER_LAW, 3.0)
    assert fit.fit(RUNS)[fit.POWER_LAW] == with_it[fit.POWER_LAW]
    assert fit.fit(without)[fit.POWER_LAW] == 3.0
