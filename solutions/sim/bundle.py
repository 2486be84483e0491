"""A learner's function as a self-contained bundle, to be rebuilt in another process.

The simulator never runs learner code in its own process (see :mod:`solutions.sim.channel`):
the function a learner passes to a check is packed here, in the learner's process, into
plain data (its compiled code, and by value the helper functions, closure cells, defaults
and constants it uses; modules by name), and :func:`unpack` rebuilds it in the process
that runs the ranks. The trusted side only forwards the bundle's bytes; it never unpacks
them. Packing works for functions typed in a notebook, defined in a file or built with
``exec`` (no source text is needed: the code object is marshalled, so the two processes
must run the same Python version, which they do: the rank process is started with the
same interpreter).

Only the standard library is used, so the module can travel as source into a sandbox.
"""

from __future__ import annotations

import base64
import builtins
import dis
import marshal
import pickle
import sys
import types
from typing import Any

from solutions.sim import classes as simclasses

MAX_FUNCTIONS = 200


class BundleError(ValueError):
    """The function uses something that cannot be shipped to another process."""


def _names(code: types.CodeType) -> set[str]:
    """Global names a code object (and the code nested in it) may look up."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _attributes(code: types.CodeType, module: str) -> set[str]:
    """Attributes the code reads from global ``module`` (``pl.f`` gives "f")."""
    out: set[str] = set()
    last = ""
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and last == module:
            out.add(str(ins.argval))
        last = str(ins.argval) if ins.opname == "LOAD_GLOBAL" else ""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _attributes(const, module)
    return out


PROJECT = "solutions"  # the reference library: shipped by value, never importable there


LEARNER_MODULES = ("__main__", "__learner__")  # where a notebook's or a file's code lives


class _Packer:
    def __init__(self, home: str) -> None:
        self.functions: dict[str, dict[str, Any]] = {}
        self.classes: dict[str, dict[str, Any]] = {}
        self.home = {home, *LEARNER_MODULES}   # modules whose classes travel by value

    def function(self, fn: types.FunctionType) -> dict[str, Any]:
        key = str(id(fn))
        if key not in self.functions:
            if len(self.functions) >= MAX_FUNCTIONS:
                raise BundleError(f"more than {MAX_FUNCTIONS} functions to ship")
            entry: dict[str, Any] = {"name": fn.__name__}
            self.functions[key] = entry
            entry["code"] = base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")
            scope = fn.__globals__
            entry["scope"] = str(id(scope))
            entry["globals"] = {name: self.value(scope[name], name, fn.__code__)
                                for name in sorted(_names(fn.__code__)) if name in scope}
            entry["defaults"] = [self.value(v, "a default") for v in fn.__defaults__ or ()]
            entry["kwdefaults"] = {k: self.value(v, k)
                                   for k, v in (fn.__kwdefaults__ or {}).items()}
            entry["closure"] = [self.value(_cell(c), "a closure variable")
                                for c in fn.__closure__ or ()]
        return {"function": key}

    def value(self, value: Any, name: str, code: types.CodeType | None = None,
              ) -> dict[str, Any]:
        if isinstance(value, types.ModuleType):
            if value.__name__.split(".")[0] == PROJECT and code is not None:
                used = sorted(a for a in _attributes(code, name) if hasattr(value, a))
                return {"namespace": {a: self.value(getattr(value, a), a) for a in used}}
            return {"module": value.__name__}
        if isinstance(value, types.FunctionType):
            return self.function(value)
        if isinstance(value, types.BuiltinFunctionType) and getattr(value, "__self__", None) \
                is builtins:
            return {"builtin": value.__name__}
        if isinstance(value, type) and value.__module__.split(".")[0] == PROJECT:
            return self.project_class(value)
        if isinstance(value, type) and value.__module__ in self.home:
            try:
                return simclasses.pack_class(self, value)
            except ValueError as error:
                raise BundleError(str(error)) from None
        try:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # noqa: BLE001 - anything pickle refuses
            raise BundleError(f"{name} ({type(value).__name__}) cannot be shipped to the "
                              f"simulated cluster: {type(error).__name__}") from None
        return {"pickle": base64.b64encode(data).decode("ascii")}


    def project_class(self, cls: type) -> dict[str, Any]:
        """A class of the reference library, rebuilt by value (its methods and constants):
        only classes whose bases are built in (an exception type, say) can be."""
        if not all(base.__module__ == "builtins" for base in cls.__bases__):
            raise BundleError(f"{cls.__name__} from {cls.__module__} cannot be shipped")
        attrs = {k: self.value(v, k) for k, v in vars(cls).items()
                 if isinstance(v, types.FunctionType)}
        return {"class": cls.__name__, "bases": [b.__name__ for b in cls.__bases__],
                "attrs": attrs, "key": str(id(cls))}


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell (a name assigned later)
        return None


def pack(fn: Any) -> dict[str, Any]:
    """The bundle of ``fn`` (a Python function), as JSON-ready data."""
    if not isinstance(fn, types.FunctionType):
        raise BundleError(f"expected a function defined with def or lambda, got "
                          f"{type(fn).__name__}")
    packer = _Packer(str(fn.__globals__.get("__name__", "")))
    root = packer.function(fn)
    return {"version": list(sys.version_info[:2]), "root": root["function"],
            "functions": packer.functions, "classes": packer.classes}


def source_bundle(source: str, filename: str, name: str) -> dict[str, Any]:
    """The bundle of function ``name`` defined by a whole file's ``source``."""
    return {"version": list(sys.version_info[:2]), "source": source, "filename": filename,
            "name": name}


