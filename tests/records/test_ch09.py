"""Chapter 9 records: canonical answers worked out by hand, and the design challenge's rules."""

from __future__ import annotations

import pytest

from autograder.exercise import Exercise
from autograder.kinds import Constraints, Function, Ordering
from solutions import hardware as hw
from solutions import models as m
from solutions import performance as perf
from workbook.records import ch09, ch09_challenge, ch09_step_time

RECORDS = {r.id: r for r in (*ch09.EXERCISES, *ch09_challenge.CHALLENGES)}


def ex(exercise_id: str) -> Exercise:
    return RECORDS[exercise_id]


def test_records_in_order() -> None:
    assert [r.id for r in ch09.EXERCISES] == [f"9.{i}" for i in range(1, 10)]
    assert [r.category for r in ch09.EXERCISES] == ["derive"] * 7 + ["design", "derive"]
    assert [r.id for r in ch09_challenge.CHALLENGES] == ["9.10", "9.11", "9.12", "9.13"]


def test_9_1_dp_degree() -> None:
    assert ex("9.1").expected() == 128  # 16384 / (8 x 1 x 16)


def test_9_2_heaviest_stage() -> None:
    assert ex("9.2").expected() == 8  # ceil(126 / 16); 126 = 7 + 14 x 8 + 7


def test_9_3_weights_per_gpu_with_gqa() -> None:
    # layer: 2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248 = 3,187,671,040
    # 8 layers / TP 8 x 2 bytes = 6,375,342,080 B (the seed's 4d^2 gave 7.38 GB)
    assert ex("9.3").expected() == pytest.approx(6.37534208)
    wrong = [w for w, _ in ex("9.3").wrong_answers()]
    # 4d^2 attention: (1,073,741,824 + 2,617,245,696) x 2 B = 7,381,975,040 B
    assert any(w == pytest.approx(7.38197504) for w in wrong)


def test_9_4_pf_days() -> None:
    # 6 x 405e9 x 15.6e12 = 3.7908e25 FLOPs / 8.64e19 = 438,750 PF-days
    assert ex("9.4").expected() == pytest.approx(438_750)


def test_9_5_days_at_40_percent_mfu() -> None:
    # 3.7908e25 / (16384 x 989.4e12 x 0.40 = 6.484132e18) = 5.846233e6 s = 67.665 days
    assert ex("9.5").expected() == pytest.approx(67.6652, rel=1e-5)
    wrong = [w for w, _ in ex("9.5").wrong_answers()]
    assert any(w == pytest.approx(33.8326, rel=1e-5) for w in wrong)  # sparse 1978.8 peak


def test_9_6_interleaved_bubble() -> None:
    # m = 16 / 1 = 16; (16 - 1) / (16 x 2) = 0.46875 -> 46.875 %
    assert ex("9.6").expected() == pytest.approx(46.875)
    wrong = [w for w, _ in ex("9.6").wrong_answers()]
    assert any(w == pytest.approx(93.75) for w in wrong)    # no interleaving: 15/16
    assert any(w == pytest.approx(187.5) for w in wrong)    # the seed's m = 4: 15/8
    assert any(w == pytest.approx(31.914893) for w in wrong)  # 15 / (32 + 15), wall time


def test_9_6_no_interleaving_misconception_when_v_is_one() -> None:
    params = dict(ex("9.6").params, v=1)
    # (16 - 1) / 16 = 93.75 % is the right answer now, so it must not be offered as wrong
    assert ex("9.6").expected(params) == pytest.approx(93.75)
    assert all(w != pytest.approx(93.75) for w, _ in ex("9.6").wrong_answers(params))


def test_9_7_dp_allreduce() -> None:
    # S = 8 x 3,187,671,040 / 8 x 2 B = 6,375,342,080 B; 2 x 127/128 x S = 12,651,069,440 B
    assert ex("9.7").expected() == pytest.approx(12.65106944)


