"""Tensor parallelism: shard shapes, GQA heads, TP traffic, weights and activations."""

from __future__ import annotations

import pytest

from solutions import tensor_parallel as tp


def test_column_parallel_keeps_rows_and_splits_columns() -> None:
    # [8192, 8192] over 8 GPUs -> [8192, 8192 / 8] = [8192, 1024]
    assert tp.column_parallel_shard_shape(8192, 8192, 8) == (8192, 1024)
    # MLP up-projection [4096, 11008] over 2 -> [4096, 5504]
    assert tp.column_parallel_shard_shape(4096, 11008, 2) == (4096, 5504)


def test_row_parallel_splits_rows() -> None:
    # MLP down-projection [28672, 8192] over 8 -> [3584, 8192]
    assert tp.row_parallel_shard_shape(28672, 8192, 8) == (3584, 8192)


def test_shard_params() -> None:
    # 8192 x 1024 = 8,388,608 parameters per GPU
    assert tp.shard_params(8192, 8192, 8) == 8_388_608


@pytest.mark.parametrize("args", [(8192, 8192, 3), (8192, 8192, 0), (0, 8192, 8)])
def test_shards_reject_impossible_splits(args: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        tp.column_parallel_shard_shape(*args)
    with pytest.raises(ValueError):
        tp.row_parallel_shard_shape(args[1], args[0], args[2])


def test_q_heads_per_gpu() -> None:
    assert tp.q_heads_per_gpu(64, 8) == 8  # 64 / 8
    assert tp.q_heads_per_gpu(128, 16) == 8  # 128 / 16
    with pytest.raises(ValueError):
        tp.q_heads_per_gpu(64, 3)


def test_kv_heads_split_when_tp_at_most_kv_heads() -> None:
    assert tp.kv_heads_per_gpu(8, 8) == 1  # 8 / 8
    assert tp.kv_heads_per_gpu(8, 2) == 4  # 8 / 2
    assert tp.kv_head_replicas(8, 4) == 1


def test_kv_heads_replicated_when_tp_exceeds_kv_heads() -> None:
    # TP 16 > 8 KV heads: one KV head per GPU, each held by 16 / 8 = 2 GPUs
    assert tp.kv_heads_per_gpu(8, 16) == 1
    assert tp.kv_head_replicas(8, 16) == 2
    assert tp.kv_head_replicas(4, 32) == 8  # 32 / 4


def test_kv_heads_reject_uneven_groups() -> None:
    with pytest.raises(ValueError):
        tp.kv_heads_per_gpu(8, 12)  # 12 > 8 but not a multiple of 8
    with pytest.raises(ValueError):
        tp.kv_heads_per_gpu(8, 3)  # 8 / 3 is not whole


def test_activation_bytes() -> None:
    # 1 x 4096 x 8192 x 2 bytes = 67,108,864 bytes
    assert tp.activation_bytes(1, 4096, 8192) == 67_108_864
    # FP32: 2 x 2048 x 4096 x 4 = 67,108,864 as well
    assert tp.activation_bytes(2, 2048, 4096, 4.0) == 67_108_864
    with pytest.raises(ValueError):
        tp.activation_bytes(1, 4096, 8192, 0.0)


def test_tp_allreduce_mb_per_gpu() -> None:
    # 67.108864 MB x 2 x 7/8 = 117.440512 MB
    assert tp.tp_allreduce_mb_per_gpu(1, 4096, 8192, 8) == pytest.approx(117.440512)
    # TP 2: 2 x 1/2 x 67.108864 = 67.108864 MB
    assert tp.tp_allreduce_mb_per_gpu(1, 4096, 8192, 2) == pytest.approx(67.108864)
    # one GPU: nothing to send
    assert tp.tp_allreduce_mb_per_gpu(1, 4096, 8192, 1) == 0.0
    with pytest.raises(ValueError):
        tp.tp_allreduce_mb_per_gpu(1, 4096, 8192, 0)


def test_allreduce_counts() -> None:
    assert tp.tp_allreduces_per_layer() == 4  # 2 forward + 2 backward
    assert tp.tp_allreduces_per_layer(include_backward=False) == 2
    assert tp.tp_allreduces_per_step(80) == 320  # 80 x 4
    with pytest.raises(ValueError):
        tp.tp_allreduces_per_step(0)


def test_tp_comm_overhead_percent() -> None:
    # 320 x 0.26 ms = 83.2 ms; 83.2 / 300 = 27.7333 %
    assert tp.tp_comm_overhead_percent(320, 0.26, 300.0) == pytest.approx(27.733333)
    assert tp.tp_comm_overhead_percent(320, 0.0, 300.0) == 0.0
    with pytest.raises(ValueError):
        tp.tp_comm_overhead_percent(320, 0.26, 0.0)
    with pytest.raises(ValueError):
        tp.tp_comm_overhead_percent(320, -0.1, 300.0)


def test_layer_params_and_weights_per_gpu() -> None:
    # 12 x 8192^2 = 12 x 67,108,864 = 805,306,368
    assert tp.layer_params_12d2(8192) == 805_306_368
    # 805,306,368 x 80 x 2 bytes / 8 / 1e9 = 16.10612736 GB
    assert tp.tp_weight_gb_per_gpu(805_306_368, 80, 8) == pytest.approx(16.10612736)
    with pytest.raises(ValueError):
        tp.tp_weight_gb_per_gpu(805_306_368, 80, 0)


def test_activation_bytes_per_layer_korthikanti() -> None:
    # GPT-3-like: s=2048, b=1, h=12288, a=96; 5as/h = 5 x 96 x 2048 / 12288 = 80
    sbh = 2048 * 12288  # 25,165,824
    # no parallelism: sbh x (34 + 80) = 25,165,824 x 114 = 2,868,903,936 bytes
    assert tp.activation_bytes_per_layer(2048, 1, 12288, 96) == pytest.approx(2_868_903_936)
    # TP 8: sbh x (10 + 3 + 10) = sbh x 23 = 578,813,952 bytes
    assert tp.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8) == pytest.approx(
        sbh * 23)
    # TP 8 + SP: sbh x 114 / 8 = 358,612,992 bytes
    assert tp.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8,
                                         sequence_parallel=True) == pytest.approx(358_612_992)
