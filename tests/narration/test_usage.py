"""Every narration key a chapter source uses exists, and each chapter uses all five of its own.

Chapter sources live in ``workbook/chapters/``; they place a player with a
``{narration} chNN/section`` directive or a ``narration.play("chNN/section")`` call.
Chapters whose source does not exist yet are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from narration.scripts import chapter_keys, keys

CHAPTERS_DIR = Path(__file__).resolve().parents[2] / "workbook" / "chapters"
USE = re.compile(r"""\{narration\}\s+(\S+)|narration\.play\(\s*["']([^"']+)["']""")


def _sources() -> list[Path]:
    return sorted(CHAPTERS_DIR.glob("*.md")) + sorted(CHAPTERS_DIR.glob("*.py"))


def used_keys(text: str) -> list[str]:
    return [a or b for a, b in USE.findall(text)]


def test_used_keys_pattern_finds_both_forms() -> None:
    text = '```{narration} ch05/intro\n```\nnarration.play("ch05/recap")\n'
    assert used_keys(text) == ["ch05/intro", "ch05/recap"]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.name)
def test_chapter_source_uses_existing_keys_and_all_of_its_own(path: Path) -> None:
    used = used_keys(path.read_text(encoding="utf-8"))
    unknown = sorted(set(used) - set(keys()))
    assert not unknown, f"{path.name} uses narration keys with no script: {unknown}"
    match = re.match(r"ch(\d{2})", path.name)
    if match:
        missing = sorted(set(chapter_keys(int(match.group(1)))) - set(used))
        assert not missing, f"{path.name} never plays {missing}"
