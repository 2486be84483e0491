"""The simulated cluster's rules, as the trusted side of the rank channel applies them: when a
message arrives, what a rank may send and receive, that payloads are copies, and the memory a
rank holds. Each run goes through a real ranks' process (started plainly here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from solutions.sim import channel as simchannel
from solutions.sim import process as simprocess
from solutions.sim.bundle import pack
from solutions.sim.process import RunFailure
from solutions.sim.ring_lab import ring_allreduce
from solutions.sim.verify import Log


def _run(program: Callable[..., Any], data: Sequence[Any], track: bool = False,
         ) -> Log | RunFailure:
    host = simprocess.start_host(pack(program), collectives=False)
    assert isinstance(host, simprocess.Host), host
    try:
        return simchannel.run(host, data, collectives=False, track=track, time_limit_s=30)
    finally:
        host.close()


def _two() -> list[np.ndarray]:
    return [np.zeros(1), np.zeros(1)]


def test_a_message_arrives_the_step_after_it_is_sent() -> None:
    def program(rank: Any) -> Any:
        import numpy as np
        if rank.id == 0:
            rank.send(1, np.array([7, 8]))
        yield
        if rank.id == 1:
            return rank.recv(0).tolist()
        return None

    log = _run(program, _two())
    assert isinstance(log, Log), log
    assert log.results == (None, [7, 8])
    (message,) = log.messages
    assert (message.step, message.src, message.dst, message.recv_step) == (0, 0, 1, 1)


def test_receiving_in_the_same_step_is_refused_naming_rank_and_step() -> None:
    def program(rank: Any) -> Any:
        import numpy as np
        rank.send((rank.id + 1) % 2, np.ones(1))
        rank.recv((rank.id + 1) % 2)
        yield

    failure = _run(program, _two())
    assert isinstance(failure, RunFailure) and failure.cause == "rule"
    assert (failure.rank, failure.step) == (0, 0)
    assert "rank 0 at step 0: recv(1) but no message" in failure.problem


def test_sending_to_itself_or_outside_the_cluster_is_refused() -> None:
    for bad in (0, 2, -1, 1.0):
        def program(rank: Any, dst: Any = bad) -> Any:
            import numpy as np
            if rank.id == 0:
                rank.send(dst, np.ones(1))
            yield

        failure = _run(program, _two())
        assert isinstance(failure, RunFailure), bad
        assert failure.problem.startswith("rank 0 at step 0: send to"), failure
        assert failure.problem.count("rank 0 at step 0") == 1, failure
        assert "the destination must be" in failure.problem, failure


def test_payloads_are_read_only_copies_neither_side_can_change() -> None:
    def program(rank: Any) -> Any:
        import numpy as np
        buffer = np.array([1.0, 2.0])
        if rank.id == 0:
            rank.send(1, buffer)
            buffer[0] = 99.0  # changing the buffer after send changes nothing sent
        yield
        if rank.id == 1:
            got = rank.recv(0)
            try:
                got[0] = 5.0  # a received buffer is read-only: copy it to change it
                refused = False
            except ValueError:
                refused = True
            return [got.tolist(), refused]
        return None

    log = _run(program, _two())
    assert isinstance(log, Log), log
    assert log.results[1] == [[1.0, 2.0], True]
    assert log.messages[0].payload.tolist() == [1.0, 2.0]  # the log keeps what was sent
    assert not log.messages[0].payload.flags.writeable


def test_memory_follows_recv_and_free() -> None:
    def program(rank: Any) -> Any:
        import numpy as np
        if rank.id == 0:
            rank.send(1, np.zeros(10))
            rank.send(1, np.zeros(30))
        yield
        if rank.id == 1:
            a = rank.recv(0)
            yield
            b = rank.recv(0)
            rank.free(a)
            yield
            rank.free(b)

    log = _run(program, [np.zeros(4), np.zeros(4)])
    assert isinstance(log, Log), log
    # rank 1: 32 bytes of data, + 80 received at step 1, + 240 at step 2 (a freed in 2)
    assert log.peak_memory_bytes(1) == 32 + 80 + 240
    assert log.bytes_sent(0) == 320 and log.peak_memory_bytes(0) == 32


def test_freeing_a_buffer_twice_frees_it_once_and_own_data_is_not_freed() -> None:
    def program(rank: Any) -> Any:
        import numpy as np
        if rank.id == 0:
            rank.send(1, np.zeros(2))
        yield
        if rank.id == 1:
            a = rank.recv(0)
            yield
            rank.free(a)
            rank.free(a)
            rank.free(rank.data)

    log = _run(program, _two())
    assert isinstance(log, Log), log
    (message,) = log.messages
    assert (message.recv_step, message.free_step) == (1, 2)


def test_runs_are_deterministic_and_the_ring_sums() -> None:
    data = [np.arange(5, dtype=np.int64) * (r + 1) for r in range(3)]
    runs = [_run(ring_allreduce, data) for _ in range(2)]
    assert all(isinstance(run, Log) for run in runs)
    a, b = (run for run in runs if isinstance(run, Log))
    assert [(m.step, m.src, m.dst, m.payload.tolist()) for m in a.messages] == [
        (m.step, m.src, m.dst, m.payload.tolist()) for m in b.messages]
    # by hand: x_r = (r + 1) * [0..4], so the sum is 6 * [0..4]
    assert all(result.tolist() == [0, 6, 12, 18, 24] for result in a.results)
    # a ring moves 2 (N - 1) chunks per rank: 4 messages each for N = 3
    assert len(a.messages) == 3 * 2 * (3 - 1)


def _cases_on_one_host(program: Callable[..., Any], runs: Sequence[Sequence[Any]],
                       ) -> tuple[list[Log | RunFailure], list[bool]]:
    """Several cases on the same ranks' process; after each, whether it is still in step
    (the other side stopped where the run ended, so the next case may use it)."""
    host = simprocess.start_host(pack(program), collectives=False)
    assert isinstance(host, simprocess.Host), host
    results, synced = [], []
    try:
        for data in runs:
            results.append(simchannel.run(host, data, collectives=False, time_limit_s=30))
            synced.append(host.in_sync)
    finally:
        host.close()
    return results, synced


def test_after_a_broken_rule_both_sides_stop_at_the_same_step() -> None:
    # case 1 (3 ranks): rank 1 sends to rank 7 at step 2, which ends the run there; the
    # ranks' process stops there too, so case 2 (2 ranks) runs on the same process
    def program(rank: Any) -> Any:
        import numpy as np
        for step in range(4):
            rank.send(7 if (rank.size == 3 and rank.id == 1 and step == 2)
                      else (rank.id + 1) % rank.size, np.full(2, rank.id + step))
            yield
            rank.recv((rank.id - 1) % rank.size)
        return rank.data

    three = [np.zeros(2), np.ones(2), np.full(2, 2.0)]
    results, synced = _cases_on_one_host(program, [three, _two(), three])
    first, second, third = results
    assert isinstance(first, RunFailure) and (first.rank, first.step) == (1, 2), first
    assert "send to 7" in first.problem
    assert isinstance(second, Log), second
    # two ranks, four sends each, all received (a send in step s is received in s + 1)
    assert sorted((m.step, m.src, m.recv_step) for m in second.messages) == sorted(
        (s, r, s + 1) for s in range(4) for r in range(2))
    assert third == first
    assert synced == [True, True, True]


def test_a_rank_cannot_make_the_ranks_process_run_past_the_end_of_a_run() -> None:
    # the program tries to make whatever delivers messages in its process deliver nothing
    # and go on after a broken rule: a rank's process holds no part of the simulator, so
    # the run ends at the rule on both sides and the next case runs on the same process
    def program(rank: Any) -> Any:
        import sys

        import numpy as np
        for module in list(sys.modules.values()):
            if (getattr(module, "__name__", "") or "").startswith("solutions.sim"):
                for name in ("_deliver", "deliver", "serve_recv", "answer"):
                    if hasattr(module, name):
                        setattr(module, name, lambda *a, **k: False)
        for _ in range(50):
            rank.send(5 if rank.size == 2 else (rank.id + 1) % rank.size, np.ones(1))
            yield
        return None

    results, synced = _cases_on_one_host(program, [_two(), [np.zeros(1)] * 3])
    failure, log = results
    assert isinstance(failure, RunFailure) and failure.cause == "rule", failure
    assert (failure.rank, failure.step) == (0, 0) and "send to 5" in failure.problem
    assert isinstance(log, Log) and log.steps == 50, log
    assert synced == [True, True]


def test_a_rank_that_breaks_its_own_channel_fails_and_retires_the_process() -> None:
    # rank 1 writes bytes that are no frame where its channel is (fd 1): the run fails,
    # naming the rank, and the ranks' process is not used again
    def program(rank: Any) -> Any:
        import os
        yield
        if rank.id == 1:
            os.write(1, b"\x00\x00\x00\x07garbage")
        yield
        return None

    results, synced = _cases_on_one_host(program, [_two()])
    (failure,) = results
    assert isinstance(failure, RunFailure), failure
    assert "rank 1 at step 1" in failure.problem and "broke the channel" in failure.problem
    assert synced == [False]


def test_a_message_claimed_early_or_out_of_turn_is_refused() -> None:
    # a rank that lists a receive it was never given (its own message, at once, inside the
    # step) is refused by the trusted side's rules: nothing from rank 0 has arrived yet
    def early(rank: Any) -> Any:
        import numpy as np
        rank.send((rank.id + 1) % 2, np.ones(1))
        if rank.id == 1:
            rank._link.ops += (1, 0, 0)   # "received message 0 from rank 0"
        yield

    failure = _run(early, _two())
    assert isinstance(failure, RunFailure) and failure.cause == "rule", failure
    assert "rank 1 at step 0: recv(0) but no message" in failure.problem

    # claiming the newer of two arrived messages first breaks the channel
    def newest_first(rank: Any) -> Any:
        import numpy as np
        if rank.id == 0:
            rank.send(1, np.ones(1))
            rank.send(1, np.zeros(1))
        yield
        if rank.id == 1:
            rank._link.ops += (1, 0, 1)   # "received message 1 from rank 0"
        return None

    failure = _run(newest_first, _two())
    assert isinstance(failure, RunFailure) and failure.cause == "channel", failure
    assert "not the oldest" in failure.problem

    # receiving before anything has arrived is refused by the rules, naming rank and step
    def too_soon(rank: Any) -> Any:
        if rank.id == 1:
            rank.recv(0)
        yield

    failure = _run(too_soon, _two())
    assert isinstance(failure, RunFailure) and failure.cause == "rule", failure
    assert "rank 1 at step 0: recv(0) but no message" in failure.problem
