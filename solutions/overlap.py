"""Data-parallel communication against computation: AllReduce time, overlap, MFU.

Conventions:

* Gradients are ``bytes_per_grad`` bytes per parameter (2 for FP16/BF16), so a model of
  ``params_billion`` x 1e9 parameters has a gradient of params_billion x bytes_per_grad GB
  (decimal GB, 1e9 bytes).
* Link bandwidths are per direction, as in :mod:`solutions.collectives`.
* Times are in ms; FLOP counts in TFLOP (1e12 FLOP); throughputs in TFLOPS.

Sources:

* Bucketed, overlapped gradient AllReduce is a feature of PyTorch DistributedDataParallel,
  not of NCCL: Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel
  Training", PVLDB 13(12), 2020, §3.2.2 (gradient bucketing) and §3.2.3 (overlapping
  computation with communication); ``bucket_cap_mb`` defaults to 25 (MiB in the
  implementation, with a 1 MiB first bucket). NCCL only runs each AllReduce it is handed.
* Ring AllReduce cost: NCCL tests, doc/PERFORMANCE.md (bus bandwidth = algorithm bandwidth
  x 2(n-1)/n); see :mod:`solutions.collectives`.
* Two-level AllReduce: Goyal et al., arXiv:1706.02677 (2017), §4 (sum inside each
  server, AllReduce across servers, broadcast inside each server); the reduce-scatter /
  all-gather form used here moves the same bytes inside the node and lets each GPU drive
  its own network link (Jia et al., arXiv:1807.11205, 2018, hierarchical all-reduce).
* MFU: Chowdhery et al., "PaLM", arXiv:2204.02311 (2022), Appendix B.
"""

from __future__ import annotations

from solutions._checks import fraction, non_negative, positive, positive_int
from solutions.collectives import ring_allreduce_time_ms

#: bytes per gradient element in FP16 / BF16
BYTES_PER_GRAD_FP16 = 2.0


def gradient_gb(params_billion: float, bytes_per_grad: float = BYTES_PER_GRAD_FP16) -> float:
    """Gradient size in GB: params x bytes per element (1e9 params x 2 B = 2 GB)."""
    return positive("params_billion", params_billion) * positive("bytes_per_grad", bytes_per_grad)


def dp_allreduce_time_ms(
    params_billion: float, n_gpus: int, link_gb_per_s: float,
    bytes_per_grad: float = BYTES_PER_GRAD_FP16, latency_us: float = 0.0,
) -> float:
    """Ring AllReduce of a model's whole gradient, in ms: 2 S (N-1) / (N B) (+ latency).

    S = params x bytes_per_grad; B is the per-direction link bandwidth. With the default
    zero latency this is the bandwidth term only, the usual estimate for large gradients.
    """
    message_gb = gradient_gb(params_billion, bytes_per_grad)
    return ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)


# -- overlap with the backward pass ----------------------------------------------------

def exposed_comm_ms(n_buckets: int, comm_per_bucket_ms: float,
                    compute_per_bucket_ms: float) -> float:
    """Communication time left over after the backward pass ends, in ms.

    Model (one bucket per layer, as in the DDP paper's overlap design): the backward pass
    computes L buckets, each in b ms; bucket k's AllReduce (c ms) starts once its gradient
    is ready *and* the previous AllReduce has finished (one communication stream, in
    order); communication does not slow the computation.

    * c <= b: each AllReduce ends before the next bucket is ready, so only the last
      bucket's AllReduce (the one for the first layer, whose gradient comes last) sticks
      out: exposed = c.
    * c > b: the AllReduces queue up back to back from time b; the last ends at
      b + L c, the backward at L b, so exposed = L c - (L - 1) b.

    Both cases: exposed = c + (L - 1) x max(0, c - b).
    """
    n = positive_int("n_buckets", n_buckets)
    c = non_negative("comm_per_bucket_ms", comm_per_bucket_ms)
    b = non_negative("compute_per_bucket_ms", compute_per_bucket_ms)
    return c + (n - 1) * max(0.0, c - b)


def overlapped_comm_fraction(n_buckets: int, comm_per_bucket_ms: float,
                             compute_per_bucket_ms: float) -> float:
    """Fraction of all AllReduce time hidden behind the backward pass: 1 - exposed / (L c).

    A fraction in [0, 1) (the last bucket can never be hidden), not a percentage.
    """
    total_ms = positive_int("n_buckets", n_buckets) * positive(
        "comm_per_bucket_ms", comm_per_bucket_ms)
    exposed = exposed_comm_ms(n_buckets, comm_per_bucket_ms, compute_per_bucket_ms)
    return 1.0 - exposed / total_ms


def backward_with_comm_ms(n_buckets: int, comm_per_bucket_ms: float,
                          compute_per_bucket_ms: float) -> float:
    """Backward pass plus the exposed communication, in ms: L b + exposed."""
    n = positive_int("n_buckets", n_buckets)
    compute = n * non_negative("compute_per_bucket_ms", compute_per_bucket_ms)
    return compute + exposed_comm_ms(n, comm_per_bucket_ms, compute_per_bucket_ms)


