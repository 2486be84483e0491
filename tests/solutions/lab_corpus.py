"""Submissions to the four labs, as a hostile or an inventive learner would write them.

``CHEATS`` reach the right numbers without doing the algorithm (or try to make the grader
believe they did): each must earn nothing, with a reason that names what is wrong
(``reason`` is a piece of the message). ``HONEST`` are right but unusual: each must pass.
Every entry is (exercise id, source text). The sources are files a learner could hand in.
"""

from __future__ import annotations

_ROOT_RING = '''
import numpy as np

def ring_allreduce(rank):
    if rank.id:
        rank.send(0, rank.data)
    yield
    if rank.id == 0:
        total = np.array(rank.data, copy=True)
        for src in range(1, rank.size):
            total += rank.recv(src)
        for dst in range(1, rank.size):
            rank.send(dst, total)
        yield
        return total
    yield
    return np.array(rank.recv(0))
'''

_STEAL_RING = '''
import gc
import numpy as np

def _everyone(rank):
    """Every rank's data this process can find: the data of every rank handle among its
    objects (only this rank's own, when every rank runs in a process of its own)."""
    found = {}
    for o in gc.get_objects():
        if type(o).__name__ == "Rank":
            found[o.id] = o.data
    found[rank.id] = rank.data
    return found

def ring_allreduce(rank):
    yield
    found = _everyone(rank)
    yield
    return sum(found[r] for r in sorted(found))
'''

_PATCH_GRADER = '''
import sys
try:  # where the grader's modules are loaded: make every check pass
    import solutions.sim.verify as simverify
    import solutions.sim.ring_lab as simring
    import solutions.sim.lab as simlab
    import autograder.kinds.lab as lab
    from solutions.sim.lab import Report
    simverify.trace_sums = lambda *a, **k: None
    simring.traffic_problem = lambda *a, **k: ("", -1)
    ok = lambda case, run: Report("patched")
    object.__setattr__(simring.SPEC, "verify", ok)
    simlab.safe_verify = lambda spec, case, run: Report("patched")
    lab.lab_verdict = lambda name, evidence, reports, seed: __import__(
        "autograder.kinds.base", fromlist=["Verdict"]).Verdict("correct", "patched", score=1.0)
except ImportError:
    pass
''' + _ROOT_RING

_RING = '''
import numpy as np

def ring_allreduce(rank):
    n, me = rank.size, rank.id
    x = np.array(rank.data, copy=True)
    parts = np.array_split(np.arange(len(x)), n)
    for s in range(n - 1):
        rank.send((me + 1) % n, x[parts[(me - s) % n]])
        yield
        x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)
    for s in range(n - 1):
        rank.send((me + 1) % n, x[parts[(me + 1 - s) % n]])
        yield
        x[parts[(me - s) % n]] = rank.recv((me - 1) % n)
    return x
'''

_ZERO_HONEST_GATHER = '''
import numpy as np

def _gather(rank, shard):
    n, me = rank.size, rank.id
    parts = [None] * n
    parts[me] = shard
    for s in range(n - 1):
        rank.send((me + 1) % n, parts[(me - s) % n])
        yield
        parts[(me - s - 1) % n] = rank.recv((me - 1) % n)
    return parts
'''

_STEAL_WEIGHTS = '''
import numpy as np

SHARDS = {}   # every rank's shards, left here by each rank as it starts

def _all_shards():
    return [SHARDS[r] for r in sorted(SHARDS)]

def _forward(x, everyone):
    """The forward pass with whatever shards were found (zeros for the ones not found)."""
    d = x.shape[1]
    for layer in range(len(everyone[0])):
        w = np.concatenate([s[layer] for s in everyone])
        w = np.concatenate([w, np.zeros(d * d - w.size)]).reshape(d, d)
        x = np.maximum(x @ w, 0.0)
    return x
'''

_TP_STEAL = '''
import numpy as np

WEIGHTS = {}   # every rank's data, left here by each rank as it starts

def _full(rank):
    """The whole layer's output from every rank's weights found here."""
    a = np.concatenate([WEIGHTS[r]["a"] for r in sorted(WEIGHTS)], axis=1)
    b = np.concatenate([WEIGHTS[r]["b"] for r in sorted(WEIGHTS)], axis=0)
    return np.maximum(rank.data["x"] @ a, 0.0) @ b
'''

