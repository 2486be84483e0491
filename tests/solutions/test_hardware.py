"""The hardware catalog: datasheet figures, derived per-direction numbers, bad input."""

from __future__ import annotations

import dataclasses

import pytest

from solutions import gpu_family
from solutions import hardware as hw


def test_h100_dense_and_sparse_peaks() -> None:
    # H100 whitepaper Table 3: BF16 989.4 dense, 1978.9 with 2:4 sparsity; FP8 1978.9 dense
    assert hw.H100_SXM.bf16_dense_tflops == 989.4
    assert hw.H100_SXM.bf16_sparse_tflops == pytest.approx(2 * 989.4, abs=0.15)
    assert hw.H100_SXM.fp8_dense_tflops == pytest.approx(1978.9)
    assert hw.H100_SXM.peak_flops == pytest.approx(989.4e12)  # MFU uses the dense peak


def test_h100_memory_is_80_gib() -> None:
    # "80GB" on the datasheet is 80 GiB of HBM3: 80 x 1,073,741,824 = 85,899,345,920 bytes
    assert hw.H100_SXM.memory_bytes == 85_899_345_920
    assert hw.H100_SXM.tdp_watts == 700


def test_nvlink_totals_and_per_direction() -> None:
    # NVLink 4: 900 GB/s both directions -> 450 each way; NVLink 3: 600 -> 300; H800: 400 -> 200
    assert hw.H100_SXM.nvlink_per_direction_gb_per_s == 450
    assert hw.A100_SXM_80GB.nvlink_per_direction_gb_per_s == 300
    assert hw.H800_SXM.nvlink_per_direction_gb_per_s == 200
    assert hw.NVLINK_4.bidirectional_gb_per_s == 900
    assert hw.NVLINK_3.bidirectional_gb_per_s == 600


def test_a100_and_h800() -> None:
    assert (hw.A100_SXM_80GB.bf16_dense_tflops, hw.A100_SXM_80GB.bf16_sparse_tflops) == (312, 624)
    assert hw.A100_SXM_80GB.tdp_watts == 400
    assert hw.A100_SXM_80GB.fp8_dense_tflops is None
    assert hw.H800_SXM.bf16_dense_tflops == hw.H100_SXM.bf16_dense_tflops  # same tensor cores


@pytest.mark.parametrize(("link", "gb_per_s", "gbit"), [
    (hw.IB_NDR, 50.0, 400.0),     # 400 Gb/s / 8 bits
    (hw.IB_HDR, 25.0, 200.0),
    (hw.ROCE_100G, 12.5, 100.0),
    (hw.ROCE_400G, 50.0, 400.0),
])
def test_network_ports_per_direction(link: hw.Link, gb_per_s: float, gbit: float) -> None:
    assert link.per_direction_gb_per_s == gb_per_s
    assert link.per_direction_gbit_per_s == gbit
    assert link.scope == "inter-node"


def test_every_entry_cites_a_source() -> None:
    assert all(gpu.source.strip() for gpu in hw.GPUS.values())
    assert all(link.source.strip() for link in hw.LINKS.values())


def test_catalog_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.H100_SXM.memory_gib = 96  # type: ignore[misc]


def test_conversions() -> None:
    assert hw.gbit_to_gbyte_per_s(400) == 50.0
    # 16,384 x 989.4e12 = 1.62103e19 FLOP/s
    assert hw.cluster_peak_flops(hw.H100_SXM, 16384) == pytest.approx(1.6210330e19)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_impossible_input_raises(bad: float) -> None:
    with pytest.raises(ValueError):
        hw.gbit_to_gbyte_per_s(bad)
    with pytest.raises(ValueError):
        hw.Link("broken", bad, "inter-node", "none")


def test_zero_gpus_raise() -> None:
    with pytest.raises(ValueError):
        hw.cluster_peak_flops(hw.H100_SXM, 0)


def test_selene_cluster_matches_the_megatron_paper() -> None:
    # Narayanan et al. 2021 §5: 8 x 200 Gb/s HDR per 8-GPU node -> 200/8 = 25 GB/s per GPU
    c = hw.SELENE_A100
    assert (c.gpu, c.gpus_per_node) == (hw.A100_SXM_80GB, 8)
    assert c.inter_node_gb_per_s * c.gpus_per_node * 8 == 8 * 200  # Gb/s per node
    assert c.nvlink_gb_per_s == 600 / 2


def test_llama3_cluster_is_400_gbit_roce_per_gpu() -> None:
    c = hw.LLAMA3_H100
    assert c.inter_node_gb_per_s == 400 / 8 and c.nvlink_gb_per_s == 900 / 2
    assert c.link_gb_per_s(True) == pytest.approx(50 * c.collective_efficiency)
    assert c.latency_s(False) == pytest.approx(c.nvlink_latency_us / 1e6)


def test_default_cluster_follows_the_gpu() -> None:
    assert hw.default_cluster(hw.A100_SXM_80GB) is hw.SELENE_A100
    assert hw.default_cluster(hw.H100_SXM) is hw.LLAMA3_H100
    other = dataclasses.replace(hw.H100_SXM, name="H100 PCIe-ish", nvlink_total_gb_per_s=600)
    assert hw.default_cluster(other).nvlink_gb_per_s == 300


def test_cluster_rejects_an_efficiency_above_one() -> None:
    with pytest.raises(ValueError, match="fraction"):
        dataclasses.replace(hw.SELENE_A100, collective_efficiency=1.5)


