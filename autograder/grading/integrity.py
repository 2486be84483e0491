"""Integrity checks: what a submission changed, imported or tried, beyond its answers.

Three sources, each turned into :class:`~autograder.grading.model.Finding` s:

* the release: every check cell and locked cell is compared with the submitted one by
  checksum; edits and deletions are reported (the grader never runs those cells, so an
  edited check cell changes nothing: the answer is graded by the release's rules);
* the learner's code, read (never run) with ``ast``: imports of the reference packages,
  redefinitions of the checker or of builtins, ``__eq__`` tricks, exits and time-limit
  tampering. Only importing the reference in an answer cell is serious; the rest are
  notes, because the sandbox and the grader's own comparison make them harmless;
* the sandbox guard's log of blocked operations (reading the grader's files, starting
  programs, loading C libraries), attributed to the cell that tried.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from autograder.grading.match import Match
from autograder.grading.model import Finding, Release, checksum
from autograder.grading.read import Notebook

CHECKER_NAMES = frozenset({"check", "wb", "workbook", "hint", "solution", "grade"})
# Builtins whose replacement could matter to a checker that ran in the learner's process.
GUARDED_BUILTINS = frozenset({
    "isinstance", "issubclass", "type", "float", "int", "str", "bool", "print", "repr", "len",
    "abs", "round", "callable", "getattr", "hasattr", "setattr", "id", "hash", "__import__",
    "open", "exec", "eval", "compile", "object", "super", "sum", "min", "max", "list",
    "tuple", "dict", "AssertionError", "Exception", "ValueError",
})
EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort", "os.kill",
                   "os.killpg", "signal.raise_signal"})
TIME_TAMPERING = frozenset({"signal.signal", "signal.setitimer", "signal.alarm",
                            "signal.pthread_sigmask", "signal.siginterrupt",
                            "resource.setrlimit", "sys.setrecursionlimit", "sys.settrace",
                            "sys.setprofile", "threading.settrace"})
BUILTIN_VALUE_ERRORS = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, ValueError))
COMPARISON_DUNDERS = frozenset({"__eq__", "__ne__", "__float__", "__index__", "__int__"})


@lru_cache(maxsize=4096)
def parse_cell(source: str) -> ast.Module | None:
    """The cell's syntax tree, or None when it does not parse (many submissions share
    cells, untouched placeholders above all, so trees are cached; never mutate one)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@dataclass(frozen=True)
class CodeCell:
    """A cell the grader runs: its position, the exercise whose answer it is ("" for a cell
    the learner added) and its source."""

    index: int
    exercise: str
    source: str

    @property
    def where(self) -> str:
        return f"the answer cell of exercise {self.exercise}" if self.exercise else \
            f"cell {self.index + 1} (added by the learner)"


# --- the release -------------------------------------------------------------------------

def compare_release(notebook: Notebook, release: Release, match: Match) -> list[Finding]:
    """Edited or deleted check cells (per exercise) and locked cells (one summary)."""
    findings: list[Finding] = []
    edited: list[int] = []
    deleted: list[int] = []
    for position, cell in enumerate(release.cells, start=1):
        if cell.role == "answer":
            continue
        index = match.counterpart.get(cell.cell_id)
        changed = index is not None and checksum(notebook.cells[index].source) != cell.checksum
        if cell.role == "check" and (index is None or changed):
            how = "deleted" if index is None else "edited"
            findings.append(Finding(cell.exercise, f"{how}_check", (
                f"The check cell of exercise {cell.exercise} was {how} (its checksum differs "
                "from the release); the grader never runs check cells, so the answer was "
                "graded by the release's rules.")))
        elif cell.role == "locked":
            (deleted if index is None else edited if changed else []).append(position)
    if edited or deleted:
        findings.append(Finding("", "locked_cells", _locked_summary(edited, deleted)))
    return findings


def _positions(numbers: Sequence[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:8])
    return shown + (f" and {len(numbers) - 8} more" if len(numbers) > 8 else "")


def _locked_summary(edited: Sequence[int], deleted: Sequence[int]) -> str:
    parts = []
    if edited:
        parts.append(f"{len(edited)} locked cell(s) edited (cells {_positions(edited)} of the "
                     "release)")
    if deleted:
        parts.append(f"{len(deleted)} locked cell(s) deleted (cells {_positions(deleted)} of "
                     "the release)")
    return ("; ".join(parts).capitalize() + ". The grader runs only answer cells and cells "
            "the learner added, so these changes did not affect the grade.")


# --- the learner's code --------------------------------------------------------------------

def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain, "" otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


