"""How fast the labs run and grade: the 64-rank ring AllReduce through the rank channel.

    .venv/bin/python benchmarks/sim_speed.py

Reports (median of 5 unless said):

* a ring AllReduce of 1 MB (float32) on 64 ranks (8,064 messages of 16 KB) through the
  rank channel (the ranks in their own process, every payload copied across, the log kept
  on the trusted side), the process start included;
* a ranks' process for one lab run: started afresh (bubblewrap, an interpreter, numpy) or
  forked from the warm server the batch grader uses
  (:mod:`autograder.sandbox.rank_server`), each with the lab's program loaded, in wall time
  and in CPU time of every process involved (where the machine lets a cgroup count it);
* grading that run: channel run plus the lab's checks of the result and the traffic (the
  provenance replay is for N <= 12 and is skipped at 64 ranks);
* messages per second through the channel, for 8-byte and 16 KB payloads;
* one whole check of the ring lab as a learner's kernel runs it: a fresh trusted process,
  a sandboxed ranks' process (bubblewrap where it works), six fresh cases.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autograder.kinds.lab import Lab, sandbox_launch  # noqa: E402
from autograder.sandbox import bwrap  # noqa: E402
from solutions.sim import channel as simchannel  # noqa: E402
from solutions.sim import process as simprocess
from solutions.sim import ring_lab as simring  # noqa: E402
from solutions.sim.bundle import pack  # noqa: E402
from solutions.sim.verify import Log  # noqa: E402
from workbook.records._labs import SimRuntime  # noqa: E402


def median_s(action: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ring_data(m_bytes: int = 1 << 20, n: int = 64) -> list[np.ndarray]:
    return [np.ones(m_bytes // 4, dtype=np.float32) for _ in range(n)]


def channel_run(program: Callable[..., Any], data: list[np.ndarray]) -> Log:
    host = simprocess.start_host(pack(program), collectives=False)
    assert isinstance(host, simprocess.Host)
    try:
        log = simchannel.run(host, data, collectives=False, time_limit_s=120,
                             budget_bytes=1 << 31)
    finally:
        host.close()
    assert isinstance(log, Log), log
    return log


def grade_ring(data: list[np.ndarray]) -> str:
    """Run and grade the 64-rank ring: every result against the sum, and the traffic."""
    log = channel_run(simring.ring_allreduce, data)
    want = np.sum(np.stack(data), axis=0)
    for result in log.results:
        assert np.allclose(result, want)
    problem, _ = simring.traffic_problem(log, len(data[0]))
    return problem


def cpu_s(action: Callable[[], object]) -> float:
    """CPU seconds of this process and its children (the ranks' process) for one run: on
    a shared machine, wall time also counts waiting for a core."""
    import resource

    def used() -> float:
        me, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    before = used()
    action()
    return used() - before


def started_and_closed(launch: Any) -> None:
    """One ranks' process with the ring lab's program loaded, then closed."""
    host = simprocess.start_host(pack(simring.ring_allreduce), launch, 30.0, False)
    assert isinstance(host, simprocess.Host), host
    host.close()


def _cgroup_cpu() -> Callable[[], float] | None:
    """CPU seconds of this process and every descendant, bubblewrap's children included,
    from a cgroup (v1 cpuacct or v2) of its own; None where it cannot make one (not root)."""
    for root, usage in (("/sys/fs/cgroup/cpuacct", "cpuacct.usage"), ("/sys/fs/cgroup", "")):
        group = Path(root) / f"wb-sim-speed-{os.getpid()}"
        try:
            group.mkdir(exist_ok=True)
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            continue
        if usage:
            return lambda: int((group / usage).read_text()) / 1e9
        return lambda: next(int(line.split()[1]) for line in
                            (group / "cpu.stat").read_text().splitlines()
                            if line.startswith("usage_usec")) / 1e6
    return None


def report_host_start(runs: int = 20) -> None:
    """A ranks' process per lab run, with the lab's program loaded: started afresh in
    bubblewrap (as the labs did before the server) vs forked from the warm server."""
    if bwrap.unavailable_reason():
        print("ranks' process start: bubblewrap does not work here, skipped")
        return
    server = sandbox_launch()

    def fresh(python: str, code: str, warm: tuple[str, ...], entry: str) -> Any:
        command = bwrap.command(python, code, as_nobody=True)
        return simprocess.Popened([*command, "-I", "-c",
                                   simprocess.BOOT.format(code=bwrap.SANDBOX_CODE)])

    clock = _cgroup_cpu()  # first: the server and its children are counted too
    started_and_closed(server)  # the warm server itself starts once per batch
    for name, launch in (("started afresh (bubblewrap, Python, numpy)", fresh),
                         ("forked from the warm server", server)):
        wall = median_s(lambda launch=launch: started_and_closed(launch), runs)
        cpu = ""
        if clock is not None:
            before = clock()
            for _ in range(runs):
                started_and_closed(launch)
            cpu = f", {(clock() - before) / runs * 1e3:.1f} ms of CPU in all processes"
        print(f"a ranks' process {name}: {wall * 1e3:.1f} ms{cpu}")


def messages_per_s(payload_elems: int, n: int = 16, steps: int = 200) -> float:
    def chatter(rank: Any) -> Any:
        import numpy as np
        buf = np.zeros(payload_elems, dtype=np.float64)
        for _ in range(steps):
            rank.send((rank.id + 1) % rank.size, buf)
            yield
            rank.recv((rank.id - 1) % rank.size)

    data = [np.zeros(1) for _ in range(n)]
    return n * steps / median_s(lambda: channel_run(chatter, data), runs=3)


def main() -> None:
    data = ring_data()
    report_host_start()
    channel = median_s(lambda: channel_run(simring.ring_allreduce, data))
    print(f"64-rank ring AllReduce of 1 MB, through the channel: {channel * 1e3:.0f} ms "
          "(8064 messages)")
    graded = median_s(lambda: grade_ring(data))
    print(f"... run and graded (results and traffic):          {graded * 1e3:.0f} ms, "
          f"{cpu_s(lambda: grade_ring(data)) * 1e3:.0f} ms of CPU in both processes")
    print(f"channel messages per second, 8-byte payloads:  {messages_per_s(1):,.0f}")
    print(f"channel messages per second, 16 KB payloads:   {messages_per_s(2048):,.0f}")
    kind = Lab(function_name="ring_allreduce", signature="(rank)",
               runtime=SimRuntime(simring.SPEC), exercise="0.7")
    check = median_s(lambda: kind.grade(simring.ring_allreduce, None, {}, ()), runs=3)
    print(f"one learner check of the ring lab (fresh trusted process, sandboxed ranks, "
          f"6 cases): {check * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
