"""Step-time model, part 1: the floating-point work of a training step, and how fast a GPU
does it.

FLOPs (1 multiply-add = 2 FLOPs), per token, forward pass, one transformer layer:

* matrix multiplies: ``2 x W`` where W is the layer's weight count that touches the token
  (attention projections + FFN; for a MoE layer the router, the shared experts and the k
  routed experts the token goes to). Norms and biases are not matmuls and are left out;
* attention core: ``4 x s x n_heads x head_dim`` (``QK^T`` and ``softmax x V``, each
  ``2 x s x d_head`` per head) for the full ``s x s`` score matrix, as Narayanan et al.
  2021 (SC21, appendix) and PaLM (Chowdhery et al. 2022, App. B, ``6N + 12 L H Q T``)
  count it; **half** of that with ``causal=True`` (the default), as Megatron-LM counts it
  today (``num_floating_point_operations`` in megatron/training/training.py: "causal mask
  (only half of the mask is non-zero)"). MFU in this package uses the causal count;
* output head: ``2 x V x h`` per token, once per model (the logits).

The backward pass costs twice the forward (Narayanan et al. 2021: "the backward pass ...
is twice the forward"), so a step without recomputation is 3 forwards. Recomputation adds
forwards: ``"full"`` every layer again (the logits are not recomputed), ``"selective"`` only
the attention core (Korthikanti et al. 2022, §5). For a GPT layer (4h GeLU MLP, multi-head
attention) with full recomputation this adds up to Narayanan et al.'s
``F = 96 B s l h^2 (1 + s/6h + V/16lh)`` per batch; without it, to ``72 B s l h^2
(1 + s/6h + V/12lh)``.

Speed: a matrix multiply of per-GPU shape ``[M, K] x [K, N]`` runs at a fraction of the
GPU's dense peak. The model (a roofline with the two times added, Williams et al. 2009) is
``time = flops / (peak x MATMUL_PEAK_FRACTION) + bytes / HBM bandwidth``, i.e. efficiency
``f / (1 + f x ridge / AI)`` with ``AI = M N K / (M K + K N + M N)`` FLOP per byte (16-bit
operands) and ``ridge = peak / HBM bandwidth``. Element-wise work (norms, dropout, softmax,
activation functions, residual adds) is memory-bound: its time is bytes moved over the HBM
bandwidth, with the bytes taken from Korthikanti et al.'s activation count (Table 2) times
``ELEMENTWISE_PASSES``, the number of times each stored byte is read or written.
"""

from __future__ import annotations

from solutions import hardware, models
from solutions.planner_memory import ParallelConfig

#: Largest fraction of the dense peak a big 16-bit GEMM reaches, by GPU. Fitted in the open
#: (benchmarks/validate_performance.py): A100 on Megatron-LM 2021 Table 1, rows 1, 3, 5, 7, 9;
#: H100 on Llama 3 Table 4, row 2. Other GPUs use the H100 figure.
MATMUL_PEAK_FRACTION: dict[str, float] = {"A100": 0.74, "H100": 0.75}
#: Reads + writes of each activation byte by element-wise kernels over forward and backward
#: of one layer (fitted with the A100 constant above).
ELEMENTWISE_PASSES = 8.0
BYTES_16BIT = 2


def matmul_params_per_token(arch: models.Architecture, moe_layer: bool) -> float:
    """Weights one token multiplies in one layer (attention + FFN, MoE: active experts)."""
    attention = models.attention_params(arch)
    if arch.linear_biases and arch.mla is None:  # biases are not matmul weights
        attention -= (arch.n_heads + 2 * arch.n_kv_heads) * arch.head_dim + arch.d_model
    if not moe_layer or arch.moe is None:
        return attention + models.ffn_params(arch.d_model, arch.d_ffn, arch.ffn)
    moe = arch.moe
    experts = (moe.experts_per_token + moe.n_shared_experts) * models.expert_params(arch)
    return attention + moe.n_routed_experts * arch.d_model + experts


def attention_flops_per_token(arch: models.Architecture, seq_len: int,
                              causal: bool = True) -> float:
    """Attention core, forward, one layer: ``4 s n_heads head_dim`` for the full score
    matrix, half that when only the causal (lower) triangle is counted."""
    width = arch.mla.v_head_dim * arch.n_heads if arch.mla else arch.n_heads * arch.head_dim
    return 4.0 * seq_len * width * (0.5 if causal else 1.0)


