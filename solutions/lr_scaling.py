"""Learning rate versus batch size: scaling rules, warmup and a warmup + cosine schedule.

Conventions:

* Batch sizes are counted in whatever unit the caller uses (sequences, images or tokens);
  only their ratio k = B_new / B_base matters to the scaling rules.
* Steps are counted from 0: ``lr_at_step(step, ...)`` is the learning rate used for the
  optimizer update number ``step``.

Sources:

* Linear scaling rule: Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in
  1 Hour", arXiv:1706.02677 (2017), §2.1. Its argument: k small-batch SGD steps at rate eta
  approximately equal one step on a k-times larger batch at rate k x eta, as long as the
  gradient barely changes over those k steps. Their warmup (§2.2) ramps the rate linearly
  over the first 5 epochs.
* Square-root scaling: Krizhevsky, "One weird trick for parallelizing convolutional neural
  networks", arXiv:1404.5997 (2014), states that keeping the variance of the gradient
  step constant suggests multiplying the rate by sqrt(k) (and reports that in his
  experiments the linear rule worked better); Hoffer, Hubara & Soudry, "Train longer,
  generalize better", NeurIPS 2017, use sqrt(k) scaling.
* Critical batch size: McCandlish, Kaplan, Amodei et al., "An Empirical Model of
  Large-Batch Training", arXiv:1812.06162 (2018), §2: steps S and examples E needed to
  reach a given loss trade off as (S/S_min - 1)(E/E_min - 1) = 1, with
  S = S_min (1 + B_noise/B), E = E_min (1 + B/B_noise) and B_crit = E_min/S_min (~ B_noise).
* Cosine decay: Loshchilov & Hutter, "SGDR: Stochastic Gradient Descent with Warm
  Restarts", ICLR 2017, Eq. 5 (one cycle, no restart).
"""

from __future__ import annotations

import math
from typing import Literal

from solutions._checks import non_negative, positive

#: The course's rule of thumb: 1000 warmup steps per unit of batch growth factor.
WARMUP_STEPS_PER_BATCH_FACTOR = 1000


def _batch_factor(base_batch: float, new_batch: float) -> float:
    return positive("new_batch", new_batch) / positive("base_batch", base_batch)


def linear_scaled_lr(base_lr: float, base_batch: float, new_batch: float) -> float:
    """Learning rate under the linear scaling rule: lr_base x (B_new / B_base).

    Goyal et al. 2017, §2.1 ("when the minibatch size is multiplied by k, multiply the
    learning rate by k"). Holds while the gradient changes little over k small steps;
    they report it breaking down beyond ~8k images for ResNet-50 on ImageNet.
    """
    positive("base_lr", base_lr)
    return base_lr * _batch_factor(base_batch, new_batch)


def sqrt_scaled_lr(base_lr: float, base_batch: float, new_batch: float) -> float:
    """Learning rate under square-root scaling: lr_base x sqrt(B_new / B_base).

    Keeping the variance of the update eta x g_B constant: Var(g_B) ~ sigma^2 / B, so
    eta^2 / B fixed gives eta ~ sqrt(B) (Krizhevsky 2014; Hoffer et al. 2017).
    """
    positive("base_lr", base_lr)
    return base_lr * math.sqrt(_batch_factor(base_batch, new_batch))


def warmup_steps_heuristic(
    base_batch: float, new_batch: float,
    steps_per_batch_factor: float = WARMUP_STEPS_PER_BATCH_FACTOR,
) -> float:
    """Warmup length by this course's rule of thumb: (B_new / B_base) x 1000 steps.

    A heuristic, not a published rule: it only encodes "the more you scaled the batch
    (and so the learning rate), the longer you ramp". Goyal et al. 2017 (§2.2) warmed up
    over a fixed 5 epochs instead; many LLM runs use a fixed step count (e.g. 2000).
    """
    positive("steps_per_batch_factor", steps_per_batch_factor)
    return _batch_factor(base_batch, new_batch) * steps_per_batch_factor


def warmup_fraction(warmup_steps: float, total_steps: float) -> float:
    """Share of training spent warming up: W / T (a fraction, not a percentage)."""
    non_negative("warmup_steps", warmup_steps)
    positive("total_steps", total_steps)
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps ({warmup_steps}) exceeds total_steps ({total_steps})")
    return warmup_steps / total_steps


def lr_at_step(
    step: int, peak_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0
) -> float:
    """Learning rate at ``step`` for linear warmup followed by cosine decay.

    * 0 <= step < W: peak x step / W (linear ramp from 0, reaching the peak at step W);
    * W <= step <= T: min + (peak - min) x (1 + cos(pi x (step - W) / (T - W))) / 2,
      which is the peak at step W and ``min_lr`` at step T (Loshchilov & Hutter 2017, Eq. 5);
    * step > T: ``min_lr`` (the schedule has ended).

    The decay spans the run's own T - W steps: a run that stops early never anneals.
    """
    positive("peak_lr", peak_lr)
    non_negative("min_lr", min_lr)
    non_negative("step", step)
    non_negative("warmup_steps", warmup_steps)
    positive("total_steps", total_steps)
    if min_lr > peak_lr:
        raise ValueError(f"min_lr ({min_lr}) must not exceed peak_lr ({peak_lr})")
    if warmup_steps >= total_steps:
        raise ValueError(
            f"warmup_steps ({warmup_steps}) must be smaller than total_steps ({total_steps})"
        )
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (peak_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


# -- critical batch size (McCandlish et al. 2018) -------------------------------------

def steps_over_minimum(batch: float, critical_batch: float) -> float:
    """Optimizer steps needed at batch B, in units of the minimum S_min: 1 + B_crit / B.

    McCandlish et al. 2018, §2 (with B_noise ~ B_crit). Far below B_crit, halving B
    doubles the steps; far above it, the step count is already close to S_min.
    """
    return 1.0 + positive("critical_batch", critical_batch) / positive("batch", batch)


def examples_over_minimum(batch: float, critical_batch: float) -> float:
    """Training examples (or tokens) needed at batch B, in units of E_min: 1 + B / B_crit.

    McCandlish et al. 2018, §2. Far above B_crit the data (and compute) needed grows
    in proportion to B.
    """
    return 1.0 + positive("batch", batch) / positive("critical_batch", critical_batch)


def doubling_effect(batch: float, critical_batch: float) -> tuple[float, float]:
    """What doubling the batch from B to 2B does: (steps ratio, examples ratio).

    steps ratio = S(2B)/S(B) = (1 + B_crit/2B) / (1 + B_crit/B) (1/2 when B << B_crit,
    1 when B >> B_crit); examples ratio = E(2B)/E(B) = (1 + 2B/B_crit) / (1 + B/B_crit)
    (1 when B << B_crit, 2 when B >> B_crit).
    """
    steps = steps_over_minimum(2 * batch, critical_batch) / steps_over_minimum(
        batch, critical_batch)
    examples = examples_over_minimum(2 * batch, critical_batch) / examples_over_minimum(
        batch, critical_batch)
    return steps, examples


def batch_regime(batch: float, critical_batch: float) -> Literal["below", "at", "above"]:
    """Where B sits against B_crit: "below" (bigger batches buy speed almost for free),
    "above" (bigger batches mostly buy extra compute) or "at" (the balanced point, where
    S = 2 S_min and E = 2 E_min)."""
    positive("batch", batch)
    positive("critical_batch", critical_batch)
    if batch < critical_batch:
        return "below"
    return "above" if batch > critical_batch else "at"
