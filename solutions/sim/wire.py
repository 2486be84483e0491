"""The rank channel's wire format: length-prefixed frames of JSON plus raw array bytes.

The simulator (the trusted side, :mod:`solutions.sim.channel`) and the process that runs the
learner's rank functions (the untrusted side, :mod:`solutions.sim.host`) talk only through
frames on a pair of pipes. A frame is::

    4-byte big-endian header length | header (UTF-8 JSON object)
    | 4-byte big-endian array count K | K dtype codes (1 byte each) | K ranks (1 byte each)
    | every array's dimensions (4-byte little-endian each) | array bytes

The header is a small JSON object (an ``"op"`` and its fields); arrays travel as raw bytes
after it, described by the binary table (a dtype is an index into :data:`DTYPES`) and
referenced from JSON trees as ``{"@array": k}``. Everything is copied across: a payload is
bytes, a dtype from a short list and a shape, so nothing on one side is an object of the
other. The table is binary, not JSON, because the ranks' process may run under
:mod:`tracemalloc`, which makes every Python object it builds about ten times dearer: a
step's frame then costs a few objects, not one per number.

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
_CODE = {name: code for code, name in enumerate(DTYPES)}
_ITEMSIZE = tuple(np.dtype(name).itemsize for name in DTYPES)
MAX_HEADER_BYTES = 1 << 20          # one frame's JSON
MAX_FRAME_ARRAY_BYTES = 256 << 20   # one frame's arrays together
MAX_ARRAYS = 4096                   # arrays in one frame
MAX_DIMS = 8
MAX_DEPTH = 32                      # nesting of a JSON tree
VALUE_DEPTH = MAX_DEPTH - 8         # nesting of a value inside a frame (headers add some)
MAX_NODES = 200_000                 # values in a JSON tree


# How a run crosses (solutions.sim.channel sends the case, solutions.sim.host streams the
# steps). The case: header {"op": "case", "n", "collectives", "track", "budget",
# "max_steps", "data": {rank: tree}} and the arrays the data trees refer to. Then one
# answer per step, unasked: header {"op": "stepped", "values": {rank: tree}, "raised":
# {rank: text}, "last": bool} and the arrays (table, *payloads); the int64 table holds,
# per rank run (those still running, in rank order),
#     rank, outcome, held bytes, peak bytes, n, then n x (kind, a, b)
# where kind 0 is a send to rank a of payloads[b]; 1 a receive from rank a of message b
# (-1: none had arrived); 2 a free of message a. Message ids count the run's sends in the
# order the steps apply them. A returned value refers to the payloads.
YIELDED, RETURNED, RAISED = 0, 1, 2
OUTCOMES = ("yielded", "returned", "raised")


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
    """Write one frame: ``header``, the arrays' table, then the arrays' bytes, each written
    from the array's own memory (no intermediate copies). WireError for an array whose
    dtype is not one of :data:`DTYPES`."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    out.write(_head(header, arrays))
    for a in arrays:
        if a.nbytes:
            out.write(memoryview(a).cast("B"))  # type: ignore[arg-type]
    out.flush()


def _head(header: dict[str, Any], arrays: list[np.ndarray]) -> bytes:
    """The frame up to its arrays' bytes: the header and the arrays' table."""
    try:
        codes = bytes([_CODE[a.dtype.str] for a in arrays])
    except KeyError as error:
        raise WireError(f"an array of dtype {error.args[0]} cannot cross the channel") from None
    dims = [d for a in arrays for d in a.shape]
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return b"".join((struct.pack(">I", len(text)), text, struct.pack(">I", len(arrays)), codes,
                     bytes([a.ndim for a in arrays]), struct.pack(f"<{len(dims)}I", *dims)))


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


