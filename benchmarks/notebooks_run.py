"""Time to execute all ten learner notebooks headless, as a learner's "Run all" would.

    .venv/bin/python benchmarks/notebooks_run.py [--jobs 2]

Each notebook runs in a fresh kernel (nbclient) with nothing answered. Reports the time
per notebook and the wall time for all ten (with ``--jobs`` notebooks at once).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from workbook.build.notebooks import learner_path
from workbook.outline import CHAPTERS


def run_one(path: Path, workdir: str) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": workdir}}).execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    os.environ["WORKBOOK_HOME"] = tempfile.mkdtemp(prefix="wb-nb-bench-")
    workdir = tempfile.mkdtemp(prefix="wb-nb-run-")
    paths = [learner_path(c) for c in CHAPTERS]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        times = list(pool.map(lambda p: run_one(p, workdir), paths))
    wall = time.perf_counter() - start
    for path, seconds in zip(paths, times, strict=True):
        print(f"{path.name:<40} {seconds:6.2f} s")
    print(f"all ten notebooks, {args.jobs} at a time: {wall:.1f} s wall "
          f"(sum of per-notebook times {sum(times):.1f} s)")


if __name__ == "__main__":
    main()
