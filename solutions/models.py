"""Model catalog: architectures of real models, parameter counts from first principles,
and the published facts of the training runs that produced them.

The count adds up every weight matrix (biases and norm weights included where the model
has them) so that it reproduces the published totals to within a fraction of a percent:

* attention: Q and O are ``d x (n_heads * head_dim)``; K and V are ``d x (n_kv_heads *
  head_dim)`` each. Multi-head attention has ``n_kv_heads = n_heads`` (4 d^2 in all);
  grouped-query attention (GQA, Ainslie et al. 2023) shares each K/V head among
  ``n_heads / n_kv_heads`` query heads; multi-query attention has one K/V head.
  Multi-head latent attention (MLA, DeepSeek-V2/V3) factorises Q and KV through low-rank
  projections and is counted by :func:`mla_params`.
* FFN: a GeLU MLP has two matrices, ``2 d d_ffn``; SwiGLU (Shazeer 2020) has three
  (gate, up, down), ``3 d d_ffn``.
* embeddings: ``vocab x d`` for the input, the same again for an untied output head.

Sources (architectures): Llama 3: Dubey et al. 2024, "The Llama 3 Herd of Models",
arXiv:2407.21783, Table 3 (vocabulary 128,256 entries in the released tokenizer, "128K" in
the paper). GPT-3: Brown et al. 2020, arXiv:2005.14165, Table 2.1. PaLM: Chowdhery et al.
2022, arXiv:2204.02311, Table 1 and §2. DeepSeek-V3: DeepSeek-AI 2024, arXiv:2412.19437,
§2 and §4.2. Generic 7B: the LLaMA-7B shape, Touvron et al. 2023, arXiv:2302.13971, Table 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from solutions._checks import positive_int

FFNKind = Literal["swiglu", "gelu"]


@dataclass(frozen=True)
class MoE:
    """Mixture-of-experts FFN: routed experts (``experts_per_token`` active) plus shared ones.

    The first ``n_dense_layers`` layers keep an ordinary dense FFN of the model's d_ffn.
    """

    n_routed_experts: int
    n_shared_experts: int
    experts_per_token: int
    expert_d_ffn: int
    n_dense_layers: int = 0


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention ranks and head sizes (DeepSeek-V3 report, §2.1.1)."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer as the planner and the parameter count see it."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ffn: int
    vocab_size: int
    ffn: FFNKind = "swiglu"
    head_dim_override: int | None = None  # when n_heads * head_dim != d_model (PaLM)
    tied_embeddings: bool = False
    linear_biases: bool = False
    norms_per_layer: int = 2
    norm_bias: bool = False
    learned_positions: int = 0
    moe: MoE | None = None
    mla: MLA | None = None
    published_params: float = 0.0
    published_active_params: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_ffn", "vocab_size"):
            positive_int(name, getattr(self, name))
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"{self.name}: n_kv_heads={self.n_kv_heads} must divide "
                             f"n_heads={self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.head_dim_override or self.d_model // self.n_heads

    @property
    def is_moe(self) -> bool:
        return self.moe is not None


# -- the count -------------------------------------------------------------------------

def mla_params(d_model: int, n_heads: int, mla: MLA) -> int:
    """MLA weights of one layer: Q down/up, joint KV down (+ decoupled RoPE key), KV up, O.

    q: ``d r_q + r_q n (d_nope + d_rope)``; kv: ``d (r_kv + d_rope) + r_kv n (d_nope + d_v)``;
    output ``n d_v d``; plus the two low-rank RMSNorms (``r_q + r_kv``). DeepSeek-V3 §2.1.1.
    """
    qk_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    q = d_model * mla.q_lora_rank + mla.q_lora_rank * n_heads * qk_head
    kv = (d_model * (mla.kv_lora_rank + mla.qk_rope_head_dim)
          + mla.kv_lora_rank * n_heads * (mla.qk_nope_head_dim + mla.v_head_dim))
    out = n_heads * mla.v_head_dim * d_model
    return q + kv + out + mla.q_lora_rank + mla.kv_lora_rank


def attention_params(arch: Architecture) -> int:
    """Attention weights (and biases) of one layer.

    GQA/MHA/MQA: ``2 d (n_heads hd) + 2 d (n_kv hd)``; for Llama 3 405B that is
    2 x 16384^2 + 2 x 16384 x 1024 = 570,425,344, not the 4 d^2 = 1.07B of full MHA.
    """
    if arch.mla is not None:
        return mla_params(arch.d_model, arch.n_heads, arch.mla)
    q_width = arch.n_heads * arch.head_dim
    kv_width = arch.n_kv_heads * arch.head_dim
    weights = 2 * arch.d_model * q_width + 2 * arch.d_model * kv_width
    biases = (q_width + 2 * kv_width + arch.d_model) if arch.linear_biases else 0
    return weights + biases


def ffn_params(d_model: int, d_ffn: int, kind: FFNKind, biases: bool = False) -> int:
    """One FFN: SwiGLU ``3 d d_ffn``; GeLU ``2 d d_ffn`` (+ ``d_ffn + d`` biases)."""
    positive_int("d_model", d_model)
    positive_int("d_ffn", d_ffn)
    if kind == "swiglu":
        return 3 * d_model * d_ffn + ((2 * d_ffn + d_model) if biases else 0)
    if kind == "gelu":
        return 2 * d_model * d_ffn + ((d_ffn + d_model) if biases else 0)
    raise ValueError(f"ffn kind must be 'swiglu' or 'gelu', got {kind!r}")


def norm_params(arch: Architecture) -> int:
    """Norm weights of one layer: ``norms_per_layer x d`` (x2 with a LayerNorm bias)."""
    return arch.norms_per_layer * arch.d_model * (2 if arch.norm_bias else 1)


def dense_layer_params(arch: Architecture) -> int:
    """A layer with an ordinary FFN: attention + FFN + norms."""
    return (attention_params(arch) + norm_params(arch)
            + ffn_params(arch.d_model, arch.d_ffn, arch.ffn, arch.linear_biases))


def expert_params(arch: Architecture) -> int:
    """One expert FFN (MoE models only)."""
    if arch.moe is None:
        raise ValueError(f"{arch.name} is a dense model: it has no experts")
    return ffn_params(arch.d_model, arch.moe.expert_d_ffn, arch.ffn)


def moe_layer_params(arch: Architecture) -> int:
    """A MoE layer: attention + norms + router (``E x d``) + all routed and shared experts."""
    if arch.moe is None:
        raise ValueError(f"{arch.name} is a dense model: it has no MoE layers")
    moe = arch.moe
    router = moe.n_routed_experts * arch.d_model
    experts = (moe.n_routed_experts + moe.n_shared_experts) * expert_params(arch)
    return attention_params(arch) + norm_params(arch) + router + experts


def embedding_params(arch: Architecture) -> int:
    """Token embedding (+ untied output head, + learned positions, + final norm)."""
    tables = 1 if arch.tied_embeddings else 2
    final_norm = arch.d_model * (2 if arch.norm_bias else 1)
    return (tables * arch.vocab_size * arch.d_model
            + arch.learned_positions * arch.d_model + final_norm)


def n_moe_layers(arch: Architecture) -> int:
    return 0 if arch.moe is None else arch.n_layers - arch.moe.n_dense_layers


def total_params(arch: Architecture) -> int:
    """All parameters: layers + embeddings. Llama 3 405B: 126 x 3.1877B + 4.2B = 405.85B."""
    n_dense = arch.n_layers - n_moe_layers(arch)
    moe = moe_layer_params(arch) * n_moe_layers(arch) if arch.is_moe else 0
    return n_dense * dense_layer_params(arch) + moe + embedding_params(arch)


def active_params(arch: Architecture) -> int:
    """Parameters that touch one token. Dense: all of them. MoE: the idle routed experts
    drop out, ``(E - k)`` experts per MoE layer (DeepSeek-V3: 671B total, 37B active).

    The input embedding is a lookup, not a matmul, but the published 37B counts it, so
    it stays in (6 x active is then a slight over-estimate of FLOPs per token).
    """
    if arch.moe is None:
        return total_params(arch)
    idle = arch.moe.n_routed_experts - arch.moe.experts_per_token
    return total_params(arch) - n_moe_layers(arch) * idle * expert_params(arch)


# -- the catalog ------------------------------------------------------------------------

_LLAMA3 = "Dubey et al. 2024, The Llama 3 Herd of Models, arXiv:2407.21783, Table 3"

LLAMA3_405B = Architecture(
    "Llama 3 405B", n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8, d_ffn=53248,
    vocab_size=128256, published_params=405e9, source=_LLAMA3)
LLAMA3_70B = Architecture(
    "Llama 3 70B", n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ffn=28672,
    vocab_size=128256, published_params=70e9, source=_LLAMA3)
LLAMA3_8B = Architecture(
    "Llama 3 8B", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ffn=14336,
    vocab_size=128256, published_params=8e9, source=_LLAMA3)
GPT3_175B = Architecture(
    "GPT-3 175B", n_layers=96, d_model=12288, n_heads=96, n_kv_heads=96, d_ffn=4 * 12288,
    vocab_size=50257, ffn="gelu", tied_embeddings=True, linear_biases=True, norm_bias=True,
    learned_positions=2048, published_params=175.0e9,
    source="Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1")
# Parallel attention+FFN block with one shared LayerNorm, no biases, multi-query attention
# with 48 heads of 256 (so n_heads * head_dim = 12,288 < d_model), shared embeddings.
PALM_540B = Architecture(
    "PaLM 540B", n_layers=118, d_model=18432, n_heads=48, n_kv_heads=1, d_ffn=4 * 18432,
    vocab_size=256000, head_dim_override=256, tied_embeddings=True, norms_per_layer=1,
    published_params=540.35e9,
    source="Chowdhery et al. 2022, PaLM, arXiv:2204.02311, Table 1 and §2")
DEEPSEEK_V3 = Architecture(
    "DeepSeek-V3", n_layers=61, d_model=7168, n_heads=128, n_kv_heads=128, d_ffn=18432,
    vocab_size=129280,
    moe=MoE(n_routed_experts=256, n_shared_experts=1, experts_per_token=8,
            expert_d_ffn=2048, n_dense_layers=3),
    mla=MLA(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
            v_head_dim=128),
    published_params=671e9, published_active_params=37e9,
    source="DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437, §2, §4.2 "
           "(main model; the 14B multi-token-prediction module is not counted)")
GENERIC_7B = Architecture(
    "Generic 7B (LLaMA-7B shape)", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=32,
    d_ffn=11008, vocab_size=32000, published_params=6.7e9,
    source="Touvron et al. 2023, LLaMA, arXiv:2302.13971, Table 2")

MODELS: dict[str, Architecture] = {
    "llama3-405b": LLAMA3_405B, "llama3-70b": LLAMA3_70B, "llama3-8b": LLAMA3_8B,
    "gpt3-175b": GPT3_175B, "palm-540b": PALM_540B, "deepseek-v3": DEEPSEEK_V3,
    "generic-7b": GENERIC_7B,
}


# -- published training runs ------------------------------------------------------------

@dataclass(frozen=True)
class TrainingRun:
    """What a paper or model card says about one pre-training run (None = not published).

    ``dp`` counts data-parallel replicas of the whole model (sharded or not);
    ``accelerator_hours`` are GPU-hours (TPU chip-hours for PaLM); ``mfu`` is model FLOPs
    utilisation against the dense BF16 peak.
    """

    model: str
    accelerator: str
    n_accelerators: int | None
    tp: int | None
    pp: int | None
    dp: int | None
    cp: int | None
    ep: int | None
    tokens: float
    seq_len: int
    accelerator_hours: float | None
    mfu: float | None
    source: str
    notes: str = ""


TRAINING_RUNS: tuple[TrainingRun, ...] = (
    TrainingRun(
        "Llama 3 405B", "H100 SXM 80GB", 16384, tp=8, pp=16, dp=128, cp=1, ep=1,
        tokens=15.6e12, seq_len=8192, accelerator_hours=30.84e6, mfu=0.41,
        source="Llama 3 paper, Table 4 and §3.3; Llama 3.1 model card (30.84M H100-hours)",
        notes="Table 4: 8,192 GPUs with DP 64 reached 43 % MFU; the 128K-context phase used "
              "CP 16 / DP 8 at 38 %. 16M tokens per batch; order [TP, CP, PP, DP]; 3.8e25 "
              "FLOPs. A 54-day snapshot of the run saw 419 unexpected interruptions (§3.3.4)."),
    TrainingRun(
        "DeepSeek-V3", "H800 SXM 80GB", 2048, tp=1, pp=16, dp=128, cp=None, ep=64,
        tokens=14.8e12, seq_len=4096, accelerator_hours=2.788e6, mfu=None,
        source="DeepSeek-V3 technical report, §3.2 and Table 1",
        notes="16-way PP (DualPipe), 64-way EP over 8 nodes, ZeRO-1 DP (DP 128 = 2048/16 is "
              "implied, not stated); no TP. 2.664M GPU-hours pre-training + 0.119M context "
              "extension + 0.005M post-training; $5.576M at an assumed $2 per GPU-hour. FP8."),
    TrainingRun(
        "PaLM 540B", "TPU v4", 6144, tp=12, pp=1, dp=512, cp=None, ep=None,
        tokens=780e9, seq_len=2048, accelerator_hours=6144 * 1200 + 3072 * 336, mfu=0.462,
        source="PaLM paper, §4, §5, Table 3 and §B (Compute usage)",
        notes="Two pods of 3,072 chips; in each pod 12-way model parallelism x 256-way fully "
              "sharded data parallelism, 2-way data parallelism across pods; no pipeline. "
              "MFU 46.2 %; 57.8 % is the hardware FLOPs utilisation (with rematerialisation)."),
    TrainingRun(
        "GPT-3 175B", "V100", None, tp=None, pp=None, dp=None, cp=None, ep=None,
        tokens=300e9, seq_len=2048, accelerator_hours=None, mfu=0.213,
        source="Brown et al. 2020, §2.3 and Table D.1 (3.14e23 FLOPs, 3,640 PF-days); "
               "MFU as estimated in the PaLM paper, Table 3",
        notes="Model parallelism within each matrix multiply and across layers on a Microsoft "
              "V100 cluster; the degrees and GPU count were not published."),
)


def training_run(model: str) -> TrainingRun:
    """Look a run up by model name ("Llama 3 405B"); KeyError lists the known ones."""
    for run in TRAINING_RUNS:
        if run.model == model:
            return run
    raise KeyError(f"no run for {model!r}; known: {', '.join(r.model for r in TRAINING_RUNS)}")