def test_a100_40gb_is_an_a100_with_slower_smaller_hbm() -> None:
    # A100 datasheet: 40GB SXM 1,555 GB/s HBM2, 80GB SXM 2,039 GB/s HBM2e; same tensor cores
    small, big = hw.A100_SXM_40GB, hw.A100_SXM_80GB
    assert (small.bf16_dense_tflops, small.nvlink_total_gb_per_s) == (312, 600)
    assert small.hbm_bandwidth_tb_per_s == 1.555 < big.hbm_bandwidth_tb_per_s
    assert small.memory_bytes == 40 * 2**30
    assert hw.GPUS["A100-40GB"] is small


def test_gpu_family_is_matched_or_refused_never_guessed() -> None:
    from dataclasses import replace
    assert hw.family_of(hw.GB200) == "GB200" and hw.family_of(hw.B200_SXM) == "B200"
    assert hw.family_of(hw.GB300) == "GB300" and hw.family_of(hw.B300_SXM) == "B300"
    homemade = replace(hw.H100_SXM, name="B200", family="")
    assert hw.family_of(homemade) == "B200"  # by name, GB200 checked first
    assert hw.family_of(replace(homemade, name="my GB300 rack")) == "GB300"
    assert hw.family_of(replace(homemade, name="HGX B300")) == "B300"
    with pytest.raises(ValueError, match="does not guess"):
        hw.family_of(replace(hw.H100_SXM, name="MI300X", family=""))
    with pytest.raises(ValueError, match="family"):
        hw.family_of(replace(hw.H100_SXM, family="TPU"))


def test_power_cap_scales_the_clock_by_the_power_law_read_when_used(monkeypatch) -> None:
    capped = hw.H100_SXM.capped(power_watts=500)
    assert capped.power_limit_watts == 500
    assert capped.peak_flops == hw.H100_SXM.peak_flops  # the MFU denominator stays
    # the cubic DVFS law: 500 W of 700 W -> (5/7)^(1/3) = 0.8939
    monkeypatch.setattr(gpu_family, "POWER_CLOCK_EXPONENT", 3.0)
    assert capped.tensor_clock_fraction == pytest.approx(0.8939, abs=1e-4)
    # voltage at its floor, power ~ clock: 5/7 = 0.7143; the same GPU object follows
    monkeypatch.setattr(gpu_family, "POWER_CLOCK_EXPONENT", 1.0)
    assert capped.tensor_clock_fraction == pytest.approx(0.7143, abs=1e-4)
    assert hw.H100_SXM.capped(power_watts=900).tensor_clock_fraction == 1.0
    locked = hw.H100_SXM.capped(clock_fraction=0.8)
    assert locked.tensor_clock_fraction == 0.8
    # a locked clock under a power limit runs at the lower of the two
    assert locked.capped(power_watts=600).tensor_clock_fraction == pytest.approx(0.8)
    assert locked.capped(power_watts=500).tensor_clock_fraction == pytest.approx(0.7143,
                                                                                 abs=1e-4)
    with pytest.raises(ValueError, match="exactly one"):
        hw.H100_SXM.capped()
    with pytest.raises(ValueError, match="power_watts"):
        hw.H100_SXM.capped(power_watts=0)


def test_blackwell_presets_carry_their_datasheet_figures() -> None:
    # B200 (HGX, 1,000 W): BF16 2,250 dense; GB200 (1,200 W): 2,500; H200: the H100's compute
    assert hw.B200_SXM.bf16_sparse_tflops == 2 * hw.B200_SXM.bf16_dense_tflops == 4500
    assert hw.GB200.bf16_dense_tflops == 2500 and hw.GB200.gpus_per_node == 72
    assert hw.H200_SXM.bf16_dense_tflops == hw.H100_SXM.bf16_dense_tflops
    assert hw.H200_SXM.memory_gib == 141 and hw.B200_SXM.memory_bytes == pytest.approx(180e9)
    # Blackwell Ultra: B300 (HGX) at the B200's dense rates, GB300 (1,400 W) at the GB200's,
    # with more HBM (288 GB; 279 GB usable per GPU of the GB300 NVL72)
    assert (hw.B300_SXM.bf16_dense_tflops, hw.B300_SXM.fp8_dense_tflops) == (2250, 4500)
    assert (hw.GB300.bf16_dense_tflops, hw.GB300.fp8_dense_tflops) == (2500, 5000)
    assert hw.B300_SXM.memory_bytes == pytest.approx(288e9)
    assert hw.GB300.memory_bytes == pytest.approx(279e9) and hw.GB300.tdp_watts == 1400
    assert hw.GPUS["B300"] is hw.B300_SXM and hw.GPUS["GB300"] is hw.GB300


def test_blackwell_ultra_is_estimated_at_its_own_measured_gemm_ceiling() -> None:
    # the same layout on B300 and B200: the same dense peak and HBM bandwidth, so the step
    # shrinks by no more than the measured GEMM ceilings' ratio (Bekman's MAMF table: 1,769
    # against 1,745 TFLOP/s), and the GB300 runs as the GB200 does (equal peaks, no
    # microbenchmark of its own)
    from solutions import models
    from solutions.layout import ParallelConfig
    from solutions.performance import estimate
    from solutions.stack import MODERN
    cfg = ParallelConfig(tp=8, pp=1, dp=1, zero_stage=1, micro_batch=1, grad_accum=8,
                         seq_len=8192)
    step = {gpu.name: estimate(models.LLAMA3_70B, cfg, gpu, stack=MODERN,
                               memory_budget_gb=None).step_time_s
            for gpu in (hw.B200_SXM, hw.B300_SXM, hw.GB200, hw.GB300)}
    ratio = step[hw.B200_SXM.name] / step[hw.B300_SXM.name]
    assert 1.0 < ratio <= 1769.0 / 1745.0 + 1e-9
    assert step[hw.GB300.name] == pytest.approx(step[hw.GB200.name], rel=1e-9)
