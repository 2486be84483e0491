"""Every workbook test gets its own empty progress home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from workbook.learner import checking, progress_log


@pytest.fixture(autouse=True)
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "workbook-home"
    monkeypatch.setenv("WORKBOOK_HOME", str(home))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv("WORKBOOK_GRADING", raising=False)
    progress_log.reopen()
    checking._pending_variants.clear()
    yield home
    progress_log.reopen()
