"""Every wrong answer the seed documents give for an exercise is rejected by its checker.

The list lives in one place, the machine-readable table at the end of docs/errata.md
(between the ``seed-answers`` markers); this test reads it, so adding a row there adds a
case here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbook.records import lookup

ERRATA = Path(__file__).resolve().parents[2] / "docs" / "errata.md"
_BLOCK = re.compile(r"<!-- seed-answers:begin -->(.*?)<!-- seed-answers:end -->", re.S)


def seed_answers() -> list[tuple[str, str, str]]:
    """(exercise id, the seed's answer as a learner would type it, why it is wrong)."""
    match = _BLOCK.search(ERRATA.read_text(encoding="utf-8"))
    assert match, "docs/errata.md has no seed-answers table"
    rows = []
    for line in match.group(1).strip().splitlines()[2:]:  # skip header and rule
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 4, f"malformed seed-answers row: {line!r}"
        rows.append((cells[0], cells[1], cells[3]))
    return rows


def test_the_table_is_not_empty() -> None:
    assert len(seed_answers()) >= 10


@pytest.mark.parametrize(("exercise_id", "answer", "why"), seed_answers())
def test_seed_answer_is_rejected(exercise_id: str, answer: str, why: str) -> None:
    verdict = lookup(exercise_id).grade(answer)
    assert verdict.status == "wrong", (
        f"{exercise_id}: the seed's {answer!r} ({why}) is graded {verdict.status}")