def _table(stream: BinaryIO, count: int, max_array_bytes: int,
           ) -> list[tuple[str, tuple[int, ...], int]]:
    """(dtype, shape, byte count) of each of the ``count`` arrays the frame carries, checked:
    at most MAX_ARRAYS arrays of known dtypes and at most MAX_DIMS dimensions, each below
    2**31, and at most ``max_array_bytes`` in all."""
    if count > MAX_ARRAYS:
        raise WireError(f"a frame lists {count} arrays (at most {MAX_ARRAYS})")
    if not count:
        return []
    kinds = bytes(_read_exact(stream, 2 * count))
    codes, ranks = kinds[:count], kinds[count:]
    if max(codes) >= len(DTYPES):
        raise WireError(f"array {next(k for k, c in enumerate(codes) if c >= len(DTYPES))} "
                        "has a malformed description (an unknown dtype)")
    if max(ranks) > MAX_DIMS:
        raise WireError(f"array {next(k for k, r in enumerate(ranks) if r > MAX_DIMS)} has "
                        f"a malformed shape (more than {MAX_DIMS} dimensions)")
    dims = struct.unpack(f"<{sum(ranks)}I", _read_exact(stream, 4 * sum(ranks)))
    if dims and max(dims) >= 1 << 31:
        raise WireError("an array has a malformed shape (a dimension of 2**31 or more)")
    return _shapes(codes, ranks, dims, max_array_bytes)


def _shapes(codes: bytes, ranks: bytes, dims: tuple[int, ...], max_array_bytes: int,
            ) -> list[tuple[str, tuple[int, ...], int]]:
    # kept short: the ranks' process may run under tracemalloc, whose cost per allocation
    # grows with how far into its function the allocation happens
    shapes, at, total = [], 0, 0
    for k, code in enumerate(codes):
        shape = dims[at:at + ranks[k]]
        at += ranks[k]
        nbytes = math.prod(shape) * _ITEMSIZE[code]
        if nbytes > MAX_FRAME_ARRAY_BYTES:
            raise WireError(f"array {k} is larger than {MAX_FRAME_ARRAY_BYTES} bytes")
        total += nbytes
        if total > max_array_bytes:
            raise WireError(f"a frame carries more than {max_array_bytes} bytes of arrays")
        shapes.append((DTYPES[code], shape, nbytes))
    return shapes


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
    ChannelClosed at end of stream. No array's bytes are read before the whole table is
    checked."""
    (length,) = struct.unpack(">I", _read_exact(stream, 4))
    if length > MAX_HEADER_BYTES:
        raise WireError(f"a frame header of {length} bytes (at most {MAX_HEADER_BYTES})")
    head = _read_exact(stream, length + 4)  # the header and the arrays' count
    try:
        header = json.loads(bytes(head[:length]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise WireError(f"a frame header is not JSON ({type(error).__name__})") from None
    if not isinstance(header, dict) or not isinstance(header.get("op"), str):
        raise WireError("a frame header is not an object with an op")
    _bounded(header)
    shapes = _table(stream, struct.unpack(">I", head[length:])[0], max_array_bytes)
    return header, [np.frombuffer(_read_exact(stream, nbytes) if nbytes else b"",
                                  dtype=dtype).reshape(shape) for dtype, shape, nbytes in shapes]


def step_answer(arrays: list[np.ndarray], live: list[int],
                ) -> list[tuple[int, int, int, list[int]]]:
    """(outcome, held, peak, requests) of each rank of ``live`` from a step's answer table
    (``arrays[0]``), checked against the layout above: WireError for any other table."""
    if not arrays or arrays[0].dtype.str != "<i8" or arrays[0].ndim != 1:
        raise WireError("a step's answer without its table")
    table, records, at = arrays[0].tolist(), [], 0
    for rank in live:
        if at + 5 > len(table):
            raise WireError("an answer that is not the step asked for")
        who, outcome, held, peak, count = table[at:at + 5]
        end = at + 5 + 3 * count
        if who != rank or not 0 <= outcome < len(OUTCOMES) or count < 0 or end > len(table):
            raise WireError("an answer that is not the step asked for")
        records.append((outcome, held, peak, table[at + 5:end]))
        at = end
    if at != len(table):
        raise WireError("an answer that is not the step asked for")
    return records


def array_bytes(value: Any) -> int:
    """Bytes of the numpy arrays in ``value`` (an array, or a list/tuple/dict of them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (list, tuple)):
        return sum(array_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(array_bytes(v) for v in value.values())
    return 0
