"""How fast checking feels: cold start, warm checks, and progress-log appends.

    .venv/bin/python benchmarks/check_speed.py

Reports the wall time of a cold `import workbook; workbook.check('0.1', 1.75)` in a new
interpreter (median of 10), the p50/p95 of warm checks for a derive exercise (0.1) and a
build exercise (0.5) including the progress-log write, and appends per second.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable


def percentiles(samples_s: list[float]) -> tuple[float, float]:
    ordered = sorted(samples_s)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return p50 * 1e3, p95 * 1e3


def cold_start_s(runs: int = 10) -> float:
    code = "import workbook; workbook.check('0.1', 1.75)"
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def baseline_python_s(runs: int = 10) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed(call: Callable[[], object], repeats: int) -> list[float]:
    call()  # warm up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    os.environ["WORKBOOK_HOME"] = tempfile.mkdtemp(prefix="wb-bench-")
    import workbook
    from autograder.progress.events import Event
    from solutions.collectives import ring_allreduce_time_ms
    from workbook.learner import progress_log

    cold = cold_start_s()
    bare = baseline_python_s()
    derive = percentiles(timed(lambda: workbook.check("0.1", "1.75 GB"), 300))
    build = percentiles(timed(lambda: workbook.check("0.5", ring_allreduce_time_ms), 100))
    store = progress_log.store()
    n = 500
    start = time.perf_counter()
    for i in range(n):
        store.append(Event.now("hint", f"bench.{i}"))
    appends_per_s = n / (time.perf_counter() - start)
    print(f"cold import + check:      {cold * 1e3:7.1f} ms  (bare python: {bare * 1e3:.1f} ms)")
    print(f"warm check, derive (0.1): p50 {derive[0]:6.2f} ms   p95 {derive[1]:6.2f} ms")
    print(f"warm check, build (0.5):  p50 {build[0]:6.2f} ms   p95 {build[1]:6.2f} ms")
    print(f"progress-log appends:     {appends_per_s:7.0f} per second")


if __name__ == "__main__":
    main()
