"""Chapter 8: Mixed precision training. Records 8.1-8.6."""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Choice, Function, Misconception, Numeric, Trace
from autograder.kinds.choice import deal, dealt
from solutions import loss_scaler as ls
from solutions import precision as pr
from workbook.records._models import SHAPES

IEEE = "IEEE 754-2008, §3.4 (binary interchange formats)"
FP8 = "Micikevicius et al. 2022, FP8 Formats for Deep Learning (arXiv:2209.05433), Table 1"
AMP = "Micikevicius et al. 2018, Mixed Precision Training (arXiv:1710.03740), §3.2"
GRADSCALER = ("PyTorch torch.amp.GradScaler (init_scale=2**16, growth_factor=2.0, "
              "backoff_factor=0.5, growth_interval=2000) and torch._amp_update_scale_")
ZERO = "Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), §3.1: 16 bytes per parameter"


# -- 8.1 ---------------------------------------------------------------------------------
#: what the underflow below a format's normals means in training, per format of 8.1
_UNDERFLOW_8_1 = {
    "FP16": "this is where small FP16 gradients are lost without loss scaling",
    "BF16": "BF16 shares FP32's exponent range, so gradients rarely get this small and BF16 "
            "training usually needs no loss scaling",
    "FP8 E4M3": "with only about 18 binades in all, E4M3 tensors need a scaling factor (per "
                "tensor, or per block in recent recipes) to keep their values above it",
    "FP8 E5M2": "E5M2's 32 binades cover gradients better than E4M3's 18, but a per-tensor "
                "scaling factor still keeps their small values above it",
}


def _format_params(name: str) -> dict[str, Any]:
    fmt = pr.format_by_name(name)
    return dict(format_name=fmt.name, exponent_bits=fmt.exponent_bits, bias=fmt.bias,
                underflow=_UNDERFLOW_8_1[fmt.name])


def _mantissa_only(p: Any) -> float:
    # The decimal digits without the power of ten, e.g. 6.1035 for 6.1035e-5.
    value = pr.format_by_name(p["format_name"]).min_normal
    digits = float(f"{value:e}".split("e")[0])
    if digits == value:
        raise ValueError("no power of ten to forget")
    return digits


EX_8_1 = Exercise(
    id="8.1", chapter=8, category="derive", title="Smallest normal number",
    prompt=("{format_name} has {exponent_bits} exponent bits with bias {bias}; the smallest "
            "stored exponent for a normal number is 1. What is its smallest positive normal "
            "value? Give a plain number, for example 1.2e-3 (not a power of two)."),
    params=_format_params("FP16"),
    vary=lambda rng: _format_params(rng.choice(["FP16", "BF16", "FP8 E4M3", "FP8 E5M2"])),
    answer_kind=Numeric(unit="", rel_tol=0.001),
    reference=lambda p: pr.format_by_name(p["format_name"]).min_normal,
    hints=("A normal number is 1.f x 2^(E - bias) with E >= 1.",
           "The smallest one has E = 1 and f = 0: 2^(1 - bias).",
           "Evaluate the power of two as a decimal number."),
    explanation=("The smallest normal has stored exponent 1 and a zero fraction: "
                 "2^(1 - {bias}) = {expected}. Below it come the subnormals, whose precision "
                 "shrinks until the smallest, 2^(1 - bias - mantissa bits), and then zero: "
                 "{underflow}."),
    misconceptions=(
        Misconception(lambda p: pr.format_by_name(p["format_name"]).min_subnormal,
                      "That is the smallest subnormal; the question asks for the smallest "
                      "normal number."),
        Misconception(lambda p: 2.0 ** -p["bias"], "Normal exponents start at 1, not 0: "
                      "the smallest normal is 2^(1 - bias)."),
        Misconception(_mantissa_only, "Include the power of ten: {format_name}'s smallest "
                      "normal is a small number, not its leading digits."),
    ),
    sources=(IEEE,),
)


