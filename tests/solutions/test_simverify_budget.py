"""The trusted side's checks of one run have a time budget: a log far larger than the lab
needs fails the case, with a message, instead of holding the grader for minutes; and the
checks that grow with the log grow linearly."""

from __future__ import annotations

import time

from solutions.sim import ring_lab
from solutions.sim.lab import safe_verify
from solutions.sim.verify import Log, Sent, trace_sums


def _flood(case: dict[str, object], steps: int, per_step: int) -> Log:
    """A log in which every rank sends ``per_step`` one-element slices of its own data to
    its right neighbour every step (each received the step after), then returns the right
    sum: every number is one its sender could build, so only the size of the log is
    wrong."""
    data = ring_lab.data(case)
    n = len(data)
    messages = []
    for step in range(steps):
        for rank in range(n):
            for k in range(per_step):
                payload = data[rank][(step + k) % len(data[rank]):][:1].copy()
                messages.append(Sent(len(messages), step, rank, (rank + 1) % n, step + 1,
                                     -1, payload))
    total = sum(data)
    return Log(n, steps + 1, tuple(d.nbytes for d in data), tuple(messages),
               tuple(total.copy() for _ in range(n)))


CASE = dict(n=4, m=9, dtype="int64", seed=3)


def test_a_huge_log_fails_within_the_budget_with_a_message() -> None:
    log = _flood(CASE, 20_000, 4)       # 320,000 messages
    start = time.monotonic()
    report = safe_verify(ring_lab.SPEC, CASE, log, budget_s=1.0)
    spent = time.monotonic() - start
    assert spent < 2.0, spent
    assert report.problem.startswith("checking your run was stopped after 1 s: 320000 "
                                     "messages in 20001 steps"), report.problem


def test_provenance_grows_linearly_with_the_log() -> None:
    # ten times the messages take about ten times as long (the earlier check rescanned
    # every pending message at every step: a hundred times)
    def seconds(steps: int) -> float:
        log = _flood(CASE, steps, 1)
        data = ring_lab.data(CASE)
        start = time.perf_counter()
        assert trace_sums(log, data, exact=True, results=False) is None
        return time.perf_counter() - start

    small = min(seconds(400) for _ in range(3))
    large = min(seconds(4000) for _ in range(2))
    assert large < 25 * small, (small, large)


def test_an_ordinary_run_is_checked_well_within_the_budget() -> None:
    from solutions.sim.lab import run_case

    for case in ring_lab.SPEC.graded(4)[:2]:
        run = run_case(ring_lab.SPEC, ring_lab.ring_allreduce, case)
        start = time.monotonic()
        report = safe_verify(ring_lab.SPEC, case, run, budget_s=5.0)
        assert report.passed and time.monotonic() - start < 1.0, report.problem
