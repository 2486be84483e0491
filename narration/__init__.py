"""Narration for the workbook: spoken scripts, a notebook player, an offline renderer.

* :mod:`narration.scripts` — the transcripts, one markdown file per chapter, five keyed
  sections each (``chNN/intro``, ``predict``, ``explore``, ``exercises``, ``recap``).
* :mod:`narration.player` — ``play(key)``: transcript always, audio when rendered, never
  autoplay.
* :mod:`narration.render` — ``render(...)`` and ``main(argv)`` behind
  ``workbook narrate``: espeak-ng or Piper, run as separate programs, into Ogg files.

This package imports nothing from ``workbook``, ``autograder`` or ``solutions``.
"""

from narration.player import Narration, play
from narration.scripts import SECTIONS, Segment, chapter_keys, keys, segment

__all__ = ["SECTIONS", "Narration", "Segment", "chapter_keys", "keys", "play", "segment"]
