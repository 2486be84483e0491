"""The trusted simulator: it runs the cluster and writes the log; the ranks run elsewhere.

The learner's rank functions run in other processes, one per rank, forked by the ranks'
process (:mod:`solutions.sim.host`, inside bubblewrap where the caller provides it). This
side keeps everything the grade depends on: the step counter, every rank's inbox, the
message log (with the step each message was received and freed), each rank's returned
value and its memory. It talks to the ranks' process in frames (:mod:`solutions.sim.wire`)
over a pair of pipes. A case goes over as its header (the ranks' process forks the ranks
and says ``forked``), then one frame of data per rank; the ranks' process then runs the
steps and streams one answer per step, which this side reads and applies in order (no
round trip per step)::

    trusted                                    ranks' process
    case: cluster size, the run's bounds    -->  forks one process per rank
                                           <--  forked
    data, one frame per rank                -->  each to its rank's process
                                           <--  step t, per rank in order: send dst +
                                                payload, recv src -> message id, free id;
                                                then yielded | returned value | raised
                                                text, and the memory it was measured at;
                                                whether this step is the last

Every request is checked here (the destination; the dtype, shape and size of a payload
within the run's budget; that a receive takes the oldest arrived message from that
source; that a freed buffer was received and not yet freed) and applied in rank order, so
the log is what the simulator's rules make of the requests, written only here; a broken
rule ends the run with a :class:`RunFailure` naming the rank and the step. The other side
keeps the arrived messages as this side does, only so that the ids it hands out match (a
claim of any other message breaks the channel); it stops where this side's rules end the
run, and a process that does not (its last frame not where the run ended), or that says
one of its ranks broke its channel (``spent``), is not used again. Memory: what the kernel
counts for each rank's process at the end of each step (measured by the ranks' process,
where no learner code runs; a message that arrived and is not yet received is in its
destination's process, and counts there), plus the messages the rank sent in that step:
a message in flight is its sender's, so no data rests uncounted between steps. Time: a
deadline per run; a process that misses it is killed.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from solutions.sim import wire as simwire
from solutions.sim.process import Cause, Host, RunFailure
from solutions.sim.verify import Log, Sent
from solutions.sim.wire import array_bytes


class _Run:
    """One run's trusted state: inboxes, the log, results, memory, budgets."""

    def __init__(self, host: Host, data: Sequence[Any], budget_bytes: int,
                 track: bool) -> None:
        self.host, self.n, self.track = host, len(data), track
        self.data_bytes = [array_bytes(d) for d in data]
        self.step = 0
        self.log: list[list[Any]] = []   # [step, src, dst, recv_step, free_step, payload]
        self.pending: list[int] = []
        self.inbox: list[dict[int, deque[int]]] = [{} for _ in data]
        self.results: list[Any] = [None] * self.n
        self.memory: list[list[int]] = [[] for _ in data]
        self.in_flight = [0] * self.n    # bytes each rank sent in this step
        self.held: dict[int, int] = {}   # this step's kernel figure per rank
        self.sent_bytes = [0] * self.n
        self.budget = budget_bytes
        self.failure: RunFailure | None = None
        self.spent = False   # the other side says a rank's process broke its channel

    def fail(self, cause: Cause, problem: str, rank: int) -> None:
        if self.failure is None:
            self.failure = RunFailure(cause, problem, rank, self.step)

    def where(self, rank: int) -> str:
        return f"rank {rank} at step {self.step}"

    def on_send(self, rank: int, dst: Any, payload: np.ndarray) -> None:
        if isinstance(dst, bool) or not isinstance(dst, int) or not 0 <= dst < self.n \
                or dst == rank:
            self.fail("rule", f"{self.where(rank)}: send to {dst!r}; the destination must be "
                      f"another rank, 0..{self.n - 1}", rank)
            return
        self.sent_bytes[rank] += payload.nbytes
        if self.sent_bytes[rank] > self.budget:
            self.fail("rule", f"{self.where(rank)} has sent {self.sent_bytes[rank]} bytes; "
                      f"this lab never needs more than {self.budget} from one rank", rank)
            return
        payload.flags.writeable = False
        self.in_flight[rank] += payload.nbytes
        self.log.append([self.step, rank, dst, -1, -1, payload])
        self.pending.append(len(self.log) - 1)

    def on_recv(self, rank: int, src: Any, index: Any) -> None:
        queue = self.inbox[rank].get(src) if isinstance(src, int) else None
        if index == -1 or not queue:
            self.fail("rule", f"{self.where(rank)}: recv({src!r}) but no message from rank "
                      f"{src!r} has arrived. A message sent in step t can be received from "
                      "step t+1 on, after the `yield` that ends step t.", rank)
            return
        if queue[0] != index:
            raise simwire.WireError(f"rank {rank} claimed message {index!r}, not the oldest "
                                    f"from rank {src}")
        queue.popleft()
        entry = self.log[index]
        entry[3] = self.step

    def on_free(self, rank: int, index: Any) -> None:
        ok = isinstance(index, int) and not isinstance(index, bool) and \
            0 <= index < len(self.log) and self.log[index][2] == rank and \
            self.log[index][3] >= 0 and self.log[index][4] < 0
        if not ok:
            self.fail("rule", f"{self.where(rank)}: freed a buffer that it does not hold "
                      "(freed twice?)", rank)
            return
        self.log[index][4] = self.step

    def apply_step(self, live: list[int]) -> tuple[list[int], bool]:
        """Read the answer of the step of every rank of ``live`` and apply what each did, in
        rank order; return the ranks still running and whether the other side says the
        step was its last. The frame is laid out as :mod:`solutions.sim.wire` says."""
        answer, got = self.host.receive(self.budget * len(live) + (64 << 20))
        values, raised, last = answer.get("values"), answer.get("raised"), answer.get("last")
        if answer["op"] != "stepped" or not isinstance(values, dict) or \
                not isinstance(raised, dict) or not isinstance(last, bool):
            raise simwire.WireError("an answer that is not the step asked for")
        if answer.get("spent"):
            self.spent = True
        records = simwire.step_answer(got, live)
        payloads = got[1:]
        still = []
        self.held, self.in_flight = {}, [0] * self.n
        for rank, (outcome, held, peak, ops) in zip(live, records, strict=True):
            self.apply(rank, ops, payloads)
            if self.failure:
                return [], last
            self.on_end(rank, outcome, (held, peak), values, raised, payloads)
            if self.failure:
                return [], last
            if outcome == simwire.YIELDED:
                still.append(rank)
        for rank, held in self.held.items():
            self.memory[rank].append(held + self.in_flight[rank])
        return still, last

    def apply(self, rank: int, ops: list[int], payloads: list[np.ndarray]) -> None:
        """Apply one rank's requests of this step, in order (kind, a, b each)."""
        for k in range(0, len(ops), 3):
            kind, a, b = ops[k:k + 3]
            if kind == 0:
                if not 0 <= b < len(payloads):
                    raise simwire.WireError("a send without its payload")
                self.on_send(rank, a, payloads[b])
            elif kind == 1:
                self.on_recv(rank, a, b)
            elif kind == 2:
                self.on_free(rank, a)
            else:
                raise simwire.WireError(f"an unknown request {kind!r}")
            if self.failure:
                return

    def on_end(self, rank: int, outcome: int, memory: tuple[int, int], values: dict[str, Any],
               raised: dict[str, Any], payloads: list[np.ndarray]) -> None:
        """How the step of ``rank`` ended: a raised error fails the run; otherwise its
        memory is accounted and a returned value kept."""
        if outcome == simwire.RAISED:
            text, where = str(raised.get(str(rank)))[:400], f"{self.where(rank)}: "
            self.fail("program", text if text.startswith(where) else where + text, rank)
            return
        if self.track:
            self._account(rank, *memory)
        if outcome == simwire.RETURNED:
            self.results[rank] = simwire.from_tree(values.get(str(rank)), payloads)

    def _account(self, rank: int, held: int, peak: int) -> None:
        self.held[rank] = max(held, peak, 0)

    def deliver(self) -> None:
        for index in self.pending:
            _, src, dst, *_ = self.log[index]
            self.inbox[dst].setdefault(src, deque()).append(index)
        self.pending = []

    def finish(self) -> Log:
        messages = tuple(Sent(k, s, src, dst, rs, fs, p)
                         for k, (s, src, dst, rs, fs, p) in enumerate(self.log))
        return Log(self.n, max(self.step, 1), tuple(self.data_bytes), messages,
                   tuple(self.results), tuple(tuple(m) for m in self.memory))


