"""Capstone calculators: the arithmetic of the Llama 3 405B training run.

Every function is general (any model, any cluster); the constants below hold the figures
of the 405B run so that the capstone can be checked against the paper.

Source for the run: Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv:2407.21783.
* Table 3: 126 layers, d = 16,384, FFN 53,248, 128 query heads, 8 key/value heads.
* Table 4, row 2: 16,384 H100s, TP 8, CP 1, PP 16, DP 128, sequence 8,192, batch size per
  DP group 16 sequences, 16M tokens per batch, 400 TFLOPs/GPU, 41 % BF16 MFU.
* §3.3.2: the parallelism order is [TP, CP, PP, DP], innermost (fastest network) first;
  the first and last pipeline stages each hold one layer fewer, which is why the model has
  126 = 16 x 8 - 2 layers; gradients are reduce-scattered in FP32 across DP.
* §3.3.1: H100 at 700 W TDP. §3.3.4: a 54-day *snapshot* of pre-training (not its length).
* Training on 15.6T tokens, 3.8e25 FLOPs; the Llama 3.1 model card reports 30.84M H100
  GPU-hours for the 405B model.
Training FLOPs ~ 6 N D: Kaplan et al. 2020, "Scaling Laws for Neural Language Models",
arXiv:2001.08361, §2.1 (2N per token forward, 4N backward; attention FLOPs ignored).
"""

from __future__ import annotations

import math

from solutions._checks import fraction, non_negative, positive, positive_int
from solutions.collectives import ring_allreduce_gb_per_gpu
from solutions.layout import layers_per_stage as layers_per_stage  # re-exported

SECONDS_PER_DAY = 86_400
PF_DAY_FLOPS = 1e15 * SECONDS_PER_DAY  # one petaFLOP/s sustained for a day: 8.64e19

# Llama 3 405B, Table 3 and Table 4 (16,384-GPU row) of the paper.
N_PARAMS = 405e9
N_TOKENS = 15.6e12
N_GPUS = 16_384
TP, CP, PP, DP = 8, 1, 16, 128
N_LAYERS = 126
D_MODEL, N_HEADS, N_KV_HEADS, D_FFN = 16_384, 128, 8, 53_248
SEQ_LEN = 8_192
BATCH_PER_DP = 16  # sequences per DP group per step (micro-batch 1 -> 16 micro-batches)
GPU_WATTS = 700.0
PUBLISHED_GPU_HOURS = 30.84e6  # Llama 3.1 model card, 405B
PARALLELISM_ORDER: tuple[str, ...] = ("TP", "CP", "PP", "DP")  # innermost -> outermost


# -- layout -----------------------------------------------------------------------------

def dp_degree(n_gpus: int, tp: int, pp: int, cp: int = 1) -> int:
    """Data-parallel degree: ``n_gpus / (tp x cp x pp)``; it must come out whole.

    Llama 3: 16,384 / (8 x 1 x 16) = 128.
    """
    n, group = positive_int("n_gpus", n_gpus), positive_int("tp", tp) * positive_int("pp", pp)
    group *= positive_int("cp", cp)
    if n % group:
        raise ValueError(f"{n} GPUs do not split into groups of tp x cp x pp = {group}")
    return n // group


def max_layers_per_stage(n_layers: int, pp: int) -> int:
    """The heaviest stage's layer count, ``ceil(n_layers / pp)`` (Llama 3: 8);
    :func:`solutions.layout.layers_per_stage` gives the split."""
    return max(layers_per_stage(n_layers, pp))


# -- parameters and weight memory -----------------------------------------------------------

