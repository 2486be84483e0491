"""Chapter 0: Ring AllReduce: volume, time, measured bandwidth, ring vs tree."""

from __future__ import annotations

import random
from typing import Any

from autograder.exercise import Exercise
from autograder.kinds import Choice, Debug, Function, Misconception, Numeric
from autograder.kinds.base import Params
from autograder.kinds.choice import deal, dealt
from solutions import collectives as col

NCCL_PERF = ("NVIDIA nccl-tests, doc/PERFORMANCE.md (algbw = S/t; AllReduce busbw = "
             "algbw x 2(n-1)/n)")
THAKUR = ("Thakur, Rabenseifner & Gropp, 'Optimization of Collective Communication Operations "
          "in MPICH', IJHPCA 19(1), 2005, §4 (ring and binomial-tree costs)")
PATARASUK = ("Patarasuk & Yuan, 'Bandwidth optimal all-reduce algorithms for clusters of "
             "workstations', JPDC 69(2), 2009 (2(N-1)/N x S is the lower bound)")
A100_SPEC = "NVIDIA A100 Tensor Core GPU datasheet (NVLink: 600 GB/s, i.e. 300 GB/s per direction)"
NVLINK_SPEC = ("NVIDIA H100 Tensor Core GPU datasheet (NVLink: 900 GB/s, 450 GB/s per direction) "
               "and DGX B200 / GB200 NVL72 specifications (fifth-generation NVLink: 1.8 TB/s "
               "per GPU, 900 GB/s per direction)")


#: FP16/BF16 gradients of published models, GB (2 bytes x parameters): GPT-2 124M to 1.5B,
#: OPT/GPT-3 sizes, Llama 1-3, Mistral 7B, Qwen2.5, Gemma 2, Falcon 40B, plus round sizes.
GRADIENT_GB = (0.25, 0.5, 0.7, 1.0, 1.5, 2.0, 2.6, 3.0, 4.0, 5.4, 6.0, 7.0, 8.0, 13.4, 14.0,
               16.0, 18.0, 26.0, 28.0, 54.0, 64.0, 80.0, 140.0)


# -- 0.1 --------------------------------------------------------------------------------

EX_0_1 = Exercise(
    id="0.1", chapter=0, category="derive", title="Ring AllReduce volume per GPU",
    prompt=("{n_gpus} GPUs each hold a {message_gb} GB gradient (1 GB = 10^9 bytes). They sum it "
            "with a ring AllReduce. How many GB does each GPU **send** over the whole "
            "operation, reduce-scatter and all-gather together? (It receives the same amount.)"),
    params=dict(n_gpus=8, message_gb=1.0),
    # N = 2 would make the "(N-1)M" misconception equal the answer, and N > 64 would put
    # the "2M" misconception within the tolerance.
    vary=lambda rng: dict(n_gpus=rng.choice([4, 8, 16, 24, 32, 48, 64]),
                          message_gb=rng.choice(GRADIENT_GB)),
    answer_kind=Numeric(unit="GB", rel_tol=0.005),
    reference=lambda p: col.ring_allreduce_gb_per_gpu(p["message_gb"], p["n_gpus"]),
    hints=(
        "The ring cuts the gradient into N equal chunks and runs two phases.",
        "Each phase (reduce-scatter, then all-gather) takes N-1 steps.",
        "In every step each GPU sends one chunk of M/N to its neighbour: 2 x (N-1) x M/N.",
    ),
    explanation=(
        "Reduce-scatter: N-1 steps of M/N each, after which every GPU owns one fully summed "
        "chunk. All-gather: N-1 more steps of M/N to circulate the finished chunks. Each GPU "
        "sends 2(N-1)/N x M = 2 x ({n_gpus}-1)/{n_gpus} x {message_gb} = {expected} GB and "
        "receives as much. The factor tends to 2 as N grows, so the volume per GPU hardly "
        "depends on the number of GPUs; Patarasuk & Yuan proved no AllReduce built from "
        "point-to-point messages can send less."
    ),
    misconceptions=(
        Misconception(lambda p: 2 * p["message_gb"],
                      "2M is the limit for very many GPUs; with N = {n_gpus} the exact factor "
                      "is 2(N-1)/N."),
        Misconception(lambda p: p["message_gb"] * (p["n_gpus"] - 1) / p["n_gpus"],
                      "That is one phase only; an AllReduce is a reduce-scatter followed by an "
                      "all-gather."),
        Misconception(lambda p: 4 * p["message_gb"] * (p["n_gpus"] - 1) / p["n_gpus"],
                      "You added what each GPU sends and what it receives; the question asks "
                      "for the amount sent."),
        Misconception(lambda p: (p["n_gpus"] - 1) * p["message_gb"],
                      "(N-1)M is what the root of a naive gather-then-broadcast receives, not "
                      "what a GPU sends in a ring."),
    ),
    sources=(NCCL_PERF, PATARASUK, THAKUR),
)


