"""The trusted simulator: it runs the cluster and writes the log; the ranks run elsewhere.

The learner's rank functions run in another process (:mod:`solutions.sim.host`, inside
bubblewrap where the caller provides it). This side keeps everything the grade depends
on: the step counter, every rank's inbox, the message log (with the step each message was
received and freed), each rank's returned value and its memory. The two talk in frames
(:mod:`solutions.sim.wire`) over a pair of pipes, one frame each way per step::

    trusted                                    ranks' process
    step t: for each live rank, the messages -->
      that have arrived for it (and its data
      at step 0), copied
                                           <--  per rank, in order: send dst + payload,
                                                recv src -> message id, free id; then
                                                yielded | returned value | raised text,
                                                and the memory the step measured

Every request is checked here (the destination; the dtype, shape and size of a payload
within the run's budget; that a receive takes the oldest arrived message from that
source; that a freed buffer was received and not yet freed) and applied in rank order, so
the log is what the simulator's rules make of the requests, written only here; a broken
rule ends the run with a :class:`RunFailure` naming the rank and the step. Messages not
received in a step are dropped over there and offered again next step. Memory: the ranks'
process measures each step with a tracked allocator; the figure is accepted only if its
peak is at least what this side knows the rank received in that step, otherwise the run
fails as tampered. Time: a deadline per run; a process that misses it is killed.

All ranks share the one ranks' process, so one rank's code can reach another's data
there; that is why the labs' verifiers check content (provenance of every number, real
shards, no empty sums), never trusting that a rank kept to its own data.
"""

from __future__ import annotations

import atexit
import os
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from queue import Queue
from typing import IO, Any, Protocol

import numpy as np

from solutions.sim import wire as simwire
from solutions.sim.verify import Log, Sent
from solutions.sim.wire import array_bytes

HOST_MODULES = ("wire", "bundle", "host")  # of solutions.sim; and collectives where allowed
BOOT = ("import sys; sys.path.insert(0, {code!r}); sys.dont_write_bytecode = True; "
        "from solutions.sim import host; host.main()")
# The ranks run one after another: numpy's BLAS needs no thread per core (starting them
# costs about 0.1 s of CPU per process). A sandbox's own environment says the same.
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass(frozen=True)
class RunFailure:
    """Why a run ended without a log: ``kind`` is "rule" (a simulator rule), "program"
    (the learner's code raised), "timeout", "memory" or "channel" (the process broke the
    channel or died)."""

    kind: str
    problem: str
    rank: int = -1
    step: int = -1


_STAGES: dict[bool, str] = {}
_LOCK = threading.Lock()


def stage_host_code(collectives: bool = True) -> str:
    """A private folder holding copies of the modules the ranks' process needs, as a
    ``solutions.sim`` package of a few files: nothing else of the project (and no ring
    collectives for a lab that asks the learner to write them). One per process and kind,
    removed when the process exits (:func:`cleanup`)."""
    with _LOCK:
        if collectives not in _STAGES:
            _STAGES[collectives] = _stage(collectives)
        return _STAGES[collectives]


def _stage(collectives: bool) -> str:
    stage = Path(tempfile.mkdtemp(prefix="wb-ranks-"))
    try:
        package = stage / "solutions" / "sim"
        package.mkdir(parents=True)
        for folder in (package.parent, package):
            (folder / "__init__.py").write_text("")
        here = Path(__file__).parent
        for name in HOST_MODULES + (("collectives",) if collectives else ()):
            shutil.copyfile(here / f"{name}.py", package / f"{name}.py")
        for path in stage.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        stage.chmod(0o755)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return str(stage)


def cleanup() -> None:
    """End every warm ranks' process and remove the staged folders (run at exit)."""
    with _LOCK:
        spares = [host for queue in _SPARES.values() for host in queue]
        _SPARES.clear()
        stages = list(_STAGES.values())
        _STAGES.clear()
    for host in spares:
        host.close()
    for stage in stages:
        shutil.rmtree(stage, ignore_errors=True)


def plain_command(python: str, code_dir: str) -> list[str]:
    """The unsandboxed command (``-I``: no user site, no environment variables)."""
    return [python, "-I", "-c", BOOT.format(code=code_dir)]


