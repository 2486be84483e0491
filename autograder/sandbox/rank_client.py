"""The grader's side of the warm ranks' server: start it once, fork a ranks' process per lab run.

:func:`launch` is what a lab's trusted simulator calls for a fresh ranks' process
(:mod:`solutions.sim.channel`): ``launch(python, code_dir, warm, entry)`` gives a
:class:`ForkedProcess` whose fds are the two ends of the channel. Behind it, one
:class:`RankServer` per (interpreter, staged code, entry) runs inside bubblewrap
(:func:`autograder.sandbox.bwrap.command` with ``as_nobody``) and forks each process from
an interpreter that has numpy loaded already (:mod:`autograder.sandbox.rank_server` says
what walls each child gets). A process costs a fork and two pipes instead of bubblewrap,
an interpreter and numpy.

The server lives as long as its socket: when the grader ends (even killed), the socket
closes, the server returns, and as the first process of its PID namespace it takes every
child with it. :func:`close_all` ends the servers and removes their staged folders (run at
exit).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import threading
from typing import IO

from autograder.sandbox import bwrap

BOOT = ("import sys; sys.path.insert(0, {code!r}); sys.dont_write_bytecode = True; "
        "from autograder.sandbox.rank_server import main; "
        "main(int(sys.argv[1]), sys.argv[2].split(','), sys.argv[3])")
MAX_REPLY = 4096
START_S = 60.0          # for the server's hello (an interpreter and numpy on a busy machine)
REPLY_S = 30.0          # for a fork


class ServerFailed(OSError):
    """The ranks' server could not start, or stopped answering."""


class ForkedProcess:
    """One ranks' process, forked by a :class:`RankServer`: the channel's two ends here,
    and a kill that goes through the server (the process is not a child of this one)."""

    def __init__(self, server: RankServer, pid: int, stdin: IO[bytes], stdout_fd: int) -> None:
        self.server, self.pid = server, pid
        self.stdin, self.stdout_fd = stdin, stdout_fd
        self.ended: int | None = None

    def poll(self) -> int | None:
        """None while it may run; it is never reused, so a warm spare is never needed."""
        return self.ended

    def kill(self) -> None:
        """Stop it (through the server) and close this side of the channel."""
        if self.ended is not None:
            return
        self.ended = -9
        for close in (self.stdin.close, lambda: os.close(self.stdout_fd)):
            try:
                close()
            except OSError:
                pass
        self.server.kill(self.pid)


class RankServer:
    """A started ranks' server and the socket to it."""

    def __init__(self, python: str, code_dir: str, warm: tuple[str, ...], entry: str) -> None:
        self.stage = bwrap.stage_sandbox_code()
        self.lock = threading.Lock()
        try:
            shutil.copytree(code_dir, self.stage, dirs_exist_ok=True)
            for root, dirs, files in os.walk(self.stage):
                for name in dirs + files:
                    os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            argv = [*bwrap.command(python, self.stage, as_nobody=True), "-I", "-c",
                    BOOT.format(code=bwrap.SANDBOX_CODE), str(theirs.fileno()),
                    ",".join(warm), entry]
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                            pass_fds=(theirs.fileno(),))
            theirs.close()
            self.socket = ours
            self.socket.settimeout(START_S)
            hello = self._receive()
            if "ready" not in hello:
                raise ServerFailed(f"the ranks' server said {hello!r}")
            self.socket.settimeout(REPLY_S)
        except BaseException:
            self.close()
            raise

    def _receive(self) -> dict[str, object]:
        try:
            data = self.socket.recv(MAX_REPLY)
        except OSError as error:
            raise ServerFailed(f"the ranks' server did not answer ({error})") from error
        if not data:
            detail = b""
            if self.process.poll() is not None and self.process.stderr is not None:
                detail = self.process.stderr.read(2000)
            raise ServerFailed("the ranks' server stopped"
                               + (f": {detail.decode('utf-8', 'replace').strip()[-300:]}"
                                  if detail else ""))
        reply = json.loads(data)
        if not isinstance(reply, dict):
            raise ServerFailed(f"the ranks' server answered {reply!r}")
        return reply

    def spawn(self, memory_bytes: int, cpu_s: int) -> ForkedProcess:
        """A fresh ranks' process with the channel's ends here."""
        into_r, into_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            request = json.dumps({"op": "spawn", "memory_bytes": memory_bytes, "cpu_s": cpu_s})
            with self.lock:
                socket.send_fds(self.socket, [request.encode()], [into_r, out_w])
                reply = self._receive()
        except BaseException:
            for fd in (into_w, out_r):
                os.close(fd)
            raise
        finally:
            os.close(into_r)
            os.close(out_w)
        pid = reply.get("pid")
        if not isinstance(pid, int):
            os.close(into_w)
            os.close(out_r)
            raise ServerFailed(f"the ranks' server could not fork: {reply.get('error')}")
        return ForkedProcess(self, pid, os.fdopen(into_w, "wb", buffering=1 << 16), out_r)

    def kill(self, pid: int) -> None:
        try:
            with self.lock:
                self.socket.send(json.dumps({"op": "kill", "pid": pid}).encode())
                self._receive()
        except (OSError, ValueError):
            pass  # a server that is gone took its children with it

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if getattr(self, "socket", None) is not None:
            self.socket.close()
        process = getattr(self, "process", None)
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()
        shutil.rmtree(self.stage, ignore_errors=True)


_SERVERS: dict[tuple[str, str, tuple[str, ...], str], RankServer] = {}
_LOCK = threading.Lock()
MEMORY_BYTES = 4 << 30   # a ranks' process's address space on top of the server's
CPU_S = 300              # CPU seconds, a backstop: the trusted side's deadlines come first


def _server(key: tuple[str, str, tuple[str, ...], str]) -> RankServer:
    """The running server for ``key``, started (again, if it died) when there is none."""
    with _LOCK:
        server = _SERVERS.get(key)
        if server is None or not server.alive():
            if server is not None:
                server.close()
            server = _SERVERS[key] = RankServer(*key)
        return server


def prepare(python: str, code_dir: str, warm: tuple[str, ...], entry: str) -> None:
    """Start the server :func:`launch` will fork from (the same arguments), ahead of the
    first lab: its start then overlaps the grader's other work."""
    _server((python, code_dir, warm, entry))


def launch(python: str, code_dir: str, warm: tuple[str, ...], entry: str) -> ForkedProcess:
    """A fresh ranks' process running ``entry`` ("module:function") from ``code_dir``,
    forked from a warm server that imported ``warm``; a server that died is started again
    (once)."""
    key = (python, code_dir, warm, entry)
    for attempt in (1, 2):
        server = _server(key)
        try:
            return server.spawn(MEMORY_BYTES, CPU_S)
        except ServerFailed:
            if attempt == 2:
                raise
            with _LOCK:
                if _SERVERS.get(key) is server:
                    del _SERVERS[key]
            server.close()
    raise AssertionError("unreachable")


def close_all() -> None:
    """End every ranks' server (and so every ranks' process) and remove the staged code."""
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()


atexit.register(close_all)
