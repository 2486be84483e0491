"""Speech engines and audio encoders, always run as separate programs.

* espeak-ng (GPL-3.0, Debian package ``espeak-ng``): the default. Robotic but clear, tiny,
  and available everywhere the workbook's CI runs.
* Piper (GPL-3.0, PyPI package ``piper-tts``): a neural voice, used when its program and
  a voice model (``.onnx`` file with its ``.onnx.json`` config) are both present. Because
  Piper is GPL, the workbook never imports it: it is found on PATH, or run as
  ``python -m piper`` in a separate process, like any other build-time tool.
* Encoders (sox, ffmpeg, oggenc), tried in that order, turn the engine's WAV into Ogg
  Vorbis, roughly a tenth of the size. Without one the WAV is kept and the report says so.

Nothing here runs at import time; discovery happens when rendering is asked for.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PIPER_VOICE_ENV = "WORKBOOK_PIPER_VOICE"
TIMEOUT_S = 300  # a two-minute segment renders in well under a second with espeak-ng


class EngineError(RuntimeError):
    """A speech engine or encoder ran but failed."""


class NoEngineError(RuntimeError):
    """No usable speech engine is installed; the message says how to install one."""


@dataclass(frozen=True)
class Engine:
    """A speech engine: ``command`` plus how it takes its text and output path."""

    name: str  # "espeak-ng" or "piper"
    command: tuple[str, ...]  # the program and its fixed options
    voice: str  # espeak voice name, or path of the Piper model

    @property
    def settings(self) -> str:
        """Everything that changes the sound; part of the re-render hash."""
        return " ".join((self.name, *self.command[1:], self.voice))

    def synthesize(self, text: str, wav_path: Path) -> None:
        """Speak ``text`` into the WAV file ``wav_path``; EngineError on failure."""
        wav_path.parent.mkdir(parents=True, exist_ok=True)
        if self.name == "piper":
            # One line of input: Piper treats each input line as a separate utterance.
            args = [*self.command, "-m", self.voice, "-f", str(wav_path)]
            _run(args, stdin=" ".join(text.split()))
            return
        with tempfile.TemporaryDirectory() as tmp:
            text_file = Path(tmp) / "segment.txt"
            text_file.write_text(text, encoding="utf-8")
            _run([*self.command, "-w", str(wav_path), "-f", str(text_file)])


ESPEAK_VOICE = "en-us"
ESPEAK_WORDS_PER_MINUTE = 160  # espeak-ng's default of 175 is brisk for new material


def find_espeak() -> Engine | None:
    """espeak-ng on PATH (the ``espeak`` 1.x program also accepts these options)."""
    program = shutil.which("espeak-ng") or shutil.which("espeak")
    if program is None:
        return None
    command = (program, "-v", ESPEAK_VOICE, "-s", str(ESPEAK_WORDS_PER_MINUTE))
    return Engine("espeak-ng", command, ESPEAK_VOICE)


def find_piper(voice: str | Path | None = None) -> Engine | None:
    """Piper, when both its program and a voice model can be found; else None."""
    command = _piper_command()
    model = _piper_voice(voice)
    if command is None or model is None:
        return None
    return Engine("piper", command, str(model))


def _piper_command() -> tuple[str, ...] | None:
    program = shutil.which("piper")
    if program is not None:
        return (program,)
    # find_spec locates the package without importing it.
    if importlib.util.find_spec("piper") is not None:
        return (sys.executable, "-m", "piper")
    return None


def _piper_voice(voice: str | Path | None) -> Path | None:
    """An explicit path, then $WORKBOOK_PIPER_VOICE, then a voice shipped in a package."""
    chosen = voice or os.environ.get(PIPER_VOICE_ENV)
    if chosen:
        path = Path(chosen).expanduser()
        return path if _is_voice(path) else None
    return _packaged_voice()


def _is_voice(path: Path) -> bool:
    return path.suffix == ".onnx" and path.is_file() and Path(f"{path}.json").is_file()


def _packaged_voice() -> Path | None:
    """The first ``.onnx`` voice (with its config) inside an installed distribution
    whose name mentions both "piper" and "voice" (e.g. a voice packaged for PyPI)."""
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if "piper" not in name or "voice" not in name:
            continue
        for file in dist.files or ():
            if str(file).endswith(".onnx"):
                path = Path(str(dist.locate_file(file)))
                if _is_voice(path):
                    return path
    return None


def select_engine(name: str = "auto", voice: str | Path | None = None) -> Engine:
    """The engine to use: ``"auto"`` prefers Piper, then espeak-ng. NoEngineError else."""
    if name not in ("auto", "piper", "espeak-ng"):
        raise ValueError(f"engine must be 'auto', 'piper' or 'espeak-ng', got {name!r}")
    if name in ("auto", "piper"):
        piper = find_piper(voice)
        if piper is not None:
            return piper
        if name == "piper":
            raise NoEngineError(
                "piper not usable: install the optional extra (`pip install piper-tts`) and "
                f"a voice model (.onnx with its .onnx.json), then pass it or set {PIPER_VOICE_ENV}"
            )
    espeak = find_espeak()
    if espeak is None:
        raise NoEngineError(
            "espeak-ng not found: install it with `apt-get install espeak-ng` "
            "(macOS: `brew install espeak-ng`)"
        )
    return espeak


@dataclass(frozen=True)
class Encoder:
    """A WAV-to-Ogg encoder program."""

    name: str
    program: str

    def encode(self, wav_path: Path, ogg_path: Path) -> None:
        wav, ogg = str(wav_path), str(ogg_path)
        if self.name == "sox":  # -C 0: Vorbis quality 0, ample for a single speaking voice
            args = [self.program, wav, "-C", "0", ogg]
        elif self.name == "ffmpeg":
            args = [self.program, "-nostdin", "-y", "-loglevel", "error", "-i", wav,
                    "-c:a", "libvorbis", "-q:a", "0", ogg]
        else:
            args = [self.program, "-Q", "-q", "0", "-o", ogg, wav]
        _run(args)


def find_encoder() -> Encoder | None:
    for name in ("sox", "ffmpeg", "oggenc"):
        program = shutil.which(name)
        if program is not None:
            return Encoder(name, program)
    return None


def measure_seconds(path: Path) -> float | None:
    """Duration of an audio file: the wave module for WAV, ``soxi -D`` otherwise."""
    if path.suffix == ".wav":
        with wave.open(str(path), "rb") as handle:
            return handle.getnframes() / float(handle.getframerate())
    soxi = shutil.which("soxi")
    if soxi is None:
        return None
    try:
        return float(_run([soxi, "-D", str(path)]).strip())
    except (EngineError, ValueError):
        return None


def _run(args: Sequence[str], stdin: str | None = None) -> str:
    """Run a program; EngineError with its stderr when it fails or times out."""
    try:
        done = subprocess.run(
            list(args), input=stdin, capture_output=True, text=True,
            timeout=TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EngineError(f"{Path(args[0]).name}: {err}") from err
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise EngineError(f"{Path(args[0]).name} exited {done.returncode}: {' '.join(detail)}")
    return done.stdout
