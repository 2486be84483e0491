"""Chapter 3: Learning-rate scaling: linear and square-root rules, warmup, critical batch,
and how a cosine schedule follows the step count."""

from __future__ import annotations

import math
import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Choice, Misconception, Numeric, Option
from autograder.kinds.base import Params
from autograder.kinds.choice import deal, dealt
from solutions import lr_scaling as lr

GOYAL = ("Goyal et al., 'Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour', "
         "arXiv:1706.02677, 2017, §2.1 (linear scaling rule) and §2.2 (gradual warmup)")
KRIZHEVSKY = ("Krizhevsky, 'One weird trick for parallelizing convolutional neural networks', "
              "arXiv:1404.5997, 2014 (sqrt(k) keeps the gradient-step variance constant)")
HOFFER = ("Hoffer, Hubara & Soudry, 'Train longer, generalize better: closing the "
          "generalization gap in large batch training of neural networks', NeurIPS 2017 "
          "(square-root learning-rate scaling)")
MCCANDLISH = ("McCandlish, Kaplan, Amodei et al., 'An Empirical Model of Large-Batch "
              "Training', arXiv:1812.06162, 2018, §2 (S = S_min(1 + B_noise/B), "
              "E = E_min(1 + B/B_noise), critical batch B_crit = E_min/S_min)")
SGDR = ("Loshchilov & Hutter, 'SGDR: Stochastic Gradient Descent with Warm Restarts', "
        "ICLR 2017, Eq. 5 (cosine annealing)")
BATCHES = (64, 128, 256, 512)
#: Tuned base learning rates of the kind published for Adam/AdamW runs (GPT-3's table runs
#: from 6.0e-4 at 125M to 6.0e-5 at 175B; Llama uses 3.0e-4 and 1.5e-4), one decimal each.
BASE_LRS = (6e-5, 8e-5, 1e-4, 1.2e-4, 1.5e-4, 2e-4, 2.5e-4, 3e-4, 4e-4, 5e-4, 6e-4, 8e-4,
            1e-3)
#: Batch growth factors k = B_new / B_base for 3.3: quarters from 1.25 to 16 (the range the
#: chapter used before, in finer steps), so that B_new and k x 1000 steps are whole numbers
#: and the warmup stays under a third of the shortest run (50,000 steps).
WARMUP_FACTORS = tuple(k / 4 for k in range(5, 65))


def _vary_scaling(rng: random.Random) -> dict[str, Any]:
    base_batch = rng.choice(BATCHES)
    return dict(base_lr=rng.choice(BASE_LRS),
                base_batch=base_batch,
                new_batch=base_batch * rng.choice([2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32]))


# -- 3.1 --------------------------------------------------------------------------------

EX_3_1 = Exercise(
    id="3.1", chapter=3, category="derive", title="Linear scaling rule",
    prompt=("A learning rate of {base_lr:.1e} was tuned at a batch of {base_batch} sequences. "
            "You move to a batch of {new_batch} sequences. What learning rate does the "
            "linear scaling rule give?"),
    params=dict(base_lr=3e-4, base_batch=256, new_batch=2048),
    vary=_vary_scaling,
    answer_kind=Numeric(unit="", rel_tol=0.005),
    reference=lambda p: lr.linear_scaled_lr(p["base_lr"], p["base_batch"], p["new_batch"]),
    hints=(
        "The rule multiplies the learning rate by the same factor as the batch.",
        "k = B_new / B_base.",
        "lr_new = lr_base x B_new / B_base.",
    ),
    explanation=(
        "k = {new_batch} / {base_batch}; lr = {base_lr:.1e} x {new_batch} / {base_batch} = "
        "{expected}. Goyal et al. "
        "justify it by comparing k small steps at rate lr with one step on a k-times larger "
        "batch at rate k x lr: the two updates match while the gradient changes little over "
        "those k steps. That assumption fails early in training (hence warmup) and at very "
        "large batches (they saw it break down beyond about 8k images for ResNet-50)."
    ),
    misconceptions=(
        Misconception(lambda p: lr.sqrt_scaled_lr(p["base_lr"], p["base_batch"], p["new_batch"]),
                      "That is square-root scaling; the linear rule multiplies by k itself."),
        Misconception(lambda p: p["base_lr"] * p["base_batch"] / p["new_batch"],
                      "A bigger batch gets a bigger learning rate, not a smaller one: multiply "
                      "by B_new / B_base."),
        Misconception(lambda p: p["base_lr"],
                      "Keeping the rate unchanged means each sample moves the weights k times "
                      "less; the linear rule compensates by multiplying the rate by k."),
    ),
    sources=(GOYAL,),
)


