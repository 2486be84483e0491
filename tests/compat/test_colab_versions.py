"""The workbook under Google Colab's versions: ipywidgets 7.7.1 and IPython 7.34.

Builds (once, then reuses) an environment `.venv-colab` pinned to those versions, then
drives every exercise card there and runs chapter 0 top to bottom in a kernel from it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / ".venv-colab"
PINS = ["ipywidgets==7.7.1", "ipython==7.34.0", "ipykernel", "nbclient", "nbformat"]


def colab_python() -> Path:
    python = ENV / "bin" / "python"
    stamp = ENV / ".pins"
    if stamp.exists() and stamp.read_text() == " ".join(PINS):
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(ENV)], check=True)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PINS,
                              "-e", str(ROOT)], capture_output=True, text=True)
    if install.returncode != 0:
        pytest.skip(f"could not build the Colab-pinned environment: {install.stderr[-500:]}")
    stamp.write_text(" ".join(PINS))
    return python


def run(python: Path, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBOOK_HOME": str(tmp_path / "home"), "MPLBACKEND": "agg"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(python), *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def test_versions_are_colabs(tmp_path: Path) -> None:
    out = run(colab_python(), "-c", "import ipywidgets, IPython; "
              "print(ipywidgets.__version__, IPython.__version__)", tmp_path=tmp_path)
    assert out.stdout.split() == ["7.7.1", "7.34.0"]


def test_every_card_works_under_ipywidgets_7(tmp_path: Path) -> None:
    out = run(colab_python(), "tests/compat/widget_smoke.py", tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "ipywidgets 7.7.1: 0 failing card(s)" in out.stdout


def test_chapter_0_runs_under_colab_versions(tmp_path: Path) -> None:
    script = (
        "import nbformat, nbclient, sys\n"
        "nb = nbformat.read('workbook/notebooks/ch00_ring_allreduce.ipynb', 4)\n"
        "nbclient.NotebookClient(nb, timeout=60, kernel_name='python3',"
        " resources={'metadata': {'path': sys.argv[1]}}).execute()\n"
        "errors = [o for c in nb.cells for o in c.get('outputs', [])"
        " if o.get('output_type') == 'error']\n"
        "print('errors:', len(errors))\n"
    )
    out = run(colab_python(), "-c", script, str(tmp_path), tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "errors: 0" in out.stdout


def test_setup_cell_would_not_upgrade_colab_packages(tmp_path: Path) -> None:
    """pip's dry run for the workbook's requirements in the pinned env changes nothing."""
    out = run(colab_python(), "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
              "-e", str(ROOT), tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr[-1500:]
    assert '"ipywidgets"' not in out.stdout and '"ipython"' not in out.stdout
