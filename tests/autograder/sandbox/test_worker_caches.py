"""A warm worker fills, once, the caches each job would otherwise fill for itself."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _pattern_misses_in_a_job(warm: bool) -> int:
    """In a fresh interpreter, as a worker would (optionally warmed), fork a job that finds
    a function's source the way the runner does; the tokenizer's pattern-cache misses the
    job had (each is a regular-expression compilation of its own)."""
    script = textwrap.dedent(f"""
        import inspect, os, sys, tokenize
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.sandbox import worker
        if {warm!r}:
            worker.warm_caches()
        read, write = os.pipe()
        if os.fork() == 0:
            before = tokenize._compile.cache_info().misses
            inspect.getblock(["def answer(x):\\n", "    return 2 * x\\n", "y = 1\\n"])
            os.write(write, str(tokenize._compile.cache_info().misses - before).encode())
            os._exit(0)
        os.wait()
        print(os.read(read, 100).decode())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return int(done.stdout.strip())


def test_a_job_of_a_warm_worker_compiles_no_tokenizer_pattern() -> None:
    assert _pattern_misses_in_a_job(warm=False) > 0  # what the warm-up saves each job
    assert _pattern_misses_in_a_job(warm=True) == 0

