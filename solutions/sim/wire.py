"""The rank channel's wire format: length-prefixed frames of JSON plus raw array bytes.

The simulator (the trusted side, :mod:`solutions.sim.channel`) and the process that runs the
learner's rank functions (the untrusted side, :mod:`solutions.sim.host`) talk only through
frames on a pair of pipes. A frame is::

    4-byte big-endian header length | header (UTF-8 JSON object) | array bytes

The header is a small JSON object (an ``"op"`` and its fields); arrays travel as raw bytes
after it, described in the header by ``"arrays": [[dtype, shape], ...]`` and referenced
from JSON trees as ``{"@array": k}``. Everything is copied across: a payload is bytes, a
dtype from a short list and a shape, so nothing on one side is an object of the other.

:func:`read_frame` is written for the trusted side reading hostile bytes: every size is
bounded before anything is allocated, dtypes come from :data:`DTYPES`, shapes have at
most :data:`MAX_DIMS` dimensions whose product must match the byte count, and JSON trees
are bounded in depth and in nodes. This module needs only the standard library and numpy,
so the untrusted side can load it from a copy of its source.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, BinaryIO

import numpy as np

DTYPES = ("<i8", "<i4", "<f8", "<f4", "<f2", "|b1", "<u8", "<u4", "|u1")
MAX_HEADER_BYTES = 1 << 20          # one frame's JSON
MAX_FRAME_ARRAY_BYTES = 256 << 20   # one frame's arrays together
MAX_ARRAYS = 4096                   # arrays in one frame
MAX_DIMS = 8
MAX_DEPTH = 32                      # nesting of a JSON tree
VALUE_DEPTH = MAX_DEPTH - 8         # nesting of a value inside a frame (headers add some)
MAX_NODES = 200_000                 # values in a JSON tree


class WireError(ValueError):
    """A frame that breaks the format or its bounds (a forged or corrupted channel)."""


class ChannelClosed(EOFError):
    """The other side closed its end (it exited, crashed or was stopped)."""


def to_tree(value: Any, arrays: list[np.ndarray], depth: int = 0) -> Any:
    """``value`` as a JSON-ready tree, numeric arrays moved into ``arrays`` (as copies in
    C order) and replaced by ``{"@array": k}``; numpy scalars become Python numbers, tuples
    lists; anything else becomes a short description string."""
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1 << 63:
            return f"<int of {value.bit_length()} bits>"
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)
        return value
    if isinstance(value, np.ndarray) and value.dtype.str in DTYPES and value.ndim <= MAX_DIMS:
        arrays.append(np.ascontiguousarray(value))
        return {"@array": len(arrays) - 1}
    if isinstance(value, np.generic):
        return to_tree(value.item(), arrays, depth)
    if depth < VALUE_DEPTH and isinstance(value, (list, tuple)):
        if len(value) > MAX_NODES // 4:
            return f"<{type(value).__name__} of {len(value)} items>"
        return [to_tree(v, arrays, depth + 1) for v in value]
    if depth < VALUE_DEPTH and isinstance(value, dict):
        return {str(k): to_tree(v, arrays, depth + 1) for k, v in value.items()}
    try:
        return f"<{type(value).__name__}: {repr(value)[:80]}>"
    except Exception:  # noqa: BLE001 - an object whose repr is broken
        return f"<{type(value).__name__}>"


def from_tree(tree: Any, arrays: list[np.ndarray]) -> Any:
    """The value back from :func:`to_tree` form (arrays taken from ``arrays``)."""
    if isinstance(tree, dict):
        if set(tree) == {"@array"}:
            k = tree["@array"]
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(arrays):
                raise WireError(f"an array reference {k!r} points nowhere")
            return arrays[k]
        return {k: from_tree(v, arrays) for k, v in tree.items()}
    if isinstance(tree, list):
        return [from_tree(v, arrays) for v in tree]
    return tree


def write_frame(out: BinaryIO, header: dict[str, Any],
                arrays: list[np.ndarray] | tuple[np.ndarray, ...] = ()) -> None:
    """Write one frame: ``header`` (its ``arrays`` field is filled in) then the arrays'
    bytes, each written from the array's own memory (no intermediate copies)."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    header = dict(header, arrays=[[a.dtype.str, list(a.shape)] for a in arrays])
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    out.write(struct.pack(">I", len(text)) + text)
    for a in arrays:
        if a.nbytes:
            out.write(memoryview(a).cast("B"))  # type: ignore[arg-type]
    out.flush()


