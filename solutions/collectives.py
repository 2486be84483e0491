"""Collective communication costs: ring AllReduce, its two halves, trees and a naive root.

Conventions used throughout:

* ``message_gb`` is the size S of the whole tensor being reduced (decimal GB, 1e9 bytes).
  For reduce-scatter and all-gather it is the size of the *full* array (every rank's
  shard put together), as in the NCCL tests.
* ``link_gb_per_s`` is the bandwidth B with which one GPU can send to its neighbour
  **in one direction**. A ring sends and receives at the same time, so a link quoted as
  "600 GB/s bidirectional" (A100 NVLink) gives B = 300 GB/s.
* Latency ``latency_us`` is the fixed cost alpha of one point-to-point step.

The cost model is the alpha-beta (Hockney) model used by Thakur, Rabenseifner & Gropp,
"Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005: a
message of n bytes costs alpha + n/B. The ring AllReduce (a reduce-scatter followed by an
all-gather) sends 2(N-1)/N x S bytes per GPU, which Patarasuk & Yuan, "Bandwidth optimal
all-reduce algorithms for clusters of workstations", JPDC 69(2), 2009, prove is the
lower bound for any AllReduce built from point-to-point messages.
"""

from __future__ import annotations

import math
from typing import Literal

from solutions._checks import non_negative, positive, positive_int

Collective = Literal[
    "allreduce", "reduce_scatter", "all_gather", "alltoall", "broadcast", "reduce"
]


# -- volume -----------------------------------------------------------------------------

def ring_reduce_scatter_gb_per_gpu(message_gb: float, n_gpus: int) -> float:
    """GB each GPU sends in a ring reduce-scatter of a ``message_gb`` array: S(N-1)/N.

    N-1 steps, each sending one chunk of S/N to the next GPU (Thakur et al. 2005, §4).
    Each GPU also receives the same amount.
    """
    non_negative("message_gb", message_gb)
    n = positive_int("n_gpus", n_gpus)
    return message_gb * (n - 1) / n


def ring_all_gather_gb_per_gpu(message_gb: float, n_gpus: int) -> float:
    """GB each GPU sends in a ring all-gather whose gathered result is ``message_gb``: S(N-1)/N.

    Each GPU starts with S/N and forwards N-1 chunks (Thakur et al. 2005, §4).
    """
    non_negative("message_gb", message_gb)
    n = positive_int("n_gpus", n_gpus)
    return message_gb * (n - 1) / n


def ring_allreduce_gb_per_gpu(message_gb: float, n_gpus: int) -> float:
    """GB each GPU sends (and receives) in a ring AllReduce: 2 x S x (N-1)/N.

    Reduce-scatter then all-gather, N-1 steps each, S/N per step. Tends to 2S for large N
    and is bandwidth-optimal (Patarasuk & Yuan 2009). One GPU sends nothing.
    """
    return (ring_reduce_scatter_gb_per_gpu(message_gb, n_gpus)
            + ring_all_gather_gb_per_gpu(message_gb, n_gpus))


def ring_allreduce_steps(n_gpus: int) -> int:
    """Number of sequential point-to-point steps in a ring AllReduce: 2(N-1)."""
    return 2 * (positive_int("n_gpus", n_gpus) - 1)


def naive_allreduce_root_gb(message_gb: float, n_gpus: int) -> float:
    """GB the root receives in a gather-sum-broadcast ("parameter server") AllReduce: (N-1)S.

    The root receives one full gradient from each of the N-1 other GPUs and then sends the
    sum back to each of them, so it also *sends* (N-1)S. Every other GPU moves only S each
    way; the root's link carries N-1 times that, which is why this does not scale.
    """
    non_negative("message_gb", message_gb)
    return (positive_int("n_gpus", n_gpus) - 1) * message_gb


# -- time -------------------------------------------------------------------------------

def ring_allreduce_time_ms(
    message_gb: float, n_gpus: int, link_gb_per_s: float, latency_us: float
) -> float:
    """Ring AllReduce time in ms with the alpha-beta model.

    T = 2(N-1) x (alpha + (S/N) / B): 2(N-1) steps, each paying the latency alpha
    (``latency_us``) and sending one S/N chunk at the per-direction link bandwidth B.
    One GPU: 0 ms (nothing to exchange). Thakur et al. 2005, §4 (reduce-scatter +
    all-gather AllReduce, without the local reduction term gamma).
    """
    non_negative("message_gb", message_gb)
    positive("link_gb_per_s", link_gb_per_s)
    non_negative("latency_us", latency_us)
    n = positive_int("n_gpus", n_gpus)
    chunk_gb = message_gb / n
    step_ms = 1000.0 * chunk_gb / link_gb_per_s + latency_us / 1000.0
    return ring_allreduce_steps(n) * step_ms


