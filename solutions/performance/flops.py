"""Step-time model: the floating-point work of a training step, and how fast a GPU does it.

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
GPU's dense peak, the product of three factors:

* the ceiling a GEMM reaches on this GPU generation in a microbenchmark,
  :data:`GEMM_CEILING` (Bekman, *Machine Learning Engineering*, "Maximum Achievable Matmul
  FLOPS comparison table": BF16 ``matmul`` MAMF 267.9 of 312 TFLOPS on A100 SXM, 792.1 of
  989 on H100 SXM, found by brute force over shapes with ``mamf-finder.py``);
* tile and wave quantisation: the output is cut into ``GEMM_TILE_M x GEMM_TILE_N`` tiles,
  the edge tiles partly empty (factor ``M N / (tiles x tile area)``), and the tiles run one
  per SM at a time, the last wave partly empty (NVIDIA, *Matrix Multiplication Background
  User's Guide*, "Tile Quantization" and "Wave Quantization"); averaged over shapes the
  last wave is half full, so that factor is ``waves / (waves + 1/2)``, ``waves = tiles /
  SMs``;
* the memory roofline: compute and operand traffic added (Williams et al. 2009),
  ``1 / (1 + f x ridge / AI)`` with ``AI = M N K / (M K + K N + M N)`` FLOP per byte (16-bit
  operands) and ``ridge = peak / HBM bandwidth``.

A training step then sustains a share :data:`SUSTAINED_FRACTION` of that microbenchmark rate
(kernels between GEMMs that are not modelled, clocks under sustained power, launch gaps);
it is one number per GPU family, fitted on the fitting third of the validation set.
Element-wise work (norms, dropout, softmax, activation functions, residual adds) is
memory-bound: its time is bytes moved over the HBM bandwidth, with the bytes taken from
Korthikanti et al.'s activation count (Table 2) times the number of times each stored byte
is read or written, :data:`ELEMENTWISE_PASSES`, by how the stack runs these operations
(``Stack.elementwise``: eager PyTorch, Megatron-LM's hand-fused kernels, Transformer
Engine's fused kernels; fitted).
"""

from __future__ import annotations

import math

from solutions import hardware, models
from solutions.layout import ParallelConfig

#: Largest measured fraction of the dense BF16 peak a GEMM reaches, by GPU family (MAMF over
#: the datasheet peak; see the module docstring): A100 267.9/312, H100 792.1/989 (H800 has
#: its SMs and clocks; "H200 is the same"), B200 1,745/2,250, GB200 1,822/2,500, B300
#: 1,769/2,250 (the same table, torch 2.7-2.10 with CUDA 12.8-13.0). The GB300 has no
#: measurement there: it takes the GB200's share of the same 2,500 TFLOP/s (an assumption).
GEMM_CEILING: dict[str, float] = {"A100": 267.9 / 312.0, "H100": 792.1 / 989.0,
                                  "H800": 792.1 / 989.0, "H200": 792.1 / 989.0,
                                  "B200": 1745.0 / 2250.0, "GB200": 1822.0 / 2500.0,
                                  "B300": 1769.0 / 2250.0}
#: The same for FP8 GEMMs (``float8_e4m3fn`` inputs, per-tensor scales), as a fraction of the
#: dense FP8 peak, which is twice the dense BF16 peak on every part here (Bekman, *ML
#: Engineering*, MAMF table "FP8 (float8_e4m3fn)": H100 SXM 1,402.6 of 1,979, B200 3,432.5 of
#: 4,500, GB200 3,615.6 of 5,000, B300 3,353.3 of 4,500; Hopper parts share the H100's, the
#: GB300 the GB200's). The A100 has no FP8 tensor cores.
FP8_GEMM_CEILING: dict[str, float] = {"H100": 1402.6 / 1979.0, "H800": 1402.6 / 1979.0,
                                      "H200": 1402.6 / 1979.0, "B200": 3432.5 / 4500.0,
                                      "GB200": 3615.6 / 5000.0, "B300": 3353.3 / 4500.0}
