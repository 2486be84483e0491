"""Build the chapter notebooks from their text sources: ``workbook build``.

Each source ``workbook/chapters/chNN_*.md`` yields a learner notebook
``workbook/notebooks/chNN_*.ipynb`` and an nbgrader instructor notebook
``workbook/notebooks/instructor/chNN_*.ipynb``. Built notebooks carry a "generated, do
not edit" note and no outputs; ``build(check=True)`` reports drift instead of writing.
"""

from __future__ import annotations

from dataclasses import dataclass

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.cell_metadata import METADATA_KEY, NBGRADER_KEY
from workbook.build import cells
from workbook.build.source import Block, SourceError, parse
from workbook.outline import CHAPTERS, Chapter
from workbook.paths import PACKAGE_DIR, instructor_path, learner_path, source_path
from workbook.records import lookup

REPOSITORY = "https://github.com/distributed-training-workbook/distributed-training-workbook"
INSTALL_SPEC = f"distributed-training-workbook@git+{REPOSITORY}"


@dataclass(frozen=True)
class Built:
    chapter: Chapter
    learner: NotebookNode
    instructor: NotebookNode


def _directive_cells(block: Block, instructor: bool) -> list[NotebookNode]:
    if block.name == "markdown":
        return [new_markdown_cell(block.body)]
    if block.name == "code-cell":
        return [new_code_cell(block.body)]
    if block.name == "exercise":
        return cells.exercise_cells(lookup(block.arg), instructor)
    if block.name == "narration":
        return [new_code_cell(f'wb.narration("{block.arg}")')]
    if block.name == "predict":
        return [new_code_cell(f'wb.prediction_lock("{block.arg}")')]
    if block.name == "reveal":
        return [new_code_cell(f'wb.reveal("{block.arg}")')]
    if block.name == "reflect":
        return [new_code_cell(f'wb.reflection("{block.arg}")')]
    if block.name == "progress":
        return [new_code_cell("wb.progress()")]
    raise SourceError(f"unknown directive {block.name}")


def _notebook(chapter: Chapter, blocks: list[Block], instructor: bool) -> NotebookNode:
    role = "instructor" if instructor else "learner"
    note = (f"*Generated from `workbook/chapters/{chapter.stem}.md` by `workbook build`; "
            "do not edit this notebook, edit the source.*")
    body: list[NotebookNode] = [new_markdown_cell(note),
                                new_code_cell(cells.SETUP_SOURCE.format(install_spec=INSTALL_SPEC))]
    for block in blocks:
        body.extend(_directive_cells(block, instructor))
    if instructor:
        for index, cell in enumerate(body):
            if NBGRADER_KEY not in cell.metadata:
                cells.lock(cell, f"ch{chapter.number:02d}_cell_{index:03d}")
    nb = new_notebook(cells=body)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python",
                                 "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata[METADATA_KEY] = {"chapter": chapter.number, "role": role,
                               "source": f"workbook/chapters/{chapter.stem}.md",
                               "generated": True}
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"ch{chapter.number:02d}-{index:03d}"  # stable ids: rebuilds are byte-equal
    built: NotebookNode = nb
    return built


def build_chapter(chapter: Chapter) -> Built:
    path = source_path(chapter)
    blocks = parse(path.read_text(encoding="utf-8"), origin=str(path))
    return Built(chapter, _notebook(chapter, blocks, False), _notebook(chapter, blocks, True))


def serialize(nb: NotebookNode) -> str:
    return str(nbformat.writes(nb, version=4)) + "\n"


README = PACKAGE_DIR.parent / "README.md"
_TABLE_START, _TABLE_END = "<!-- chapter-table -->", "<!-- /chapter-table -->"


def chapter_table() -> str:
    """The README's chapter table, with an "Open in Colab" badge per chapter."""
    from workbook.records import all_exercises

    counts = {c.number: sum(r.chapter == c.number for r in all_exercises()) for c in CHAPTERS}
    slug = REPOSITORY.removeprefix("https://github.com/")
    badge = "https://colab.research.google.com/assets/colab-badge.svg"
    rows = ["| # | Chapter | Exercises | Open in Colab |",
            "|---|---------|-----------|---------------|"]
    for c in CHAPTERS:
        url = (f"https://colab.research.google.com/github/{slug}/blob/main/workbook/notebooks/"
               f"{c.stem}.ipynb")
        rows.append(f"| {c.number} | [{c.title}](workbook/notebooks/{c.stem}.ipynb) | "
                    f"{counts[c.number]} | [![Open In Colab]({badge})]({url}) |")
    return "\n".join(rows)


def _readme_with_table(text: str) -> str:
    start, end = text.find(_TABLE_START), text.find(_TABLE_END)
    if start < 0 or end < start:
        return text
    return text[: start + len(_TABLE_START)] + "\n" + chapter_table() + "\n" + text[end:]


def build(check: bool = False, chapters: tuple[Chapter, ...] = CHAPTERS) -> list[str]:
    """Write every notebook and the README's chapter table (or, with ``check``, list the
    files that differ)."""
    stale: list[str] = []
    if README.exists():
        current_readme = README.read_text(encoding="utf-8")
        wanted = _readme_with_table(current_readme)
        if wanted != current_readme:
            stale.append("README.md")
            if not check:
                README.write_text(wanted, encoding="utf-8")
    for chapter in chapters:
        built = build_chapter(chapter)
        for path, nb in ((learner_path(chapter), built.learner),
                         (instructor_path(chapter), built.instructor)):
            text = serialize(nb)
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if current == text:
                continue
            stale.append(str(path.relative_to(PACKAGE_DIR.parent)))
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    return stale
