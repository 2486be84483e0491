"""Chapter 0's lab (record 0.7, beyond the 58): ring AllReduce on the simulated cluster."""

from __future__ import annotations

from autograder.exercise import Exercise
from solutions.sim import ring_lab as simring
from workbook.records._labs import LAB_TAG, SIMULATOR, lab_kind, seed_variant
from workbook.records.ch00 import PATARASUK, THAKUR

STUB = '''    import numpy as np
    n, me = rank.size, rank.id      # ranks in the ring, and which one this is
    x = rank.data.copy()            # this rank's own vector (M numbers)
    # Reduce-scatter, then all-gather: in each step send one chunk to rank (me + 1) % n,
    # end the step with `yield`, then receive from rank (me - 1) % n with rank.recv(...).
    yield
    return x                        # every rank must return the sum of all vectors'''

EX_0_7 = Exercise(
    id="0.7", chapter=0, category="build", title="Lab: ring AllReduce on a simulated cluster",
    prompt=("Write the per-rank program `ring_allreduce(rank)`. Every rank holds a vector "
            "`rank.data` of M numbers; every rank must return the sum of all N vectors. Do "
            "it as a ring: a reduce-scatter (N-1 steps) then an all-gather (N-1 steps), "
            "sending one chunk of about M/N to the next rank in each step. Your program is "
            "run on the simulated cluster for several N and M (N does not always divide M; "
            "integer and float data) and graded from its messages: the result on every rank, "
            "where every number you send came from, and the traffic: one chunk per rank per "
            "step, 2(N-1) steps, 2(N-1)/N x M per rank."),
    notes=("The simulator's rules: `rank.send(dst, array)` sends a copy; it arrives when the "
           "step ends, and each `yield` ends a step; `rank.recv(src)` returns the oldest "
           "arrived message from `src` (an error if none has arrived). A rank may read only "
           "its own `rank.data`. `np.array_split` cuts a vector into N nearly equal chunks."),
    params=dict(seed=0),
    vary=seed_variant,
    answer_kind=lab_kind(simring, "0.7", "(rank)", STUB),
    reference=lambda p: simring.ring_allreduce,
    hints=(
        "Cut the vector into N chunks once, with the same boundaries on every rank "
        "(np.array_split, or offsets c * M // N).",
        "Reduce-scatter step s: send chunk (me - s) mod N, then add what arrives into chunk "
        "(me - s - 1) mod N. After N-1 steps rank me owns the full sum of chunk (me + 1) mod N.",
        "All-gather step s: send chunk (me + 1 - s) mod N, then overwrite chunk (me - s) mod N "
        "with what arrives.",
    ),
    explanation=("Each rank sends 2(N-1) chunks: N-1 partial sums in the reduce-scatter, N-1 "
                 "finished chunks in the all-gather, 2(N-1)/N x M elements in 2(N-1) steps, "
                 "the bandwidth-optimal volume. The reference is "
                 "solutions.sim.ring_lab.ring_allreduce."),
    sources=(THAKUR, PATARASUK, SIMULATOR),
    tags=(LAB_TAG,),
)

LABS: tuple[Exercise, ...] = (EX_0_7,)