# -- 0.2 --------------------------------------------------------------------------------

EX_0_2 = Exercise(
    id="0.2", chapter=0, category="derive", title="Ring AllReduce time, bandwidth only",
    prompt=("{n_gpus} GPUs form a ring. Each GPU can send {link_gb_per_s} GB/s to its "
            "neighbour **while** receiving {link_gb_per_s} GB/s from the other neighbour "
            "({link_gb_per_s} GB/s in each direction). They all-reduce a {message_gb} GB "
            "gradient. Ignoring latency, how many ms does the ring AllReduce take?"),
    params=dict(n_gpus=8, message_gb=2.0, link_gb_per_s=50.0),
    vary=lambda rng: dict(n_gpus=rng.choice([4, 8, 16, 32, 64]),
                          message_gb=rng.choice([0.5, 1.0, 2.0, 4.0, 14.0]),
                          link_gb_per_s=rng.choice([25.0, 50.0, 100.0, 200.0, 300.0])),
    answer_kind=Numeric(unit="ms", rel_tol=0.01),
    reference=lambda p: col.ring_allreduce_time_ms(p["message_gb"], p["n_gpus"],
                                                   p["link_gb_per_s"], 0.0),
    hints=(
        "All GPUs send at the same time, so the time is what one GPU sends divided by its "
        "send bandwidth.",
        "One GPU sends 2(N-1)/N x M in total (exercise 0.1).",
        "Time = 2(N-1)/N x M / B; convert seconds to ms.",
    ),
    explanation=(
        "Each GPU sends 2 x ({n_gpus}-1)/{n_gpus} x {message_gb} GB, all links busy at once, "
        "at {link_gb_per_s} GB/s per direction: {expected} ms. Receiving happens on the other "
        "direction of the link at the same time, so it adds nothing. Latency would add "
        "2(N-1) x alpha, e.g. 14 x 5 us = 0.07 ms for 8 GPUs: negligible for a message this "
        "large."
    ),
    misconceptions=(
        Misconception(lambda p: 1000 * col.ring_allreduce_gb_per_gpu(
            p["message_gb"], p["n_gpus"]) / (2 * p["link_gb_per_s"]),
            "Sending and receiving use the two directions of the link; they do not add up to "
            "a faster send. Divide by the per-direction bandwidth."),
        Misconception(lambda p: 1000 * 2 * col.ring_allreduce_gb_per_gpu(
            p["message_gb"], p["n_gpus"]) / p["link_gb_per_s"],
            "The link is full duplex: data received does not queue behind data sent."),
        Misconception(lambda p: 1000 * 2 * p["message_gb"] / p["link_gb_per_s"],
                      "2M/B is the large-N limit; use the exact factor 2(N-1)/N."),
        Misconception(lambda p: col.ring_allreduce_time_ms(
            p["message_gb"], p["n_gpus"], p["link_gb_per_s"], 0.0) / 1000,
            "That number is in seconds; the answer is asked in ms."),
    ),
    sources=(THAKUR, NCCL_PERF),
)


