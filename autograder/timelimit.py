"""Call a learner's function with a time limit, catching whatever it raises.

Two mechanisms, chosen per call:

* In the main thread on POSIX (a notebook kernel, the command line, the grader's worker)
  an interval timer (``signal.setitimer(ITIMER_REAL)``) delivers SIGALRM, whose handler
  raises ``TimeLimitExceeded`` inside the learner's code. The learner's code really
  stops. Python runs signal handlers between bytecodes, so one long call into C (a
  huge ``10 ** 10 ** 8``) finishes before the limit is noticed. The learner's code can
  disarm that timer (``signal.setitimer(ITIMER_REAL, 0)``) or replace the handler, so a
  watchdog thread backs it up: shortly after the limit it raises ``TimeLimitExceeded``
  in the main thread itself (as below), again and again until the call is over. Code
  that catches BaseException in a loop can still outlast both: in one process nothing
  can stop it but the person at the keyboard; the grader runs such code in its sandbox,
  where the worker kills the job at its wall clock.
* Elsewhere (a worker thread, Windows) the call runs in a daemon thread and we wait
  ``join(timeout)``. Python cannot kill a thread: on a timeout we ask it to stop by
  raising ``TimeLimitExceeded`` in it (``PyThreadState_SetAsyncExc``, CPython only),
  which works for a Python loop but not for a thread stuck in C code; such a thread
  runs on in the background until it ends or the process exits. The grader therefore
  also runs submissions in a separate process with its own limits.

Where threads cannot start at all (Pyodide in JupyterLite) the call runs unguarded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any


class TimeLimitExceeded(BaseException):
    """Raised inside a learner's function when its time is up.

    A BaseException, so that a learner's ``except Exception:`` does not swallow it.
    """


@dataclass(frozen=True)
class Outcome:
    """What one call did: returned ``value``, raised ``error``, or ran out of time."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def returned(self) -> bool:
        return self.error is None and not self.timed_out


def _use_signal() -> bool:
    return (hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread())


def call_with_time_limit(fn: Callable[..., Any], args: tuple[Any, ...],
                         limit_s: float) -> Outcome:
    """Call ``fn(*args)``; never raises for what ``fn`` does (KeyboardInterrupt excepted)."""
    if limit_s <= 0:
        raise ValueError(f"limit_s must be > 0, got {limit_s!r}")
    if _use_signal():
        return _call_with_alarm(fn, args, limit_s)
    return _call_in_thread(fn, args, limit_s)


def call_unlimited(fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
    """Call ``fn(*args)`` here and now, without a limit: only for a call that runs no
    learner code (a replay of recorded results); never raises for what ``fn`` does."""
    return _call(fn, args)


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
    """Run the call, turning its exceptions (including sys.exit) into an Outcome."""
    start = time.perf_counter()
    try:
        value = fn(*args)
    except TimeLimitExceeded:
        return Outcome(timed_out=True, seconds=time.perf_counter() - start)
    except KeyboardInterrupt:  # the person at the keyboard stopped the kernel
        raise
    except BaseException as exc:  # noqa: B036 - SystemExit, GeneratorExit, the learner's own
        return Outcome(error=exc, seconds=time.perf_counter() - start)
    return Outcome(value=value, seconds=time.perf_counter() - start)


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise TimeLimitExceeded


WATCHDOG_GRACE_S = 0.05   # after the limit, before the watchdog steps in
WATCHDOG_REPEAT_S = 0.05  # how often it raises again in code that swallows the first


class _Watchdog:
    """One daemon thread per process that raises TimeLimitExceeded in the armed thread once
    its deadline is past, and again every WATCHDOG_REPEAT_S until disarmed. Arming costs
    a lock and a notify, not a thread start."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.deadline: float | None = None
        self.target = 0
        self.fired = False
        self.thread: threading.Thread | None = None

    def arm(self, limit_s: float) -> bool:
        with self.cond:
            if self.thread is None or not self.thread.is_alive():  # first use, or a fork
                thread = threading.Thread(target=self._watch, daemon=True,
                                          name="learner-watchdog")
                try:
                    thread.start()
                except RuntimeError:  # no threads here: the interval timer alone
                    return False
                self.thread = thread
            self.target, self.fired = threading.get_ident(), False
            self.deadline = time.monotonic() + limit_s + WATCHDOG_GRACE_S
            self.cond.notify()
        return True

    def disarm(self) -> bool:
        """True if it had fired (a pending exception is withdrawn); safe against its own
        exception arriving meanwhile."""
        while True:
            try:
                with self.cond:
                    self.deadline = None
                    fired, self.fired = self.fired, False
                    if fired:
                        _raise_in(self.target, None)
                    return fired
            except TimeLimitExceeded:
                continue

    def _watch(self) -> None:
        with self.cond:
            while True:
                if self.deadline is None:
                    self.cond.wait()
                    continue
                left = self.deadline - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                self.fired = _raise_in(self.target, TimeLimitExceeded) or self.fired
                self.deadline = time.monotonic() + WATCHDOG_REPEAT_S


_WATCHDOG = _Watchdog()


def _call_with_alarm(fn: Callable[..., Any], args: tuple[Any, ...], limit_s: float) -> Outcome:
    started = time.monotonic()
    watching = _WATCHDOG.arm(limit_s)  # before the timer: starting its thread waits
    previous_handler = signal.signal(signal.SIGALRM, _on_alarm)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        try:
            outcome = _call(fn, args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if watching and _WATCHDOG.disarm():
                outcome = Outcome(timed_out=True, seconds=time.monotonic() - started)
        return outcome
    except TimeLimitExceeded:  # the alarm fired just after fn returned
        if watching:
            _WATCHDOG.disarm()
        return Outcome(timed_out=True, seconds=time.monotonic() - started)
    finally:
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:  # someone else's timer was running: give it back what is left
            left = max(previous_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, previous_interval)


def _call_in_thread(fn: Callable[..., Any], args: tuple[Any, ...], limit_s: float) -> Outcome:
    box: list[Outcome] = []
    worker = threading.Thread(target=lambda: box.append(_call(fn, args)), daemon=True,
                              name="learner-call")
    try:
        worker.start()
    except RuntimeError:  # no threads here (Pyodide): run unguarded
        return _call(fn, args)
    worker.join(limit_s)
    if box:
        return box[0]
    _ask_to_stop(worker)
    return Outcome(timed_out=True, seconds=limit_s)


def _ask_to_stop(worker: threading.Thread) -> None:
    """Best effort: raise TimeLimitExceeded in the runaway thread (CPython only)."""
    if worker.ident is not None:
        _raise_in(worker.ident, TimeLimitExceeded)


def _raise_in(thread_id: int, error: type[BaseException] | None) -> bool:
    """Raise ``error`` in another thread at its next bytecode (None: withdraw a pending
    one); False where CPython's ``PyThreadState_SetAsyncExc`` is not available."""
    try:
        import ctypes
    except ImportError:  # some browser builds of Python have no ctypes
        return False
    set_async_exc = getattr(getattr(ctypes, "pythonapi", None), "PyThreadState_SetAsyncExc", None)
    if set_async_exc is None:
        return False
    what = ctypes.py_object(error) if error is not None else None
    return bool(set_async_exc(ctypes.c_ulong(thread_id), what))
