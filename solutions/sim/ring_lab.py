"""Lab: ring AllReduce as a reduce-scatter then an all-gather, on the simulated cluster.

Every rank r holds a vector x_r of M numbers and must end with sum_j x_j. The ring splits
the vector into N chunks; in reduce-scatter step s rank r sends one chunk to r+1, which
adds it to its own copy, so after N-1 steps each rank owns one fully reduced chunk; in the
all-gather each rank forwards the reduced chunk it last completed or received, N-1 more
steps (Thakur, Rabenseifner & Gropp 2005, §4; Patarasuk & Yuan 2009). Each rank sends
2(N-1) chunks of about M/N elements: 2(N-1)/N x M in all, 2(N-1) steps, the volume of
:func:`solutions.collectives.ring_allreduce_gb_per_gpu`.

Graded from the log (:mod:`solutions.sim.verify`): every rank's result (exact for integers,
relative 1e-9 for floats), where every sent number came from (no reading another rank's
data or the global input), and the traffic: one message per rank per step to the same ring
neighbour, 2(N-1) steps, no chunk bigger than ceil(M/N), 2(N-1) x M elements in all.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from solutions.sim.collectives import chunk_bounds, ring_all_reduce
from solutions.sim.lab import Case, LabSpec, Report, compare_result, grid, open_run, read_results
from solutions.sim.verify import Log, Sent, origin_text, trace_sums

__all__ = ["SPEC", "chunk_bounds", "ring_allreduce", "traffic_problem", "ring_picture"]


def ring_allreduce(rank: Any) -> Generator[None, None, np.ndarray]:
    """Reference program: reduce-scatter then all-gather around the ring r -> r+1
    (:func:`solutions.sim.collectives.ring_all_reduce`, the one implementation)."""
    return (yield from ring_all_reduce(rank, rank.data))


# -- cases and data ---------------------------------------------------------------------

def cases(params: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """Example cases: several N, sizes that N does and does not divide, ints and floats."""
    shapes = params.get("cases", ((4, 16, "int64"), (5, 13, "int64"), (3, 7, "float64"),
                                  (8, 21, "int64"), (2, 5, "float64"), (6, 6, "int64")))
    seed = int(params.get("seed", 0))
    return tuple(dict(n=n, m=m, dtype=dtype, seed=seed + k)
                 for k, (n, m, dtype) in enumerate(shapes))


def draw(rng: random.Random) -> dict[str, Any]:
    """A fresh graded case: N in 2..9, M from N to 4N, usually not a multiple of N."""
    n = rng.randint(2, 9)
    m = rng.randint(n, 4 * n)
    return dict(n=n, m=m, dtype=rng.choice(["int64", "int64", "float64"]))


def data(case: Case) -> list[np.ndarray]:
    """Rank r's vector: random int64 in +-2^40 (sums stay exact) or standard normal floats."""
    rng = np.random.default_rng([int(case["seed"]), int(case["n"]), int(case["m"])])
    n, m = int(case["n"]), int(case["m"])
    if case["dtype"] == "int64":
        return [rng.integers(-(1 << 40), 1 << 40, size=m, dtype=np.int64) for _ in range(n)]
    return [rng.standard_normal(m) for _ in range(n)]


def describe(case: Case) -> str:
    return f"N={case['n']}, M={case['m']}, {case['dtype']}"


# -- verification -----------------------------------------------------------------------

def verify(case: Case, run: Any) -> Report:
    """Grade one run from its log alone (see the module docstring)."""
    text = describe(case)
    log = open_run(text, run)
    if isinstance(log, Report):
        return log
    inputs = data(case)
    exact = case["dtype"] == "int64"
    want = np.sum(np.stack(inputs), axis=0)
    results = read_results(log, "result")
    picture = ring_picture(log, None)
    for rank, got in enumerate(results):
        problem = compare_result(rank, got, want, exact, "sum of all ranks' vectors")
        if problem:
            return Report(text, problem, picture=picture)
    arrays = tuple(r if isinstance(r, np.ndarray) else None for r in results)
    origin = trace_sums(Log(log.n_ranks, log.steps, log.data_bytes, log.messages, arrays),
                        inputs, exact)
    if origin is not None:
        return Report(text, origin_text(origin, "a partial sum of the ranks' vectors"),
                      picture=ring_picture(log, origin.message))
    traffic, offender = traffic_problem(log, int(case["m"]))
    if traffic:
        return Report(text, traffic, picture=ring_picture(log, offender))
    n, m = int(case["n"]), int(case["m"])
    return Report(text, checks=(
        f"every rank holds the sum ({'exact' if exact else 'within 1e-9'})",
        "every number sent was a partial sum built from the sender's own data and what it "
        "received",
        f"{2 * (n - 1)} steps, one chunk per rank per step to its ring neighbour, "
        f"{2 * (n - 1) * m} elements in all ({2 * (n - 1)}/{n} x M per rank)"),
        picture=picture)


#: What a traffic problem points at: a message (its index), a (step, rank) that should have
#: sent a message and did not, or -1 when no single place is at fault.
Offender = int | tuple[int, int]


