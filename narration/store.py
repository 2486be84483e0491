"""How rendered narration audio is laid out, and the manifest that records what it was made from.

Layout of an audio directory (whichever folder the caller gives the player and renderer)::

    <audio_dir>/manifest.json        one entry per rendered key (see ``ManifestEntry``)
    <audio_dir>/ch05/intro.ogg       one file per key; .wav when no Ogg encoder was found

This package does not choose the folder: the workbook passes in ``narration/`` inside the
learner's data folder (see ``workbook.narrate``), which is never inside the repository,
so rendered audio is never committed.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from narration.scripts import split_key

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1

# Preferred first: Ogg Vorbis is compact and plays in every browser the workbook targets
# except old Safari; WAV is the uncompressed fallback when no encoder is installed.
AUDIO_SUFFIXES: tuple[str, ...] = (".ogg", ".mp3", ".wav")
MIME_TYPES: dict[str, str] = {".ogg": "audio/ogg", ".mp3": "audio/mpeg", ".wav": "audio/wav"}


def audio_stem(audio_dir: Path, key: str) -> Path:
    """``<audio_dir>/ch05/intro`` (no suffix) for key ``ch05/intro``."""
    chapter, section = split_key(key)
    return Path(audio_dir) / f"ch{chapter:02d}" / section


def find_audio(key: str, audio_dir: Path | str) -> Path | None:
    """The rendered file for ``key`` in ``audio_dir``, if any."""
    stem = audio_stem(Path(audio_dir), key)
    for suffix in AUDIO_SUFFIXES:
        candidate = stem.with_suffix(suffix)
        if candidate.is_file() and candidate.stat().st_size > 0:
            return candidate
    return None


@dataclass(frozen=True)
class ManifestEntry:
    """What one audio file was rendered from."""

    file: str  # path relative to the audio directory, with forward slashes
    text_hash: str  # Segment.text_hash of the transcript
    speech_hash: str  # hash of the exact text and engine settings that were spoken
    engine: str
    seconds: float | None  # measured duration, when it could be measured


def read_manifest(audio_dir: Path) -> dict[str, ManifestEntry]:
    """Entries keyed by narration key; empty when the manifest is missing or unreadable.

    A damaged manifest is treated as empty: the cost is one re-render, never a crash.
    """
    path = Path(audio_dir) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {k: ManifestEntry(**v) for k, v in data.get("segments", {}).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def write_manifest(audio_dir: Path, entries: dict[str, ManifestEntry]) -> Path:
    """Write the manifest atomically (temp file + rename), keys sorted for stable diffs."""
    audio_dir = Path(audio_dir)
    audio_dir.mkdir(parents=True, exist_ok=True)
    payload = {
        "version": MANIFEST_VERSION,
        "segments": {k: asdict(entries[k]) for k in sorted(entries)},
    }
    fd, tmp = tempfile.mkstemp(dir=audio_dir, prefix=".manifest-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=1)
        handle.write("\n")
    target = audio_dir / MANIFEST_NAME
    os.replace(tmp, target)
    return target
