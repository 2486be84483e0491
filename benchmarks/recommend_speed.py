"""How fast recommend() searches: layouts judged per second for Llama 3 405B on 16,384 H100s.

    .venv/bin/python benchmarks/recommend_speed.py

Searches TP x CP x PP x DP x v x micro-batch x recomputation x ZeRO stage {0, 1, 2, 3} for the
paper's batch (2,048 sequences of 8,192 tokens) on Llama 3's software, five times, and prints
the median wall and CPU time (the CPU time is what the search costs when other jobs share
the cores), the candidates judged, how many were valid, and the five fastest layouts with the
costs that separate each from the paper's run as published.

Beside it, in the same run and alternating with it, the same search with
``exhaustive=True`` (every layout judged, every valid one estimated on its own, none of the
search's shortcuts), which ranks the same layouts: the ratio of the two medians is the
shortcuts' gain, and reads the same on a busy machine as on an idle one.
"""

from __future__ import annotations

import statistics
import time

from solutions import hardware, models, performance
from solutions.planner.memory import ParallelConfig
from solutions.planner.search import Search, recommend, why_faster
from solutions.stack import LLAMA3

ARCH, GPUS, BATCH, SEQ = models.LLAMA3_405B, 16384, 2048, 8192


def _timed(exhaustive: bool) -> tuple[float, float, Search]:
    start, cpu_start = time.perf_counter(), time.process_time()
    search = recommend(ARCH, GPUS, BATCH, SEQ, hardware.H100_SXM, zero_stages=(0, 1, 2, 3),
                       stack=LLAMA3, exhaustive=exhaustive)
    return time.perf_counter() - start, time.process_time() - cpu_start, search


def main() -> None:
    runs: dict[bool, list[tuple[float, float, Search]]] = {False: [], True: []}
    for _ in range(5):
        for exhaustive in (False, True):
            runs[exhaustive].append(_timed(exhaustive))
    search, reference = runs[False][-1][2], runs[True][-1][2]
    assert search.best == reference.best and search.valid == reference.valid
    median = statistics.median(t for t, _, _ in runs[False])
    cpu = statistics.median(c for _, c, _ in runs[False])
    slow = statistics.median(t for t, _, _ in runs[True])
    print(f"{search.candidates:,} candidates judged, {search.valid:,} valid (fit 80 GiB): "
          f"median {median:.3f} s wall, {cpu:.3f} s CPU over 5 runs "
          f"({search.candidates / median:,.0f} per wall second)")
    print(f"exhaustive=True, the same ranking: median {slow:.3f} s wall, "
          f"{slow / median:.2f}x the search's")
    paper = performance.estimate(ARCH, ParallelConfig(
        tp=8, cp=1, pp=16, dp=128, grad_accum=16, seq_len=SEQ, zero_stage=3,
        activation_recompute="none", virtual_stages=8), hardware.H100_SXM, stack=LLAMA3)
    print(f"paper layout as published (TP8 CP1 PP16 DP128, v8, no recomputation, Llama 3's "
          f"FSDP): {paper.step_time_s:.2f} s, MFU {paper.mfu:.1%}")
    for ranked in search.best:
        est = ranked.estimate
        reasons = ", ".join(f"{k} -{v:.2f} s" for k, v in why_faster(est, paper))
        print(f"#{ranked.rank} {ranked.label()}: {est.step_time_s:.2f} s, MFU {est.mfu:.1%}; "
              f"saves against the paper's: {reasons}")


if __name__ == "__main__":
    main()