def _read_exact(stream: BinaryIO, n: int) -> bytes | memoryview:
    chunks: list[bytes | memoryview] = []
    left = n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise ChannelClosed("the other side of the rank channel closed it")
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _shape(spec: Any, k: int) -> tuple[str, tuple[int, ...], int]:
    """(dtype, shape, byte count) of array ``k``'s description, checked."""
    if not isinstance(spec, list) or len(spec) != 2 or spec[0] not in DTYPES \
            or not isinstance(spec[1], list) or len(spec[1]) > MAX_DIMS:
        raise WireError(f"array {k} has a malformed description")
    dims = spec[1]
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 31
               for d in dims):
        raise WireError(f"array {k} has a malformed shape")
    count = math.prod(dims)
    nbytes = count * np.dtype(spec[0]).itemsize
    if nbytes > MAX_FRAME_ARRAY_BYTES:
        raise WireError(f"array {k} is larger than {MAX_FRAME_ARRAY_BYTES} bytes")
    return spec[0], tuple(dims), nbytes


def _bounded(tree: Any) -> None:
    """WireError unless ``tree`` (as ``json.loads`` built it) nests at most MAX_DEPTH deep
    and holds at most MAX_NODES values: walked level by level, without recursion."""
    level, nodes, depth = [tree], 0, 0
    while level:
        nodes += len(level)
        if nodes > MAX_NODES or depth > MAX_DEPTH:
            raise WireError("a frame's data is nested too deep or holds too many values")
        below: list[Any] = []
        for value in level:
            if type(value) is list:
                below.extend(value)
            elif type(value) is dict:
                below.extend(value.values())
        level, depth = below, depth + 1


def read_frame(stream: BinaryIO, max_array_bytes: int = MAX_FRAME_ARRAY_BYTES,
               ) -> tuple[dict[str, Any], list[np.ndarray]]:
    """One frame: its header and its arrays (read-only, over the bytes read: the other side
    keeps no hold on them). WireError if the frame is malformed or breaks a bound,
    ChannelClosed at end of stream."""
    (length,) = struct.unpack(">I", _read_exact(stream, 4))
    if length > MAX_HEADER_BYTES:
        raise WireError(f"a frame header of {length} bytes (at most {MAX_HEADER_BYTES})")
    try:
        header = json.loads(bytes(_read_exact(stream, length)).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise WireError(f"a frame header is not JSON ({type(error).__name__})") from None
    if not isinstance(header, dict) or not isinstance(header.get("op"), str):
        raise WireError("a frame header is not an object with an op")
    _bounded(header)
    specs = header.pop("arrays", [])
    if not isinstance(specs, list) or len(specs) > MAX_ARRAYS:
        raise WireError("a frame lists too many arrays")
    shapes = [_shape(spec, k) for k, spec in enumerate(specs)]
    if sum(nbytes for *_, nbytes in shapes) > max_array_bytes:
        raise WireError(f"a frame carries more than {max_array_bytes} bytes of arrays")
    arrays = [np.frombuffer(_read_exact(stream, nbytes) if nbytes else b"",
                            dtype=dtype).reshape(shape) for dtype, shape, nbytes in shapes]
    return header, arrays


def array_bytes(value: Any) -> int:
    """Bytes of the numpy arrays in ``value`` (an array, or a list/tuple/dict of them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (list, tuple)):
        return sum(array_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(array_bytes(v) for v in value.values())
    return 0
