"""Re-derive what a simulated run did from its message log alone, trusting nothing else.

The log is written by the trusted side of the rank channel (:mod:`solutions.sim.channel`),
never by the learner's process; the verifier still recomputes everything from the log
rather than from any counter: bytes per rank from the payloads themselves, the steps that
carried messages, the memory a rank held (its data plus received buffers not yet freed),
and, for reductions, *where every number came from*.

Provenance of sums (:class:`Provenance`): each rank r starts with x_r, a vector of M
random numbers. Every number a correct reduction ever sends is a partial sum
sum_{j in S} x_j[i] for one index i and a set S of ranks. The verifier tabulates all 2^N
partial sums of each index, decodes every payload element into the (i, S) it equals, and
replays the log in step order: a rank may send (i, S) only if it can build S as a disjoint
union of sets it holds for index i (its own {r}, and what it has received). A rank that
read another rank's data, or the global input, sends or returns sums it could not have
built, and the first such number is named. Random int64 data make a false match
impossible in practice; float data match within a relative 1e-9. The table has M x 2^N
entries, so this check is meant for N <= 12.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_PROVENANCE_RANKS = 12


# -- the verification's time budget ---------------------------------------------------------

class VerifyTimeout(Exception):
    """Checking a run took longer than its budget (a log far larger than the lab needs)."""


_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("deadline", default=0.0)


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Within the block, :func:`tick` raises VerifyTimeout once ``seconds`` have passed
    (per thread: a batch grader checks many runs at once)."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def tick() -> None:
    """Called in every loop of a check that grows with the log: VerifyTimeout if the
    budget of the enclosing :func:`time_budget` is spent."""
    deadline = _DEADLINE.get()
    if deadline and time.monotonic() > deadline:
        raise VerifyTimeout


@dataclass(frozen=True)
class Sent:
    """One logged message as the verifier sees it."""

    index: int
    step: int
    src: int
    dst: int
    recv_step: int
    free_step: int
    payload: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.payload.nbytes)


@dataclass(frozen=True)
class Log:
    n_ranks: int
    steps: int
    data_bytes: tuple[int, ...]
    messages: tuple[Sent, ...]
    results: tuple[Any, ...]
    memory: tuple[tuple[int, ...], ...] = ()  # per rank, bytes held in each of its steps

    def bytes_sent(self, rank: int) -> int:
        return sum(m.nbytes for m in self.messages if m.src == rank)

    def bytes_received(self, rank: int) -> int:
        return sum(m.nbytes for m in self.messages if m.dst == rank)

    def message_steps(self) -> list[int]:
        """The distinct steps in which at least one message was sent, in order."""
        return sorted({m.step for m in self.messages})

    def peak_memory_bytes(self, rank: int) -> int:
        """Most bytes ``rank`` held at once: its data plus received buffers not yet freed
        (a buffer counts from the step it is received to the step it is freed)."""
        events: dict[int, int] = {}
        for m in self.messages:
            if m.dst != rank or m.recv_step < 0:
                continue
            events[m.recv_step] = events.get(m.recv_step, 0) + m.nbytes
            if m.free_step >= 0:
                events[m.free_step + 1] = events.get(m.free_step + 1, 0) - m.nbytes
        held = peak = self.data_bytes[rank]
        for step in sorted(events):
            held += events[step]
            peak = max(peak, held)
        return peak


# -- provenance of sums -----------------------------------------------------------------

@dataclass(frozen=True)
class Origin:
    """A number that could not have been built by the rank that sent or returned it."""

    rank: int
    step: int
    element: int       # position in the payload or result (flattened)
    value: float
    message: int = -1  # index of the message in the log, -1 for a result
    empty: bool = False  # the number is 0, the empty sum: it carries no rank's data


class Provenance:
    """Replays a reduction's log, tracking which partial sums each rank can build."""

    def __init__(self, data: Sequence[np.ndarray], exact: bool) -> None:
        self.n = len(data)
        if self.n > MAX_PROVENANCE_RANKS:
            raise ValueError(f"provenance needs at most {MAX_PROVENANCE_RANKS} ranks")
        x = np.stack([np.asarray(d, dtype=np.float64).ravel() for d in data])  # (N, M)
        masks = np.arange(1 << self.n)
        bits = ((masks[:, None] >> np.arange(self.n)) & 1).astype(np.float64)  # (2^N, N)
        sums = bits @ x                                                      # (2^N, M)
        flat = sums.T.ravel()                      # entry k: index k // 2^N, mask k % 2^N
        order = np.argsort(flat, kind="stable")
        self._values, self._keys = flat[order], order
        self._exact = exact
        self.known: list[dict[int, set[int]]] = [dict() for _ in range(self.n)]

    def candidates(self, value: float) -> list[tuple[int, int]]:
        """Every (index, mask) whose partial sum equals ``value`` (within tolerance)."""
        return self.candidates_of(np.array([value], dtype=np.float64))[0]

    def candidates_of(self, values: np.ndarray) -> list[list[tuple[int, int]]]:
        """Every (index, mask) whose partial sum equals each element of ``values``
        (float64, within tolerance), in two searches for all; an element with one candidate
        (the usual case) takes no search of its own."""
        tol = 0.5 if self._exact else 1e-9 * (1.0 + np.abs(values))
        lo = np.searchsorted(self._values, values - tol, side="left")
        hi = np.searchsorted(self._values, values + tol, side="right")
        width, keys = 1 << self.n, self._keys
        first = keys[np.minimum(lo, len(keys) - 1)].tolist()
        out = []
        for a, b, k in zip(lo.tolist(), hi.tolist(), first, strict=True):
            if b - a == 1:
                out.append([(k // width, k % width)])
            else:
                out.append([(j // width, j % width) for j in keys[a:b].tolist()])
        return out

    def can_build(self, rank: int, index: int, mask: int) -> bool:
        """Whether ``mask`` is a disjoint union of sets ``rank`` holds for ``index``."""
        if mask == 0 or mask == 1 << rank:
            return True
        known = self.known[rank].get(index, set())
        if mask in known:
            return True
        held = known | {1 << rank}
        return _cover(mask, frozenset(m for m in held if m & mask == m))

    def learn(self, rank: int, index: int, mask: int) -> None:
        self.known[rank].setdefault(index, set()).add(mask)

    def buildable_of(self, rank: int, values: np.ndarray) -> list[list[tuple[int, int]]]:
        """For every element of ``values`` (float64), the (index, set) pairs it may be that
        ``rank`` can build; never the empty set: a 0 standing for "nothing yet" carries no
        data where the algorithm needs some."""
        return [[(i, m) for i, m in options if m != 0 and self.can_build(rank, i, m)]
                for options in self.candidates_of(values)]


def _cover(mask: int, pieces: frozenset[int]) -> bool:
    if mask == 0:
        return True
    low = mask & -mask
    return any(_cover(mask & ~p, pieces) for p in pieces if p & low)


def trace_sums(log: Log, data: Sequence[np.ndarray], exact: bool,
               results: bool = True) -> Origin | None:
    """The first number in the log (a payload element, then a result element) that its rank
    could not have built from its own data and what it received; None if there is none.

    ``log.results`` must already be arrays (or None); element k of a result must be a sum
    for index k itself. Receives are applied in step order, before the sends of the same
    step. ``results=False`` checks the messages only.
    """
    prov = Provenance(data, exact)
    pending: dict[int, list[tuple[Sent, list[list[tuple[int, int]]]]]] = {}
    by_step: dict[int, list[Sent]] = {}
    for msg in sorted(log.messages, key=lambda m: (m.step, m.index)):
        by_step.setdefault(msg.step, []).append(msg)
    for step in sorted(set(by_step) | {m.recv_step for m in log.messages if m.recv_step >= 0}):
        for msg, decoded in pending.pop(step, ()):
            tick()
            for options in decoded:
                for index, mask in options:
                    prov.learn(msg.dst, index, mask)
        for msg in by_step.get(step, ()):
            tick()
            values = msg.payload.ravel().astype(np.float64)
            decoded = prov.buildable_of(msg.src, values)
            for k, options in enumerate(decoded):
                if not options:
                    value = float(values[k])
                    return Origin(msg.src, msg.step, k, value, msg.index, _empty(prov, value))
            if msg.recv_step >= 0:
                pending.setdefault(msg.recv_step, []).append((msg, decoded))
    for rank, result in enumerate(log.results if results else ()):
        if isinstance(result, np.ndarray):
            values = result.ravel().astype(np.float64)
            for k, options in enumerate(prov.buildable_of(rank, values)):
                if not [i for i, _ in options if i == k]:
                    value = float(values[k])
                    return Origin(rank, log.steps, k, value, empty=_empty(prov, value))
    return None


def _empty(prov: Provenance, value: float) -> bool:
    """True when ``value`` can only be the empty sum (a 0 where no rank's data is 0)."""
    options = prov.candidates(float(value))
    return bool(options) and all(mask == 0 for _, mask in options)


def origin_text(o: Origin, what: str) -> str:
    """Why the number ``o`` names fails: an empty sum, or one its rank could not build;
    ``what`` says what the lab's messages must carry."""
    where = (f"rank {o.rank} at step {o.step} sent element {o.element} = {o.value!r}"
             if o.message >= 0 else f"rank {o.rank} returned element {o.element} = {o.value!r}")
    if o.empty:
        return (f"{where}, which carries no information (0, the empty sum, where the "
                f"algorithm needs {what}): send the data itself, not a placeholder.")
    return (f"{where}, which is not {what} that this rank could have built from its own "
            "data and the messages it had received: a rank may only use its own data and "
            "what it was sent (no reading other ranks' buffers, data or the global input).")