def layer_params(d_model: int, n_heads: int, n_kv_heads: int, d_ffn: int) -> int:
    """Weights of one GQA + SwiGLU layer (norm weights ignored).

    Attention: Q and O are ``d x d``; K and V are ``d x (n_kv x d / n_heads)`` each.
    FFN: three ``d x d_ffn`` matrices. Llama 3 405B: 2 x 16384^2 + 2 x 16384 x 1024
    = 570.4M, plus 3 x 16384 x 53248 = 2,617.2M, total 3,187,671,040 (3.188B).
    """
    d, h = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
    kv, f = positive_int("n_kv_heads", n_kv_heads), positive_int("d_ffn", d_ffn)
    if d % h or h % kv:
        raise ValueError("n_heads must divide d_model and n_kv_heads must divide n_heads")
    kv_width = kv * (d // h)
    return 2 * d * d + 2 * d * kv_width + 3 * d * f


def weight_gb_per_gpu(params_per_layer: float, layers_on_stage: int, tp: int,
                      bytes_per_param: float = 2.0) -> float:
    """Weight memory of one GPU in GB: ``params_per_layer x layers / tp x bytes / 1e9``.

    Llama 3 (8 layers, TP 8, BF16): 3.188B x 8 / 8 x 2 = 6.375 GB.
    """
    positive("params_per_layer", params_per_layer)
    positive("bytes_per_param", bytes_per_param)
    layers, t = positive_int("layers_on_stage", layers_on_stage), positive_int("tp", tp)
    return params_per_layer * layers / t * bytes_per_param / 1e9


# -- compute and time ---------------------------------------------------------------------

def training_flops(n_params: float, n_tokens: float) -> float:
    """Training FLOPs ``6 N D`` (Kaplan et al. 2020, §2.1). 405B x 15.6T -> 3.79e25."""
    return 6 * positive("n_params", n_params) * positive("n_tokens", n_tokens)


def pf_days(flops: float) -> float:
    """FLOPs in petaFLOP/s-days: ``flops / (1e15 x 86,400)``. 3.7908e25 -> 438,750."""
    return non_negative("flops", flops) / PF_DAY_FLOPS


def training_days(total_flops: float, n_gpus: int, peak_tflops: float, mfu: float) -> float:
    """Days to do ``total_flops`` at ``mfu`` of the dense peak, no downtime.

    ``total_flops / (n_gpus x peak_tflops x 1e12 x mfu) / 86,400``. Llama 3 at 40 % of
    989.4 TFLOPS on 16,384 GPUs: 3.7908e25 / 6.484e18 FLOP/s = 67.7 days.
    """
    positive("total_flops", total_flops)
    rate = positive_int("n_gpus", n_gpus) * positive("peak_tflops", peak_tflops) * 1e12
    return total_flops / (rate * fraction("mfu", mfu)) / SECONDS_PER_DAY


def model_flops_utilisation(n_params: float, tokens_per_s_per_gpu: float,
                            peak_tflops: float) -> float:
    """MFU: achieved model FLOP/s over the dense peak, ``6 N x tokens/s per GPU / peak``.

    Per GPU throughput already includes each GPU's share of the model and every stall
    (bubble, communication), so nothing else is divided out. Use the dense peak
    (989.4 TFLOPS for H100 BF16), never the 2:4-sparse figure.
    """
    positive("n_params", n_params)
    non_negative("tokens_per_s_per_gpu", tokens_per_s_per_gpu)
    return 6 * n_params * tokens_per_s_per_gpu / (positive("peak_tflops", peak_tflops) * 1e12)


def mfu_from_tflops(achieved_tflops_per_gpu: float, peak_tflops: float) -> float:
    """MFU from the achieved TFLOPs per GPU the Llama 3 paper reports: 400 / 989.4 = 0.404."""
    return non_negative("achieved_tflops_per_gpu", achieved_tflops_per_gpu) / positive(
        "peak_tflops", peak_tflops)


def implied_mfu(total_flops: float, gpu_hours: float, peak_tflops: float) -> float:
    """Average MFU over a run, from its FLOPs and GPU-hours (whatever the hours include: the
    Llama 3.1 model card's "total GPU time required for training" presumably counts downtime,
    though it does not say).

    ``total_flops / (gpu_hours x 3600 x peak)``. Llama 3 405B: 3.8e25 over 30.84M GPU-hours
    of 989.4 TFLOPS -> 0.346.
    """
    positive("total_flops", total_flops)
    seconds = positive("gpu_hours", gpu_hours) * 3600
    return total_flops / (seconds * positive("peak_tflops", peak_tflops) * 1e12)


# -- communication ---------------------------------------------------------------------------

def dp_allreduce_gb_per_gpu(params_per_gpu: float, n_dp: int,
                            bytes_per_grad: float = 2.0) -> float:
    """GB each GPU sends to all-reduce its gradients over the DP group (ring).

    ``2 (N-1)/N x params_per_gpu x bytes``. Llama 3: a middle stage holds 8 layers / TP 8
    = 3.188B parameters per GPU; in BF16 that is 6.375 GB, so 2 x 127/128 x 6.375 = 12.65 GB.
    (The paper reduce-scatters in FP32: pass ``bytes_per_grad=4`` for that half.)
    """
    positive("params_per_gpu", params_per_gpu)
    message_gb = params_per_gpu * positive("bytes_per_grad", bytes_per_grad) / 1e9
    return ring_allreduce_gb_per_gpu(message_gb, positive_int("n_dp", n_dp))


# -- money and energy ----------------------------------------------------------------------

def gpu_hours(n_gpus: int, days: float) -> float:
    """GPU-hours: ``n_gpus x days x 24``."""
    return positive_int("n_gpus", n_gpus) * non_negative("days", days) * 24


def energy_kwh(n_gpus: int, watts_per_gpu: float, days: float) -> float:
    """GPU energy in kWh: ``n x W / 1000 x days x 24`` (GPU board power only)."""
    kw = positive_int("n_gpus", n_gpus) * positive("watts_per_gpu", watts_per_gpu) / 1000
    return kw * non_negative("days", days) * 24


def electricity_cost_usd(n_gpus: int, watts_per_gpu: float, days: float,
                         usd_per_kwh: float, pue: float = 1.0) -> float:
    """Electricity bill: ``energy_kwh x PUE x price``. PUE 1.0 counts the GPUs alone.

    Llama 3: 16,384 x 0.7 kW x 77 days x 24 h = 21,194,342.4 kWh; at $0.05 -> $1,059,717.
    """
    if not math.isfinite(pue) or pue < 1:
        raise ValueError(f"pue must be >= 1 (facility power over IT power), got {pue!r}")
    return energy_kwh(n_gpus, watts_per_gpu, days) * pue * non_negative("usd_per_kwh", usd_per_kwh)


def gpu_hours_cost_usd(n_gpus: int, days: float, usd_per_gpu_hour: float) -> float:
    """Rental cost: ``gpu_hours x price``. 16,384 GPUs x 77 days at $2 -> $60.6M."""
    return gpu_hours(n_gpus, days) * non_negative("usd_per_gpu_hour", usd_per_gpu_hour)
