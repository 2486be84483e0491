"""Every symbol a learner may see is in an ordinary text font.

Emoji (a lock, a flame) render as empty boxes on a machine without an emoji font, so the
page says such things in words and uses only symbols that DejaVu Sans has (the font
matplotlib ships and most Linux desktops fall back to): ✔, ✘, ○, arrows, math signs.
Checked over the sources that write what a learner reads: the engine, the workbook, the
chapters and the narration transcripts. The unit reader accepts more (full-width digits a
learner may type), which it never shows.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOWN = [*ROOT.joinpath("autograder").rglob("*.py"), *ROOT.joinpath("workbook").rglob("*.py"),
         *ROOT.joinpath("workbook", "chapters").glob("*.md"),
         *ROOT.joinpath("narration", "scripts").glob("*.md")]
READ_ONLY = {ROOT / "autograder" / "units.py"}  # characters it accepts from the learner


def dejavu() -> set[int]:
    import matplotlib
    from matplotlib import ft2font

    path = os.path.join(matplotlib.get_data_path(), "fonts", "ttf", "DejaVuSans.ttf")
    return set(ft2font.FT2Font(path).get_charmap())


def missing_glyphs(text: str, font: set[int]) -> set[str]:
    return {c for c in text if ord(c) > 127 and ord(c) not in font}


def test_every_symbol_shown_has_a_glyph_in_a_plain_font() -> None:
    font = dejavu()
    found = {}
    for path in SHOWN:
        if path in READ_ONLY:
            continue
        missing = missing_glyphs(path.read_text(encoding="utf-8"), font)
        if missing:
            found[str(path.relative_to(ROOT))] = sorted(
                f"{c} {unicodedata.name(c, hex(ord(c)))}" for c in missing)
    assert not found, found


def test_the_check_finds_an_emoji() -> None:
    font = dejavu()
    assert missing_glyphs("\U0001f512 Locked in", font) == {"\U0001f512"}
    assert not missing_glyphs("✔ ✘ ○ → ≤ × µ", font)