# -- 3.2 --------------------------------------------------------------------------------

EX_3_2 = Exercise(
    id="3.2", chapter=3, category="derive", title="Square-root scaling",
    prompt=("Same move: {base_lr:.1e} tuned at {base_batch} sequences, new batch "
            "{new_batch}. What learning rate does square-root scaling give?"),
    params=dict(base_lr=3e-4, base_batch=256, new_batch=2048),
    vary=_vary_scaling,
    answer_kind=Numeric(unit="", rel_tol=0.005),
    reference=lambda p: lr.sqrt_scaled_lr(p["base_lr"], p["base_batch"], p["new_batch"]),
    hints=(
        "Compute the batch factor k first.",
        "Square-root scaling multiplies the rate by sqrt(k).",
        "lr_new = lr_base x sqrt(B_new / B_base).",
    ),
    explanation=(
        "k = {new_batch} / {base_batch}; lr = {base_lr:.1e} x sqrt(k) = {expected}. The "
        "variance of a mean over B samples is sigma^2 / B, so the update lr x g has variance "
        "lr^2 sigma^2 / B; keeping that constant needs lr proportional to sqrt(B). Krizhevsky "
        "(2014) gives this argument (and found the linear rule better in his own runs); "
        "Hoffer et al. (2017) use it. It is the more conservative of the two rules."
    ),
    misconceptions=(
        Misconception(lambda p: lr.linear_scaled_lr(p["base_lr"], p["base_batch"],
                                                     p["new_batch"]),
                      "That is the linear rule; square-root scaling multiplies by sqrt(k)."),
        Misconception(lambda p: p["base_lr"] / (p["new_batch"] / p["base_batch"]) ** 0.5,
                      "A larger batch gives a larger learning rate: multiply by sqrt(k), do "
                      "not divide."),
    ),
    sources=(KRIZHEVSKY, HOFFER),
)


# -- 3.3 --------------------------------------------------------------------------------

def _vary_3_3(rng: random.Random) -> dict[str, Any]:
    base_batch = rng.choice(BATCHES)
    new_batch = base_batch * rng.choice(WARMUP_FACTORS)
    return dict(base_batch=base_batch, new_batch=int(new_batch),
                total_steps=rng.choice([50_000, 100_000, 200_000, 500_000]))


EX_3_3 = Exercise(
    id="3.3", chapter=3, category="derive", title="Warmup length by the course heuristic",
    prompt=("You scaled the batch from {base_batch} to {new_batch} and will train for "
            "{total_steps} steps. This course's rule of thumb sets warmup to "
            "(B_new / B_base) x 1000 steps. How many warmup steps is that?"),
    notes=("The (B_new / B_base) x 1000 rule is a course heuristic, not a published result. "
           "Goyal et al. (2017) warmed up linearly over 5 epochs; large language-model runs "
           "usually pick a fixed number of steps (a few thousand)."),
    params=dict(base_batch=256, new_batch=2048, total_steps=100_000),
    vary=_vary_3_3,
    answer_kind=Numeric(unit="steps", rel_tol=0.0, abs_tol=0.5),
    reference=lambda p: lr.warmup_steps_heuristic(p["base_batch"], p["new_batch"]),
    hints=(
        "Only the batch growth factor enters the rule; the run's length does not.",
        "The growth factor is k = B_new / B_base = {new_batch} / {base_batch}.",
        "Warmup = k x 1000 steps.",
    ),
    explanation=(
        "k = {new_batch} / {base_batch}, so warmup = k x 1000 = {expected} steps. The total "
        "of {total_steps} steps does not enter the rule; it only tells you what share of the "
        "run the warmup takes. Warmup matters more the more you scaled the rate: early "
        "gradients change fast, so the 'k small steps equal one big step' argument behind "
        "linear scaling does not hold yet."
    ),
    misconceptions=(
        Misconception(lambda p: lr.warmup_steps_heuristic(p["base_batch"], p["new_batch"])
                      / p["total_steps"],
                      "That is the warmup as a fraction of the run; the question asks for a "
                      "number of steps."),
        Misconception(lambda p: 1000 * (p["new_batch"] / p["base_batch"]) ** 0.5,
                      "The rule uses the batch factor itself, not its square root."),
        Misconception(lambda p: 0.05 * p["total_steps"],
                      "5% of the run is a different rule of thumb; this one is k x 1000 steps."),
    ),
    sources=(GOYAL,),
)


