"""The narration player shown in a notebook cell: ``play("ch05/intro", audio_dir)``.

What it shows
    A ``<details>`` block whose ``<summary>`` reads "Transcript: <title>": the transcript
    is always on the page, collapsed by default, and reachable by keyboard (a summary
    element is focusable and opens with Enter or Space). When a rendered audio file
    exists, an ``<audio controls preload="none">`` element sits above it. When no file
    exists, a "Listen" button reads the transcript aloud with the browser's own speech
    synthesis (the Web Speech API, in every current browser), so narration plays with no
    setup; a second press stops it. Never autoplay: only the learner's press starts sound.
    In a terminal, ``print(narration.play(key))`` gives the same content as plain text.

How the audio reaches the browser (the design choice)
    Rendered audio lives outside the notebook tree, in the folder the caller passes in
    (the workbook passes the learner's data folder; see :mod:`narration.store`), and a
    browser can only fetch what the front end serves:

    * JupyterLab and Notebook 7 resolve a relative ``src`` in HTML output against the
      notebook's folder and serve it under ``/files/``, but only inside the server's root
      and not from hidden folders (Jupyter refuses paths starting with a dot). So the
      player copies the file to ``./narration_audio/chNN/<section>.ogg`` beside the
      notebook (the kernel's working directory) and points a relative ``src`` at it.
      The output stays a few hundred bytes; the copy is refreshed when the source changes.
    * Google Colab renders outputs in a sandboxed frame and VS Code in a webview; neither
      serves files from the kernel's disk by relative URL. There the player embeds the
      file as a base64 data URI (a few hundred kilobytes of Ogg). Committed notebooks are
      saved without outputs, so these bytes never reach the repository.

    ``embed=True`` or ``False`` (or the ``WORKBOOK_NARRATION_EMBED`` environment variable,
    ``1`` or ``0``) overrides the automatic choice.
"""

from __future__ import annotations

import base64
import html
import os
import shutil
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from narration.scripts import Segment, segment, segment_title, split_key
from narration.store import MIME_TYPES, find_audio, read_manifest

PUBLISH_DIR = "narration_audio"  # not hidden: Jupyter will not serve dot-folders
EMBED_ENV = "WORKBOOK_NARRATION_EMBED"
MAX_EMBED_BYTES = 4_000_000  # a 2-minute Ogg is ~0.3-0.5 MB; refuse anything absurd
NO_AUDIO_DIR_NOTE = "No audio folder was given, so only the transcript is shown."


@dataclass(frozen=True)
class Narration:
    """One narrated section as displayed: transcript, and audio when rendered."""

    segment: Segment
    title: str  # the heading: chapter (with its title when known) and section
    audio_file: Path | None = None  # the rendered file on disk
    src: str | None = None  # what the <audio> element points at (relative URL or data URI)
    note: str = ""  # why there is no audio, or that the audio is out of date
    expanded: bool = False

    def _repr_html_(self) -> str:
        seg = self.segment
        title = html.escape(self.title)
        parts = [f'<section class="workbook-narration" aria-label="Narration: {title}">']
        if self.src is not None:
            parts.append(
                f'<audio controls preload="none" src="{html.escape(self.src, quote=True)}"'
                f' aria-label="Narration audio: {title}">'
                "Your browser cannot play this audio; the transcript below has every word."
                "</audio>"
            )
        else:
            parts.append(_speak_button(seg.text, title))
        opened = " open" if self.expanded else ""
        parts.append(
            f"<details{opened}><summary><strong>Transcript</strong>: {title}"
            f" <small>({_duration(seg.estimated_seconds)}, {seg.word_count} words)</small>"
            "</summary>"
        )
        parts.extend(f"<p>{html.escape(p)}</p>" for p in seg.text.split("\n\n"))
        parts.append("</details>")
        if self.note:
            parts.append(f"<p><small>{_note_html(self.note)}</small></p>")
        parts.append("</section>")
        return "".join(parts)

    def __str__(self) -> str:
        seg = self.segment
        lines = [f"Narration: {self.title} ({_duration(seg.estimated_seconds)})", ""]
        for paragraph in seg.text.split("\n\n"):
            lines.extend(_wrap(paragraph))
            lines.append("")
        if self.audio_file is not None:
            lines.append(f"Audio: {self.audio_file}")
        if self.note:
            lines.extend(_wrap(self.note))
        return "\n".join(lines).rstrip() + "\n"

    def __repr__(self) -> str:
        return str(self)


def play(
    key: str,
    audio_dir: Path | str | None = None,
    *,
    chapter_titles: Mapping[int, str] | None = None,
    embed: bool | None = None,
    expanded: bool = False,
) -> Narration:
    """The transcript of ``key`` and, when rendered, an audio player. Never autoplays.

    ``audio_dir`` is the folder rendered audio is looked up in; without one only the
    transcript is shown. ``chapter_titles`` (chapter number -> title) names the chapter
    in the heading. Raises KeyError (naming close matches) for an unknown key.
    """
    seg = segment(key)
    shown = Narration(seg, segment_title(key, chapter_titles), expanded=expanded)
    if audio_dir is None:
        return replace(shown, note=NO_AUDIO_DIR_NOTE)
    directory = Path(audio_dir)
    audio = find_audio(key, directory)
    if audio is None:
        return replace(shown, note=_render_hint(key))
    use_embed = _should_embed() if embed is None else embed
    try:
        src = _embed(audio) if use_embed else _publish(audio, key)
    except (OSError, ValueError) as err:
        return replace(shown, audio_file=audio, note=f"Audio found at {audio} but not shown: {err}")
    return replace(shown, audio_file=audio, src=src, note=_staleness_note(seg, directory))