def traffic_problem(log: Log, m: int) -> tuple[str, Offender]:
    """The first way the traffic differs from a ring AllReduce's, and where (see
    :data:`Offender`): per-rank volume, the ring direction, one chunk per rank per step,
    the step count, the total."""
    n = log.n_ranks
    if n == 1:
        return ("", -1) if not log.messages else ("one rank has nothing to send", 0)
    limit = math.ceil(m / n)
    for check in (_volume, _direction, _one_chunk_per_step):
        problem, offender = check(log, m, limit)
        if problem:
            return problem, offender
    steps = log.message_steps()
    if len(steps) != 2 * (n - 1):
        return (f"the messages took {len(steps)} steps; expected 2(N-1) = {2 * (n - 1)} "
                "(N-1 for the reduce-scatter, N-1 for the all-gather)", -1)
    total = sum(x.payload.size for x in log.messages)
    if total != 2 * (n - 1) * m:
        return (f"{total} elements were sent in all; expected 2(N-1) x M = {2 * (n - 1) * m}",
                -1)
    return "", -1


def _volume(log: Log, m: int, limit: int) -> tuple[str, int]:
    """A rank that sends more than 2(N-1) chunks of ceil(M/N): the message crossing it."""
    n = log.n_ranks
    budget = 2 * (n - 1) * limit
    by_rank: dict[int, list[Any]] = {}
    for x in log.messages:
        by_rank.setdefault(x.src, []).append(x)
    for rank in range(n):
        mine = by_rank.get(rank, [])
        running = list(itertools.accumulate(x.payload.size for x in mine))
        if running and running[-1] > budget:
            crossing = next(x for x, total in zip(mine, running, strict=True) if total > budget)
            return (f"rank {rank} sent {running[-1]} elements ({log.bytes_sent(rank)} bytes) "
                    f"in all; a ring AllReduce sends 2(N-1)/N x M = {2 * (n - 1) * m / n:g} "
                    f"per rank (2(N-1) = {2 * (n - 1)} chunks of at most {limit})",
                    crossing.index)
    return "", -1


def _direction(log: Log, m: int, limit: int) -> tuple[str, int]:
    """A message that does not go to the sender's ring neighbour, in the direction the
    first message set (r+1, or r-1 for a ring run the other way)."""
    n = log.n_ranks
    if not log.messages:
        return "", -1
    first = min(log.messages, key=lambda x: x.index)
    way = 1 if first.dst == (first.src + 1) % n else -1
    for msg in sorted(log.messages, key=lambda x: x.index):
        if msg.dst != (msg.src + way) % n:
            first_way = "r+1" if way == 1 else "r-1"
            return (f"rank {msg.src} at step {msg.step} sent to rank {msg.dst}; in a ring every "
                    "rank sends to the same neighbour all the way through, one direction for "
                    f"all ranks (either r+1 or r-1; your first message chose {first_way}, so "
                    f"rank {msg.src} sends to rank {(msg.src + way) % n})", msg.index)
    return "", -1


def _one_chunk_per_step(log: Log, m: int, limit: int) -> tuple[str, Offender]:
    sent: dict[tuple[int, int], list[Any]] = {}
    for x in log.messages:
        sent.setdefault((x.step, x.src), []).append(x)
    for step in log.message_steps():
        for rank in range(log.n_ranks):
            mine = sent.get((step, rank), [])
            if len(mine) != 1:
                return (f"rank {rank} at step {step} sent {len(mine)} messages; expected "
                        "exactly one chunk per rank per step",
                        mine[0].index if mine else (step, rank))
            if mine[0].payload.size > limit:
                return (f"rank {rank} at step {step} sent {mine[0].payload.size} elements; "
                        f"expected one chunk of at most ceil(M/N) = {limit}", mine[0].index)
    return "", -1


def ring_picture(log: Log, offender: Offender | None) -> str:
    """The learner's trace as a grid: one row per step, one column per sending rank, each
    cell "->dst n" (destination, elements); the offending message is marked with ✘, and so
    is the empty cell of a rank that should have sent in that step and did not."""
    if log.n_ranks > 16:
        return ""
    rows = []
    shown = log.message_steps()[:40]
    by_cell: dict[tuple[int, int], list[Sent]] = {}
    for x in log.messages:   # once through the log, however long
        if shown and x.step <= shown[-1]:
            by_cell.setdefault((x.step, x.src), []).append(x)
    for step in shown:
        cells = []
        for rank in range(log.n_ranks):
            sent = by_cell.get((step, rank), [])
            cell = " ".join(f"{'✘' if x.index == offender else ''}->{x.dst}:{x.payload.size}"
                            for x in sent)
            cells.append(cell or ("✘." if offender == (step, rank) else "."))
        rows.append([str(step)] + cells)
    if not rows:
        rows.append(["-"] + ["(nothing sent)"] + [""] * (log.n_ranks - 1))
    legend = ("each cell: ->destination:elements sent in that step, . for nothing sent "
              "(✘ the first wrong one)")
    return grid(["step"] + [f"rank {r}" for r in range(log.n_ranks)], rows) + "\n" + legend


SPEC = LabSpec(name="ring_allreduce", cases=cases, draw=draw, data=data, verify=verify,
               describe=describe, collectives=False,
               regimes=(("M not a multiple of N", lambda c: c["m"] % c["n"] != 0),
                        ("M a multiple of N", lambda c: c["m"] % c["n"] == 0),
                        ("N of 4 or more", lambda c: c["n"] >= 4)))
