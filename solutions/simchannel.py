"""The trusted simulator: it runs the cluster and writes the log; the ranks run elsewhere.

The learner's rank functions run in another process (:mod:`solutions.simhost`, inside
bubblewrap where the caller provides it). This side keeps everything the grade depends
on: the step counter, every rank's inbox, the message log (with the step each message was
received and freed) and each rank's returned value. The two talk in frames
(:mod:`solutions.simwire`) over a pair of pipes, one rank step at a time::

    trusted                          ranks' process
    start r (its data) / run r  -->
                                <--  send dst + payload      (logged here, copied)
                                <--  recv src                (popped from r's inbox here)
    msg id + payload / refused  -->
                                <--  free id                 (the log's free step)
                                <--  yielded | returned value | raised text  (+ memory)

Every request is attributed to the rank this side told to run, checked (destination,
dtype, shape, sizes within the run's budget), and a broken rule ends the run with a
:class:`RunFailure` naming the rank and the step; what the other process says about it
is never believed. Memory: the ranks' process measures each step with a tracked allocator;
the figure is accepted only if it is at least what this side knows the rank must have
held (every buffer it received in that step), otherwise the run fails as tampered.
Time: a deadline per run; a process that misses it is killed.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

import numpy as np

from solutions import simwire
from solutions.simverify import Log, Sent

HOST_MODULES = ("simwire", "simbundle", "simhost")  # and simcollectives where labs allow it
BOOT = ("import sys; sys.path.insert(0, {code!r}); sys.dont_write_bytecode = True; "
        "from solutions import simhost; simhost.main()")
Wrap = Callable[[str, str], list[str]]   # (python, staged code folder) -> the command


@dataclass(frozen=True)
class RunFailure:
    """Why a run ended without a log: ``kind`` is "rule" (a simulator rule), "program"
    (the learner's code raised), "timeout", "memory" or "channel" (the process broke the
    channel or died)."""

    kind: str
    problem: str
    rank: int = -1
    step: int = -1


@cache
def stage_host_code(collectives: bool = True) -> str:
    """A private folder holding copies of the modules the ranks' process needs, as a
    ``solutions`` package of a few files: nothing else of the project (and no ring
    collectives for a lab that asks the learner to write them)."""
    stage = Path(tempfile.mkdtemp(prefix="wb-ranks-"))
    package = stage / "solutions"
    package.mkdir()
    (package / "__init__.py").write_text("")
    here = Path(__file__).parent
    for name in HOST_MODULES + (("simcollectives",) if collectives else ()):
        shutil.copyfile(here / f"{name}.py", package / f"{name}.py")
    for path in stage.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    stage.chmod(0o755)
    return str(stage)


def plain_command(python: str, code_dir: str) -> list[str]:
    """The unsandboxed command (``-I``: no user site, no environment variables)."""
    return [python, "-I", "-c", BOOT.format(code=code_dir)]


class _Reader:
    """Reads the other side's pipe with a deadline (``read`` as a file would)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.deadline, self.buffer = fd, 0.0, bytearray()

    def read(self, n: int) -> bytes:
        while not self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return b""
            self.buffer += chunk
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out


class Host:
    """A started ranks' process and its channel."""

    def __init__(self, command: list[str], memory_bytes: int = 4 << 30) -> None:
        def limits() -> None:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, preexec_fn=limits)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.writer: IO[bytes] = self.process.stdin
        self.reader = _Reader(self.process.stdout.fileno())

    def send(self, header: dict[str, Any], arrays: Sequence[np.ndarray] = ()) -> None:
        simwire.write_frame(self.writer, header, tuple(arrays))  # type: ignore[arg-type]

    def receive(self, max_bytes: int) -> tuple[dict[str, Any], list[np.ndarray]]:
        return simwire.read_frame(self.reader, max_bytes)  # type: ignore[arg-type]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


def start_host(bundle: Any, wrap: Wrap | None = None, time_limit_s: float = 10.0,
               collectives: bool = True) -> Host | RunFailure:
    """Start a ranks' process and load the learner's function into it."""
    host = Host((wrap or plain_command)(sys.executable, stage_host_code(collectives)))
    host.reader.deadline = time.monotonic() + max(time_limit_s, 5.0)
    try:
        host.send({"op": "load", "bundle": bundle})
        reply, _ = host.receive(0)
    except (TimeoutError, simwire.WireError, simwire.ChannelClosed, OSError) as error:
        host.close()
        return RunFailure("channel", f"the process running your code did not start "
                          f"({type(error).__name__})")
    if reply["op"] != "loaded":
        host.close()
        return RunFailure("program", f"your code could not be loaded: {reply.get('value')}")
    return host