def _render_hint(key: str) -> str:
    chapter, _ = split_key(key)
    return (
        "Listen reads the transcript with your browser's voice. For recorded audio instead, "
        f"run `workbook narrate --chapter {chapter}` in a terminal (after `make lab` it is "
        "`.venv/bin/workbook`) and run this cell again."
    )


# Runs on the learner's click only: speak the transcript with the Web Speech API, or stop
# it if it is already speaking. The text travels in a data attribute, escaped as HTML. A
# browser may offer the API with no voice installed (Chromium on a bare Linux): then, or
# if speaking fails or never starts, the note beside the button says so and points to the
# transcript, instead of the button silently doing nothing.
NO_VOICE = ("This browser has no voice to read with; the transcript below has every word.")
_SPEAK_JS = (
    "(function(b){var s=window.speechSynthesis,m=b.nextElementSibling,done=false,"
    "idle=function(){b.dataset.state='';b.textContent='\u25b6 Listen';},"
    "no=function(){idle();m.textContent='" + NO_VOICE.replace("'", "\\'") + "';};"
    "if(!s||typeof SpeechSynthesisUtterance==='undefined'){no();return;}"
    "if(b.dataset.state==='speaking'){s.cancel();idle();return;}"
    "var go=function(){if(done){return;}done=true;if(!s.getVoices().length){no();return;}"
    "var u=new SpeechSynthesisUtterance(b.dataset.text),started=false;"
    "u.onstart=function(){started=true;m.textContent='';};u.onend=idle;"
    "u.onerror=function(e){if(e.error==='interrupted'||e.error==='canceled'){idle();}"
    "else{no();}};"
    "s.cancel();b.dataset.state='speaking';b.textContent='\u25a0 Stop';s.speak(u);"
    "setTimeout(function(){if(!started&&!s.speaking&&b.dataset.state==='speaking'){no();}},"
    "4000);};"
    "if(s.getVoices().length){go();}else{setTimeout(go,800);"
    "s.addEventListener('voiceschanged',go,{once:true});}})(this)"
)


def _speak_button(text: str, title: str) -> str:
    """A button that reads ``text`` aloud with the browser's speech synthesis when pressed."""
    spoken = html.escape(" ".join(text.split()), quote=True)
    return (f'<p><button type="button" class="workbook-speak" data-text="{spoken}" '
            f'aria-label="Listen to the narration: {title}" onclick="{_SPEAK_JS}">'
            '\u25b6 Listen</button> <small class="workbook-speak-note" aria-live="polite">'
            "</small></p>")


def _staleness_note(seg: Segment, directory: Path) -> str:
    entry = read_manifest(directory).get(seg.key)
    if entry is None or entry.text_hash == seg.text_hash:
        return ""
    chapter, _ = split_key(seg.key)
    return (
        "This audio was rendered from an older version of the transcript; run "
        f"`workbook narrate --chapter {chapter}` to bring it up to date."
    )


def _should_embed() -> bool:
    """Embed in front ends that cannot fetch kernel-side files by relative URL."""
    override = os.environ.get(EMBED_ENV)
    if override is not None:
        return override.strip().lower() in ("1", "true", "yes")
    in_colab = "google.colab" in sys.modules
    in_vscode = "VSCODE_PID" in os.environ  # the same test plotly uses for VS Code
    return in_colab or in_vscode


def _embed(audio: Path) -> str:
    size = audio.stat().st_size
    if size > MAX_EMBED_BYTES:
        raise ValueError(f"{size} bytes is too large to embed (limit {MAX_EMBED_BYTES})")
    mime = MIME_TYPES.get(audio.suffix, "application/octet-stream")
    return f"data:{mime};base64," + base64.b64encode(audio.read_bytes()).decode("ascii")


def _publish(audio: Path, key: str, root: Path | None = None) -> str:
    """Make ``audio`` reachable by a relative URL from the notebook's folder.

    Returns the relative URL (forward slashes). Files already under ``root`` are used
    in place; others are copied to ``root/narration_audio/chNN/<section><suffix>``.
    """
    root = (root or Path.cwd()).resolve()
    source = audio.resolve()
    if source.is_relative_to(root) and not _hidden(source.relative_to(root)):
        return source.relative_to(root).as_posix()
    chapter, section = split_key(key)
    target = root / PUBLISH_DIR / f"ch{chapter:02d}" / f"{section}{audio.suffix}"
    if not _same_file_contents(source, target):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return target.relative_to(root).as_posix()


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _same_file_contents(source: Path, target: Path) -> bool:
    """Cheap staleness test: copy2 preserves mtime, so size + mtime identify a copy."""
    if not target.is_file():
        return False
    a, b = source.stat(), target.stat()
    return a.st_size == b.st_size and int(a.st_mtime) == int(b.st_mtime)


def _wrap(paragraph: str) -> list[str]:
    # Never split "all-reduce" or "chNN/intro" across lines.
    return textwrap.wrap(paragraph, width=88, break_on_hyphens=False, break_long_words=False)


def _duration(seconds: float) -> str:
    total = int(round(seconds))
    minutes, secs = divmod(total, 60)
    return f"about {minutes} min {secs} s" if minutes else f"about {secs} s"


def _note_html(note: str) -> str:
    """Escape a note, turning `backticked` spans into <code>."""
    pieces = html.escape(note).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))