# -- 8.2 ---------------------------------------------------------------------------------
def _vary_8_2(rng: random.Random) -> dict[str, Any]:
    n_steps = rng.randint(6, 9)
    return dict(overflows=tuple(rng.random() < 0.3 for _ in range(n_steps)),
                init_scale=float(rng.choice([2**10, 2**14, 2**16])),
                growth_interval=rng.choice([2, 3]))


EX_8_2 = Exercise(
    id="8.2", chapter=8, category="trace", title="Trace dynamic loss scaling",
    prompt=("Dynamic loss scaling with PyTorch's GradScaler rules: start at scale "
            "{init_scale}, growth_interval = {growth_interval}, growth factor 2, backoff 0.5. "
            "The steps' overflow flags are {overflows} (True = inf/NaN in the gradients). "
            "For each step give (scale after the step's update, good_count after it, "
            "whether the optimizer step was skipped)."),
    params=dict(overflows=(True, False, False, True, False), init_scale=65536.0,
                growth_interval=2),
    vary=_vary_8_2,
    answer_kind=Trace(columns=("scale", "good_count", "skipped")),
    reference=lambda p: ls.loss_scale_trace(p["overflows"], p["init_scale"],
                                            p["growth_interval"]),
    hints=("An overflow skips the step, halves the scale and resets good_count to 0.",
           "A clean step adds 1 to good_count.",
           "When good_count reaches growth_interval, the scale doubles and good_count "
           "returns to 0."),
    explanation=("Walk the steps in order: an overflow skips the optimizer step, halves the "
                 "scale and zeroes good_count; a clean step increments good_count, and when "
                 "it reaches growth_interval the scale doubles and good_count restarts at 0. "
                 "Each row is the state after that step's update, i.e. the scale the next "
                 "step will use."),
    sources=(GRADSCALER, AMP),
)


# -- 8.3 ---------------------------------------------------------------------------------
#: optimizers of 8.3: (name in the prompt, moments kept per parameter, their description)
OPTIMIZERS_8_3 = (("Adam", 2, "two {fmt} Adam moments"),
                  ("SGD with momentum", 1, "one {fmt} momentum buffer"),
                  ("plain SGD", 0, "no optimizer state"))
#: mixed-side recipes of 8.3: (name, weights, grads, master, moment bytes, low format, lesson)
RECIPES_8_3 = (
    ("mixed precision", 2, 2, 4, 4, "FP16",
     "mixed precision saves no model-state memory: the 2-byte weights and gradients plus the "
     "4-byte master copy weigh as much as 4-byte weights and gradients. Its gains are faster "
     "tensor-core math, activations half the size, and half the gradient traffic."),
    ("mixed precision with FP32 gradient accumulation", 2, 4, 4, 4, "BF16",
     "accumulating gradients in FP32 (as Llama 3 does across micro-batches) costs 2 bytes per "
     "parameter more than FP32 training itself, on top of a master copy that saves nothing."),
    ("pure BF16 training", 2, 2, 0, 2, "BF16",
     "keeping everything in BF16 with no master copy halves the model state, at the price "
     "of updates smaller than BF16's spacing rounding away (the reason for a master copy)."),
)


def _scenario_8_3(recipe: int, optimizer: int, n_params_b: float) -> dict[str, Any]:
    name, w, g, master, moment, fmt, lesson = RECIPES_8_3[recipe]
    opt_name, moments, opt_text = OPTIMIZERS_8_3[optimizer]
    low_terms = [w, g] + ([master] if master else []) + [moment] * moments
    fp32_terms = [4, 4] + [4] * moments
    keeps = (f"{fmt} weights, {'FP32' if g == 4 else fmt} gradients"
             + (", FP32 master weights" if master else "")
             + (" and " + opt_text.format(fmt="FP32" if moment == 4 else fmt) if moments
                else " and no optimizer state"))
    return dict(n_params_b=n_params_b, recipe=name, Recipe=name[0].upper() + name[1:],
                optimizer=opt_name, keeps=keeps,
                fp32_keeps="FP32 weights, FP32 gradients and "
                + opt_text.format(fmt="FP32"),
                low_bytes=pr.training_bytes_per_param(w, g, master, moment * moments),
                fp32_bytes=pr.training_bytes_per_param(4, 4, 0, 4 * moments),
                low_sum=" + ".join(map(str, low_terms)), fp32_sum=" + ".join(map(str, fp32_terms)),
                master_bytes=master, lesson=lesson)


