"""The rank channel's frames: what crosses is copied, typed and bounded before it is read."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest

from solutions.sim import wire as simwire
from solutions.sim.bundle import BundleError, pack, source_bundle, unpack


def _frame(header: dict, arrays: tuple = ()) -> io.BytesIO:
    out = io.BytesIO()
    simwire.write_frame(out, header, arrays)
    out.seek(0)
    return out


def test_a_frame_round_trips_arrays_as_copies() -> None:
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    arrays: list[np.ndarray] = []
    tree = simwire.to_tree({"x": a, "k": (1, 2.5, None)}, arrays)
    header, got = simwire.read_frame(_frame({"op": "t", "v": tree}, tuple(arrays)))
    value = simwire.from_tree(header["v"], got)
    assert value["k"] == [1, 2.5, None] and value["x"].tolist() == a.tolist()
    assert value["x"] is not a and not value["x"].flags.writeable  # a copy, read-only


@pytest.mark.parametrize("raw, fragment", [
    (struct.pack(">I", 1 << 30), "a frame header of"),
    (struct.pack(">I", 3) + b"abc", "not JSON"),
    (struct.pack(">I", 2) + b"[]", "not an object with an op"),
])
def test_a_malformed_frame_is_refused_before_anything_is_allocated(raw: bytes,
                                                                   fragment: str) -> None:
    with pytest.raises(simwire.WireError, match=fragment):
        simwire.read_frame(io.BytesIO(raw))


def test_sizes_dtypes_and_depth_are_bounded() -> None:
    def raw(header: dict) -> io.BytesIO:
        text = json.dumps(header).encode()
        return io.BytesIO(struct.pack(">I", len(text)) + text)

    with pytest.raises(simwire.WireError, match="larger than"):
        simwire.read_frame(raw({"op": "s", "arrays": [["<f8", [1 << 30, 1 << 30]]]}))
    with pytest.raises(simwire.WireError, match="malformed description"):
        simwire.read_frame(raw({"op": "s", "arrays": [["|O", [1]]]}))
    with pytest.raises(simwire.WireError, match="more than 16 bytes"):
        simwire.read_frame(raw({"op": "s", "arrays": [["<f8", [3]]]}), max_array_bytes=16)
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(simwire.WireError, match="nested too deep"):
        simwire.read_frame(raw({"op": "s", "v": deep}))
    assert simwire.to_tree(deep, []) != deep  # a deep value is described, not sent whole
    with pytest.raises(simwire.ChannelClosed):
        simwire.read_frame(io.BytesIO(b""))


def test_a_function_travels_with_its_helpers_closures_and_defaults() -> None:
    scale = 3

    def helper(x: int) -> int:
        return x * scale

    def learner(x: int, extra: int = 1) -> int:
        return helper(x) + extra + len(np.arange(2))

    rebuilt = unpack(json.loads(json.dumps(pack(learner))))
    assert rebuilt(2) == learner(2) == 9
    namespace: dict = {}
    exec("def f(n):\n    return n + 1\n", namespace)   # no source file at all
    assert unpack(pack(namespace["f"]))(1) == 2
    assert unpack(source_bundle("def g():\n    return 5\n", "g.py", "g"))() == 5
    with pytest.raises(BundleError):
        pack(print)
    lock = __import__("threading").Lock()
    with pytest.raises(BundleError, match="cannot be shipped"):
        pack(lambda: lock)