# -- 0.3 --------------------------------------------------------------------------------

def _vary_0_3(rng: random.Random) -> dict[str, Any]:
    n_gpus = rng.choice([4, 8])
    message_gb = rng.choice([0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    peak = rng.choice([300.0, 450.0, 900.0])  # A100 / H100 / B200 NVLink, per direction
    utilisation = rng.uniform(0.52, 0.94)
    busbw = utilisation * peak
    time_ms = 1000 * message_gb * col.busbw_factor("allreduce", n_gpus) / busbw
    return dict(n_gpus=n_gpus, message_gb=message_gb, time_ms=round(time_ms, 1),
                peak_gb_per_s=peak)


def _utilisation_pct(p: Params) -> float:
    return 100 * col.bus_utilisation(p["message_gb"], p["time_ms"], p["n_gpus"],
                                     p["peak_gb_per_s"])


EX_0_3 = Exercise(
    id="0.3", chapter=0, category="trace", title="Bus bandwidth utilisation",
    prompt=("{n_gpus} GPUs are connected by NVLink that gives each GPU {peak_gb_per_s} GB/s "
            "in each direction (marketing figures add the two directions: "
            "2 x {peak_gb_per_s} GB/s). An AllReduce of a {message_gb} GB buffer takes "
            "{time_ms} ms. Compute NCCL's bus bandwidth for this run and give it as a "
            "percentage of the {peak_gb_per_s} GB/s per-direction peak."),
    params=dict(n_gpus=8, message_gb=4.0, time_ms=30.0, peak_gb_per_s=300.0),
    vary=_vary_0_3,
    answer_kind=Numeric(unit="%", rel_tol=0.01),
    reference=_utilisation_pct,
    hints=(
        "First the algorithm bandwidth: buffer size divided by time.",
        "NCCL's bus bandwidth for AllReduce multiplies algbw by 2(n-1)/n, the share of the "
        "buffer each GPU must actually send.",
        "Utilisation = busbw / per-direction peak x 100.",
    ),
    explanation=(
        "algbw = {message_gb} GB / {time_ms} ms; busbw = algbw x 2 x ({n_gpus}-1)/{n_gpus}, "
        "which equals the GB each GPU sent divided by the time. Against the {peak_gb_per_s} "
        "GB/s per-direction peak that is {expected} %. Bus bandwidth, not algbw, is what "
        "compares with the link's speed whatever the number of GPUs."
    ),
    misconceptions=(
        Misconception(lambda p: 100 * col.algorithm_bandwidth_gb_per_s(
            p["message_gb"], p["time_ms"]) / p["peak_gb_per_s"],
            "That uses the algorithm bandwidth S/t. Each GPU actually sent 2(n-1)/n x S, so "
            "multiply by 2(n-1)/n to get the bus bandwidth."),
        Misconception(lambda p: _utilisation_pct(p) / 2,
                      "You compared with the two directions added together. The ring sends "
                      "and receives at the same time; compare with the per-direction peak."),
        Misconception(lambda p: 100 * 2 * col.algorithm_bandwidth_gb_per_s(
            p["message_gb"], p["time_ms"]) / p["peak_gb_per_s"],
            "2 x algbw uses the large-N factor; with n = {n_gpus} it is 2(n-1)/n."),
    ),
    sources=(NCCL_PERF, A100_SPEC, NVLINK_SPEC),
)


# -- 0.4 --------------------------------------------------------------------------------

_RING_RIGHT = ("Right: each ring step moves only M/N and all links work at once, while each "
               "tree round pushes the whole buffer through one link; for this buffer the "
               "bandwidth terms decide.")
_RING_WRONG = ("Not for this buffer: it is so small that latency dominates, and the ring pays "
               "2(N-1) = {ring_steps} latencies against the tree's 2 ceil(log2 N) = "
               "{tree_steps}. Compare the two totals.")
_TREE_RIGHT = ("Right: the buffer is small, so the latency terms decide, and the tree pays "
               "{tree_steps} latencies against the ring's {ring_steps}.")
_TREE_WRONG = ("Fewer rounds only help when latency dominates. For a buffer this large each "
               "tree round costs M/B, N times more than a ring step's M/(N B); multiply it "
               "out.")


def _scenario_0_4(n_gpus: int, message_gb: float, link_gb_per_s: float, latency_us: float,
                  rng: random.Random | None = None) -> dict[str, Any]:
    """0.4's numbers, both totals, and the four options dealt (shuffled when ``rng``)."""
    ring_ms = col.ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)
    tree_ms = col.tree_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)
    counts = dict(ring_steps=2 * (n_gpus - 1), tree_steps=2 * col.tree_rounds(n_gpus))
    ring_wins = ring_ms <= tree_ms
    entries = [
        ("The ring", (_RING_RIGHT if ring_wins else _RING_WRONG).format(**counts), ring_wins),
        ("The tree, because it needs only 2 ceil(log2 N) rounds instead of 2(N-1) steps",
         (_TREE_WRONG if ring_wins else _TREE_RIGHT).format(**counts), not ring_wins),
        ("Both take the same time, because every GPU ends up with the same sum",
         "The result is the same but the cost is not: compare 2(N-1)(alpha + M/(N B)) with "
         "2 ceil(log2 N)(alpha + M/B).", False),
        ("Neither can be decided without knowing the GPU's compute speed",
         "This model has no compute term (the additions are cheap next to moving the "
         "buffer); the two formulas in the notes decide it.", False),
    ]
    why = ("the buffer is large enough that the bandwidth terms decide: the ring's about 2M/B "
           "beats the tree's 2 log2(N) x M/B" if ring_wins else
           "the buffer is so small that the latency terms decide: the tree's "
           f"{counts['tree_steps']} latencies beat the ring's {counts['ring_steps']}")
    return dict(n_gpus=n_gpus, message_gb=message_gb, link_gb_per_s=link_gb_per_s,
                latency_us=latency_us, ring_ms=ring_ms, tree_ms=tree_ms,
                winner="ring" if ring_wins else "tree", why=why, **counts,
                **deal(entries, "ABCD", rng))