def pack_job(fn: Any, job: Any = None) -> dict[str, Any]:
    """Entry point for a grading sandbox: ``{"bundle": ...}`` or ``{"error": ...}``."""
    try:
        return {"bundle": pack(fn)}
    except BundleError as error:
        return {"error": str(error), "error_type": "bundle"}


# -- the other side ------------------------------------------------------------------------

def unpack(bundle: Any) -> Any:
    """The function back from :func:`pack` (or :func:`source_bundle`), in this process."""
    if not isinstance(bundle, dict):
        raise BundleError("not a bundle")
    if "source" in bundle:
        # a module of its own, known to sys.modules as any imported module is (a dataclass,
        # pickle or typing look their class's module up there)
        module = types.ModuleType("__learner__")
        module.__file__ = str(bundle["filename"])
        sys.modules[module.__name__] = module
        exec(compile(bundle["source"], bundle["filename"], "exec"), module.__dict__)
        if bundle["name"] not in module.__dict__:
            raise BundleError(f"the file defines no {bundle['name']}")
        return module.__dict__[bundle["name"]]
    entries = bundle["functions"]
    built: dict[str, types.FunctionType] = {}
    scopes: dict[str, dict[str, Any]] = {}
    classes: dict[str, type] = {}
    learned: dict[str, type] = {}   # the learner's own classes

    def value(ref: dict[str, Any]) -> Any:
        if "module" in ref:
            return __import__(ref["module"], fromlist=["_"])
        if "builtin" in ref:
            return getattr(builtins, ref["builtin"])
        if "function" in ref:
            return build(ref["function"])
        if "class" in ref:
            if ref["key"] not in classes:
                bases = tuple(getattr(builtins, b) for b in ref["bases"])
                classes[ref["key"]] = type(ref["class"], bases,
                                           {k: value(v) for k, v in ref["attrs"].items()})
            return classes[ref["key"]]
        if "namespace" in ref:
            return types.SimpleNamespace(**{k: value(v) for k, v in ref["namespace"].items()})
        if "learner_class" in ref:
            key = str(ref["learner_class"])
            if key not in learned:
                simclasses.build_class(bundle["classes"][key], value,
                                       lambda cls: learned.__setitem__(key, cls))
            return learned[key]
        if "wrapped" in ref:
            return simclasses.WRAPPERS[ref["wrapped"]](*[value(v) for v in ref["of"]])
        return pickle.loads(base64.b64decode(ref["pickle"]))

    def build(key: str) -> types.FunctionType:
        if key not in built:
            entry = entries[key]
            code = marshal.loads(base64.b64decode(entry["code"]))
            scope = scopes.setdefault(str(entry.get("scope", key)),
                                      {"__builtins__": builtins, "__name__": "__learner__"})
            cells = tuple(types.CellType() for _ in code.co_freevars)
            fn = types.FunctionType(code, scope, entry["name"], None, cells or None)
            built[key] = fn
            scope.update({k: value(v) for k, v in entry["globals"].items()})
            for cell, ref in zip(cells, entry["closure"], strict=True):
                cell.cell_contents = value(ref)
            fn.__defaults__ = tuple(value(v) for v in entry["defaults"]) or None
            fn.__kwdefaults__ = {k: value(v) for k, v in entry["kwdefaults"].items()} or None
        return built[key]

    return build(bundle["root"])
