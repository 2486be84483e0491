"""Turn a learner's value into plain JSON data without trusting the value.

This module runs inside the sandboxed process, after learner code ran there. The learner
may have replaced builtins, defined ``__eq__``/``__float__``/``__str__``/``__iter__`` on
their classes, or subclassed ``float`` so that ``x == 3.0`` is always true. So:

* every type test is ``type(x) is T`` with ``type`` and every other helper captured when
  this module is imported (before any learner code), never looked up at call time;
* no method of the value is ever called: floats are written with ``float.__repr__``,
  containers are read with the base classes' own C methods (``list.__iter__``,
  ``dict.items``), numpy arrays with ``numpy.ndarray.tolist``;
* an instance of a subclass of int, float or str is an integrity failure (its only purpose
  in an answer is to fool a comparison); subclasses of list, tuple and dict (namedtuple,
  OrderedDict, defaultdict) are read as their base class, which runs none of their code.

The output is a *wire tree* (see :mod:`autograder.sandbox.protocol`) and :func:`dumps`
writes it as JSON text, again without the ``json`` module's Python layer, which learner
code could have patched.
"""

from __future__ import annotations

import builtins
import json.encoder
from typing import Any

import numpy as np

# Captured at import, before any learner code runs in this process.
_type = type
_len = len
_issubclass = issubclass
_NoneType = type(None)
_float_repr = float.__repr__
_int_repr = int.__repr__
_int_bit_length = int.bit_length
_list_iter = list.__iter__
_tuple_iter = tuple.__iter__
_dict_items = dict.items
_str_startswith = str.startswith
_join = "".join
_enumerate = enumerate
_type_module = type.__dict__["__module__"].__get__
_type_qualname = type.__dict__["__qualname__"].__get__
_encode_str = (getattr(json.encoder, "c_encode_basestring_ascii", None)
               or json.encoder.py_encode_basestring_ascii)