def test_9_8_order() -> None:
    record = ex("9.8")
    assert type(record.answer_kind) is Ordering
    assert record.expected() == ("TP", "CP", "PP", "DP")  # Llama 3 §3.3.2
    assert sorted(record.answer_kind.items) == ["CP", "DP", "PP", "TP"]
    assert record.answer_kind.items != record.expected()  # the items are not shown pre-ordered


def test_9_9_electricity() -> None:
    # 16384 x 0.7 kW = 11,468.8 kW x 77 x 24 h = 21,194,342.4 kWh x $0.05 = $1,059,717.12
    assert ex("9.9").expected() == pytest.approx(1_059_717.12)


def _failures(answer: dict, params: dict | None = None) -> list[str]:
    record = ex("9.10")
    assert type(record.answer_kind) is Constraints
    p = record.params if params is None else params
    return [rule.name for rule in record.answer_kind.rules if not rule.holds(answer, p)]


def test_9_10_reference_is_the_papers_layout() -> None:
    assert ex("9.10").expected() == {"tp": 8, "pp": 16, "dp": 128}
    assert _failures({"tp": 8, "pp": 16, "dp": 128}) == []


def test_9_10_another_right_answer() -> None:
    # with v = 4: PP 32 holds at most 4 layers per stage (4 slots: v = 4 fits); DP 64 -> m = 32;
    # bubble 31 / (32 x 4) = 24.2 % < 50 %; with v = 8 its 4 slots cannot make 8 chunks
    params = dict(ex("9.10").params, v=4)
    assert _failures({"tp": 8, "pp": 32, "dp": 64}, params) == []
    assert _failures({"tp": 8, "pp": 32, "dp": 64}) == ["layers per stage"]


@pytest.mark.parametrize(("answer", "broken"), [
    ({"tp": 16, "pp": 16, "dp": 64}, ["TP inside a node"]),
    ({"tp": 8, "pp": 16, "dp": 64}, ["gpus multiply out"]),
    ({"tp": 8, "pp": 8, "dp": 256}, ["layers per stage"]),          # 16 layers > 8
    ({"tp": 8, "pp": 128, "dp": 16}, ["layers per stage"]),         # 128 stages > 126 layers
    # m = 8: 15/16 = 94 %; TP 4 also doubles each GPU's weights and activations (> 80 GB)
    ({"tp": 4, "pp": 16, "dp": 256}, ["memory fits", "bubble below target"]),
    # TP 1: 8 layers x 3.188B x 2 B = 51 GB of gathered weights and 8 x the activations of
    # TP 8, far over 80 GB; and m = 2: bubble 375 %
    ({"tp": 1, "pp": 16, "dp": 1024}, ["memory fits", "bubble below target"]),
    ({"tp": 8, "pp": 16, "dp": 96}, ["gpus multiply out", "batch splits over DP"]),
])
def test_9_10_violations(answer: dict, broken: list[str]) -> None:
    assert _failures(answer) == broken


def test_9_10_a_non_layout_fails_every_rule() -> None:
    assert len(_failures({"tp": 8, "pp": 16, "dp": 0})) == 6
    assert len(_failures({"tp": 8, "pp": 16})) == 6


def test_9_10_memory_rule() -> None:
    # Llama 3's FSDP, no recomputation, v = 8: model state 6.43 GB (gathered weights + shard)
    # + 0.09 + 1.59 GB (FP32 gradient shard of the chunks not in progress, and the one-layer
    # chunk in progress) + 0.30 GB Adam,
    # and 68.25 GB of activations (all 16 x 8 layer passes in flight), with a 0.27 GB TP
    # gradient buffer: 76.9 GB, so a 70 GB budget rejects it; with v = 2 the chunk in
    # progress holds 4 layers (6.38 GB): 81.7 GB
    params = dict(ex("9.10").params, memory_budget_gb=70)
    assert _failures({"tp": 8, "pp": 16, "dp": 128}, params) == ["memory fits"]
    assert _failures({"tp": 8, "pp": 16, "dp": 128}) == []
    # the bubble with v = 2 is 15/32 = 46.9 % < 50 %: only memory fails
    assert _failures({"tp": 8, "pp": 16, "dp": 128}, dict(ex("9.10").params, v=2)) == [
        "memory fits"]