def _vary_8_3(rng: random.Random) -> dict[str, Any]:
    return _scenario_8_3(rng.randrange(len(RECIPES_8_3)), rng.randrange(len(OPTIMIZERS_8_3)),
                         rng.choice([1.3, 7, 13, 34, 70]))


def _half(p: Any) -> float:
    if p["low_bytes"] / p["fp32_bytes"] == 0.5:
        raise ValueError("here half is right")
    return 0.5


def _without_master(p: Any) -> float:
    if not p["master_bytes"]:
        raise ValueError("no master copy in this recipe")
    return float((p["low_bytes"] - p["master_bytes"]) / p["fp32_bytes"])


EX_8_3 = Exercise(
    id="8.3", chapter=8, category="derive", title="Model-state memory: mixed vs FP32",
    prompt=("A {n_params_b}B-parameter model trains with {optimizer}. {Recipe} keeps {keeps}; "
            "pure FP32 training keeps {fp32_keeps}. Counting these model states only (no "
            "activations), what is the ratio of {recipe} memory to pure-FP32 memory?"),
    params=_scenario_8_3(0, 0, 13),
    vary=_vary_8_3,
    answer_kind=Numeric(unit="", rel_tol=0.01),
    reference=lambda p: p["low_bytes"] / p["fp32_bytes"],
    hints=("Count bytes per parameter for each recipe: 2 for FP16 or BF16, 4 for FP32.",
           "{Recipe}: {low_sum}.", "FP32: {fp32_sum}."),
    explanation=("{Recipe}: {low_sum} = {low_bytes} bytes per parameter (the accounting of "
                 "ZeRO §3.1). Pure FP32: {fp32_sum} = {fp32_bytes} "
                 "bytes. The ratio is {expected}: {lesson}"),
    misconceptions=(
        Misconception(_half, "Only the weights and gradients shrink; the master copy and the "
                      "optimizer state do not, so memory is not simply halved."),
        Misconception(_without_master, "You left out the FP32 master weights that mixed "
                      "precision must keep."),
    ),
    sources=(ZERO, AMP),
)


# -- 8.4 ---------------------------------------------------------------------------------
DEEPSEEK_FP8 = ("DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv:2412.19437), §3.3: E4M3 on "
                "all tensors, 1x128 tile scales for activations and 128x128 block scales for "
                "weights")
MX_SPEC = ("Open Compute Project, OCP Microscaling Formats (MX) Specification v1.0, 2023: "
           "MXFP8 E4M3/E5M2 elements with a shared 8-bit scale per 32-element block")

