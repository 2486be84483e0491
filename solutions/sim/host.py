"""The untrusted side of the rank channel: the process that runs the learner's rank functions.

Started by the trusted side (:mod:`solutions.sim.channel`) as ``python -I`` on a staged copy
of this package's few modules (inside bubblewrap where available), it reads frames on
stdin and writes frames on stdout (:mod:`solutions.sim.wire`); the learner's ``print`` goes
to stderr. It holds no log and no verifier. A case arrives as one frame (the cluster size,
every rank's data, the run's bounds); this side then runs the lockstep steps itself and
streams one answer frame per step, without waiting to be asked: each rank's requests
(send, recv, free) in order, how its step ended and its memory, for the trusted side to
check and apply. It keeps each rank's arrived messages the way the trusted side does (a
message sent in step t arrives when step t ends; one not received stays for the next
step), so that the message ids it claims are the ones the trusted side's log gives; the
trusted side believes none of it without checking. It stops after the step in which a
rank raised, a send could not be delivered, a rank sent more than the run's budget, or
the run reached its last step, and marks that step's frame the last: the trusted side
fails the run at that same step, and the next case finds this side waiting.

With memory tracking on, every step of a rank is measured with :mod:`tracemalloc` (numpy
registers its buffers there): what the rank still holds after the step (every array it
kept, including copies it made) and its peak inside the step. Everything received is a
copy made in the rank's own step; the messages themselves are let go between steps, never
inside one. The trusted side never believes less than what it knows the rank received.

Only the standard library, numpy, :mod:`solutions.sim.wire`, :mod:`solutions.sim.bundle` and
:mod:`solutions.sim.collectives` are needed here (a sandbox gets copies of just those).
"""

from __future__ import annotations

import os
import sys
import tracemalloc
from collections.abc import Generator, Iterator
from typing import Any, BinaryIO

import numpy as np

from solutions.sim import bundle as simbundle
from solutions.sim import wire as simwire


class SimError(Exception):
    """The simulator refused a request (it has already recorded why)."""


class RankAccessError(SimError):
    """A rank used a handle that is not its own."""