# -- 3.4 --------------------------------------------------------------------------------

def _vary_3_4(rng: random.Random) -> dict[str, Any]:
    # Far from B_crit on either side, so that exactly one option describes the outcome.
    # Ratios that give short decimals (1/8, 1/10, 1/16, ...), at least 8x away from B_crit.
    critical = rng.choice([0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 16.0])
    return dict(critical_batch_m=critical,
                batch_m=round(critical * rng.choice([1 / 40, 1 / 32, 1 / 20, 1 / 16, 1 / 10,
                                                     1 / 8, 8.0, 10.0, 16.0]), 6))


def _regime_key(p: Params) -> str:
    regime = lr.batch_regime(p["batch_m"], p["critical_batch_m"])
    return {"below": "A", "above": "B", "at": "C"}[regime]


EX_3_4 = Exercise(
    id="3.4", chapter=3, category="trace", title="Doubling the batch around the critical batch",
    prompt=("Measurements put your run's critical batch size at about {critical_batch_m} M "
            "tokens. You train at {batch_m} M tokens per batch and consider doubling it to "
            "finish in fewer optimizer steps. Using the model in the notes, what does "
            "doubling do to the number of steps and to the tokens (compute) needed to "
            "reach the same loss?"),
    notes=("Model (McCandlish et al. 2018): to reach a given loss at batch B you need "
           "S = S_min (1 + B_crit / B) optimizer steps and E = E_min (1 + B / B_crit) "
           "training tokens, where S_min and E_min are the minimum possible step count and "
           "token count."),
    params=dict(critical_batch_m=2.0, batch_m=16.0),
    vary=_vary_3_4,
    answer_kind=Choice(options=(
        Option("A", "Steps nearly halve and the tokens needed barely grow: almost a free "
               "speed-up",
               "This is what happens far below B_crit: S is close to S_min x B_crit / B, so "
               "it halves, while E stays near E_min. It holds only when B / B_crit is small.",
               "Your batch is well below B_crit: S is close to S_min x B_crit / B, so it "
               "halves, while E stays near E_min."),
        Option("B", "Steps barely fall and the tokens (compute) needed nearly double",
               "This is what happens far above B_crit: S is already close to S_min, while E "
               "grows in proportion to B. It holds only when B / B_crit is large.",
               "Your batch is well above B_crit: S is already close to S_min, while E grows "
               "in proportion to B."),
        Option("C", "Steps fall by a quarter and tokens grow by half: the balanced point",
               "That happens only at B = B_crit exactly (S = 2 S_min, E = 2 E_min). Your "
               "batch is far from B_crit."),
        Option("D", "Training diverges, because B_crit is the largest batch that converges",
               "B_crit is not a stability limit: runs above it converge fine, they just "
               "spend more tokens than necessary."),
    )),
    reference=_regime_key,
    hints=(
        "Compute B / B_crit first.",
        "Steps ratio after doubling: (1 + B_crit/2B) / (1 + B_crit/B). Tokens ratio: "
        "(1 + 2B/B_crit) / (1 + B/B_crit).",
        "If B is 8x B_crit: steps x 17/18 (6% fewer), tokens x 17/9 (89% more).",
    ),
    explanation=(
        "B / B_crit = {batch_m} / {critical_batch_m}. Far below B_crit the step count is "
        "S_min x B_crit / B, so doubling B halves it while E stays near E_min: almost free "
        "speed. Far above B_crit, S is already close to S_min and E grows in proportion to B: "
        "doubling buys few steps and nearly doubles the compute. The answer here is "
        "{expected}. McCandlish et al. also find that the noise scale grows as the loss "
        "falls, one argument for raising the batch during a run. Llama 3 405B did so: 4M "
        "tokens per batch (sequence 4096), then 8M (sequence 8192) after 252M tokens, then "
        "16M after 2.87T tokens. The paper keeps the batch small early for training "
        "stability and grows it later for efficiency."
    ),
    sources=(MCCANDLISH,
             "Llama Team, 'The Llama 3 Herd of Models', arXiv:2407.21783, 2024, §3.4.1 "
             "(batch-size schedule)"),
)