def _vary_0_4(rng: random.Random) -> dict[str, Any]:
    """Large buffers (the ring wins) and small, latency-bound ones (the tree wins)."""
    n_gpus = rng.choice([8, 16, 32, 64])
    if rng.random() < 0.5:
        size = rng.choice([0.25, 0.5, 1.0, 4.0, 14.0])
        latency = rng.choice([0.0, 2.0, 5.0, 10.0])
    else:
        size, latency = rng.choice([1e-4, 2e-4, 5e-4]), rng.choice([5.0, 10.0, 20.0])
    return _scenario_0_4(n_gpus, size, rng.choice([25.0, 50.0, 100.0, 300.0]), latency, rng)


EX_0_4 = Exercise(
    id="0.4", chapter=0, category="trace", title="Ring versus a simple tree",
    prompt=("{n_gpus} GPUs all-reduce a {message_gb} GB buffer. Every link carries "
            "{link_gb_per_s} GB/s per direction and each message costs {latency_us} us of "
            "latency. Compare two algorithms under the model in the notes: the ring, and an "
            "unpipelined binomial tree (reduce to a root, then broadcast). Which finishes "
            "first?"),
    notes=(
        "Cost model (alpha = latency, B = per-direction link bandwidth, M = buffer size):\n\n"
        "* **Ring:** 2(N-1) steps, each sending a chunk of M/N: "
        "T = 2(N-1) x (alpha + M/(N B)).\n"
        "* **Binomial tree:** ceil(log2 N) reduce rounds, in each of which the root receives "
        "the *whole* buffer from one partner, then ceil(log2 N) broadcast rounds mirroring "
        "them: T = 2 ceil(log2 N) x (alpha + M/B).\n\n"
        "This tree is a teaching model (MPICH's binomial reduce and broadcast). NCCL's tree "
        "algorithm instead pipelines small chunks through two binary trees, which makes it "
        "nearly as bandwidth-efficient as the ring."
    ),
    params=_scenario_0_4(8, 4.0, 50.0, 5.0),
    vary=_vary_0_4,
    answer_kind=Choice(options=dealt("ABCD")),
    reference=lambda p: p["right"],
    hints=(
        "Write both formulas with the numbers and compare the bandwidth and the latency "
        "terms.",
        "Ring bandwidth term: 2(N-1) x M/(N B), about 2M/B. Tree: 2 ceil(log2 N) x M/B. "
        "Latency terms: 2(N-1) alpha against 2 ceil(log2 N) alpha.",
        "With N = {n_gpus}: the ring's bandwidth term is 2({n_gpus}-1)/{n_gpus} x {message_gb} GB "
        "/ {link_gb_per_s} GB/s, the tree's 2 ceil(log2 {n_gpus}) x {message_gb} GB / "
        "{link_gb_per_s} GB/s; the ring pays {ring_steps} latencies, the tree {tree_steps}.",
    ),
    explanation=(
        "Ring: 2({n_gpus}-1) x ({latency_us} us + {message_gb} GB / ({n_gpus} x "
        "{link_gb_per_s} GB/s)) = {ring_ms:.4g} ms; tree: 2 ceil(log2 {n_gpus}) x "
        "({latency_us} us + {message_gb} GB / {link_gb_per_s} GB/s) = {tree_ms:.4g} ms. Here "
        "{why}, so the {winner} wins (answer {expected}). Gigabyte buffers favour the ring by "
        "a factor of roughly log2 N; the tree's fewer rounds pay off only for small buffers, "
        "where 2(N-1) latencies dominate the ring."
    ),
    sources=(THAKUR, NCCL_PERF,
             "Sanders, Speck & Träff, 'Two-tree algorithms for full bandwidth broadcast, "
             "reduction and scan', Parallel Computing 35(12), 2009 (NCCL's double binary tree)"),
)


