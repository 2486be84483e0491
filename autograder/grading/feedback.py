"""Per-student feedback pages: ``feedback/<student>/chNN.html``, one per graded chapter.

Each exercise shows its result in words and a symbol (never colour alone), the learner's
answer, and feedback about their own answer. Never shown: the expected answer (a row's
``expected`` stays in the instructor's gradebook), the reference code (no verdict carries
it), and hidden test inputs beyond the first failing case. Every piece of text is
HTML-escaped, since much of it echoes what the learner wrote.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from html import escape as _html_escape
from pathlib import Path

from autograder.grading.model import ExerciseResult, NotebookResult
from autograder.grading.private_files import make_private_dir, write_private
from autograder.grading.report import points_text, shown_details
from autograder.grading.safe_text import file_bytes, visible
from autograder.result import STATUS_TEXT


def escape(text: str) -> str:
    """HTML-escaped, with undecodable and control characters made visible escapes."""
    return _html_escape(visible(text, keep_newlines=True))

MAX_SOURCE_CHARS = 4000

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.5; color: #1f2328; }
section { border-left: 4px solid #8c959f; padding: 0.2rem 1rem; margin: 1.2rem 0; }
section.correct { border-color: #1a7f37; } section.wrong { border-color: #b35900; }
section.error, section.integrity { border-color: #cf222e; }
pre { background: #f6f8fa; padding: 0.6rem; overflow-x: auto; }
dt { font-weight: 600; } .problem { border: 2px solid #cf222e; padding: 0.5rem 1rem; }
"""


def page_name(notebook: NotebookResult) -> str:
    """``ch05.html`` for a chapter's rows, else a name from the file (a file that could not
    be graded and stands for no chapter's exercises)."""
    if notebook.chapter is not None and notebook.exercises:
        return f"ch{notebook.chapter:02d}.html"
    path = Path(notebook.path.rstrip("/"))
    stem = (path.stem if path.suffix == ".ipynb" else path.name) or "notebook"
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._")[:80] or "notebook"
    if cleaned != stem:
        cleaned += "-" + hashlib.sha256(file_bytes(notebook.path)).hexdigest()[:8]
    return "not-graded-" + cleaned + ".html"


def _exercise(result: ExerciseResult) -> str:
    symbol, words = STATUS_TEXT[result.status].symbol, STATUS_TEXT[result.status].words
    most = result.counted_max
    points = f"{points_text(result.points)} of {most} point{'s' if most != 1 else ''}"
    anchor = "ex-" + escape(result.exercise_id.replace(".", "-"))
    parts = [f'<section class="{escape(result.status)}" aria-labelledby="{anchor}">',
             f'<h2 id="{anchor}">Exercise {escape(result.exercise_id)} · '
             f"{escape(result.title)}</h2>",
             f'<p role="status"><strong><span aria-hidden="true">{symbol}</span> '
             f"{escape(words)}</strong> · {points}</p>", "<dl>"]
    if result.yours:
        parts.append(f"<dt>Your answer</dt><dd><code>{escape(result.yours)}</code></dd>")
    parts.append(f"<dt>Feedback</dt><dd>{escape(result.message)}</dd>")
    if result.policy:
        parts.append(f"<dt>Adjusted</dt><dd>{escape(result.policy)}</dd>")
    parts.append("</dl>")
    details = shown_details(result.details)
    if details:
        parts.append("<ul>" + "".join(f"<li>{escape(d)}</li>" for d in details) + "</ul>")
    if result.notes:
        parts.append("<p>Notes:</p><ul>" + "".join(f"<li>{escape(n)}</li>"
                                                   for n in result.notes) + "</ul>")
    if result.picture:
        parts.append(f"<pre>{escape(result.picture)}</pre>")
    if result.answer_source.strip():
        source = result.answer_source[:MAX_SOURCE_CHARS]
        cut = "\n…" if len(result.answer_source) > MAX_SOURCE_CHARS else ""
        parts.append(f"<details><summary>Your answer cell</summary><pre><code>"
                     f"{escape(source + cut)}</code></pre></details>")
    parts.append("</section>")
    return "\n".join(parts)


