"""The ring AllReduce lab: a right program passes every case; cheats fail, each named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from solutions.sim import ring_lab as ring
from solutions.sim.lab import Report, run_case


def _reports(program: Callable[..., Any]) -> list[Report]:
    return [ring.verify(case, run_case(ring.SPEC, program, case)) for case in ring.cases({})]


def _first_problem(program: Callable[..., Any]) -> str:
    problems = [r.problem for r in _reports(program) if not r.passed]
    assert problems, "a wrong program passed every case"
    return problems[0]


def test_the_reference_passes_every_case_and_the_cases_include_uneven_splits() -> None:
    cases = ring.cases({})
    assert any(c["m"] % c["n"] for c in cases) and any(c["dtype"] == "float64" for c in cases)
    assert all(r.passed for r in _reports(ring.ring_allreduce))


def test_the_other_direction_around_the_ring_passes_too() -> None:
    def leftwards(rank: Any):
        n, me = rank.size, rank.id
        x = np.array(rank.data, copy=True)
        parts = np.array_split(np.arange(len(x)), n)
        for s in range(n - 1):
            rank.send((me - 1) % n, x[parts[(me + s) % n]])
            yield
            x[parts[(me + s + 1) % n]] += rank.recv((me + 1) % n)
        for s in range(n - 1):
            rank.send((me - 1) % n, x[parts[(me - 1 + s) % n]])
            yield
            x[parts[(me + s) % n]] = rank.recv((me + 1) % n)
        return x

    assert all(r.passed for r in _reports(leftwards))


def test_off_by_one_chunking_fails_only_when_n_does_not_divide_m() -> None:
    def floor_chunks(rank: Any):  # chunks of M // N: the last M mod N elements are lost
        n, me = rank.size, rank.id
        x = np.array(rank.data, copy=True)
        k = len(x) // n

        def part(c: int) -> slice:
            return slice((c % n) * k, (c % n + 1) * k)

        for s in range(n - 1):
            rank.send((me + 1) % n, x[part(me - s)])
            yield
            x[part(me - s - 1)] += rank.recv((me - 1) % n)
        for s in range(n - 1):
            rank.send((me + 1) % n, x[part(me + 1 - s)])
            yield
            x[part(me - s)] = rank.recv((me - 1) % n)
        return x

    reports = _reports(floor_chunks)
    for case, report in zip(ring.cases({}), reports, strict=True):
        assert report.passed == (case["m"] % case["n"] == 0), report.case
    failed = next(r for r in reports if not r.passed)
    assert "rank 0's sum of all ranks' vectors is wrong at element 10" in failed.problem
    assert "expected" in failed.problem and "observed" in failed.problem


def test_reading_the_global_input_is_caught_by_provenance() -> None:
    """Every rank is handed the whole input (here: the case's data, computed by the test
    and carried in as a closure value), sends ring-shaped messages of the global sum and
    returns it (as a hostile learner could)."""
    case = ring.cases({})[0]
    inputs = ring.data(case)

    def peek(rank: Any):
        total = sum(inputs)
        n, me = rank.size, rank.id
        parts = np.array_split(np.arange(len(total)), n)
        for s in range(2 * (n - 1)):
            rank.send((me + 1) % n, total[parts[(me - s) % n]])
            yield
            rank.recv((me - 1) % n)
        return total

    problem = ring.verify(case, run_case(ring.SPEC, peek, case)).problem
    assert "rank 0 at step 0 sent element 0" in problem
    assert "that this rank could have built" in problem


def test_a_rank_sees_no_other_ranks_data_left_at_module_level() -> None:
    """Each rank leaves its buffer in a module-level dict and, a step later, looks for the
    others' there: it finds only its own (every rank runs in a process of its own)."""
    stash: dict[int, np.ndarray] = {}

    def copier(rank: Any):
        stash[rank.id] = rank.data
        yield
        yield
        return np.array(sorted(stash), dtype=np.int64)

    case = ring.cases({})[0]
    log = run_case(ring.SPEC, copier, case)
    assert [r.tolist() for r in log.results] == [[r] for r in range(case["n"])]

    def summed(rank: Any):
        stash[rank.id] = rank.data
        yield
        return sum(stash.values())  # the right sum only if the others' buffers were there

    result = ring.verify(case, run_case(ring.SPEC, summed, case))
    own = ring.data(case)[0]
    assert result.problem.startswith("rank 0's sum of all ranks' vectors is wrong at "
                                     f"element 0: expected {sum(ring.data(case))[0]}, "
                                     f"observed {own[0]}"), result.problem


def test_send_everything_to_rank_0_and_broadcast_fails_on_traffic() -> None:
    def via_root(rank: Any):
        n = rank.size
        if rank.id:
            rank.send(0, rank.data)
        yield
        if rank.id == 0:
            total = np.array(rank.data, copy=True)
            for src in range(1, n):
                total += rank.recv(src)
            for dst in range(1, n):
                rank.send(dst, total)
            yield
            return total
        yield
        return np.array(rank.recv(0))

    problem = _first_problem(via_root)
    assert problem.startswith("rank 0 sent 48 elements (384 bytes) in all; a ring AllReduce "
                              "sends 2(N-1)/N x M = 24 per rank")


def test_hiding_messages_from_the_simulator_only_breaks_the_run() -> None:
    """The ranks' process holds no log: a program that silences its own channel (so that
    its sends never reach the simulator) leaves its receivers with nothing to receive."""
    def hider(rank: Any):
        type(rank).send = lambda self, dst, array: None  # sends that never leave
        return (yield from ring.ring_allreduce(rank))

    reports = _reports(hider)
    assert not any(r.passed for r in reports)
    assert "but no message from rank" in reports[0].problem


