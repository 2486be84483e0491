"""A simulated cluster in one process: ranks with private numpy data exchanging messages.

This is the in-process form of the simulator, for exploring a program and for the
alpha-beta time model (:class:`Links`, :func:`step_times_ms`). The labs never grade with
it: there the learner's ranks run in a process of their own and the simulator that keeps
the log is :mod:`solutions.simchannel`, with the same rules (lock-step, delivery at the end
of a step, ``recv`` never blocks).

A *program* is a function ``program(rank)`` run once per rank (SPMD, as with MPI or NCCL).
It reads only its own ``rank.data``, sends with ``rank.send(dst, array)``, receives with
``rank.recv(src)`` and ends each step with ``yield``. The model is bulk-synchronous:

* at global step t every unfinished rank runs, in rank order, up to its next ``yield``
  (or its ``return``, whose value is the rank's result);
* a message sent during step t is delivered when step t ends, so it can be received from
  step t+1 on. ``recv`` never blocks: asking for a message that has not arrived is an
  error naming the rank and the step, which makes every run deterministic and deadlock-free.

Every message is logged (step, source, destination, payload) with the step it was
received and freed, so bytes, steps, link types, time and memory can all be re-derived
from the log alone (:mod:`solutions.simverify` does exactly that, trusting nothing the
runtime counted). Payloads are copied once at ``send`` and made read-only, so the log
holds exactly what the receiver got.

Time follows the alpha-beta (Hockney) model of :mod:`solutions.collectives` (Thakur,
Rabenseifner & Gropp, IJHPCA 19(1), 2005): a message of n bytes over a link costs
alpha + n/B. Each rank has one send and one receive port used at once (full duplex, one
port, the model under which Patarasuk & Yuan, JPDC 69(2), 2009, prove the ring optimal):
its messages in one step queue on its ports, so a step lasts as long as the busiest port,
and the run lasts the sum of its steps. Links between ranks of one node (``gpus_per_node``
consecutive ranks) use the intra-node figures, the others the inter-node ones.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solutions._checks import non_negative, positive, positive_int
from solutions.simwire import array_bytes

GB = 1e9  # bytes


class SimError(Exception):
    """A program broke the simulator's rules; ``rank`` and ``step`` say where."""

    def __init__(self, message: str, rank: int = -1, step: int = -1) -> None:
        super().__init__(message)
        self.rank, self.step = rank, step


class RankAccessError(SimError):
    """A rank touched data that is not its own (another rank's buffer or handle)."""


@dataclass(frozen=True)
class Links:
    """Per-direction bandwidth (GB/s) and latency (us) inside a node and between nodes.

    Defaults: H100 NVLink 450 GB/s each way and InfiniBand NDR 400 Gb/s = 50 GB/s each way
    (see :mod:`solutions.hardware`); the latencies (5 us in a node, 10 us across nodes) are
    order-of-magnitude assumptions for NCCL point-to-point steps: set your own.
    """

    gpus_per_node: int = 8
    intra_gb_per_s: float = 450.0
    inter_gb_per_s: float = 50.0
    intra_latency_us: float = 5.0
    inter_latency_us: float = 10.0

    def __post_init__(self) -> None:
        positive_int("gpus_per_node", self.gpus_per_node)
        positive("intra_gb_per_s", self.intra_gb_per_s)
        positive("inter_gb_per_s", self.inter_gb_per_s)
        non_negative("intra_latency_us", self.intra_latency_us)
        non_negative("inter_latency_us", self.inter_latency_us)

    def kind(self, src: int, dst: int) -> str:
        """"intra" when both ranks sit in the same node, else "inter"."""
        same = src // self.gpus_per_node == dst // self.gpus_per_node
        return "intra" if same else "inter"

    def message_time_ms(self, nbytes: int, src: int, dst: int) -> float:
        """alpha + n/B for one message of ``nbytes`` bytes from ``src`` to ``dst``, in ms."""
        if self.kind(src, dst) == "intra":
            gb_per_s, latency_us = self.intra_gb_per_s, self.intra_latency_us
        else:
            gb_per_s, latency_us = self.inter_gb_per_s, self.inter_latency_us
        return latency_us / 1000.0 + 1000.0 * nbytes / GB / gb_per_s


@dataclass
class Message:
    """One point-to-point message: sent in ``step``; ``recv_step``/``free_step`` are -1 until
    the receiver takes it / frees it."""

    step: int
    src: int
    dst: int
    payload: np.ndarray
    recv_step: int = -1
    free_step: int = -1

    @property
    def nbytes(self) -> int:
        return int(self.payload.nbytes)