def ring_allreduce_bandwidth_time_s(
    message_gb: float, n_gpus: int, link_gb_per_s: float
) -> float:
    """Ring AllReduce time in s, bandwidth term only: 2(N-1) x (S/N) / B = 2S(N-1)/(N B).

    The large-message limit of :func:`ring_allreduce_time_ms` (latency ignored).
    """
    non_negative("message_gb", message_gb)
    positive("link_gb_per_s", link_gb_per_s)
    n = positive_int("n_gpus", n_gpus)
    return ring_allreduce_steps(n) * (message_gb / n) / link_gb_per_s


def tree_rounds(n_gpus: int) -> int:
    """Rounds of a binomial-tree reduce (or broadcast) over N GPUs: ceil(log2 N)."""
    n = positive_int("n_gpus", n_gpus)
    return math.ceil(math.log2(n)) if n > 1 else 0


def tree_allreduce_time_ms(
    message_gb: float, n_gpus: int, link_gb_per_s: float, latency_us: float
) -> float:
    """A simplified tree AllReduce in ms: binomial-tree reduce, then binomial-tree broadcast.

    T = 2 x ceil(log2 N) x (alpha + S/B). The whole S-byte message moves in one piece
    (no pipelining): each of the ceil(log2 N) reduce rounds the root receives the full
    message from one partner, and the broadcast mirrors it. These are MPICH's binomial
    reduce and broadcast costs (Thakur et al. 2005, §4, without the gamma term).

    This is a teaching model, *not* NCCL's tree: NCCL pipelines the message in small
    chunks through two complementary binary trees (double binary tree, Sanders, Speck &
    Träff 2009), which brings the bandwidth term close to the ring's while keeping a
    logarithmic latency term. Use this function to see why an unpipelined tree loses on
    large messages and wins on small ones.
    """
    non_negative("message_gb", message_gb)
    positive("link_gb_per_s", link_gb_per_s)
    non_negative("latency_us", latency_us)
    round_ms = latency_us / 1000.0 + 1000.0 * message_gb / link_gb_per_s
    return 2 * tree_rounds(n_gpus) * round_ms


def faster_allreduce(
    message_gb: float, n_gpus: int, link_gb_per_s: float, latency_us: float
) -> Literal["ring", "tree"]:
    """"ring" or "tree", whichever of the two models above is faster (ties go to the ring)."""
    ring = ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)
    tree = tree_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)
    return "ring" if ring <= tree else "tree"


# -- measured bandwidth (NCCL tests) ---------------------------------------------------

# Multiplier of (n-1)/n for the collectives whose factor depends on n.
_BUSBW_MULTIPLIER = {
    "allreduce": 2,
    "reduce_scatter": 1,
    "all_gather": 1,
    "alltoall": 1,
}


def busbw_factor(collective: Collective, n_gpus: int) -> float:
    """NCCL tests' correction factor from algorithm to bus bandwidth for ``collective``.

    AllReduce 2(n-1)/n; ReduceScatter, AllGather, AlltoAll (n-1)/n; Broadcast, Reduce 1.
    Source: NVIDIA nccl-tests, doc/PERFORMANCE.md, "Summary".
    """
    n = positive_int("n_gpus", n_gpus)
    if collective in ("broadcast", "reduce"):
        return 1.0
    if collective not in _BUSBW_MULTIPLIER:
        raise ValueError(f"unknown collective {collective!r}")
    return _BUSBW_MULTIPLIER[collective] * (n - 1) / n


def algorithm_bandwidth_gb_per_s(message_gb: float, time_ms: float) -> float:
    """NCCL's algorithm bandwidth: algbw = S / t, in GB/s (nccl-tests doc/PERFORMANCE.md)."""
    non_negative("message_gb", message_gb)
    positive("time_ms", time_ms)
    return message_gb / (time_ms / 1000.0)


def bus_bandwidth_gb_per_s(
    message_gb: float, time_ms: float, n_gpus: int, collective: Collective = "allreduce"
) -> float:
    """NCCL's bus bandwidth: busbw = algbw x factor, in GB/s.

    For an AllReduce, busbw = (S/t) x 2(n-1)/n: the per-direction rate each GPU's link
    actually carried, which can be compared with the hardware's per-direction peak
    whatever the number of ranks (nccl-tests doc/PERFORMANCE.md).
    """
    algbw = algorithm_bandwidth_gb_per_s(message_gb, time_ms)
    return algbw * busbw_factor(collective, n_gpus)


def bus_utilisation(
    message_gb: float, time_ms: float, n_gpus: int, peak_gb_per_s: float,
    collective: Collective = "allreduce",
) -> float:
    """Fraction (0..1+) of the per-direction peak link bandwidth reached: busbw / peak."""
    positive("peak_gb_per_s", peak_gb_per_s)
    return bus_bandwidth_gb_per_s(message_gb, time_ms, n_gpus, collective) / peak_gb_per_s
