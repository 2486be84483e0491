"""Load a submitted notebook as plain data, or say precisely why it cannot be graded.

Reads the JSON directly (no nbformat needed at grading time) and keeps only what the
grader uses: each cell's type, source, id and metadata, and the notebook's metadata.
Nothing in the file is executed here. Every way a file can be unusable becomes an
:class:`Unreadable` with a message an instructor can pass on to the student.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

MAX_BYTES = 16 * 1024 * 1024  # far above any real chapter notebook (outputs included)
# The grader reads each cell it runs with ``ast`` in its own process, which costs a few
# hundred times the source's size: a cell or a notebook's code beyond these is refused
# before any parsing (a chapter's answers take a few hundred characters).
MAX_CELL_CHARS = 100_000
MAX_CODE_CHARS = 400_000
SUPPORTED_MAJOR = 4
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class Unreadable(ValueError):
    """The file is not a notebook the grader can read; the message says why."""


@dataclass(frozen=True)
class Cell:
    index: int                # position in the submitted notebook, from 0
    cell_type: str
    source: str
    cell_id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def number(self) -> int:
        """The cell's position as a person counts it (from 1)."""
        return self.index + 1


@dataclass(frozen=True)
class Notebook:
    metadata: Mapping[str, Any]
    cells: tuple[Cell, ...]


def _too_big(size: int) -> Unreadable:
    return Unreadable(f"the file is {size / 1e6:.0f} MB, larger than the "
                      f"{MAX_BYTES // 2**20} MB a chapter notebook can be")


def read_bytes(path: Path) -> bytes:
    """The file's bytes, without following a symbolic link, opening anything but a regular
    file, or blocking (a FIFO or device named .ipynb), and never more than MAX_BYTES."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Unreadable("a symbolic link; the grader does not follow links") from None
        raise Unreadable(f"could not read the file ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file (a device, pipe or socket)")
        if info.st_size > MAX_BYTES:
            raise _too_big(info.st_size)
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_BYTES:  # grew while being read
                raise _too_big(total)
        return b"".join(chunks)
    except OSError as error:
        raise Unreadable(f"could not read the file ({error.strerror or error})") from None
    finally:
        os.close(fd)


def read_notebook(path: Path) -> Notebook:
    """Parse ``path``; raises :class:`Unreadable` with a clear message."""
    return parse_notebook(read_bytes(path))


def parse_notebook(data: bytes) -> Notebook:
    if not data.strip():
        raise Unreadable("the file is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unreadable("not a notebook: the file is not UTF-8 text (a binary file "
                         "renamed to .ipynb?)") from None
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as error:
        raise Unreadable(f"not valid JSON (line {error.lineno}, column {error.colno}: "
                         f"{error.msg}); the file may have been cut short or edited by "
                         "hand") from None
    except (ValueError, RecursionError):
        raise Unreadable("not valid JSON") from None
    return _notebook(tree)


def _notebook(tree: Any) -> Notebook:
    if not isinstance(tree, dict):
        raise Unreadable(f"not a notebook: the JSON holds a {type(tree).__name__}, not a "
                         "notebook object")
    major = tree.get("nbformat")
    if major is None:
        raise Unreadable("not a notebook: the JSON has no 'nbformat' version")
    if type(major) is not int:
        raise Unreadable(f"not a notebook: 'nbformat' is {major!r}, not a version number")
    if major < SUPPORTED_MAJOR:
        raise Unreadable(f"an nbformat {major} notebook (from a very old Jupyter); open it "
                         "in a current Jupyter, save it (nbformat 4) and submit it again")
    if major > SUPPORTED_MAJOR:
        raise Unreadable(f"an nbformat {major} notebook, newer than the nbformat 4 this "
                         "grader reads")
    cells = tree.get("cells")
    if not isinstance(cells, list):
        raise Unreadable("not a notebook: no list of 'cells'")
    metadata = tree.get("metadata", {})
    if not isinstance(metadata, dict):
        raise Unreadable("not a notebook: its 'metadata' is not an object")
    notebook = Notebook(MappingProxyType(metadata),
                        tuple(_cell(index, cell) for index, cell in enumerate(cells)))
    _check_code_size(notebook)
    return notebook


def slim(notebook: Notebook) -> Notebook:
    """What the grader keeps of a notebook once it is matched and checked: the code cells'
    sources (for the results' messages), not the text of the others nor any cell's
    metadata, so that a batch's memory grows with its answers, not with what else its
    files hold."""
    return Notebook(notebook.metadata, tuple(
        cell if cell.cell_type == "code" and not cell.metadata
        else Cell(cell.index, cell.cell_type, cell.source if cell.cell_type == "code" else "",
                  cell.cell_id)
        for cell in notebook.cells))


def _check_code_size(notebook: Notebook) -> None:
    total = 0
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        size = len(cell.source)
        if size > MAX_CELL_CHARS:
            raise Unreadable(f"code cell {cell.number} holds {size:,} characters, more than "
                             f"the {MAX_CELL_CHARS:,} the grader reads in one cell")
        total += size
    if total > MAX_CODE_CHARS:
        raise Unreadable(f"the notebook's code cells hold {total:,} characters, more than "
                         f"the {MAX_CODE_CHARS:,} the grader reads in one notebook")


def _cell(index: int, tree: Any) -> Cell:
    where = f"cell {index + 1}"
    if not isinstance(tree, dict):
        raise Unreadable(f"not a notebook: {where} is not an object")
    cell_type = tree.get("cell_type")
    if cell_type not in ("code", "markdown", "raw"):
        raise Unreadable(f"not a notebook: {where} has cell_type {cell_type!r}")
    source = tree.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise Unreadable(f"not a notebook: the source of {where} is not text")
    metadata = tree.get("metadata", {})
    cell_id = tree.get("id", "")
    return Cell(index, cell_type, source, cell_id if isinstance(cell_id, str) else "",
                MappingProxyType(metadata if isinstance(metadata, dict) else {}))
