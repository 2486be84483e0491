"""5D-parallelism planner: the memory one GPU needs for a layout.

A configuration (:class:`solutions.layout.ParallelConfig`) splits ``n_gpus = tp x cp x pp x
dp`` ways (the Llama 3 order, innermost first); :func:`solutions.layout.resolve` places the
layers. Expert parallelism does not add GPUs: the ``ep`` ranks that share out the routed
experts are carved out of the data-parallel group.

Memory per GPU = weights + gradients + optimizer state + stashed activations, for the
training software ``stack`` (:class:`solutions.stack.Stack`) the run used; decimal bytes.

**Model state** (Psi = the parameters one GPU of the stage holds, :mod:`solutions.layout`;
n = ``dp x cp``, or ``dp x cp / ep`` for routed experts; mixed-precision Adam keeps K = 12
bytes of FP32 master weights, momentum and variance, ZeRO §3.1). ``g`` is the stack's
``grad_accum_bytes`` (4: gradients accumulated across micro-batches in FP32, Megatron's
``main_grad`` buffer, Llama 3 §3.3.2 "Numerical stability").

=================================  =========  ===========  ==========
sharding                           weights    gradients    optimizer
=================================  =========  ===========  ==========
ZeRO-0 (DDP)                       2 Psi      g Psi        K Psi
ZeRO-1 (Megatron distributed opt.) 2 Psi      g Psi        K Psi / n
ZeRO-2                             2 Psi      g Psi / n    K Psi / n
ZeRO-3 / FSDP, resharded           2 Psi / n  g Psi / n    K Psi / n
ZeRO-3, no reshard after forward   2 Psi      g Psi / n    K Psi / n
   (Llama 3's FSDP)                + 2 Psi/n  + g Psi_c
=================================  =========  ===========  ==========

Stages 0-1 accumulate the whole local gradient and reduce it once per step (Megatron's
``main_grad``, DDP ``no_sync``); stage 2 and a resharding stage 3 reduce-scatter each
micro-batch's gradient into the local shard (DeepSpeed ZeRO-2/3; PyTorch FSDP without
``no_sync``), which is what keeps ``g Psi / n``. Llama 3 "shards optimizer states and
gradients, but for model shards we do not reshard after forward computation" (§3.3.2): at
rest its weights are ZeRO-3 shards, but in a 1F1B or interleaved pipeline some micro-batch is
always between its forward and its backward, so the stage's gathered BF16 weights stay
resident for the whole step (2 Psi, beside the 2 Psi / n shard; PyTorch
``ShardingStrategy.SHARD_GRAD_OP`` / FSDP2 ``reshard_after_forward=False``). That is the
memory side of the step-time model gathering them once per step, not twice per
micro-batch (:func:`gathers_per_step`). Its gradients are accumulated in FP32 over the
micro-batches and reduce-scattered in FP32 once per step per model chunk
(:func:`grad_reductions_per_step`): with m <= p every micro-batch's backward of one chunk
runs before the next chunk's begins, so a chunk's gradient is reduce-scattered as soon as it
is complete and only the chunk in progress is held whole, ``g Psi_c`` with ``Psi_c`` the
largest chunk's parameters (the whole stage when v = 1, or when m > p: then the backward of
each chunk recurs in every group of p micro-batches). Accumulating the whole stage's
gradient instead would add ``g Psi`` = 12.8 GB on Llama 3's middle stage, and the paper's
8K run would not fit; reducing every micro-batch's gradient would move m times the traffic.
A resharding ZeRO-3 also holds the gathered weights of the unit being computed and the one
being prefetched (two layers, :data:`GATHERED_UNITS`). PyTorch's FSDP reduce-scatters each
unit's gradient as the backward produces it (``Stack.unit_reduce_scatter``), so it also holds
the layer's 16-bit unsharded gradient (2 bytes per parameter) and the reduce-scatter inputs
of the two layers in flight on the reduce-scatter stream, at ``grad_reduce_bytes`` each (FSDP2
``foreach_reduce`` copies the gradients into an FP32 buffer with torchtitan's default
``mixed_precision_reduce = "float32"``; FSDP1 reduce-scatters the flat 16-bit gradient
itself): :func:`reduce_scatter_buffer_bytes`. Other transient buffers (DeepSpeed's reduce
buckets, NCCL's own memory) are not counted.

**Activations** per layer and micro-batch, in bytes, following Korthikanti et al. 2022
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

**In flight** (:func:`in_flight_layers`): a stage holds the activations of every chunk
forward it has run whose backward has not yet run. Megatron-LM's schedules run ``w`` warm-up
chunk forwards and then alternate, so the peak is ``min(w + 1, m v)`` chunk forwards with
``w = 2 (p - i - 1) + (v - 1) N`` on stage i (``forward_backward_pipelining_with_interleaving``,
N = ``microbatch_group_size_per_vp_stage``, p by default, m when m < p); v = 1 gives 1F1B's
``min(p - i, m)`` (Narayanan et al. 2021, §2.2.1), and large m gives Korthikanti's first-stage
factor ``1 + (p - 1)/(p v)`` (§4.2.3). Each chunk forward holds the average chunk's layers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from solutions import models, zero
from solutions.layout import RECOMPUTE_MODES as RECOMPUTE_MODES  # re-exported
from solutions.layout import ParallelConfig as ParallelConfig  # re-exported
from solutions.layout import Recompute as Recompute  # re-exported
from solutions.layout import StageParams as StageParams  # re-exported
from solutions.layout import chunk_layers, layers_per_stage, stage_params_of
from solutions.layout import stage_layer_kinds as stage_layer_kinds  # re-exported
from solutions.planner.buffers import transient_bytes
from solutions.stack import MODERN, Stack, for_layout

BYTES_16BIT = 2
#: Gathered ZeRO-3 units a resharding implementation holds at once: the layer being computed
#: and the one being prefetched (Zhao et al. 2023, §3.3.2-3.3.3).
GATHERED_UNITS = 2


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one GPU needs, for the stage where the total is largest."""

    stage: int
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    buffers_bytes: float = 0.0  # loss logits, gathered K/V (solutions.planner.buffers)

    @property
    def total_bytes(self) -> float:
        return (self.weights_bytes + self.gradients_bytes + self.optimizer_bytes
                + self.activations_bytes + self.buffers_bytes)

    def as_gb(self) -> dict[str, float]:
        """Each component in decimal GB (1e9 bytes), plus the total."""
        parts = {"weights": self.weights_bytes, "gradients": self.gradients_bytes,
                 "optimizer": self.optimizer_bytes, "activations": self.activations_bytes,
                 "buffers": self.buffers_bytes, "total": self.total_bytes}
        return {k: v / 1e9 for k, v in parts.items()}

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td style='text-align:right'>{v:,.2f} GB</td></tr>"
                       for k, v in self.as_gb().items())
        return f"<table><caption>Memory per GPU (stage {self.stage})</caption>{rows}</table>"


