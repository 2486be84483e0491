"""Stack presets: what each training framework overlaps and how it communicates."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from solutions import performance as perf
from solutions import stack as st


def test_presets_are_named_as_the_data_file_names_them() -> None:
    assert set(st.STACKS) == {"megatron-lm-2021", "megatron-lm-2022", "megatron-core-2024",
                              "deepspeed-zero3", "deepspeed-pipeline", "deepspeed-pipeline-2020",
                              "fsdp", "fsdp2", "llama3", "nanotron"}
    for name, preset in st.STACKS.items():
        assert st.stack_named(name) is preset
        assert preset.source, f"{name} cites no source"


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="megatron-lm-2021"):
        st.stack_named("megatron")


def test_old_imports_from_performance_still_work() -> None:
    assert perf.Stack is st.Stack
    assert perf.MODERN is st.MODERN and perf.LLAMA3 is st.LLAMA3
    assert perf.MEGATRON_2021 is st.MEGATRON_2021


def test_fields_the_memory_model_reads() -> None:
    names = {f.name for f in fields(st.Stack)}
    assert {"name", "sequence_parallel", "fused_attention", "overlap_dp", "grad_reduce_bytes",
            "reshard_after_forward", "grad_accum_bytes", "uneven_chunks",
            "interleave_m_below_p", "tp_comm_overlap", "param_gather_overlap"} <= names


def test_llama3_keeps_weights_gathered_and_reduces_in_fp32() -> None:
    # Dubey et al. 2024 §3.3.2: no reshard after forward; FP32 accumulation and reduce-scatter
    assert not st.LLAMA3.reshard_after_forward
    assert st.LLAMA3.grad_reduce_bytes == 4 == st.LLAMA3.grad_accum_bytes
    assert st.LLAMA3.interleave_m_below_p and st.LLAMA3.uneven_chunks
    # FSDP FULL_SHARD and DeepSpeed ZeRO-3 reshard; DeepSpeed stalls on half its gathers
    assert st.FSDP.reshard_after_forward and st.DEEPSPEED_ZERO3.reshard_after_forward
    assert st.DEEPSPEED_ZERO3.gather_hidden_fraction == pytest.approx(0.5)
    assert st.FSDP.gather_hidden_fraction == 1.0


def test_default_stack_is_megatron_core_and_builds_only_even_chunks() -> None:
    assert st.MODERN is st.MEGATRON_CORE_2024
    assert st.MODERN.tp_comm_overlap and st.MODERN.param_gather_overlap
    assert not st.MODERN.uneven_chunks and not st.MODERN.interleave_m_below_p


@pytest.mark.parametrize("bad", [dict(grad_reduce_bytes=0), dict(grad_accum_bytes=-4),
                                 dict(gather_hidden_fraction=1.5),
                                 dict(attention_kernel="flash9"), dict(elementwise="jit"),
                                 dict(selective_recompute="every_mm")])
def test_bad_stack_settings_are_named(bad: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        replace(st.MODERN, **bad)


def test_torchtitan_op_checkpointing_recomputes_k_output_and_one_ffn_matrix() -> None:
    # Llama 3 8B: h 4096, 8 KV heads of 128, d_ffn 14336; torchtitan's layer runs wq, wk,
    # wv, wo, w1, w3, w2 and recomputes the 2nd, 4th and 6th: wk, wo, w3
    from solutions import models
    from solutions.performance import flops as pf
    arch = models.Architecture("8B", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8,
                               d_ffn=14336, vocab_size=128256, ffn="swiglu")
    by_hand = 4096 * 1024 + 4096 * 4096 + 4096 * 14336
    assert pf.alternate_matmul_params_per_token(arch, False) == by_hand


def test_alternate_matmul_recompute_costs_more_than_the_attention_core() -> None:
    from solutions import hardware, models
    from solutions.planner.memory import ParallelConfig
    cfg = ParallelConfig(tp=1, pp=1, dp=64, zero_stage=3, micro_batch=1, grad_accum=1,
                         seq_len=8192, activation_recompute="selective")
    arch = models.LLAMA3_8B
    core = perf.breakdown_s(arch, cfg, hardware.A100_SXM_80GB, hardware.SELENE_A100, st.FSDP2)
    op = perf.breakdown_s(arch, cfg, hardware.A100_SXM_80GB, hardware.SELENE_A100,
                          replace(st.FSDP2, selective_recompute="alternate_matmuls"))
    # a third of the layer's matmul forward is recomputed (wk + wo + w3 of 7): far more
    # than the attention core at 8K; the rest of the step is the same
    assert op["recompute"] > 2 * core["recompute"]
    assert op["compute"] == pytest.approx(core["compute"])


def test_triton_flash_attention_is_slower_than_flashattention2() -> None:
    from solutions import hardware
    from solutions.performance import flops as pf
    for gpu in (hardware.A100_SXM_80GB, hardware.H100_SXM):
        ratio = (pf.attention_efficiency(gpu, "flash2") / pf.attention_efficiency(gpu, "triton"))
        # Dao 2023 §4.1: FlashAttention-2 is 1.3-2.5x faster than the Triton FlashAttention
        assert 1.3 <= ratio <= 2.5


def test_deepspeed_bf16_optimizer_keeps_bf16_gradients_beside_its_fp32_buffer() -> None:
    from solutions.performance.validation import PUBLISHED_RUNS
    from solutions.planner.memory import stage_memory

    bloom = next(r for r in PUBLISHED_RUNS if r.label == "bloom-176b-384gpu")
    # tr11-176B-ml/README.md: "one layer size: 12*h**2 + 13*h => 2_466_437_120 params"; a
    # middle stage holds 6 of the 70 layers ('type:transformer|embedding'), 1/4 per TP rank
    psi = 6 * 2_466_437_120 / 4
    bf16 = stage_memory(bloom.arch, bloom.config, 5, st.DEEPSPEED_PIPELINE)
    fp16 = stage_memory(bloom.arch, bloom.config, 5, st.DEEPSPEED_PIPELINE_2020)
    # the unsharded FP32 buffer (4 bytes) and the BF16 .grad it is added from (2 bytes); the
    # FP16 engine of 2020-2021 keeps only the FP16 .grad autograd accumulates into (2 bytes)
    assert bf16.gradients_bytes == pytest.approx(6 * psi, rel=1e-3)
    assert fp16.gradients_bytes == pytest.approx(2 * psi, rel=1e-3)
    # ZeRO-2 reduces each micro-batch's gradient into the shard: no unsharded 16-bit copy
    zero2 = replace(bloom.config, zero_stage=2)
    without = replace(st.DEEPSPEED_PIPELINE, keeps_16bit_grads=False)
    assert (stage_memory(bloom.arch, zero2, 5, st.DEEPSPEED_PIPELINE).gradients_bytes
            == stage_memory(bloom.arch, zero2, 5, without).gradients_bytes)


def test_deepspeed_bf16_optimizer_all_reduces_fp32_gradients_then_gathers_bf16_weights() -> None:
    from solutions.performance.comm import Links
    from solutions.performance.validation import PUBLISHED_RUNS

    bloom = next(r for r in PUBLISHED_RUNS if r.label == "bloom-176b-384gpu")
    cfg, cluster = bloom.config, bloom.cluster
    # the busiest stage: 6 of the 70 layers, a quarter of each per TP rank (README: "one
    # layer size: 12*h**2 + 13*h => 2_466_437_120 params"); DP 8 over the nodes
    psi = 6 * 2_466_437_120 / 4
    links = Links(cluster, cfg)

    def ring(n_bytes: float) -> float:
        return links.gather_s(n_bytes, cfg.dp, links.dp_crosses, links.dp_gb_per_s)
    # pipe/engine.py _bf16_reduce_grads: the FP32 gradients all-reduced whole (two ring
    # halves of 4 bytes), then the updated BF16 partitions all-gathered (2 bytes), after
    # the last micro-batch, nothing under compute
    expected = 2 * ring(4 * psi) + ring(2 * psi)
    dp = bloom.estimate().breakdown["dp_exposed"]
    assert dp == pytest.approx(expected, rel=0.01)
    # the FP16 engine of 2020-2021 reduce-scatters its FP16 .grad instead
    fp16 = replace(bloom, stack=st.DEEPSPEED_PIPELINE_2020).estimate().breakdown["dp_exposed"]
    assert fp16 == pytest.approx(ring(2 * psi) + ring(2 * psi), rel=0.01)