# -- 3.5 --------------------------------------------------------------------------------

def _lr_text(value: float) -> str:
    return f"{value:.2e}"


def _decay_length(p: dict[str, Any]) -> tuple[str, list[tuple[str, str, bool]], tuple[str, ...],
                                               str]:
    """Over how many steps should run B's cosine run? (question, entries, hints, explanation)"""
    t, tb, k = p["total_steps"], p["new_total_steps"], p["factor"]
    stop_lr = lr.lr_at_step(tb, p["new_peak_lr"], 0, t)
    entries = [
        (f"Over run B's own {tb:,} steps (the original count divided by the batch factor)",
         "Right: the schedule is a function of progress through the run; it must reach its "
         "minimum when the run ends.", True),
        (f"Over the original run's {t:,} steps, because the same tokens are seen",
         f"Then run B stops at progress 1/{k} of the curve, with the rate still at "
         f"{_lr_text(stop_lr)}: the model never anneals.", False),
        (f"Over {tb // 2:,} steps, half of run B's, because the rate is {k} times higher",
         "The larger peak is already accounted for by the scaling rule; decaying twice as "
         "fast spends half the run at a near-zero rate.", False),
        ("It does not matter, since the area under the curve is the same either way",
         "The area is not the same: cut off early, the long schedule leaves out its whole "
         "low-rate tail, and that tail is what anneals the model.", False),
    ]
    hints = ("Where is run B's learning rate when it stops, for each option?",
             f"A cosine over T steps is at (1 + cos(pi t / T))/2 of its peak at step t; run B "
             f"stops at t = {tb:,}.",
             "The decay must end where the run ends, so it follows run B's own step count.")
    explanation = (f"Decay over run B's {tb:,} steps. The schedule lr(t) = lr_min + (peak - "
                   "lr_min)(1 + cos(pi t / T))/2 reaches its minimum only at t = T; with "
                   f"T = {t:,} run B would stop at t = T/{k} with the rate still at "
                   f"{_lr_text(stop_lr)}.")
    return ("Over how many steps should run B's cosine decay run?", entries, hints,
            explanation)


def _stop_rate(p: dict[str, Any]) -> tuple[str, list[tuple[str, str, bool]], tuple[str, ...],
                                            str]:
    """Run B keeps run A's decay length: its rate when it stops."""
    t, tb, k, peak = p["total_steps"], p["new_total_steps"], p["factor"], p["new_peak_lr"]
    stop_lr = lr.lr_at_step(tb, peak, 0, t)
    fraction = stop_lr / peak
    entries = [
        (f"{_lr_text(stop_lr)}, {fraction:.3g} of its peak",
         f"Right: progress {tb:,}/{t:,} = 1/{k} of the cosine, (1 + cos(pi/{k}))/2 = "
         f"{fraction:.3g} of the peak: it stops far above zero, never annealed.", True),
        ("0: the cosine always ends at its minimum",
         "Only at t = T, the schedule's own last step; run B stops at "
         f"t = T/{k}.", False),
        (f"{_lr_text(peak)}, its full peak", "The decay starts at step 0 here (no warmup), so "
         f"by step {tb:,} the cosine has already come down part of the way.", False),
        (f"{_lr_text(peak * (1 + math.cos(3 * math.pi / 4)) / 2)}, 0.146 of its peak",
         "That is the cosine three-quarters of the way down; run B stops at progress "
         f"1/{k}.", False),
    ]
    hints = ("What fraction of the cosine has run B covered when it stops?",
             f"Run B stops at step {tb:,} of a cosine planned for {t:,} steps: progress "
             f"1/{k}.",
             f"lr = peak x (1 + cos(pi/{k}))/2 with peak {_lr_text(peak)}.")
    explanation = (f"Progress {tb:,}/{t:,} = 1/{k}; (1 + cos(pi/{k}))/2 = {fraction:.3g}, so "
                   f"run B stops at {_lr_text(stop_lr)} instead of annealing to 0. The "
                   "schedule must follow run B's own step count.")
    question = (f"Run B mistakenly keeps run A's cosine length of {t:,} steps. What is its "
                f"learning rate when it stops, at step {tb:,}?")
    return question, entries, hints, explanation