# -- 0.5 --------------------------------------------------------------------------------

def _cases_0_5(rng: random.Random) -> tuple[float, int, float, float]:
    return (rng.choice([0.001, 0.1, 0.5, 1.0, 2.0, 14.0]),
            rng.choice([1, 2, 3, 4, 8, 16, 64, 512]),
            rng.choice([12.5, 25.0, 50.0, 100.0, 300.0, 450.0]),
            rng.choice([0.0, 1.0, 2.5, 5.0, 10.0]))


EX_0_5 = Exercise(
    id="0.5", chapter=0, category="build", title="Write ring_allreduce_time_ms",
    prompt=("Write `ring_allreduce_time_ms(message_gb, n_gpus, link_gb_per_s, latency_us)`: the "
            "time in ms of a ring AllReduce of a `message_gb` GB buffer (10^9 bytes) over "
            "`n_gpus` GPUs, where each link carries `link_gb_per_s` GB/s per direction and "
            "every step pays `latency_us` microseconds. Include both the bandwidth and the "
            "latency term. For example, 4 GB on 16 GPUs at 100 GB/s with 10 us latency takes "
            "75.3 ms."),
    notes=(
        "Rules: one GPU has nothing to exchange and takes 0 ms. Raise `ValueError` when "
        "`n_gpus` is not a whole number >= 1, when `link_gb_per_s` is not > 0, or when "
        "`message_gb` or `latency_us` is negative."
    ),
    params={},
    vary=lambda rng: {},
    answer_kind=Function(
        function_name="ring_allreduce_time_ms",
        signature="(message_gb, n_gpus, link_gb_per_s, latency_us)",
        cases=_cases_0_5,
        edge_cases=(
            (4.0, 16, 100.0, 10.0),   # the worked example: 75.3 ms
            (1.0, 1, 100.0, 5.0),     # one GPU: 0 ms
            (4.0, 16, 100.0, 0.0),    # zero latency: bandwidth term only, 75 ms
            (0.0, 16, 100.0, 10.0),   # empty buffer: latency only, 0.3 ms
            (1.0, 0, 100.0, 5.0),     # no GPUs: ValueError
            (1.0, 8, -50.0, 5.0),     # negative bandwidth: ValueError
            (1.0, 8, 0.0, 5.0),       # zero bandwidth: ValueError
            (1.0, 8, 50.0, -1.0),     # negative latency: ValueError
        ),
    ),
    reference=lambda p: col.ring_allreduce_time_ms,
    hints=(
        "How many steps does a ring AllReduce take, and how much does each step send?",
        "2(N-1) steps; each sends one chunk of message_gb / n_gpus.",
        "Per step: 1000 x chunk / bandwidth ms plus latency_us / 1000 ms; multiply by 2(N-1). "
        "Check the inputs first.",
    ),
    explanation=(
        "T = 2(N-1) x (alpha + (M/N)/B). Units: (M/N)/B is in seconds (x 1000 for ms), the "
        "latency is in us (/ 1000 for ms). For 4 GB, 16 GPUs, 100 GB/s and 10 us: "
        "30 x (2.5 ms + 0.01 ms) = 75.3 ms. With N = 1 the step count is 0, so the time "
        "is 0."
    ),
    sources=(THAKUR, NCCL_PERF),
)