# the GB300, measured in neither table, borrows the GB200's ceilings (stated above)
GEMM_CEILING["GB300"] = GEMM_CEILING["GB200"]
FP8_GEMM_CEILING["GB300"] = FP8_GEMM_CEILING["GB200"]
FP8_PEAK_OVER_BF16 = 2.0
#: HBM bytes moved per element of a 16-bit tensor cast to FP8 for a GEMM under per-tensor
#: current scaling: the amax reduction reads it (2), then the cast reads it again (2) and
#: writes it twice in FP8 (1 + 1), as it is and transposed, because Hopper's FP8 tensor
#: cores multiply only the "TN" layout and the backward's GEMMs need the other orientation
#: (Transformer Engine's fused ``cast_transpose``; NVIDIA Transformer Engine user guide,
#: "Using FP8 with Transformer Engine").
FP8_CAST_BYTES = 6.0
#: Streaming multiprocessors per GPU (A100 and H100 architecture whitepapers; B200 148,
#: as CUDA reports it, two dies of 74; Blackwell Ultra's full chip has 160 like Blackwell's,
#: and the count enabled is taken as the B200's).
SM_COUNT: dict[str, int] = {"A100": 108, "H100": 132, "H800": 132, "H200": 132, "B200": 148,
                            "GB200": 148, "B300": 148, "GB300": 148}
#: A GEMM output tile, rows x columns: 128 x 128, a tile cuBLAS uses for large 16-bit GEMMs
#: on Ampere and Hopper (NVIDIA Matrix Multiplication Background guide, "Tile Quantization").
GEMM_TILE_M, GEMM_TILE_N = 128, 128
#: Share of the microbenchmark rate a training step sustains, by GPU generation (fitted, see
#: above). Hopper parts (H800, H200) share the H100's; the Blackwell parts (B200, GB200,
#: and Blackwell Ultra's B300 and GB300) share one, fitted on the smallest-scale GB200 run
#: of the data set (:data:`SUSTAINED_AS`; without a Blackwell run the fit gives it the H100's).
SUSTAINED_FRACTION: dict[str, float] = {"A100": 0.90, "H100": 0.88, "B200": 0.73}
SUSTAINED_AS: dict[str, str] = {"A100": "A100", "H100": "H100", "H800": "H100",
                                "H200": "H100", "B200": "B200", "GB200": "B200",
                                "B300": "B200", "GB300": "B200"}
#: FLOPs of a fused attention kernel's backward over its forward's: five score-sized GEMMs
#: (S = QK^T recomputed, dV, dP, dQ, dK) against the forward's two (Dao 2023, §3.1.2,
#: Algorithm 2). The benchmarks the rates of :data:`ATTENTION_KERNEL_FRACTION` come from
#: count forward + backward as 3.5 forwards (``flops(..., mode="fwd_bwd")`` of
#: FlashAttention's ``benchmarks/benchmark_flash_attention.py``), so a step spends 3.5
#: forwards' FLOPs of attention at that rate, not 3 (:mod:`solutions.performance.model`).
FUSED_ATTENTION_BACKWARD_RATIO = 2.5
#: How much slower the Triton port of FlashAttention-1 (``flash_attn/flash_attn_triton.py``,
#: which MosaicML's llm-foundry runs as ``attn_impl: triton``) is than FlashAttention-2:
#: "FlashAttention-2 is 1.3-2.5x faster than FlashAttention in Triton" (Dao 2023, abstract
#: and §4.1; the port's own header: "Overall Triton forward + backward is slightly slower
#: than CUDA forward + backward" of FlashAttention-1, which reaches "25-40% of the
#: theoretical maximum FLOPs/s" of an A100). Fitted within that stated range
#: (:mod:`solutions.performance.fit`); on Hopper the same factor (the kernel uses no Hopper
#: instructions).
TRITON_FA_SLOWDOWN = 1.6
#: Fraction of the dense peak a fused (flash) attention kernel reaches over forward +
#: backward, causal, head dimension 128, long sequences, FLOPs of the causal half counted
#: as the kernels' own benchmarks count them (forward + backward = 3.5 forwards, above),
#: by (kernel, GPU family). FlashAttention-2 (Dao 2023, arXiv:2307.08691, §4.1, Figs. 4-7):
#: about 190 TFLOP/s of A100's 312 and "up to 335 TFLOPs/s" of H100's 989 without
#: Hopper-specific instructions. FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608,
#: abstract and §4.1): forward "up to 740 TFLOPs/s" (head dimension 256), backward
#: 1.5-1.75x FlashAttention-2's (about 500); at head dimension 128 the forward measures 614
#: TFLOP/s at 8K tokens and 621 at 16K (pytorch/benchmark PR #2391, ``flash_v3``), 630 in
#: the long-sequence limit of :data:`ATTENTION_HALF_RATE_TOKENS`'s curve; the backward does
#: 2.5x the forward's FLOPs, so forward + backward ``3.5 / (1/630 + 2.5/500)`` = 532
#: TFLOP/s. The Triton port of FlashAttention-1 is FlashAttention-2's rate over
#: :data:`TRITON_FA_SLOWDOWN` (:func:`attention_efficiency`).
HOPPER_FA_TFLOPS = 3.5 / (1 / 630.0 + 2.5 / 500.0)
ATTENTION_KERNEL_FRACTION: dict[tuple[str, str], float] = {
    ("flash2", "A100"): 190.0 / 312.0, ("hopper", "A100"): 190.0 / 312.0,
    ("flash2", "H100"): 335.0 / 989.0, ("hopper", "H100"): HOPPER_FA_TFLOPS / 989.0,
    ("flash2", "H800"): 335.0 / 989.0, ("hopper", "H800"): HOPPER_FA_TFLOPS / 989.0}