_WHY_HYBRID = (
    "FP8 E4M3 (largest value 448) is used for weights and activations in the forward pass, "
    "and FP8 E5M2 (largest value 57344) for gradients in the backward pass. Which statement "
    "gives the reason?",
    [("E5M2 has more mantissa bits, so gradients are stored more precisely.",
      "E5M2 has 2 mantissa bits, E4M3 has 3; E4M3 is the more precise of the two.", False),
     ("Gradients are always larger in magnitude than activations, so they need a larger "
      "maximum value.", "Absolute size is handled by a per-tensor scaling factor in FP8 "
      "training; what a scale cannot fix is a spread of magnitudes wider than the format.",
      False),
     ("Gradients spread over a wider range of magnitudes, which E5M2's extra exponent bit "
      "covers (about 32 powers of two against about 18), while forward tensors gain more "
      "from E4M3's extra mantissa bit.",
      "Right: range for gradients, precision for the forward pass.", True),
     ("E4M3 cannot represent negative numbers, and gradients are often negative.",
      "Both formats have a sign bit.", False),
     ("The optimizer averages gradients over many steps, so precision in the backward pass "
      "never matters.", "Precision does matter: rounding errors that are biased or that "
      "flush small values to zero do not average away. The choice is about range.", False)],
    ("Compare the two formats bit by bit: which has more exponent bits, which more mantissa "
     "bits?", "Exponent bits buy range (how many powers of two); mantissa bits buy precision.",
     "Work out log2(max / smallest subnormal) for each format."),
    "E4M3 spans 2^-9 to 448 (about 18 binades) with 3 mantissa bits; E5M2 spans 2^-16 to "
    "57344 (about 32 binades) with 2. Gradients need the range; forward tensors, with a "
    "per-tensor scale, fit in E4M3 and profit from its precision. That is the 2022-23 Hopper "
    "recipe (Transformer Engine's HYBRID format); recent recipes use E4M3 everywhere with "
    "block-wise scales instead.",
)

_WHY_BLOCKS = (
    "DeepSeek-V3 (2024) and Blackwell's MXFP8 store every tensor in FP8 E4M3, gradients "
    "included, although E4M3 covers only about 18 powers of two against E5M2's 32. What makes "
    "that work?",
    [("Fine-grained scaling: every small block gets its own scale (1x128 activation tiles and "
      "128x128 weight blocks in DeepSeek-V3, 32 elements in MXFP8), so each block only has to "
      "span its own, much narrower range.",
      "Right: a per-tensor scale must fit the whole tensor's spread into 18 binades; a "
      "per-block scale only the block's.", True),
     ("Gradients of large models never spread over more than 18 powers of two.",
      "A whole tensor's gradients easily do; that is why per-tensor E4M3 fails for them. A "
      "small block spreads far less.", False),
     ("E4M3 has more exponent bits than E5M2.",
      "It has fewer: 4 against 5. Its advantage is the third mantissa bit.", False),
     ("The backward pass runs in FP32 and only the forward tensors are FP8.",
      "DeepSeek-V3 quantizes the backward GEMMs' inputs to E4M3 too; only accumulation and "
      "some sensitive operators stay in higher precision.", False),
     ("Gradients are rounded to zero below E4M3's smallest value, and the loss ignores them.",
      "Flushing small gradients to zero would lose them (the reason for loss scaling); the "
      "block scales move each block into range instead.", False)],
    ("Where does a scaling factor apply: to a whole tensor, or to part of one?",
     "A format's range only has to cover the values that share one scale.",
     "Compare the spread of one 128-element block with the spread of a whole gradient "
     "tensor."),
    "With one scale per tensor, E4M3's 18 binades must hold the whole tensor's spread, too "
    "little for gradients; hence E5M2 for gradients in the Hopper-era recipe. Scaling small "
    "blocks separately (DeepSeek-V3 §3.3: 1x128 tiles, 128x128 blocks; MXFP8: 32-element "
    "blocks with a power-of-two scale) needs each block to span only its own range, so E4M3's "
    "extra mantissa bit can be used everywhere.",
)