class _Scanner(ast.NodeVisitor):
    def __init__(self, cell: CodeCell, reference: frozenset[str]) -> None:
        self.cell, self.reference = cell, reference
        self.findings: list[Finding] = []
        self.eq_classes: set[str] = set()
        self.bases: dict[str, tuple[str, ...]] = {}   # class name -> its base names

    def note(self, rule: str, what: str, node: ast.AST, serious: bool = False) -> None:
        line = getattr(node, "lineno", 0)
        where = f"{self.cell.where}, line {line}" if line else self.cell.where
        self.findings.append(Finding(self.cell.exercise, rule, f"{what} ({where}).", serious,
                                     self.cell.index))

    def _reference_import(self, module: str, node: ast.AST) -> None:
        if module.split(".")[0] in self.reference:
            serious = bool(self.cell.exercise)
            self.note("imports_reference", f"Imports the reference code `{module}`"
                      + ("; the answer was not credited" if serious else
                         "; answers may not use it"), node, serious)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._reference_import(alias.name, node)
            self._binding(alias.asname or alias.name.split(".")[0], node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self._reference_import(node.module, node)
        for alias in node.names:
            self._binding(alias.asname or alias.name, node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        literal = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) \
            else None
        if name in ("__import__", "importlib.import_module") and isinstance(literal, str):
            self._reference_import(literal, node)
        elif name in EXITS:
            self.note("exits", f"Calls {name}() to end the process; ignored: the grader "
                      "reports what ran before and goes on", node)
        elif name in TIME_TAMPERING:
            self.note("time_limit", f"Calls {name}(), which could change time limits or "
                      "signals; ignored: the sandbox's limits cannot be lifted from inside",
                      node)
        elif name == "setattr" and node.args and _dotted(node.args[0]) in (
                CHECKER_NAMES | {"builtins", "__builtins__"}):
            self.note("redefines", f"Replaces an attribute of {_dotted(node.args[0])}; "
                      "ignored: the grader compares answers in its own process", node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._binding(node.name, node)
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._binding(node.name, node)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._binding(node.name, node)
        methods = {item.name for item in node.body
                   if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        tricks = sorted(methods & COMPARISON_DUNDERS)
        if tricks:
            self.eq_classes.add(node.name)
            self.note("redefines", f"Class {node.name} defines {', '.join(tricks)}; ignored: "
                      "the grader never calls the learner's comparison code", node)
        self.bases[node.name] = tuple(_dotted(base) for base in node.bases)
        self.generic_visit(node)

    def _target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                self._target(item, node)
        elif isinstance(target, ast.Name):
            self._binding(target.id, node)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            base = _dotted(target.value)
            if base.split(".")[0] in CHECKER_NAMES | {"builtins", "__builtins__"}:
                shown = _dotted(target) if isinstance(target, ast.Attribute) else base + "[...]"
                self.note("redefines", f"Replaces {shown}; ignored: the grader does not run "
                          "the notebook's checks and compares answers in its own process",
                          node)

    def _binding(self, name: str, node: ast.AST) -> None:
        if name in CHECKER_NAMES:
            self.note("redefines", f"Redefines {name}; ignored: the grader does not run the "
                      "notebook's checks", node)
        elif name in GUARDED_BUILTINS:
            self.note("redefines", f"Redefines the builtin {name}; ignored: the grader reads "
                      "answers without the learner's builtins", node)


@dataclass(frozen=True)
class Scan:
    findings: tuple[Finding, ...]
    eq_classes: frozenset[str]       # classes defining __eq__ and similar
    value_errors: frozenset[str]     # learner classes derived from ValueError


@lru_cache(maxsize=8192)
def _scan_one(cell: CodeCell, reference: frozenset[str]) -> _Scanner | None:
    """One cell's scan (cached: a class shares most cells, placeholders above all)."""
    tree = parse_cell(cell.source)
    if tree is None:
        return None
    scanner = _Scanner(cell, reference)
    scanner.visit(tree)
    return scanner


def scan_cells(cells: Iterable[CodeCell], reference: frozenset[str]) -> Scan:
    """Read every cell the grader runs; cells that do not parse are the sandbox's to report."""
    findings: list[Finding] = []
    eq_classes: set[str] = set()
    bases: dict[str, tuple[str, ...]] = {}
    for cell in cells:
        scanner = _scan_one(cell, reference)
        if scanner is not None:
            findings.extend(scanner.findings)
            eq_classes |= scanner.eq_classes
            bases.update(scanner.bases)
    return Scan(tuple(_dedupe(findings)), frozenset(eq_classes), _value_errors(bases))


def _value_errors(bases: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """The learner's classes derived, directly or not, from ValueError or a subclass."""
    found: set[str] = set()
    known = set(BUILTIN_VALUE_ERRORS)
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name not in found and any(p in known or p in found for p in parents):
                found.add(name)
                changed = True
    return frozenset(found)


def _dedupe(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[tuple[str, str]] = set()
    out = []
    for finding in findings:
        if (finding.exercise, finding.message) not in seen:
            seen.add((finding.exercise, finding.message))
            out.append(finding)
    return out


# --- what the sandbox guard blocked --------------------------------------------------------

def blocked_findings(log: Sequence[tuple[CodeCell | None, str, str]],
                     skip_cells: Iterable[int] = ()) -> list[Finding]:
    """Findings for operations the guard reported: (cell that tried, event, path); one per
    cell and sort of operation. ``skip_cells`` already have a finding that says more (an
    import of the reference, whose files were what the guard blocked)."""
    skip = set(skip_cells)
    grouped: dict[tuple[int, str], list[tuple[CodeCell | None, str, str]]] = {}
    for cell, event, path in log:
        if cell is not None and cell.index in skip:
            continue
        # The guard logs the protected path of a file operation and no path for anything
        # else; which operations touch files is decided in the guard alone.
        tried = "files" if path else "ctypes" if event.startswith("ctypes") else "programs"
        grouped.setdefault((-1 if cell is None else cell.index, tried), []).append(
            (cell, event, path))
    findings = []
    for (_, tried), entries in grouped.items():
        cell, event, _ = entries[0]
        paths = [p for _, _, p in entries if "__pycache__" not in p] or [entries[0][2]]
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        what = {"files": f"Tried to read the grader's files ({paths[0]}{more})",
                "ctypes": f"Tried to load C code through ctypes ({event})",
                "programs": f"Tried to start another program ({event})"}[tried]
        exercise = cell.exercise if cell is not None else ""
        what += f" ({cell.where})." if cell is not None else "."
        if exercise:
            what += " The answer was not credited."
        findings.append(Finding(exercise, "blocked", what, bool(exercise),
                                -1 if cell is None else cell.index))
    return findings