def _half_point(p: dict[str, Any]) -> tuple[str, list[tuple[str, str, bool]], tuple[str, ...],
                                             str]:
    """Run B decays over its own length: where does its rate reach half the peak?"""
    t, tb = p["total_steps"], p["new_total_steps"]
    entries = [
        (f"At step {tb // 2:,}, the middle of run B", "Right: (1 + cos(pi/2))/2 = 1/2, and "
         "run B's cosine spans its own steps.", True),
        (f"At step {t // 2:,}, half of run A's {t:,} steps", "That is run A's middle; run B's "
         "cosine spans run B's own, fewer steps.", False),
        (f"At step {tb // 4:,}, a quarter of the way", "At a quarter the cosine is still at "
         "(1 + cos(pi/4))/2 = 0.854 of the peak.", False),
        (f"At step {3 * tb // 4:,}, three-quarters of the way", "At three-quarters the "
         "cosine is down to (1 + cos(3 pi/4))/2 = 0.146 of the peak.", False),
    ]
    hints = ("Where on a cosine from the peak to 0 is the value exactly half?",
             "(1 + cos(pi x progress))/2 = 1/2 needs cos(pi x progress) = 0.",
             f"Progress 1/2 of run B's {tb:,} steps.")
    explanation = (f"(1 + cos(pi t/T))/2 = 1/2 at t = T/2; run B's T is its own {tb:,} steps, "
                   f"so step {tb // 2:,}. Run A reaches half its peak at step {t // 2:,}.")
    question = (f"Run B decays its cosine over its own {tb:,} steps. At which step is its "
                "learning rate half of its peak?")
    return question, entries, hints, explanation


#: 3.5's questions about one scaled run, each with its own right option
QUESTIONS_3_5 = (_decay_length, _stop_rate, _half_point)


def _scenario_3_5(question: int, peak_lr: float, total_steps: int, factor: int,
                  rng: random.Random | None = None) -> dict[str, Any]:
    p: dict[str, Any] = dict(peak_lr=peak_lr, total_steps=total_steps, factor=factor,
                             new_peak_lr=peak_lr * factor, new_total_steps=total_steps // factor)
    text, entries, hints, explanation = QUESTIONS_3_5[question](p)
    return dict(p, question=text, hint_1=hints[0], hint_2=hints[1], hint_3=hints[2],
                worked=explanation, **deal(entries, "ABCD", rng))


def _vary_3_5(rng: random.Random) -> dict[str, Any]:
    return _scenario_3_5(rng.randrange(len(QUESTIONS_3_5)), rng.choice([1.5e-4, 3e-4, 6e-4]),
                         rng.choice([100_000, 200_000, 400_000]), rng.choice([2, 4]), rng)


EX_3_5 = Exercise(
    id="3.5", chapter=3, category="trace", title="Cosine schedule after scaling the batch",
    prompt=("Run A: peak learning rate {peak_lr:.1e}, cosine decay to 0 over {total_steps} "
            "steps. Run B multiplies the batch by {factor}, scales the peak linearly to "
            "{new_peak_lr:.1e} and trains on the same number of tokens, so it takes "
            "{new_total_steps} steps. {question}"),
    params=_scenario_3_5(0, 3e-4, 100_000, 2),
    vary=_vary_3_5,
    answer_kind=Choice(options=dealt("ABCD")),
    reference=lambda p: p["right"],
    hints=("{hint_1}", "{hint_2}", "{hint_3}"),
    explanation=(
        "{worked} (Answer {expected}.) Per token, the update is lr / B, so multiplying both "
        "lr and B by the same factor leaves each token's contribution unchanged; with fewer "
        "steps, the sum of lr over steps (the area in step units) also matches run A's when "
        "both decay over their own length."
    ),
    sources=(SGDR, GOYAL),
)


EXERCISES: tuple[Exercise, ...] = (EX_3_1, EX_3_2, EX_3_3, EX_3_4, EX_3_5)