def logits_flops_per_token(arch: models.Architecture) -> float:
    """Output head, forward: ``2 V h``."""
    return 2.0 * arch.vocab_size * arch.d_model


def forward_passes(cfg: ParallelConfig) -> int:
    """Forward passes of every layer per micro-batch: 2 with full recomputation, else 1."""
    return 2 if cfg.activation_recompute == "full" else 1


def layer_flops_per_token(arch: models.Architecture, seq_len: int, moe_layer: bool,
                          causal: bool = True) -> float:
    """Matmul + attention FLOPs of one layer's forward pass for one token."""
    matmul = 2.0 * matmul_params_per_token(arch, moe_layer)
    return matmul + attention_flops_per_token(arch, seq_len, causal)


def model_flops_per_token(arch: models.Architecture, seq_len: int,
                          causal: bool = True) -> float:
    """Forward + backward FLOPs per token, no recomputation: 3 x (layers + logits)."""
    n_moe = models.n_moe_layers(arch)
    layers = ((arch.n_layers - n_moe) * layer_flops_per_token(arch, seq_len, False, causal)
              + (n_moe * layer_flops_per_token(arch, seq_len, True, causal) if n_moe else 0.0))
    return 3.0 * (layers + logits_flops_per_token(arch))


def recompute_flops_per_token(arch: models.Architecture, cfg: ParallelConfig,
                              causal: bool = True) -> float:
    """Extra forward FLOPs per token that recomputation adds (full: every layer;
    selective: the attention core; none: nothing)."""
    if cfg.activation_recompute == "none":
        return 0.0
    if cfg.activation_recompute == "selective":
        return arch.n_layers * attention_flops_per_token(arch, cfg.seq_len, causal)
    return model_flops_per_token(arch, cfg.seq_len, causal) / 3.0 - logits_flops_per_token(arch)


# -- speed -------------------------------------------------------------------------------

def _gpu_family(gpu: hardware.GPU) -> str:
    return next((k for k in MATMUL_PEAK_FRACTION if k in gpu.name), "H100")


def gemm_intensity(m: float, k: float, n: float) -> float:
    """FLOP per byte of a 16-bit ``[m, k] x [k, n]`` GEMM: ``2mkn / (2(mk + kn + mn))``."""
    return m * k * n / (m * k + k * n + m * n)


def matmul_efficiency(gpu: hardware.GPU, m: float, k: float, n: float) -> float:
    """Achievable fraction of the dense peak for a ``[m, k] x [k, n]`` GEMM:
    ``f / (1 + f x ridge / AI)`` (compute and memory time added)."""
    f = MATMUL_PEAK_FRACTION[_gpu_family(gpu)]
    ridge = gpu.peak_flops / (gpu.hbm_bandwidth_tb_per_s * 1e12)
    return f / (1.0 + f * ridge / gemm_intensity(m, k, n))


def layer_gemm_shape(arch: models.Architecture, cfg: ParallelConfig) -> tuple[float, ...]:
    """The per-GPU shape of a layer's largest GEMM, the FFN up-projection:
    ``M = b s / cp`` tokens, ``K = h``, ``N = d_ffn / tp``."""
    d_ffn = arch.moe.expert_d_ffn if arch.moe is not None else arch.d_ffn
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp
    return (tokens, float(arch.d_model), d_ffn / cfg.tp)


def elementwise_bytes_per_layer(arch: models.Architecture, cfg: ParallelConfig,
                                sequence_parallel: bool, fused_attention: bool) -> float:
    """Bytes element-wise kernels move in one layer's forward for one micro-batch.

    Korthikanti et al. 2022, Table 2: ``s b h (34/t)`` with sequence parallelism,
    ``s b h (10 + 24/t)`` without, plus ``5 a s^2 b / t`` for the materialised attention
    scores unless a fused (flash) attention kernel keeps them on chip.
    """
    t, s_local = cfg.tp, cfg.seq_len / cfg.cp
    sbh = s_local * cfg.micro_batch * arch.d_model
    per_layer = sbh * 34 / t if sequence_parallel else sbh * (10 + 24 / t)
    if not fused_attention:
        per_layer += 5 * arch.n_heads * cfg.seq_len * s_local * cfg.micro_batch / t
    return per_layer


def hbm_seconds(gpu: hardware.GPU, n_bytes: float) -> float:
    """Seconds to stream ``n_bytes`` through HBM at the datasheet bandwidth."""
    return n_bytes / (gpu.hbm_bandwidth_tb_per_s * 1e12)
