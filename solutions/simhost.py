"""The untrusted side of the rank channel: the process that runs the learner's rank functions.

Started by the trusted side (:mod:`solutions.simchannel`) as ``python -I simhost.py`` (inside
bubblewrap where available), it reads frames on stdin and writes frames on stdout
(:mod:`solutions.simwire`); the learner's ``print`` goes to stderr. It holds no log, no
verifier and no other rank's inbox: a rank's handle can only *ask* the trusted side to send,
receive or free, and everything it receives is a copy. The trusted side attributes every
request to the rank it told to run, so a handle kept by another rank acts as the running one.

With memory tracking on, every step of a rank is measured with :mod:`tracemalloc` (numpy
registers its buffers there): what the rank still holds after the step (every array it
kept, including copies it made) and its peak inside the step. The trusted side never
believes less than what it knows the rank holds.

Only the standard library, numpy, :mod:`solutions.simwire`, :mod:`solutions.simbundle` and
:mod:`solutions.simcollectives` are needed here (a sandbox gets copies of just those).
"""

from __future__ import annotations

import os
import sys
import tracemalloc
from collections.abc import Generator, Iterator
from typing import Any, BinaryIO

import numpy as np

from solutions import simbundle, simwire


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

    def ask(self, header: dict[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> Any:
        simwire.write_frame(self.out, header, arrays)
        reply, got = simwire.read_frame(self.into)
        if reply["op"] == "refused":
            raise SimError(str(reply.get("error", "refused")))
        return reply, got

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
        self._host.tell({"op": "send", "dst": int(dst)}, (payload,))

    def recv(self, src: int) -> np.ndarray:
        """The oldest arrived message from rank ``src`` (a copy, read-only)."""
        self._mine("receive as")
        if isinstance(src, bool) or not isinstance(src, (int, np.integer)):
            raise SimError(f"rank {self._id}: recv({src!r}) needs a rank number")
        reply, arrays = self._host.ask({"op": "recv", "src": int(src)})
        payload = arrays[0]
        payload.flags.writeable = False
        self._ids[id(payload)] = (int(reply["id"]), payload)
        return payload

    def free(self, *arrays: Any) -> None:
        """Release received buffers (the rank's own data and other arrays are skipped)."""
        self._mine("free memory of")
        for array in arrays:
            entry = self._ids.pop(id(array), None)
            if entry is not None and entry[1] is array:
                self._host.ask({"op": "free", "id": entry[0]})

    def all_reduce(self, array: Any) -> Generator[None, None, np.ndarray]:
        """Ring AllReduce (sum): ``total = yield from rank.all_reduce(x)``."""
        self._collectives_allowed("all_reduce")
        from solutions import simcollectives
        return (yield from simcollectives.ring_all_reduce(self, array))

    def all_gather(self, shard: Any) -> Generator[None, None, list[np.ndarray]]:
        """Ring all-gather: every rank's ``shard`` in rank order."""
        self._collectives_allowed("all_gather")
        from solutions import simcollectives
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


def _is_generator(value: Any) -> bool:
    return hasattr(value, "send") and hasattr(value, "throw") and hasattr(value, "__next__")


def _measured(host: Host, rank: int, action: Any) -> tuple[Any, int]:
    """Run ``action()`` as ``rank``; its peak bytes in the step (0 when not tracking)."""
    host.running = rank
    before = tracemalloc.get_traced_memory()[0] if host.track else 0
    if host.track:
        tracemalloc.reset_peak()
    try:
        return action(), 0
    finally:
        host.running = -1
        if host.track:
            now, peak = tracemalloc.get_traced_memory()
            base = host.held.get(rank, 0)
            host.held[rank] = base + now - before
            host.peak = base + peak - before  # type: ignore[attr-defined]


def _finish(host: Host, rank: int, outcome: str, value: Any = None) -> None:
    arrays: list[np.ndarray] = []
    tree = simwire.to_tree(value, arrays) if outcome == "returned" else value
    memory = {"held": host.held.get(rank, 0), "peak": getattr(host, "peak", 0)}
    host.tell({"op": outcome, "value": tree, "memory": memory}, tuple(arrays))


def _run(host: Host, rank: int, program: Any, start: Any) -> None:
    """Start or continue ``rank`` up to its next yield or its return; report which."""
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
        _finish(host, rank, "returned", stop.value)
        return
    except SimError as error:
        _finish(host, rank, "raised", str(error))
        return
    except Exception as error:  # noqa: BLE001 - the learner's own bug, reported as such
        _finish(host, rank, "raised", _error_text(error))
        return
    _finish(host, rank, "yielded")


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
                from solutions import simcollectives  # noqa: F401
            if host.track and not tracemalloc.is_tracing():
                tracemalloc.start()
        elif op == "start" or op == "run":
            host.step = int(header["step"])
            data = simwire.from_tree(header.get("data"), arrays) if op == "start" else None
            _run(host, int(header["rank"]), program, data if op == "start" else None)
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