def _gap_question(fmt: pr.FloatFormat) -> tuple[str, list[tuple[str, str, bool]],
                                                   tuple[str, ...], str]:
    """The spacing just above 1 in ``fmt``: 2^-mantissa_bits."""
    e, m = fmt.exponent_bits, fmt.mantissa_bits
    entries = [
        (f"2^-{m} = {2.0 ** -m:.4g}", f"Right: {m} mantissa bits split [1, 2) into 2^{m} "
         "equal steps.", True),
        (f"2^-{e} = {2.0 ** -e:.4g}", "That uses the exponent bits; the exponent sets the "
         "range, the mantissa bits the spacing.", False),
        (f"2^-{m - 1} = {2.0 ** -(m - 1):.4g}", f"One bit short: {m} mantissa bits give "
         f"2^{m} steps between 1 and 2, not 2^{m - 1}.", False),
        (f"1/{fmt.max_normal:.6g} = {1 / fmt.max_normal:.4g}", "The largest value sets the "
         "range, not the spacing near 1.", False),
        (f"2^-{m + e} = {2.0 ** -(m + e):.4g}", "Only the mantissa bits subdivide a power of "
         "two; the exponent bits do not add precision.", False),
    ]
    hints = ("Between 1 and 2 the exponent is fixed; only the mantissa changes.",
             "How many equal steps do the mantissa bits split [1, 2) into?",
             f"{m} mantissa bits: 2^{m} steps of 2^-{m}.")
    explanation = (f"{fmt.name} has {e} exponent and {m} mantissa bits. Between 1 and 2 the "
                   f"exponent is fixed and the {m} mantissa bits give 2^{m} equal steps, so "
                   f"the next number after 1 is 1 + 2^-{m} = {1 + 2.0 ** -m:g}. Relative "
                   f"precision is about 2^-{m} everywhere in the normal range.")
    question = (f"In {fmt.name} ({e} exponent bits, {m} mantissa bits), what is the gap "
                "between 1 and the next larger representable number?")
    return question, entries, hints, explanation


def _scenario_8_4(question: int, rng: random.Random | None = None) -> dict[str, Any]:
    formats = (pr.FP8_E4M3, pr.FP8_E5M2, pr.FP16, pr.BF16)
    pool = [_WHY_HYBRID, _WHY_BLOCKS, *(_gap_question(f) for f in formats)]
    text, entries, hints, explanation = pool[question]
    return dict(question=text, hint_1=hints[0], hint_2=hints[1], hint_3=hints[2],
                worked=explanation, **deal(entries, "ABCDE", rng))


EX_8_4 = Exercise(
    id="8.4", chapter=8, category="trace", title="FP8 formats: range, precision and scaling",
    prompt="{question}",
    params=_scenario_8_4(0),
    vary=lambda rng: _scenario_8_4(rng.randrange(6), rng),
    answer_kind=Choice(options=dealt("ABCDE")),
    reference=lambda p: p["right"],
    hints=("{hint_1}", "{hint_2}", "{hint_3}"),
    explanation="{worked} (Answer {expected}.)",
    sources=(FP8, "NVIDIA Transformer Engine documentation, Format.HYBRID", DEEPSEEK_FP8,
             MX_SPEC, IEEE),
)


# -- 8.5 ---------------------------------------------------------------------------------
def _vary_8_5(rng: random.Random) -> dict[str, Any]:
    d_model, n_layers = rng.choice(SHAPES)
    return dict(micro_batch=rng.choice([1, 2, 4, 8]),
                seq_len=rng.choice([1024, 2048, 4096, 8192]),
                d_model=d_model, n_layers=n_layers)


def _fp16_gb(p: Any) -> float:
    n = pr.stored_activation_elements(p["micro_batch"], p["seq_len"], p["d_model"],
                                      p["n_layers"])
    return pr.activation_gb(n, 2.0)


