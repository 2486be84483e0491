"""Accelerator and interconnect catalog: the datasheet numbers every other calculation uses.

Conventions (read these before using a number):

* Throughput is in TFLOPS (1e12 floating-point operations per second). NVIDIA quotes two
  figures for each tensor-core precision: *dense* and *with 2:4 structured sparsity*
  (exactly twice the dense figure). Model FLOPs utilisation (MFU) is always measured
  against the **dense** peak: training does not run on 2:4-sparse weights, and the
  Llama 3 paper's 38-43 % MFU is relative to 989 TFLOPS, not 1979.
* Memory: NVIDIA markets the H100 and A100 as "80GB"; the HBM stacks actually hold 80 GiB
  (80 x 2**30 = 85.9e9 bytes), of which CUDA reports about 79.6 GiB usable. ``memory_gib``
  stores the 80 and ``memory_bytes`` the capacity in bytes. Planners in this package budget
  with decimal GB (1e9 bytes) and a default of 80 GB, which leaves the remaining ~5.9 GB
  for the CUDA context, NCCL buffers and allocator fragmentation.
* Bandwidth is in GB/s (1e9 bytes per second). NVLink figures on datasheets are the
  *total* of both directions summed over all links ("900 GB/s" for H100 = 18 links x
  50 GB/s, i.e. 450 GB/s each way). Network ports are quoted in Gb/s (bits) per direction:
  InfiniBand NDR "400 Gb/s" = 50 GB/s each way. A ring collective sends and receives at
  once, so the number to put in a ring AllReduce time is the **per-direction** bandwidth.

Sources: NVIDIA H100 Tensor Core GPU datasheet and the "NVIDIA H100 Tensor Core GPU
Architecture" whitepaper (2022), Table 3 (H100 SXM5: BF16 989.4 / 1978.9 TFLOPS, FP8
1978.9 / 3957.8); NVIDIA A100 80GB datasheet and "NVIDIA A100 Tensor Core GPU Architecture"
whitepaper (2020), Table 1 (BF16 312 / 624); NVIDIA H800 SXM5 product brief (NVLink 400 GB/s);
NVIDIA Quantum-2 (NDR) and Quantum (HDR) InfiniBand product briefs; IEEE 802.3ba/802.3bs
(100 and 400 Gigabit Ethernet).
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions._checks import positive, positive_int

BITS_PER_BYTE = 8
GIB_BYTES = 2**30


@dataclass(frozen=True)
class GPU:
    """One accelerator's datasheet figures (SXM form factor, boost clock)."""

    name: str
    bf16_dense_tflops: float
    bf16_sparse_tflops: float
    fp8_dense_tflops: float | None
    memory_gib: float
    hbm_bandwidth_tb_per_s: float
    tdp_watts: float
    nvlink_total_gb_per_s: float
    gpus_per_node: int
    source: str

    def __post_init__(self) -> None:
        positive("bf16_dense_tflops", self.bf16_dense_tflops)
        positive("memory_gib", self.memory_gib)
        positive("nvlink_total_gb_per_s", self.nvlink_total_gb_per_s)
        positive_int("gpus_per_node", self.gpus_per_node)

    @property
    def peak_flops(self) -> float:
        """Dense BF16 peak in FLOP/s: the denominator of MFU."""
        return self.bf16_dense_tflops * 1e12

    @property
    def memory_bytes(self) -> float:
        """HBM capacity in bytes: ``memory_gib x 2**30`` (80 GiB = 85.9e9 bytes)."""
        return self.memory_gib * GIB_BYTES

    @property
    def nvlink_per_direction_gb_per_s(self) -> float:
        """NVLink bandwidth each way: half the datasheet's bidirectional total."""
        return self.nvlink_total_gb_per_s / 2


@dataclass(frozen=True)
class Link:
    """An interconnect, stored as its bandwidth in one direction (per GPU or per port)."""

    name: str
    per_direction_gb_per_s: float
    scope: str  # "intra-node" (NVLink) or "inter-node" (one NIC port per GPU)
    source: str

    def __post_init__(self) -> None:
        positive("per_direction_gb_per_s", self.per_direction_gb_per_s)

    @property
    def bidirectional_gb_per_s(self) -> float:
        """Both directions added together, the way NVLink datasheets quote it."""
        return 2 * self.per_direction_gb_per_s

    @property
    def per_direction_gbit_per_s(self) -> float:
        """Line rate in gigabits per second, the way NICs and switches are quoted."""
        return self.per_direction_gb_per_s * BITS_PER_BYTE


