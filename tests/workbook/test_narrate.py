"""Narration in the workbook: audio is looked up and rendered in the learner's data folder,
the same folder as the progress log, however WORKBOOK_HOME is written; headings carry the
outline's chapter titles; every chapter of the outline is narrated."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import platformdirs
import pytest

import workbook as wb
from autograder.progress.location import default_log_path
from narration import render
from narration.scripts import chapters
from workbook import narrate
from workbook.cli import main as workbook_main
from workbook.outline import CHAPTERS

KEY = "ch05/intro"


@pytest.fixture(autouse=True)
def _in_a_notebook_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("VSCODE_PID", "WORKBOOK_NARRATION_EMBED"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")


def _write_audio(folder: Path) -> Path:
    path = folder / "ch05" / "intro.wav"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"RIFF fake audio")
    return path


def test_padded_workbook_home_puts_audio_beside_the_progress_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBOOK_HOME", f"  {tmp_path / 'class'}\n")
    assert narrate.audio_dir() == tmp_path / "class" / "narration"
    assert default_log_path() == tmp_path / "class" / "progress.sqlite3"
    audio = _write_audio(tmp_path / "class" / "narration")
    shown = wb.narration(KEY, embed=False)
    assert shown.audio_file == audio
    assert shown.src == "narration_audio/ch05/intro.wav"


def test_without_workbook_home_both_use_the_user_data_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBOOK_HOME", raising=False)
    monkeypatch.setattr(platformdirs, "user_data_dir",
                        lambda app, appauthor=None: str(tmp_path / "data" / app))
    folder = tmp_path / "data" / "distributed-training-workbook"
    assert narrate.audio_dir() == folder / "narration"
    assert default_log_path() == folder / "progress.sqlite3"


def test_unrendered_narration_says_how_to_render(fresh_home: Path) -> None:
    shown = wb.narration("ch02/recap")
    assert shown.audio_file is None
    assert "workbook narrate --chapter 2" in shown.note


def test_workbook_narrate_renders_into_the_data_folder_unless_told_otherwise(
        fresh_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_main(argv: Sequence[str] | None = None) -> int:
        calls.append(list(argv or []))
        return 0

    monkeypatch.setattr(render, "main", fake_main)
    assert workbook_main(["narrate", "--chapter", "3"]) == 0
    assert workbook_main(["narrate", "--out", str(tmp_path / "elsewhere")]) == 0
    assert calls == [["--chapter", "3", "--out", str(fresh_home / "narration")],
                     ["--out", str(tmp_path / "elsewhere")]]


def test_headings_carry_the_outline_chapter_title(fresh_home: Path) -> None:
    page = wb.narration("ch09/exercises")._repr_html_()
    assert "Chapter 9, Capstone: rebuilding the Llama 3 405B run: Pause and try it" in page
    assert str(wb.narration("ch05/intro")).startswith(
        "Narration: Chapter 5, Pipeline parallelism: Introduction (about ")


def test_every_outline_chapter_has_a_narration_script() -> None:
    assert chapters() == tuple(c.number for c in CHAPTERS)
