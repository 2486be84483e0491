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
(every element it lacks, once; nothing that is not a real weight, so no zeros standing in
for a gather); and its peak memory, measured in the ranks' process with every copy it
keeps, stays within its data plus about one layer's gathered weights and activations.
Memory is what the kernel counts for the rank's own process (every page it holds, however
it was allocated, from the moment it was forked) plus the messages it sent that are not
yet received, measured where the learner's code cannot reach (:mod:`solutions.sim.host`).
"""

from __future__ import annotations

import random
from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from solutions.sim.lab import Case, LabSpec, Report, compare_result, grid, open_run, read_results
from solutions.sim.verify import Log, tick

SLACK_BYTES = 128 << 10  # the interpreter's own pages a rank touches (its frames, the pools
                         # of its small objects, numpy's first buffers), measured by the kernel
LAYERS_HELD = 3          # an honest rank: the layer in use, its gathered parts, the next one's


def zero3_forward(rank: Any) -> Generator[None, None, np.ndarray]:
    """Reference program: per layer, all-gather the shards, compute, free them."""
    x = rank.data["x"]
    d = x.shape[1]
    for shard in rank.data["shards"]:
        parts = yield from rank.all_gather(shard)
        x = np.maximum(x @ np.concatenate(parts).reshape(d, d), 0.0)
        rank.free(*parts)
        del parts
    return np.asarray(x)


def cases(params: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """Example cases (N, layers, d, batch)."""
    shapes = params.get("cases", ((4, 3, 4, 2), (3, 2, 5, 3), (5, 4, 3, 2), (2, 3, 4, 1)))
    seed = int(params.get("seed", 0))
    return tuple(dict(n=n, layers=lay, d=d, batch=bt, seed=seed + k)
                 for k, (n, lay, d, bt) in enumerate(shapes))


def draw(rng: random.Random) -> dict[str, Any]:
    """A fresh graded case: 2..5 ranks, 10..12 layers of d x d (d from 121 to 160, d x d
    rarely a multiple of N): a layer is 114 to 200 KiB, so that holding the other ranks'
    shards of every layer at once (5 layers or more, for 2 ranks) is far above the bound,
    and the bound far above what the interpreter itself touches in a step."""
    n = rng.randint(2, 5)
    return dict(n=n, layers=rng.randint(10, 12), d=rng.choice([121, 127, 135, 143, 151, 160]),
                batch=rng.randint(1, 3))


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


def verify(case: Case, run: Any) -> Report:
    text = describe(case)
    log = open_run(text, run)
    if isinstance(log, Report):
        return log
    weights, batches = model(case)
    picture = memory_picture(log)
    for rank, got in enumerate(read_results(log, "output")):
        problem = compare_result(rank, got, _forward(batches[rank], weights), False,
                                 "output (its batch through every layer)")
        if problem:
            return Report(text, problem, picture=picture)
    problem = _content(log, weights, int(case["n"])) or _memory(log, case, weights)
    if problem:
        return Report(text, problem, picture=picture)
    return Report(text, checks=(
        "every rank's output equals the unsharded forward of its batch",
        "every number sent is a real weight element its sender held",
        "each rank received every weight element it lacks, exactly once",
        "memory, the kernel's count of each rank's process plus its messages in flight: its "
        "own data plus about one layer's gathered weights at a time"), picture=picture)


class _Weights:
    """Every weight element, findable by value (random normal floats do not repeat)."""

    def __init__(self, weights: list[np.ndarray], n: int) -> None:
        flat = np.concatenate([w.ravel() for w in weights])
        self.flat = flat
        self.order = np.argsort(flat, kind="stable")
        self.sorted = flat[self.order]
        self.size = flat.size
        self.owner = np.concatenate([np.repeat(np.arange(n), [len(s) for s in
                                                              np.array_split(w.ravel(), n)])
                                     for w in weights])

    def find(self, values: np.ndarray) -> np.ndarray:
        """Global element ids of ``values``; -1 where a value is no weight element. A run of
        consecutive elements (a shard, or a piece of one: what a gather sends) is found
        from its first element and one comparison; anything else element by element."""
        v = values.astype(np.float64).ravel()
        if v.size > 1:
            start = int(self._search(v[:1])[0])
            if 0 <= start <= self.size - v.size and \
                    np.array_equal(self.flat[start:start + v.size], v):
                return np.arange(start, start + v.size)
        return self._search(v)

    def _search(self, v: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(self.sorted, v), self.size - 1)
        return np.where(self.sorted[at] == v, self.order[at], -1)


def _content(log: Log, weights: list[np.ndarray], n: int) -> str:
    """Replay the log: every element sent is a weight element its sender holds (its own
    shard or received earlier); every rank ends up receiving each element it lacks once."""
    table = _Weights(weights, n)
    held = [table.owner == r for r in range(n)]
    messages = sorted(log.messages, key=lambda m: (m.step, m.index))
    received: list[list[np.ndarray]] = [[] for _ in range(n)]
    arrivals: dict[int, list[tuple[int, np.ndarray]]] = {}
    for msg in messages:
        tick()
        ids = table.find(msg.payload)
        for step in [s for s in sorted(arrivals) if s <= msg.step]:
            for dst, arrived in arrivals.pop(step):
                held[dst][arrived] = True
        bad = np.nonzero(ids < 0)[0]
        if bad.size:
            k = int(bad[0])
            value = msg.payload.ravel()[k].item()
            why = ("0, a placeholder that carries no weight" if value == 0 else
                   "not an element of any layer's weights")
            return (f"rank {msg.src} at step {msg.step} sent element {k} = {value!r}, {why}: "
                    "a ZeRO-3 gather must deliver the real shards")
        if not held[msg.src][ids].all():
            k = int(np.nonzero(~held[msg.src][ids])[0][0])
            return (f"rank {msg.src} at step {msg.step} sent element {k}, a weight element it "
                    "neither owns nor had received: a rank may only send its own shard or "
                    "what it was sent (no reading other ranks' shards)")
        if msg.recv_step >= 0:
            arrivals.setdefault(msg.recv_step, []).append((msg.dst, ids))
            received[msg.dst].append(ids)
    count = [np.bincount(np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64),
                         minlength=table.size) for ids in received]
    return _coverage(count, table, weights)


def _coverage(count: list[np.ndarray], table: _Weights, weights: list[np.ndarray]) -> str:
    layer_of = np.repeat(np.arange(len(weights)), [w.size for w in weights])
    for rank, got in enumerate(count):
        lacks = table.owner != rank
        missing = np.nonzero(lacks & (got == 0))[0]
        if missing.size:
            return (f"rank {rank} never received weight element {int(missing[0])} (layer "
                    f"{int(layer_of[missing[0]])}), which it lacks: every rank must gather "
                    "every other rank's shard of every layer")
        twice = np.nonzero(got > 1)[0]
        extra = np.nonzero(~lacks & (got > 0))[0]
        if twice.size or extra.size:
            return (f"rank {rank} received some weight elements more than once or received "
                    "its own shard: gather each missing shard exactly once per forward pass")
    return ""


def _memory(log: Log, case: Case, weights: list[np.ndarray]) -> str:
    layer = weights[0].nbytes
    activations = int(case["batch"]) * int(case["d"]) * 8
    for rank, steps in enumerate(log.memory):
        budget = int(log.data_bytes[rank] + LAYERS_HELD * layer + 4 * activations
                     + SLACK_BYTES)
        if steps and max(steps) > budget:
            step = int(np.argmax(steps))
            return (f"rank {rank} held {max(steps)} bytes at step {step} (what its process "
                    "holds, however allocated, and the messages it sent that were not yet "
                    f"received); expected at most {budget}: its own data, about "
                    "one layer's gathered weights and its activations. Gather each layer just "
                    "before using it, and free it (and drop your copies) right after")
    return ""


def memory_picture(log: Log) -> str:
    """Bytes held per rank in each step, as measured (its process and its messages in
    flight)."""
    if log.n_ranks > 16 or not log.memory:
        return ""
    steps = max(len(m) for m in log.memory)
    rows = [[str(step)] + [str(m[step]) if step < len(m) else "" for m in log.memory]
            for step in range(min(steps, 60))]
    return grid(["step"] + [f"rank {r} bytes" for r in range(log.n_ranks)], rows)


SPEC = LabSpec(name="zero3_forward", cases=cases, draw=draw, data=data, verify=verify,
               describe=describe, track_memory=True, n_graded=4,
               regimes=(("d x d not a multiple of N", lambda c: c["d"] ** 2 % c["n"] != 0),
                        ("N of 3 or more", lambda c: c["n"] >= 3)))
