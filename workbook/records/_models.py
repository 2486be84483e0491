"""Published model sizes and shapes that exercises draw their numbers from.

Variants and per-student numbers come from these tables, so a class of a hundred draws many
different (and real) models instead of the same handful. Each value is a published figure;
sources are named per row group.
"""

from __future__ import annotations

#: Parameter counts in billions: GPT-2 (0.124-1.5) and GPT-3 (0.125-175; Brown et al. 2020,
#: Table 2.1), OPT (66), Pythia (0.41, 1.4, 2.8, 6.9, 12), BLOOM (0.56-176), Llama 1-3
#: (6.7-405), Mistral 7.3, Mixtral 46.7, Falcon (40, 180), Qwen2.5 (0.5-72), Gemma 2 (9, 27),
#: Phi-3 (3.8, 14), Megatron-LM 8.3, Turing-NLG 17, ZeRO's 7.5 and 100, T5 11, Chinchilla
#: 70, Gopher 280, MT-NLG 530, PaLM (62, 540), Nemotron-4 340, Grok-1 314, DBRX 132.
SIZES_B: tuple[float, ...] = (
    0.125, 0.35, 0.41, 0.5, 0.76, 1.0, 1.1, 1.3, 1.4, 1.5, 1.7, 2.0, 2.7, 2.8, 3.0, 3.8,
    6.7, 6.9, 7.0, 7.1, 7.3, 7.5, 8.0, 8.3, 9.0, 11.0, 12.0, 13.0, 14.0, 17.0, 27.0, 30.0,
    32.0, 32.5, 34.0, 40.0, 46.7, 62.0, 65.0, 66.0, 67.0, 70.0, 72.0, 100.0, 132.0, 175.0,
    176.0, 180.0, 280.0, 314.0, 340.0, 405.0, 530.0, 540.0)

#: (hidden size d, layers) of published dense transformers: GPT-3 family (Brown et al. 2020,
#: Table 2.1), GPT-2 XL, LLaMA 1 (Touvron et al. 2023, Table 2), Llama 3 8B/70B/405B (Llama
#: 3 paper, Table 3), OPT-30B/66B, Falcon-40B, BLOOM-176B, Gopher 280B, MT-NLG 530B, PaLM
#: 540B, Megatron-LM's 1T configuration (Narayanan et al. 2021, Table 1).
SHAPES: tuple[tuple[int, int], ...] = (
    (1024, 24), (1536, 24), (1600, 48), (2048, 24), (2560, 32), (4096, 32), (5120, 40),
    (6656, 60), (7168, 48), (8192, 60), (8192, 80), (9216, 64), (12288, 96), (14336, 70),
    (16384, 80), (16384, 126), (18432, 118), (20480, 105), (25600, 128))

#: Hidden sizes of those models and of GPT-2 (768, 1280), Qwen2.5 (896, 3584), Gemma 2 and 3
#: (1152, 2304, 3840, 4608, 5376), OpenLLaMA-3B (3200) and Megatron-LM's scaling table
#: (2304, 3072, 6144, 10240; Narayanan et al. 2021, Table 1), each divisible by 16, so by
#: every TP degree up to 16.
D_MODELS: tuple[int, ...] = tuple(sorted({d for d, _ in SHAPES} | {
    768, 896, 1152, 1280, 2304, 3072, 3200, 3584, 3840, 4608, 5376, 6144, 10240}))
