"""Accelerator and interconnect catalog: the datasheet numbers every other calculation uses.

Conventions (read these before using a number):

* Throughput is in TFLOPS (1e12 floating-point operations per second). NVIDIA quotes two
  figures for each tensor-core precision: *dense* and *with 2:4 structured sparsity*
  (exactly twice the dense figure). Model FLOPs utilisation (MFU) is always measured
  against the **dense** peak: training does not run on 2:4-sparse weights, and the
  Llama 3 paper's 38-43 % MFU is relative to 989 TFLOPS, not 1979.
* Memory: NVIDIA markets the H100 and A100 as "80GB"; the HBM stacks actually hold 80 GiB
  (80 x 2**30 = 85.9e9 bytes). ``memory_gib`` stores the 80 and ``memory_bytes`` the
  capacity. ``solutions.performance.estimate`` checks memory against that capacity by
  default; the planner's search takes a budget in decimal GB (1e9 bytes).
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

from dataclasses import dataclass, replace

from solutions._checks import positive, positive_int
from solutions.gpu_family import FAMILIES as FAMILIES  # re-exported
from solutions.gpu_family import POWER_CLOCK_EXPONENT as POWER_CLOCK_EXPONENT  # re-exported
from solutions.gpu_family import clock_fraction_at_power as clock_fraction_at_power
from solutions.gpu_family import family_of as family_of

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
    family: str = ""
    clock_fraction: float = 1.0
    power_limit_watts: float | None = None

    def __post_init__(self) -> None:
        positive("bf16_dense_tflops", self.bf16_dense_tflops)
        positive("memory_gib", self.memory_gib)
        positive("nvlink_total_gb_per_s", self.nvlink_total_gb_per_s)
        positive_int("gpus_per_node", self.gpus_per_node)
        if not 0.0 < self.clock_fraction <= 1.0:
            raise ValueError("clock_fraction is the tensor-core clock under a cap over the "
                             f"boost clock, in (0, 1], got {self.clock_fraction}")
        if self.power_limit_watts is not None:
            positive("power_limit_watts", self.power_limit_watts)

    def capped(self, power_watts: float | None = None,
               clock_fraction: float | None = None) -> GPU:
        """This GPU run under a power limit or a locked clock (give exactly one). The
        datasheet peak, and so the MFU denominator, is unchanged: MFU is quoted against the
        datasheet; the tensor cores run at :attr:`tensor_clock_fraction` of it."""
        if (power_watts is None) == (clock_fraction is None):
            raise ValueError("give exactly one of power_watts and clock_fraction")
        family = self.family or family_of(self)
        if power_watts is not None:
            positive("power_watts", power_watts)
            return replace(self, name=f"{self.name} ({power_watts:g} W)",
                           power_limit_watts=power_watts, family=family)
        assert clock_fraction is not None
        return replace(self, name=f"{self.name} ({clock_fraction:.0%} clock)",
                       clock_fraction=clock_fraction, family=family)

    @property
    def tensor_clock_fraction(self) -> float:
        """The tensor cores' clock over the boost clock: a locked ``clock_fraction``, or the
        clock a power limit leaves (:func:`clock_fraction_at_power`, worked out when read,
        so that it follows the fitted exponent), whichever is lower."""
        if self.power_limit_watts is None:
            return self.clock_fraction
        return min(self.clock_fraction, clock_fraction_at_power(self, self.power_limit_watts))

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

# The 40 GB A100 SXM: the same tensor cores, five HBM2 stacks of 8 GB at 1,555 GB/s instead
# of HBM2e at 2,039 GB/s (A100 datasheet, "A100 40GB SXM" column).
A100_SXM_40GB = GPU(
    name="A100 SXM4 40GB",
    bf16_dense_tflops=312.0,
    bf16_sparse_tflops=624.0,
    fp8_dense_tflops=None,
    memory_gib=40,
    hbm_bandwidth_tb_per_s=1.555,
    tdp_watts=400,
    nvlink_total_gb_per_s=600,
    gpus_per_node=8,
    source="NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM: 1,555 GB/s, 400 W); "
           "A100 Architecture whitepaper (2020), Table 1",
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

# Hopper with HBM3e: the H100's compute (Bekman, ML Engineering, "Theoretical accelerator
# TFLOPS": H200 SXM BF16 989, FP8 1,979, "H200 is the same as H100 but has 141GiB vs 80GiB
# of HBM memory ... HBMe@4.8TBps"), same NVLink 4 and 700 W.
H200_SXM = GPU(
    name="H200 SXM5 141GB", bf16_dense_tflops=989.4, bf16_sparse_tflops=1978.9,
    fp8_dense_tflops=1978.9, memory_gib=141, hbm_bandwidth_tb_per_s=4.8, tdp_watts=700,
    nvlink_total_gb_per_s=900, gpus_per_node=8, family="H200",
    source="NVIDIA H200 product page (141 GB HBM3e, 4.8 TB/s, 700 W, NVLink 900 GB/s), as "
           "tabulated in Bekman, Machine Learning Engineering, compute/accelerator "
           "(note 16: 141 GiB)")
# Blackwell in an 8-GPU HGX node at 1,000 W: BF16 2,250 dense (4,500 sparse), FP8 4,500
# (Bekman's table, from the DGX B200 datasheet; Glenn Lockwood's B200 notes give the same for
# the HGX variant "configured at 1,000 W"), 180 GB HBM3e at 8 TB/s (NVIDIA B200 SXM6 180GB),
# NVLink 5: 18 links x 100 GB/s = 1,800 GB/s in total.
B200_SXM = GPU(
    name="B200 SXM6 180GB", bf16_dense_tflops=2250.0, bf16_sparse_tflops=4500.0,
    fp8_dense_tflops=4500.0, memory_gib=180e9 / GIB_BYTES, hbm_bandwidth_tb_per_s=8.0,
    tdp_watts=1000, nvlink_total_gb_per_s=1800, gpus_per_node=8, family="B200",
    source="NVIDIA DGX B200 datasheet via Bekman, ML Engineering (BF16 2,250 / FP8 4,500 "
           "dense); Lockwood, glennklockwood.com/garden/processors/B200 (HGX at 1,000 W); "
           "B200 SXM6 180GB HBM3e, 8 TB/s, NVLink 5 1.8 TB/s")
# The same die in a GB200 superchip at 1,200 W: BF16 2,500 dense, FP8 5,000 (Lockwood: "for
# the GB200 variant of B200 when configured to 1,200 W"; Bekman note 23), 72 GPUs in one
# NVLink domain. HBM as the B200's 8 TB/s; 186 GB per GPU is the NVL72 rack's 13.4 TB over
# 72 GPUs (NVIDIA GB200 NVL72 page; not checked here against a datasheet).
GB200 = GPU(
    name="GB200 (B200 at 1,200 W, NVL72)", bf16_dense_tflops=2500.0,
    bf16_sparse_tflops=5000.0, fp8_dense_tflops=5000.0, memory_gib=186e9 / GIB_BYTES,
    hbm_bandwidth_tb_per_s=8.0, tdp_watts=1200, nvlink_total_gb_per_s=1800,
    gpus_per_node=72, family="GB200",
    source="Lockwood, glennklockwood.com/garden/processors/B200 (GB200 at 1,200 W: BF16 "
           "2,500, FP8 5,000 dense); Bekman, ML Engineering, note 23; NVIDIA GB200 NVL72 "
           "(72 GPUs per NVLink domain, 13.4 TB HBM3e)")
# Blackwell Ultra: the B200's dense rates in an HGX node, the GB200's in the NVL72 rack.
B300_SXM = GPU(
    name="B300 SXM 288GB", bf16_dense_tflops=2250.0, bf16_sparse_tflops=4500.0,
    fp8_dense_tflops=4500.0, memory_gib=288e9 / GIB_BYTES, hbm_bandwidth_tb_per_s=8.0,
    tdp_watts=1000, nvlink_total_gb_per_s=1800, gpus_per_node=8, family="B300",
    source="Bekman, ML Engineering, compute/accelerator (B300 SXM: BF16 2,250 / FP8 4,500 "
           "dense; 288 GB HBM3e, 8 TB/s; 1,000 W maximum TGP); NVLink 5 1.8 TB/s")
GB300 = GPU(
    name="GB300 (B300 at 1,400 W, NVL72)", bf16_dense_tflops=2500.0,
    bf16_sparse_tflops=5000.0, fp8_dense_tflops=5000.0, memory_gib=279e9 / GIB_BYTES,
    hbm_bandwidth_tb_per_s=8.0, tdp_watts=1400, nvlink_total_gb_per_s=1800,
    gpus_per_node=72, family="GB300",
    source="Bekman, ML Engineering, compute/accelerator (GB300 SXM: BF16 2,500 / FP8 "
           "5,000 dense, 1,400 W per GPU); verda.com GB300 NVL72 per-GPU table (279 GB "
           "HBM3e, 8 TB/s); Lockwood, glennklockwood.com/garden/processors/B300 (NVL72)")
# The H100 of Meta's Grand Teton hosts that torchtitan benchmarks on (torchtitan
# docs/performance.md, December 2024: "Each H100 GPU is equipped with 96GB HBM2e with 2.4
# TB/sec peak memory bandwidth"; "the default 500W power limit"; "the actual peak TFLOPs
# number is between SXM and NVL, and we don't know its exact value"): the SXM tensor cores
# are assumed, run under the 500 W limit (``capped``).
H100_96GB_HBM2E = GPU(
    name="H100 96GB HBM2e (Grand Teton)", bf16_dense_tflops=989.4, bf16_sparse_tflops=1978.9,
    fp8_dense_tflops=1978.9, memory_gib=96, hbm_bandwidth_tb_per_s=2.4, tdp_watts=700,
    nvlink_total_gb_per_s=900, gpus_per_node=8, family="H100",
    source="torchtitan docs/performance.md (2024-12): 96GB HBM2e, 2.4 TB/s, 500 W default "
           "limit, 400 Gb/s RDMA per GPU; tensor cores assumed to be the SXM part's")

GPUS: dict[str, GPU] = {"H100": H100_SXM, "A100": A100_SXM_80GB, "H800": H800_SXM,
                        "A100-40GB": A100_SXM_40GB, "H200": H200_SXM, "B200": B200_SXM,
                        "GB200": GB200, "B300": B300_SXM, "GB300": GB300,
                        "H100-96GB": H100_96GB_HBM2E}

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


# -- clusters: the network a step-time model needs ---------------------------------------

@dataclass(frozen=True)
class Cluster:
    """A GPU cluster as a step-time model sees it: nodes of GPUs joined by NVLink inside
    and one network port per GPU between nodes (a "rail-optimised" fat tree).

    Bandwidths are per direction, in GB/s, per GPU. ``*_latency_us`` is the alpha of one
    step of a ring collective (launch, synchronisation and wire time for a tiny message).
    ``collective_efficiency`` is the share of the line rate a large ring collective reaches
    (NCCL's bus bandwidth over the link's rate); the same factor is applied to both links.
    ``inter_node_gb_per_s`` is each GPU's share of the node's network ports (a node with 4
    x 100 Gb/s ports for 8 GPUs: 6.25 GB/s).
    """

    name: str
    gpu: GPU
    gpus_per_node: int
    nvlink_gb_per_s: float
    inter_node_gb_per_s: float
    nvlink_latency_us: float
    inter_node_latency_us: float
    collective_efficiency: float
    source: str

    def __post_init__(self) -> None:
        positive_int("gpus_per_node", self.gpus_per_node)
        positive("nvlink_gb_per_s", self.nvlink_gb_per_s)
        positive("inter_node_gb_per_s", self.inter_node_gb_per_s)
        positive("collective_efficiency", self.collective_efficiency)
        if self.collective_efficiency > 1:
            raise ValueError("collective_efficiency is a fraction of the line rate in (0, 1], "
                             f"got {self.collective_efficiency}")

    def link_gb_per_s(self, crosses_nodes: bool) -> float:
        """Achievable per-direction bandwidth of one GPU's link: line rate x efficiency."""
        rate = self.inter_node_gb_per_s if crosses_nodes else self.nvlink_gb_per_s
        return rate * self.collective_efficiency

    def node_network_gb_per_s(self) -> float:
        """All of a node's network ports together, per direction, at line rate."""
        return self.inter_node_gb_per_s * self.gpus_per_node

    def group_gb_per_s(self, crosses_nodes: bool, members_per_node: int = 1) -> float:
        """Achievable bus bandwidth (NCCL ``busbw``) of a collective whose group has
        ``members_per_node`` GPUs on each node it spans.

        Inside a node: NVLink. Across nodes NCCL runs one ring (channel) per network port
        and moves data inside the node over NVLink, so a group with ``k`` GPUs per node
        drives ``k`` of the node's ports: ``min(NVLink, k x port)`` times the efficiency
        (NCCL doc/PERFORMANCE.md, bus bandwidth; the inter-node bottleneck of a ring is the
        slowest link it crosses). One GPU per node (TP = 8 of 8) gets its own port only.
        """
        if not crosses_nodes:
            return self.link_gb_per_s(False)
        k = max(1, min(members_per_node, self.gpus_per_node))
        network = self.node_network_gb_per_s() * k / self.gpus_per_node
        return min(self.nvlink_gb_per_s, network) * self.collective_efficiency

    def latency_s(self, crosses_nodes: bool) -> float:
        """Alpha of one ring step, in seconds."""
        return 1e-6 * (self.inter_node_latency_us if crosses_nodes else self.nvlink_latency_us)


