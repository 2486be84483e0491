"""Render narration scripts to audio files, offline: ``workbook narrate [--chapter N]``.

For each requested key the renderer speaks the transcript with a speech engine (see
:mod:`narration.engines`), compresses the WAV to Ogg Vorbis when an encoder is present,
measures the result, and records it in the audio directory's manifest. A segment is
rendered again only when what would be spoken changed: its text, the pronunciation
fixes below, or the engine and voice. Everything else is reported as skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from narration.engines import (
    Encoder,
    Engine,
    EngineError,
    NoEngineError,
    find_encoder,
    measure_seconds,
    select_engine,
)
from narration.scripts import chapter_keys, chapters, keys, segment, text_hash
from narration.store import (
    AUDIO_SUFFIXES,
    ManifestEntry,
    audio_stem,
    find_audio,
    read_manifest,
    write_manifest,
)

# Words a speech engine reads wrongly, and what to say instead. The transcript keeps
# the written form; only the audio uses these. (espeak-ng spells "ZeRO" letter by letter.)
SPOKEN_FORMS: dict[str, str] = {
    r"\bZeRO\b": "Zero",
}

Target = int | str | Iterable[str] | None


def spoken_text(text: str) -> str:
    """The transcript as it should be spoken: pronunciation fixes applied."""
    for pattern, replacement in SPOKEN_FORMS.items():
        text = re.sub(pattern, replacement, text)
    return text


@dataclass
class RenderReport:
    """What a render did: which keys were rendered, skipped as unchanged, or failed."""

    engine: str
    out_dir: Path
    rendered: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def __str__(self) -> str:
        lines = [
            f"Narration audio in {self.out_dir} (engine: {self.engine})",
            f"  rendered: {len(self.rendered)}, unchanged: {len(self.skipped)},"
            f" failed: {len(self.failed)}",
        ]
        lines += [f"  failed {key}: {why}" for key, why in self.failed.items()]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def resolve_keys(target: Target) -> list[str]:
    """None -> every key; an int -> that chapter's keys; a str -> one key; else the keys."""
    if target is None:
        return list(keys())
    if isinstance(target, bool):
        raise TypeError("chapter must be an int, not a bool")
    if isinstance(target, int):
        return list(chapter_keys(target))
    if isinstance(target, str):
        return [segment(target).key]
    return [segment(k).key for k in target]


def render(
    target: Target,
    out_dir: Path | str,
    engine: str = "auto",
    *,
    voice: str | Path | None = None,
    force: bool = False,
) -> RenderReport:
    """Render the segments named by ``target`` into the audio folder ``out_dir``.

    Raises NoEngineError, with install instructions, when no speech engine is found.
    Failures of single segments are collected in the report, not raised.
    """
    wanted = resolve_keys(target)
    chosen = select_engine(engine, voice)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    encoder = find_encoder()
    report = RenderReport(chosen.name, directory)
    if encoder is None:
        report.notes.append(
            "no Ogg encoder found (sox, ffmpeg or oggenc): kept WAV files, about ten times "
            "larger; install one with `apt-get install sox libsox-fmt-all`"
        )
    manifest = read_manifest(directory)
    try:
        for key in wanted:
            _render_one(key, chosen, encoder, directory, manifest, report, force)
    finally:
        write_manifest(directory, manifest)
    return report


def _render_one(
    key: str,
    engine: Engine,
    encoder: Encoder | None,
    directory: Path,
    manifest: dict[str, ManifestEntry],
    report: RenderReport,
    force: bool,
) -> None:
    seg = segment(key)
    speech_hash = text_hash(engine.settings + "\n" + spoken_text(seg.text))
    if not force and _unchanged(manifest.get(key), seg.text_hash, speech_hash, key, directory):
        report.skipped.append(key)
        return
    try:
        audio = _synthesize(spoken_text(seg.text), audio_stem(directory, key), engine, encoder)
    except EngineError as err:
        report.failed[key] = str(err)
        return
    relative = audio.relative_to(directory).as_posix()
    manifest[key] = ManifestEntry(
        relative, seg.text_hash, speech_hash, engine.name, measure_seconds(audio)
    )
    report.rendered.append(key)


def _unchanged(
    entry: ManifestEntry | None, text_hash_: str, speech_hash: str, key: str, directory: Path
) -> bool:
    if entry is None or entry.text_hash != text_hash_ or entry.speech_hash != speech_hash:
        return False
    audio = find_audio(key, directory)
    return audio is not None and audio.relative_to(directory).as_posix() == entry.file


def _synthesize(text: str, stem: Path, engine: Engine, encoder: Encoder | None) -> Path:
    """Speak into ``stem.wav``, encode to ``stem.ogg`` when possible; return the file.

    Work happens in dot-prefixed partial files that are renamed into place, so an
    interrupted render never leaves a truncated file under the final name.
    """
    stem.parent.mkdir(parents=True, exist_ok=True)
    partial_wav = stem.parent / f".{stem.name}.partial.wav"
    engine.synthesize(text, partial_wav)
    final = stem.with_suffix(".wav")
    if encoder is not None:
        partial_ogg = stem.parent / f".{stem.name}.partial.ogg"
        encoder.encode(partial_wav, partial_ogg)
        os.remove(partial_wav)
        final = stem.with_suffix(".ogg")
        os.replace(partial_ogg, final)
    else:
        os.replace(partial_wav, final)
    for suffix in AUDIO_SUFFIXES:  # drop an older file of another format for this key
        other = stem.with_suffix(suffix)
        if other != final and other.exists():
            other.unlink()
    return final


def render_cli(chapter: int | None, out_dir: Path | str) -> int:
    """Render one chapter (or all) into ``out_dir`` and print the report; returns a process
    exit code."""
    argv = [] if chapter is None else ["--chapter", str(chapter)]
    return main([*argv, "--out", str(out_dir)])


def build_parser(prog: str = "workbook narrate") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Render the narration scripts to audio files, offline."
    )
    parser.add_argument("--chapter", type=int, choices=chapters(), metavar="N",
                        help="render one chapter (default: all chapters)")
    parser.add_argument("--key", action="append", help="render one key, e.g. ch05/intro")
    parser.add_argument("--out", type=Path, required=True, help="audio folder to render into")
    parser.add_argument("--engine", default="auto", choices=("auto", "piper", "espeak-ng"))
    parser.add_argument("--voice", help="Piper voice model (.onnx)")
    parser.add_argument("--force", action="store_true", help="re-render unchanged segments")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``workbook narrate``: 0 done, 1 some segments failed, 2 no engine."""
    args = build_parser().parse_args(argv)
    target: Target = args.key if args.key else args.chapter
    try:
        report = render(target, args.out, args.engine, voice=args.voice, force=args.force)
    except NoEngineError as err:
        print(f"workbook narrate: {err}", file=sys.stderr)
        return 2
    except KeyError as err:
        print(f"workbook narrate: {err.args[0]}", file=sys.stderr)
        return 2
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