# -- two-level (hierarchical) AllReduce -------------------------------------------------

def inter_node_allreduce_time_ms(
    message_gb: float, n_nodes: int, link_gb_per_s: float,
    links_per_node: int = 1, latency_us: float = 0.0,
) -> float:
    """The cross-node step of a hierarchical AllReduce, in ms.

    The node-level sum of ``message_gb`` is AllReduced in a ring over the nodes. With
    ``links_per_node`` network links (rails) each carrying its own ring over 1/links of
    the data, T = 2 (S / links) (n-1) / (n B). One link per node means the whole S
    crosses a single link; a DGX H100 has 8 (one 400 Gb/s = 50 GB/s NIC per GPU).
    """
    links = positive_int("links_per_node", links_per_node)
    non_negative("message_gb", message_gb)
    return ring_allreduce_time_ms(message_gb / links, n_nodes, link_gb_per_s, latency_us)


def intra_node_time_ms(message_gb: float, gpus_per_node: int,
                       intra_link_gb_per_s: float) -> float:
    """The two in-node phases, in ms: reduce-scatter then all-gather, (g-1)/g x S / B each.

    Together they cost the same as one in-node ring AllReduce: 2 S (g-1) / (g B).
    """
    return ring_allreduce_time_ms(message_gb, gpus_per_node, intra_link_gb_per_s, 0.0)


def hierarchical_allreduce_time_ms(
    message_gb: float, n_nodes: int, gpus_per_node: int,
    intra_link_gb_per_s: float, inter_link_gb_per_s: float, links_per_node: int = 1,
) -> float:
    """Two-level AllReduce, phases run one after another, bandwidth terms only, in ms.

    T = 2 S (g-1)/(g B_intra) + 2 (S/links) (n-1)/(n B_inter). Real libraries pipeline the
    phases, so this is an upper estimate; the inter-node ring is usually the bottleneck.
    """
    intra = intra_node_time_ms(message_gb, gpus_per_node, intra_link_gb_per_s)
    inter = inter_node_allreduce_time_ms(message_gb, n_nodes, inter_link_gb_per_s,
                                         links_per_node)
    return intra + inter


# -- compute and MFU -------------------------------------------------------------------

def compute_time_ms(flops_tflop: float, peak_tflops: float, mfu: float) -> float:
    """Time to execute ``flops_tflop`` TFLOP at ``mfu`` x peak, in ms: F / (peak x MFU).

    MFU (model FLOPs utilisation) is achieved model FLOPs per second over the hardware
    peak (Chowdhery et al. 2022, App. B). H100 SXM dense BF16 peak: 989.4 TFLOPS.
    """
    positive("flops_tflop", flops_tflop)
    positive("peak_tflops", peak_tflops)
    fraction("mfu", mfu)
    return 1000.0 * flops_tflop / (peak_tflops * mfu)


def comm_to_compute_ratio(comm_ms: float, compute_ms: float) -> float:
    """T_comm / T_compute (a pure number; > 1 means communication dominates)."""
    return non_negative("comm_ms", comm_ms) / positive("compute_ms", compute_ms)


def effective_mfu_no_overlap(mfu: float, compute_ms: float, comm_ms: float) -> float:
    """MFU when the step waits for communication with no overlap: MFU x Tc / (Tc + Tcomm).

    The GPU does the same useful FLOPs, but the step now lasts compute + comm.
    """
    fraction("mfu", mfu)
    positive("compute_ms", compute_ms)
    non_negative("comm_ms", comm_ms)
    return mfu * compute_ms / (compute_ms + comm_ms)


def comm_compute_ratio(
    params_billion: float, n_gpus: int, link_gb_per_s: float,
    flops_per_step_tflop: float, achieved_tflops: float,
) -> float:
    """Ratio of gradient-AllReduce time to compute time for one data-parallel step.

    * T_comm = ring AllReduce of the FP16/BF16 gradient (2 bytes per parameter) over
      ``n_gpus`` GPUs at ``link_gb_per_s`` per direction, bandwidth term only:
      2 S (N-1) / (N B) with S = 2 x params_billion GB. One GPU: 0 (nothing to reduce).
    * T_compute = ``flops_per_step_tflop`` (FLOPs one GPU executes per step, TFLOP) /
      ``achieved_tflops`` (what the GPU actually sustains, i.e. peak x MFU, TFLOPS).

    The two seconds-units cancel; the result is a pure number. Impossible inputs (no
    GPUs, zero or negative sizes, bandwidths or throughputs) raise ValueError.
    """
    comm_ms = dp_allreduce_time_ms(params_billion, n_gpus, link_gb_per_s)
    compute_ms = (1000.0 * positive("flops_per_step_tflop", flops_per_step_tflop)
                  / positive("achieved_tflops", achieved_tflops))
    return comm_ms / compute_ms