def stage_params(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> StageParams:
    """Parameters held by one GPU of ``stage`` (0-based), split into dense and expert."""
    return stage_params_of(arch, cfg.pp, cfg.tp, cfg.ep, stage)


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


def _mlp_terms(arch: models.Architecture, moe_layer: bool) -> float:
    """MLP hidden activations in ``s b h`` units: GeLU 4f/h, SwiGLU 6f/h (module doc)."""
    per_width = 4.0 if arch.ffn == "gelu" else 6.0
    if moe_layer and arch.moe is not None:
        copies = arch.moe.experts_per_token + arch.moe.n_shared_experts
        return copies * per_width * arch.moe.expert_d_ffn / arch.d_model
    return per_width * arch.d_ffn / arch.d_model


def activation_terms(arch: models.Architecture, seq_len: int, fused_attention: bool,
                     moe_layer: bool = False) -> ActivationTerms:
    """The recount of Korthikanti et al.'s Table 2 for this layer (see the module doc)."""
    dropout = has_dropout(arch)
    group = arch.n_kv_heads / arch.n_heads
    width = arch.n_heads * arch.head_dim / arch.d_model  # 1 unless heads x head_dim != h
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
    width = arch.n_heads * arch.head_dim / arch.d_model
    if moe_layer and arch.moe is not None:
        copies = arch.moe.experts_per_token + arch.moe.n_shared_experts
        f = copies * arch.moe.expert_d_ffn / arch.d_model
    else:
        copies, f = 1, arch.d_ffn / arch.d_model
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
    sbh = cfg.seq_len / cfg.cp * cfg.micro_batch * arch.d_model
    t = cfg.tp
    outside_split = t if stack.sequence_parallel else 1
    if cfg.activation_recompute == "full":
        return BYTES_16BIT * sbh / outside_split
    if (cfg.activation_recompute == "selective"
            and stack.selective_recompute == "alternate_matmuls"):
        # the policy recomputes the all-gathers too: only the block input stays outside
        outside, inside = alternate_activation_units(arch, moe_layer)
        return (outside / outside_split + inside / t) * sbh
    terms = activation_terms(arch, cfg.seq_len, stack.fused_attention, moe_layer)
    kept = outside_units_kept(terms.outside, t, stack) + terms.inside / t
    if cfg.activation_recompute == "none" or stack.fused_attention:
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
    width = arch.n_heads * arch.head_dim / arch.d_model
    per_width = 4.0 if arch.ffn == "gelu" else 6.0
    second_gemm_input = _mlp_terms(arch, moe_layer) * 2.0 / per_width
    outside_split = t if stack.sequence_parallel else 1
    return GEMM_INPUT_UNITS / 2 / outside_split + (2 * width + second_gemm_input) / 2 / t


def rebuilt_layer_bytes(arch: models.Architecture, cfg: ParallelConfig, stack: Stack,
                        moe_layer: bool) -> float:
    """What one layer holds while full recomputation rebuilds it for its backward: its
    forward runs again under autograd with no checkpoint policy, so it keeps what a
    ``"selective"`` (attention-core) layer keeps, whatever ``stack.selective_recompute``
    says of the stashed layers."""
    rebuilt_cfg = ParallelConfig(**{**cfg.__dict__, "activation_recompute": "selective"})
    policy_free = replace(stack, selective_recompute="attention")
    return activation_bytes_per_layer(arch, rebuilt_cfg, policy_free, moe_layer)


def warmup_chunks(pp: int, m: int, v: int, stage: int) -> int:
    """Chunk forwards before the first backward on ``stage``: ``2 (p - i - 1) + (v - 1) N``
    with N = p (N = m when m < p), capped at m v (Megatron-LM's interleaved schedule)."""
    group = pp if m >= pp else m
    warm = (pp - stage - 1) * (2 if v > 1 else 1) + (v - 1) * group
    return min(warm, m * v)


def in_flight_layers(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> float:
    """Layer-micro-batches whose activations ``stage`` holds at its peak: chunk forwards in
    flight, ``min(w + 1, m v)``, times the stage's average layers per chunk."""
    v = cfg.virtual_stages
    chunks = min(warmup_chunks(cfg.pp, cfg.grad_accum, v, stage) + 1, cfg.grad_accum * v)
    layers = sum(chunk_layers(arch.n_layers, cfg.pp, v)[stage])
    return chunks * layers / v


def in_flight(cfg: ParallelConfig, stage: int) -> float:
    """Micro-batches (whole-stage equivalents) ``stage`` holds at its peak."""
    v = cfg.virtual_stages
    return min(warmup_chunks(cfg.pp, cfg.grad_accum, v, stage) + 1, cfg.grad_accum * v) / v


def stage_activation_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                           stack: Stack = MODERN) -> float:
    """Peak stashed activations of one GPU of ``stage``: in-flight layers x bytes each, plus
    (full recomputation) the one layer rebuilt during the backward."""
    dense_layers, moe_layers = stage_layer_kinds(arch, cfg.pp)[stage]
    layers = dense_layers + moe_layers
    if layers == 0:
        return 0.0
    share = in_flight_layers(arch, cfg, stage) / layers
    total = share * dense_layers * activation_bytes_per_layer(arch, cfg, stack)
    if moe_layers:
        total += share * moe_layers * activation_bytes_per_layer(arch, cfg, stack, True)
    if cfg.activation_recompute == "full":
        total += rebuilt_layer_bytes(arch, cfg, stack, moe_layers > 0)
    return total


def chunk_accumulator_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                            stack: Stack) -> float:
    """Llama 3's FSDP: the FP32 gradient of the largest chunk of ``stage`` while its
    micro-batches' backward passes accumulate into it (module doc); 0 otherwise. With more
    micro-batches than one group of N = p (m > p), every chunk's accumulation spans the
    groups, so the whole stage's gradient is held."""
    if cfg.zero_stage < 3 or stack.reshard_after_forward:
        return 0.0
    layers = layers_per_stage(arch.n_layers, cfg.pp)[stage]
    if layers == 0:
        return 0.0
    largest = max(chunk_layers(arch.n_layers, cfg.pp, cfg.virtual_stages)[stage])
    if cfg.grad_accum > cfg.pp:
        largest = layers
    return stage_params(arch, cfg, stage).total * largest / layers * stack.grad_accum_bytes


