"""Chapter 2: Gradient accumulation: steps, saved communication, throughput, recomputation."""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Choice, Function, Misconception, Numeric
from autograder.kinds.base import Params
from autograder.kinds.choice import deal, dealt
from solutions import accumulation as acc

DDP_NO_SYNC = ("PyTorch documentation, torch.nn.parallel.DistributedDataParallel.no_sync "
               "(skip the gradient AllReduce on all but the last micro-batch)")
DEEPSPEED_BATCH = ("DeepSpeed configuration JSON documentation, 'Batch Size Related Parameters' "
                   "(train_batch_size = micro batch x gradient accumulation steps x GPUs)")
GOYAL = ("Goyal et al., 'Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour', 2017 "
         "(the global batch is what the optimizer sees)")
MEGATRON_RECOMPUTE = ("Narayanan et al., 'Efficient Large-Scale Language Model Training on GPU "
                      "Clusters Using Megatron-LM', SC21, §5.1 (96 vs 72 B s l h^2 FLOPs: full "
                      "recomputation adds one forward pass, 4/3 of the compute)")
CHEN = ("Chen et al., 'Training Deep Nets with Sublinear Memory Cost', arXiv:1604.06174, 2016 "
        "(activation checkpointing costs one extra forward pass)")

BATCH_NOTE = ("Vocabulary: the *micro-batch* is what one GPU runs in one forward + backward "
              "pass; an *accumulation step* is one such micro-batch per GPU; the *effective "
              "batch* is the number of sequences per optimizer step over all data-parallel "
              "GPUs: micro-batch x accumulation steps x data-parallel degree.")


MAX_BATCH_SEQUENCES = 16_384