class _Run:
    """One run's trusted state: inboxes, the log, results, memory, budgets."""

    def __init__(self, host: Host, data: Sequence[Any], budget_bytes: int,
                 track: bool) -> None:
        self.host, self.n, self.track = host, len(data), track
        self.data = list(data)
        self.step = 0
        self.log: list[list[Any]] = []   # [step, src, dst, recv_step, free_step, payload]
        self.pending: list[int] = []
        self.inbox: list[dict[int, deque[int]]] = [{} for _ in data]
        self.results: list[Any] = [None] * self.n
        self.memory: list[list[int]] = [[] for _ in data]
        self.received_now = [0] * self.n
        self.sent_bytes = [0] * self.n
        self.budget = budget_bytes
        self.failure: RunFailure | None = None

    def fail(self, kind: str, problem: str, rank: int) -> None:
        if self.failure is None:
            self.failure = RunFailure(kind, problem, rank, self.step)

    def where(self, rank: int) -> str:
        return f"rank {rank} at step {self.step}"

    def on_send(self, rank: int, header: dict[str, Any], arrays: list[np.ndarray]) -> None:
        dst = header.get("dst")
        if len(arrays) != 1:
            raise simwire.WireError("a send without exactly one payload")
        if isinstance(dst, bool) or not isinstance(dst, int) or not 0 <= dst < self.n \
                or dst == rank:
            self.fail("rule", f"{self.where(rank)}: send to {dst!r}; the destination must be "
                      f"another rank, 0..{self.n - 1}", rank)
            return
        payload = arrays[0]
        self.sent_bytes[rank] += payload.nbytes
        if self.sent_bytes[rank] > self.budget:
            self.fail("rule", f"{self.where(rank)} has sent {self.sent_bytes[rank]} bytes; "
                      f"this lab never needs more than {self.budget} from one rank", rank)
            return
        payload.flags.writeable = False
        self.log.append([self.step, rank, dst, -1, -1, payload])
        self.pending.append(len(self.log) - 1)

    def on_recv(self, rank: int, header: dict[str, Any]) -> None:
        src = header.get("src")
        queue = self.inbox[rank].get(src) if isinstance(src, int) else None
        if not queue:
            text = (f"{self.where(rank)}: recv({src!r}) but no message from rank {src!r} has "
                    "arrived. A message sent in step t can be received from step t+1 on, "
                    "after the `yield` that ends step t.")
            self.fail("rule", text, rank)
            self.host.send({"op": "refused", "error": text})
            return
        index = queue.popleft()
        entry = self.log[index]
        entry[3] = self.step
        self.received_now[rank] += entry[5].nbytes
        self.host.send({"op": "msg", "id": index}, (entry[5],))

    def on_free(self, rank: int, header: dict[str, Any]) -> None:
        index = header.get("id")
        ok = isinstance(index, int) and not isinstance(index, bool) and \
            0 <= index < len(self.log) and self.log[index][2] == rank and self.log[index][3] >= 0
        if not ok or self.log[index][4] >= 0:  # type: ignore[index]
            text = f"{self.where(rank)}: freed a buffer that it does not hold (freed twice?)"
            self.fail("rule", text, rank)
            self.host.send({"op": "refused", "error": text})
            return
        self.log[index][4] = self.step  # type: ignore[index]
        self.host.send({"op": "freed"})

    def serve(self, rank: int, opening: dict[str, Any], arrays: Sequence[np.ndarray]) -> str:
        """Tell ``rank`` to run one step and answer its requests until it yields, returns
        or raises; which one."""
        self.received_now[rank] = 0
        self.host.send(dict(opening, rank=rank, step=self.step), arrays)
        while True:
            header, got = self.host.receive(self.budget)
            op = header["op"]
            if op == "send":
                self.on_send(rank, header, got)
            elif op == "recv":
                self.on_recv(rank, header)
            elif op == "free":
                self.on_free(rank, header)
            elif op in ("yielded", "returned", "raised"):
                self.on_end(rank, op, header, got)
                return op
            else:
                raise simwire.WireError(f"an unknown request {op!r}")

    def on_end(self, rank: int, op: str, header: dict[str, Any],
               arrays: list[np.ndarray]) -> None:
        if op == "raised":
            if self.failure is None:
                self.fail("program", f"{self.where(rank)}: your program raised "
                          f"{str(header.get('value'))[:400]}", rank)
            return
        if self.track:
            self._account(rank, header.get("memory"))
        if op == "returned":
            self.results[rank] = simwire.from_tree(header.get("value"), arrays)

    def _account(self, rank: int, report: Any) -> None:
        held = report.get("held") if isinstance(report, dict) else None
        peak = report.get("peak") if isinstance(report, dict) else None
        if not isinstance(held, int) or not isinstance(peak, int) or isinstance(held, bool) \
                or isinstance(peak, bool) or peak < self.received_now[rank]:
            self.fail("memory", f"{self.where(rank)}: the memory measurement of your rank was "
                      "tampered with (it reports less than the buffers the rank received in "
                      "that step); leave the simulator's tracking alone", rank)
            return
        self.memory[rank].append(_nbytes(self.data[rank]) + max(held, peak, 0))

    def deliver(self) -> None:
        for index in self.pending:
            _, src, dst, *_ = self.log[index]
            self.inbox[dst].setdefault(src, deque()).append(index)
        self.pending = []

    def finish(self) -> Log:
        messages = tuple(Sent(k, s, src, dst, rs, fs, p)
                         for k, (s, src, dst, rs, fs, p) in enumerate(self.log))
        return Log(self.n, max(self.step, 1), tuple(_nbytes(d) for d in self.data), messages,
                   tuple(self.results), tuple(tuple(m) for m in self.memory))