#: Alpha of one ring step. Not published for either cluster: these are the order of the
#: small-message latencies NCCL tests report on NVLink (a few microseconds) and across an
#: InfiniBand/RoCE fabric (about ten), stated here so a reader can change them.
NVLINK_LATENCY_US = 5.0
NETWORK_LATENCY_US = 10.0
#: Large-message ring bus bandwidth over line rate. NCCL tests on DGX A100 reach about
#: 230 GB/s of NVLink's 300 GB/s each way (77 %) and about 90 % of an HDR port; one number,
#: 0.8, keeps the model simple (an assumption, not fitted).
COLLECTIVE_EFFICIENCY = 0.8


def _eight_gpu_nodes(name: str, gpu: GPU, nvlink: Link, fabric: Link, source: str) -> Cluster:
    """A cluster of 8-GPU nodes with the latencies and efficiency stated above."""
    return Cluster(name=name, gpu=gpu, gpus_per_node=8,
                   nvlink_gb_per_s=nvlink.per_direction_gb_per_s,
                   inter_node_gb_per_s=fabric.per_direction_gb_per_s,
                   nvlink_latency_us=NVLINK_LATENCY_US,
                   inter_node_latency_us=NETWORK_LATENCY_US,
                   collective_efficiency=COLLECTIVE_EFFICIENCY, source=source)