def _vary_batch(rng: random.Random) -> dict[str, Any]:
    # micro-batch 1 is left out only because "target / dp" would then equal the answer.
    micro, dp = rng.choice([2, 4, 8, 16]), rng.choice([8, 16, 32, 64, 128])
    # Any whole number of accumulation steps is a real configuration (GPT-NeoX and
    # DeepSpeed configs use 3, 6, 12, ... as readily as powers of two); the effective batch
    # stays at most 16,384 sequences (Llama 3 405B ended at 16M tokens, 2,048 sequences).
    steps = rng.randint(2, max(2, min(128, MAX_BATCH_SEQUENCES // (micro * dp))))
    return dict(target_batch=micro * dp * steps,
                micro_batch=micro, dp_degree=dp)


# -- 2.1 --------------------------------------------------------------------------------

EX_2_1 = Exercise(
    id="2.1", chapter=2, category="derive", title="Accumulation steps",
    prompt=("You want an effective batch of {target_batch} sequences per optimizer step. Each "
            "GPU fits a micro-batch of {micro_batch} sequences, and {dp_degree} GPUs do data "
            "parallelism. How many gradient accumulation steps (micro-batches per GPU per "
            "optimizer step) do you need?"),
    notes=BATCH_NOTE,
    params=dict(target_batch=2048, micro_batch=4, dp_degree=8),
    vary=_vary_batch,
    answer_kind=Numeric(unit="steps", rel_tol=0.0, abs_tol=1e-9),
    reference=lambda p: acc.required_accumulation_steps(p["target_batch"], p["micro_batch"],
                                                        p["dp_degree"]),
    hints=(
        "How many sequences does the whole group process in one accumulation step?",
        "One accumulation step covers micro-batch x data-parallel degree sequences.",
        "Steps = effective batch / (micro-batch x GPUs).",
    ),
    explanation=(
        "One accumulation step processes {micro_batch} x {dp_degree} sequences over all GPUs, "
        "so reaching {target_batch} takes {target_batch} / ({micro_batch} x {dp_degree}) = "
        "{expected} steps. The gradient AllReduce runs once, after the last of them."
    ),
    misconceptions=(
        Misconception(lambda p: p["target_batch"] / p["micro_batch"],
                      "That ignores data parallelism: all {dp_degree} GPUs run a micro-batch "
                      "in every accumulation step."),
        Misconception(lambda p: p["target_batch"] / p["dp_degree"],
                      "That is the number of sequences per GPU; divide by the micro-batch too."),
    ),
    sources=(DEEPSPEED_BATCH, GOYAL),
)


# -- 2.2 --------------------------------------------------------------------------------

EX_2_2 = Exercise(
    id="2.2", chapter=2, category="derive", title="AllReduce time saved by accumulating",
    prompt=("Each GPU runs {accum_steps} micro-batches per optimizer step. Compare two ways of "
            "processing them: (a) all-reduce the gradients after every micro-batch, or (b) "
            "accumulate locally and all-reduce once, after the last micro-batch. One AllReduce "
            "takes {allreduce_ms} ms and does not overlap with compute. How many ms of "
            "AllReduce time does (b) save for those {accum_steps} micro-batches?"),
    params=dict(accum_steps=64, allreduce_ms=50.0),
    vary=lambda rng: dict(accum_steps=rng.randint(2, 128),
                          allreduce_ms=rng.choice([5.0, 8.0, 12.0, 20.0, 25.0, 35.0, 50.0,
                                                   80.0, 120.0, 150.0])),
    answer_kind=Numeric(unit="ms", rel_tol=0.005),
    reference=lambda p: acc.comm_time_saved_ms(p["accum_steps"], p["allreduce_ms"]),
    hints=(
        "Count the AllReduces in each plan.",
        "Plan (a) has one per micro-batch; plan (b) has one in total.",
        "Saved = (steps - 1) x AllReduce time.",
    ),
    explanation=(
        "Plan (a): {accum_steps} x {allreduce_ms} ms. Plan (b): one AllReduce, {allreduce_ms} "
        "ms. Saved: ({accum_steps} - 1) x {allreduce_ms} = {expected} ms. Two caveats: in "
        "PyTorch DDP the deferral needs `no_sync()` (otherwise every backward pass "
        "all-reduces); and plan (a) as usually run would also step the optimizer after each "
        "micro-batch, which is a different, smaller batch and different training dynamics."
    ),
    misconceptions=(
        Misconception(lambda p: p["accum_steps"] * p["allreduce_ms"],
                      "That is what plan (a) spends; plan (b) still does one AllReduce, so "
                      "subtract it."),
        Misconception(lambda p: p["allreduce_ms"],
                      "That is what plan (b) spends, not what it saves."),
        Misconception(lambda p: acc.comm_time_saved_ms(p["accum_steps"], p["allreduce_ms"]) / 1e3,
                      "That is in seconds; the answer is asked in ms."),
    ),
    sources=(DDP_NO_SYNC,),
)


# -- 2.3 --------------------------------------------------------------------------------

def _throughput(p: Params) -> float:
    return acc.throughput_seq_per_s(p["micro_batch"], p["accum_steps"], p["dp_degree"],
                                    p["micro_batch_ms"], p["allreduce_ms"])


EX_2_3 = Exercise(
    id="2.3", chapter=2, category="derive", title="Throughput with accumulation",
    prompt=("{dp_degree} data-parallel GPUs each run {accum_steps} micro-batches of "
            "{micro_batch} sequences per optimizer step. One micro-batch's forward + backward "
            "takes {micro_batch_ms} ms on each GPU (all GPUs work in parallel), and then one "
            "gradient AllReduce takes {allreduce_ms} ms, not overlapped with compute. Ignore "
            "the optimizer update. What is the training throughput in sequences per second, "
            "counted over all {dp_degree} GPUs?"),
    notes=BATCH_NOTE,
    params=dict(micro_batch=4, accum_steps=64, dp_degree=8, micro_batch_ms=120.0,
                allreduce_ms=50.0),
    # The AllReduce stays above 0.5 % of the step so that leaving it out is visibly wrong.
    vary=lambda rng: dict(micro_batch=rng.choice([1, 2, 4, 8]),
                          accum_steps=rng.choice([4, 8, 16, 32]),
                          dp_degree=rng.choice([8, 16, 64, 256]),
                          micro_batch_ms=rng.choice([40.0, 80.0, 120.0, 250.0]),
                          allreduce_ms=rng.choice([50.0, 80.0, 120.0, 200.0])),
    answer_kind=Numeric(unit="seq/s", rel_tol=0.002),
    reference=_throughput,
    hints=(
        "First the wall time of one optimizer step, then the sequences it processes.",
        "Step time = accumulation steps x micro-batch time + one AllReduce.",
        "Throughput = micro-batch x steps x GPUs / step time in seconds.",
    ),
    explanation=(
        "Step time = {accum_steps} x {micro_batch_ms} ms + {allreduce_ms} ms; the step "
        "processes {micro_batch} x {accum_steps} x {dp_degree} sequences, so the throughput "
        "is {expected} seq/s. For example, 64 micro-batches of 120 ms plus a 50 ms AllReduce "
        "take 7,730 ms for 2,048 sequences (4 x 64 x 8), and the AllReduce is only "
        "50/7,730 = 0.65 % of the step. Without accumulation (an AllReduce after each "
        "micro-batch) it would be 3,200/10,880 = 29 %."
    ),
    misconceptions=(
        Misconception(lambda p: _throughput(p) / p["dp_degree"],
                      "That is per GPU; the question counts all {dp_degree} GPUs."),
        Misconception(lambda p: acc.throughput_seq_per_s(
            p["micro_batch"], p["accum_steps"], p["dp_degree"], p["micro_batch_ms"], 0.0),
            "You left out the AllReduce; it runs once per optimizer step."),
        Misconception(lambda p: acc.throughput_seq_per_s(
            p["micro_batch"], p["accum_steps"], p["dp_degree"], p["micro_batch_ms"],
            p["accum_steps"] * p["allreduce_ms"]),
            "With accumulation there is one AllReduce per optimizer step, not one per "
            "micro-batch."),
        Misconception(lambda p: _throughput(p) / 1000,
                      "That is sequences per millisecond; convert the step time to seconds."),
    ),
    sources=(DDP_NO_SYNC, DEEPSPEED_BATCH),
)


# -- 2.4 --------------------------------------------------------------------------------

def _cases_2_4(rng: random.Random) -> tuple[int, int, int]:
    micro, dp = rng.choice([1, 2, 3, 4, 6, 8, 16]), rng.choice([1, 2, 8, 24, 64, 512])
    return (rng.randint(1, 1 << 16), micro, dp)


EX_2_4 = Exercise(
    id="2.4", chapter=2, category="build", title="Write accumulation_plan",
    prompt=("Write `accumulation_plan(target_batch, micro_batch, dp_degree)`, returning the "
            "pair `(steps, effective_batch)`: the number of gradient accumulation steps needed "
            "to reach an effective batch of `target_batch` sequences with `micro_batch` "
            "sequences per GPU per step on `dp_degree` data-parallel GPUs, and the effective "
            "batch those steps actually give. When the target is not a multiple of "
            "`micro_batch * dp_degree`, **round up** (the fewest steps whose effective batch "
            "is at least the target). For example, a target of 1,000 with micro-batch 4 on 8 "
            "GPUs gives `(32, 1024)`."),
    notes=(BATCH_NOTE + " All three arguments are integers. Raise `ValueError` if any of them "
           "is < 1."),
    params={},
    vary=lambda rng: {},
    answer_kind=Function(
        function_name="accumulation_plan",
        signature="(target_batch, micro_batch, dp_degree)",
        cases=_cases_2_4,
        edge_cases=(
            (2048, 4, 8),    # divisible: (64, 2048)
            (1000, 4, 8),    # not divisible: 31.25 rounds up to 32, (32, 1024)
            (16, 4, 8),      # target below one step's worth: (1, 32)
            (1, 1, 1),       # the smallest valid input: (1, 1)
            (2049, 4, 8),    # one sequence over a multiple: (65, 2080)
            (0, 4, 8),       # no target: ValueError
            (2048, 0, 8),    # empty micro-batch: ValueError
            (2048, 4, 0),    # no GPUs: ValueError
            (-2048, 4, 8),   # negative target: ValueError
        ),
    ),
    reference=lambda p: acc.accumulation_plan,
    hints=(
        "One accumulation step covers micro_batch * dp_degree sequences.",
        "Steps: divide and round up (check the inputs before dividing). Effective batch: "
        "steps * micro_batch * dp_degree, not the target.",
        "Integer ceiling without floats: -(-a // b); return (steps, steps * micro_batch * "
        "dp_degree).",
    ),
    explanation=(
        "steps = ceil(target / (micro x dp)) and effective batch = steps x micro x dp. "
        "Rounding up guarantees the effective batch is at least the target; rounding down "
        "would fall short (31 steps = 992 sequences for the example). The effective batch, "
        "1,024 and not 1,000 in the example, is the batch the learning rate must be scaled "
        "for (chapter 3). Frameworks differ: DeepSpeed refuses a configuration whose "
        "train_batch_size is not exactly micro-batch x steps x GPUs, so in practice you pick "
        "a target that divides evenly. `-(-a // b)` is an exact integer ceiling; "
        "`math.ceil(a / b)` goes through a float."
    ),
    sources=(DEEPSPEED_BATCH,),
)


# -- 2.5 --------------------------------------------------------------------------------

def _plans_ms(target_batch: int, dp_degree: int, small_micro: int, small_ms: float,
              large_micro: int, large_ms: float) -> tuple[float, float]:
    """Compute time per optimizer step of plan 1 and plan 2 (checkpointed), in ms."""
    plan1 = acc.compute_ms_per_optimizer_step(target_batch, small_micro, dp_degree, small_ms)
    plan2 = acc.compute_ms_per_optimizer_step(target_batch, large_micro, dp_degree,
                                              acc.checkpointed_micro_batch_ms(large_ms))
    return plan1, plan2


def _scenario_2_5(target_batch: int, dp_degree: int, small_micro: int, small_ms: float,
                  large_ms: float, rng: random.Random | None = None) -> dict[str, Any]:
    """2.5's numbers, both plans' times and the three options dealt (shuffled by ``rng``)."""
    large_micro = 2 * small_micro
    plan1, plan2 = _plans_ms(target_batch, dp_degree, small_micro, small_ms, large_micro,
                             large_ms)
    if abs(plan1 - plan2) <= 1e-9 * max(plan1, plan2):
        raise ValueError("2.5 needs two plans of different speed")
    one_wins = plan1 < plan2
    ratio = large_ms / small_ms
    verdict = ("less than 4/3 times as efficient per sequence, so plan 2 is slower" if one_wins
               else "more than 4/3 times as efficient per sequence, so plan 2 wins back its "
               "recomputation")
    entries = [
        ("Plan 1: the smaller micro-batch without checkpointing",
         "Right: plan 2 halves the accumulation steps but each step takes "
         f"{ratio:.3g} times as long, and recomputation multiplies it by 4/3." if one_wins else
         f"Plan 2 halves the steps, and each takes {ratio:.3g} times as long as plan 1's; "
         "add recomputation's 4/3 and compare the two totals.", one_wins),
        ("Plan 2: the larger micro-batch with checkpointing",
         "Right: the larger micro-batch is " + verdict + "." if not one_wins else
         f"Half as many steps, but each processes twice the sequences in {ratio:.3g} times "
         "the time and pays 4/3 for recomputation: multiply it out and compare the two "
         "totals.", not one_wins),
        ("Both take the same time, because they process the same effective batch",
         "The same sequences are processed, but plan 2 recomputes the forward pass of every "
         "one of them, and its larger micro-batch runs at a different speed per sequence: "
         "compare the two totals.", False),
    ]
    return dict(target_batch=target_batch, dp_degree=dp_degree, small_micro=small_micro,
                small_ms=small_ms, large_micro=large_micro, large_ms=large_ms,
                plan1_ms=plan1, plan2_ms=plan2, verdict=verdict,
                **deal(entries, "ABC", rng))


def _vary_2_5(rng: random.Random) -> dict[str, Any]:
    small, dp = rng.choice([2, 4, 8]), rng.choice([8, 16, 32, 64])
    small_ms = rng.choice([100.0, 150.0, 200.0, 300.0])
    # 2x the sequences in 1.25-1.95x the time: plan 2 wins below 1.5x (4/3 x ratio < 2)
    ratio = rng.choice([1.25, 1.3, 1.4, 1.6, 1.7, 1.8, 1.9, 1.95])
    return _scenario_2_5(small * dp * rng.choice([8, 16, 32, 64]), dp, small, small_ms,
                         round(small_ms * ratio), rng)


EX_2_5 = Exercise(
    id="2.5", chapter=2, category="trace", title="Checkpointing for a bigger micro-batch?",
    prompt=("The effective batch is {target_batch} sequences on {dp_degree} GPUs. "
            "**Plan 1:** micro-batch {small_micro} without activation checkpointing; one "
            "micro-batch's forward + backward takes {small_ms} ms. **Plan 2:** micro-batch "
            "{large_micro}, which fits only with full activation checkpointing; without "
            "checkpointing its forward + backward would take {large_ms} ms, and checkpointing "
            "re-runs the forward pass, which is 1/3 of forward + backward. Communication and "
            "optimizer time are the same in both plans; ignore them. Which plan finishes an "
            "optimizer step's compute sooner?"),
    notes=BATCH_NOTE,
    params=_scenario_2_5(2048, 8, 8, 200.0, 380.0),
    vary=_vary_2_5,
    answer_kind=Choice(options=dealt("ABC")),
    reference=lambda p: p["right"],
    hints=(
        "Compute the accumulation steps of each plan first.",
        "Plan time = steps x micro-batch time; for plan 2 the micro-batch time is x 4/3.",
        "Plan 1: {target_batch} / ({small_micro} x {dp_degree}) steps x {small_ms} ms. Plan 2: "
        "{target_batch} / ({large_micro} x {dp_degree}) steps x {large_ms} x 4/3 ms.",
    ),
    explanation=(
        "Plan 1: {target_batch} / ({small_micro} x {dp_degree}) steps x {small_ms} ms = "
        "{plan1_ms:,.0f} ms. Plan 2: {target_batch} / ({large_micro} x {dp_degree}) steps x "
        "{large_ms} ms x 4/3 = {plan2_ms:,.0f} ms: answer {expected}. Twice the sequences in "
        "{large_ms} / {small_ms} of the time makes the larger micro-batch {verdict}. Plan 2 "
        "wins only when its micro-batch is more than 4/3 times as efficient per sequence. "
        "Checkpointing is worth its recompute when memory leaves no other choice (a "
        "micro-batch that must be larger, a model that does not fit), not as a way to cut "
        "accumulation steps."
    ),
    sources=(MEGATRON_RECOMPUTE, CHEN),
)


EXERCISES: tuple[Exercise, ...] = (EX_2_1, EX_2_2, EX_2_3, EX_2_4, EX_2_5)
