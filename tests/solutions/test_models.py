"""Parameter counts from architecture, checked against hand arithmetic and published totals."""

from __future__ import annotations

import pytest

from solutions import models as m


def test_llama3_405b_attention_uses_gqa() -> None:
    # Q, O: 2 x 16384^2 = 536,870,912; K, V: 2 x 16384 x (8 x 128) = 33,554,432
    assert m.attention_params(m.LLAMA3_405B) == 570_425_344


def test_llama3_405b_layer() -> None:
    # attention 570,425,344 + SwiGLU 3 x 16384 x 53248 = 2,617,245,696 + norms 2 x 16384
    assert m.dense_layer_params(m.LLAMA3_405B) == 570_425_344 + 2_617_245_696 + 32_768


def test_llama3_405b_total() -> None:
    # 126 x 3,187,703,808 = 401,650,679,808; embeddings 2 x 128256 x 16384 = 4,202,692,608;
    # final norm 16,384 -> 405,853,388,800
    assert m.total_params(m.LLAMA3_405B) == 405_853_388_800


@pytest.mark.parametrize(("arch", "rel"), [
    (m.LLAMA3_405B, 0.005),  # 405.85B vs "405B"
    (m.LLAMA3_70B, 0.01),    # 70.55B vs "70B"
    (m.LLAMA3_8B, 0.005),    # 8.03B vs "8B"
    (m.GPT3_175B, 0.005),    # 174.6B vs 175.0B
    (m.PALM_540B, 0.001),    # 540.36B vs 540.35B
    (m.DEEPSEEK_V3, 0.001),  # 671.03B vs 671B
    (m.GENERIC_7B, 0.01),    # 6.74B vs 6.7B
])
def test_totals_match_published(arch: m.Architecture, rel: float) -> None:
    assert m.total_params(arch) == pytest.approx(arch.published_params, rel=rel)


def test_gpt3_layer_is_12d2_plus_biases() -> None:
    # 12 x 12288^2 = 1,811,939,328 weights; biases 4d (attn) + 5d (MLP) + LayerNorms 4d = 13d
    assert m.dense_layer_params(m.GPT3_175B) == 1_811_939_328 + 13 * 12288


def test_palm_multi_query_attention() -> None:
    # Q, O: 2 x 18432 x (48 x 256) = 452,984,832; one K/V head: 2 x 18432 x 256 = 9,437,184
    assert m.attention_params(m.PALM_540B) == 462_422_016


def test_deepseek_v3_mla_and_experts() -> None:
    # q: 7168 x 1536 + 1536 x 128 x 192 = 11,010,048 + 37,748,736
    # kv: 7168 x 576 + 512 x 128 x 256 = 4,128,768 + 16,777,216; o: 128 x 128 x 7168 = 117,440,512
    # norms of the ranks: 1536 + 512
    assert m.attention_params(m.DEEPSEEK_V3) == 187_107_328
    assert m.expert_params(m.DEEPSEEK_V3) == 3 * 7168 * 2048  # 44,040,192


def test_deepseek_v3_active_params() -> None:
    # 58 MoE layers drop 248 idle experts of 44,040,192 each from the 671.03B total:
    # 671,026,404,352 - 58 x 248 x 44,040,192 = 37,552,282,624 (published: 37B)
    assert m.active_params(m.DEEPSEEK_V3) == 37_552_282_624
    assert m.active_params(m.DEEPSEEK_V3) == pytest.approx(37e9, rel=0.02)


def test_dense_active_equals_total() -> None:
    assert m.active_params(m.LLAMA3_8B) == m.total_params(m.LLAMA3_8B)


def test_ffn_kinds() -> None:
    assert m.ffn_params(4, 16, "gelu") == 128        # 2 x 4 x 16
    assert m.ffn_params(4, 16, "gelu", biases=True) == 148  # + 16 + 4
    assert m.ffn_params(4, 16, "swiglu") == 192      # 3 x 4 x 16
    with pytest.raises(ValueError):
        m.ffn_params(4, 16, "relu")  # type: ignore[arg-type]


def test_dense_model_has_no_experts() -> None:
    with pytest.raises(ValueError):
        m.expert_params(m.LLAMA3_405B)
    with pytest.raises(ValueError):
        m.moe_layer_params(m.GPT3_175B)


def test_bad_architecture_raises() -> None:
    with pytest.raises(ValueError):
        m.Architecture("x", n_layers=0, d_model=64, n_heads=4, n_kv_heads=4, d_ffn=256,
                       vocab_size=100)
    with pytest.raises(ValueError):  # 3 KV heads cannot serve 4 query heads evenly
        m.Architecture("x", n_layers=2, d_model=64, n_heads=4, n_kv_heads=3, d_ffn=256,
                       vocab_size=100)


def test_training_runs_table() -> None:
    llama = m.training_run("Llama 3 405B")
    # 8 x 1 x 16 x 128 = 16,384 GPUs
    assert (llama.tp, llama.cp, llama.pp, llama.dp, llama.n_accelerators) == (
        8, 1, 16, 128, 16384)
    assert llama.accelerator_hours == 30.84e6 and llama.mfu == 0.41
    ds = m.training_run("DeepSeek-V3")
    # PP 16 x DP 128 = 2,048 H800s; EP 64 inside DP (128 / 64 = 2), no TP
    assert (ds.tp, ds.pp, ds.dp, ds.ep, ds.n_accelerators) == (1, 16, 128, 64, 2048)
    palm = m.training_run("PaLM 540B")
    assert palm.accelerator_hours == 8_404_992  # 6144 x 1200 + 3072 x 336 chip-hours
    assert (palm.tp, palm.dp, palm.n_accelerators) == (12, 512, 6144)  # 12 x 512 = 6144
    assert palm.mfu == 0.462
    assert m.training_run("GPT-3 175B").n_accelerators is None  # not published
    assert all(r.source.strip() for r in m.TRAINING_RUNS)
    with pytest.raises(KeyError):
        m.training_run("GPT-5")