# -- 0.6 --------------------------------------------------------------------------------

BUGGY_0_6 = '''def ring_allreduce_bandwidth_time_s(message_gb, n_gpus, link_gb_per_s):
    steps = 2 * (n_gpus - 1)                 # reduce-scatter + all-gather
    chunk_gb = message_gb / n_gpus           # each step moves one chunk per link
    step_time_s = chunk_gb / link_gb_per_s
    total_time_s = 2 * steps * step_time_s
    return total_time_s
'''


def _ring_listing(steps: str, chunk: str, step_time: str, total: str) -> str:
    """The ring time function with one of its four formula lines (2-5) replaced."""
    return (f"def ring_allreduce_bandwidth_time_s(message_gb, n_gpus, link_gb_per_s):\n"
            f"    {steps:<37}# reduce-scatter + all-gather\n"
            f"    {chunk:<37}# each step moves one chunk per link\n"
            f"    {step_time}\n    {total}\n    return total_time_s\n")


_STEPS, _CHUNK = "steps = 2 * (n_gpus - 1)", "chunk_gb = message_gb / n_gpus"
_STEP_TIME, _TOTAL = "step_time_s = chunk_gb / link_gb_per_s", "total_time_s = steps * step_time_s"

#: the buggy programs of 0.6, one doubled factor each: (listing, buggy line, what it does)
PROGRAMS_0_6: tuple[tuple[str, int, str], ...] = (
    (BUGGY_0_6, 5, "`steps = 2(N-1)` on line 2 already counts both phases, so "
     "`total_time_s = 2 * steps * step_time_s` counts them twice. Fix: "
     "`total_time_s = steps * step_time_s`"),
    (_ring_listing("steps = 4 * (n_gpus - 1)", _CHUNK, _STEP_TIME, _TOTAL), 2,
     "the ring has N - 1 reduce-scatter steps and N - 1 all-gather steps, 2(N-1) in all; "
     "`steps = 4 * (n_gpus - 1)` counts each phase twice. Fix: `steps = 2 * (n_gpus - 1)`"),
    (_ring_listing(_STEPS, "chunk_gb = 2 * message_gb / n_gpus", _STEP_TIME, _TOTAL), 3,
     "each step sends one chunk of M/N per link, not 2M/N; the factor 2 for the two phases "
     "is already in `steps`. Fix: `chunk_gb = message_gb / n_gpus`"),
    (_ring_listing(_STEPS, _CHUNK, "step_time_s = chunk_gb / (link_gb_per_s / 2)", _TOTAL), 4,
     "`link_gb_per_s` is already the bandwidth per direction, which is what one step's send "
     "uses; halving it charges each chunk twice. Fix: `step_time_s = chunk_gb / "
     "link_gb_per_s`"),
)


