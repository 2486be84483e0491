"""Tensor parallelism (TP): how one layer's weights, heads and traffic split over TP GPUs.

Megatron-LM (Shoeybi et al. 2019, arXiv:1909.08053, §3) splits a transformer layer's
two matrix multiplies in each block as *column-parallel then row-parallel*:

- column-parallel linear ``Y = X W``: ``W`` of shape ``[d_in, d_out]`` is cut along its
  columns, each GPU holds ``[d_in, d_out / t]`` and produces its own slice of ``Y``; no
  communication is needed in the forward pass;
- row-parallel linear ``Z = Y W'``: ``W'`` is cut along its rows, each GPU holds
  ``[d_in / t, d_out]``, multiplies its slice of ``Y`` and produces a *partial sum* of
  ``Z``; an AllReduce adds the partial sums.

Attention (QKV column-parallel by heads, output projection row-parallel) and the MLP
(up-projection column-parallel, down-projection row-parallel) each need one AllReduce
in the forward pass and one in the backward pass: four per layer per training step
(Shoeybi et al. 2019, §3 and Figure 4).

Sizes are decimal (1 GB = 1e9 bytes, 1 MB = 1e6 bytes) unless a name says otherwise.
"""

from __future__ import annotations

from solutions._checks import non_negative, positive, positive_int
from solutions.collectives import ring_allreduce_gb_per_gpu

# Megatron-LM §3, Figure 4: the "g" operator after attention and after the MLP
# (forward), and the "f" operator before each of them (backward).
ALLREDUCES_PER_LAYER_FORWARD = 2
ALLREDUCES_PER_LAYER_BACKWARD = 2


def _split(name: str, size: int, tp: int) -> int:
    """``size / tp`` as an integer; a dimension that does not divide evenly is an error."""
    positive_int(name, size)
    positive_int("tp", tp)
    if size % tp:
        raise ValueError(f"{name}={size} is not divisible by tp={tp}")
    return size // tp


# -- weight shards ----------------------------------------------------------------------
def column_parallel_shard_shape(d_in: int, d_out: int, tp: int) -> tuple[int, int]:
    """Shape of one GPU's shard of a column-parallel weight ``[d_in, d_out]``.

    Formula: ``[d_in, d_out / tp]`` (each GPU keeps every row, a 1/tp slice of columns).
    Source: Shoeybi et al. 2019, §3, Eq. (3).
    """
    positive_int("d_in", d_in)
    return (d_in, _split("d_out", d_out, tp))


def row_parallel_shard_shape(d_in: int, d_out: int, tp: int) -> tuple[int, int]:
    """Shape of one GPU's shard of a row-parallel weight ``[d_in, d_out]``.

    Formula: ``[d_in / tp, d_out]``; the outputs are partial sums that need an AllReduce.
    Source: Shoeybi et al. 2019, §3.
    """
    positive_int("d_out", d_out)
    return (_split("d_in", d_in, tp), d_out)


def shard_params(d_in: int, d_out: int, tp: int) -> int:
    """Parameters in one GPU's shard of a ``[d_in, d_out]`` weight: ``d_in * d_out / tp``."""
    rows, cols = column_parallel_shard_shape(d_in, d_out, tp)
    return rows * cols


# -- attention heads under GQA ----------------------------------------------------------
def q_heads_per_gpu(n_heads: int, tp: int) -> int:
    """Query heads on each GPU: ``n_heads / tp`` (heads are never split across GPUs).

    Source: Shoeybi et al. 2019, §3 (attention is partitioned by heads).
    """
    return _split("n_heads", n_heads, tp)


def kv_heads_per_gpu(n_kv_heads: int, tp: int) -> int:
    """Distinct key/value heads each GPU holds under grouped-query attention (GQA).

    GQA (Ainslie et al. 2023, arXiv:2305.13245) shares one K/V head among a group of
    query heads. With ``tp <= n_kv_heads`` the K/V heads split like the query heads:
    ``n_kv_heads / tp`` per GPU. A head cannot be cut in two, so with
    ``tp > n_kv_heads`` each GPU holds **one** K/V head and every K/V head is
    *replicated* on ``tp / n_kv_heads`` GPUs. That is the convention of inference engines
    (vLLM's ``QKVParallelLinear``). Training frameworks require ``tp`` to divide the number
    of K/V groups (Megatron-Core's ``attention.py``: ``divide(num_query_groups, tp)``);
    Megatron-Core since PR #2565 (Dec 2025) also runs ``tp > n_kv_heads`` by splitting the
    QKV weights evenly and all-gathering the projected activations, so each GPU computes
    with one whole K/V head without a copy of its weights. Either way the division must be
    exact.
    """
    positive_int("n_kv_heads", n_kv_heads)
    positive_int("tp", tp)
    if tp <= n_kv_heads:
        return _split("n_kv_heads", n_kv_heads, tp)
    if tp % n_kv_heads:
        raise ValueError(
            f"tp={tp} > n_kv_heads={n_kv_heads} needs tp to be a multiple of n_kv_heads "
            "so that each K/V head is replicated the same number of times"
        )
    return 1


