"""Offline rendering: real espeak-ng audio of plausible length, re-render only on change."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import pytest

from narration import engines, render
from narration.engines import Engine, NoEngineError
from narration.render import main, render_cli, resolve_keys, spoken_text
from narration.scripts import segment
from narration.store import read_manifest

KEY = "ch02/predict"  # about 100 words: a short render

needs_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None,
    reason="espeak-ng not installed (apt-get install espeak-ng); rendering not tested",
)


def measured_seconds(path: Path) -> float:
    """Duration measured here, independently of the code under test."""
    if path.suffix == ".wav":
        with wave.open(str(path), "rb") as handle:
            return handle.getnframes() / handle.getframerate()
    if shutil.which("soxi") is None:
        pytest.skip("soxi (sox) not installed: cannot measure an Ogg file's duration")
    out = subprocess.run(["soxi", "-D", str(path)], capture_output=True, text=True, check=True)
    return float(out.stdout)


def rendered_file(out_dir: Path, key: str) -> Path:
    chapter, section = key.split("/")
    found = [p for p in (out_dir / chapter).glob(f"{section}.*")]
    assert len(found) == 1, found
    return found[0]


@needs_espeak
@pytest.mark.slow
def test_espeak_render_has_a_plausible_duration(tmp_path: Path) -> None:
    report = render.render(KEY, tmp_path, engine="espeak-ng")
    assert report.rendered == [KEY] and report.ok
    audio = rendered_file(tmp_path, KEY)
    assert audio.suffix == (".ogg" if engines.find_encoder() else ".wav")
    words = len(segment(KEY).text.split())
    words_per_minute = words / (measured_seconds(audio) / 60.0)
    # Human narration runs ~130-180 words a minute; allow a generous band either side.
    assert 100 <= words_per_minute <= 260, words_per_minute
    entry = read_manifest(tmp_path)[KEY]
    assert entry.file == f"ch02/{audio.name}" and entry.engine == "espeak-ng"
    assert entry.seconds == pytest.approx(measured_seconds(audio), abs=0.05)


@needs_espeak
@pytest.mark.slow
def test_unchanged_segments_are_skipped_and_changed_ones_rerendered(tmp_path: Path) -> None:
    render.render(KEY, tmp_path, engine="espeak-ng")
    audio = rendered_file(tmp_path, KEY)
    before = audio.stat().st_mtime_ns
    again = render.render(KEY, tmp_path, engine="espeak-ng")
    assert again.rendered == [] and again.skipped == [KEY]
    assert audio.stat().st_mtime_ns == before
    # Pretend the transcript changed since the last render: the manifest hash no longer matches.
    manifest_path = tmp_path / "manifest.json"
    data = json.loads(manifest_path.read_text())
    data["segments"][KEY]["text_hash"] = "0" * 64
    manifest_path.write_text(json.dumps(data))
    changed = render.render(KEY, tmp_path, engine="espeak-ng")
    assert changed.rendered == [KEY]
    assert render.render(KEY, tmp_path, engine="espeak-ng", force=True).rendered == [KEY]


@needs_espeak
@pytest.mark.slow
def test_without_an_encoder_wav_is_kept_and_said(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    render.render(KEY, tmp_path, engine="espeak-ng")  # maybe .ogg
    monkeypatch.setattr(render, "find_encoder", lambda: None)
    report = render.render(KEY, tmp_path, engine="espeak-ng", force=True)
    assert any("kept WAV" in note for note in report.notes)
    audio = rendered_file(tmp_path, KEY)  # exactly one file: any older .ogg was removed
    assert audio.suffix == ".wav"
    assert 100 <= len(segment(KEY).text.split()) / (measured_seconds(audio) / 60) <= 260


@needs_espeak
@pytest.mark.slow
def test_cli_renders_a_chapter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert render_cli(2, tmp_path) == 0
    assert "rendered: 5, unchanged: 0, failed: 0" in capsys.readouterr().out
    assert main(["--key", KEY, "--out", str(tmp_path)]) == 0
    assert "rendered: 0, unchanged: 1" in capsys.readouterr().out


def test_failures_are_reported_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = shutil.which("false")
    assert failing is not None
    monkeypatch.setattr(render, "select_engine",
                        lambda name, voice: Engine("espeak-ng", (failing,), "en-us"))
    monkeypatch.setattr(render, "find_encoder", lambda: None)
    report = render.render(KEY, tmp_path)
    assert report.rendered == [] and not report.ok
    assert "exited 1" in report.failed[KEY]
    assert read_manifest(tmp_path) == {}


def test_no_engine_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(NoEngineError, match="apt-get install espeak-ng"):
        render.render(KEY, tmp_path / "out")
    with pytest.raises(NoEngineError, match="pip install piper-tts"):
        engines.select_engine("piper")


def test_cli_reports_missing_engine(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name: None)
    assert main(["--chapter", "1", "--out", str(tmp_path / "out")]) == 2
    assert "espeak-ng not found" in capsys.readouterr().err


FAKE_PIPER = """#!{python}
# Stands in for the piper program: records how it was called, writes 2 s of silence.
import json, sys, wave
args = sys.argv[1:]
with open({log!r}, "w") as log:
    json.dump({{"args": args, "stdin": sys.stdin.read()}}, log)
with wave.open(args[args.index("-f") + 1], "wb") as out:
    out.setnchannels(1); out.setsampwidth(2); out.setframerate(16000)
    out.writeframes(b"\\0\\0" * 32000)
"""


def test_piper_runs_as_a_program_with_the_voice_model(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:


    bin_dir, log = tmp_path / "bin", tmp_path / "piper-call.json"
    bin_dir.mkdir()
    program = bin_dir / "piper"
    program.write_text(FAKE_PIPER.format(python=sys.executable, log=str(log)))
    program.chmod(0o755)
    voice = tmp_path / "en_US-test-medium.onnx"
    voice.write_bytes(b"model")
    Path(f"{voice}.json").write_text("{}")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(render, "find_encoder", lambda: None)
    report = render.render(KEY, tmp_path / "out", engine="auto", voice=voice)
    assert report.engine == "piper" and report.rendered == [KEY]
    call = json.loads(log.read_text())
    assert call["args"][:2] == ["-m", str(voice)]
    assert "\n" not in call["stdin"] and call["stdin"].startswith("Time for a prediction.")
    assert measured_seconds(tmp_path / "out" / "ch02" / "predict.wav") == 2.0


def test_piper_without_a_voice_is_not_selected(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(engines.PIPER_VOICE_ENV, raising=False)
    monkeypatch.setattr(engines, "_packaged_voice", lambda: None)
    assert engines.find_piper(voice=None) is None
    assert engines.find_piper(voice=tmp_path / "missing.onnx") is None


def test_spoken_text_fixes_pronunciation_only() -> None:
    assert spoken_text("ZeRO stage three, zero copies") == "Zero stage three, zero copies"
    assert "ZeRO" in segment("ch01/intro").text  # the transcript keeps the written name


def test_resolve_keys() -> None:
    assert resolve_keys(3) == ["ch03/intro", "ch03/predict", "ch03/explore",
                               "ch03/exercises", "ch03/recap"]
    assert resolve_keys("ch03/recap") == ["ch03/recap"]
    assert resolve_keys(["ch00/intro", "ch09/recap"]) == ["ch00/intro", "ch09/recap"]
    assert len(resolve_keys(None)) == 50
    with pytest.raises(TypeError):
        resolve_keys(True)
    with pytest.raises(KeyError):
        resolve_keys("ch03/outro")


def test_damaged_manifest_reads_as_empty(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    assert read_manifest(tmp_path) == {}