def state_bytes_per_param(zero_stage: int, n: int, stack: Stack) -> zero.ModelStateBytes:
    """Weights, gradients and optimizer bytes per parameter under this sharding (module doc
    table); ``n`` the data-parallel ranks that share the parameter."""
    g = stack.grad_accum_bytes
    k = zero.ADAM_OPTIMIZER_BYTES
    w = zero.WEIGHT_BYTES
    if zero_stage <= 1:
        return zero.ModelStateBytes(w, g, k / n if zero_stage == 1 else k)
    if zero_stage == 2:
        return zero.ModelStateBytes(w, g / n, k / n)
    gathered = 0.0 if stack.reshard_after_forward else w
    return zero.ModelStateBytes(gathered + w / n, g / n, k / n)


def grad_reductions_per_step(cfg: ParallelConfig, stack: Stack = MODERN) -> int:
    """Reductions of each gradient over the data-parallel group per step: one for ZeRO
    stages 0-1 (the local gradient is accumulated first) and for Llama 3's FSDP (each
    chunk's FP32 gradient once, when its last micro-batch is done); one per micro-batch for
    stage 2 and a resharding stage 3 (each micro-batch's gradient into the shard)."""
    if cfg.zero_stage <= 1 or (cfg.zero_stage == 3 and not stack.reshard_after_forward):
        return 1
    return cfg.grad_accum