def kv_head_replicas(n_kv_heads: int, tp: int) -> int:
    """How many GPUs hold a copy of each K/V head: ``max(1, tp / n_kv_heads)``."""
    kv_heads_per_gpu(n_kv_heads, tp)  # validates the combination
    return max(1, tp // n_kv_heads)


# -- activations and TP traffic ---------------------------------------------------------
def activation_bytes(micro_batch: int, seq_len: int, d_model: int,
                     bytes_per_element: float = 2.0) -> float:
    """Bytes of one activation tensor of shape ``[b * s, d]``: ``b * s * d * bytes``.

    FP16/BF16 use 2 bytes per element. This is the tensor each TP AllReduce sums.
    """
    positive_int("micro_batch", micro_batch)
    positive_int("seq_len", seq_len)
    positive_int("d_model", d_model)
    positive("bytes_per_element", bytes_per_element)
    return micro_batch * seq_len * d_model * bytes_per_element


def tp_allreduce_mb_per_gpu(micro_batch: int, seq_len: int, d_model: int, tp: int,
                            bytes_per_element: float = 2.0) -> float:
    """MB (1e6 bytes) each GPU sends in one TP AllReduce of the ``[b * s, d]`` activation.

    Ring AllReduce: ``2 (t - 1) / t * M`` per GPU, reduce-scatter plus all-gather
    (NCCL tests, doc/PERFORMANCE.md; Patarasuk & Yuan 2009). Each GPU receives as much.
    """
    message_gb = activation_bytes(micro_batch, seq_len, d_model, bytes_per_element) / 1e9
    return ring_allreduce_gb_per_gpu(message_gb, positive_int("tp", tp)) * 1e3


def tp_allreduces_per_layer(include_backward: bool = True) -> int:
    """AllReduces per transformer layer: 2 in the forward pass, 2 more in the backward.

    Source: Shoeybi et al. 2019, §3, Figure 4 ("4 total communication operations in the
    forward and backward pass of a single model parallel transformer layer").
    Activation recomputation would add the forward pair again; it is not counted here.
    """
    backward = ALLREDUCES_PER_LAYER_BACKWARD if include_backward else 0
    return ALLREDUCES_PER_LAYER_FORWARD + backward


def tp_allreduces_per_step(n_layers: int, include_backward: bool = True) -> int:
    """AllReduces per micro-batch forward(+backward) pass: ``n_layers * 4`` (or ``* 2``)."""
    return positive_int("n_layers", n_layers) * tp_allreduces_per_layer(include_backward)


def tp_comm_overhead_percent(n_allreduces: int, allreduce_ms: float,
                             compute_ms: float) -> float:
    """TP communication time as a percentage **of the compute time** (not of the step).

    Formula: ``100 * n_allreduces * allreduce_ms / compute_ms``. It assumes no overlap:
    each layer needs its AllReduce result before the next layer can start. To express
    it as a share of the whole step instead, divide by ``compute_ms + comm_ms``.
    """
    positive_int("n_allreduces", n_allreduces)
    non_negative("allreduce_ms", allreduce_ms)
    positive("compute_ms", compute_ms)
    return 100.0 * n_allreduces * allreduce_ms / compute_ms


# -- weights and activation memory -------------------------------------------------------
def layer_params_12d2(d_model: int) -> int:
    """The classic approximation of a transformer layer's parameters: ``12 d^2``.

    Attention ``4 d^2`` (Q, K, V, O each ``d x d``) plus an MLP with hidden size ``4d``
    (``8 d^2``); biases and norms ignored (Kaplan et al. 2020, Table 1). It ignores GQA
    and SwiGLU: a real Llama 2 70B layer has about 856M parameters, not 805M.
    """
    return 12 * positive_int("d_model", d_model) ** 2


def tp_weight_gb_per_gpu(params_per_layer: float, n_layers: int, tp: int,
                         bytes_per_param: float = 2.0) -> float:
    """Weight memory (GB) of ``n_layers`` layers on one GPU of a TP group.

    Formula: ``params_per_layer * n_layers * bytes_per_param / tp / 1e9``. Every weight
    matrix is split ``tp`` ways (Shoeybi et al. 2019, §3); the few norm weights that are
    replicated are ignored.
    """
    positive("params_per_layer", params_per_layer)
    positive_int("n_layers", n_layers)
    positive("bytes_per_param", bytes_per_param)
    return params_per_layer * n_layers * bytes_per_param / positive_int("tp", tp) / 1e9


def activation_bytes_per_layer(seq_len: int, micro_batch: int, d_model: int, n_heads: int,
                               tp: int = 1, sequence_parallel: bool = False) -> float:
    """Activation bytes one transformer layer stores for the backward pass (16-bit).

    Korthikanti et al. 2022 (arXiv:2205.05198), §4 and Table 2, with s, b, h, a =
    seq_len, micro_batch, d_model, n_heads and t = tp, no recomputation:
    - no parallelism: ``s b h (34 + 5 a s / h)``;
    - tensor parallel: ``s b h (10 + 24 / t + 5 a s / (h t))``;
    - tensor + sequence parallel: ``s b h / t * (34 + 5 a s / h)``.
    """
    s, b = positive_int("seq_len", seq_len), positive_int("micro_batch", micro_batch)
    h, a = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
    t = positive_int("tp", tp)
    attention_scores = 5 * a * s / h
    if sequence_parallel:
        return s * b * h * (34 + attention_scores) / t
    return s * b * h * (10 + 24 / t + attention_scores / t)
