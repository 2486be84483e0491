"""Chapter 1's lab (record 1.7, beyond the 58): a ZeRO-3 forward pass, gathered just in time."""

from __future__ import annotations

from autograder.exercise import Exercise
from solutions.sim import zero_lab as simzero
from workbook.records._labs import LAB_TAG, SIMULATOR, lab_kind, seed_variant
from workbook.records.ch01 import ZERO_MEM

STUB = '''    import numpy as np
    x = rank.data["x"]               # this rank's own batch, shape (b, d)
    d = x.shape[1]
    for shard in rank.data["shards"]:  # this rank's 1/N of each layer's flattened weight
        # gather the layer's shards (parts = yield from rank.all_gather(shard)),
        # rebuild W (d x d), compute x = relu(x @ W), then rank.free(*parts)
        yield
    return x'''

EX_1_7 = Exercise(
    id="1.7", chapter=1, category="build", title="Lab: ZeRO-3 forward, gather and free per layer",
    prompt=("Write the per-rank program `zero3_forward(rank)`. The model is a stack of layers "
            "x <- relu(x @ W_l), each W_l of d x d. ZeRO-3 keeps on rank r only shard r of "
            "every layer's flattened weight (`rank.data['shards']`) and its own batch "
            "(`rank.data['x']`). Run the forward pass: gather each layer's shards just before "
            "the layer, use them, free them. Graded from the messages: every rank's output, "
            "the bytes each rank gathered ((N-1)/N of every layer, once) and the peak memory "
            "each rank held (its own data plus one layer's gathered shards)."),
    notes=("`parts = yield from rank.all_gather(shard)` returns every rank's shard in rank "
           "order (a ring all-gather of ordinary messages, N-1 steps); "
           "`np.concatenate(parts).reshape(d, d)` is the layer's weight. Received buffers count "
           "towards the rank's memory until `rank.free(*parts)` (your own shard is skipped)."),
    params=dict(seed=0),
    vary=seed_variant,
    answer_kind=lab_kind(simzero, "1.7", "(rank)", STUB),
    reference=lambda p: simzero.zero3_forward,
    hints=(
        "One all-gather per layer, inside the loop over layers.",
        "Free the gathered parts as soon as the layer's output is computed; gathering every "
        "layer first holds the whole model at once.",
    ),
    explanation=("Per layer: all-gather (each rank receives (N-1)/N of the layer), compute, "
                 "free. The rank never holds more than its shards, its batch and one full "
                 "layer. The reference is solutions.sim.zero_lab.zero3_forward."),
    sources=(ZERO_MEM, SIMULATOR),
    tags=(LAB_TAG,),
)

LABS: tuple[Exercise, ...] = (EX_1_7,)
