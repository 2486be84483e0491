"""The notebook player: transcript always, audio only when rendered, never autoplay."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

import narration
from narration import player
from narration.player import play
from narration.scripts import segment

KEY = "ch05/intro"
FAKE_OGG = b"OggS fake audio bytes for the player tests"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own audio home and notebook folder, and no front-end hints."""
    monkeypatch.setenv("WORKBOOK_HOME", str(tmp_path / "home"))
    for name in ("VSCODE_PID", player.EMBED_ENV):
        monkeypatch.delenv(name, raising=False)
    notebook_dir = tmp_path / "notebooks"
    notebook_dir.mkdir()
    monkeypatch.chdir(notebook_dir)


def _write_audio(audio_dir: Path, key: str = KEY, suffix: str = ".ogg") -> Path:
    chapter, section = key.split("/")
    path = audio_dir / chapter / f"{section}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(FAKE_OGG)
    return path


def test_without_audio_shows_transcript_and_how_to_render(tmp_path: Path) -> None:
    page = play(KEY, audio_dir=tmp_path / "empty")._repr_html_()
    assert "<audio" not in page
    assert "autoplay" not in page
    assert "<details><summary><strong>Transcript</strong>" in page  # collapsed, focusable
    for paragraph in segment(KEY).text.split("\n\n"):
        assert f"<p>{paragraph}</p>" in page  # this text has nothing to escape
    assert "<code>workbook narrate --chapter 5</code>" in page


def test_with_audio_links_a_copy_beside_the_notebook(tmp_path: Path) -> None:
    source = _write_audio(tmp_path / "audio")
    shown = play(KEY, audio_dir=tmp_path / "audio", embed=False)
    page = shown._repr_html_()
    assert '<audio controls preload="none" src="narration_audio/ch05/intro.ogg"' in page
    assert "autoplay" not in page
    assert page.count("<audio") == 1
    copy = Path.cwd() / "narration_audio" / "ch05" / "intro.ogg"
    assert copy.read_bytes() == FAKE_OGG
    assert shown.audio_file == source
    assert len(page) < 5000  # a reference, not the bytes


def test_copy_is_refreshed_when_the_rendered_file_changes(tmp_path: Path) -> None:
    source = _write_audio(tmp_path / "audio")
    play(KEY, audio_dir=tmp_path / "audio", embed=False)
    source.write_bytes(b"OggS newer, longer audio bytes ....")
    os.utime(source, (2_000_000_000, 2_000_000_000))
    play(KEY, audio_dir=tmp_path / "audio", embed=False)
    copy = Path.cwd() / "narration_audio" / "ch05" / "intro.ogg"
    assert copy.read_bytes() == b"OggS newer, longer audio bytes ...."


def test_audio_already_beside_the_notebook_is_used_in_place() -> None:
    _write_audio(Path.cwd() / "audio")
    page = play(KEY, audio_dir="audio", embed=False)._repr_html_()
    assert 'src="audio/ch05/intro.ogg"' in page
    assert not (Path.cwd() / "narration_audio").exists()


def test_hidden_folder_is_not_linked_directly() -> None:
    # Jupyter refuses to serve paths with a dot-folder, so such files are copied out.
    _write_audio(Path.cwd() / ".cache")
    page = play(KEY, audio_dir=".cache", embed=False)._repr_html_()
    assert 'src="narration_audio/ch05/intro.ogg"' in page


def test_embed_uses_a_data_uri(tmp_path: Path) -> None:
    _write_audio(tmp_path / "audio")
    page = play(KEY, audio_dir=tmp_path / "audio", embed=True)._repr_html_()
    prefix = 'src="data:audio/ogg;base64,'
    start = page.index(prefix) + len(prefix)
    encoded = page[start:page.index('"', start)]
    assert base64.b64decode(encoded) == FAKE_OGG
    assert "autoplay" not in page


def test_embed_is_chosen_in_vscode_and_can_be_overridden(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _write_audio(tmp_path / "audio")
    monkeypatch.setenv("VSCODE_PID", "1234")
    assert str(play(KEY, audio_dir=tmp_path / "audio").src).startswith("data:audio/ogg")
    monkeypatch.setenv(player.EMBED_ENV, "0")
    assert play(KEY, audio_dir=tmp_path / "audio").src == "narration_audio/ch05/intro.ogg"


def test_default_audio_dir_follows_workbook_home(tmp_path: Path) -> None:
    _write_audio(tmp_path / "home" / "narration", suffix=".wav")
    shown = play(KEY, embed=False)
    assert shown.src == "narration_audio/ch05/intro.wav"


def test_stale_audio_is_flagged(tmp_path: Path) -> None:
    audio_dir = tmp_path / "audio"
    _write_audio(audio_dir)
    manifest = {"version": 1, "segments": {KEY: {
        "file": "ch05/intro.ogg", "text_hash": "0" * 64, "speech_hash": "0" * 64,
        "engine": "espeak-ng", "seconds": 90.0}}}
    (audio_dir / "manifest.json").write_text(json.dumps(manifest))
    page = play(KEY, audio_dir=audio_dir, embed=False)._repr_html_()
    assert "<audio" in page and "older version of the transcript" in page


def test_expanded_opens_the_transcript(tmp_path: Path) -> None:
    page = play(KEY, audio_dir=tmp_path, expanded=True)._repr_html_()
    assert "<details open><summary>" in page


def test_plain_text_for_terminals(tmp_path: Path) -> None:
    text = str(play("ch00/recap", audio_dir=tmp_path))
    assert text.startswith("Narration: Chapter 0, Ring AllReduce: Recap (about ")
    assert "reduce-scatter and then all-gather" in " ".join(text.split())
    assert "workbook narrate --chapter 0" in " ".join(text.split())
    assert all(len(line) <= 88 for line in text.splitlines()[1:])
    assert repr(play("ch00/recap", audio_dir=tmp_path)) == text


def test_html_escapes_markup() -> None:
    assert player._note_html("run `a<b` now") == "run <code>a&lt;b</code> now"


@pytest.mark.parametrize(("seconds", "words"), [(95.2, "about 1 min 35 s"),
                                                (42.0, "about 42 s"),
                                                (120.0, "about 2 min 0 s")])
def test_duration_in_words(seconds: float, words: str) -> None:
    assert player._duration(seconds) == words


def test_unknown_key_raises_key_error() -> None:
    with pytest.raises(KeyError, match="ch05/intro"):
        narration.play("ch05/intr")


def test_without_audio_the_browser_voice_reads_the_transcript_on_a_press(tmp_path: Path) -> None:
    page = play(KEY, audio_dir=tmp_path / "empty")._repr_html_()
    assert page.count('<button type="button" class="workbook-speak"') == 1
    spoken = " ".join(segment(KEY).text.split())
    assert f'data-text="{spoken}"' in page  # the whole transcript, nothing else
    assert "speechSynthesis" in page and "onclick=" in page
    # Nothing starts by itself: the only code is the button's click handler.
    assert "<script" not in page and "autoplay" not in page and "onload" not in page


def test_with_audio_the_recording_is_used_instead_of_the_browser_voice(tmp_path: Path) -> None:
    _write_audio(tmp_path)
    page = play(KEY, audio_dir=tmp_path)._repr_html_()
    assert "<audio" in page and "workbook-speak" not in page
