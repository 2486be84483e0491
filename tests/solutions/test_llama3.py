"""Capstone calculators against the Llama 3 405B figures, worked by hand."""

from __future__ import annotations

import pytest

from solutions import llama3 as l3


def test_dp_degree() -> None:
    assert l3.dp_degree(16384, 8, 16) == 128           # 16384 / (8 x 16)
    assert l3.dp_degree(16384, 8, 16, cp=16) == 8      # the 128K-context phase, Table 4
    with pytest.raises(ValueError):
        l3.dp_degree(16384, 8, 12)                     # 96 does not divide 16384
    with pytest.raises(ValueError):
        l3.dp_degree(0, 8, 16)


def test_layers_per_stage_matches_the_paper() -> None:
    # 126 = 7 + 14 x 8 + 7: the first and last stages hold one layer fewer (§3.3.2)
    assert l3.layers_per_stage(126, 16) == (7,) + (8,) * 14 + (7,)
    assert l3.max_layers_per_stage(126, 16) == 8


def test_layers_per_stage_other_splits() -> None:
    assert l3.layers_per_stage(32, 4) == (8, 8, 8, 8)
    assert l3.layers_per_stage(10, 4) == (2, 3, 3, 2)   # extras go to the middle first
    assert l3.layers_per_stage(11, 4) == (3, 3, 3, 2)   # then to the first stage
    assert l3.layers_per_stage(5, 1) == (5,)
    with pytest.raises(ValueError):
        l3.layers_per_stage(8, 16)                       # more stages than layers


def test_layer_params_gqa_swiglu() -> None:
    # 2 x 16384^2 + 2 x 16384 x 1024 = 570,425,344; 3 x 16384 x 53248 = 2,617,245,696
    assert l3.layer_params(16384, 128, 8, 53248) == 3_187_671_040
    # the seed's 4d^2 attention would give 1,073,741,824 + 2,617,245,696 = 3.69B: not this
    assert l3.layer_params(16384, 128, 128, 53248) == 3_690_987_520
    with pytest.raises(ValueError):
        l3.layer_params(16384, 128, 7, 53248)


def test_weight_memory_per_gpu() -> None:
    # 3,187,671,040 x 8 layers / TP 8 x 2 bytes = 6,375,342,080 bytes
    assert l3.weight_gb_per_gpu(3_187_671_040, 8, 8) == pytest.approx(6.37534208)
    with pytest.raises(ValueError):
        l3.weight_gb_per_gpu(3e9, 8, 0)


def test_training_flops_and_pf_days() -> None:
    flops = l3.training_flops(405e9, 15.6e12)
    assert flops == pytest.approx(3.7908e25)             # 6 x 405e9 x 15.6e12
    assert l3.pf_days(flops) == pytest.approx(438_750)   # / 8.64e19
    # GPT-3: 6 x 175e9 x 300e9 = 3.15e23 FLOPs = 3,645.8 PF-days (paper: 3,640)
    assert l3.pf_days(l3.training_flops(175e9, 300e9)) == pytest.approx(3645.833, rel=1e-6)


def test_training_days() -> None:
    # 16384 x 989.4e12 x 0.40 = 6.48413e18 FLOP/s; 3.7908e25 / that = 5.84623e6 s = 67.665 d
    assert l3.training_days(3.7908e25, 16384, 989.4, 0.40) == pytest.approx(67.6652, rel=1e-5)
    with pytest.raises(ValueError):
        l3.training_days(3.7908e25, 16384, 989.4, 40)   # a percentage, not a fraction
    with pytest.raises(ValueError):
        l3.training_days(3.7908e25, 0, 989.4, 0.4)


def test_mfu() -> None:
    assert l3.mfu_from_tflops(400, 989.4) == pytest.approx(0.40428, rel=1e-4)  # Table 4: 41%
    # 6 x 405e9 x 164.6 tokens/s = 3.99978e14 FLOP/s; / 989.4e12 = 0.404263
    assert l3.model_flops_utilisation(405e9, 164.6, 989.4) == pytest.approx(0.404263, rel=1e-5)
    # 3.8e25 / (30.84e6 h x 3600 x 989.4e12) = 3.8e25 / 1.09849e26 = 0.3459
    assert l3.implied_mfu(3.8e25, 30.84e6, 989.4) == pytest.approx(0.345935, rel=1e-5)


def test_dp_allreduce_volume() -> None:
    # S = 3,187,671,040 x 2 bytes = 6.37534208 GB; 2 x 127/128 x S = 12.65106944 GB
    assert l3.dp_allreduce_gb_per_gpu(3_187_671_040, 128) == pytest.approx(12.65106944)
    assert l3.dp_allreduce_gb_per_gpu(1e9, 1) == 0.0     # one GPU sends nothing
    with pytest.raises(ValueError):
        l3.dp_allreduce_gb_per_gpu(1e9, 0)


def test_energy_and_costs() -> None:
    # 16384 x 0.7 kW = 11,468.8 kW; x 77 x 24 h = 21,194,342.4 kWh; x $0.05 = $1,059,717.12
    assert l3.energy_kwh(16384, 700, 77) == pytest.approx(21_194_342.4)
    assert l3.electricity_cost_usd(16384, 700, 77, 0.05) == pytest.approx(1_059_717.12)
    assert l3.electricity_cost_usd(16384, 700, 77, 0.05, pue=1.4) == pytest.approx(1_483_603.968)
    # 16384 x 77 x 24 = 30,277,632 GPU-hours; x $2 = $60,555,264
    assert l3.gpu_hours(16384, 77) == 30_277_632
    assert l3.gpu_hours_cost_usd(16384, 77, 2.0) == pytest.approx(60_555_264)
    with pytest.raises(ValueError):
        l3.electricity_cost_usd(16384, 700, 77, 0.05, pue=0.9)
    with pytest.raises(ValueError):
        l3.energy_kwh(16384, -700, 77)


def test_paper_constants_are_consistent() -> None:
    assert l3.TP * l3.CP * l3.PP * l3.DP == l3.N_GPUS
    # 128 DP groups x 16 sequences x 8192 tokens = 16,777,216 tokens: the "16M" batch
    assert l3.DP * l3.BATCH_PER_DP * l3.SEQ_LEN == 16_777_216
    assert l3.PARALLELISM_ORDER == ("TP", "CP", "PP", "DP")
