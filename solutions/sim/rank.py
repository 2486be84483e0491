"""One rank's process: the learner's rank function for one rank of one case, step by step.

The ranks' process (:mod:`solutions.sim.host`) forks one process per rank for every case and
talks to each over two pipes of its own (fds 0 and 1 here), in the frames of
:mod:`solutions.sim.wire`. Nothing else is shared: a rank's module, its globals and its
memory are its own, and the only way to another rank is a message through the ranks'
process. The exchange, after the process says ``ready``::

    ranks' process                         this rank
    start: rank id, cluster size, data -->
    go: step t, the messages that      -->  runs the rank's step (a receive takes the
      arrived for it (ids, payloads)          oldest arrived message from that source)
                                       <--  stepped: how the step ended (yielded, returned
                                                value, raised text), the requests in order
                                                (send dst + payload, recv src -> id, free
                                                id), the payloads
                                       <--  idle (its copies let go: now it may be measured)

A message sent in step t travels with the ``go`` of step t + 1 into its destination's
process, where it is held (and counted) until received and let go.
The learner's ``print`` goes to stderr; fd 1 is the channel, and anything else written there
breaks this rank's channel and ends its run.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Generator
from typing import Any, BinaryIO

import numpy as np

from solutions.sim import bundle as simbundle
from solutions.sim import wire as simwire


class SimError(Exception):
    """The simulator refused a request (it has already recorded why)."""


class Link:
    """This rank's end of its channel, and what its current step has asked for."""

    def __init__(self, into: BinaryIO, out: BinaryIO) -> None:
        self.into, self.out = into, out
        self.n, self.step, self.collectives = 0, 0, True
        self.sent, self.budget = 0, 0           # bytes this rank sent; the run's bound
        self.ops: list[int] = []              # kind, a, b per request (see simwire)
        self.outgoing: list[np.ndarray] = []  # this step's payloads, then returned arrays
        self.inbox: dict[int, deque[tuple[int, np.ndarray]]] = {}   # src -> (id, payload)

    def arrive(self, arrived: Any, arrays: list[np.ndarray]) -> None:
        """Messages the ranks' process delivers with a ``go``: [[src, id], ...] in order."""
        if not isinstance(arrived, list) or len(arrived) != len(arrays):
            raise simwire.WireError("a go whose messages do not match its arrays")
        for (src, message), payload in zip(arrived, arrays, strict=True):
            self.inbox.setdefault(int(src), deque()).append((int(message), payload))


def _word(number: Any) -> int:
    """A rank number as it crosses the channel (an int64; -1 for one beyond it)."""
    value = int(number)
    return value if -(1 << 62) < value < 1 << 62 else -1


def _is_rank_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


class Rank:
    """One rank's handle: its id, the cluster size, its own data, and the channel's verbs."""

    __slots__ = ("_link", "_id", "_data", "_ids")

    def __init__(self, link: Link, rank_id: int, data: Any) -> None:
        self._link, self._id, self._data = link, rank_id, data
        self._ids: dict[int, tuple[int, np.ndarray]] = {}  # id(array) -> (message, array)

    @property
    def id(self) -> int:
        return self._id

    @property
    def size(self) -> int:
        return self._link.n

    @property
    def step(self) -> int:
        return self._link.step

    @property
    def data(self) -> Any:
        """This rank's private data (its own copy)."""
        return self._data

    def _where(self) -> str:
        return f"rank {self._id} at step {self._link.step}"

    def send(self, dst: int, array: Any) -> None:
        """Send a copy of ``array`` to rank ``dst``; it arrives when this step ends."""
        given = np.asarray(array)
        if self._link.sent + given.nbytes > self._link.budget:  # refused before any copy
            raise SimError(f"{self._where()}: {self._link.sent + given.nbytes} bytes sent in "
                           f"all; this lab never needs more than {self._link.budget} from one "
                           "rank")
        payload = np.array(given, copy=True, order="C")
        if payload.dtype.str not in simwire.DTYPES:
            raise SimError(f"{self._where()}: send needs an array of numbers (int, uint, "
                           f"float or bool), not {payload.dtype}")
        if not _is_rank_number(dst):
            raise SimError(f"{self._where()}: send to {dst!r}; the destination must be a "
                           "rank number")
        link = self._link
        link.sent += payload.nbytes
        link.ops += (0, _word(dst), len(link.outgoing))
        link.outgoing.append(payload)

    def recv(self, src: int) -> np.ndarray:
        """The oldest arrived message from rank ``src`` (a copy, read-only)."""
        if not _is_rank_number(src):
            raise SimError(f"rank {self._id}: recv({src!r}) needs a rank number")
        queue = self._link.inbox.get(int(src))
        if not queue:
            self._link.ops += (1, _word(src), -1)
            raise SimError(f"{self._where()}: recv({src}) but no message has arrived")
        message, arrived = queue.popleft()
        payload: np.ndarray = arrived.copy()
        payload.flags.writeable = False
        del arrived
        self._link.ops += (1, _word(src), message)
        self._ids[id(payload)] = (message, payload)
        return payload

    def free(self, *arrays: Any) -> None:
        """Release received buffers (the rank's own data and other arrays are skipped)."""
        for array in arrays:
            entry = self._ids.pop(id(array), None)
            if entry is not None and entry[1] is array:
                self._link.ops += (2, entry[0], 0)

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
        if not self._link.collectives:
            raise SimError(f"rank {self._id}: rank.{name}() is not available in this lab: "
                           "write it with send and recv")

    def __repr__(self) -> str:
        return f"<rank {self._id} of {self._link.n}>"