_FORGE = '''
import json, os, struct

def _forge(header):
    """A frame in the channel's documented format (solutions/sim/wire.py), with no arrays,
    written where this process's channel is."""
    text = json.dumps(header).encode()
    os.write(1, struct.pack(">I", len(text)) + text + struct.pack(">I", 0))
'''

_VISIBLE_58 = {(4, 8, 1), (3, 3, 1), (4, 2, 1), (2, 5, 1), (2, 4, 2), (4, 8, 2), (3, 6, 3)}

# The library's own ring, imported instead of written: refused where the ranks run (the
# reference library is not there) when a file is checked or a class graded; a function
# from a learner's kernel travels with what it uses, library code included, so there the
# import is no different from copying the library's source.
KERNEL_ONLY_PASSES = {"ring-borrowed-library"}
# A cheat that takes whatever array of the right size its process holds ends one of two
# ways, by the memory layout of the run: it sends values no rank could have built (the
# provenance check) or it ends with the wrong sum. Either reason is the right one.
OTHER_REASONS = {
    "ring-read-inbox": ("is not a partial sum",),
    # the forged [1, 2, 3] has the data's shape when a case's vectors have three elements
    "ring-forged-returns": ("is wrong at element",),
}


def reason_given(name: str, message: str) -> bool:
    """Whether ``message`` names why the cheat ``name`` fails (its reason or, for a cheat
    that can fail more than one way, one of :data:`OTHER_REASONS`)."""
    reasons = (CHEATS[name][2], *OTHER_REASONS.get(name, ()))
    return any(reason in message for reason in reasons)

