"""Chapter 6's lab (record 6.6, beyond the 58): a tensor-parallel MLP with one all-reduce."""

from __future__ import annotations

from autograder.exercise import Exercise
from solutions.sim import tp_lab as simtp
from workbook.records._labs import LAB_TAG, SIMULATOR, lab_kind, seed_variant
from workbook.records.ch06 import MEGATRON

STUB = '''    import numpy as np
    x = rank.data["x"]   # the whole input X (b x d), the same on every rank
    a = rank.data["a"]   # this rank's columns of A (d x f/N)
    b = rank.data["b"]   # this rank's rows of B (f/N x d)
    # y = ...  then  y = yield from rank.all_reduce(y)
    yield
    return None'''

EX_6_6 = Exercise(
    id="6.6", chapter=6, category="build",
    title="Lab: a tensor-parallel MLP on the simulated cluster",
    prompt=("Write the per-rank program `tp_mlp_forward(rank)` for the MLP Y = relu(X A) B with "
            "A split by columns and B split by rows over N tensor-parallel ranks. Every rank "
            "must return the whole Y. Graded from the messages: Y equals the unsharded "
            "relu(X A) B on every rank, and the forward pass communicates exactly one "
            "all-reduce of the b x d output, nothing else."),
    notes=("`total = yield from rank.all_reduce(array)` sums `array` over all ranks (a ring "
           "all-reduce of ordinary messages). relu is `np.maximum(h, 0.0)`."),
    params=dict(seed=0),
    vary=seed_variant,
    answer_kind=lab_kind(simtp, "6.6", "(rank)", STUB),
    reference=lambda p: simtp.tp_mlp_forward,
    hints=(
        "relu acts element by element, so relu(X A_r) is rank r's slice of relu(X A): no "
        "communication after the first matmul.",
        "relu(X A_r) B_r is rank r's share of Y; Y is the sum of the shares.",
    ),
    explanation=("Column-parallel A needs no communication in the forward pass (relu is "
                 "elementwise; its backward would all-reduce the input gradient); row-parallel "
                 "B leaves partial outputs that one all-reduce sums: Megatron-LM's f and g "
                 "operators. The reference is solutions.sim.tp_lab.tp_mlp_forward."),
    sources=(MEGATRON, SIMULATOR),
    tags=(LAB_TAG,),
)

LABS: tuple[Exercise, ...] = (EX_6_6,)