def error_text(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 400 else text[:400] + "..."


def _own(value: Any) -> Any:
    """``value`` with writeable copies of its arrays: a rank's data is its own to modify."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_own(v) for v in value]
    if isinstance(value, dict):
        return {k: _own(v) for k, v in value.items()}
    return value


def _step(link: Link, program: Any, rank: Rank | None, live: Any) -> tuple[int, Any, Any]:
    """Run one step: (outcome, the generator still running, the value or raised text)."""
    try:
        if rank is not None:
            out = program(rank)
            if not (hasattr(out, "send") and hasattr(out, "throw")
                    and hasattr(out, "__next__")):
                return simwire.RETURNED, None, out
            live = out
        next(live)
    except StopIteration as stop:
        return simwire.RETURNED, None, stop.value
    except SimError as error:
        return simwire.RAISED, None, str(error)
    except Exception as error:  # noqa: BLE001 - the learner's own bug, reported as such
        return simwire.RAISED, None, error_text(error)
    return simwire.YIELDED, live, None


def _load(bundle: Any) -> tuple[Any, str]:
    """The learner's function, or why it could not be loaded."""
    try:
        return simbundle.unpack(bundle), ""
    except BaseException as error:  # noqa: BLE001 - a file that does not load
        return None, f"your code could not be loaded: {error_text(error)}"


def serve(link: Link, bundle: Any, release: Any) -> None:
    """Run this rank's cases until the channel closes: each a ``start`` frame, then one step
    per ``go``. The learner's code is loaded at the first start (its module is this
    process's for every case). ``release`` lets go of freed memory before each ``idle``
    (when measured)."""
    program: Any = None
    problem, loaded, track = "", False, False
    rank: Rank | None = None
    live: Any = None
    while True:
        order, arrived = simwire.read_frame(link.into)
        if order.get("op") == "start":
            if not loaded:
                (program, problem), loaded = _load(bundle), True
            link.n, link.collectives = int(order["n"]), bool(order["collectives"])
            link.budget, link.sent, link.inbox = int(order["budget"]), 0, {}
            track, live = bool(order["track"]), None
            rank = Rank(link, int(order["rank"]), _own(simwire.from_tree(order["data"],
                                                                         arrived)))
            del order, arrived
            continue
        if order.get("op") != "go":
            return
        link.step = int(order["step"])
        link.arrive(order.get("arrived"), arrived)
        del arrived
        if problem:
            outcome, value = simwire.RAISED, problem
        else:
            outcome, live, value = _step(link, program, rank, live)
        rank = None
        tree = simwire.to_tree(value, link.outgoing) if outcome == simwire.RETURNED else None
        simwire.write_frame(link.out, {
            "op": "stepped", "outcome": outcome, "value": tree,
            "raised": value if outcome == simwire.RAISED else None, "ops": link.ops},
            link.outgoing)
        link.ops, link.outgoing = [], []
        del value, tree
        if track:
            release()
            simwire.write_frame(link.out, {"op": "idle"})


def serve_calls(link: Link, bundle: Any) -> None:
    """The caller's process: load the function (say whether it loaded), then answer calls."""
    try:
        program = simbundle.unpack(bundle)
        simwire.write_frame(link.out, {"op": "loaded"})
    except BaseException as error:  # noqa: BLE001 - a file that does not load
        simwire.write_frame(link.out, {"op": "raised", "value": error_text(error)})
        return
    while True:
        header, arrays = simwire.read_frame(link.into)
        if header.get("op") != "call":
            return
        try:
            value = program(*simwire.from_tree(header["args"], arrays))
        except Exception as error:  # noqa: BLE001 - the learner's own bug
            simwire.write_frame(link.out, {"op": "raised", "value": error_text(error)})
            continue
        out: list[np.ndarray] = []
        tree = simwire.to_tree(value, out)
        simwire.write_frame(link.out, {"op": "returned", "value": tree}, out)


def link_on_stdio() -> Link:
    """The channel on fds 0 and 1; the learner's prints go to stderr."""
    sys.stdout = sys.stderr
    return Link(os.fdopen(0, "rb", buffering=1 << 16, closefd=False),
                os.fdopen(1, "wb", buffering=1 << 16, closefd=False))