#: H200 runs the H100's kernels at the H100's share; Blackwell's attention kernels
#: (cuDNN, FlashAttention-4) have no microbenchmark here: they are taken at the Hopper
#: kernel's share of the peak (an assumption, like Blackwell's sustained share).
for _kernel in ("flash2", "hopper"):
    for _family in ("H200", "B200", "GB200", "B300", "GB300"):
        ATTENTION_KERNEL_FRACTION[_kernel, _family] = ATTENTION_KERNEL_FRACTION[_kernel, "H100"]
#: Reads + writes of each activation byte by element-wise kernels over forward and backward
#: of one layer, by ``Stack.elementwise`` (fitted). Fused kernels still move each tensor
#: they read or write once: per token of a gated-FFN layer (Llama: RMSNorm, RoPE, SwiGLU of
#: width f = 3.5 h, residual adds), forward the two norms (read h, write h each), RoPE on q
#: and k (about 2.25 h), the two residual adds (3 h each) and SwiGLU (read 2 f, write f);
#: backward the norms (read x and dy, write dx: 3 h each), RoPE (2.25 h), the residual
#: branches' gradient sums (3 h each) and SwiGLU's (read 2 f and df, write 2 f): 26.5 h +
#: 8 f values, 109 h bytes, 3.2 times Korthikanti's 34 h (a GeLU layer of f = 4 h, 2.5
#: times). So the fit searches ``"fused"`` from 3 (:data:`solutions.performance.fit.
#: CONSTANTS`); it lands on 4 with the one fit row whose element-wise time is more than a
#: few per cent of its step (Megatron-Core's Llama 3.1 8B on 8 H100s, h = 4,096), where
#: the larger models' rows alone barely tell 1 from 6.
ELEMENTWISE_PASSES: dict[str, float] = {"eager": 12.0, "megatron": 8.0, "fused": 4.0}


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


def alternate_matmul_params_per_token(arch: models.Architecture, moe_layer: bool) -> float:
    """Weights of every second matmul of one layer in execution order, the ones torchtitan's
    per-op selective checkpointing recomputes (``Stack.selective_recompute =
    "alternate_matmuls"``): Q, K, V, output projection, then the FFN's gate, up and down
    (SwiGLU, torchtitan's ``w1``, ``w3``, ``w2``) or up and down (GeLU); the 2nd, 4th and
    6th are K, the output projection and one ``h x d_ffn`` FFN matrix (``w3``; a GeLU FFN's
    down projection). A MoE layer's routed and shared experts count as their FFN (the router
    is left out); multi-head latent attention's projections count as one block, half of it
    recomputed."""
    if arch.mla is not None:
        attention = models.attention_params(arch) / 2
    else:
        d, kv = arch.d_model, arch.n_kv_heads * arch.head_dim
        attention = d * kv + arch.n_heads * arch.head_dim * d
    if moe_layer and arch.moe is not None:
        moe = arch.moe
        d_ffn, n = moe.expert_d_ffn, moe.experts_per_token + moe.n_shared_experts
    else:
        d_ffn, n = arch.d_ffn, 1
    return attention + n * arch.d_model * d_ffn


def attention_flops_per_token(arch: models.Architecture, seq_len: int,
                              causal: bool = True) -> float:
    """Attention core, forward, one layer: ``2 s n_heads (d_qk + d_v)`` for the full score
    matrix, ``QK^T`` over the query/key heads' width and ``softmax x V`` over the value
    heads' (``4 s n_heads head_dim`` when they are equal); half that when only the causal
    (lower) triangle is counted. Multi-head latent attention's query and key heads are
    ``qk_nope + qk_rope`` wide (128 + 64 in DeepSeek-V3) and its value heads
    ``v_head_dim`` (128; DeepSeek-V3 report, §2.1.1, eqs. 1-11)."""
    if arch.mla is not None:
        qk = arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
        v = arch.mla.v_head_dim
    else:
        qk = v = arch.head_dim
    return 2.0 * seq_len * arch.n_heads * (qk + v) * (0.5 if causal else 1.0)


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

