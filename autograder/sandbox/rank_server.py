"""The warm ranks' server: one process per batch that forks a confined ranks' process per lab run.

A lab's ranks (the learner's rank functions) run in a process of their own while the trusted
simulator, in the grader, keeps the log (:mod:`solutions.sim.channel`). Starting that process
afresh for every lab costs bubblewrap, an interpreter and numpy: about 0.15 s of CPU, more
than the lab's whole run. This server pays it once: started inside bubblewrap by
:mod:`autograder.sandbox.rank_client` (as ``nobody``, no capabilities, no new namespaces,
everything read-only, ``/tmp`` included), it imports what the ranks' process needs (numpy,
the wire: module names its caller gives, this package knows nothing of the labs), then for
each request forks a child that becomes one ranks' process (:func:`become_ranks`) and
runs the caller's entry function:

* its channel on fds 0 and 1 (two pipes the grader passed over the server's socket), stderr
  to /dev/null, every other descriptor closed (the server's socket too);
* its own session, killed with the server, an address-space and a CPU-time limit, and not
  dumpable (no other process of the same user may read its memory or its /proc entries);
* the seccomp wall of :func:`autograder.sandbox.seccomp.confine_ranks`: no signal to
  anyone, no ptrace, no socket, no System V or POSIX IPC, no namespace. Nothing is
  writable. The child may fork (the ranks' process forks one process per rank); it is
  handed the full wall, no process or thread either, to install in each process it forks
  before that runs the learner's code. So a child can neither leave anything for the
  next learner's child nor reach a sibling that runs beside it.

The protocol is one datagram each way on a ``SOCK_SEQPACKET`` socket: ``{"op": "spawn",
"memory_bytes": M, "cpu_s": S}`` with two descriptors -> ``{"pid": P}``; ``{"op": "kill",
"pid": P}`` -> ``{"killed": bool}`` (only a child of this server that has not been reaped:
a process id is never reused before its zombie is reaped, so a kill never meets another
learner's process). The server stops when the socket closes.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import resource
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from autograder.sandbox import limits, seccomp, world

MAX_REQUEST = 4096
EXIT_UNCONFINED = 71   # the child could not wall itself in; it runs nothing
EXIT_CRASHED = 70


def become_ranks(into: int, out: int, memory_bytes: int, cpu_s: int, server: int) -> None:
    """In the forked child: the channel on fds 0/1, everything else closed, limits, the
    wall. Exits (never returns) if any of it fails."""
    try:
        os.setsid()
        os.dup2(into, 0)
        os.dup2(out, 1)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        limits.die_with_parent()
        world.set_dumpable(True)  # its /proc files its own, to raise its score; off below
        world.first_to_go()
        if os.getppid() != server:  # the server ended between fork and here
            os._exit(EXIT_UNCONFINED)
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        world.set_dumpable(False)
        if seccomp.confine_ranks(may_fork=True) is not None and seccomp.supported():
            os._exit(EXIT_UNCONFINED)
    except BaseException:  # noqa: B036 - a child that is not walled in runs nothing
        os._exit(EXIT_UNCONFINED)


def _spawn(request: dict[str, Any], fds: list[int], live: set[int],
           entry: Callable[..., object]) -> dict[str, Any]:
    if len(fds) != 2:
        return {"error": f"spawn needs two descriptors, got {len(fds)}"}
    memory = int(request.get("memory_bytes", 4 << 30))
    cpu_s = max(1, int(request.get("cpu_s", 300)))
    limit = limits.address_space_bytes() + max(memory, 1 << 20)
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        become_ranks(fds[0], fds[1], limit, cpu_s, server)
        try:
            entry(seccomp.confine_ranks)
        except BaseException:  # noqa: B036 - whatever happened, leave without a trace
            os._exit(EXIT_CRASHED)
        os._exit(0)
    live.add(pid)
    return {"pid": pid}


def _kill(request: dict[str, Any], live: set[int]) -> dict[str, Any]:
    pid = request.get("pid")
    if not isinstance(pid, int) or pid not in live:
        return {"killed": False}
    os.kill(pid, signal.SIGKILL)
    return {"killed": True}


def reap(live: set[int]) -> None:
    """Reap every child that has ended (only then may its process id be used again)."""
    while live:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            live.clear()
            return
        if pid == 0:
            return
        live.discard(pid)


def serve(channel: socket.socket, entry: Callable[..., object]) -> None:
    """Answer requests until the socket closes; each child runs ``entry(confine)``, where
    ``confine`` walls in a process the child forks (the ranks' process forks one per rank)."""
    live: set[int] = set()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(channel, MAX_REQUEST, 2)
        except OSError:
            return
        if not data:
            return
        reap(live)
        try:
            request = json.loads(data)
            op = request.get("op") if isinstance(request, dict) else None
            reply = (_spawn(request, fds, live, entry) if op == "spawn" else _kill(request, live)
                     if op == "kill" else {"error": f"unknown request {op!r}"})
        except (ValueError, TypeError, OSError) as error:
            reply = {"error": f"{type(error).__name__}: {error}"}
        finally:
            for fd in fds:
                os.close(fd)
        channel.send(json.dumps(reply).encode())


def main(fd: int, warm: list[str], entry: str) -> None:
    """Import ``warm`` (modules, e.g. numpy's users) and ``entry`` ("module:function", what
    each child runs), say ready, then serve."""
    for name in warm:
        importlib.import_module(name)
    module, _, function = entry.partition(":")
    run = getattr(importlib.import_module(module), function)
    world.set_dumpable(False)  # no child may read this process
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdout = sys.stderr
    gc.freeze()  # what is imported now is never copied on write by a child's collector
    channel = socket.socket(fileno=fd)
    channel.send(json.dumps({"ready": os.getpid()}).encode())
    serve(channel, run)