@dataclass
class Trace:
    """Everything a run produced: the message log, each rank's result, the step count."""

    n_ranks: int
    links: Links
    messages: list[Message] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    steps: int = 0
    data_bytes: list[int] = field(default_factory=list)  # each rank's private data

    def bytes_sent(self, rank: int) -> int:
        return sum(m.nbytes for m in self.messages if m.src == rank)

    def bytes_received(self, rank: int) -> int:
        return sum(m.nbytes for m in self.messages if m.dst == rank)

    def time_ms(self) -> float:
        """The run's duration under the alpha-beta, one-port full-duplex model (see above)."""
        return sum(step_times_ms(self.messages, self.links, self.n_ranks, self.steps))

    def to_plain(self) -> dict[str, Any]:
        """The log as plain data (lists, ints, floats, strings): what a sandbox sends back."""
        return {
            "n_ranks": self.n_ranks, "steps": self.steps, "data_bytes": list(self.data_bytes),
            "messages": [[m.step, m.src, m.dst, m.recv_step, m.free_step,
                          m.payload.dtype.str, list(m.payload.shape), m.payload.ravel().tolist()]
                         for m in self.messages],
            "results": [plain(r) for r in self.results],
        }


def step_times_ms(messages: Sequence[Message], links: Links, n_ranks: int,
                  steps: int) -> list[float]:
    """Duration of each step: the busiest send or receive port of that step, in ms."""
    out = np.zeros((steps, n_ranks))
    into = np.zeros((steps, n_ranks))
    for m in messages:
        cost = links.message_time_ms(m.nbytes, m.src, m.dst)
        out[m.step, m.src] += cost
        into[m.step, m.dst] += cost
    if steps == 0:
        return []
    return [float(t) for t in np.maximum(out, into).max(axis=1)]


def plain(value: Any, depth: int = 0) -> Any:
    """Plain data for the wire: arrays as {"dtype", "shape", "values"}, numpy scalars as
    Python numbers, tuples as lists; anything else as a short repr string."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray) and value.dtype != object:
        return {"dtype": value.dtype.str, "shape": list(value.shape),
                "values": value.ravel().tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if depth < 8 and isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if depth < 8 and isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    try:
        return f"<{type(value).__name__}: {repr(value)[:80]}>"
    except Exception:  # noqa: BLE001 - a learner's object whose repr is broken
        return f"<{type(value).__name__}>"


class Rank:
    """One rank's handle, given to the program. It works only while its own rank runs."""

    __slots__ = ("_sim", "_id", "_data", "_inbox", "_held", "_freed")

    def __init__(self, sim: _Cluster, rank_id: int, data: Any) -> None:
        self._sim, self._id, self._data = sim, rank_id, data
        self._inbox: dict[int, deque[Message]] = {}
        self._held: dict[int, Message] = {}  # id(payload) -> message, received and not freed
        self._freed: set[int] = set()  # ids of freed payloads (kept alive by the log)

    @property
    def id(self) -> int:
        return self._id

    @property
    def size(self) -> int:
        """Number of ranks in the cluster."""
        return self._sim.n_ranks

    @property
    def step(self) -> int:
        return self._sim.step

    @property
    def data(self) -> Any:
        """This rank's private data (its own copy)."""
        self._sim.check_running(self._id, "read the data of")
        return self._data

    def send(self, dst: int, array: Any) -> None:
        """Send a copy of ``array`` to rank ``dst``; it arrives when this step ends."""
        sim = self._sim
        sim.check_running(self._id, "send as")
        if isinstance(dst, bool) or not isinstance(dst, (int, np.integer)) or not \
                0 <= dst < sim.n_ranks or dst == self._id:
            raise SimError(f"rank {self._id} at step {sim.step}: send to {dst!r}; the "
                           f"destination must be another rank, 0..{sim.n_ranks - 1}",
                           self._id, sim.step)
        payload = np.array(array, copy=True)
        if payload.dtype == object:
            raise SimError(f"rank {self._id} at step {sim.step}: send needs a numeric array",
                           self._id, sim.step)
        payload.flags.writeable = False
        sim.post(Message(sim.step, self._id, int(dst), payload))

    def recv(self, src: int) -> np.ndarray:
        """The oldest arrived message from rank ``src`` (read-only); an error if none has."""
        sim = self._sim
        sim.check_running(self._id, "receive as")
        queue = self._inbox.get(int(src)) if isinstance(src, (int, np.integer)) else None
        if not queue:
            raise SimError(f"rank {self._id} at step {sim.step}: recv({src!r}) but no message "
                           f"from rank {src!r} has arrived. A message sent in step t can be "
                           "received from step t+1 on, after the `yield` that ends step t.",
                           self._id, sim.step)
        message = queue.popleft()
        message.recv_step = sim.step
        self._held[id(message.payload)] = message
        return message.payload

    def free(self, *arrays: Any) -> None:
        """Release received buffers: they no longer count towards this rank's memory.

        Arrays that were never received (the rank's own data) are skipped; freeing a
        received buffer twice is an error."""
        self._sim.check_running(self._id, "free memory of")
        for array in arrays:
            message = self._held.pop(id(array), None)
            if message is not None and message.payload is array:
                message.free_step = self._sim.step
                self._freed.add(id(array))
            elif id(array) in self._freed:
                raise SimError(f"rank {self._id} at step {self._sim.step}: this buffer was "
                               "already freed", self._id, self._sim.step)

    def all_reduce(self, array: Any) -> Generator[None, None, np.ndarray]:
        """Ring AllReduce (sum) of ``array`` with every rank: ``total = yield from
        rank.all_reduce(x)``. Sends ordinary, logged messages; 2(N-1) steps."""
        self._collectives_allowed("all_reduce")
        from solutions.simcollectives import ring_all_reduce
        return (yield from ring_all_reduce(self, array))

    def all_gather(self, shard: Any) -> Generator[None, None, list[np.ndarray]]:
        """Ring all-gather: every rank's ``shard`` in rank order (``parts = yield from
        rank.all_gather(mine)``); the received parts count as held until freed."""
        self._collectives_allowed("all_gather")
        from solutions.simcollectives import ring_all_gather
        return (yield from ring_all_gather(self, shard))

    def _collectives_allowed(self, name: str) -> None:
        if not self._sim.collectives:
            raise SimError(f"rank {self._id}: rank.{name}() is not available in this lab: "
                           "write it with send and recv", self._id, self._sim.step)

    def __repr__(self) -> str:
        return f"<rank {self._id} of {self._sim.n_ranks}>"