def gpu_family(gpu: hardware.GPU) -> str:
    """The key of :data:`GEMM_CEILING` for ``gpu``
    (:func:`solutions.hardware.family_of`: ValueError for a GPU of no known family)."""
    return hardware.family_of(gpu)


def sustained_fraction(gpu: hardware.GPU) -> float:
    """:data:`SUSTAINED_FRACTION` of the GPU's generation times its clock under a power or
    clock cap (``GPU.tensor_clock_fraction``): the tensor cores' throughput scales with the
    clock."""
    return SUSTAINED_FRACTION[SUSTAINED_AS[gpu_family(gpu)]] * gpu.tensor_clock_fraction


def gemm_intensity(m: float, k: float, n: float, operand_bytes: float = 2.0) -> float:
    """FLOP per byte of a ``[m, k] x [k, n]`` GEMM with ``operand_bytes`` per input element
    and a 16-bit output: ``2mkn / (operand_bytes (mk + kn) + 2 mn)``."""
    return 2 * m * k * n / (operand_bytes * (m * k + k * n) + 2 * m * n)


def wave_factor(gpu: hardware.GPU, m: float, n: float) -> float:
    """Share of the tensor-core work of an ``[m, n]`` output that is useful: tile
    quantisation ``m n / (tiles x tile)`` times wave quantisation ``waves / (waves + 1/2)``."""
    tiles = math.ceil(m / GEMM_TILE_M) * math.ceil(n / GEMM_TILE_N)
    waves = tiles / SM_COUNT[gpu_family(gpu)]
    return m * n / (tiles * GEMM_TILE_M * GEMM_TILE_N) * waves / (waves + 0.5)


def matmul_efficiency(gpu: hardware.GPU, m: float, k: float, n: float,
                      precision: str = "bf16") -> float:
    """Fraction of the dense BF16 peak a ``[m, k] x [k, n]`` GEMM sustains in a training
    step: ``SUSTAINED_FRACTION x ceiling x wave factor / (1 + f ridge / AI)`` (module
    docstring). ``precision="fp8"``: the FP8 ceiling of the FP8 peak (twice the BF16 one,
    :data:`FP8_GEMM_CEILING`) and 1-byte operands; ValueError on a GPU without FP8."""
    family = gpu_family(gpu)
    if precision == "fp8":
        if family not in FP8_GEMM_CEILING:
            raise ValueError(f"{gpu.name} has no FP8 tensor cores; FP8 GEMMs need a Hopper "
                             f"or Blackwell GPU ({sorted(FP8_GEMM_CEILING)})")
        ceiling, operand_bytes = FP8_PEAK_OVER_BF16 * FP8_GEMM_CEILING[family], 1.0
    else:
        ceiling, operand_bytes = GEMM_CEILING[family], 2.0
    f = sustained_fraction(gpu) * ceiling * wave_factor(gpu, m, n)
    ridge = gpu.peak_flops / (gpu.hbm_bandwidth_tb_per_s * 1e12)
    return f / (1.0 + f * ridge / gemm_intensity(m, k, n, operand_bytes))


#: Sequence length at which a fused attention kernel runs at half its long-sequence rate:
#: the rate is ``R / (1 + ATTENTION_HALF_RATE_TOKENS / s)``, a fixed cost per (sequence,
#: head) tile row (loading Q, the softmax rescaling and writing O, the partly masked
#: diagonal block). Fitted by hand to FlashAttention-3's forward on an H100 at head
#: dimension 128 (pytorch/benchmark PR #2391: 430, 517, 566, 590, 614, 621 TFLOP/s at
#: 512 ... 16,384 tokens: ``R`` = 630 and 230 tokens give each within 2 %).
ATTENTION_HALF_RATE_TOKENS = 230.0