def test_breaking_a_rule_is_reported_with_rank_and_step() -> None:
    def impatient(rank: Any):
        rank.send((rank.id + 1) % rank.size, rank.data)
        return rank.recv((rank.id - 1) % rank.size)

    problem = _first_problem(impatient)
    assert problem.startswith("The simulator stopped your program: rank 0 at step 0: recv(3)")


def test_something_that_is_not_a_run_is_reported_not_a_crash() -> None:
    case = ring.cases({})[0]
    assert ring.verify(case, "hello").problem == "the run produced no log"
    assert ring.verify(case, {"messages": []}).problem == "the run produced no log"


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_the_picture_has_a_row_per_step_and_marks_the_offender(n: int) -> None:
    case = dict(n=n, m=2 * n + 1, dtype="int64", seed=1)
    report = ring.verify(case, run_case(ring.SPEC, ring.ring_allreduce, case))
    assert report.passed and len(report.picture.splitlines()) == 1 + 2 * (n - 1) + 1  # legend


def test_the_built_in_collective_is_not_available_in_this_lab() -> None:
    def borrowed(rank: Any):
        return (yield from rank.all_reduce(rank.data))

    assert "rank.all_reduce() is not available in this lab" in _first_problem(borrowed)


def test_a_ring_that_skips_a_neighbour_is_named_with_the_expected_one() -> None:
    def stride_two(rank: Any):  # sends to r+1, then to r+2: not a ring any more
        n, me = rank.size, rank.id
        x = np.array(rank.data, copy=True)
        parts = np.array_split(np.arange(len(x)), n)
        rank.send((me + 1) % n, x[parts[me % n]])
        yield
        x[parts[(me - 1) % n]] += rank.recv((me - 1) % n)
        rank.send((me + 2) % n, x[parts[(me - 1) % n]])
        yield
        rank.recv((me - 2) % n)
        return np.sum(np.stack([x]), axis=0)

    report = ring.verify(dict(n=4, m=8, dtype="int64", seed=3),
                         run_case(ring.SPEC, stride_two, dict(n=4, m=8, dtype="int64", seed=3)))
    assert not report.passed
    # the result is wrong first; the traffic checker names the stride on its own
    log = run_case(ring.SPEC, stride_two, dict(n=4, m=8, dtype="int64", seed=3))
    problem, offender = ring.traffic_problem(log, 8)
    assert problem == ("rank 0 at step 1 sent to rank 2; in a ring every rank sends to the "
                       "same neighbour all the way through, one direction for all ranks "
                       "(either r+1 or r-1; your first message chose r+1, so rank 0 sends to "
                       "rank 1)")
    assert offender == 4  # messages 0-3 are step 0's; rank 0's step-1 message is the fifth


def test_a_wrong_element_is_shown_with_just_enough_digits() -> None:
    from solutions.sim.lab import _distinct

    assert _distinct(-0.9162049390018614, -0.15731886629871736) == ("-0.916205", "-0.157319")
    assert _distinct(1.0, 1.0000000001) == ("1", "1.0000000001")  # told apart at 11 digits
    assert _distinct(3, 4) == ("3", "4")


def test_a_rank_that_sends_nothing_is_marked_in_its_empty_cell() -> None:
    """Rank 0 of a two-rank "ring" that sends everything to rank 0 sends nothing at step 0:
    the fault is a missing message, and the picture marks that empty cell."""
    def gather_to_root(rank):
        if rank.id:
            rank.send(0, rank.data)
        yield
        return rank.data

    case = dict(n=2, m=8, dtype="int64", seed=1)
    log = run_case(ring.SPEC, gather_to_root, case)
    problem, offender = ring.traffic_problem(log, 8)
    assert problem.startswith("rank 0 at step 0 sent 0 messages")
    assert offender == (0, 0)
    rows = ring.ring_picture(log, offender).splitlines()
    step_row = next(r for r in rows if r.lstrip().startswith("0"))
    assert "✘." in step_row and "->0:8" in step_row


def test_data_passed_outside_the_channel_is_caught_by_provenance() -> None:
    """Ranks in processes of their own can still signal each other through what the
    system shows of a process (here its name, 15 bytes a step, read from /proc): every
    rank learns every vector and returns the right sum, which it could not have built
    from what it was sent."""
    def by_names(rank: Any):
        import ctypes
        import os
        libc = ctypes.CDLL(None)
        n, me, x = rank.size, rank.id, [int(v) for v in rank.data]
        got = {me: list(x)}
        for k in range(len(x)):
            name = f"{me}{k:02d}{x[k] & 0xFFFFFFFFFFF:x}"
            libc.prctl(15, name.encode()[:15], 0, 0, 0)       # PR_SET_NAME
            yield
            for pid in os.listdir("/proc"):
                try:
                    with open(f"/proc/{pid}/comm") as f:
                        seen = f.read().strip()
                except OSError:
                    continue
                if len(seen) >= 4 and seen[:3].isdigit() and int(seen[1:3]) == k:
                    value = int(seen[3:], 16)
                    value -= (1 << 44) if value >= 1 << 43 else 0
                    if int(seen[0]) != me:
                        got.setdefault(int(seen[0]), [0] * len(x))[k] = value
            yield
        return np.sum([np.array(got.get(r, [0] * len(x)), dtype=np.int64) for r in range(n)],
                      axis=0)

    case = dict(n=3, m=5, dtype="int64", seed=21)
    log = run_case(ring.SPEC, by_names, case)
    want = sum(ring.data(case))
    if not all(np.array_equal(r, want) for r in log.results):
        pytest.skip("this system did not show the ranks' names to each other")
    problem = ring.verify(case, log).problem
    assert problem.startswith("rank 0 returned element 0") and "could have built" in problem