def _nbytes(value: Any) -> int:
    """Bytes of the numpy arrays in ``value`` (an array, or a list/tuple/dict of them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    return 0


def run(host: Host, data: Sequence[Any], *, collectives: bool, track: bool = False,
        time_limit_s: float = 10.0, max_steps: int = 10_000,
        budget_bytes: int | None = None) -> Log | RunFailure:
    """Run the loaded program on ``len(data)`` ranks (rank r starts with ``data[r]``)."""
    total = sum(_nbytes(d) for d in data)
    state = _Run(host, data, budget_bytes or max(1 << 20, 8 * total), track)
    host.reader.deadline = time.monotonic() + time_limit_s
    try:
        host.send({"op": "case", "n": state.n, "collectives": collectives, "track": track})
        return _steps(state, max_steps)
    except TimeoutError:
        return RunFailure("timeout", f"your program did not finish within {time_limit_s:g} s "
                          "(an endless loop, or a rank that never returns?)", -1, state.step)
    except (simwire.WireError, simwire.ChannelClosed, OSError, KeyError, TypeError) as error:
        return RunFailure("channel", f"the process running your ranks broke the channel at "
                          f"step {state.step} ({type(error).__name__}: {str(error)[:200]}); it "
                          "may only talk through rank.send, rank.recv and rank.free",
                          -1, state.step)


def _steps(state: _Run, max_steps: int) -> Log | RunFailure:
    live: list[int] = []
    for rank in range(state.n):
        arrays: list[np.ndarray] = []
        tree = simwire.to_tree(state.data[rank], arrays)
        if state.serve(rank, {"op": "start", "data": tree}, arrays) == "yielded":
            live.append(rank)
        if state.failure:
            return state.failure
    while live:
        state.deliver()
        state.step += 1
        if state.step > max_steps:
            return RunFailure("rule", f"the program ran more than {max_steps} steps (an "
                              "endless loop?)", -1, state.step)
        for rank in list(live):
            if state.serve(rank, {"op": "run"}, ()) != "yielded":
                live.remove(rank)
            if state.failure:
                return state.failure
    state.deliver()
    return state.finish()


def call(host: Host, args: Sequence[Any], time_limit_s: float = 10.0) -> Any | RunFailure:
    """Call the loaded function with ``args``; its value (arrays as arrays)."""
    host.reader.deadline = time.monotonic() + time_limit_s
    try:
        arrays: list[np.ndarray] = []
        host.send({"op": "call", "args": simwire.to_tree(list(args), arrays)}, arrays)
        header, got = host.receive(64 << 20)
    except TimeoutError:
        return RunFailure("timeout", f"your function did not return within {time_limit_s:g} s")
    except (simwire.WireError, simwire.ChannelClosed, OSError) as error:
        return RunFailure("channel", f"the process running your function broke the channel "
                          f"({type(error).__name__}: {str(error)[:200]})")
    if header["op"] == "raised":
        return RunFailure("program", f"your function raised {str(header.get('value'))[:400]}")
    if header["op"] != "returned":
        return RunFailure("channel", "the process running your function answered out of turn")
    return simwire.from_tree(header.get("value"), got)