class _Reader:
    """Reads the other side's pipe with a deadline (``read`` as a file would)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.deadline = fd, 0.0
        self.buffer, self.at = memoryview(b""), 0

    def read(self, n: int) -> memoryview:
        if self.at >= len(self.buffer):
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError
            self.buffer, self.at = memoryview(os.read(self.fd, max(n, 1 << 20))), 0
            if not self.buffer:
                return self.buffer
        out = self.buffer[self.at:self.at + n]
        self.at += len(out)
        return out


def _widen(fd: int, size: int = 1 << 20) -> None:
    """A bigger pipe buffer (Linux ``F_SETPIPE_SZ``), so that a 16 KB payload and the
    frames around it never wait for the other side to read; a no-op where refused."""
    try:
        import fcntl
        fcntl.fcntl(fd, 1031, size)
    except (OSError, ImportError):
        pass


class Process(Protocol):
    """A started ranks' process as the channel sees it: the pipe to its stdin, the fd of
    the pipe from its stdout, ``poll()`` (None while it may run) and ``kill()`` (which
    also reaps it and closes this side)."""

    stdin: IO[bytes]
    stdout_fd: int

    def poll(self) -> int | None: ...

    def kill(self) -> None: ...


# (python, staged code folder, modules to import ahead, "module:function" to run) -> a
# process forked from a warm server (the batch grader's sandbox provides one)
Launch = Callable[[str, str, tuple[str, ...], str], Process]
WARM = ("numpy", "solutions.sim.host")
ENTRY = "solutions.sim.host:main"


class Popened:
    """A ranks' process started from a command line, a child of this process."""

    def __init__(self, command: list[str], memory_bytes: int = 4 << 30) -> None:
        def limits() -> None:  # no imports here: other threads may hold the import lock
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        self.popen = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, preexec_fn=limits,
                                      env={**os.environ, **ONE_THREAD})
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.stdin: IO[bytes] = self.popen.stdin
        self.stdout_fd = self.popen.stdout.fileno()
        self.pid = self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class Host:
    """A started ranks' process and its channel."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.writer: IO[bytes] = process.stdin
        self.reader = _Reader(process.stdout_fd)
        for fd in (process.stdin.fileno(), process.stdout_fd):
            _widen(fd)

    def send(self, header: dict[str, Any], arrays: Sequence[np.ndarray] = ()) -> None:
        simwire.write_frame(self.writer, header, tuple(arrays))  # type: ignore[arg-type]

    def receive(self, max_bytes: int) -> tuple[dict[str, Any], list[np.ndarray]]:
        return simwire.read_frame(self.reader, max_bytes)  # type: ignore[arg-type]

    def close(self) -> None:
        self.process.kill()


# Warm ranks' processes: started ahead (interpreter, numpy and the channel's modules
# loaded), each waiting for its first frame. Each is handed out once, for one learner's
# function, and closed after it: no process ever runs two learners' code.
_SPARES: dict[tuple[str, ...], deque[Host]] = {}
_WARM = [0]   # how many to keep ready per command; 0 (the default) keeps none


def keep_warm(count: int) -> None:
    """Keep ``count`` fresh ranks' processes started ahead per command (a batch grader
    calls this once; a single check does not need it)."""
    if count < 0:
        raise ValueError(f"keep_warm needs a count >= 0, not {count}")
    _WARM[0] = count


def _fresh(command: list[str]) -> Host:
    """A never-used ranks' process for ``command``: a warm one if ready, else a new one;
    then start its replacement."""
    key = tuple(command)
    with _LOCK:
        queue = _SPARES.setdefault(key, deque())
        host = queue.popleft() if queue else None
    while host is not None and host.process.poll() is not None:  # died while waiting
        host.close()
        with _LOCK:
            host = queue.popleft() if queue else None
    if host is None:
        host = _SPAWNER.start(command)
    with _LOCK:
        missing = _WARM[0] - len(queue)
    for _ in range(max(missing, 0)):
        spare = _SPAWNER.start(command)
        with _LOCK:
            queue.append(spare)
    return host


class _Spawner:
    """Starts every ranks' process from one thread that lives as long as this process:
    bubblewrap's ``--die-with-parent`` ends a process when the *thread* that started it
    ends, and the graders start hosts from short-lived threads."""

    def __init__(self) -> None:
        self.requests: Queue[tuple[list[str], Queue[Host | BaseException]]] = Queue()
        self.thread: threading.Thread | None = None

    def start(self, command: list[str]) -> Host:
        with _LOCK:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._serve, name="rank-hosts",
                                               daemon=True)
                self.thread.start()
        answer: Queue[Host | BaseException] = Queue(1)
        self.requests.put((command, answer))
        started = answer.get()
        if isinstance(started, BaseException):
            raise started
        return started

    def _serve(self) -> None:
        while True:
            command, answer = self.requests.get()
            try:
                answer.put(Host(Popened(command)))
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                answer.put(error)


_SPAWNER = _Spawner()


def start_host(bundle: Any, launch: Launch | None = None, time_limit_s: float = 10.0,
               collectives: bool = True) -> Host | RunFailure:
    """Start a ranks' process and load the learner's function into it: forked by
    ``launch`` where given (a sandbox's warm server), else started plainly (or taken warm,
    never used, when :func:`keep_warm` asked for spares)."""
    code = stage_host_code(collectives)
    if launch is None:
        host = _fresh(plain_command(sys.executable, code))
    else:
        warm = WARM + (("solutions.sim.collectives",) if collectives else ())
        try:
            host = Host(launch(sys.executable, code, warm, ENTRY))
        except OSError as error:
            return RunFailure("channel", f"the process running your code did not start "
                              f"({error})")
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


atexit.register(cleanup)


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
        self.received_now[rank] += entry[5].nbytes

    def on_free(self, rank: int, index: Any) -> None:
        ok = isinstance(index, int) and not isinstance(index, bool) and \
            0 <= index < len(self.log) and self.log[index][2] == rank and \
            self.log[index][3] >= 0 and self.log[index][4] < 0
        if not ok:
            self.fail("rule", f"{self.where(rank)}: freed a buffer that it does not hold "
                      "(freed twice?)", rank)
            return
        self.log[index][4] = self.step

    def arrived(self, rank: int) -> tuple[list[list[int]], list[np.ndarray]]:
        """Every message that has arrived for ``rank`` and that it has not received yet,
        oldest first per source: what its step may receive."""
        listed = [[index, src] for src, queue in sorted(self.inbox[rank].items())
                  for index in queue]
        return listed, [self.log[index][5] for index, _ in listed]

    def run_step(self, live: list[int], starting: bool) -> list[int]:
        """Run every rank of ``live`` for one step (each with the messages it may receive,
        and its data when ``starting``), apply what each did in rank order, and return the
        ranks still running."""
        entries: list[dict[str, Any]] = []
        arrays: list[np.ndarray] = []
        for rank in live:
            self.received_now[rank] = 0
            listed, payloads = self.arrived(rank)
            entry: dict[str, Any] = {"rank": rank, "first": len(arrays), "inbox": listed}
            arrays += payloads
            if starting:
                own: list[np.ndarray] = []
                entry["data"] = simwire.to_tree(self.data[rank], own)
                arrays += own
            entries.append(entry)
        self.host.send({"op": "step", "step": self.step, "ranks": entries}, arrays)
        header, got = self.host.receive(self.budget * len(live) + (64 << 20))
        records = header.get("ranks")
        if header["op"] != "stepped" or not isinstance(records, list) or \
                [r.get("rank") if isinstance(r, dict) else None for r in records] != live:
            raise simwire.WireError("an answer that is not the step asked for")
        still = []
        for rank, record in zip(live, records, strict=True):
            outcome = self.apply(rank, record, got)
            if self.failure:
                return []
            if outcome == "yielded":
                still.append(rank)
        return still

    def apply(self, rank: int, record: dict[str, Any], got: list[np.ndarray]) -> str:
        """Apply one rank's requests of this step, in order; how its step ended."""
        op, ops = record.get("outcome"), record.get("ops")
        if op not in ("yielded", "returned", "raised") or not isinstance(ops, list):
            raise simwire.WireError(f"an unknown answer {op!r}")
        for item in ops:
            if not isinstance(item, list) or len(item) != 3:
                raise simwire.WireError("a malformed request")
            kind, a, b = item
            if kind == 0:
                if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < len(got):
                    raise simwire.WireError("a send without its payload")
                self.on_send(rank, a, got[b])
            elif kind == 1:
                self.on_recv(rank, a, b)
            elif kind == 2:
                self.on_free(rank, a)
            else:
                raise simwire.WireError(f"an unknown request {kind!r}")
            if self.failure:
                return "raised"
        self.on_end(rank, str(op), record, got)
        return str(op)

    def on_end(self, rank: int, op: str, header: dict[str, Any],
               arrays: list[np.ndarray]) -> None:
        if op == "raised":
            if self.failure is None:  # the ranks' own refusals already say where
                text, where = str(header.get("value"))[:400], f"{self.where(rank)}: "
                self.fail("program", text if text.startswith(where) else where + text, rank)
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
        self.memory[rank].append(array_bytes(self.data[rank]) + max(held, peak, 0))

    def deliver(self) -> None:
        for index in self.pending:
            _, src, dst, *_ = self.log[index]
            self.inbox[dst].setdefault(src, deque()).append(index)
        self.pending = []

    def finish(self) -> Log:
        messages = tuple(Sent(k, s, src, dst, rs, fs, p)
                         for k, (s, src, dst, rs, fs, p) in enumerate(self.log))
        return Log(self.n, max(self.step, 1), tuple(array_bytes(d) for d in self.data), messages,
                   tuple(self.results), tuple(tuple(m) for m in self.memory))


def run(host: Host, data: Sequence[Any], *, collectives: bool, track: bool = False,
        time_limit_s: float = 10.0, max_steps: int = 10_000,
        budget_bytes: int | None = None) -> Log | RunFailure:
    """Run the loaded program on ``len(data)`` ranks (rank r starts with ``data[r]``)."""
    total = sum(array_bytes(d) for d in data)
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
    live = state.run_step(list(range(state.n)), starting=True)
    while live and not state.failure:
        state.deliver()
        state.step += 1
        if state.step > max_steps:
            return RunFailure("rule", f"the program ran more than {max_steps} steps (an "
                              "endless loop?)", -1, state.step)
        live = state.run_step(live, starting=False)
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
        return RunFailure("program", str(header.get("value"))[:400])
    if header["op"] != "returned":
        return RunFailure("channel", "the process running your function answered out of turn")
    return simwire.from_tree(header.get("value"), got)