def _params_0_6(program: int, message_gb: float, n_gpus: int,
                link_gb_per_s: float) -> dict[str, Any]:
    listing, line, why = PROGRAMS_0_6[program]
    right_s = col.ring_allreduce_bandwidth_time_s(message_gb, n_gpus, link_gb_per_s)
    return dict(program=program, message_gb=message_gb, n_gpus=n_gpus,
                link_gb_per_s=link_gb_per_s, right_s=right_s, wrong_s=2 * right_s,
                bug_line=line, why=why)


def _vary_0_6(rng: random.Random) -> dict[str, Any]:
    return _params_0_6(rng.randrange(len(PROGRAMS_0_6)), rng.choice([1.0, 2.0, 4.0, 8.0]),
                       rng.choice([4, 8, 16]), rng.choice([25.0, 50.0, 100.0]))


def _cases_0_6(rng: random.Random) -> tuple[float, int, float]:
    return (rng.choice([0.1, 0.5, 1.0, 2.0, 4.0, 14.0]),
            rng.choice([1, 2, 4, 8, 16, 64, 256]),
            rng.choice([25.0, 50.0, 100.0, 300.0]))


EX_0_6 = Exercise(
    id="0.6", chapter=0, category="debug", title="The doubled AllReduce time",
    prompt=("This function should return the bandwidth-only time in seconds of a ring "
            "AllReduce (per-direction link bandwidth `link_gb_per_s`, latency ignored). It "
            "returns twice the right value: for {message_gb} GB on {n_gpus} GPUs at "
            "{link_gb_per_s} GB/s it gives {wrong_s:.4g} s instead of {right_s:.4g} s. Which "
            "line is wrong? Give the line number (the `def` line is 1) and the fixed "
            "function."),
    params=_params_0_6(0, 3.0, 16, 25.0),
    vary=_vary_0_6,
    answer_kind=Debug(
        code=BUGGY_0_6,
        programs=tuple(listing for listing, _, _ in PROGRAMS_0_6[1:]),
        fix=Function(
            function_name="ring_allreduce_bandwidth_time_s",
            signature="(message_gb, n_gpus, link_gb_per_s)",
            cases=_cases_0_6,
            edge_cases=((3.0, 16, 25.0), (1.0, 1, 100.0), (1.0, 2, 100.0)),
        ),
    ),
    reference=lambda p: (p["bug_line"], col.ring_allreduce_bandwidth_time_s),
    hints=(
        "Count how many times the factor 2 for the two phases appears, and check every "
        "other factor against the formula 2(N-1)/N x M / B.",
        "A ring AllReduce has 2(N-1) steps (reduce-scatter and all-gather), each sending one "
        "chunk of M/N over a link at B GB/s per direction.",
        "Line {bug_line} is where the extra factor 2 enters.",
    ),
    explanation=(
        "Line {bug_line} is the bug: {why}. The fixed function computes 2(N-1)/N x M / B, the "
        "data each GPU sends divided by its bandwidth ({right_s:.4g} s for {message_gb} GB on "
        "{n_gpus} GPUs at {link_gb_per_s} GB/s)."
    ),
    sources=(THAKUR,),
)


EXERCISES: tuple[Exercise, ...] = (EX_0_1, EX_0_2, EX_0_3, EX_0_4, EX_0_5, EX_0_6)
