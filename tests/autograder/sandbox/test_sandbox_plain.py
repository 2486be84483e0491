"""Converting a learner's value to plain data without running any of the value's code."""

from __future__ import annotations

import builtins
import json
from collections import OrderedDict, defaultdict, namedtuple
from typing import Any

import numpy as np
import pytest

from autograder.sandbox import plain
from autograder.sandbox.protocol import decode_tree


def convert(value: Any) -> Any:
    """Convert, write as JSON with plain.dumps, read back with the standard json module."""
    return decode_tree(json.loads(plain.dumps(plain.to_wire_tree(value))))


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2**62, 1.5, -0.25, "", "héllo \u2603 \"quoted\"\n",
    [1, [2, [3]]], {"a": 1, "b": [True, None]}, {"$float": "nan"},
])
def test_plain_values_come_back_equal(value: Any) -> None:
    back = convert(value)
    assert back == value and type(back) is type(value)


def test_tuples_come_back_as_lists() -> None:
    assert convert((1, (2.5, "x"))) == [1, [2.5, "x"]]


def test_non_finite_floats_are_distinct_from_strings() -> None:
    wire = plain.to_wire_tree([float("nan"), float("inf"), float("-inf"), "nan"])
    assert wire == [{"$float": "nan"}, {"$float": "inf"}, {"$float": "-inf"}, "nan"]


def test_numpy_scalars_and_arrays_become_python_numbers() -> None:
    assert convert(np.float32(0.5)) == 0.5 and type(convert(np.float32(0.5))) is float
    assert convert(np.int64(7)) == 7 and type(convert(np.int64(7))) is int
    assert convert(np.bool_(True)) is True
    assert convert(np.arange(6).reshape(2, 3)) == [[0, 1, 2], [3, 4, 5]]
    assert convert(np.array([1.0, np.inf]))[1] == float("inf")
    assert convert(np.array(["a", "b"])) == ["a", "b"]
    assert convert(np.array([1, [2]], dtype=object)) == [1, [2]]


def test_numpy_values_that_are_not_plain_are_refused() -> None:
    with pytest.raises(plain.NotPlain, match="dtype <c16"):
        plain.to_wire_tree(np.array([1j]))
    with pytest.raises(plain.NotPlain, match="not plain data: object"):
        plain.to_wire_tree(np.array([object()], dtype=object))


def test_stdlib_container_subclasses_are_read_as_their_base() -> None:
    point = namedtuple("point", "x y")
    counts: defaultdict[str, int] = defaultdict(int, {"a": 2})
    assert convert(point(1, 2)) == [1, 2]
    assert convert(counts) == {"a": 2}
    assert convert(OrderedDict([("z", 1), ("a", 2)])) == {"z": 1, "a": 2}


def test_a_list_subclass_that_lies_through_its_methods_is_read_from_storage() -> None:
    class Liar(list[int]):
        def __iter__(self) -> Any:
            return iter([42])

        def __len__(self) -> int:
            return 1

    assert convert(Liar([1, 2, 3])) == [1, 2, 3]


def test_always_equal_object_is_not_plain() -> None:
    class AlwaysEqual:
        def __eq__(self, other: object) -> bool:
            return True

    with pytest.raises(plain.NotPlain, match=r"not plain data: .*AlwaysEqual"):
        plain.to_wire_tree(AlwaysEqual())


@pytest.mark.parametrize("base", [int, float, str])
def test_scalar_subclasses_are_integrity_failures_and_none_of_their_code_runs(
    base: type,
) -> None:
    calls: list[str] = []

    class Evil(base):
        def __eq__(self, other: object) -> bool:
            calls.append("eq")
            return True

        def __float__(self) -> float:
            calls.append("float")
            return 3.0

        def __repr__(self) -> str:
            calls.append("repr")
            return "3.0"

    expected = f"custom subclass.*subclass of {base.__name__}"
    with pytest.raises(plain.IntegrityFailure, match=expected):
        plain.to_wire_tree([Evil("1")])
    assert calls == []


def test_dict_keys_must_be_str_and_depth_is_bounded() -> None:
    with pytest.raises(plain.NotPlain, match="dict key of type int"):
        plain.to_wire_tree({1: "a"})
    nested: list[Any] = []
    for _ in range(plain.MAX_DEPTH + 5):
        nested = [nested]
    with pytest.raises(plain.NotPlain, match="deeper"):
        plain.to_wire_tree(nested)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(plain.NotPlain):
        plain.to_wire_tree(loop)


def test_huge_integers_are_refused_rather_than_crashing_json() -> None:
    # 600 nines need 1994 bits (600 x log2(10) = 1993.2), under the 2000-bit limit;
    # 10**700 needs 2326 bits (700 x 3.3219 = 2325.4).
    assert convert(10**600 - 1) == 10**600 - 1
    with pytest.raises(plain.NotPlain, match="600 digits"):
        plain.to_wire_tree(10**700)


def test_conversion_ignores_redefined_builtins() -> None:
    class FakeFloat(float):
        pass

    saved = dict(builtins.__dict__)
    try:
        fake = builtins.__dict__
        fake["isinstance"] = lambda *args: True
        fake["type"] = lambda *args: float
        fake["issubclass"] = lambda *args: False
        fake["enumerate"] = lambda items: []
        try:
            plain.to_wire_tree(FakeFloat(2.0))
            refused: BaseException | None = None
        except plain.IntegrityFailure as error:
            refused = error
        text = plain.dumps(plain.to_wire_tree([1, "a", {"k": 2.5}]))
    finally:
        builtins.__dict__.clear()
        builtins.__dict__.update(saved)
    assert isinstance(refused, plain.IntegrityFailure)
    assert text == '[1,"a",{"k":2.5}]'


def test_restore_builtins_undoes_edits_and_additions() -> None:
    saved = dict(builtins.__dict__)
    try:
        builtins.__dict__["len"] = lambda obj: 0
        builtins.__dict__["planted"] = 1
        plain.restore_builtins()
        assert len([1, 2]) == 2 and "planted" not in builtins.__dict__
    finally:
        builtins.__dict__.clear()
        builtins.__dict__.update(saved)


def test_type_name_reads_the_class_without_its_metaclass_tricks() -> None:
    class Meta(type):
        @property
        def __name__(cls) -> str:  # type: ignore[override]
            return "float"

    class Sneaky(metaclass=Meta):
        pass

    assert plain.type_name(Sneaky).endswith("Sneaky")
    assert plain.type_name(int) == "int" and plain.type_name(np.float64) == "numpy.float64"
