"""How fast the simulated cluster runs: the 64-rank ring AllReduce and messages per second.

    .venv/bin/python benchmarks/sim_speed.py

Reports the wall time (median of 5) of a ring AllReduce of 1 MB (float32) on 64 ranks
(8,064 messages of 16 KB, every payload copied and logged), messages per second for small
(8-byte) and 16 KB payloads, and the time the grader's independent verification of one
graded ring case (N=8) takes.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solutions import simcluster as sim  # noqa: E402
from solutions import simring  # noqa: E402
from solutions.simlab import run_case  # noqa: E402


def median_s(action: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ring_64(m_bytes: int = 1 << 20) -> tuple[float, int]:
    data = [np.ones(m_bytes // 4, dtype=np.float32) for _ in range(64)]
    messages = len(sim.run(simring.ring_allreduce, data).messages)
    return median_s(lambda: sim.run(simring.ring_allreduce, data)), messages


def messages_per_s(payload_elems: int, n: int = 16, steps: int = 200) -> float:
    def chatter(rank: sim.Rank):
        buf = np.zeros(payload_elems, dtype=np.float64)
        for _ in range(steps):
            rank.send((rank.id + 1) % n, buf)
            yield
            rank.recv((rank.id - 1) % n)

    data = [np.zeros(1) for _ in range(n)]
    return n * steps / median_s(lambda: sim.run(chatter, data))


def verify_ring_case() -> float:
    case = dict(n=8, m=64, dtype="int64", seed=0)
    tree = run_case(simring.SPEC, simring.ring_allreduce, case)
    return median_s(lambda: simring.verify(case, tree))


def main() -> None:
    ring_s, messages = ring_64()
    print(f"64-rank ring AllReduce of 1 MB: {ring_s * 1e3:.0f} ms ({messages} messages)")
    print(f"messages per second, 8-byte payloads:  {messages_per_s(1):,.0f}")
    print(f"messages per second, 16 KB payloads:   {messages_per_s(2048):,.0f}")
    print(f"verifying one graded ring case (N=8, M=64, from the log): "
          f"{verify_ring_case() * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