def test_9_10_memory_rule_binds_in_every_variant() -> None:
    # a rule that never binds teaches nothing (under ZeRO-3 at rest it never did): in every
    # variant several layouts that multiply out fail on memory, and some layout passes
    record = ex("9.10")
    for seed in range(30):
        params = record.draw(seed)
        over = 0
        for tp in (1, 2, 4, 8):
            for pp in range(1, 127):
                if params["n_gpus"] % (tp * pp):
                    continue
                over += "memory fits" in _failures(
                    {"tp": tp, "pp": pp, "dp": params["n_gpus"] // (tp * pp)}, params)
        assert over >= 2, params
        assert _failures(record.expected(params), params) == []


def test_9_10_explanation_lists_exactly_the_passing_layouts() -> None:
    record = ex("9.10")
    for seed in (None, *range(12)):
        params = dict(record.params) if seed is None else record.draw(seed)
        text = record.render_explanation(params)
        for tp in (1, 2, 4, 8):
            for pp in (4, 8, 16, 32, 64):
                dp = params["n_gpus"] // (tp * pp)
                named = f"TP {tp}, PP {pp}, DP {dp}" in text.split(". For")[0]
                assert named == (_failures({"tp": tp, "pp": pp, "dp": dp}, params) == [])


def test_9_10_every_variant_has_a_valid_reference() -> None:
    record = ex("9.10")
    for seed in range(40):
        params = record.draw(seed)
        assert _failures(record.expected(params), params) == []


def test_9_10_feedback_names_the_numbers() -> None:
    record = ex("9.10")
    assert type(record.answer_kind) is Constraints
    answer = {"tp": 16, "pp": 16, "dp": 64}
    text = " ".join(rule.feedback.format(**answer, **record.params)
                    for rule in record.answer_kind.rules)
    assert "TP = 16" in text and "16,384" in text


# -- 9.11-9.13: the step-time model ------------------------------------------------------

def test_9_11_mfu_of_the_405b_run() -> None:
    mfu = ex("9.11").expected()
    # Table 4: 400 TFLOPS per GPU = 164.6 tokens/s per GPU; 6 x 405e9 x 164.6 / 989.4e12
    assert mfu(405e9, 164.6, 989.4) == pytest.approx(6 * 405e9 * 164.6 / 989.4e12)
    assert mfu(405e9, 164.6, 989.4) == pytest.approx(0.4043, abs=1e-4)
    with pytest.raises(ValueError):
        mfu(405e9, 164.6, 0.0)


def test_9_12_step_from_costs() -> None:
    step = ex("9.12").expected()
    # 16 x 0.3 + 15/2 x 0.3 + (16 x 2 + 15) x 0.005 + 0.1 = 7.385 s
    assert step(0.3, 0.005, 16, 16, 2, 0.1) == pytest.approx(7.385)
    # m = 4 < p = 16 without interleaving: 4 x 0.3 + 15 x 0.3 = 5.7 s, bubble 375 % of 1.2 s
    assert step(0.3, 0.0, 16, 4, 1, 0.0) == pytest.approx(5.7)
    # interleaving with m < p (Llama 3's schedule): (15 + 1 x 12)/2 x 0.3 = 4.05 s of bubble,
    # 1.2 + 4.05 + (4 x 2 + 15) x 0.005 + 0.1 = 5.465 s; less than 5.7 + sends without v
    assert step(0.3, 0.005, 16, 4, 2, 0.1) == pytest.approx(5.465)


def _step_failures(answer: dict, params: dict | None = None) -> list[str]:
    record = ex("9.13")
    p = record.params if params is None else params
    rules = ch09_step_time.STEP_RULES
    return [rule.name for rule in rules if not rule.holds(answer, p)]


def test_9_13_reference_passes_every_variant() -> None:
    record = ex("9.13")
    for seed in range(12):
        params = record.variant(seed)
        assert _step_failures(record.expected(params), params) == []


def test_9_13_slow_layout_is_told_its_largest_cost() -> None:
    # TP 8 on 4 stages (m = 32), 16 stages without interleaving (m = 64, bubble 15/64 of the
    # work) and CP 16 at 8K tokens: each misses the margin and is told the cost the model
    # finds largest after compute
    slow = dict(tp=8, cp=1, pp=4, dp=16, v=1, micro_batch=1)
    bubbly = dict(tp=1, cp=4, pp=16, dp=8, v=1, micro_batch=1)
    gathers = dict(tp=1, cp=16, pp=8, dp=4, v=1, micro_batch=1)
    for answer in (slow, bubbly, gathers):
        cfg = ch09_step_time._layout(answer, ex("9.13").params)
        assert cfg is not None
        biggest = perf.estimate(m.LLAMA3_70B, cfg, hw.H100_SXM, hw.LLAMA3_H100).biggest_cost
        assert _step_failures(answer) == ["within the margin", f"largest cost is not {biggest}"]
    assert _step_failures(bubbly)[1] == "largest cost is not pp_bubble"


@pytest.mark.parametrize(("answer", "broken"), [
    (dict(tp=8, cp=1, pp=4, dp=8, v=1, micro_batch=1), ["GPUs multiply out"]),
    (dict(tp=4, cp=1, pp=4, dp=32, v=1, micro_batch=3), ["batch splits"]),
    (dict(tp=16, cp=1, pp=4, dp=8, v=1, micro_batch=1), ["layout builds"]),   # TP > node
    (dict(tp=4, cp=1, pp=64, dp=2, v=2, micro_batch=1), ["layout builds"]),   # 80 / 64 < v
    (dict(tp=4, cp=1, pp=4, dp=32, v=8, micro_batch=1), ["layout builds"]),   # 20 / 8 chunks
    (dict(tp=8, cp=1, pp=4, dp=16, v=2, micro_batch=16), ["layout builds"]),  # m = 2 < p
    (dict(tp=1, cp=1, pp=1, dp=512, v=1, micro_batch=1), ["memory fits"]),    # 70B per GPU
])
def test_9_13_invalid_layouts(answer: dict, broken: list[str]) -> None:
    assert _step_failures(answer) == broken


def test_9_13_a_non_layout_is_not_graded_by_speed() -> None:
    failures = _step_failures({"tp": 4, "pp": 4})
    assert "GPUs multiply out" in failures and "batch splits" in failures
    assert "within the margin" not in failures


def test_9_11_tests_only_throughputs_a_real_run_could_reach() -> None:
    import random

    record = ex("9.11")
    rng = random.Random(0)
    for _ in range(200):
        assert isinstance(record.answer_kind, Function)
        n_params, tokens_per_s, peak = record.answer_kind.cases(rng)
        mfu = 6 * n_params * tokens_per_s / (peak * 1e12)  # by hand, PaLM App. B
        assert 0.15 <= mfu <= 0.60


# -- every variant: the answer changes, and conditional sentences hold ----------------------

SEEDS = range(50)


@pytest.mark.parametrize("record", list(RECORDS.values()), ids=lambda r: r.id)
def test_every_variant_changes_the_answer(record: Exercise) -> None:
    printed = record.expected()
    for seed in range(5):
        params = record.variant(seed)  # NoVariantError if none changes the answer
        assert callable(printed) or record.expected(params) != printed


def test_9_2_says_not_whole_only_when_it_is_not() -> None:
    record = ex("9.2")
    for seed in SEEDS:
        p = record.draw(seed)
        assert p["n_layers"] % p["pp"], p                         # the prompt says so
        assert "does not divide" in record.render_explanation(p)
        assert record.expected(p) == -(-p["n_layers"] // p["pp"])


def test_9_6_sentences_follow_m_against_p() -> None:
    record = ex("9.6")
    for seed in (None, *SEEDS):
        p = record.params if seed is None else record.draw(seed)
        m_, pp, v = p["batch_per_dp"] // p["micro_batch"], p["pp"], p["v"]
        prompt, text = record.render_prompt(p), record.render_explanation(p)
        assert ("not interleaved" in prompt) == (v == 1)
        assert ("fewer micro-batches than stages" in prompt) == (v > 1 and m_ < pp)
        assert ("at least the" in text) == (m_ >= pp)
        assert ("still helps" in text) == (v > 1 and m_ < pp)
        # the number follows the simulator's formula, independent of the record
        idle = (pp - 1) + (v - 1) * max(0, pp - m_)
        assert record.expected(p) == pytest.approx(100 * idle / (m_ * v))


def test_9_8_notes_say_cp_is_exposed() -> None:
    notes = ex("9.8").notes
    assert "exposed" in notes and "overlap" not in notes.split("CP")[1].split(";")[0]


def test_9_11_notes_give_both_flop_counts() -> None:
    # 6N: 400e12 / (6 x 405e9) = 164.6; PaLM: + 12 x 126 x 128 x 128 x 8192 per token
    palm = 400e12 / (6 * 405e9 + 12 * 126 * 128 * 128 * 8192)
    assert round(palm) == 152
    assert "164.6" in ex("9.11").notes and "152" in ex("9.11").notes


def _texts(record: Exercise, params: dict) -> list[str]:
    from autograder.template import fill

    texts = [record.render_prompt(params), record.render_explanation(params)]
    texts += [fill(h, params) for h in record.hints]
    texts += [fill(record.notes, params)] if record.notes else []
    texts += [feedback for _, feedback in record.wrong_answers(params)]
    return texts


@pytest.mark.parametrize("record", list(RECORDS.values()), ids=lambda r: r.id)
def test_every_ch09_text_is_finished_and_true_for_50_seeds(record: Exercise) -> None:
    import re

    for seed in (None, *SEEDS):
        params = dict(record.params) if seed is None else record.draw(seed)
        text = " ".join(_texts(record, params))
        assert not re.search(r"\{[A-Za-z_]\w*\}", text), (record.id, seed)
        assert not re.search(r"\b(?:nan|None|inf)\b", text), (record.id, seed)
        # sentences that depend on a condition must hold for these numbers
        if "is not whole" in text or "does not divide" in text:
            assert params["n_layers"] % params["pp"], (record.id, params)
        if record.id == "9.10":
            assert f"{params['gpu']}s" in record.render_prompt(params)
            ref = record.expected(params)
            assert f"TP {ref['tp']}, PP {ref['pp']}, DP {ref['dp']}" in text
            m_ = params["global_batch_seqs"] // ref["dp"]
            assert f"{m_} micro-batches per pipeline" in text


def _slots_per_stage(n_layers: int, pp: int) -> list[int]:
    """Layer slots per stage as the prompt states them: layers split evenly, or, where the
    layers plus the embedding and the head split evenly, the end stages one layer short and
    counting their embedding or head as a slot (Llama 3 §3.3.2: 126 + 2 = 16 x 8)."""
    if n_layers % pp == 0:
        return [n_layers // pp] * pp
    assert (n_layers + 2) % pp == 0, (n_layers, pp)
    return [(n_layers + 2) // pp] * pp


@pytest.mark.parametrize("seed", ["printed", *range(12)])
def test_9_10_the_printed_requirement_admits_the_reference(seed: object) -> None:
    record = ex("9.10")
    params = dict(record.params) if seed == "printed" else record.draw(seed)
    answer = record.expected(params)
    prompt = record.render_prompt(params)
    assert "layer slots" in prompt and "embedding or output head" in prompt
    slots = _slots_per_stage(params["n_layers"], answer["pp"])
    layers = [s - 1 if k in (0, len(slots) - 1) and params["n_layers"] % answer["pp"] else s
              for k, s in enumerate(slots)]
    assert min(slots) >= params["v"], (params, answer)
    assert max(layers) <= params["max_layers_per_stage"], (params, answer)
