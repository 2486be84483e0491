"""A learner's own classes, shipped by value with the function that uses them.

A class defined in a notebook cell or in the learner's file (module ``__main__`` or
``__learner__``) cannot be imported by name in the process that runs the ranks, so
:mod:`solutions.sim.bundle` ships it as data: its name, its bases, and its members (methods
as functions, ``staticmethod``, ``classmethod`` and ``property`` around them, other values as
values). A dataclass travels without the methods ``dataclasses`` generated: its parameters
and fields go instead, and the decorator runs again where the class is rebuilt, so the
generated methods are the ones that interpreter makes. A class with a metaclass of its own
(an ``Enum``, say) is refused: rebuilding it member by member would not make the same class.

Only the standard library is used, so the module can travel as source into a sandbox.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

# what dataclasses writes into a class it decorates
GENERATED = frozenset({
    "__init__", "__repr__", "__eq__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__",
    "__setattr__", "__delattr__", "__match_args__", "__dataclass_fields__",
    "__dataclass_params__", "__getstate__", "__setstate__", "__slots__", "__annotations__"})
SKIPPED = frozenset({"__dict__", "__weakref__", "__module__", "__qualname__"})
PARAMS = ("init", "repr", "eq", "order", "unsafe_hash", "frozen")
WRAPPERS: dict[str, Callable[..., Any]] = {
    "staticmethod": staticmethod, "classmethod": classmethod, "property": property}


def pack_class(packer: Any, cls: type) -> dict[str, Any]:
    """A reference to ``cls``, whose description ``packer`` (a bundle's packer) keeps once
    in its ``classes``; its members are packed with ``packer.value``."""
    key = str(id(cls))
    if key in packer.classes:
        return {"learner_class": key}
    if type(cls) is not type:
        raise ValueError(f"{cls.__name__} has a metaclass of its own ({type(cls).__name__}) "
                         "and cannot be shipped to the simulated cluster; define it without one")
    entry: dict[str, Any] = {"name": cls.__name__, "qualname": cls.__qualname__}
    packer.classes[key] = entry   # first: a method may name its own class
    entry["bases"] = [packer.value(base, f"a base of {cls.__name__}") for base in cls.__bases__]
    dataclass = "__dataclass_params__" in vars(cls)
    entry["attrs"] = {name: _member(packer, member, f"{cls.__name__}.{name}")
                      for name, member in vars(cls).items()
                      if name not in SKIPPED and not (dataclass and name in GENERATED)}
    if dataclass:
        entry["dataclass"] = _dataclass(packer, cls)
    return {"learner_class": key}


def _member(packer: Any, member: Any, name: str) -> dict[str, Any]:
    for kind, wrapper in WRAPPERS.items():
        if type(member) is wrapper:
            parts = ([member.fget, member.fset, member.fdel, member.__doc__]
                     if kind == "property" else [member.__func__])
            return {"wrapped": kind, "of": [packer.value(p, name) for p in parts]}
    return dict(packer.value(member, name))


def _dataclass(packer: Any, cls: type) -> dict[str, Any]:
    params = vars(cls)["__dataclass_params__"]
    fields = []
    for field in dataclasses.fields(cls):
        spec: dict[str, Any] = {"name": field.name, "init": field.init, "repr": field.repr,
                                "hash": field.hash, "compare": field.compare,
                                "kw_only": bool(getattr(field, "kw_only", False))}
        if field.default is not dataclasses.MISSING:
            spec["default"] = packer.value(field.default, field.name)
        if field.default_factory is not dataclasses.MISSING:
            spec["default_factory"] = packer.value(field.default_factory, field.name)
        fields.append(spec)
    return {"params": {name: bool(getattr(params, name)) for name in PARAMS},
            "match_args": "__match_args__" in vars(cls), "slots": "__slots__" in vars(cls),
            "fields": fields}


def build_class(entry: dict[str, Any], value: Callable[[Any], Any],
                register: Callable[[type], None]) -> type:
    """The class back from its description (``value`` rebuilds a packed value); ``register``
    is told the class before its members are rebuilt, so that they may refer to it."""
    bases = tuple(value(base) for base in entry["bases"])
    cls = type(str(entry["name"]), bases, {"__module__": "__learner__",
                                          "__qualname__": str(entry["qualname"])})
    register(cls)
    for name, member in entry["attrs"].items():
        setattr(cls, name, value(member))
    spec = entry.get("dataclass")
    if spec is None:
        return cls
    annotations: dict[str, Any] = {}
    for field in spec["fields"]:
        annotations[field["name"]] = object   # a type, not a text dataclasses would parse
        options = {k: field[k] for k in ("init", "repr", "hash", "compare", "kw_only")}
        if "default" in field:
            options["default"] = value(field["default"])
        if "default_factory" in field:
            options["default_factory"] = value(field["default_factory"])
        setattr(cls, field["name"], dataclasses.field(**options))
    cls.__annotations__ = annotations
    built: type = dataclasses.dataclass(cls, **spec["params"], match_args=spec["match_args"],
                                  slots=spec["slots"])
    if built is not cls:
        register(built)
    return built
