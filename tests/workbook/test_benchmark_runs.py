"""The grading benchmark runs end to end (2 students x 1 chapter) and finds no disagreement."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "grade_vs_nbgrader.py"


def test_quick_benchmark_reports_both_times_and_agreement(tmp_path: Path) -> None:
    if not (Path(sys.executable).parent / "nbgrader").exists():
        pytest.skip("nbgrader is not installed in this environment")
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--keep", str(tmp_path)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # --quick: 2 students x chapter 0 (6 exercises and the lab 0.7) = 2 notebooks, 14 scores
    assert "2 students x 1 chapter = 2 notebooks" in out
    assert re.search(r"nbgrader autograde: +\d+\.\d s", out)
    assert re.search(r"workbook grade: +\d+\.\d s", out)
    assert re.search(r"speed-up: \d+\.\d x", out)
    assert "all 14 per-exercise scores agree (0 disagreements)" in out
    assert len(list((tmp_path / "course" / "submitted").iterdir())) == 2


def test_the_explorer_benchmark_times_every_chapter() -> None:
    script = SCRIPT.parent / "explorer_redraw.py"
    result = subprocess.run([sys.executable, str(script), "--repeats", "2"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = re.findall(r"^(ch\d\d\S*) +(\d+) +(\d+) +(\d+)$", result.stdout, re.MULTILINE)
    assert [r[0][:4] for r in rows] == [f"ch{i:02d}" for i in range(10)]
    assert all(int(size) > 0 for *_, size in rows)  # every plot area holds a figure
    assert len(re.findall(r"Gantt p=8 m=32 at [12]x: \d+ ms, \d+ KB", result.stdout)) == 2
