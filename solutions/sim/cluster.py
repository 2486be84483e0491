"""The ranks' process's work: the trusted side's frames answered, a case run on its ranks.

:func:`main` is what the ranks' process runs (the parts it is made of, the walls, the rank
processes and their measurement, are in :mod:`solutions.sim.host`): ``load`` forks the
caller's process, which loads the function and says whether it loaded; ``call`` passes a
call to it; ``case`` runs one case (:func:`run_case`).

A case: the trusted side sends its header (cluster size, bounds); this side has one
walled-in process per rank (:class:`solutions.sim.host.Child`; forked at the first case
that needs it, before any of that case's data reached this process, and kept for the later
cases of the same learner's function, its memory counted from when it was forked), says
``forked``, and only then reads each rank's data and forwards it to that rank's process,
so that no rank's process ever has another rank's data in its memory. Then, step by step:
every live rank is told to go, with the messages that arrived for it when the last step ended (it
keeps them, and they count as its memory, until it receives them); when all have stepped,
each is measured while it waits (:func:`solutions.sim.host.resident`), and one answer
frame goes to the trusted side (laid out as :mod:`solutions.sim.wire` says). A rank's
process that breaks its channel (dies, writes what is not a frame) raised, in the trusted
side's eyes, and this ranks' process is not used again (``spent``); a receive it claims
that it was not given breaks the trusted side's rules (which check every claim against
their own inboxes).
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import numpy as np

from solutions.sim import host as simhost
from solutions.sim import rank as simrank
from solutions.sim import wire as simwire

Arrival = tuple[int, int, np.ndarray]   # src, message id, payload


class Case:
    """A running case: its ranks' processes, inboxes, and the messages of the step."""

    def __init__(self, host: simhost.Host, header: dict[str, Any]) -> None:
        self.n = int(header["n"])
        if not 1 <= self.n <= simhost.MAX_RANKS:
            raise simwire.WireError(f"a case of {self.n} ranks")
        self.collectives, self.track = bool(header["collectives"]), bool(header["track"])
        self.budget, self.last_step = int(header["budget"]), int(header["max_steps"])
        bundle = host.bundle
        if len(host.ranks) < self.n:
            host.ranks += simhost.fork_all(
                self.n - len(host.ranks),
                lambda link: simrank.serve(link, bundle, simhost.release), host.confine)
        self.children = host.ranks[:self.n]
        self.arrivals: list[list[Arrival]] = [[] for _ in range(self.n)]  # for the next go
        self.pending: list[tuple[int, int, np.ndarray]] = []   # dst, src, payload
        self.next_id = 0
        self.sent = [0] * self.n
        self.held = [0] * self.n
        self.broken: set[int] = set()   # ranks whose process broke its channel
        self.step = 0
        self.out = host.out

    def start(self, host: simhost.Host) -> None:
        """Forward each rank's data (read from the trusted side now) to its process."""
        for rank, child in enumerate(self.children):
            header, arrays = simwire.read_frame(host.into)
            if header.get("op") != "data":
                raise simwire.WireError("a case without its ranks' data")
            child.tell({"op": "start", "rank": rank, "n": self.n, "track": self.track,
                        "collectives": self.collectives, "budget": self.budget,
                        "data": header.get("data")}, arrays)

    def collect(self, live: list[int]) -> dict[int, Any]:
        """Every live rank's step: its stepped frame, or a text saying how it broke."""
        waiting = {rank: self.children[rank] for rank in live}
        answers: dict[int, Any] = {}
        for rank, child in waiting.items():
            arrived, self.arrivals[rank] = self.arrivals[rank], []
            try:
                child.tell({"op": "go", "step": self.step,
                            "arrived": [[src, message] for src, message, _ in arrived]},
                           [payload for _, _, payload in arrived])
            except OSError as error:
                answers[rank] = self.break_off(rank, error)
        # the ranks run side by side; their answers are read in rank order (none waits
        # for another, so reading the first does not hold up the rest)
        for rank, child in waiting.items():
            if rank in answers:
                continue
            try:
                header, arrays = child.hear(self.budget + (64 << 20))
                if header.get("op") != "stepped":
                    raise simwire.WireError(f"it sent {header.get('op')!r} for its step")
                answers[rank] = self.read_step(header, arrays)
            except (simwire.WireError, simwire.ChannelClosed, OSError, KeyError,
                    TypeError, ValueError) as error:
                answers[rank] = self.break_off(rank, error)
        return answers

    def read_step(self, header: dict[str, Any], arrays: list[np.ndarray],
                  ) -> tuple[int, list[int], list[np.ndarray], Any, Any]:
        """(outcome, requests, payloads, returned value, raised text) from a stepped frame,
        checked: WireError for one that does not hold together."""
        outcome, ops = header["outcome"], header["ops"]
        if outcome not in (simwire.YIELDED, simwire.RETURNED, simwire.RAISED) or \
                not isinstance(ops, list) or len(ops) % 3 or \
                not all(type(x) is int for x in ops):
            raise simwire.WireError("a step's answer that is not one")
        for k in range(0, len(ops), 3):
            if ops[k] not in (0, 1, 2) or ops[k] == 0 and not 0 <= ops[k + 2] < len(arrays):
                raise simwire.WireError("a request that is not one")
        value = simwire.from_tree(header.get("value"), arrays)
        raised = header.get("raised")
        return outcome, ops, arrays, value, str(raised)[:400] if raised is not None else None

    def answer(self, live: list[int], answers: dict[int, Any]) -> tuple[bool, list[int]]:
        """Send the trusted side this step's answer; (whether it was the last, still live)."""
        if self.track:
            self.settle(live, answers)
        table: list[int] = []
        values: dict[str, Any] = {}
        raised: dict[str, str] = {}
        outgoing: list[np.ndarray] = []
        still: list[int] = []
        for rank in live:
            outcome, ops, arrays, value, text = answers[rank]
            held = self.held[rank]
            at = len(outgoing)
            outgoing += arrays
            mine = list(ops)
            for k in range(0, len(mine), 3):
                if mine[k] == 0:
                    payload = arrays[mine[k + 2]]
                    mine[k + 2] += at
                    self.pending.append((mine[k + 1], rank, payload))
                    self.sent[rank] += payload.nbytes
            table += (rank, outcome, held, held, len(mine) // 3, *mine)
            if outcome == simwire.RETURNED:
                values[str(rank)] = simwire.to_tree(value, outgoing)
            elif outcome == simwire.RAISED:
                raised[str(rank)] = text
            else:
                still.append(rank)
        undelivered = self.deliver()
        last = not still or bool(raised) or undelivered or self.step >= self.last_step or \
            max(self.sent) > self.budget
        simwire.write_frame(self.out, {"op": "stepped", "values": values, "raised": raised,
                                       "last": last, "spent": bool(self.broken)},
                            (np.array(table, dtype=np.int64), *outgoing))
        return last, still

    def settle(self, live: list[int], answers: dict[int, Any]) -> None:
        """Wait for each rank to let go of its step's copies, then measure it."""
        for rank in live:
            child = self.children[rank]
            self.held[rank] = 0
            if rank in self.broken:
                continue
            try:
                header, _ = child.hear(0)
                if header.get("op") != "idle":
                    raise simwire.WireError("it did not settle after its step")
            except (simwire.WireError, simwire.ChannelClosed, OSError) as error:
                answers[rank] = self.break_off(rank, error)
                continue
            self.held[rank] = max(simhost.resident(child.pid) - child.base, 0)

    def break_off(self, rank: int, error: BaseException) -> tuple[int, list[int], list[Any],
                                                                  None, str]:
        """What a rank whose process broke its channel did this step: it raised."""
        self.broken.add(rank)
        return simwire.RAISED, [], [], None, (
            f"rank {rank} at step {self.step}: its process broke the channel "
            f"({type(error).__name__}: {str(error)[:160]}); a rank may only talk through "
            "rank.send, rank.recv and rank.free")

    def deliver(self) -> bool:
        """The step's messages, numbered in the order the trusted side applies them, to go
        to their destinations with the next step; True if one has no destination."""
        for dst, src, payload in self.pending:
            if type(dst) is not int or not 0 <= dst < self.n or dst == src:
                self.pending = []
                return True
            self.arrivals[dst].append((src, self.next_id, payload))
            self.next_id += 1
        self.pending = []
        return False


def run_case(host: simhost.Host, header: dict[str, Any]) -> None:
    """Run one case to its end, one answer frame per step, the last one marked so."""
    case = Case(host, header)
    host.tell({"op": "forked"})
    live = list(range(case.n))
    case.start(host)
    while True:
        answers = case.collect(live)
        last, live = case.answer(live, answers)
        if last:
            return
        case.step += 1


def _load(host: simhost.Host, bundle: Any) -> None:
    """Fork the caller's process with ``bundle`` and pass on whether it loaded."""
    host.bundle = bundle
    gc.collect()
    try:
        host.caller = simhost.Child(lambda link: simrank.serve_calls(link, bundle), host.confine)
        header, _ = host.caller.hear(0)
    except (simwire.WireError, simwire.ChannelClosed, OSError) as error:
        header = {"op": "raised", "value": f"the process loading it broke the channel "
                  f"({type(error).__name__})"}
    host.tell(header if header.get("op") in ("loaded", "raised") else
              {"op": "raised", "value": "the process loading it answered out of turn"})


def _call(host: simhost.Host, header: dict[str, Any],
          arrays: list[np.ndarray]) -> None:
    """Pass a call to the caller's process and its answer back; a caller that breaks the
    channel ends this process too (the trusted side reads that as a broken channel)."""
    if host.caller is None:
        raise SystemExit(1)
    host.caller.tell(header, arrays)
    try:
        answer, got = host.caller.hear(64 << 20)
    except (simwire.WireError, simwire.ChannelClosed, OSError):
        raise SystemExit(1) from None
    if answer.get("op") not in ("returned", "raised"):
        raise SystemExit(1)
    host.tell(answer, got)


def serve(host: simhost.Host) -> None:
    """Answer the trusted side's frames until it closes the channel."""
    while True:
        try:
            header, arrays = simwire.read_frame(host.into)
        except simwire.ChannelClosed:
            return
        op = header["op"]
        if op == "load":
            _load(host, header["bundle"])
        elif op == "case":
            run_case(host, header)
        elif op == "call":
            _call(host, header, arrays)
        else:
            return


def main(confine: simhost.Confine | None = None) -> None:
    """Take the channel off fds 0 and 1 (so that nothing printed reaches it), then serve.
    ``confine`` (the sandbox's wall for a rank's process) is installed in every forked
    rank before it loads the learner's code."""
    into = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.setrecursionlimit(10_000)
    gc.freeze()
    serve(simhost.Host(into, out, confine))


if __name__ == "__main__":
    main()