CHEATS: dict[str, tuple[str, str, str]] = {
    # -- the ring (0.7) -------------------------------------------------------------------
    "ring-stash": ("0.7", '''
STASH = {}

def ring_allreduce(rank):
    STASH[rank.id] = rank.data
    yield
    return sum(STASH.get(r, 0) for r in range(rank.size))   # every rank's, if it is here
''', "is wrong at element"),
    "ring-root": ("0.7", _ROOT_RING, "sent"),
    "ring-gc-steal": ("0.7", _STEAL_RING, "is wrong at element"),
    "ring-patch-grader": ("0.7", _PATCH_GRADER, "sent"),
    "ring-simulator-privates": ("0.7", '''
import gc
import numpy as np

def _like(data):
    """Every distinct array shaped like ``data`` that any object of this process holds."""
    found = {}
    for o in gc.get_objects():
        for r in gc.get_referents(o):
            if isinstance(r, np.ndarray) and r.shape == data.shape and r.dtype == data.dtype:
                found[r.tobytes()] = r
    return list(found.values())

def ring_allreduce(rank):
    yield
    return sum(_like(rank.data))
''', "is wrong at element"),
    "ring-host-privates": ("0.7", '''
import sys
import numpy as np

def _in_frames(data):
    """Every distinct array shaped like ``data`` in the locals of every frame of this
    process (the simulator's, were it here)."""
    found = {data.tobytes(): data}
    for frame in sys._current_frames().values():
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, np.ndarray) and value.shape == data.shape:
                    found[value.tobytes()] = value
            frame = frame.f_back
    return list(found.values())

def ring_allreduce(rank):
    yield
    total = sum(_in_frames(rank.data))
    yield
    return total
''', "is wrong at element"),
    "ring-read-inbox": ("0.7", _RING.replace(
        "x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)",
        "x[parts[(me - s - 1) % n]] += _arrived(rank, len(parts[(me - s - 1) % n]))").replace(
        "x[parts[(me - s) % n]] = rank.recv((me - 1) % n)",
        "x[parts[(me - s) % n]] = _arrived(rank, len(parts[(me - s) % n]))").replace(
        "def ring_allreduce", '''import gc

def _arrived(rank, size):
    """A message's payload taken without receiving it: any array of that size this process
    holds that is not the rank's own (zeros if there is none)."""
    for o in gc.get_objects():
        for r in gc.get_referents(o):
            if isinstance(r, np.ndarray) and r.size == size and r.dtype == rank.data.dtype \\
                    and not np.shares_memory(r, rank.data) and not r.flags.writeable:
                return r.ravel()
    return np.zeros(size, dtype=rank.data.dtype)

def ring_allreduce'''), "is wrong at element"),
    "ring-edit-received": ("0.7", '''
import gc
import numpy as np

STOLEN = {}

def ring_allreduce(rank):
    n, me = rank.size, rank.id
    STOLEN[me] = rank.data
    rank.send((me + 1) % n, rank.data[:1])
    yield
    got = rank.recv((me - 1) % n)
    got.flags.writeable = True      # rewrite what was received, after the fact
    handles = [o for o in gc.get_objects() if type(o).__name__ == "Rank"]
    total = sum(STOLEN.values())    # every rank's, if it is here
    got[:] = total[:1]
    return np.concatenate([got, total[1:]])
''', "is wrong at element"),
    "ring-zeros": ("0.7", _STEAL_RING.replace(
        "    yield\n    found", "    n = rank.size\n    for s in range(2 * (n - 1)):\n"
        "        rank.send((rank.id + 1) % n, np.zeros(-(-len(rank.data) // n), "
        "dtype=rank.data.dtype))\n        yield\n        rank.recv((rank.id - 1) % n)\n"
        "    found"), "is wrong at element"),
    "ring-forged-frame": ("0.7", '''
import os

def ring_allreduce(rank):
    os.write(1, b"\\x00\\x00\\x00\\x07garbage")   # where the channel is, in this process
    yield
    return rank.data
''', "broke the channel"),
    "ring-forged-returns": ("0.7", _FORGE + '''
def ring_allreduce(rank):
    # a well-formed answer for its own step, before the step ends: all it can claim is what
    # a rank may do anyway (here: return [1, 2, 3]), and that is graded like any return
    _forge({"op": "stepped", "outcome": 1, "value": [1, 2, 3], "raised": None, "ops": []})
    yield
    return rank.data
''', "returned an array of shape (3,)"),
    "ring-huge-payload": ("0.7", '''
import numpy as np

def ring_allreduce(rank):
    rank.send((rank.id + 1) % rank.size, np.zeros(20_000_000))
    yield
    return rank.data
''', "bytes"),
    "ring-deep-result": ("0.7", '''
def ring_allreduce(rank):
    deep = []
    for _ in range(5000):
        deep = [deep]
    yield
    return deep
''', "not an array"),
    "ring-borrowed-library": ("0.7", '''
from solutions.sim.collectives import ring_all_reduce

def ring_allreduce(rank):
    return (yield from ring_all_reduce(rank, rank.data))
''', "could not be loaded"),
    "ring-endless": ("0.7", '''
def ring_allreduce(rank):
    while True:
        pass
    yield
''', "was stopped"),
    "ring-exit": ("0.7", '''
import os

def ring_allreduce(rank):
    os._exit(0)
    yield
''', "broke the channel"),
    "ring-free-twice": ("0.7", _RING.replace(
        "x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)",
        "if me == 0 and s == 0:\n            _forge(FREE_0)  # free message 0, which went "
        "elsewhere\n        x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)").replace(
        "import numpy as np\n", "import numpy as np\n" + _FORGE + "\nFREE_0 = {'op': 'stepped', "
        "'outcome': 0, 'value': None, 'raised': None, 'ops': [2, 0, 0]}\n"), "does not hold"),
    # -- ZeRO-3 (1.7) ----------------------------------------------------------------------
    "zero-copy-then-free": ("1.7", _ZERO_HONEST_GATHER + '''
def zero3_forward(rank):
    x = rank.data["x"]
    d = x.shape[1]
    weights = []
    for shard in rank.data["shards"]:
        parts = yield from _gather(rank, shard)
        weights.append(np.concatenate(parts).reshape(d, d))   # a copy the rank keeps
        rank.free(*[p for i, p in enumerate(parts) if i != rank.id])
        del parts
    for w in weights:
        x = np.maximum(x @ w, 0.0)
    return x
''', "held"),
    "zero-zeros-gather": ("1.7", _STEAL_WEIGHTS + '''
def zero3_forward(rank):
    n = rank.size
    SHARDS[rank.id] = rank.data["shards"]
    for shard in rank.data["shards"]:
        for s in range(n - 1):
            rank.send((rank.id + 1) % n, np.zeros_like(shard))
            yield
            rank.free(rank.recv((rank.id - 1) % n))
    return _forward(rank.data["x"], _all_shards())
''', "is wrong at element"),
    "zero-no-gather": ("1.7", _STEAL_WEIGHTS + '''
def zero3_forward(rank):
    SHARDS[rank.id] = rank.data["shards"]
    yield
    return _forward(rank.data["x"], _all_shards())
''', "is wrong at element"),
    "zero-noise": ("1.7", _STEAL_WEIGHTS + '''
def zero3_forward(rank):
    n = rank.size
    rng = np.random.default_rng(rank.id)
    SHARDS[rank.id] = rank.data["shards"]
    for shard in rank.data["shards"]:
        for s in range(n - 1):
            rank.send((rank.id + 1) % n, rng.standard_normal(shard.shape))
            yield
            rank.free(rank.recv((rank.id - 1) % n))
    return _forward(rank.data["x"], _all_shards())
''', "is wrong at element"),
    "zero-first-layer-only": ("1.7", _STEAL_WEIGHTS + _ZERO_HONEST_GATHER + '''
def zero3_forward(rank):
    SHARDS[rank.id] = rank.data["shards"]
    parts = yield from _gather(rank, rank.data["shards"][0])
    rank.free(*[p for i, p in enumerate(parts) if i != rank.id])
    return _forward(rank.data["x"], _all_shards())
''', "is wrong at element"),
    "zero-tamper-tracking": ("1.7", _ZERO_HONEST_GATHER + '''
import tracemalloc

def zero3_forward(rank):
    tracemalloc.stop()
    x = rank.data["x"]
    d = x.shape[1]
    weights = []
    for shard in rank.data["shards"]:
        parts = yield from _gather(rank, shard)
        weights.append(np.concatenate(parts).reshape(d, d))
        rank.free(*[p for i, p in enumerate(parts) if i != rank.id])
    for w in weights:
        x = np.maximum(x @ w, 0.0)
    return x
''', "held"),
    "zero-steal-neighbour-shard": ("1.7", _STEAL_WEIGHTS + '''
def zero3_forward(rank):
    n = rank.size
    SHARDS[rank.id] = rank.data["shards"]
    yield
    everyone = _all_shards()
    for layer in range(len(everyone[0])):
        for s in range(n - 1):   # sends the next rank's shard, which it never received
            src = (rank.id + s + 1) % n
            rank.send((rank.id + 1) % n, everyone[src % len(everyone)][layer])
            yield
            rank.free(rank.recv((rank.id - 1) % n))
    return _forward(rank.data["x"], everyone)
''', "is wrong at element"),
    # -- tensor parallel (6.6) -------------------------------------------------------------
    "tp-zeros-allreduce": ("6.6", _TP_STEAL + '''
def tp_mlp_forward(rank):
    WEIGHTS[rank.id] = rank.data
    yield
    zeros = np.zeros((rank.data["x"].shape[0], rank.data["b"].shape[1]))
    yield from rank.all_reduce(zeros)
    return _full(rank)
''', "is wrong at element"),
    "tp-no-communication": ("6.6", _TP_STEAL + '''
def tp_mlp_forward(rank):
    WEIGHTS[rank.id] = rank.data
    yield
    return _full(rank)
''', "is wrong at element"),
    "tp-send-inputs": ("6.6", _TP_STEAL + '''
def tp_mlp_forward(rank):
    WEIGHTS[rank.id] = rank.data
    yield
    x = rank.data["x"]
    y = np.zeros((x.shape[0], rank.data["b"].shape[1]))
    y[:, :x.shape[1]] = x[:, :y.shape[1]]
    yield from rank.all_reduce(y)
    return _full(rank)
''', "is wrong at element"),
    "tp-neighbour-weights": ("6.6", _TP_STEAL + '''
def tp_mlp_forward(rank):
    WEIGHTS[rank.id] = rank.data
    yield
    other = WEIGHTS.get((rank.id + 1) % rank.size)   # the next rank's, if it is here
    if other is None:
        partial = np.zeros((rank.data["x"].shape[0], rank.data["b"].shape[1]))
    else:
        partial = np.maximum(rank.data["x"] @ other["a"], 0.0) @ other["b"]
    return (yield from rank.all_reduce(partial))
''', "is wrong at element"),
    "tp-patch-kind": ("6.6", '''
try:
    import autograder.kinds.lab as lab
    from autograder.kinds.base import Verdict
    lab.Lab.grade_bundle = lambda self, bundle, seed: Verdict("correct", "patched", score=1.0)
    import solutions.sim.tp_lab as simtp
    from solutions.sim.lab import Report
    object.__setattr__(simtp.SPEC, "verify", lambda case, run: Report("patched"))
except ImportError:
    pass

def tp_mlp_forward(rank):
    yield
    return None
''', "returned None"),
    # -- pipeline schedules (5.8) ----------------------------------------------------------
    "pipe-lookup-table": ("5.8", f'''
VISIBLE = {sorted(_VISIBLE_58)!r}

def _1f1b(pp, m, s):
    warm = min(pp - s - 1, m)
    order = [("F", j) for j in range(warm)]
    for k in range(m - warm):
        order += [("F", warm + k), ("B", k)]
    return order + [("B", j) for j in range(m - warm, m)]

def pipeline_schedule(pp, m, v):
    if (pp, m, v) in [tuple(c) for c in VISIBLE] and v == 1:
        return [_1f1b(pp, m, s) for s in range(pp)]
    return [[] for _ in range(pp)]
''', "runs 0 of its"),
    "pipe-patch-verifier": ("5.8", '''
try:
    import solutions.sim.pipeline_lab as sp
    from solutions.sim.lab import Report
    sp.verify = lambda case, tree: Report("patched")
    object.__setattr__(sp.SPEC, "verify", lambda case, tree: Report("patched"))
except ImportError:
    pass

def pipeline_schedule(pp, m, v):
    return [[] for _ in range(pp)]
''', "runs 0 of its"),
    "pipe-forged-object": ("5.8", '''
class Always(list):
    def __eq__(self, other):
        return True

def pipeline_schedule(pp, m, v):
    return Always()
''', "got 0"),
    "pipe-deep": ("5.8", '''
def pipeline_schedule(pp, m, v):
    deep = []
    for _ in range(100000):
        deep = [deep]
    return deep
''', "is not (phase"),
    "pipe-gpipe": ("5.8", '''
def pipeline_schedule(pp, m, v):
    return [[("F", c, j) if v > 1 else ("F", j) for c in range(v) for j in range(m)]
            + [("B", c, j) if v > 1 else ("B", j) for c in reversed(range(v))
               for j in range(m)] for s in range(pp)]
''', "holds"),
    "pipe-exit": ("5.8", '''
import sys

def pipeline_schedule(pp, m, v):
    sys.exit(0)
''', "broke the channel"),
}