def gathers_per_step(cfg: ParallelConfig, stack: Stack = MODERN) -> int:
    """ZeRO-3 parameter all-gathers of a layer per step: two per micro-batch (forward and
    backward) when resharded after the forward, one per step when the gathered weights stay
    resident until the optimizer updates the shards (Llama 3); none below stage 3."""
    if cfg.zero_stage < 3:
        return 0
    return 1 if not stack.reshard_after_forward else 2 * cfg.grad_accum


def largest_layers_params(arch: models.Architecture, cfg: ParallelConfig,
                          stage: int) -> list[float]:
    """Parameters one GPU holds of each of the :data:`GATHERED_UNITS` largest layers of
    ``stage`` (routed experts split over EP, everything over TP), largest first."""
    dense_layers, moe_layers = stage_layer_kinds(arch, cfg.pp)[stage]
    sizes: list[float] = [float(models.dense_layer_params(arch))] * dense_layers
    if arch.moe is not None and moe_layers:
        routed = arch.moe.n_routed_experts * models.expert_params(arch)
        sizes += [models.moe_layer_params(arch) - routed + routed / cfg.ep] * moe_layers
    return [size / cfg.tp for size in sorted(sizes, reverse=True)[:GATHERED_UNITS]]


def gathered_layers_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> float:
    """16-bit weights of the :data:`GATHERED_UNITS` largest layers of ``stage`` on one GPU:
    what a resharding ZeRO-3/FSDP holds gathered at once."""
    tables = end_tables_params(arch, cfg, stage) / cfg.tp
    return (sum(largest_layers_params(arch, cfg, stage)) + tables) * zero.WEIGHT_BYTES