H100_SXM = GPU(
    name="H100 SXM5 80GB",
    bf16_dense_tflops=989.4,
    bf16_sparse_tflops=1978.9,
    fp8_dense_tflops=1978.9,
    memory_gib=80,
    hbm_bandwidth_tb_per_s=3.35,
    tdp_watts=700,
    nvlink_total_gb_per_s=900,  # NVLink 4: 18 links x 50 GB/s (25 GB/s each way)
    gpus_per_node=8,
    source="NVIDIA H100 datasheet; H100 Architecture whitepaper (2022), Table 3",
)

A100_SXM_80GB = GPU(
    name="A100 SXM4 80GB",
    bf16_dense_tflops=312.0,
    bf16_sparse_tflops=624.0,
    fp8_dense_tflops=None,  # Ampere has no FP8 tensor cores
    memory_gib=80,
    hbm_bandwidth_tb_per_s=2.039,
    tdp_watts=400,
    nvlink_total_gb_per_s=600,  # NVLink 3: 12 links x 50 GB/s
    gpus_per_node=8,
    source="NVIDIA A100 80GB datasheet; A100 Architecture whitepaper (2020), Table 1",
)

# The export variant of H100 SXM: same tensor cores, NVLink cut to 400 GB/s in total
# (DeepSeek-V3 technical report, §3.1, trains on it).
H800_SXM = GPU(
    name="H800 SXM5 80GB",
    bf16_dense_tflops=989.4,
    bf16_sparse_tflops=1978.9,
    fp8_dense_tflops=1978.9,
    memory_gib=80,
    hbm_bandwidth_tb_per_s=3.35,
    tdp_watts=700,
    nvlink_total_gb_per_s=400,
    gpus_per_node=8,
    source="NVIDIA H800 SXM5 product brief; DeepSeek-V3 technical report (2024), §3.1",
)

GPUS: dict[str, GPU] = {"H100": H100_SXM, "A100": A100_SXM_80GB, "H800": H800_SXM}

NVLINK_4 = Link("NVLink 4 (H100)", 450.0, "intra-node",
                "H100 whitepaper: 18 links, 900 GB/s total bidirectional")
NVLINK_3 = Link("NVLink 3 (A100)", 300.0, "intra-node",
                "A100 whitepaper: 12 links, 600 GB/s total bidirectional")
NVLINK_H800 = Link("NVLink (H800)", 200.0, "intra-node",
                   "H800 product brief: 400 GB/s total bidirectional")
IB_NDR = Link("InfiniBand NDR 400 Gb/s", 50.0, "inter-node",
              "NVIDIA Quantum-2 InfiniBand: 400 Gb/s per port per direction")
IB_HDR = Link("InfiniBand HDR 200 Gb/s", 25.0, "inter-node",
              "NVIDIA Quantum InfiniBand: 200 Gb/s per port per direction")
ROCE_100G = Link("RoCE 100 GbE", 12.5, "inter-node", "IEEE 802.3ba: 100 Gb/s per direction")
ROCE_400G = Link("RoCE 400 GbE", 50.0, "inter-node",
                 "IEEE 802.3bs: 400 Gb/s per direction (Llama 3 §3.3.1: 400 Gbps RoCE)")

LINKS: dict[str, Link] = {
    "nvlink4": NVLINK_4, "nvlink3": NVLINK_3, "nvlink_h800": NVLINK_H800,
    "ib_ndr": IB_NDR, "ib_hdr": IB_HDR, "roce_100g": ROCE_100G, "roce_400g": ROCE_400G,
}


def gbit_to_gbyte_per_s(gbit_per_s: float) -> float:
    """Convert a line rate in Gb/s to GB/s: divide by 8 bits per byte (400 Gb/s -> 50 GB/s)."""
    return positive("gbit_per_s", gbit_per_s) / BITS_PER_BYTE


def cluster_peak_flops(gpu: GPU, n_gpus: int) -> float:
    """Aggregate dense BF16 peak of ``n_gpus`` GPUs in FLOP/s: ``n x bf16_dense_tflops x 1e12``."""
    return positive_int("n_gpus", n_gpus) * gpu.peak_flops
