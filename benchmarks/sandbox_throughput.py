"""Sandbox throughput: how many trivial jobs per second a small pool of warm workers runs.

    python benchmarks/sandbox_throughput.py [--jobs 200] [--workers 2]

Each job is one learner-like cell (numpy arithmetic and a small function), one value
request and one call request with three argument tuples, so the figure includes the fork,
the confinement (PID, network and UTS namespaces per worker; per job its own IPC and mount
namespaces with a fresh tmpfs, setsid, privilege drop, a seccomp filter and rlimits, and the
worker's watch on the memory of all the job's processes), the conversion and the JSON
round trips. Worker start-up is timed separately: it happens
once per pool, not once per job.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autograder.sandbox import CallRequest, Job, Limits, ValueRequest, WorkerPool  # noqa: E402

CELL = (
    "import numpy as np\n"
    "bytes_per_gpu = float(np.prod([2, 7e9]) / {n})\n"
    "def ring_time_ms(n, size_bytes, bandwidth_gbps):\n"
    "    return 2 * (n - 1) / n * size_bytes / (bandwidth_gbps * 1e9) * 1e3\n"
)


def make_jobs(count: int) -> list[Job]:
    return [
        Job(f"job{i}", [CELL.format(n=1 + i % 8)],
            [ValueRequest("bytes_per_gpu"),
             CallRequest("ring_time_ms", [(8, 1e9, 100), (2, 4e6, 50), (64, 1e10, 400)])])
        for i in range(count)
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    jobs = make_jobs(args.jobs)
    started = time.perf_counter()
    with WorkerPool(args.workers, Limits()) as pool:
        ready = time.perf_counter()
        statuses = [result.status for result in pool.map(jobs)]
        finished = time.perf_counter()
    elapsed = finished - ready
    print(f"workers:           {args.workers} (started in {ready - started:.2f} s)")
    print(f"isolation:         {pool.isolation}")
    print(f"jobs:              {len(statuses)} ({statuses.count('ok')} ok)")
    print(f"elapsed:           {elapsed:.2f} s")
    print(f"throughput:        {len(statuses) / elapsed:.0f} jobs/s")
    print(f"mean per job:      {1e3 * elapsed / len(statuses) * args.workers:.1f} ms "
          "of one worker's time")


if __name__ == "__main__":
    main()
