"""Ring collectives written with the simulator's send and recv: the one ring AllReduce.

Ring AllReduce is a reduce-scatter then an all-gather (Thakur, Rabenseifner & Gropp,
IJHPCA 19(1), 2005, §4; Patarasuk & Yuan, JPDC 69(2), 2009): the vector is cut into N
nearly equal chunks; in reduce-scatter step s rank r sends chunk r - s to r + 1, which adds
it into its own copy, so after N-1 steps rank r owns the full sum of chunk r + 1; in the
all-gather each rank forwards the reduced chunk it last completed or received, N-1 more
steps. Each rank sends 2(N-1) chunks, 2(N-1)/N x M elements, in 2(N-1) steps.
``ring_all_gather`` forwards each rank's shard N-1 times around the ring.

This module is the reference program of the ring lab (:mod:`solutions.sim.ring_lab`) and what
``rank.all_reduce`` / ``rank.all_gather`` run in the labs that allow them. It needs only
numpy: the process that runs the ranks loads it from a copy of its source.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np


def chunk_bounds(m: int, n: int) -> list[int]:
    """Start offsets of N nearly equal chunks of M elements, and M: the first M mod N
    chunks get one element more (numpy's ``array_split`` convention)."""
    base, extra = divmod(m, n)
    return [c * base + min(c, extra) for c in range(n + 1)]


def ring_all_reduce(rank: Any, array: Any,
                    free: bool = True) -> Generator[None, None, np.ndarray]:
    """Sum of every rank's ``array`` (same shape on every rank), on every rank.
    ``free=False`` keeps the received buffers counted as held (the lab's reference does
    not free them; the result is the same)."""
    x = np.array(array, copy=True, order="C")   # a view of any layout: flat writes into x
    flat = x.reshape(-1)
    n, me = rank.size, rank.id
    bounds = chunk_bounds(flat.size, n)

    def part(c: int) -> slice:
        return slice(bounds[c % n], bounds[c % n + 1])

    right, left = (me + 1) % n, (me - 1) % n
    for s in range(n - 1):                      # reduce-scatter
        rank.send(right, flat[part(me - s)])
        yield
        received = rank.recv(left)
        flat[part(me - s - 1)] += received
        if free:
            rank.free(received)
    for s in range(n - 1):                      # all-gather: rank r owns chunk r+1 now
        rank.send(right, flat[part(me + 1 - s)])
        yield
        received = rank.recv(left)
        flat[part(me - s)] = received
        if free:
            rank.free(received)
    return x


def ring_all_gather(rank: Any, shard: Any) -> Generator[None, None, list[np.ndarray]]:
    """Every rank's ``shard``, in rank order; the received ones stay held until freed."""
    n, me = rank.size, rank.id
    parts: list[np.ndarray] = [np.empty(0)] * n
    parts[me] = np.asarray(shard)
    right, left = (me + 1) % n, (me - 1) % n
    for s in range(n - 1):
        rank.send(right, parts[(me - s) % n])
        yield
        parts[(me - s - 1) % n] = rank.recv(left)
    return parts