def attention_efficiency(gpu: hardware.GPU, kernel: str = "flash2",
                         seq_len: float | None = None) -> float:
    """Fraction of the dense peak a fused attention ``kernel`` sustains in a training step:
    ``SUSTAINED_FRACTION x ATTENTION_KERNEL_FRACTION`` of the GPU's family, at a sequence of
    ``seq_len`` tokens times ``1 / (1 + ATTENTION_HALF_RATE_TOKENS / seq_len)`` (the
    kernel tables' rates are at long sequences; None: that long-sequence rate)."""
    family = gpu_family(gpu)
    kernel_fraction = (ATTENTION_KERNEL_FRACTION["flash2", family] / TRITON_FA_SLOWDOWN
                       if kernel == "triton" else ATTENTION_KERNEL_FRACTION[kernel, family])
    rate = sustained_fraction(gpu) * kernel_fraction
    return rate if seq_len is None else rate / (1.0 + ATTENTION_HALF_RATE_TOKENS / seq_len)


def layer_gemm_shape(arch: models.Architecture,
                     cfg: ParallelConfig) -> tuple[float, float, float]:
    """The per-GPU shape of a layer's largest GEMM, the FFN up-projection:
    ``M = b s / cp`` tokens, ``K = h``, ``N = d_ffn / tp``."""
    d_ffn = arch.moe.expert_d_ffn if arch.moe is not None else arch.d_ffn
    tokens = cfg.micro_batch * cfg.seq_len / cfg.cp
    return (tokens, float(arch.d_model), d_ffn / cfg.tp)


def routed_params_per_token(arch: models.Architecture) -> float:
    """Weights of the ``k`` routed experts one token multiplies in a MoE layer (0 when the
    model is dense)."""
    if arch.moe is None:
        return 0.0
    return arch.moe.experts_per_token * models.expert_params(arch)


def expert_gemm_shape(arch: models.Architecture,
                      cfg: ParallelConfig) -> tuple[float, float, float]:
    """The per-GPU shape of a routed expert's up-projection: each GPU holds ``E / ep`` of
    the ``E`` experts, each split over ``etp`` ranks, and the ``ep x etp`` ranks of its
    expert group bring ``b s / (cp tp)`` tokens each (sequence-parallel shards), ``k``
    copies per token (balanced routing), so an expert's GEMM has ``M = b s / (cp tp) x etp
    x ep x k / E`` rows (``b s / cp x ep x k / E`` when ``etp`` = ``tp``), ``K = h``,
    ``N = d_expert / etp``. Expert parallelism thereby
    makes the expert GEMMs ``ep`` times taller (DeepSeek-V3 report, §3.2: EP64 over 256
    experts; Rajbhandari et al. 2022, DeepSpeed-MoE, §5.2: expert parallelism keeps each
    expert's batch large); every expert replicated (ep = 1) leaves each one ``k / E`` of
    the tokens."""
    moe = arch.moe
    if moe is None:
        raise ValueError(f"{arch.name} has no experts")
    tokens = (cfg.micro_batch * cfg.seq_len / (cfg.cp * cfg.tp) * cfg.expert_tp * cfg.ep
              * moe.experts_per_token)
    return (tokens / moe.n_routed_experts, float(arch.d_model),
            moe.expert_d_ffn / cfg.expert_tp)


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


def fp8_cast_elements_per_token(arch: models.Architecture, tp: int, sequence_parallel: bool,
                                moe_layer: bool = False) -> tuple[float, float]:
    """(forward, backward) 16-bit elements per token one GPU casts to FP8 in one layer.

    Forward, the inputs of the four linear blocks: the QKV and first FFN inputs (``h`` each,
    ``h / t`` with sequence parallelism, whose shard is cast before the all-gather), the
    output projection's (``a d_head / t``) and the down projection's (``f / t``). Backward,
    the gradients of their outputs: QKV's (``(a + 2 kv) d_head / t``), the output and down
    projections' (``h``, ``h / t`` with sequence parallelism) and the up projection's (``2 f
    / t`` for SwiGLU's gate and up, ``f / t`` for GeLU). A MoE layer counts each of a
    token's ``k`` routed copies and the shared experts at the expert width."""
    width = arch.n_heads * arch.head_dim
    kv = 2 * arch.n_kv_heads * arch.head_dim
    outside = arch.d_model / (tp if sequence_parallel else 1)
    if moe_layer and arch.moe is not None:
        ffn = (arch.moe.experts_per_token + arch.moe.n_shared_experts) * arch.moe.expert_d_ffn
    else:
        ffn = arch.d_ffn
    up = 2 * ffn if arch.ffn != "gelu" else ffn
    forward = 2 * outside + (width + ffn) / tp
    backward = 2 * outside + (width + kv + up) / tp
    return forward, backward
