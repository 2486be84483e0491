"""Narration in the workbook: the player and the renderer, given the learner's data folder.

The narration package knows scripts, players and speech engines but not where a learner's
files live, nor the chapters' titles (it imports nothing from the workbook or the grader).
This module passes it the one definition of each: the folder from
:func:`autograder.progress.location.data_folder`, so the progress log and rendered audio
always sit side by side (``<data folder>/progress.sqlite3`` and ``<data folder>/narration/``),
and the titles from :mod:`workbook.outline`.

Chapter cells call ``wb.narration("ch05/intro")``; ``workbook narrate`` renders audio.
"""

from __future__ import annotations

from pathlib import Path

from autograder.progress.location import data_folder
from narration.player import Narration, play
from workbook.outline import CHAPTERS

#: The sub-folder of the learner's data folder that holds rendered audio and its manifest.
AUDIO_FOLDER = "narration"


def audio_dir() -> Path:
    """Where rendered narration audio lives: ``narration/`` in the learner's data folder."""
    return data_folder() / AUDIO_FOLDER


def narration(key: str, *, embed: bool | None = None, expanded: bool = False) -> Narration:
    """The transcript of ``key`` (e.g. ``"ch05/intro"``) and, once rendered, its audio."""
    titles = {c.number: c.title for c in CHAPTERS}
    return play(key, audio_dir(), chapter_titles=titles, embed=embed, expanded=expanded)


def render_cli(chapter: int | None, out_dir: str | Path | None) -> int:
    """``workbook narrate``: render one chapter (or all) into ``out_dir`` or the data folder."""
    from narration.render import render_cli as render_into

    return render_into(chapter, out_dir if out_dir is not None else audio_dir())