SELENE_A100 = _eight_gpu_nodes(
    "Selene (DGX A100 80GB, HDR InfiniBand)", A100_SXM_80GB, NVLINK_3, IB_HDR,
    "Narayanan et al. 2021 (SC21), §5: DGX A100 nodes, NVLink/NVSwitch inside, "
    "8 x 200 Gb/s HDR InfiniBand HCAs per node for applications (25 GB/s per GPU)")
LLAMA3_H100 = _eight_gpu_nodes(
    "Llama 3 (Grand Teton H100, 400 Gb/s RoCE)", H100_SXM, NVLINK_4, ROCE_400G,
    "Dubey et al. 2024 (Llama 3), §3.3.1: 8 NVLinked H100s per server, "
    "400 Gb/s RoCE between GPUs (50 GB/s per GPU per direction)")
DEEPSEEK_H800 = _eight_gpu_nodes(
    "DeepSeek-V3 (H800, 400 Gb/s InfiniBand)", H800_SXM, NVLINK_H800, IB_NDR,
    "DeepSeek-V3 technical report (2024), §3.1: 8 H800 per node on NVLink/NVSwitch, "
    "InfiniBand between nodes (IB 50 GB/s, §3.2.2)")

CLUSTERS: dict[str, Cluster] = {"selene": SELENE_A100, "llama3": LLAMA3_H100,
                                "deepseek": DEEPSEEK_H800}


def default_cluster(gpu: GPU) -> Cluster:
    """The preset built from ``gpu`` (A100 -> Selene, H100 -> Llama 3, H800 -> DeepSeek);
    any other GPU gets its own NVLink and one 400 Gb/s port per GPU."""
    for cluster in CLUSTERS.values():
        if cluster.gpu == gpu:
            return cluster
    return Cluster(
        name=f"{gpu.name}, 400 Gb/s per GPU", gpu=gpu, gpus_per_node=gpu.gpus_per_node,
        nvlink_gb_per_s=gpu.nvlink_per_direction_gb_per_s,
        inter_node_gb_per_s=ROCE_400G.per_direction_gb_per_s,
        nvlink_latency_us=NVLINK_LATENCY_US, inter_node_latency_us=NETWORK_LATENCY_US,
        collective_efficiency=COLLECTIVE_EFFICIENCY, source="assumed: datasheet NVLink, 400G")