def render_page(notebook: NotebookResult) -> str:
    heading = (f"Chapter {notebook.chapter} · {notebook.title}" if notebook.chapter is not None
               else f"Submission {Path(notebook.path).name}")
    body = [f"<h1>{escape(heading)}</h1>",
            f"<p>Student: {escape(notebook.student)} · File: <code>{escape(notebook.path)}"
            f"</code> · Points: {points_text(notebook.points)} of {notebook.max_points}</p>"]
    if notebook.problem:
        body.append(f'<div class="problem" role="alert"><p><strong><span aria-hidden="true">'
                    f"⚠</span> This file could not be graded.</strong></p><p>"
                    f"{escape(notebook.problem)}</p></div>")
    if notebook.notes:
        body.append("<h2>About this notebook</h2><ul>" + "".join(
            f"<li>{escape(note)}</li>" for note in notebook.notes) + "</ul>")
    body += [_exercise(e) for e in notebook.exercises]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(heading)}: feedback for {escape(notebook.student)}</title>"
            f"<style>{_STYLE}</style></head><body><main>\n" + "\n".join(body)
            + "\n</main></body></html>\n")


def safe_folder(student: str) -> str:
    """A student's folder name as one harmless path component: unchanged when it already is
    one, else cleaned and tagged with a short hash (two names never share a folder)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.@+-]+", "_", student).strip("._")[:100] or "_"
    if cleaned == student and not cleaned.startswith("-"):
        return student
    return f"{cleaned.lstrip('-') or '_'}-{hashlib.sha256(file_bytes(student)).hexdigest()[:8]}"


def _unique(name: str, owner: str, taken: dict[str, str]) -> str:
    """``name``, or ``name~2``, ``name~3``... when another owner already has it (compared
    without case, for file systems that ignore it)."""
    candidate, number = name, 1
    while taken.setdefault(candidate.lower(), owner) != owner:
        number += 1
        candidate = f"{name}~{number}"
    return candidate


def folder_names(students: Iterable[str]) -> dict[str, str]:
    """Each student's feedback folder. Names that are already plain keep them and are given
    out first; a cleaned name, or a second name differing only in case, is tagged with
    ``~2``, ``~3``..., which no plain name contains: so no page is ever filed in a folder
    that is named like another student (the instructor hands folders back by name)."""
    unique = sorted(set(students))
    plain = [s for s in unique if safe_folder(s) == s]
    taken: dict[str, str] = {}
    return {s: _unique(safe_folder(s), s, taken)
            for s in plain + [s for s in unique if safe_folder(s) != s]}


def write_feedback(notebooks: tuple[NotebookResult, ...], folder: Path,
                   failed: list[str] | None = None) -> list[Path]:
    """One page per student and chapter; returns the pages written. A page that cannot be
    written is described in ``failed`` and the others are written anyway."""
    failed = failed if failed is not None else []
    written: list[Path] = []
    folders = folder_names(nb.student for nb in notebooks if nb.student)
    pages: dict[str, dict[str, str]] = {}
    for notebook in notebooks:
        if not notebook.student:
            continue  # a notebook outside any student folder: nobody to address
        try:
            student_dir = folders[notebook.student]
            page = _unique(page_name(notebook).removesuffix(".html"), notebook.path,
                           pages.setdefault(student_dir, {})) + ".html"
            target = folder / student_dir / page
            make_private_dir(target.parent)
            write_private(target, render_page(notebook))
            written.append(target)
        except Exception as error:  # noqa: BLE001 - one student's page never stops the rest
            failed.append(f"{visible(notebook.path)}: the feedback page could not be written "
                          f"({type(error).__name__}: {visible(str(error))})")
    return written