EX_8_5 = Exercise(
    id="8.5", chapter=8, category="derive", title="Activation memory saved by FP8",
    prompt=("In a simplified model, each of {n_layers} layers keeps two tensors of shape "
            "[b, s, d] for the backward pass (the inputs to attention and to the MLP), with "
            "b = {micro_batch}, s = {seq_len}, d = {d_model}. How many GB (1e9 bytes) are "
            "saved by storing them in FP8 (1 byte) instead of FP16 (2 bytes)?"),
    params=dict(micro_batch=4, seq_len=4096, d_model=8192, n_layers=80),
    vary=_vary_8_5,
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: pr.fp8_activation_saving_gb(p["micro_batch"], p["seq_len"],
                                                    p["d_model"], p["n_layers"]),
    hints=("Elements = 2 x b x s x d x layers.",
           "FP16 costs 2 bytes per element and FP8 1 byte.",
           "The saving is 1 byte per element."),
    explanation=("2 x {micro_batch} x {seq_len} x {d_model} x {n_layers} elements; FP16 "
                 "needs 2 bytes each and FP8 1 byte, so FP8 saves 1 byte per element: "
                 "{expected} GB. (Without recomputation a layer stores far more than these "
                 "two tensors: s b h (34 + 5 a s / h) bytes with unfused attention, "
                 "Korthikanti et al. 2022; FlashAttention stores no a x s x s score matrix, "
                 "which removes the 5 a s / h term.)"),
    misconceptions=(
        Misconception(lambda p: 4 * _fp16_gb(p), "That is eight times the saving: the "
                      "element count already includes both stored tensors, and the saving is "
                      "1 byte per element, counted once."),
        Misconception(lambda p: _fp16_gb(p), "That is the FP16 total; the saving is the "
                      "difference between FP16 and FP8."),
        Misconception(lambda p: _fp16_gb(p) * 1e9 / 2**31, "That is in GiB (2^30 bytes); "
                      "the question asks for GB (1e9 bytes)."),
    ),
    sources=(FP8, "Korthikanti et al. 2022 (arXiv:2205.05198), Table 2"),
)


# -- 8.6 ---------------------------------------------------------------------------------
def _cases_8_6(rng: random.Random) -> tuple[list[bool], float, int]:
    p_overflow = rng.choice([0.05, 0.2, 0.5])
    steps = [rng.random() < p_overflow for _ in range(rng.randint(0, 40))]
    return (steps, float(rng.choice([1.0, 3.5, 2**10, 2**16])), rng.randint(1, 6))


EX_8_6 = Exercise(
    id="8.6", chapter=8, category="build", title="dynamic_loss_scale()",
    prompt=("Write dynamic_loss_scale(overflows, init_scale=65536.0, growth_interval=2000) "
            "that returns the loss scale after processing the list of per-step overflow "
            "flags, with PyTorch GradScaler's rules: on overflow, scale x 0.5 and the good-"
            "step counter resets to 0; otherwise the counter grows by 1 and, when it reaches "
            "growth_interval, scale x 2 and the counter resets to 0. Raise ValueError if "
            "init_scale <= 0 or growth_interval < 1."),
    params=dict(),
    vary=lambda rng: dict(),
    answer_kind=Function(
        "dynamic_loss_scale",
        "(overflows: list[bool], init_scale: float = 65536.0, growth_interval: int = 2000)"
        " -> float",
        cases=_cases_8_6,
        edge_cases=(
            ([], 65536.0, 2000),                       # nothing happens
            ([False] * 1999, 65536.0, 2000),           # one step short of growth
            ([False] * 2000, 65536.0, 2000),           # growth exactly at the interval
            ([False] * 1999 + [True] + [False] * 2000, 65536.0, 2000),  # overflow resets
            ([True, True, True], 8.0, 2000),           # repeated backoff
            ([False, False, False], 1.0, 1),           # growth every step
            ([False, False, True, False, False], 1024.0, 2),
            ([True], 3.0, 5),                          # init scale not a power of two
            ([], 0.0, 2000), ([False], -1.0, 2000), ([False], 65536.0, 0),
        ),
    ),
    reference=lambda p: ls.dynamic_loss_scale,
    hints=("Keep two variables: the scale and a counter of clean steps.",
           "An overflow resets the counter; it does not just skip an increment.",
           "Increment first, then compare with growth_interval."),
    explanation=("Loop over the flags with (scale, good). Overflow: scale *= 0.5, good = 0. "
                 "Otherwise good += 1 and, if good == growth_interval, scale *= 2 and "
                 "good = 0. An empty list returns init_scale unchanged."),
    sources=(GRADSCALER,),
)

EXERCISES: tuple[Exercise, ...] = (EX_8_1, EX_8_2, EX_8_3, EX_8_4, EX_8_5, EX_8_6)