_ndarray = np.ndarray
_tolist = np.ndarray.tolist
_item = np.generic.item
_NUMPY_SCALARS = frozenset(
    [np.bool_, np.str_, np.float16, np.float32, np.float64]
    + [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    + [np.intc, np.uintc, np.longlong, np.ulonglong]
)
_PLAIN_DTYPE_CODES = frozenset("biufU")
_INF = float("inf")

PRISTINE_BUILTINS: dict[str, Any] = dict(builtins.__dict__)

MAX_DEPTH = 64
MAX_NODES = 1_000_000
MAX_INT_BITS = 2000   # ~600 decimal digits; Python refuses str() past 640 digits if asked


class NotPlain(Exception):
    """The value is not plain data; the message says why, ``type_name`` names the class at
    fault ("" when the value is too deep, too large or an integer too long)."""

    outcome_type = "not_plain"

    def __init__(self, message: str, type_name: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name


class IntegrityFailure(Exception):
    """The value is an instance of a custom subclass of a scalar type (``type_name``)."""

    outcome_type = "integrity"

    def __init__(self, message: str, type_name: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name


def restore_builtins() -> None:
    """Undo learner edits to the builtins module (added names are removed too)."""
    namespace = builtins.__dict__
    namespace.clear()
    namespace.update(PRISTINE_BUILTINS)


def type_name(cls: type) -> str:
    """``module.QualName`` of a class (just the name for builtins), read without its code."""
    qualname = _type_qualname(cls)
    try:
        module = _type_module(cls)
    except AttributeError:
        module = None
    if _type(module) is not str or module == "builtins":
        return str(qualname)
    return str(module + "." + qualname)


def to_wire_tree(value: Any) -> Any:
    """Plain-data copy of ``value`` in wire form; raises NotPlain or IntegrityFailure."""
    budget = [MAX_NODES]
    try:
        return _convert(value, 0, budget)
    except (TypeError, AttributeError, ValueError):
        # A class that lies about its bases makes the base-class readers refuse it.
        name = type_name(_type(value))
        raise NotPlain(f"not plain data: {name}", name) from None


def _convert(x: Any, depth: int, budget: list[int]) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlain(f"not plain data: nested deeper than {MAX_DEPTH} levels")
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain(f"not plain data: more than {MAX_NODES} items")
    t = _type(x)
    if t is _NoneType or t is bool or t is str:
        return x
    if t is int:
        if _int_bit_length(x) > MAX_INT_BITS:
            raise NotPlain("not plain data: an integer with more than 600 digits")
        return x
    if t is float:
        return _finite_or_marker(x)
    if t in _NUMPY_SCALARS:
        return _convert(_item(x), depth, budget)
    if t is _ndarray:
        return _convert_array(x, depth, budget)
    return _convert_other(x, t, depth, budget)


def _finite_or_marker(x: float) -> Any:
    if x != x:
        return {"$float": "nan"}
    if x == _INF:
        return {"$float": "inf"}
    if x == -_INF:
        return {"$float": "-inf"}
    return x


def _convert_array(x: Any, depth: int, budget: list[int]) -> Any:
    dtype_code = x.dtype.kind  # numpy's name for the dtype's letter code
    if dtype_code not in _PLAIN_DTYPE_CODES and dtype_code != "O":
        raise NotPlain(f"not plain data: numpy array of dtype {x.dtype.str}")
    if x.size > budget[0]:
        raise NotPlain(f"not plain data: more than {MAX_NODES} items")
    # tolist() yields Python scalars (or the stored objects for dtype=object, checked below).
    return _convert(_tolist(x), depth, budget)


def _convert_other(x: Any, t: type, depth: int, budget: list[int]) -> Any:
    if _issubclass(t, (int, float, str)):
        base = "int" if _issubclass(t, int) else "float" if _issubclass(t, float) else "str"
        raise IntegrityFailure(
            f"an instance of a custom subclass: {type_name(t)} (a subclass of {base})",
            type_name(t))
    if t is list or t is tuple or _issubclass(t, (list, tuple)):
        items = _list_iter(x) if _issubclass(t, list) else _tuple_iter(x)
        return [_convert(item, depth + 1, budget) for item in items]
    if t is dict or _issubclass(t, dict):
        return _convert_dict(x, depth, budget)
    raise NotPlain(f"not plain data: {type_name(t)}", type_name(t))


def _convert_dict(x: Any, depth: int, budget: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in _dict_items(x):
        if _type(key) is not str:
            raise NotPlain(f"not plain data: a dict key of type {type_name(_type(key))}")
        wire_key = "$" + key if _str_startswith(key, "$") else key
        out[wire_key] = _convert(item, depth + 1, budget)
    return out


def dumps(tree: Any) -> str:
    """JSON text of a wire tree built by this module (exact builtin types only)."""
    parts: list[str] = []
    _emit(tree, parts, 0)
    return _join(parts)


def _emit(x: Any, out: list[str], depth: int) -> None:
    t = _type(x)
    if t is _NoneType:
        out.append("null")
    elif t is bool:
        out.append("true" if x else "false")
    elif t is int:
        out.append(_int_repr(x))
    elif t is float:
        out.append(_float_repr(x))
    elif t is str:
        out.append(_encode_str(x))
    elif t is list and depth <= MAX_DEPTH + 8:
        out.append("[")
        for index, item in _enumerate(x):
            if index:
                out.append(",")
            _emit(item, out, depth + 1)
        out.append("]")
    elif t is dict and depth <= MAX_DEPTH + 8:
        _emit_dict(x, out, depth)
    else:
        raise TypeError(f"cannot write {type_name(t)} as JSON")


def _emit_dict(x: dict[str, Any], out: list[str], depth: int) -> None:
    out.append("{")
    for index, (key, item) in _enumerate(_dict_items(x)):
        if _type(key) is not str:
            raise TypeError("JSON object keys must be str")
        out.append("," if index else "")
        out.append(_encode_str(key))
        out.append(":")
        _emit(item, out, depth + 1)
    out.append("}")
