"""Lab: a tensor-parallel MLP (column-parallel, then row-parallel) on the simulated cluster.

Megatron-LM's MLP block (Shoeybi et al., "Megatron-LM", 2019, §3, Fig. 3a): Y = relu(X A) B
with A (d x f) split by columns and B (f x d) split by rows over N ranks. Rank r computes
relu(X A_r) B_r with no communication (relu acts element by element, so the column split
commutes with it), and one all-reduce of the (b x d) partial outputs gives Y on every rank:
the forward pass's only communication, 2(N-1)/N x b d elements per rank in a ring.

Graded from the log: every rank's Y equals the unsharded relu(X A) B (relative 1e-9);
every number sent and every element of every rank's Y is a non-empty partial sum of the
ranks' real partial outputs that the rank could build from its own and what it received
(so no weights, no inputs, no zeros standing in for a partial, no output computed from
another rank's weights); the traffic is exactly one ring all-reduce of b x d elements.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from solutions.sim.lab import Case, LabSpec, Report, compare_result, open_run, read_results
from solutions.sim.ring_lab import ring_picture, traffic_problem
from solutions.sim.verify import Log, origin_text, trace_sums


def tp_mlp_forward(rank: Any) -> Generator[None, None, np.ndarray]:
    """Reference program: local column- then row-parallel matmuls, one all-reduce."""
    x, a, b = rank.data["x"], rank.data["a"], rank.data["b"]
    partial = np.maximum(x @ a, 0.0) @ b
    total: np.ndarray = yield from rank.all_reduce(partial)
    return total


def cases(params: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """Example cases (N, batch, d, f)."""
    shapes = params.get("cases", ((2, 3, 4, 8), (4, 2, 6, 16), (1, 4, 5, 4), (3, 5, 3, 9)))
    seed = int(params.get("seed", 0))
    return tuple(dict(n=n, batch=bt, d=d, f=f, seed=seed + k)
                 for k, (n, bt, d, f) in enumerate(shapes))


def draw(rng: random.Random) -> dict[str, Any]:
    """A fresh graded case: 2..6 ranks, f often not a multiple of N."""
    n = rng.randint(2, 6)
    return dict(n=n, batch=rng.randint(1, 4), d=rng.randint(3, 7),
                f=rng.randint(4 * n, 6 * n))


def full_weights(case: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X (b x d), A (d x f), B (f x d), drawn from the case's seed; redrawn until every
    rank's partial output relu(X A_r) B_r has no zero row (a zero would be a real partial
    sum that looks like an empty one)."""
    bt, d, f, n = int(case["batch"]), int(case["d"]), int(case["f"]), int(case["n"])
    for attempt in range(1000):
        rng = np.random.default_rng([int(case["seed"]), 6, attempt])
        x, a, b = rng.standard_normal((bt, d)), rng.standard_normal((d, f)), \
            rng.standard_normal((f, d))
        cols = np.array_split(np.arange(f), n)
        if all(np.all(np.abs(np.maximum(x @ a[:, c], 0.0) @ b[c, :]) > 1e-9) for c in cols):
            break
    return x, a, b


def data(case: Case) -> list[dict[str, np.ndarray]]:
    """Rank r: the whole input X, columns r of A and the matching rows r of B."""
    x, a, b = full_weights(case)
    n = int(case["n"])
    cols = np.array_split(np.arange(a.shape[1]), n)
    return [dict(x=x.copy(), a=a[:, c].copy(), b=b[c, :].copy()) for c in cols]


def describe(case: Case) -> str:
    return f"N={case['n']}, X {case['batch']}x{case['d']}, A {case['d']}x{case['f']}"


def verify(case: Case, run: Any) -> Report:
    text = describe(case)
    log = open_run(text, run)
    if isinstance(log, Report):
        return log
    x, a, b = full_weights(case)
    want = np.maximum(x @ a, 0.0) @ b
    parts = [np.maximum(r["x"] @ r["a"], 0.0) @ r["b"] for r in data(case)]
    picture = ring_picture(log, None)
    results = read_results(log, "output")
    for rank, got in enumerate(results):
        problem = compare_result(rank, got, want, False, "output Y = relu(X A) B")
        if problem:
            return Report(text, problem, picture=picture)
    arrays = tuple(r if isinstance(r, np.ndarray) else None for r in results)
    origin = trace_sums(Log(log.n_ranks, log.steps, log.data_bytes, log.messages, arrays),
                        parts, exact=False)
    if origin is not None:
        return Report(text, origin_text(origin, "a sum of the ranks' partial outputs "
                                        "relu(X A_r) B_r (the forward pass communicates only "
                                        "to all-reduce those; no weights, inputs or "
                                        "activations)"),
                      picture=ring_picture(log, origin.message))
    size = want.size
    traffic, offender = traffic_problem(log, size)
    if traffic:
        return Report(text, f"{traffic}. The forward pass needs exactly one all-reduce of the "
                      f"{want.shape[0]} x {want.shape[1]} output.",
                      picture=ring_picture(log, offender))
    n = log.n_ranks
    return Report(text, checks=(
        "every rank's output equals the unsharded relu(X A) B",
        "every number sent, and every output, is a sum of the ranks' real partial outputs "
        "that the rank could build from its own and what it received",
        f"one ring all-reduce of {size} elements: {2 * (n - 1)} steps"), picture=picture)


SPEC = LabSpec(name="tp_mlp_forward", cases=cases, draw=draw, data=data, verify=verify,
               describe=describe,
               regimes=(("f not a multiple of N", lambda c: c["f"] % c["n"] != 0),
                        ("N of 3 or more", lambda c: c["n"] >= 3)))
