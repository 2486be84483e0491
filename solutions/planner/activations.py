"""5D-parallelism planner: the activations one layer keeps for its backward, in decimal bytes.

Activations per layer and micro-batch, in bytes, following Korthikanti et al. 2022
("Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198, §4.1,
Table 2), whose GPT layer stores ``s b h (34 + 5 a s / h)``. Notation: ``s_l = s / cp`` the
local sequence, ``b`` the micro-batch, ``h`` = d_model, ``a`` the query heads, ``g_kv =
n_kv / a`` (GQA), ``f`` the FFN width, ``t`` = TP; 16-bit values are 2 bytes, dropout masks 1.
Recounted term by term for any layer (:func:`activation_terms`), in units of ``s_l b h``:

* outside the TP region (split ``t`` ways only with sequence parallelism): the two norm
  inputs (2 + 2), the two norm outputs that feed the QKV and first MLP GEMMs (2 + 2), and
  with dropout the two residual-dropout masks (1 + 1): **10** with dropout (GPT), **8** without
  (Llama 3, DeepSeek-V3 and PaLM train without dropout; :func:`has_dropout`);
* inside the TP region (split ``t`` ways): Q (2), K and V (2 g_kv each), the attention output
  that feeds the output projection (2); the MLP's hidden activations: GeLU keeps its input and
  output (2 f/h + 2 f/h = **16** at f = 4h), SwiGLU keeps the gate and up projections (4 f/h,
  which Megatron-Core's fused ``bias_swiglu`` stores and recomputes SiLU from) and their
  product, the input of the down projection (2 f/h): **6 f / h**;
* the attention core: unfused attention stores the softmax output (2 a s / h), its dropout
  mask (a s / h) and the dropout output (2 a s / h), Korthikanti's **5 a s / h** (without
  dropout only the softmax output, 2 a s / h). A fused kernel (FlashAttention, Dao et al.
  2022, §3.1) keeps only the FP32 log-sum-exp per row and head, ``4 a s_l b`` bytes: **4 a /
  h**, no s^2 term.

GPT (g_kv = 1, f = 4h, dropout): 10 + 2 + 4 + 2 + 16 = **34**, plus 5as/h unfused:
Korthikanti's figure. Llama 3 405B (g_kv = 1/16, f = 3.25 h, no dropout, fused):
8 + 2 + 0.25 + 2 + 19.5 + 0.03 = **31.78**, so a layer at s = 8,192, b = 1, t = 8 stores
31.78 x 8,192 x 16,384 / 8 = 0.533 GB. Recomputation (Korthikanti §5):

* ``"none"``: everything above;
* ``"selective"``: the attention core is recomputed, so the s^2 term goes; with a fused
  kernel this equals ``"none"`` (the kernel already recomputes the scores in its backward);
* ``"full"``: each layer keeps only its input, ``2 s_l b h`` (/ t with sequence
  parallelism), and during the backward one layer at a time is rebuilt in full (the
  ``"selective"`` amount of one layer, counted once).

Under PyTorch's DTensor sequence parallelism (torchtitan, ``Stack.sp_keeps_gathered_inputs``)
the column-parallel GEMMs keep their all-gathered input whole, so of the outside terms only
the norm inputs are split ``t`` ways (:func:`outside_units_kept`).

With FP8 linears under Transformer Engine (``Stack.fp8_saves_fp8_inputs``) each GEMM keeps
its input as the FP8 cast it made, 1 byte: the two norm outputs, the attention output and
the second MLP GEMM's input count half (:func:`fp8_input_savings`).

MoE layers store the MLP term for each of the ``k`` routed copies of a token and each
shared expert, at the expert width. torchtitan's per-op selective checkpointing
(``Stack.selective_recompute = "alternate_matmuls"``) keeps the block's input (2), the
outputs of the 1st, 3rd, 5th ... matmul in execution order (Q, V, the FFN's gate and down
projection for SwiGLU; Q, V, the up projection for GeLU) and the attention kernel's output
(2) with its log-sum-exp; the rest is recomputed (:func:`alternate_activation_units`). The
output logits and the loss's buffers, and the K/V gathered for context parallelism, are
counted beside the activations (:mod:`solutions.planner.buffers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions import models
from solutions.layout import ParallelConfig
from solutions.precision import BYTES_16BIT
from solutions.stack import MODERN, Stack


@dataclass(frozen=True)
class ActivationTerms:
    """One layer's stored activations per micro-batch, in units of ``s_l b h`` bytes:
    ``outside`` the TP region, ``inside`` it, and the attention ``core``."""

    outside: float
    inside: float
    core: float


def has_dropout(arch: models.Architecture) -> bool:
    """The course's convention: GPT-style models with biased linear layers trained with
    dropout 0.1 (GPT-3; Megatron-LM's default, Narayanan et al. 2021); the bias-free ones
    without (Llama 3, Nemotron-4, DeepSeek-V3, PaLM §5)."""
    return arch.linear_biases


def _attention_width(arch: models.Architecture) -> float:
    """Query heads x head size over ``h``: 1 unless the two differ."""
    return arch.n_heads * arch.head_dim / arch.d_model


def _ffn_width(arch: models.Architecture, moe_layer: bool) -> tuple[int, float]:
    """(copies of a token through the MLP, their summed FFN width over ``h``): one at
    ``d_ffn`` for a dense layer; the routed and shared experts at the expert width for MoE."""
    if moe_layer and arch.moe is not None:
        copies = arch.moe.experts_per_token + arch.moe.n_shared_experts
        return copies, copies * arch.moe.expert_d_ffn / arch.d_model
    return 1, arch.d_ffn / arch.d_model


def _mlp_terms(arch: models.Architecture, moe_layer: bool) -> float:
    """MLP hidden activations in ``s b h`` units: GeLU 4f/h, SwiGLU 6f/h (module doc)."""
    return (4.0 if arch.ffn == "gelu" else 6.0) * _ffn_width(arch, moe_layer)[1]


def activation_terms(arch: models.Architecture, seq_len: int, fused_attention: bool,
                     moe_layer: bool = False) -> ActivationTerms:
    """The recount of Korthikanti et al.'s Table 2 for this layer (see the module doc)."""
    dropout = has_dropout(arch)
    group = arch.n_kv_heads / arch.n_heads
    width = _attention_width(arch)
    outside = 8.0 + (2.0 if dropout else 0.0)
    inside = 2 * width + 4 * group * width + 2 * width + _mlp_terms(arch, moe_layer)
    a_over_h = arch.n_heads / arch.d_model
    if fused_attention:
        core = 4 * a_over_h  # FP32 log-sum-exp per row and head, linear in s
    else:
        core = (5.0 if dropout else 2.0) * a_over_h * seq_len
    return ActivationTerms(outside=outside, inside=inside, core=core)


def alternate_activation_units(arch: models.Architecture, moe_layer: bool = False,
                               ) -> tuple[float, float]:
    """(outside, inside) the TP region, in ``s_l b h`` byte units, of what torchtitan's
    per-op selective checkpointing keeps of one layer (module doc): the block input (2,
    outside); inside, the outputs of every other matmul in execution order starting with
    the first (Q, K, V, output projection, then the FFN's matmuls, their outputs 2, 2 g_kv,
    2 g_kv, 2, then 2 f/h per up or gate projection and 2 for the down projection) and the
    attention output (2) with its FP32 log-sum-exp (4 a / h)."""
    group = arch.n_kv_heads / arch.n_heads
    width = _attention_width(arch)
    copies, f = _ffn_width(arch, moe_layer)
    ffn = [2 * f, 2 * f, 2.0 * copies] if arch.ffn != "gelu" else [2 * f, 2.0 * copies]
    outputs = [2 * width, 2 * group * width, 2 * group * width, 2.0, *ffn]
    kept = sum(outputs[::2]) + 2 * width + 4 * arch.n_heads / arch.d_model
    return 2.0, kept


#: Units (of ``s_l b h`` bytes) of the two norm outputs that feed the QKV and first MLP
#: GEMMs, among the ``outside`` terms (module doc).
GEMM_INPUT_UNITS = 4.0


def outside_units_kept(outside: float, t: int, stack: Stack) -> float:
    """The ``outside`` terms one GPU keeps, in ``s_l b h`` byte units: split ``t`` ways with
    sequence parallelism, except that a stack whose column-parallel GEMMs keep their
    all-gathered input (``Stack.sp_keeps_gathered_inputs``) holds the two GEMM inputs
    whole, in the linears' number format (1 byte in FP8, 2 in 16 bits)."""
    if not stack.sequence_parallel:
        return outside
    if not stack.sp_keeps_gathered_inputs or t == 1:
        return outside / t
    gathered = GEMM_INPUT_UNITS * (0.5 if stack.linear_precision == "fp8" else 1.0)
    return (outside - GEMM_INPUT_UNITS) / t + gathered


def activation_bytes_per_layer(arch: models.Architecture, cfg: ParallelConfig,
                               stack: Stack = MODERN, moe_layer: bool = False) -> float:
    """Stashed activation bytes of one layer for one micro-batch (module doc)."""
    return _layer_bytes(arch, cfg, stack, moe_layer, cfg.activation_recompute,
                        stack.selective_recompute)


def _layer_bytes(arch: models.Architecture, cfg: ParallelConfig, stack: Stack,
                 moe_layer: bool, recompute: str, selective: str) -> float:
    """:func:`activation_bytes_per_layer` under the recomputation mode ``recompute`` and the
    selective policy ``selective`` (which may differ from ``cfg``'s and ``stack``'s)."""
    sbh = cfg.seq_len / cfg.cp * cfg.micro_batch * arch.d_model
    t = cfg.tp
    outside_split = t if stack.sequence_parallel else 1
    if recompute == "full":
        return BYTES_16BIT * sbh / outside_split
    if recompute == "selective" and selective == "alternate_matmuls":
        # the policy recomputes the all-gathers too: only the block input stays outside
        outside, inside = alternate_activation_units(arch, moe_layer)
        return (outside / outside_split + inside / t) * sbh
    terms = activation_terms(arch, cfg.seq_len, stack.fused_attention, moe_layer)
    kept = outside_units_kept(terms.outside, t, stack) + terms.inside / t
    if recompute == "none" or stack.fused_attention:
        kept += terms.core / t
    return (kept - fp8_input_savings(arch, t, stack, moe_layer)) * sbh


def fp8_input_savings(arch: models.Architecture, t: int, stack: Stack,
                      moe_layer: bool = False) -> float:
    """``s_l b h`` byte units a layer keeps less when its GEMMs keep their inputs in FP8
    (``Stack.fp8_saves_fp8_inputs`` with FP8 linears): half of each 16-bit GEMM input among
    the terms. Outside the TP region the two norm outputs (4, split as the stack splits
    them); inside, the attention output into its projection (2) and the second MLP GEMM's
    input (the SwiGLU product or the GeLU output, 2 f/h per routed copy); Q, K, V and the
    activation functions' inputs are not GEMM inputs and stay 16-bit. Llama 3 405B at TP 8
    with sequence parallelism: (4 / 2) / 8 + (2 + 6.5) / 2 / 8 = 0.78 of the 31.78 / 8 =
    3.97 units a GPU keeps, 20 % less."""
    if stack.linear_precision != "fp8" or not stack.fp8_saves_fp8_inputs:
        return 0.0
    second_gemm_input = 2 * _ffn_width(arch, moe_layer)[1]
    outside_split = t if stack.sequence_parallel else 1
    return (GEMM_INPUT_UNITS / 2 / outside_split
            + (2 * _attention_width(arch) + second_gemm_input) / 2 / t)


def rebuilt_layer_bytes(arch: models.Architecture, cfg: ParallelConfig, stack: Stack,
                        moe_layer: bool) -> float:
    """What one layer holds while full recomputation rebuilds it for its backward: its
    forward runs again under autograd with no checkpoint policy, so it keeps what a
    ``"selective"`` (attention-core) layer keeps, whatever ``stack.selective_recompute``
    says of the stashed layers."""
    return _layer_bytes(arch, cfg, stack, moe_layer, "selective", "attention")