def reduce_scatter_buffer_bytes(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                                stack: Stack) -> float:
    """Bytes of PyTorch FSDP's per-unit gradient reduce-scatter on one GPU of ``stage``: the
    largest layer's 16-bit unsharded gradient as it is produced, and the reduce-scatter
    inputs of the :data:`GATHERED_UNITS` largest layers at ``grad_reduce_bytes`` (module
    doc); 0 for a stack that does not reduce-scatter per unit or does not reshard."""
    if cfg.zero_stage < 3 or not stack.unit_reduce_scatter or not stack.reshard_after_forward:
        return 0.0
    layers = largest_layers_params(arch, cfg, stage)
    return layers[0] * zero.WEIGHT_BYTES + sum(layers) * stack.grad_reduce_bytes


def end_tables_params(arch: models.Architecture, cfg: ParallelConfig, stage: int) -> float:
    """Parameters of the embedding (first stage) and output head (last stage) ``stage``
    holds, before TP: the root unit of a stage's FSDP wrapping (torchtitan
    ``parallelize_llama``: ``fully_shard`` per block, then on the model for the rest),
    gathered from the embedding's forward until the head's backward, so resident at the
    activations' peak."""
    tables = 0.0
    if stage == 0:
        tables += (arch.vocab_size + arch.learned_positions) * arch.d_model
    if stage == cfg.pp - 1 and not (arch.tied_embeddings and cfg.pp == 1):
        tables += arch.vocab_size * arch.d_model
    return tables


def stage_memory(arch: models.Architecture, cfg: ParallelConfig, stage: int,
                 stack: Stack = MODERN) -> MemoryBreakdown:
    """Weights, gradients, optimizer state and activations of one GPU of ``stage``."""
    stack = for_layout(stack, cfg.pp)
    params = stage_params(arch, cfg, stage)
    n_dense = cfg.dp * cfg.cp
    dense = state_bytes_per_param(cfg.zero_stage, n_dense, stack)
    expert = state_bytes_per_param(cfg.zero_stage, max(1, n_dense // cfg.ep), stack)
    weights = params.dense * dense.weights + params.expert * expert.weights
    if cfg.zero_stage == 3 and stack.reshard_after_forward:
        weights += gathered_layers_bytes(arch, cfg, stage)
    return MemoryBreakdown(
        stage=stage, weights_bytes=weights,
        gradients_bytes=(params.dense * dense.gradients + params.expert * expert.gradients
                         + chunk_accumulator_bytes(arch, cfg, stage, stack)
                         + reduce_scatter_buffer_bytes(arch, cfg, stage, stack)),
        optimizer_bytes=params.dense * dense.optimizer + params.expert * expert.optimizer,
        activations_bytes=stage_activation_bytes(arch, cfg, stage, stack),
        buffers_bytes=transient_bytes(arch, cfg, stage, stack),
    )


def memory_per_gpu(arch: models.Architecture, cfg: ParallelConfig,
                   stack: Stack = MODERN) -> MemoryBreakdown:
    """The largest per-GPU memory over all pipeline stages (the one that must fit)."""
    layers_per_stage(arch.n_layers, cfg.pp)  # raises if pp exceeds the layer count
    return max((stage_memory(arch, cfg, i, stack) for i in range(cfg.pp)),
               key=lambda m: m.total_bytes)