class Host:
    """The channel's ends and the ranks of the current case."""

    def __init__(self, into: BinaryIO, out: BinaryIO) -> None:
        self.into, self.out = into, out
        self.running = -1
        self.step = 0
        self.n = 0
        self.collectives = True
        self.live: dict[int, Iterator[Any]] = {}
        self.held: dict[int, int] = {}
        self.track = False
        self.peak = 0
        # every rank's arrived messages (src -> [(message id, payload)]) and the running
        # rank's; the messages sent this step (dst, src, id, payload), delivered when it
        # ends; what this step's ranks could take from their inboxes (let go when it ends)
        self.inboxes: list[dict[int, list[tuple[int, np.ndarray]]]] = []
        self.inbox: dict[int, list[tuple[int, np.ndarray]]] = {}
        self.pending: list[tuple[int, int, int, np.ndarray]] = []
        self.taken: list[Any] = []
        self.next_id = 0                    # the id the trusted side's log gives a message
        self.rank_sent: list[int] = []      # bytes each rank has sent in this case
        self.ops: list[int] = []            # kind, a, b per request (see simwire)
        self.outgoing: list[np.ndarray] = []
        self.sent_bytes = 0                 # of every payload sent so far
        self.yielded: list[int] = []        # the ranks of this step that yielded
        # the step's answer: its table of numbers, returned values and raised texts by rank
        self.table: list[int] = []
        self.values: dict[str, Any] = {}
        self.raised: dict[str, str] = {}

    def tell(self, header: dict[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> None:
        simwire.write_frame(self.out, header, arrays)


class Rank:
    """One rank's handle: its id, the cluster size, its own data, and the channel's verbs."""

    __slots__ = ("_host", "_id", "_data", "_ids")

    def __init__(self, host: Host, rank_id: int, data: Any) -> None:
        self._host, self._id, self._data = host, rank_id, data
        self._ids: dict[int, tuple[int, np.ndarray]] = {}  # id(array) -> (message, array)

    @property
    def id(self) -> int:
        return self._id

    @property
    def size(self) -> int:
        return self._host.n

    @property
    def step(self) -> int:
        return self._host.step

    @property
    def data(self) -> Any:
        """This rank's private data (its own copy)."""
        self._mine("read the data of")
        return self._data

    def _mine(self, verb: str) -> None:
        if self._host.running != self._id:
            raise RankAccessError(f"rank {self._host.running} at step {self._host.step} tried "
                                  f"to {verb} rank {self._id}: a rank may only use its own "
                                  "handle and data; send a message instead")

    def send(self, dst: int, array: Any) -> None:
        """Send a copy of ``array`` to rank ``dst``; it arrives when this step ends."""
        self._mine("send as")
        payload = np.array(array, copy=True)
        if payload.dtype.str not in simwire.DTYPES:
            raise SimError(f"rank {self._id} at step {self._host.step}: send needs an array of "
                           f"numbers (int, uint, float or bool), not {payload.dtype}")
        if isinstance(dst, bool) or not isinstance(dst, (int, np.integer)):
            raise SimError(f"rank {self._id} at step {self._host.step}: send to {dst!r}; the "
                           "destination must be a rank number")
        host = self._host
        host.ops += (0, _word(dst), len(host.outgoing))
        host.outgoing.append(payload)
        host.sent_bytes += payload.nbytes

    def recv(self, src: int) -> np.ndarray:
        """The oldest arrived message from rank ``src`` (a copy, read-only)."""
        self._mine("receive as")
        if isinstance(src, bool) or not isinstance(src, (int, np.integer)):
            raise SimError(f"rank {self._id}: recv({src!r}) needs a rank number")
        queue = self._host.inbox.get(int(src))
        if not queue:
            self._host.ops += (1, _word(src), -1)
            raise SimError(f"rank {self._id} at step {self._host.step}: recv({src}) but no "
                           "message has arrived")
        message, arrived = queue.pop(0)
        payload: np.ndarray = arrived.copy()  # made in this step: it counts as this rank's memory
        payload.flags.writeable = False
        self._host.ops += (1, _word(src), message)
        self._ids[id(payload)] = (message, payload)
        return payload

    def free(self, *arrays: Any) -> None:
        """Release received buffers (the rank's own data and other arrays are skipped)."""
        self._mine("free memory of")
        for array in arrays:
            entry = self._ids.pop(id(array), None)
            if entry is not None and entry[1] is array:
                self._host.ops += (2, entry[0], 0)

    def all_reduce(self, array: Any) -> Generator[None, None, np.ndarray]:
        """Ring AllReduce (sum): ``total = yield from rank.all_reduce(x)``."""
        self._collectives_allowed("all_reduce")
        from solutions.sim import collectives as simcollectives
        return (yield from simcollectives.ring_all_reduce(self, array))

    def all_gather(self, shard: Any) -> Generator[None, None, list[np.ndarray]]:
        """Ring all-gather: every rank's ``shard`` in rank order."""
        self._collectives_allowed("all_gather")
        from solutions.sim import collectives as simcollectives
        return (yield from simcollectives.ring_all_gather(self, shard))

    def _collectives_allowed(self, name: str) -> None:
        if not self._host.collectives:
            raise SimError(f"rank {self._id}: rank.{name}() is not available in this lab: "
                           "write it with send and recv")

    def __repr__(self) -> str:
        return f"<rank {self._id} of {self._host.n}>"


def _error_text(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 400 else text[:400] + "..."


def _word(number: Any) -> int:
    """A rank number as it crosses the channel (an int64; -1 for one beyond it)."""
    value = int(number)
    return value if -(1 << 62) < value < 1 << 62 else -1


def _is_generator(value: Any) -> bool:
    return hasattr(value, "send") and hasattr(value, "throw") and hasattr(value, "__next__")


def _measured(host: Host, rank: int, action: Any) -> Any:
    """Run ``action()`` as ``rank``, measuring what it keeps and its peak (when tracking)."""
    host.running = rank
    before = _traced_now() if host.track else 0
    sent = host.sent_bytes
    try:
        return action()
    finally:
        host.running = -1
        if host.track:
            _account(host, rank, before, host.sent_bytes - sent)


def _traced_now() -> int:
    tracemalloc.reset_peak()
    return tracemalloc.get_traced_memory()[0]


def _account(host: Host, rank: int, before: int, sent: int) -> None:
    """What ``rank`` holds after its step and its peak in it: what was allocated since
    ``before``, less the copies it sent (gone once the step's answer is written)."""
    now, peak = tracemalloc.get_traced_memory()
    base = host.held.get(rank, 0)
    host.held[rank] = base + now - before - sent
    host.peak = base + peak - before


def _own(value: Any) -> Any:
    """``value`` with writeable copies of its arrays: a rank's data is its own to modify."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_own(v) for v in value]
    if isinstance(value, dict):
        return {k: _own(v) for k, v in value.items()}
    return value


def _record(host: Host, rank: int, outcome: int, value: Any = None) -> None:
    """What the step of ``rank`` did, added to the step's answer (laid out as
    :mod:`solutions.sim.wire` says): its requests in order, how it ended, its memory, and
    a returned value or raised text."""
    if outcome == simwire.RETURNED:
        host.values[str(rank)] = simwire.to_tree(value, host.outgoing)
    elif outcome == simwire.RAISED:
        host.raised[str(rank)] = value
    host.table += (rank, outcome, host.held.get(rank, 0), host.peak, len(host.ops) // 3)
    host.table += host.ops
    for k in range(0, len(host.ops), 3):  # its sends, numbered as the trusted log numbers them
        if host.ops[k] == 0:
            payload = host.outgoing[host.ops[k + 2]]
            host.pending.append((host.ops[k + 1], rank, host.next_id, payload))
            host.next_id += 1
            host.rank_sent[rank] += payload.nbytes
    host.ops = []
    if outcome == simwire.YIELDED:
        host.yielded.append(rank)


def _run(host: Host, rank: int, program: Any, start: Any) -> None:
    """Start or continue ``rank`` up to its next yield or its return; record which."""
    def step() -> Any:
        if start is not None:
            out = program(Rank(host, rank, start))
            if not _is_generator(out):
                raise StopIteration(out)
            host.live[rank] = out
        return next(host.live[rank])
    try:
        _measured(host, rank, step)
    except StopIteration as stop:
        host.live.pop(rank, None)
        return _record(host, rank, simwire.RETURNED, stop.value)
    except SimError as error:
        return _record(host, rank, simwire.RAISED, str(error))
    except Exception as error:  # noqa: BLE001 - the learner's own bug, reported as such
        return _record(host, rank, simwire.RAISED, _error_text(error))
    return _record(host, rank, simwire.YIELDED)


def _case(host: Host, header: dict[str, Any], arrays: list[np.ndarray], program: Any) -> None:
    """Run one case to its end, one answer frame per step (laid out as
    :mod:`solutions.sim.wire` says), the last one marked so."""
    n, data = host.n, header["data"]
    budget, last_step = int(header["budget"]), int(header["max_steps"])
    host.inboxes, host.rank_sent = [{} for _ in range(n)], [0] * n
    host.pending, host.taken, host.next_id = [], [], 0
    live, host.step = list(range(n)), 0
    while True:
        host.outgoing, host.table, host.values, host.raised, host.yielded = [], [], {}, {}, []
        for rank in live:
            host.inbox = host.inboxes[rank]
            # what it may receive stays referenced until the step ends: a message let go
            # inside the rank's step would count against its memory
            host.taken.append([entry for queue in host.inbox.values() for entry in queue])
            start = _own(simwire.from_tree(data[str(rank)], arrays)) if host.step == 0 \
                else None
            _run(host, rank, program, start)
        undelivered = _deliver(host)
        live = host.yielded
        last = not live or bool(host.raised) or undelivered or host.step >= last_step or \
            max(host.rank_sent) > budget
        host.tell({"op": "stepped", "values": host.values, "raised": host.raised,
                   "last": last}, (np.array(host.table, dtype=np.int64), *host.outgoing))
        host.outgoing, host.taken = [], []
        if last:
            return
        host.step += 1


def _deliver(host: Host) -> bool:
    """The step's messages into their destinations' inboxes; True if one has none."""
    for dst, src, message, payload in host.pending:
        if not 0 <= dst < host.n or dst == src:
            return True
        host.inboxes[dst].setdefault(src, []).append((message, payload))
    host.pending = []
    return False


def serve(host: Host) -> None:
    """Answer the trusted side's frames until it closes the channel."""
    program: Any = None
    while True:
        try:
            header, arrays = simwire.read_frame(host.into)
        except simwire.ChannelClosed:
            return
        op = header["op"]
        if op == "load":
            try:
                program = simbundle.unpack(header["bundle"])
                host.tell({"op": "loaded"})
            except BaseException as error:  # noqa: BLE001 - a file that does not load
                host.tell({"op": "raised", "value": _error_text(error)})
        elif op == "case":
            host.n, host.collectives = int(header["n"]), bool(header["collectives"])
            host.live, host.held, host.track = {}, {}, bool(header["track"])
            if host.collectives:  # imported now, so that its import is no rank's memory
                from solutions.sim import collectives  # noqa: F401
            if host.track and not tracemalloc.is_tracing():
                tracemalloc.start()
            _case(host, header, arrays, program)
        elif op == "call":
            _call(host, program, simwire.from_tree(header["args"], arrays))


def _call(host: Host, program: Any, args: list[Any]) -> None:
    try:
        value = program(*args)
    except Exception as error:  # noqa: BLE001 - the learner's own bug
        host.tell({"op": "raised", "value": _error_text(error)})
        return
    arrays: list[np.ndarray] = []
    host.tell({"op": "returned", "value": simwire.to_tree(value, arrays)}, tuple(arrays))


def main() -> None:
    """Take the channel off fds 0 and 1, so that the learner's prints cannot reach it."""
    into = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.setrecursionlimit(10_000)
    serve(Host(into, out))


if __name__ == "__main__":
    main()
