"""Lab: a ZeRO-3 forward pass on the simulated cluster, gathering each layer just in time.

ZeRO stage 3 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", SC20, §5.3 and §7.2.2) partitions the parameters themselves: rank r keeps
only shard r of every layer's weight. Before a layer runs, the ranks all-gather its shards;
after it runs, the gathered copy is freed, so a rank holds its 1/N of the model plus one
layer at a time. Each rank receives (N-1)/N of every layer's weight per forward pass.

The model here is a stack of L layers x <- relu(x W_l) with W_l of d x d; every rank runs it
on its own batch (data parallel). Graded from the log: each rank's output equals the
unsharded forward of its batch (relative 1e-9); every number sent is a weight element its
sender held or had received; each rank received exactly the shards it lacks of every layer
(L x (d^2 - its shard) elements); and its peak memory (own data plus received buffers not
yet freed) stays within its data plus one layer's missing shards.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from solutions.simcluster import Rank
from solutions.simlab import Case, LabSpec, Report, compare_result, grid, open_run, read_results
from solutions.simverify import Log, trace_sums


def zero3_forward(rank: Rank) -> Generator[None, None, np.ndarray]:
    """Reference program: per layer, all-gather the shards, compute, free them."""
    x = rank.data["x"]
    d = x.shape[1]
    for shard in rank.data["shards"]:
        parts = yield from rank.all_gather(shard)
        x = np.maximum(x @ np.concatenate(parts).reshape(d, d), 0.0)
        rank.free(*parts)
    return x


def cases(params: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    shapes = params.get("cases", ((4, 3, 4, 2), (3, 2, 5, 3), (5, 4, 3, 2), (2, 3, 4, 1)))
    seed = int(params.get("seed", 0))
    return tuple(dict(n=n, layers=lay, d=d, batch=bt, seed=seed + k)
                 for k, (n, lay, d, bt) in enumerate(shapes))


def model(case: Case) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The full weights W_l (d x d, scaled to keep activations near 1) and each rank's batch."""
    rng = np.random.default_rng([int(case["seed"]), 1])
    d, n = int(case["d"]), int(case["n"])
    weights = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(int(case["layers"]))]
    batches = [rng.standard_normal((int(case["batch"]), d)) for _ in range(n)]
    return weights, batches


def data(case: Case) -> list[dict[str, Any]]:
    """Rank r: its own batch and shard r (np.array_split of the flattened W_l) of each layer."""
    weights, batches = model(case)
    n = int(case["n"])
    shards = [np.array_split(w.ravel(), n) for w in weights]
    return [dict(x=batches[r], shards=[s[r].copy() for s in shards]) for r in range(n)]


def describe(case: Case) -> str:
    return f"N={case['n']}, {case['layers']} layers of {case['d']}x{case['d']}"


def _forward(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    for w in weights:
        x = np.maximum(x @ w, 0.0)
    return x


def _provenance_data(ranks: list[dict[str, Any]]) -> list[np.ndarray]:
    """Each rank's shards end to end, every layer padded to the longest shard with zeros."""
    out = []
    for r in ranks:
        width = [max(len(q["shards"][li]) for q in ranks) for li in range(len(r["shards"]))]
        out.append(np.concatenate([np.pad(s, (0, w - len(s)))
                                   for s, w in zip(r["shards"], width, strict=True)]))
    return out


def verify(case: Case, tree: Any) -> Report:
    text = describe(case)
    log = open_run(text, tree)
    if isinstance(log, Report):
        return log
    weights, batches = model(case)
    ranks = data(case)
    picture = memory_picture(log)
    for rank, got in enumerate(read_results(log, "output")):
        problem = compare_result(rank, got, _forward(batches[rank], weights), False,
                                 "output (its batch through every layer)")
        if problem:
            return Report(text, problem, picture=picture)
    origin = trace_sums(log, _provenance_data(ranks), exact=False, results=False)
    if origin is not None:
        return Report(text, f"rank {origin.rank} at step {origin.step} sent element "
                      f"{origin.element} = {origin.value!r}, which is not a weight element it "
                      "held or had received: ZeRO-3 only moves parameter shards.",
                      picture=picture)
    problem = _traffic(log, weights, ranks)
    if problem:
        return Report(text, problem, picture=picture)
    return Report(text, checks=(
        "every rank's output equals the unsharded forward of its batch",
        "only weight shards were sent",
        "each rank gathered exactly the shards it lacks, once per layer",
        "peak memory: own data plus one layer's gathered shards"), picture=picture)


def _traffic(log: Log, weights: list[np.ndarray], ranks: list[dict[str, Any]]) -> str:
    for rank, mine in enumerate(ranks):
        missing = [(w.size - s.size) * 8 for w, s in zip(weights, mine["shards"], strict=True)]
        got = log.bytes_received(rank)
        if got != sum(missing):
            return (f"rank {rank} received {got} bytes; expected {sum(missing)}: the "
                    f"{len(weights)} layers' shards it lacks, each gathered exactly once "
                    "(N-1)/N of every layer")
        budget = log.data_bytes[rank] + max(missing)
        peak, step = _peak(log, rank)
        if peak > budget:
            return (f"rank {rank} held {peak} bytes at step {step}; expected at most {budget} "
                    "(its own shards and batch plus one layer's gathered shards): gather each "
                    "layer just before using it and free its shards right after")
    return ""


def _held(log: Log, rank: int) -> list[int]:
    """Bytes ``rank`` held in each step: its data plus received, not yet freed buffers."""
    held = [log.data_bytes[rank]] * (log.steps + 1)
    for m in log.messages:
        if m.dst == rank and m.recv_step >= 0:
            end = m.free_step + 1 if m.free_step >= 0 else log.steps + 1
            for step in range(m.recv_step, end):
                held[step] += m.nbytes
    return held


def _peak(log: Log, rank: int) -> tuple[int, int]:
    held = _held(log, rank)
    step = int(np.argmax(held))
    return held[step], step


def memory_picture(log: Log) -> str:
    """Bytes held per rank in each step (data + gathered buffers not yet freed)."""
    if log.n_ranks > 16:
        return ""
    columns = [_held(log, r) for r in range(log.n_ranks)]
    rows = [[str(step)] + [str(col[step]) for col in columns]
            for step in range(min(log.steps + 1, 60))]
    return grid(["step"] + [f"rank {r} bytes" for r in range(log.n_ranks)], rows)


SPEC = LabSpec(name="zero3_forward", cases=cases, data=data, verify=verify)