class _Cluster:
    """The runtime behind the rank handles (kept out of the program's reach by convention;
    the verifier does not rely on it)."""

    def __init__(self, n_ranks: int, links: Links) -> None:
        self.n_ranks, self.links = n_ranks, links
        self.step = 0
        self.running = -1
        self.pending: list[Message] = []
        self.log: list[Message] = []
        self.ranks: list[Rank] = []
        self.collectives = True

    def check_running(self, rank_id: int, verb: str) -> None:
        if self.running != rank_id:
            who = f"rank {self.running}" if self.running >= 0 else "code outside the run"
            raise RankAccessError(
                f"{who} at step {self.step} tried to {verb} rank {rank_id}: a rank may only "
                "use its own handle and data; send a message instead", self.running, self.step)

    def post(self, message: Message) -> None:
        self.pending.append(message)
        self.log.append(message)

    def deliver(self) -> None:
        for message in self.pending:
            self.ranks[message.dst]._inbox.setdefault(message.src, deque()).append(message)
        self.pending = []


Program = Callable[[Rank], Any]


def _start(program: Program, rank: Rank, sim: _Cluster) -> Iterator[Any] | tuple[Any]:
    sim.running = rank.id
    try:
        out = program(rank)
    finally:
        sim.running = -1
    return out if _is_generator(out) else (out,)


def _is_generator(value: Any) -> bool:
    return hasattr(value, "send") and hasattr(value, "throw") and hasattr(value, "__next__")


def run(program: Program, data: Sequence[Any], *, links: Links | None = None,
        max_steps: int = 100_000, collectives: bool = True) -> Trace:
    """Run ``program`` on ``len(data)`` ranks, rank r starting with a deep copy of ``data[r]``.

    Returns the :class:`Trace`. A broken rule raises :class:`SimError` (or
    :class:`RankAccessError`) naming the rank and the step. ``collectives=False`` takes
    ``rank.all_reduce``/``rank.all_gather`` away (for labs that ask to write them).
    """
    n = positive_int("number of ranks", len(data))
    sim = _Cluster(n, links or Links())
    sim.collectives = collectives
    sim.ranks = [Rank(sim, r, copy.deepcopy(data[r])) for r in range(n)]
    results: list[Any] = [None] * n
    live: dict[int, Iterator[Any]] = {}
    for rank in sim.ranks:
        out = _start(program, rank, sim)
        if isinstance(out, tuple):
            results[rank.id] = out[0]
        else:
            live[rank.id] = out
    while live:
        if sim.step >= max_steps:
            raise SimError(f"the program ran more than {max_steps} steps (an endless loop?)")
        for rank_id in list(live):
            sim.running = rank_id
            try:
                next(live[rank_id])
            except StopIteration as stop:
                results[rank_id] = stop.value
                del live[rank_id]
            finally:
                sim.running = -1
        sim.deliver()
        sim.step += 1
    sim.deliver()
    trace = Trace(n, sim.links, sim.log, results, max(sim.step, 1),
                  [array_bytes(d) for d in data])
    return trace