def run(host: Host, data: Sequence[Any], *, collectives: bool, track: bool = False,
        time_limit_s: float = 10.0, max_steps: int = 10_000,
        budget_bytes: int | None = None) -> Log | RunFailure:
    """Run the loaded program on ``len(data)`` ranks (rank r starts with ``data[r]``). A
    run that leaves the other side mid-case (a time-out, a broken channel, a last frame
    not where the run ended) sets ``host.in_sync`` to False: that process is done."""
    total = sum(array_bytes(d) for d in data)
    state = _Run(host, data, budget_bytes or max(1 << 20, 8 * total), track)
    host.reader.deadline = time.monotonic() + time_limit_s
    try:
        host.send({"op": "case", "n": state.n, "collectives": collectives, "track": track,
                   "budget": state.budget, "max_steps": max_steps})
        forked, _ = host.receive(0)
        if forked.get("op") != "forked":
            raise simwire.WireError("the ranks' process did not start the case")
        for rank_data in data:
            arrays: list[np.ndarray] = []
            host.send({"op": "data", "data": simwire.to_tree(rank_data, arrays)}, arrays)
        result = _steps(state, max_steps)
        if state.spent:
            host.in_sync = False
        return result
    except TimeoutError:
        host.in_sync = False
        return RunFailure("timeout", f"your program did not finish within {time_limit_s:g} s "
                          "(an endless loop, or a rank that never returns?)", -1, state.step)
    except (simwire.WireError, simwire.ChannelClosed, OSError, KeyError, TypeError) as error:
        host.in_sync = False
        return RunFailure("channel", f"the process running your ranks broke the channel at "
                          f"step {state.step} ({type(error).__name__}: {str(error)[:200]}); it "
                          "may only talk through rank.send, rank.recv and rank.free",
                          -1, state.step)


