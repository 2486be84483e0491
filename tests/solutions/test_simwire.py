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
    (struct.pack(">I", 3) + b"abc" + struct.pack(">I", 0), "not JSON"),
    (struct.pack(">I", 2) + b"[]" + struct.pack(">I", 0), "not an object with an op"),
])
def test_a_malformed_frame_is_refused_before_anything_is_allocated(raw: bytes,
                                                                   fragment: str) -> None:
    with pytest.raises(simwire.WireError, match=fragment):
        simwire.read_frame(io.BytesIO(raw))


def _raw(header: dict, codes: list[int] = (), dims: list[list[int]] = (),
         body: bytes = b"") -> io.BytesIO:
    """A frame written by hand: header, the binary array table (dtype codes, each array's
    dimensions), then ``body``: what a forged channel could send."""
    text = json.dumps(header).encode()
    table = (struct.pack(">I", len(codes)) + bytes(codes) + bytes(len(d) for d in dims)
             + b"".join(struct.pack("<I", n) for d in dims for n in d))
    return io.BytesIO(struct.pack(">I", len(text)) + text + table + body)


def test_sizes_dtypes_and_depth_are_bounded() -> None:
    f8 = simwire.DTYPES.index("<f8")
    with pytest.raises(simwire.WireError, match="larger than"):
        simwire.read_frame(_raw({"op": "s"}, [f8], [[1 << 30, 1 << 30]]))
    with pytest.raises(simwire.WireError, match="malformed description"):
        simwire.read_frame(_raw({"op": "s"}, [len(simwire.DTYPES)], [[1]]))
    with pytest.raises(simwire.WireError, match="malformed shape"):
        simwire.read_frame(_raw({"op": "s"}, [f8], [[1] * (simwire.MAX_DIMS + 1)]))
    with pytest.raises(simwire.WireError, match="malformed shape"):
        simwire.read_frame(_raw({"op": "s"}, [f8], [[1 << 31]]))
    with pytest.raises(simwire.WireError, match="more than 16 bytes"):
        simwire.read_frame(_raw({"op": "s"}, [f8], [[3]]), max_array_bytes=16)
    with pytest.raises(simwire.WireError, match="more than 24 bytes"):  # the sum is bounded
        simwire.read_frame(_raw({"op": "s"}, [f8, f8], [[2], [2]]), max_array_bytes=24)
    with pytest.raises(simwire.WireError, match="arrays"):
        simwire.read_frame(_raw({"op": "s"}, [f8] * (simwire.MAX_ARRAYS + 1),
                                [[0]] * (simwire.MAX_ARRAYS + 1)))
    with pytest.raises(simwire.ChannelClosed):  # a table that promises more than is sent
        simwire.read_frame(_raw({"op": "s"}, [f8], [[4]], body=b"\0" * 8))
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(simwire.WireError, match="nested too deep"):
        simwire.read_frame(_raw({"op": "s", "v": deep}))
    assert simwire.to_tree(deep, []) != deep  # a deep value is described, not sent whole
    with pytest.raises(simwire.ChannelClosed):
        simwire.read_frame(io.BytesIO(b""))
    with pytest.raises(simwire.WireError, match="cannot cross"):
        simwire.write_frame(io.BytesIO(), {"op": "s"}, (np.array(["text"]),))


def test_a_hand_written_table_reads_as_its_arrays() -> None:
    i8, u1 = simwire.DTYPES.index("<i8"), simwire.DTYPES.index("|u1")
    body = np.arange(6, dtype="<i8").tobytes() + bytes([7]) + np.int64(9).tobytes()
    header, got = simwire.read_frame(_raw({"op": "s"}, [i8, u1, i8], [[2, 3], [1], []],
                                          body=body))
    assert header == {"op": "s"}
    assert got[0].tolist() == [[0, 1, 2], [3, 4, 5]] and got[1].tolist() == [7]
    assert got[2].shape == () and int(got[2]) == 9


def test_a_step_answer_is_read_only_in_its_layout() -> None:
    def table(*numbers: int) -> list[np.ndarray]:
        return [np.array(numbers, dtype=np.int64)]

    ok = table(0, simwire.YIELDED, 10, 20, 1, 0, 1, 0, 1, simwire.RETURNED, 0, 0, 0)
    assert simwire.step_answer(ok, [0, 1]) == [(0, 10, 20, [0, 1, 0]), (1, 0, 0, [])]
    forged = {
        "other rank": table(1, 0, 0, 0, 0),
        "unknown outcome": table(0, 7, 0, 0, 0),
        "requests past the end": table(0, 0, 0, 0, 5, 0, 1, 0),
        "negative count": table(0, 0, 0, 0, -1),
        "trailing numbers": table(0, 0, 0, 0, 0, 99),
        "short": table(0, 0),
        "floats": [np.zeros(5)],
        "no table": [],
    }
    for name, arrays in forged.items():
        with pytest.raises(simwire.WireError):
            simwire.step_answer(arrays, [0])
            pytest.fail(name)


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