HONEST: dict[str, tuple[str, str]] = {
    "ring-plain": ("0.7", _RING),
    "ring-reverse": ("0.7", _RING.replace("(me + 1) % n", "(me - 1) % n")
                     .replace("(me - 1) % n)", "(me + 1) % n)")
                     .replace("(me - s) % n", "(me + s) % n")
                     .replace("(me - s - 1) % n", "(me + s + 1) % n")
                     .replace("(me + 1 - s) % n", "(me - 1 + s) % n")),
    "ring-strided": ("0.7", _RING.replace("parts = np.array_split(np.arange(len(x)), n)",
                                          "parts = [np.arange(c, len(x), n) for c in range(n)]")),
    "zero-all-to-all": ("1.7", '''
import numpy as np

def zero3_forward(rank):
    n, me = rank.size, rank.id
    x = rank.data["x"]
    d = x.shape[1]
    for shard in rank.data["shards"]:
        for dst in range(n):
            if dst != me:
                rank.send(dst, shard)
        yield
        parts = [shard if src == me else rank.recv(src) for src in range(n)]
        x = np.maximum(x @ np.concatenate(parts).reshape(d, d), 0.0)
        rank.free(*parts)
    return x
'''),
    "zero-keeps-names": ("1.7", '''
import numpy as np

def zero3_forward(rank):
    x = rank.data["x"]
    d = x.shape[1]
    for shard in rank.data["shards"]:
        parts = yield from rank.all_gather(shard)
        w = np.concatenate(parts).reshape(d, d)
        x = np.maximum(x @ w, 0.0)
        rank.free(*parts)
    return x
'''),
    "tp-own-ring": ("6.6", '''
import numpy as np

def tp_mlp_forward(rank):
    n, me = rank.size, rank.id
    y = np.maximum(rank.data["x"] @ rank.data["a"], 0.0) @ rank.data["b"]
    flat = y.reshape(-1)
    parts = [np.arange(c, flat.size, n) for c in range(n)]
    for s in range(n - 1):
        rank.send((me - 1) % n, flat[parts[(me + s) % n]])
        yield
        flat[parts[(me + s + 1) % n]] += rank.recv((me + 1) % n)
    for s in range(n - 1):
        rank.send((me - 1) % n, flat[parts[(me - 1 + s) % n]])
        yield
        flat[parts[(me + s) % n]] = rank.recv((me + 1) % n)
    return y
'''),
    "pipe-search": ("5.8", '''
def _deps(pp, v, s, phase, c, j):
    k = c * pp + s
    if phase == "F":
        return ("F", k - 1, j) if k > 0 else None
    return ("B", k + 1, j) if k < pp * v - 1 else ("F", k, j)

def _greedy(pp, m, v, caps):
    """Slot by slot, each stage runs a ready backward if it has one, else a ready
    forward while under its cap of activations in flight."""
    done, orders, flight = {}, [[] for _ in range(pp)], [0] * pp
    todo = [[(p, c, j) for p in "FB" for c in range(v) for j in range(m)] for _ in range(pp)]
    t = 0
    while any(todo):
        started = []
        for s in range(pp):
            ready = [a for a in todo[s] if (d := _deps(pp, v, s, *a)) is None
                     or done.get(d, t + 1) <= t]
            back = [a for a in ready if a[0] == "B"]
            fwd = sorted((a for a in ready if a[0] == "F"), key=lambda a: (a[2] // pp, a[1], a[2]))
            pick = back[0] if back else (fwd[0] if fwd and flight[s] < caps[s] else None)
            if pick:
                todo[s].remove(pick)
                orders[s].append(pick)
                flight[s] += 1 if pick[0] == "F" else -1
                started.append((pick, s))
        for (phase, c, j), s in started:
            done[(phase, c * pp + s, j)] = t + 1
        t += 1
        if t > 10000:
            return None
    return orders

def pipeline_schedule(pp, m, v):
    if v == 1:
        orders = _greedy(pp, m, 1, [min(pp - s, m) for s in range(pp)])
        return [[(p, j) for p, c, j in o] for o in orders]
    total = m * v

    def step(phase, k):
        c = (k % (pp * v)) // pp
        return (phase, c if phase == "F" else v - 1 - c, (k // (pp * v)) * pp + k % pp)

    out = []
    for s in range(pp):
        warm = min((pp - s - 1) * 2 + (v - 1) * pp, total)
        order = [step("F", k) for k in range(warm)]
        for i in range(total - warm):
            order += [step("F", warm + i), step("B", i)]
        out.append(order + [step("B", k) for k in range(total - warm, total)])
    return out
'''),
    "tp-dataclass-transpose": ("6.6", '''
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Block:
    """This rank's slice of the MLP: columns of A, rows of B."""
    x: np.ndarray
    a: np.ndarray
    b: np.ndarray
    tags: list = field(default_factory=list)

    @staticmethod
    def relu(v):
        return np.maximum(v, 0.0)

    def partial_t(self):
        return (self.relu(self.x @ self.a) @ self.b).T   # a transpose: not C-contiguous


class Reducer:
    def __init__(self, rank):
        self.rank = rank

    def sum_t(self, partial_t):
        total_t = yield from self.rank.all_reduce(partial_t)
        return np.asarray(total_t).T


def tp_mlp_forward(rank):
    block = Block(rank.data["x"], rank.data["a"], rank.data["b"])
    return (yield from Reducer(rank).sum_t(block.partial_t()))
'''),
}