def _steps(state: _Run, max_steps: int) -> Log | RunFailure:
    live = list(range(state.n))
    while True:
        live, last = state.apply_step(live)
        if state.failure:
            state.host.in_sync = last
            return state.failure
        state.deliver()
        if not live:
            if not last:
                raise simwire.WireError("the run ended but the other side goes on")
            return state.finish()
        state.step += 1
        if state.step > max_steps:
            state.host.in_sync = last
            return RunFailure("rule", f"the program ran more than {max_steps} steps (an "
                              "endless loop?)", -1, state.step)
        if last:
            raise simwire.WireError("the other side stopped before the run ended")


def call(host: Host, args: Sequence[Any], time_limit_s: float = 10.0) -> Any | RunFailure:
    """Call the loaded function with ``args``; its value (arrays as arrays). A time-out or
    a broken channel sets ``host.in_sync`` to False, as :func:`run` does."""
    host.reader.deadline = time.monotonic() + time_limit_s
    try:
        arrays: list[np.ndarray] = []
        host.send({"op": "call", "args": simwire.to_tree(list(args), arrays)}, arrays)
        header, got = host.receive(64 << 20)
    except TimeoutError:
        host.in_sync = False
        return RunFailure("timeout", f"your function did not return within {time_limit_s:g} s")
    except (simwire.WireError, simwire.ChannelClosed, OSError) as error:
        host.in_sync = False
        return RunFailure("channel", f"the process running your function broke the channel "
                          f"({type(error).__name__}: {str(error)[:200]})")
    if header["op"] == "raised":
        return RunFailure("program", str(header.get("value"))[:400])
    if header["op"] != "returned":
        host.in_sync = False
        return RunFailure("channel", "the process running your function answered out of turn")
    return simwire.from_tree(header.get("value"), got)
