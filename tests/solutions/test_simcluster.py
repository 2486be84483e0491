"""The simulated cluster: lock-step delivery, access rules, accounting and alpha-beta time."""

from __future__ import annotations

import numpy as np
import pytest

from solutions import collectives as col
from solutions import simcluster as sim
from solutions.simring import ring_allreduce
from solutions.simverify import read_log


def _ring_data(n: int, m: int) -> list[np.ndarray]:
    return [np.arange(m, dtype=np.float64) + 100 * r for r in range(n)]


def test_a_message_arrives_the_step_after_it_is_sent() -> None:
    def program(rank: sim.Rank):
        if rank.id == 0:
            rank.send(1, np.array([7, 8]))
        yield
        if rank.id == 1:
            return rank.recv(0).tolist()
        return None

    trace = sim.run(program, [np.zeros(2), np.zeros(2)])
    assert trace.results == [None, [7, 8]]
    (message,) = trace.messages
    assert (message.step, message.src, message.dst, message.recv_step) == (0, 0, 1, 1)


def test_receiving_in_the_same_step_is_an_error_naming_rank_and_step() -> None:
    def program(rank: sim.Rank):
        rank.send((rank.id + 1) % 2, np.ones(1))
        rank.recv((rank.id + 1) % 2)
        yield

    with pytest.raises(sim.SimError, match=r"rank 0 at step 0: recv\(1\) but no message"):
        sim.run(program, [np.zeros(1), np.zeros(1)])


def test_using_another_ranks_handle_is_refused() -> None:
    handles: list[sim.Rank] = []

    def program(rank: sim.Rank):
        handles.append(rank)
        yield
        if rank.id == 1:
            return handles[0].data  # rank 1 reads rank 0's buffer
        return None

    with pytest.raises(sim.RankAccessError, match="rank 1 at step 1 tried to read the data "
                                                  "of rank 0"):
        sim.run(program, [np.zeros(1), np.zeros(1)])


def test_sending_to_itself_or_outside_the_cluster_is_refused() -> None:
    for bad in (0, 2, -1, 1.0):
        with pytest.raises(sim.SimError, match="destination must be another rank"):
            sim.run(lambda rank, d=bad: rank.send(d, np.ones(1)), [np.zeros(1), np.zeros(1)])


def test_payloads_are_copies_the_receiver_cannot_change() -> None:
    def program(rank: sim.Rank):
        buffer = np.array([1.0, 2.0])
        if rank.id == 0:
            rank.send(1, buffer)
            buffer[0] = 99.0  # changing the buffer after send changes nothing sent
        yield
        if rank.id == 1:
            got = rank.recv(0)
            with pytest.raises(ValueError):
                got[0] = 5.0
            return got.tolist()
        return None

    assert sim.run(program, [np.zeros(1), np.zeros(1)]).results[1] == [1.0, 2.0]


def test_ring_volume_and_time_match_chapter_0s_formulas() -> None:
    n, m = 8, 1024  # float64: M = 8 KiB, divisible by N
    links = sim.Links(gpus_per_node=8, intra_gb_per_s=100.0, intra_latency_us=3.0)
    trace = sim.run(ring_allreduce, _ring_data(n, m), links=links)
    message_gb = m * 8 / 1e9
    per_gpu_bytes = col.ring_allreduce_gb_per_gpu(message_gb, n) * 1e9
    assert all(trace.bytes_sent(r) == pytest.approx(per_gpu_bytes) for r in range(n))
    assert trace.time_ms() == pytest.approx(col.ring_allreduce_time_ms(message_gb, n, 100.0, 3.0))
    assert np.allclose(trace.results[3], sum(_ring_data(n, m)))


def test_messages_between_nodes_use_the_inter_node_link() -> None:
    links = sim.Links(gpus_per_node=2, intra_gb_per_s=100.0, inter_gb_per_s=10.0,
                      intra_latency_us=0.0, inter_latency_us=0.0)
    assert [links.kind(0, 1), links.kind(1, 2), links.kind(3, 2)] == ["intra", "inter", "intra"]
    # 4 ranks on 2 nodes: the ring's 1->2 and 3->0 hops cross nodes and set the pace.
    trace = sim.run(ring_allreduce, _ring_data(4, 400), links=links)
    chunk_bytes = 100 * 8
    assert trace.time_ms() == pytest.approx(6 * 1000 * chunk_bytes / 1e9 / 10.0)


def test_a_root_receiving_from_everyone_queues_on_its_port() -> None:
    """Naive gather to rank 0: the root's receive port carries (N-1) messages in one step,
    the naive_allreduce_root_gb volume, at (N-1)(alpha + S/B)."""
    n, m = 5, 1000
    links = sim.Links(intra_gb_per_s=20.0, intra_latency_us=4.0)

    def gather(rank: sim.Rank):
        if rank.id:
            rank.send(0, rank.data)
        yield

    trace = sim.run(gather, _ring_data(n, m), links=links)
    size_gb = m * 8 / 1e9
    assert trace.bytes_received(0) == pytest.approx(col.naive_allreduce_root_gb(size_gb, n) * 1e9)
    assert trace.time_ms() == pytest.approx((n - 1) * (0.004 + 1000 * size_gb / 20.0))


def test_the_plain_log_reads_back_and_memory_follows_recv_and_free() -> None:
    def program(rank: sim.Rank):
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

    trace = sim.run(program, [np.zeros(4), np.zeros(4)])
    log = read_log(trace.to_plain())
    # rank 1: 32 bytes of data, + 80 at step 1, + 240 at step 2 (a freed at the end of 2)
    assert log.peak_memory_bytes(1) == 32 + 80 + 240
    assert log.bytes_sent(0) == 320 and log.peak_memory_bytes(0) == 32


def test_runs_are_deterministic() -> None:
    a = sim.run(ring_allreduce, _ring_data(6, 50)).to_plain()
    b = sim.run(ring_allreduce, _ring_data(6, 50)).to_plain()
    assert a == b


def test_the_channel_runs_the_same_messages_as_the_in_process_simulator() -> None:
    from solutions.simbundle import pack
    from solutions.simchannel import run, start_host

    data = [np.arange(5, dtype=np.int64) * (r + 1) for r in range(3)]
    host = start_host(pack(ring_allreduce), collectives=True)
    assert not isinstance(host, type(None))
    try:
        log = run(host, data, collectives=False)
    finally:
        host.close()  # type: ignore[union-attr]
    direct = sim.run(ring_allreduce, data)
    assert [(m.step, m.src, m.dst, m.payload.tolist()) for m in log.messages] == [  # type: ignore[union-attr]
        (m.step, m.src, m.dst, m.payload.tolist()) for m in direct.messages]
    assert log.results[2].tolist() == [0, 6, 12, 18, 24]  # type: ignore[union-attr]
